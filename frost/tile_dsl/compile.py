"""Compile CuTe DSL programs for a target arch without a GPU, and read their resource report.

``compile_for(fn, *args, arch="sm_120a")`` wraps :func:`cute.compile` with the options that make
the compile inspectable:

* ``--gpu-arch <arch>``: without it a GPU-less box silently targets sm_100a;
* ``--keep-ptx --keep-cubin``: so ``__ptx__`` / ``__cubin__`` are filled;
* ``remarks{ptx}``: ptxas prints "Used N registers, S bytes spill stores ..." on fd 2.

The ptxas remarks are written by native code straight to file descriptor 2, so this module
redirects fd 2 into a temporary file for the duration of the compile and parses it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import tempfile
from typing import Any

SUPPORTED_ARCHS = ("sm_120a", "sm_121a", "sm_90a")

_DUMP_DIR: str | None = None


def _dump_dir() -> str:
    """A per-process scratch folder for --keep-ptx/--keep-cubin files (CuTe's default is the CWD)."""
    global _DUMP_DIR
    if _DUMP_DIR is None:
        import atexit
        import shutil

        _DUMP_DIR = tempfile.mkdtemp(prefix="frost-cute-dump-")
        atexit.register(shutil.rmtree, _DUMP_DIR, True)
    return _DUMP_DIR


@dataclasses.dataclass(frozen=True)
class KernelResources:
    """ptxas' report for one kernel entry."""

    name: str
    registers: int
    spill_store_bytes: int
    spill_load_bytes: int
    stack_bytes: int
    static_smem_bytes: int
    barriers: int

    @property
    def spills(self) -> int:
        return self.spill_store_bytes + self.spill_load_bytes


@dataclasses.dataclass
class CompileReport:
    """What a compile produced: the callable, its PTX and cubin, and ptxas' resource report."""

    arch: str
    compiled: Any
    ptx: str
    cubin: bytes
    log: str
    kernels: list[KernelResources]

    def kernel(self, contains: str = "") -> KernelResources:
        """The one kernel whose mangled name contains ``contains``."""
        hits = [k for k in self.kernels if contains in k.name]
        if len(hits) != 1:
            raise LookupError(f"{len(hits)} kernels match {contains!r}: {[k.name for k in self.kernels]}")
        return hits[0]

    @property
    def max_registers(self) -> int:
        return max(k.registers for k in self.kernels)

    @property
    def total_spill_bytes(self) -> int:
        return sum(k.spills for k in self.kernels)

    def count(self, needle: str) -> int:
        """How many times ``needle`` occurs in the PTX."""
        return self.ptx.count(needle)


_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '(sm_\w+)'")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers(?:, used (\d+) barriers)?(?:, (\d+) bytes smem)?")
_USED_SMEM = re.compile(r"(\d+) bytes smem")


def parse_ptxas_log(log: str) -> list[KernelResources]:
    """Parse ptxas ``-v`` style remarks into one :class:`KernelResources` per entry function."""
    out: list[KernelResources] = []
    cur: dict[str, Any] | None = None
    for line in log.splitlines():
        m = _ENTRY.search(line)
        if m:
            if cur is not None and "registers" in cur:
                out.append(KernelResources(**cur))
            cur = dict(name=m.group(1), registers=0, spill_store_bytes=0, spill_load_bytes=0,
                       stack_bytes=0, static_smem_bytes=0, barriers=0)
            continue
        if cur is None:
            continue
        m = _FRAME.search(line)
        if m:
            cur["stack_bytes"], cur["spill_store_bytes"], cur["spill_load_bytes"] = map(int, m.groups())
        m = _USED.search(line)
        if m:
            cur["registers"] = int(m.group(1))
            cur["barriers"] = int(m.group(2) or 0)
            s = _USED_SMEM.search(line)
            cur["static_smem_bytes"] = int(s.group(1)) if s else 0
    if cur is not None and "registers" in cur:
        out.append(KernelResources(**cur))
    return out


@contextlib.contextmanager
def _capture_stderr():
    """Capture both Python's ``sys.stderr`` and file descriptor 2 into one temp file.

    CuTe DSL prints ptxas remarks through ``sys.stderr`` (which pytest replaces with its own
    capture object), while native tools write to fd 2 directly; capturing both makes the report
    independent of how the caller set up stderr.
    """
    import io
    import sys

    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        os.dup2(tmp.fileno(), 2)
        text = io.TextIOWrapper(os.fdopen(os.dup(tmp.fileno()), "wb"), encoding="utf-8", write_through=True)
        box: dict[str, str] = {}
        try:
            with contextlib.redirect_stderr(text):
                yield box
        finally:
            text.flush()
            text.close()
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            box["text"] = tmp.read().decode("utf-8", "replace")


def compile_for(fn, *args, arch: str = "sm_120a", extra_options: str = "", **kwargs) -> CompileReport:
    """Compile ``fn(*args)`` for ``arch`` and return its PTX, cubin and resource report.

    Works without a GPU: pass fake tensors (``cute.runtime.make_fake_compact_tensor``) and
    ``cute.sym_int()`` extents.
    """
    import cutlass.cute as cute

    if arch not in SUPPORTED_ARCHS:
        raise ValueError(f"arch must be one of {SUPPORTED_ARCHS}, got {arch!r}")
    opts = (f"--gpu-arch {arch} --keep-ptx --keep-cubin --dump-dir {_dump_dir()} remarks{{ptx}} "
            f"{extra_options}").strip()
    with _capture_stderr() as box:
        compiled = cute.compile(fn, *args, options=opts, **kwargs)
    log = box["text"]
    kernels = parse_ptxas_log(log)
    if not kernels:
        raise RuntimeError("compile_for: ptxas printed no resource report (remarks{ptx}); "
                           "cannot check registers or spills")
    ptx = compiled.__ptx__ if isinstance(compiled.__ptx__, str) else ""
    cubin = compiled.__cubin__ if isinstance(compiled.__cubin__, (bytes, bytearray)) else b""
    return CompileReport(arch=arch, compiled=compiled, ptx=ptx, cubin=bytes(cubin), log=log,
                         kernels=kernels)
