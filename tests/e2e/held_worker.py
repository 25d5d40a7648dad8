"""The demo worker, held at its first allreduce until a file exists: a barrier the test controls.

    python held_worker.py RELEASE_FILE <demo_worker arguments>

It joins like any demo worker, then prints {"event": "progress", "message": "held"} and waits for
RELEASE_FILE before its first allreduce. Until then no round of the job can complete, so the
other ranks are known to have their first rounds open: packets sent meanwhile meet a running job.
"""
import json
import os
import sys
import time

from lab.demo import worker as demo_worker
from p4reduce.worker.agent import Agent


def main() -> int:
    release, argv = sys.argv[1], sys.argv[2:]
    allreduce = Agent.allreduce

    def held(self, *args, **kwargs):
        Agent.allreduce = allreduce
        print(json.dumps({"event": "progress", "message": "held"}), flush=True)
        while not os.path.exists(release):
            time.sleep(0.02)
        return allreduce(self, *args, **kwargs)

    Agent.allreduce = held
    return demo_worker.main(argv)


if __name__ == "__main__":
    sys.exit(main())
