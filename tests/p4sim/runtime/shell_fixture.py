"""p4runtime-shell (p4runtime_sh) connected to the test server, with the pipeline pushed by it."""
import contextlib

import p4runtime_sh.shell as sh

from .conftest import DEVICE_ID


@contextlib.contextmanager
def shell_session(harness, ref, election_id=(0, 1)):
    sh.setup(device_id=DEVICE_ID, grpc_addr=harness.address, election_id=election_id,
             config=sh.FwdPipeConfig(str(ref.p4info_path), str(ref.json_path)), verbose=False)
    try:
        yield sh
    finally:
        sh.teardown()


def install_case(sh, case):
    """Install a reference case's entries, defaults, multicast groups and clone sessions exactly
    as the case describes them (p4runtime-shell value syntax)."""
    for spec in case.get("entries", []):
        entry = sh.TableEntry(spec["table"])(action=spec["action"])
        for field, value in spec["match"].items():
            entry.match[field] = value
        for param, value in spec.get("params", {}).items():
            entry.action[param] = value
        if "priority" in spec:
            entry.priority = spec["priority"]
        entry.insert()
    for spec in case.get("defaults", []):
        entry = sh.TableEntry(spec["table"])(action=spec["action"], is_default=True)
        for param, value in spec.get("params", {}).items():
            entry.action[param] = value
        entry.modify()
    for spec in case.get("multicast", []):
        group = sh.MulticastGroupEntry(spec["group"])
        for port, instance in spec["replicas"]:
            group.add(port, instance)
        group.insert()
    for spec in case.get("clone_sessions", []):
        session = sh.CloneSessionEntry(spec["session"])
        for port, instance in spec["replicas"]:
            session.add(port, instance)
        session.insert()
