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

PTXAS_DEFAULT_REG_USAGE = 5  # ptxas' default --register-usage-level
PTXAS_DEFAULT_OPT_LEVEL = 3  # ptxas' default -O


def cubin_text(cubin: bytes) -> bytes:
    """The bytes of an ELF64 cubin's ``.text.*`` sections (the kernels' SASS), in section order,
    each after its name."""
    import struct

    if cubin[:4] != b"\x7fELF" or cubin[4] != 2:
        raise ValueError("not an ELF64 cubin")
    shoff, = struct.unpack_from("<Q", cubin, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", cubin, 0x3A)
    heads = [struct.unpack_from("<IIQQQQ", cubin, shoff + i * shentsize) for i in range(shnum)]
    names_at = heads[shstrndx][4]  # sh_offset of the section-name table

    def name(h) -> bytes:
        start = names_at + h[0]
        return cubin[start:cubin.index(b"\0", start)]

    return b"".join(name(h) + cubin[h[4]:h[4] + h[5]] for h in heads
                    if name(h).startswith(b".text."))


def cute_options(arch: str, *extra: str) -> str:
    """The ``cute.compile`` options string for ``arch`` and any ``extra`` parts (empty ones
    dropped), e.g. ``cute_options("sm_120a", kernel.code.compile_options)``."""
    return " ".join(p for p in (f"--gpu-arch {arch}", *extra) if p)


def ptxas_options(register_usage_level: int = PTXAS_DEFAULT_REG_USAGE,
                  opt_level: int = PTXAS_DEFAULT_OPT_LEVEL) -> str:
    """``cute.compile`` options that pass flags to ptxas: ``--register-usage-level`` (0..10;
    higher trades registers for a more aggressive schedule) and ``-O`` (1..3), each only where it
    is not ptxas' default, so default builds keep their options (and cache keys) as they were.

    >>> ptxas_options()
    ''
    >>> ptxas_options(register_usage_level=8)
    "--ptxas-options '--register-usage-level=8'"
    >>> ptxas_options(3, opt_level=2)
    "--ptxas-options '-O2 --register-usage-level=3'"
    """
    for name, value, lo, hi in (("register_usage_level", register_usage_level, 0, 10),
                                ("opt_level", opt_level, 1, 3)):
        if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
            raise ValueError(f"{name} must be an int in [{lo}, {hi}], got {value!r}")
    flags = [f"-O{opt_level}"] if opt_level != PTXAS_DEFAULT_OPT_LEVEL else []
    if register_usage_level != PTXAS_DEFAULT_REG_USAGE:
        flags.append(f"--register-usage-level={register_usage_level}")
    return f"--ptxas-options '{' '.join(flags)}'" if flags else ""


_DUMP_DIR: str | None = None


def _dump_dir() -> str:
    """A per-process scratch folder for --keep-ptx/--keep-cubin files (CuTe's default is the CWD),
    made again if something outside the process removed it (temp-dir cleaners on shared
    machines do): CuTe DSL writes nothing into a missing folder and hands back the file's path
    in place of its contents."""
    global _DUMP_DIR
    if _DUMP_DIR is None:
        import atexit
        import shutil

        _DUMP_DIR = tempfile.mkdtemp(prefix="frost-cute-dump-")
        atexit.register(shutil.rmtree, _DUMP_DIR, True)
    os.makedirs(_DUMP_DIR, exist_ok=True)
    return _DUMP_DIR


class CompileArtifactError(RuntimeError):
    """A compile finished but its PTX or cubin could not be read back (CuTe DSL returned a
    path, or nothing, instead of the text and the ELF bytes)."""


def _artifacts(compiled) -> tuple[str, bytes] | None:
    """(PTX text, cubin bytes) of a CuTe compile made with --keep-ptx --keep-cubin, or None when
    either is not what it should be (PTX carries ``.version`` and ``.target`` lines; a cubin
    starts with the ELF magic)."""
    ptx, cubin = compiled.__ptx__, compiled.__cubin__
    if not isinstance(ptx, str) or ".version" not in ptx or ".target" not in ptx:
        return None
    if not isinstance(cubin, (bytes, bytearray)) or bytes(cubin[:4]) != b"\x7fELF":
        return None
    return ptx, bytes(cubin)


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
    _findings: list | None = dataclasses.field(default=None, repr=False, compare=False)

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

    def count(self, needle: str, entry: str | None = None) -> int:
        """How many times ``needle`` occurs in the PTX (``entry``: in that kernel's body only,
        :meth:`entry_ptx`)."""
        return (self.ptx if entry is None else self.entry_ptx(entry)).count(needle)

    def entry_ptx(self, contains: str) -> str:
        """The PTX of the one entry function whose name contains ``contains``: from its
        ``.entry`` line to the next ``.entry`` or ``.func`` (:func:`.ptx_parse.functions`; a
        module of several kernels, e.g. the SDPA chain, compiles into one PTX file).
        LookupError unless exactly one entry matches."""
        from frost.tile_dsl.ptx_parse import functions

        lines = self.ptx.splitlines()
        entries = []  # (name, first line, last line) of each .entry
        for a, b in functions(lines):
            m = _PTX_ENTRY.match(lines[a]) if lines else None
            if m:
                entries.append((m.group(1), a, b))
        hits = [e for e in entries if contains in e[0]]
        if len(hits) != 1:
            raise LookupError(f"{len(hits)} PTX entries match {contains!r}: "
                              f"{[e[0] for e in entries]}")
        _, a, b = hits[0]
        return "\n".join(lines[a:b + 1])

    @property
    def ptx_sha(self) -> str:
        """sha256[:12] of the PTX without its comment lines (the compiler banner): the short
        name lab/LOG.md gives a build, and what the golden-PTX tests pin. ptxas flags
        (``ptxas_options``) leave it alone: :attr:`sass_sha` tells such builds apart."""
        import hashlib

        body = "\n".join(ln for ln in self.ptx.splitlines() if not ln.lstrip().startswith("//"))
        return hashlib.sha256(body.encode()).hexdigest()[:12]

    @property
    def sass_sha(self) -> str:
        """sha256[:12] of the cubin's code (its ``.text.*`` sections, :func:`cubin_text`): what
        ptxas made of the PTX. The whole cubin would not do: it records ptxas' command line."""
        import hashlib

        return hashlib.sha256(cubin_text(self.cubin)).hexdigest()[:12]

    def lint(self) -> list:
        """Warp-collective instructions under lane-divergent branches
        (:func:`frost.tile_dsl.ptx_lint.divergent_collectives`); [] when clean. Computed once
        per report."""
        from frost.tile_dsl.ptx_lint import divergent_collectives

        if self._findings is None:
            self._findings = divergent_collectives(self.ptx)
        return list(self._findings)


class DivergentCollectiveError(RuntimeError):
    """The compiled PTX issues a warp-collective instruction from a lane-divergent branch."""


_PTX_ENTRY = re.compile(r"^\s*(?:\.visible\s+|\.weak\s+|\.extern\s+)*\.entry\s+([\w$]+)")
_ENTRY = re.compile(r"Compiling\s+entry\s+function\s+'([^']+)'\s+for\s+'(sm_\w+)'")
_FRAME = re.compile(r"(\d+)\s+bytes\s+stack\s+frame,\s+(\d+)\s+bytes\s+spill\s+stores,\s+(\d+)\s+bytes\s+spill\s+loads")
_USED = re.compile(r"Used\s+(\d+)\s+registers(?:,\s+used\s+(\d+)\s+barriers)?")
_SMEM = re.compile(r"Used\s+\d+\s+registers[^\n]*?(\d+)\s+bytes\s+smem")


def parse_ptxas_log(log: str) -> list[KernelResources]:
    """Parse ptxas ``-v`` style remarks into one :class:`KernelResources` per entry function.

    The log is cut at each "Compiling entry function" and each piece is searched as a whole, so a
    remark that wraps a name or a number onto the next line (as CuTe's remark printer does when
    ptxas reports spills) is still read.
    """
    out: list[KernelResources] = []
    starts = list(_ENTRY.finditer(log))
    for i, m in enumerate(starts):
        piece = log[m.end(): starts[i + 1].start() if i + 1 < len(starts) else len(log)]
        used = _USED.search(piece)
        if used is None:
            continue
        frame = _FRAME.search(piece)
        stack, st, ld = map(int, frame.groups()) if frame else (0, 0, 0)
        smem = _SMEM.search(piece)
        out.append(KernelResources(name=m.group(1), registers=int(used.group(1)), spill_store_bytes=st,
                                   spill_load_bytes=ld, stack_bytes=stack,
                                   static_smem_bytes=int(smem.group(1)) if smem else 0,
                                   barriers=int(used.group(2) or 0)))
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


def compile_for(fn, *args, arch: str = "sm_120a", extra_options: str = "",
                nvvm: str | None = None, lint: bool = True, **kwargs) -> CompileReport:
    """Compile ``fn(*args)`` for ``arch`` and return its PTX, cubin and resource report.

    ``nvvm``: extra NVVM options; None (default) means frost's options for ``arch``
    (:func:`frost.tile_dsl.nvvm.for_arch`), "" means none at all.

    ``lint`` (default on): raise :class:`DivergentCollectiveError` when the PTX issues a
    warp-collective instruction (``elect.sync``, ``bar.sync``, ``mma.sync``, ``ldmatrix``, ...)
    from a branch only some lanes of a warp take (:mod:`frost.tile_dsl.ptx_lint`): such a
    kernel hangs or is undefined on the GPU. ``lint=False`` returns the report anyway
    (``report.lint()`` lists the findings).

    Works without a GPU: pass fake tensors (``cute.runtime.make_fake_compact_tensor``) and
    ``cute.sym_int()`` extents.
    """
    import cutlass.cute as cute

    if arch not in SUPPORTED_ARCHS:
        raise ValueError(f"arch must be one of {SUPPORTED_ARCHS}, got {arch!r}")
    from frost.tile_dsl.nvvm import for_arch, nvvm_options

    for attempt in (1, 2):  # a second try when the scratch folder vanished mid-compile
        opts = (f"--gpu-arch {arch} --keep-ptx --keep-cubin --dump-dir {_dump_dir()} "
                f"remarks{{ptx}} {extra_options}").strip()
        codegen = for_arch(arch) if nvvm is None else \
            nvvm_options(nvvm) if nvvm else contextlib.nullcontext()
        with _capture_stderr() as box, codegen:
            compiled = cute.compile(fn, *args, options=opts, **kwargs)
        got = _artifacts(compiled)
        if got is not None:
            break
    else:
        raise CompileArtifactError(
            f"compile_for: the compile for {arch} finished but its PTX/cubin could not be read "
            f"back from {_DUMP_DIR} (got {str(compiled.__ptx__)[:80]!r}); is something deleting "
            f"that folder? Set TMPDIR to a folder nothing cleans")
    ptx, cubin = got
    log = box["text"]
    kernels = parse_ptxas_log(log)
    if not kernels:
        raise RuntimeError("compile_for: ptxas printed no resource report (remarks{ptx}); "
                           "cannot check registers or spills")
    report = CompileReport(arch=arch, compiled=compiled, ptx=ptx, cubin=cubin, log=log,
                           kernels=kernels)
    found = report.lint() if lint else []
    if found:
        raise DivergentCollectiveError(
            f"{len(found)} warp-collective instruction(s) under lane-divergent branches, e.g. "
            f"{found[0]}. Issue them from whole warps (a branch on "
            f"cute.arch.make_warp_uniform(tidx // 32) rather than on tidx); "
            f"compile_for(..., lint=False) returns the report anyway")
    return report
