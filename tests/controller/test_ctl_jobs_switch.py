"""Jobs on a real p4sim switch over loopback gRPC, running p4src/p4reduce.p4: entries installed and
read back, aggregation through them, slot registers reset, everything freed at the end, leases,
controller restart resuming jobs, and the CLI's view of it all."""
import json
import time

import numpy as np
import pytest

from p4reduce.controller.cli import main as cli_main
from p4reduce.controller.connection import SwitchConnection
from p4reduce.controller.inspection import SwitchInspector
from p4reduce.controller.registers import open_register_access
from p4reduce.controller.service import Controller
from p4reduce.controller.topology import from_dict
from p4reduce.protocol import constants, frames, p4names, wire
from p4reduce.protocol.addressing import SERVICE_IP as SWITCH_IP
from p4reduce.protocol.addressing import SERVICE_MAC as SWITCH_MAC
from p4reduce.protocol.job_api import JobApiClient, JobApiError


def topology(addr):
    return from_dict({
        "switches": {"s1": {"grpc_addr": addr, "ip": SWITCH_IP, "mac": SWITCH_MAC, "aggregate": True}},
        "hosts": {f"h{i}": {"ip": f"10.0.0.{i}", "mac": f"00:00:00:00:00:0{i}", "switch": "s1", "port": i}
                  for i in (1, 2, 3)}})


@pytest.fixture
def controller_factory(p4rt_server, p4reduce_build, tmp_path):
    _, addr = p4rt_server
    p4info, bmv2 = p4reduce_build
    started = []

    def start(election_id=10, standby=False, **kw):
        kw.setdefault("lease_s", 30.0)
        ctl = Controller(topology(addr), p4info, bmv2, election_id=election_id, connect_timeout=5,
                         api_address=("127.0.0.1", 0), state_file=tmp_path / f"state{election_id}.json", **kw)
        started.append(ctl)
        return ctl.start(standby=standby)

    yield start, addr
    for ctl in started:
        ctl.stop()


def reader(addr):
    conn = SwitchConnection(addr).connect(timeout=5, arbitrate=False)
    conn.fetch_pipeline()
    return SwitchInspector(conn, open_register_access(conn))


def contribution(job, rank, ip, mac, sport, lanes, slot=0, ver=0, wire_token=None):
    """A worker's contribution; with the job's wire token (from its creator's description) unless
    `wire_token` says otherwise."""
    hdr = wire.Header(job_id=job["job_id"], rank=rank, slot=slot, ver=ver, offset=0,
                      next_offset=constants.NEXT_NONE, bitmap=constants.full_bitmap(),
                      flags=constants.Flags.EOT, wire_token=job["wire_token"] if wire_token is None else wire_token)
    return frames.udp_frame(mac, SWITCH_MAC, ip, SWITCH_IP, sport, constants.AGG_UDP_PORT,
                            wire.encode(hdr, lanes))


def test_job_lifecycle_on_the_switch(controller_factory, p4rt_server):
    start, addr = controller_factory
    server, _ = p4rt_server
    ctl = start()
    client = JobApiClient(ctl.api_server.address)
    insp = reader(addr)
    # stale state in the slots the job will get must be cleared at creation
    writer = open_register_access(ctl.connections["s1"])  # writes need the primary's session
    writer.write_many(p4names.SEEN, {0: 0b11, 1: 0b1, 31: 0b1})
    writer.write(p4names.COUNT, 5, 1)
    assert insp.register(p4names.SEEN, 31)["values"] == {31: 1}
    job = client.create("demo", 2, mode="dense", slots=16)
    assert job["slots"] == {"base": 0, "count": 16} and job["multicast_group"] == 0x100 + job["job_id"]
    assert all(v == 0 for v in insp.register(p4names.SEEN, start=0, stop=32)["values"].values())
    assert insp.register(p4names.COUNT, 5)["values"] == {5: 0}
    r0 = client.join("demo", ip="10.0.0.1", udp_port=40000)
    r1 = client.join("demo", ip="10.0.0.2", udp_port=40001)
    assert (r0["rank"], r1["rank"], r1["job"]["state"]) == (0, 1, "running")

    # entries read back from the switch
    [j] = insp.jobs()
    assert (j["name"], j["workers"], j["mode"], j["slots"], j["mcast_grp"]) == (
        "demo", 2, "dense", {"base": 0, "count": 16}, job["multicast_group"])
    assert sorted((m["rank"], m["ip"], m["udp_port"], m["mac"], m["port"]) for m in j["members"]) == [
        (0, "10.0.0.1", 40000, "00:00:00:00:00:01", 1), (1, "10.0.0.2", 40001, "00:00:00:00:00:02", 2)]
    groups = {g["group"]: g["replicas"] for g in insp.multicast_groups()}
    assert groups[job["multicast_group"]] == [{"port": 1, "instance": 0}, {"port": 2, "instance": 1}]

    # the entries make the switch aggregate: two contributions, one result per worker
    a = np.arange(constants.LANES, dtype=np.int64)
    b = np.full(constants.LANES, -7, dtype=np.int64)
    engine = server.device.engine
    trace = []
    engine.trace = trace.append
    assert engine.process(1, contribution(job, 0, "10.0.0.1", "00:00:00:00:00:01", 40000, a)) == []
    out = sorted(engine.process(2, contribution(job, 1, "10.0.0.2", "00:00:00:00:00:02", 40001, b)))
    assert [p for p, _ in out] == [1, 2], "\n".join(trace)
    for (_port, frame), (ip, udp, mac, rank) in zip(out, [("10.0.0.1", 40000, "00:00:00:00:00:01", 0),
                                                          ("10.0.0.2", 40001, "00:00:00:00:00:02", 1)]):
        f = frames.parse_udp_frame(frame)
        assert (f.dst_ip, f.dport, f.dst_mac) == (ip, udp, mac)
        hdr, lanes = wire.decode(f.payload)
        assert hdr.msg_type == constants.MsgType.RESULT and hdr.rank == rank and hdr.count == 2
        assert hdr.wire_token == job["wire_token"] != 0      # results are stamped with the job's wire token
        assert list(lanes) == list(a + b)
    # ... and a person can see it in the slot's registers
    slot0 = insp.slot(0, ver=0, job="demo")["copies"][0]
    assert slot0["seen_ranks"] == [0, 1] and slot0["count"] == 0 and slot0["lanes"] == list(a + b)

    # a stranger's packet is dropped and counted by reason
    assert engine.process(3, contribution(job, 0, "10.0.0.3", "00:00:00:00:00:03", 40002, a)) == []
    [drops] = insp.counters(p4names.DROP_REASONS)
    by_label = {c["label"]: c["packets"] for c in drops["cells"]}
    assert by_label["UNKNOWN_WORKER"] == 1 and by_label["UNKNOWN_JOB"] == 0
    # each worker is bound to its switch port: its exact addresses from another port count nothing
    assert sorted((e["params"]["rank"], e["params"]["port"]) for e in insp.entries(p4names.WORKERS)) == [
        (0, 1), (1, 2)]
    seen_before = insp.register(p4names.SEEN, start=0, stop=4)["values"]
    # from another host's port the source guard stops them first; from a port with no host (not
    # guarded) the worker's port binding does
    assert engine.process(3, contribution(job, 0, "10.0.0.1", "00:00:00:00:00:01", 40000, a, ver=1)) == []
    assert engine.process(1, contribution(job, 1, "10.0.0.2", "00:00:00:00:00:02", 40001, b, ver=1)) == []
    assert engine.process(9, contribution(job, 1, "10.0.0.2", "00:00:00:00:00:02", 40001, b, ver=1)) == []
    [drops] = insp.counters(p4names.DROP_REASONS)
    by_label = {c["label"]: c["packets"] for c in drops["cells"]}
    assert by_label["SPOOFED_SOURCE"] == 2 and by_label["SPOOFED_PORT"] == 1 and by_label["UNKNOWN_WORKER"] == 1
    # a member's own contribution without the job's wire token adds nothing: BAD_WIRE_TOKEN
    assert engine.process(1, contribution(job, 0, "10.0.0.1", "00:00:00:00:00:01", 40000, a, ver=1,
                                          wire_token=job["wire_token"] ^ 1)) == []
    [drops] = insp.counters(p4names.DROP_REASONS)
    assert {c["label"]: c["packets"] for c in drops["cells"]}["BAD_WIRE_TOKEN"] == 1
    assert insp.register(p4names.SEEN, start=0, stop=4)["values"] == seen_before
    assert insp.register(p4names.SEEN, start=0, stop=4)["values"] == seen_before

    # ending frees entries, group, slots, and resets the slot registers
    client.end("demo")
    assert insp.jobs() == [] and job["multicast_group"] not in {g["group"] for g in insp.multicast_groups()}
    assert insp.entries(p4names.WORKERS) == [] and insp.entries(p4names.WORKER_ADDRS) == []
    assert insp.register(p4names.SEEN, 0)["values"] == {0: 0}
    assert ctl.manager.pool.free == ctl.manager.pool.total


def test_leave_shrinks_group_and_lease_reclaims(controller_factory):
    start, addr = controller_factory
    ctl = start()
    client = JobApiClient(ctl.api_server.address)
    insp = reader(addr)
    job = client.create("j", 3, slots=8)
    for i in (1, 2, 3):
        client.join("j", ip=f"10.0.0.{i}")
    assert client.join("j", ip="10.0.0.1")["rank"] == 0  # a restarted worker: same rank, entries rewritten
    assert sorted(m["rank"] for m in insp.jobs()[0]["members"]) == [0, 1, 2]
    client.leave("j", 1)
    groups = {g["group"]: g["replicas"] for g in insp.multicast_groups()}
    assert groups[job["multicast_group"]] == [{"port": 1, "instance": 0}, {"port": 3, "instance": 2}]
    assert sorted(m["rank"] for m in insp.jobs()[0]["members"]) == [0, 2]
    # a job whose worker stops heartbeating is reclaimed by the lease reaper, switch state and all
    short = client.create("short", 1, slots=4, lease_s=0.5)
    client.join("short", ip="10.0.0.2")
    deadline = time.monotonic() + 15
    while "short" in {j["name"] for j in insp.jobs()} and time.monotonic() < deadline:
        time.sleep(0.1)
    assert [j["name"] for j in insp.jobs()] == ["j"]
    assert short["multicast_group"] not in {g["group"] for g in insp.multicast_groups()}
    assert {e["params"]["rank"] for e in insp.entries(p4names.WORKERS)} == {0, 2}
    with pytest.raises(JobApiError) as e:
        client.heartbeat("short", 0)
    assert e.value.code == "job_ended" and "lease expired" in e.value.message


def test_restart_resumes_jobs(controller_factory):
    start, addr = controller_factory
    first = start()
    client = JobApiClient(first.api_server.address)
    a = client.create("alpha", 2, mode="sparse", slots=32, lease_s=20)
    client.join("alpha", ip="10.0.0.1")
    client.join("alpha", ip="10.0.0.3", udp_port=41000)
    client.create("beta", 1, slots=8)
    first.stop()

    second = start()
    assert sorted(second.resumed) == ["alpha", "beta"]
    credentials = client.credentials  # the job credentials still open the resumed jobs (their digests were on the switch)
    client = JobApiClient(second.api_server.address)
    client.credentials.update(credentials)
    alpha = client.job("alpha")
    assert (alpha["job_id"], alpha["mode"], alpha["slots"], alpha["lease_s"], alpha["state"]) == (
        a["job_id"], "sparse", {"base": 0, "count": 32}, 20, "running")
    # the wire token is read back from the jobs-table entry: workers' packets keep passing
    assert alpha["wire_token"] == a["wire_token"] != 0
    # so is its creation time: the workers' host fallback tells this job from an earlier one by it,
    # so a worker that fetches the description again after the restart must see the same value
    assert alpha["created_at"] == a["created_at"]
    assert "wire_token" not in JobApiClient(second.api_server.address).job("alpha")   # not for strangers
    assert [(m["rank"], m["ip"], m["udp_port"], m["port"]) for m in alpha["members"]] == [
        (0, "10.0.0.1", constants.AGG_UDP_PORT, 1), (1, "10.0.0.3", 41000, 3)]
    assert client.heartbeat("alpha", 1)["state"] == "running"
    # the resumed slots are taken: a new job goes after them, never over them
    gamma = client.create("gamma", 1, slots=8)
    assert gamma["slots"]["base"] == 40 and gamma["job_id"] not in (a["job_id"], client.job("beta")["job_id"])
    client.end("alpha")
    assert [j["name"] for j in reader(addr).jobs()] == ["beta", "gamma"]


def test_cli_views_of_jobs(controller_factory, capsys):
    start, addr = controller_factory
    ctl = start()
    client = JobApiClient(ctl.api_server.address)
    client.create("demo", 2, slots=4)
    client.join("demo", ip="10.0.0.1")
    capsys.readouterr()
    assert cli_main(["jobs", "--grpc-addr", addr]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["JOB", "ID", "STATE", "MODE", "WORKERS", "SLOTS", "GROUP", "MEMBERS"]
    assert lines[1].split()[:6] == ["demo", "1", "waiting", "dense", "1/2", "[0,"]
    assert cli_main(["jobs", "--api-addr", ctl.api_server.address, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["members"][0]["ip"] == "10.0.0.1"
    assert cli_main(["slots", "--grpc-addr", addr]) == 0
    out = capsys.readouterr().out
    assert "[    0,     4)      4 slots  demo" in out and "(free)" in out
    assert cli_main(["registers", "--slot", "1", "--job", "demo", "--ver", "1", "--grpc-addr", addr]) == 0
    out = capsys.readouterr().out
    assert out.startswith("slot 1 (job demo, job slot 1)") and "register index 3" in out
    assert cli_main(["counters", "--grpc-addr", addr, "--json"]) == 0
    ctrs = {c["counter"]: c["cells"] for c in json.loads(capsys.readouterr().out)}
    labels = {c["label"] for c in ctrs[p4names.DROP_REASONS]}
    assert {"UNKNOWN_JOB", "BAD_RANK", "DUPLICATE_PENDING"} <= labels
    assert [c["label"] for c in ctrs[p4names.AGG_EVENTS]] == ["ABSORBED", "RESULT_MULTICAST", "RESULT_UNICAST",
                                                               "FORWARDED", "SENT_UP", "RESENT_UP", "RESULT_DOWN"]
    assert cli_main(["counters", "--grpc-addr", addr]) == 0
    text = capsys.readouterr().out
    assert "UNKNOWN_JOB" in text and "[  0]" not in text.split(p4names.AGG_EVENTS)[0]  # no unused cells


def test_forwarding_from_topology(controller_factory, p4rt_server):
    start, addr = controller_factory
    server, _ = p4rt_server
    start()
    insp = reader(addr)
    routes = {(e["match"][p4names.IPV4_ROUTES_KEY[0]], e["action"], e["params"]["port"])
              for e in insp.entries(p4names.IPV4_ROUTES)}
    assert routes == {((0x0A000000 + i, 32), p4names.FORWARD, i) for i in (1, 2, 3)}
    l2 = {(e["match"][p4names.L2_FORWARD_KEY[0]], e["action"], tuple(e["params"].values()))
          for e in insp.entries(p4names.L2_FORWARD)}
    assert l2 == {(i, p4names.FORWARD, (i,)) for i in (1, 2, 3)} | {(0xFFFFFFFFFFFF, p4names.FLOOD, (1,))}
    assert {g["group"]: [r["port"] for r in g["replicas"]] for g in insp.multicast_groups()} == {1: [1, 2, 3]}
    engine = server.device.engine
    # plain UDP between hosts is forwarded by IP; a broadcast is flooded to the other ports
    frame = frames.udp_frame("00:00:00:00:00:01", "00:00:00:00:00:02", "10.0.0.1", "10.0.0.2", 1234, 80, b"hi")
    assert [p for p, _ in engine.process(1, frame)] == [2]
    arp = bytes.fromhex("ffffffffffff000000000001" "0806") + bytes(28)
    assert sorted(p for p, _ in engine.process(1, arp)) == [2, 3]


def test_state_file_names_jobs_when_metadata_is_lost(controller_factory):
    from p4reduce.controller.connection import Update, update
    start, addr = controller_factory
    first = start()
    job = JobApiClient(first.api_server.address).create("named", 1, slots=4)
    conn = first.connections["s1"]
    prog = first.network.center.programmer
    entry = prog._job_entity(first.manager.jobs["named"])
    entry.metadata = b""  # as on a target that does not keep entry metadata
    conn.write([update(Update.MODIFY, entry)])
    assert reader(addr).jobs()[0]["name"] == f"job-{job['job_id']}"
    first.stop()
    second = start()
    assert second.resumed == ["named"]
    assert JobApiClient(second.api_server.address).job("named")["slots"] == {"base": 0, "count": 4}


def test_a_hostile_state_file_costs_only_its_bad_fields(controller_factory, tmp_path):
    """The state file (a configured path) is read field by field: a bad lease or creation time is
    ignored (the defaults apply), an entry that is not an object is skipped; the job resumes."""
    from p4reduce.controller.connection import Update, update
    start, _addr = controller_factory
    first = start()
    job = JobApiClient(first.api_server.address).create("named", 1, slots=4)
    entry = first.network.center.programmer._job_entity(first.manager.jobs["named"])
    entry.metadata = b""      # the names come from the state file only
    first.connections["s1"].write([update(Update.MODIFY, entry)])
    first.stop()
    state = tmp_path / "state10.json"
    desc = json.loads(state.read_text())[str(job["job_id"])]
    desc.update(lease_s="forever", created_at=True)
    state.write_text(json.dumps({str(job["job_id"]): desc, "99": 5}))
    second = start()
    assert second.resumed == ["named"]
    resumed = JobApiClient(second.api_server.address).job("named")
    assert resumed["lease_s"] == 30.0 and isinstance(resumed["created_at"], float) and resumed["created_at"] > 1e9


def test_switch_failure_is_reported_and_rolled_back(controller_factory, p4rt_server):
    start, _addr = controller_factory
    server, _ = p4rt_server
    ctl = start()
    client = JobApiClient(ctl.api_server.address)
    client.create("ok", 1, slots=4)
    server.stop(grace=0)
    # a switch that cannot take the job does not refuse it: the job is created for the host fallback,
    # with the reason, and holds no slots
    doomed = client.create("doomed", 1, slots=4)
    assert doomed["path"] == "fallback" and doomed["slots"]["count"] == 0, doomed
    reason = doomed["path_reason"]        # the watchdog may have seen the connection break first
    assert "s1" in reason and ("UNAVAILABLE" in reason or "unreachable" in reason), reason
    assert sorted(j["name"] for j in client.jobs()) == ["doomed", "ok"]
    assert ctl.manager.pool.free == ctl.manager.pool.total - 4


def test_a_job_the_switch_could_not_take_moves_to_it_when_it_can(controller_factory, monkeypatch):
    """The first install fails (as on an unreachable or full switch): the job is created off the
    switch with the switch's reason; once the switch takes it (the reaper's next pass) it holds
    slots and entries there, and its workers are told to return (its generation)."""
    from p4reduce.controller.errors import SwitchError
    start, addr = controller_factory
    ctl = start()
    client = JobApiClient(ctl.api_server.address)
    real = ctl.network.install_job
    monkeypatch.setattr(ctl.network, "install_job", lambda job: (_ for _ in ()).throw(
        SwitchError("switch s1: Write failed: UNAVAILABLE: connection refused")))
    job = client.create("later", 1, slots=4)
    assert job["path"] == "fallback" and "UNAVAILABLE" in job["path_reason"] and job["slots"]["count"] == 0
    assert reader(addr).jobs() == []          # nothing half-written on the switch
    monkeypatch.setattr(ctl.network, "install_job", real)
    client.join("later", ip="10.0.0.1")
    deadline = time.monotonic() + 15
    while client.job("later")["slots"]["count"] == 0 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert client.job("later")["slots"] == {"base": 0, "count": 4}
    assert [j["name"] for j in reader(addr).jobs()] == ["later"]


def test_watching_a_slot_shows_aggregation_progress(controller_factory, p4rt_server, capsys, monkeypatch):
    import io

    from p4reduce.controller.shell import ShellCommands
    start, addr = controller_factory
    server, _ = p4rt_server
    ctl = start()
    client = JobApiClient(ctl.api_server.address)
    job = client.create("w", 2, slots=2)
    client.join("w", ip="10.0.0.1", udp_port=40000)
    client.join("w", ip="10.0.0.2", udp_port=40001)
    lanes = np.arange(constants.LANES, dtype=np.int64) * 3
    real_sleep = time.sleep
    pauses = []

    def sleep_and_send(seconds):  # a worker's packet arrives while the watcher waits
        pauses.append(seconds)
        server.device.engine.process(1, contribution(job, 0, "10.0.0.1", "00:00:00:00:00:01", 40000, lanes, slot=1))
        real_sleep(0.01)

    out = io.StringIO()
    monkeypatch.setattr(time, "sleep", sleep_and_send)
    ShellCommands(reader(addr), out=out).watch_slot(1, job="w", ver=0, interval=0.6, count=2)
    monkeypatch.setattr(time, "sleep", real_sleep)
    assert pauses == [0.6]
    frames_ = out.getvalue().split("--- ")[1:]
    assert len(frames_) == 2
    assert "ranks [] " in frames_[0] and "count=0" in frames_[0]
    assert "ranks [0] " in frames_[1] and "count=1" in frames_[1] and " 93" in frames_[1]  # lane 31 = 93
    # the CLI's --watch prints COUNT times, and --json stays machine-readable
    assert cli_main(["registers", "--slot", "1", "--job", "w", "--ver", "0", "--watch", "0.05", "--count", "2",
                     "--json", "--grpc-addr", addr]) == 0
    docs = [json.loads(line) for line in capsys.readouterr().out.splitlines()]  # JSON Lines
    assert len(docs) == 2 and docs[1]["copies"][0]["seen_ranks"] == [0]


def test_source_guard_from_topology(controller_factory, p4rt_server):
    """Every host port is bound to its host's address; a restarted controller rewrites the same
    entries (no duplicates), and a forged result from a host is dropped and counted."""
    start, addr = controller_factory
    server, _ = p4rt_server
    want = {(i, p4names.HOST_SOURCE, 0x0A000000 + i) for i in (1, 2, 3)}

    def guards():
        return {(e["match"][p4names.SOURCE_GUARD_KEY[0]], e["action"], e["params"]["ip"])
                for e in reader(addr).entries(p4names.SOURCE_GUARD)}

    first = start()
    assert guards() == want
    first.stop()
    start()
    assert guards() == want and len(reader(addr).entries(p4names.SOURCE_GUARD)) == 3
    engine = server.device.engine
    # h3 forges a result for h1 (source = the aggregation address and port): dropped, counted
    forged = frames.udp_frame("00:00:00:00:00:03", "00:00:00:00:00:01", SWITCH_IP, "10.0.0.1",
                              constants.AGG_UDP_PORT, 40000, b"forged result")
    assert engine.process(3, forged) == []
    assert engine.counter_read(p4names.DROP_REASONS, constants.DropReason.SPOOFED_SOURCE)[0] == 1
    honest = frames.udp_frame("00:00:00:00:00:03", "00:00:00:00:00:01", "10.0.0.3", "10.0.0.1", 5, 6, b"hi")
    assert [p for p, _ in engine.process(3, honest)] == [1]


def test_switch_restart_is_recovered(controller_factory, p4rt_server):
    """The switch process dies and comes back empty on the same address: the controller reconnects,
    pushes the program, reinstalls forwarding and the running job, and aggregation works again."""
    from p4sim.runtime import P4RuntimeServer
    start, addr = controller_factory
    server, _ = p4rt_server
    ctl = start()
    client = JobApiClient(ctl.api_server.address)
    job = client.create("phoenix", 2, slots=4)
    client.join("phoenix", ip="10.0.0.1", udp_port=40000)
    client.join("phoenix", ip="10.0.0.2", udp_port=40001)
    server.stop(grace=0)
    reborn = P4RuntimeServer(addr)
    reborn.start()
    try:
        dog = ctl.watchdogs[0]
        deadline = time.monotonic() + 30
        while dog.recoveries < 1 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert dog.recoveries == 1
        insp = reader(addr)
        [j] = insp.jobs()
        assert j["name"] == "phoenix" and len(j["members"]) == 2
        a, b = np.ones(constants.LANES, dtype=np.int64), np.full(constants.LANES, 4, dtype=np.int64)
        engine = reborn.device.engine
        engine.process(1, contribution(job, 0, "10.0.0.1", "00:00:00:00:00:01", 40000, a))
        out = engine.process(2, contribution(job, 1, "10.0.0.2", "00:00:00:00:00:02", 40001, b))
        assert sorted(p for p, _ in out) == [1, 2]
        assert list(wire.decode(frames.parse_udp_frame(out[0][1]).payload)[1]) == [5] * constants.LANES
        assert client.heartbeat("phoenix", 0)["state"] == "running"
    finally:
        ctl.stop()
        reborn.stop(grace=0)


def test_standby_controller_takes_over(controller_factory):
    import threading
    start, _addr = controller_factory
    primary = start()
    client = JobApiClient(primary.api_server.address)
    client.create("kept", 2, slots=4)
    client.join("kept", ip="10.0.0.1")
    result = {}
    standby = threading.Thread(target=lambda: result.update(ctl=start(election_id=5, standby=True)))
    standby.start()
    time.sleep(1.0)
    assert standby.is_alive() and "ctl" not in result  # standing by while the primary runs
    primary.stop()
    standby.join(timeout=30)
    ctl = result["ctl"]
    assert ctl.resumed == ["kept"] and ctl.connections["s1"].primary
    job = JobApiClient(ctl.api_server.address, credential=client.credentials["kept"]).join("kept", ip="10.0.0.2")["job"]
    assert job["state"] == "running" and [m["rank"] for m in job["members"]] == [0, 1]


def test_a_switch_without_the_p4reduce_program_gives_fallback_jobs(p4rt_server, reference_dir):
    """The aggregating switch runs another program (real p4c's fwd_basic): the controller serves
    anyway, says why once, /v1/health names the problem, and every job is created for the host
    fallback with that reason (not refused) and never put on the switch."""
    _, addr = p4rt_server
    out = reference_dir / "p4c-out"
    logs = []
    ctl = Controller(topology(addr), out / "fwd_basic.p4info.txtpb", out / "fwd_basic.json", election_id=10,
                     connect_timeout=5, api_address=("127.0.0.1", 0), state_file=None, lease_s=30.0)
    ctl.report = logs.append
    try:
        ctl.start()
        client = JobApiClient(ctl.api_server.address)
        job = client.create("plain", 2, slots=8)
        assert job["path"] == "fallback" and job["slots"]["count"] == 0, job
        assert "s1 does not run a p4reduce program" in job["path_reason"], job["path_reason"]
        assert client.join("plain", ip="10.0.0.1")["rank"] == 0
        health = client.health()
        assert not health["ok"] and any("does not run a p4reduce program" in p for p in health["problems"])
        ctl.manager.rearm()                # the reaper's pass: nothing goes to the switch
        assert client.job("plain")["slots"]["count"] == 0
        assert any("every job runs on the host fallback" in line for line in logs), logs
    finally:
        ctl.stop()
