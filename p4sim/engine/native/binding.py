"""ctypes declarations of the runtime's C API (runtime/rt_*.c): one place for every signature."""
import ctypes
from ctypes import (
    POINTER,
    c_char_p,
    c_double,
    c_int,
    c_int32,
    c_int64,
    c_size_t,
    c_uint16,
    c_uint32,
    c_uint64,
    c_void_p,
)
from typing import Any

U64P = POINTER(c_uint64)
U32P = POINTER(c_uint32)
U16P = POINTER(c_uint16)


class OutRec(ctypes.Structure):
    _fields_ = [("off", c_uint32), ("len", c_uint32), ("port", c_uint32), ("input", c_uint32)]


class OutBuf(ctypes.Structure):
    _fields_ = [("data", POINTER(ctypes.c_uint8)), ("used", c_size_t), ("cap", c_size_t),
                ("recs", POINTER(OutRec)), ("nrec", c_uint32), ("caprec", c_uint32), ("events", c_uint32),
                ("ev_kind", c_uint32), ("ev_port", c_uint32), ("ev_value", c_uint64)]


SIGNATURES: dict = {
    "rt_abi": (c_int, []),
    "rt_switch_new": (c_void_p, [c_uint32, c_size_t]),
    "rt_switch_free": (None, [c_void_p]),
    "rt_lock": (None, [c_void_p]),
    "rt_unlock": (None, [c_void_p]),
    "rt_set_batch": (None, [c_void_p, c_void_p]),
    "rt_add_table": (c_int, [c_void_p, c_int, c_int, c_int, c_int, c_uint32]),
    "rt_add_register": (c_int, [c_void_p, c_uint32, c_uint32]),
    "rt_add_counter": (c_int, [c_void_p, c_uint32]),
    "rt_add_meter": (c_int, [c_void_p, c_uint32, c_int]),
    "rt_add_vset": (c_int, [c_void_p]),
    "rt_tbl_add": (c_void_p, [c_void_p, c_uint32, c_int32, U64P, U64P, U64P, U64P, c_uint32, c_uint32, c_int,
                              U64P]),
    "rt_tbl_modify": (None, [c_void_p, c_uint32, c_void_p, c_int, U64P]),
    "rt_tbl_delete": (None, [c_void_p, c_uint32, c_void_p]),
    "rt_tbl_set_default": (None, [c_void_p, c_uint32, c_int, U64P]),
    "rt_tbl_counter": (None, [c_void_p, c_void_p, c_int, U64P, U64P]),
    "rt_reg_read": (c_uint32, [c_void_p, c_uint32, c_uint32, c_uint32, c_void_p]),
    "rt_reg_write": (None, [c_void_p, c_uint32, c_uint32, U64P]),
    "rt_reg_fill": (None, [c_void_p, c_uint32, U64P]),
    "rt_ctr_read": (c_uint32, [c_void_p, c_uint32, c_uint32, c_uint32, c_void_p, c_void_p]),
    "rt_ctr_write": (None, [c_void_p, c_uint32, c_int64, c_uint64, c_uint64]),
    "rt_meter_set": (None, [c_void_p, c_uint32, c_int64, c_int, c_double, c_double, c_double, c_double]),
    "rt_vset_set": (c_int, [c_void_p, c_uint32, c_uint32, U64P, U64P]),
    "rt_mc_set": (c_int, [c_void_p, c_uint32, c_uint32, U16P, U16P]),
    "rt_mc_delete": (c_int, [c_void_p, c_uint32]),
    "rt_clone_set": (c_int, [c_void_p, c_uint32, c_uint32, U16P, U16P, c_uint32]),
    "rt_clone_delete": (c_int, [c_void_p, c_uint32]),
    "rt_nstats": (c_int, []),
    "rt_stats": (None, [c_void_p, U64P]),
    "rt_last_error": (c_size_t, [c_void_p, c_char_p, c_size_t]),
    "rt_set_determinism": (None, [c_void_p, c_int64, c_int]),
    "rt_set_meter_clock": (None, [c_void_p, c_double]),
    "rt_trace_enable": (None, [c_void_p, c_int]),
    "rt_trace_take": (c_size_t, [c_void_p, c_char_p, c_size_t]),
    "rt_trace_pending": (c_size_t, [c_void_p]),
    "rt_outbuf_new": (POINTER(OutBuf), []),
    "rt_outbuf_free": (None, [POINTER(OutBuf)]),
    "rt_outbuf_reset": (None, [POINTER(OutBuf)]),
    "rt_process": (c_uint32, [c_void_p, POINTER(c_void_p), U32P, U16P, c_uint32, POINTER(OutBuf)]),
}

PORTS_SIGNATURES: dict = {
    "rt_ports_new": (c_void_p, [c_uint32, POINTER(c_int), U16P, POINTER(c_char_p), c_int, c_int, c_size_t]),
    "rt_ports_start": (c_int, [c_void_p]),
    "rt_ports_stop": (None, [c_void_p]),
    "rt_ports_free": (None, [c_void_p]),
    "rt_ports_set_switch": (None, [c_void_p, c_void_p]),
    "rt_ports_send": (c_int, [c_void_p, c_uint32, c_char_p, c_uint32]),
    "rt_ports_take": (c_size_t, [c_void_p, c_void_p, c_size_t]),
    "rt_ports_event_fd": (c_int, [c_void_p]),
    "rt_ports_notify": (None, [c_void_p]),
    "rt_ports_nstats": (c_int, []),
    "rt_ports_stats": (None, [c_void_p, U64P]),
}

PORT_STAT_NAMES = ("rx", "tx", "tx_dropped", "to_cpu", "unknown_port", "queue_dropped", "truncated", "batches",
                   "rx_rings", "rx_copied")

PROGRAM_SIGNATURES: dict = {
    "p4prog_abi": (c_int, []),
    "p4prog_state_size": (c_size_t, []),
}

STAT_NAMES = ("received", "emitted", "dropped", "internal_errors", "dropped_parser_loop", "dropped_pass_limit",
              "dropped_action_loop", "dropped_no_memory")


def declare(lib: ctypes.CDLL, signatures: dict[str, tuple[Any, list[Any]]]) -> ctypes.CDLL:
    """Set each function's result and argument ctypes (ctypes types: Any to mypy)."""
    for name, (restype, argtypes) in signatures.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    # the C side writes this many counters: a name list of another length is a bug here
    if "rt_nstats" in signatures and lib.rt_nstats() != len(STAT_NAMES):
        raise RuntimeError("native runtime: switch statistics do not match binding.STAT_NAMES")
    if "rt_ports_nstats" in signatures and lib.rt_ports_nstats() != len(PORT_STAT_NAMES):
        raise RuntimeError("native runtime: port statistics do not match binding.PORT_STAT_NAMES")
    return lib
