"""Launching the compiled SDPA backward chain (:mod:`frost.templates.chain`, re-exported here):
:class:`FastLauncher` packs a call's scalars straight into the compiled entry point's argument
buffer; :func:`marshalled_values` checks that packing against the DSL's own marshalling."""

from __future__ import annotations

import ctypes

import cuda.bindings.driver as cuda

from frost.templates.chain import (  # noqa: F401  (re-exported: frost.sdpa.chain's names)
    ADDRS, ARG_KINDS, ARG_NAMES, EXTENTS, IO_STRIDED, STRIDES, VEC, BwdChain, ChainConfig,
    compile_args, main_only)

_SLOT_FORMAT = {ctypes.c_int64: "q", ctypes.c_int32: "i4x", ctypes.c_float: "f4x", ctypes.c_void_p: "Q"}
PACK_FORMAT = "<" + "".join(_SLOT_FORMAT[k] for k in ARG_KINDS)  # one 8-byte slot per argument


class FastLauncher:
    """Calls a compiled chain with near-zero Python marshalling.

    The CuTe DSL host ABI passes every argument as a pointer to its value. This keeps one buffer of
    8-byte slots (one per argument, :data:`PACK_FORMAT`) and one packed pointer array alive, so a
    call is one ``struct.pack_into`` of the new scalars plus the compiled entry point. Relies on
    the executor internals of nvidia-cutlass-dsl 4.8.1 (``capi_func``, ``cuda_result``,
    ``exec_context``); :meth:`create` returns None when they are missing and the caller falls back
    to ``compiled(*args)``.
    """

    def __init__(self, executor):
        import struct

        self._struct = struct.Struct(PACK_FORMAT)
        self._buf = ctypes.create_string_buffer(self._struct.size)
        base = ctypes.addressof(self._buf)
        ptrs = [base + 8 * i for i in range(len(ARG_KINDS))]
        extra = []
        if executor.cuda_result is not None:
            extra.append(ctypes.addressof(executor.cuda_result))
        if executor.exec_context is not None:
            extra += [p if isinstance(p, int) else p.value for p in executor.exec_context.kernel_functions_ptrs]
        self._packed = (ctypes.c_void_p * (len(ptrs) + len(extra)))(*(ptrs + extra))
        self._capi = executor.capi_func
        self._result = executor.cuda_result
        self._executor = executor  # keeps the module loaded

    @classmethod
    def create(cls, compiled):
        try:
            ex = compiled.to(None)
            return cls(ex)
        except (AttributeError, TypeError):
            return None

    def __call__(self, values) -> None:
        self._struct.pack_into(self._buf, 0, *values)
        self._capi(self._packed)
        if self._result is not None and self._result.value != 0:
            raise RuntimeError(f"frost.sdpa: CUDA error {self._result.value} launching the backward chain")


def marshalled_values(compiled, values) -> list:
    """What the DSL's own marshalling passes for ``values``, read back with :data:`ARG_KINDS`
    (a CPU-side check that :class:`FastLauncher` packs the same ABI)."""
    args = list(values[:-1]) + [cuda.CUstream(values[-1])]
    exe_args, _keep = compiled.execution_args.generate_execution_args(tuple(args), {})
    if len(exe_args) != len(ARG_KINDS):
        raise AssertionError(f"compiled chain takes {len(exe_args)} pointers, ARG_KINDS has {len(ARG_KINDS)}")
    out = []
    for p, kind in zip(exe_args, ARG_KINDS):
        addr = p.value if isinstance(p, ctypes.c_void_p) else int(p)
        out.append(kind.from_address(addr).value)
    return out
