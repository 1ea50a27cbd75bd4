"""frost's logger and its one terminal note.

Every frost module logs through ``logging.getLogger("frost")`` (or a child of it), got from
:func:`logger`. frost adds no handler and sets no level on import, and never calls
``logging.basicConfig``: an application's own logging setup decides what is shown.

``FROST_LOG_LEVEL`` (a level name such as ``INFO`` or ``DEBUG``, or a number) is read once, the
first time :func:`logger` is called. When it is set, the ``frost`` logger takes that level and,
if no handler would receive its records (neither on it nor on an ancestor), gets one writing
``frost: LEVEL: message`` lines to stderr. When it is unset, nothing is changed. An unknown
level is reported on stderr once and ignored.

:func:`progress` is the one line a long first call shows in a terminal (stderr a TTY):
``frost: compiling sdpa-bwd bf16 d=128 ... (first call) 2.1 s``. Nothing is printed when stderr
is not a TTY (pipes, CI logs, notebooks' captured streams), so library output stays clean.

This module is in the lowest layer (:mod:`frost.tile_dsl`) so that every layer may log.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
import time

NAME = "frost"
LEVEL_ENV = "FROST_LOG_LEVEL"
FORMAT = "frost: %(levelname)s: %(message)s"

_STATE = {"configured": False}
_LOCK = threading.Lock()


def parse_level(text: str) -> int:
    """``"INFO"`` / ``"debug"`` / ``"20"`` -> a logging level; ValueError for anything else."""
    t = text.strip()
    if t.lstrip("-").isdigit():
        return int(t)
    level = logging.getLevelName(t.upper())
    if not isinstance(level, int):
        raise ValueError(f"{LEVEL_ENV}={text!r} is not a logging level (DEBUG, INFO, WARNING, "
                         f"ERROR, CRITICAL or a number)")
    return level


def configure(force: bool = False) -> logging.Logger:
    """Apply ``FROST_LOG_LEVEL`` to the ``frost`` logger (once per process; ``force``: again).
    Returns the logger."""
    log = logging.getLogger(NAME)
    with _LOCK:
        if _STATE["configured"] and not force:
            return log
        _STATE["configured"] = True
        text = os.environ.get(LEVEL_ENV, "").strip()
        if not text:
            return log
        try:
            level = parse_level(text)
        except ValueError as e:
            sys.stderr.write(f"frost: {e}; ignored\n")
            return log
        log.setLevel(level)
        if not log.hasHandlers():
            handler = logging.StreamHandler(sys.stderr)
            handler.setFormatter(logging.Formatter(FORMAT))
            log.addHandler(handler)
    return log


def logger(name: str = "") -> logging.Logger:
    """The ``frost`` logger (``name``: a child, ``frost.<name>``), configured on first use."""
    configure()
    return logging.getLogger(f"{NAME}.{name}" if name else NAME)


def _is_tty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):  # no isatty, or a closed stream
        return False


@contextlib.contextmanager
def progress(what: str):
    """Around a long first-call step (a compile): when stderr is a TTY, write
    ``frost: compiling <what> ... (first call)`` before it and the seconds it took (or
    ``failed``) after it, on one line. Does nothing otherwise."""
    stream = sys.stderr
    tty = _is_tty(stream)
    if tty:
        stream.write(f"frost: compiling {what} ... (first call)")
        stream.flush()
    t0 = time.perf_counter()
    ok = False
    try:
        yield
        ok = True
    finally:
        if tty:
            stream.write(f" {time.perf_counter() - t0:.1f} s\n" if ok else " failed\n")
            stream.flush()
