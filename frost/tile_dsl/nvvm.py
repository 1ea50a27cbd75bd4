"""NVVM code-generation options that CuTe DSL 4.8.1 offers no public switch for.

Why: for sm_100 and newer targets (sm_120a / sm_121a included) NVVM keeps pairs of fp32 values in
packed 64-bit registers (``f32x2``: ``mov.b64`` pack/unpack around every ``mma.sync`` that
updates a loop-carried accumulator, ``mul.f32x2`` in epilogues); for sm_90a it keeps them as
scalars. In a register-tight kernel the packing costs registers. Measured on 2026-11-30 by
compiling (no SM120 GPU here): bwd_main at d=128 with a 32x128 KV tile and V in registers spills
92/64 bytes (stores/loads) for sm_120a by default and 0 with ``-nvptx-no-f32x2``; its sm_120a
PTX carried 304 ``mov.b64`` against 15 for sm_90a. ptxas itself honours ``setmaxnreg`` on
sm_120a (a 384-thread kernel kept 230 fp32 values live after ``setmaxnreg.inc 240`` with no
spill), so the spills came from the packing, not from the register budget.

How: :func:`nvvm_options` wraps the DSL's (private) ``preprocess_pipeline`` for the duration of a
``with`` block and adds ``nvvm-options='...'`` to the ``cute-to-nvvm`` pass, so every
``cute.compile`` inside the block sees it. :func:`for_arch` is what frost's compile paths use
(``compile_for``, ``frost.sdpa`` and the templates' ``launch``): it adds :data:`NO_F32X2` for the
targets where NVVM packs (sm_100 and newer, so sm_120a / sm_121a) and nothing for sm_90a, so the
option is part of the arch and every cache keyed on the arch stays correct. The tile chooser
relies on it: with packing off, the MMA warps' ``setmaxnreg`` budget is the spill limit.
Caveat: LLVM command-line options are process-global, so once NVVM has parsed
``-nvptx-no-f32x2`` in a process, later compiles in that process keep it even outside the
block (observed with CuTe DSL 4.8.1). frost never wants packing, so this only matters to a test
that compiles the packed form for comparison: it must do so in a fresh process.
Not yet run on an SM120 GPU (the H200 builds sm_90a, where NVVM does not pack).
"""

from __future__ import annotations

import contextlib
import hashlib
import re

NO_F32X2 = "-Xllc -nvptx-no-f32x2"
PACKING_FROM_SM = 100  # NVVM packs fp32 pairs for sm_100 and newer targets
_ANCHOR = "enable-cuda-dialect=true"


def add_nvvm_options(pipeline: str, opts: str) -> str:
    """The pass pipeline string with ``nvvm-options='opts'`` added to the cute-to-nvvm pass.

    Idempotent, so :func:`nvvm_options` blocks nest: options already present are not repeated,
    others join the existing ``nvvm-options`` string."""
    if _ANCHOR not in pipeline:
        raise RuntimeError("CuTe DSL's pipeline no longer has the expected cute-to-nvvm options; "
                           "frost.tile_dsl.nvvm needs updating for this DSL version")
    m = re.search(r"nvvm-options='([^']*)'", pipeline)
    if m is None:
        return pipeline.replace(_ANCHOR, f"nvvm-options='{opts}' {_ANCHOR}", 1)
    if opts in m.group(1):
        return pipeline
    return pipeline[:m.end(1)] + f" {opts}" + pipeline[m.end(1):]


@contextlib.contextmanager
def nvvm_options(opts: str = NO_F32X2):
    """Compile with extra NVVM options inside the block (e.g. ``with nvvm_options(): compile_for(...)``).

    The options also go into the DSL's module hash, which keys its in-memory and on-disk JIT
    caches: without that, a kernel compiled once without the options (or with others) would be
    served from the cache unchanged.
    """
    from cutlass.cutlass_dsl.cutlass import CutlassBaseDSL

    saved = {name: CutlassBaseDSL.__dict__.get(name)
             for name in ("preprocess_pipeline", "get_module_hash")}
    original_pipeline = CutlassBaseDSL.preprocess_pipeline
    original_hash = CutlassBaseDSL.get_module_hash

    def patched_pipeline(self, pipeline, arch):
        return add_nvvm_options(original_pipeline(self, pipeline, arch), opts)

    def patched_hash(self, module, function_name):
        base = original_hash(self, module, function_name)
        return hashlib.sha256(f"{base}|nvvm-options={opts}".encode()).hexdigest()

    CutlassBaseDSL.preprocess_pipeline = patched_pipeline
    CutlassBaseDSL.get_module_hash = patched_hash
    try:
        yield opts
    finally:
        for name, fn in saved.items():
            if fn is None:
                delattr(CutlassBaseDSL, name)
            else:
                setattr(CutlassBaseDSL, name, fn)


def arch_options(arch: str) -> str:
    """The NVVM options frost compiles ``arch`` with ("" when none are needed)."""
    m = re.fullmatch(r"sm_(\d+)[af]?", arch)
    if not m:
        raise ValueError(f"not an arch name: {arch!r} (want e.g. 'sm_120a')")
    return NO_F32X2 if int(m.group(1)) >= PACKING_FROM_SM else ""


def for_arch(arch: str):
    """Context manager: the NVVM options of :func:`arch_options` for every compile inside it."""
    opts = arch_options(arch)
    return nvvm_options(opts) if opts else contextlib.nullcontext("")


def for_current_device():
    """:func:`for_arch` of the current CUDA device (for a ``launch`` that compiles on first use)."""
    import torch

    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    return for_arch(f"sm_{props.major}{props.minor}a")
