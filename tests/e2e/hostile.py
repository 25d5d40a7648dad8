"""A hostile host: garbage, malformed and spoofed frames at the switch, for a bounded time.

    python hostile.py '{"intf": ..., "seconds": 5, "stop_file": PATH (stop early when it exists),
                        "count": N (stop after N frames), "job_id": 1, "wire_tokens": [0, ...] (the wire
                        tokens forged frames carry, in turn), "victims": [{"ip","mac","udp_port","rank"}],
                        "service_ip": ..., "service_mac": ..., "udp_port": 48864, "own_mac": ...}'
Prints how many frames it sent, in all and by kind.
"""
import json
import random
import struct
import sys
import time

from scapy.all import IP, UDP, Ether, Raw, conf

from p4reduce.protocol import constants as C
from p4reduce.protocol import wire

FULL = C.full_bitmap()


def contrib(job_id, rank, slot, offset, lanes=C.LANES, bitmap=FULL, value=0x01000000, ver=0, wire_token=0,
            msg_type=C.MsgType.CONTRIB):
    header = wire.pack_header(msg_type, 0, job_id, rank, 0, ver, slot & 0x7FFF, offset, C.NEXT_NONE,
                              C.EXP_BIAS, 0, bitmap, wire_token)
    return header + struct.pack(f"!{lanes}i", *([value] * lanes))


def main():
    cfg = json.loads(sys.argv[1])
    rng = random.Random(1234)
    conf.verb = 0
    sock = conf.L2socket(iface=cfg["intf"])
    svc = (cfg["service_ip"], cfg["service_mac"], cfg["udp_port"])
    sent = 0
    by_kind = {}
    import os
    wire_tokens = cfg.get("wire_tokens", [cfg.get("wire_token", 0)])     # forged frames alternate between them
    count = cfg.get("count")
    rounds_sent = 0
    deadline = time.monotonic() + cfg["seconds"]
    while (time.monotonic() < deadline and not os.path.exists(cfg.get("stop_file", "/nonexistent"))
           and (count is None or sent < count)):
        victim = rng.choice(cfg["victims"])
        wire_token = wire_tokens[rounds_sent % len(wire_tokens)]
        rounds_sent += 1
        # Aim at rounds that really happen: block b runs on slot b mod S at offset LANES*b.
        slots = cfg.get("slots", 64)
        slot = rng.randrange(0, slots)
        # Half the time the first round of a stream (offset LANES*slot), which every tensor starts with.
        rounds = max(1, cfg.get("blocks", 64) // slots)
        offset = C.LANES * (slot + slots * (0 if rng.random() < 0.5 else rng.randrange(0, rounds)))
        ver = rng.randrange(2)
        frames = [
            # garbage payloads of every length, honest source
            Ether(dst=svc[1], src=cfg["own_mac"]) / IP(src=cfg["own_ip"], dst=svc[0]) /
            UDP(sport=rng.randrange(1024, 65535), dport=svc[2]) / Raw(bytes(rng.randrange(256) for _ in range(rng.randrange(0, 200)))),
            # a well-formed contribution for the running job from an unknown worker
            Ether(dst=svc[1], src=cfg["own_mac"]) / IP(src=cfg["own_ip"], dst=svc[0]) /
            UDP(sport=victim["udp_port"], dport=svc[2]) / Raw(contrib(cfg["job_id"], victim["rank"], slot, offset)),
            # the same, spoofing a worker's MAC, IP and UDP port
            Ether(dst=svc[1], src=victim["mac"]) / IP(src=victim["ip"], dst=svc[0]) /
            UDP(sport=victim["udp_port"], dport=svc[2]) / Raw(contrib(cfg["job_id"], victim["rank"], slot, offset, ver=ver)),
            # a spoofed RESULT aimed at a worker, as if from the switch
            Ether(dst=victim["mac"], src=svc[1]) / IP(src=svc[0], dst=victim["ip"]) /
            UDP(sport=svc[2], dport=victim["udp_port"]) /
            Raw(contrib(cfg["job_id"], victim["rank"], slot, offset, ver=ver, wire_token=wire_token, msg_type=C.MsgType.RESULT)),
            # truncated header, bad IP checksum, non-IP ethertype, broadcast
            Ether(dst=svc[1], src=victim["mac"]) / IP(src=victim["ip"], dst=svc[0]) /
            UDP(sport=victim["udp_port"], dport=svc[2]) / Raw(contrib(cfg["job_id"], victim["rank"], slot, offset)[:11]),
            Ether(dst=svc[1], src=victim["mac"]) / IP(src=victim["ip"], dst=svc[0], chksum=0x1234) /
            UDP(sport=victim["udp_port"], dport=svc[2]) / Raw(contrib(cfg["job_id"], victim["rank"], slot, offset)),
            Ether(dst=svc[1], src=cfg["own_mac"], type=0x88B5) / Raw(bytes(rng.randrange(256) for _ in range(60))),
            Ether(dst="ff:ff:ff:ff:ff:ff", src=victim["mac"]) / IP(src=victim["ip"], dst=svc[0]) /
            UDP(sport=victim["udp_port"], dport=svc[2]) / Raw(contrib(cfg["job_id"], victim["rank"], slot, offset)),
            # a RESULT from the attacker's own address (honest source), from the aggregation port
            Ether(dst=victim["mac"], src=cfg["own_mac"]) / IP(src=cfg["own_ip"], dst=victim["ip"]) /
            UDP(sport=svc[2], dport=victim["udp_port"]) /
            Raw(contrib(cfg["job_id"], victim["rank"], slot, offset, ver=ver, wire_token=wire_token, msg_type=C.MsgType.RESULT)),
        ]
        kinds = cfg.get("kinds")
        for i, frame in enumerate(frames):
            if kinds is not None and i not in kinds:
                continue
            sock.send(frame)
            sent += 1
            by_kind[i] = by_kind.get(i, 0) + 1
        if sent and cfg.get("started_file") and not os.path.exists(cfg["started_file"]):
            open(cfg["started_file"], "w").close()      # the test releases the job now
        time.sleep(0.002)
    print(json.dumps({"sent": sent, "by_kind": by_kind}))


if __name__ == "__main__":
    main()
