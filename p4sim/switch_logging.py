"""Logging of p4sim-switch as BMv2 does it: --log-console / --log-file at -L LEVEL, lines in
BMv2's format, and the per-packet trace (TraceSink), which writes straight to the log streams so
that a traced switch still moves thousands of packets per second."""
import argparse
import logging
import os
import sys
import threading
import time
from collections.abc import Iterable
from typing import ClassVar, TextIO

LEVELS = {"trace": 5, "debug": logging.DEBUG, "info": logging.INFO, "warn": logging.WARNING,
          "warning": logging.WARNING, "error": logging.ERROR, "critical": logging.CRITICAL,
          "off": logging.CRITICAL + 10}
TRACE = 5


def setup_logging(options: argparse.Namespace) -> bool:
    """BMv2-like log lines on the console and/or in a file; returns True if tracing is on."""
    logging.addLevelName(TRACE, "TRACE")
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    level_name = options.log_level or ("trace" if (options.log_console or options.log_file) else "info")
    level = LEVELS[level_name]
    formatter = _BmvFormatter()
    handlers: list[logging.Handler] = []
    if options.log_console:
        handlers.append(logging.StreamHandler(sys.stdout))
    if options.log_file:
        directory = os.path.dirname(os.path.abspath(options.log_file))
        os.makedirs(directory, exist_ok=True)
        handlers.append(logging.FileHandler(options.log_file, mode="a"))
    if not handlers:
        handlers.append(logging.StreamHandler(sys.stderr))
        level = max(level, logging.WARNING)
    for handler in handlers:
        handler.setFormatter(formatter)
        root.addHandler(handler)
    root.setLevel(level)
    return level <= TRACE or (level <= logging.DEBUG and (options.log_console or options.log_file))


class _BmvFormatter(logging.Formatter):
    SHORT: ClassVar[dict[int, str]] = {TRACE: "T", logging.DEBUG: "D", logging.INFO: "I", logging.WARNING: "W",
             logging.ERROR: "E", logging.CRITICAL: "C"}

    def format(self, record):
        stamp = time.strftime("%H:%M:%S", time.localtime(record.created))
        millis = int(record.msecs)
        text = (f"[{stamp}.{millis:03d}] [bmv2] [{self.SHORT.get(record.levelno, 'I')}] "
                f"[thread {record.thread % 100000}] {record.getMessage()}")
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        return text


class TraceSink:
    """Fast writer for the engine's per-packet trace lines (one call per line).

    Bypasses the logging machinery: lines go straight to the log streams with a BMv2-like prefix
    (time cached per millisecond) and are flushed by a background timer and at shutdown, so a
    traced switch still moves thousands of packets per second."""

    def __init__(self, streams: Iterable[TextIO], flush_interval: float = 0.2) -> None:
        self.streams = list(streams)
        self._ms = -1
        self._prefix = ""
        self._stop = threading.Event()
        self._flusher = threading.Thread(target=self._flush_loop, args=(flush_interval,),
                                         name="p4sim-trace-flush", daemon=True)
        self._flusher.start()

    def __call__(self, line):
        now = time.time()
        ms = int(now * 1000)
        if ms != self._ms:
            self._ms = ms
            self._prefix = f"[{time.strftime('%H:%M:%S', time.localtime(now))}.{ms % 1000:03d}] [bmv2] [T] [thread "
        text = f"{self._prefix}{threading.get_ident() % 100000}] {line}\n"
        for stream in self.streams:
            try:
                stream.write(text)
            except (OSError, ValueError):
                pass

    def flush(self) -> None:
        for stream in self.streams:
            try:
                stream.flush()
            except (OSError, ValueError):
                pass

    def _flush_loop(self, interval):
        while not self._stop.wait(interval):
            self.flush()

    def close(self) -> None:
        self._stop.set()
        self.flush()


def trace_streams() -> list[TextIO]:
    """The streams of the root logger's handlers (console and/or log file)."""
    return [h.stream for h in logging.getLogger().handlers if isinstance(h, logging.StreamHandler)]
