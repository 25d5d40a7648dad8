"""Controller writes while packets flow: every packet sees a whole entry (never a torn one), and
a Write batch is seen by packets entirely or not at all."""
import threading

from p4.v1 import p4runtime_pb2

from .p4rt_client import update


def route(ref_ids, plen_value, port, smac):
    entry = p4runtime_pb2.TableEntry(table_id=ref_ids["Ing.routes"])
    fm = entry.match.add(field_id=1)
    fm.lpm.value, fm.lpm.prefix_len = plen_value
    entry.action.action.action_id = ref_ids["Ing.route"]
    entry.action.action.params.add(param_id=1, value=smac)
    entry.action.action.params.add(param_id=2, value=smac)   # dmac == smac: one consistent version
    entry.action.action.params.add(param_id=3, value=port)
    return entry


def test_batches_are_atomic_for_packets(harness, reference):
    ref = reference("fwd_basic")
    client = harness.client()
    client.set_pipeline(ref.p4info, ref.device_config)
    ids = {o.preamble.name: o.preamble.id for o in list(ref.p4info.tables) + list(ref.p4info.actions)}
    key16 = (b"\x0a\x01\x00\x00", 16)
    key24 = (b"\x0a\x01\x02\x00", 24)
    client.write(update("INSERT", table_entry=route(ids, key16, b"\x01", b"\x00")),
                 update("INSERT", table_entry=route(ids, key24, b"\x01", b"\x00")))
    to_24 = bytes.fromhex("00aa00000001000000000099080045000021000100004011acbec00002090a01020300050006000dede968656c6c6f")
    to_16 = bytes.fromhex("00aa00000001000000000099080045000021000100004011a5b8c00002090a01090900050006000de6e368656c6c6f")
    stop = threading.Event()
    seen = []
    failures = []

    def packets():
        path = harness.server.packet_path
        engine = harness.server.device.engine
        while not stop.is_set():
            with engine.lock:  # one packet to each route, as one observation
                first = engine.process(1, to_16)
                second = engine.process(1, to_24)
            try:
                (port_a, frame_a), = first
                (port_b, frame_b), = second
            except ValueError:
                failures.append((first, second))
                continue
            # dmac == smac inside one entry; both entries were written in one batch
            if frame_a[:6] != frame_a[6:12] or frame_b[:6] != frame_b[6:12]:
                failures.append(("torn entry", frame_a.hex(), frame_b.hex()))
            if (port_a, frame_a[:6]) != (port_b, frame_b[:6]):
                failures.append(("torn batch", port_a, port_b))
            seen.append(port_a)
        del path

    thread = threading.Thread(target=packets)
    thread.start()
    try:
        for version in range(1, 120):
            port = bytes([1 + version % 4])
            mac = bytes([version % 256])
            client.write(update("MODIFY", table_entry=route(ids, key16, port, mac)),
                         update("MODIFY", table_entry=route(ids, key24, port, mac)))
    finally:
        stop.set()
        thread.join()
    assert failures == []
    assert len(set(seen)) > 1  # the packets really ran while entries changed


def test_pipeline_swaps_while_packets_flow(harness, reference):
    """Packets keep flowing (no errors, no exceptions) while the program is replaced."""
    fwd, agg = reference("fwd_basic"), reference("agg_mini")
    client = harness.client()
    client.set_pipeline(fwd.p4info, fwd.device_config)
    frames = [bytes.fromhex(f) for _, f in fwd.case["packets"] + agg.case["packets"]]
    stop = threading.Event()
    count = [0]

    def packets():
        while not stop.is_set():
            for frame in frames:
                harness.server.packet_path.inject(1, frame)
                count[0] += 1

    thread = threading.Thread(target=packets)
    thread.start()
    try:
        for round_ in range(6):
            ref = agg if round_ % 2 == 0 else fwd
            client.set_pipeline(ref.p4info, ref.device_config)
    finally:
        stop.set()
        thread.join()
    assert count[0] > len(frames)
    assert harness.server.packet_path.stats["errors"] == 0
    assert harness.server.device.pipeline.index.p4info == fwd.p4info
