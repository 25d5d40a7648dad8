"""One allreduce through the switch after a barrier the test controls, checked, then leave:

    python last_call_worker.py RELEASE_FILE CONTROLLER JOB WORKERS ADVERTISE_IP

It prints {"event": "progress", "message": "joined as rank R"}, waits for RELEASE_FILE, allreduces
rank-dependent int32 values (the job's last call) and prints {"event": "result", "exact": ...}.
No host fallback: a call the switch does not answer within the job's lease fails."""
import json
import os
import sys
import time

import numpy as np

from p4reduce.worker.agent import Agent

ELEMENTS = 200                 # one block: the call is one round of one slot


def main() -> int:
    release, controller, job, workers, ip = sys.argv[1:6]
    n = int(workers)
    try:
        with Agent(controller, job, advertise_ip=ip, workers=n, mode="dense", wait_timeout=60,
                   fallback=False) as agent:
            print(json.dumps({"event": "progress", "message": f"joined as rank {agent.rank}"}), flush=True)
            while not os.path.exists(release):
                time.sleep(0.02)
            base = np.arange(ELEMENTS, dtype=np.int32)
            got = agent.allreduce(base * (agent.rank + 1))
            exact = bool(np.array_equal(got, base * (n * (n + 1) // 2)))
            print(json.dumps({"event": "result", "rank": agent.rank, "exact": exact}), flush=True)
        return 0
    except Exception as err:
        print(json.dumps({"event": "error", "message": f"{type(err).__name__}: {err}"}), flush=True)
        return 1


if __name__ == "__main__":
    sys.exit(main())
