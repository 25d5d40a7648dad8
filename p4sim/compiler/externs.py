"""What p4sim-compile knows about the v1model/core externs: names, arities and BMv2 lowering.

The include files declare these for the parser; the semantics (which BMv2 primitive implements a
call) live here, in one table, so the checker and the backend agree.
"""

# extern functions: name -> (min args, max args)
EXTERN_FUNCS = {
    "mark_to_drop": (1, 1),
    "hash": (5, 5),
    "random": (3, 3),
    "digest": (2, 2),
    "verify": (2, 2),
    "clone": (2, 2),
    "clone_preserving_field_list": (3, 3),
    "resubmit_preserving_field_list": (1, 1),
    "recirculate_preserving_field_list": (1, 1),
    "truncate": (1, 1),
    "assert": (1, 1),
    "assume": (1, 1),
    "log_msg": (1, 2),
    "verify_checksum": (4, 4),
    "update_checksum": (4, 4),
    "verify_checksum_with_payload": (4, 4),
    "update_checksum_with_payload": (4, 4),
}

# extern object methods: (type, method) -> (min args, max args, returns)
EXTERN_METHODS = {
    ("register", "read"): (2, 2),
    ("register", "write"): (2, 2),
    ("counter", "count"): (1, 1),
    ("direct_counter", "count"): (0, 0),
    ("packet_in", "extract"): (1, 1),
    ("packet_in", "lookahead"): (0, 0),
    ("packet_in", "advance"): (1, 1),
    ("packet_out", "emit"): (1, 1),
}

# extern object constructors: type -> (min args, max args)
EXTERN_CTORS = {
    "register": (1, 1),
    "counter": (2, 2),
    "direct_counter": (1, 1),
}

UNSUPPORTED_EXTERNS = {
    "meter": "meter", "direct_meter": "direct_meter", "action_profile": "action_profile",
    "action_selector": "action_selector", "Checksum16": "Checksum16", "value_set": "value_set",
    "resubmit": "resubmit (P4_14-style; use resubmit_preserving_field_list)",
    "recirculate": "recirculate (P4_14-style; use recirculate_preserving_field_list)",
    "clone3": "clone3 (use clone_preserving_field_list)",
}

HASH_ALGOS = {"crc32": "crc32", "crc16": "crc16", "identity": "identity", "csum16": "csum16",
              "xor16": "xor16"}
