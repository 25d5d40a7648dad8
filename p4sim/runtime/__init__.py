"""P4Runtime service over a p4sim engine.

Modules, one concern each: `p4info_index` (P4Info lookups), `pipeline` (P4Info bound to the BMv2
JSON by name, engine creation), `match_keys`/`actions`/`tables` (TableEntry), `registers`,
`counters` (indirect and direct), `meters`, `value_sets`, `pre` (multicast groups, clone sessions), `arbitration`
(primary/backup election), `packet_io` (packet path, PacketIn/PacketOut), `device` (pipeline and
entity state), `rollback` (undo for atomic Write batches), `errors` (status codes), `service`
(the gRPC servicer), `server` (the grpc.Server), `tls` (simple_switch_grpc's TLS options),
`thrift_service` (BMv2 Thrift register/counter subset for simple_switch_CLI).
"""
from .errors import P4RuntimeError
from .server import P4RuntimeServer, ServerError

__all__ = ["P4RuntimeError", "P4RuntimeServer", "ServerError"]
