"""Push a pipeline and table entries to a switch with p4runtime-shell's scripted API.

Runs in a subprocess: p4runtime-shell keeps one global client, and a test must not leave it
connected to a switch it has stopped.
"""
import json
import subprocess
import sys

SCRIPT = r'''
import json, sys
import p4runtime_sh.shell as sh
job = json.loads(sys.argv[1])
sh.setup(device_id=job["device_id"], grpc_addr=job["grpc_addr"], election_id=(0, 1),
         config=sh.FwdPipeConfig(job["p4info"], job["json"]) if job.get("json") else None,
         verbose=False)
try:
    for e in job["entries"]:
        te = sh.TableEntry(e["table"])(action=e["action"])
        for field, value in e["match"].items():
            te.match[field] = value
        for name, value in e.get("params", {}).items():
            te.action[name] = value
        getattr(te, e.get("op", "insert"))()
    if job.get("read_table"):
        print(json.dumps([str(x.match) for x in sh.TableEntry(job["read_table"]).read()]))
finally:
    sh.teardown()
'''


def push(grpc_addr, device_id, entries, p4info=None, bmv2_json=None, read_table=None, timeout=60):
    """Set the pipeline (when bmv2_json is given) and write entries; returns stdout."""
    job = {"grpc_addr": grpc_addr, "device_id": device_id, "entries": entries, "p4info": p4info,
           "json": bmv2_json, "read_table": read_table}
    result = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(job)], capture_output=True,
                            text=True, timeout=timeout)
    if result.returncode != 0:
        raise AssertionError(f"p4runtime-shell failed:\n{result.stdout}\n{result.stderr}")
    return result.stdout
