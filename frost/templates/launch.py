"""Launching a compiled template whose host function takes only scalars (addresses, extents,
strides, a scale) and a stream, with near-zero Python marshalling.

A template's ``kinds`` (a tuple of ctypes: ``c_int64``, ``c_int32``, ``c_float``, and
``c_void_p`` last for the stream) is its host ABI. :func:`example_args` gives ``cute.compile``
arguments of those types; :class:`FastLauncher` calls the compiled entry point with one
``struct.pack_into`` of the new values; :func:`marshalled_values` reads back what the DSL's own
marshalling passes, so a test can check that both agree. Users: the SDPA chain
(:mod:`frost.sdpa.chain`) and :mod:`frost.templates.gemm_rowsum`.
"""

from __future__ import annotations

import ctypes

_SLOT_FORMAT = {ctypes.c_int64: "q", ctypes.c_int32: "i4x", ctypes.c_float: "f4x",
                ctypes.c_void_p: "Q"}


def pack_format(kinds: tuple) -> str:
    """The ``struct`` format of ``kinds``: one 8-byte little-endian slot an argument."""
    return "<" + "".join(_SLOT_FORMAT[k] for k in kinds)


def example_args(kinds: tuple) -> tuple:
    """Arguments for ``cute.compile`` of a host function with ABI ``kinds`` (only their types
    count; the last, the stream, is a fake stream)."""
    from cutlass import Float32, Int32, Int64
    from cutlass.cute.runtime import make_fake_stream

    conv = {ctypes.c_int64: Int64(0), ctypes.c_int32: Int32(1), ctypes.c_float: Float32(1.0)}
    return tuple(conv[k] for k in kinds[:-1]) + (make_fake_stream(),)


class FastLauncher:
    """Calls a compiled host function of ABI ``kinds`` with near-zero Python marshalling.

    The CuTe DSL host ABI passes every argument as a pointer to its value. This keeps one buffer
    of 8-byte slots (:func:`pack_format`) and one packed pointer array alive, so a call is one
    ``struct.pack_into`` of the new values plus the compiled entry point. Relies on the executor
    internals of nvidia-cutlass-dsl 4.8.1 (``capi_func``, ``cuda_result``, ``exec_context``);
    :meth:`create` returns None when they are missing, and the caller falls back to
    ``compiled(*args)``. One buffer a launcher: a lock keeps two threads' packing and launching
    apart.
    """

    def __init__(self, executor, kinds: tuple, what: str = "a compiled kernel"):
        import struct
        import threading

        self._struct = struct.Struct(pack_format(kinds))
        self._buf = ctypes.create_string_buffer(self._struct.size)
        base = ctypes.addressof(self._buf)
        ptrs = [base + 8 * i for i in range(len(kinds))]
        extra = []
        if executor.cuda_result is not None:
            extra.append(ctypes.addressof(executor.cuda_result))
        if executor.exec_context is not None:
            extra += [p if isinstance(p, int) else p.value
                      for p in executor.exec_context.kernel_functions_ptrs]
        self._packed = (ctypes.c_void_p * (len(ptrs) + len(extra)))(*(ptrs + extra))
        self._capi = executor.capi_func
        self._result = executor.cuda_result
        self._executor = executor  # keeps the module loaded
        self._what = what
        self._lock = threading.Lock()

    @classmethod
    def create(cls, compiled, kinds: tuple, what: str = "a compiled kernel"):
        """A launcher of ``compiled`` on the current CUDA context, or None (see the class)."""
        try:
            return cls(compiled.to(None), kinds, what)
        except (AttributeError, TypeError):
            return None

    def __call__(self, values) -> None:
        with self._lock:
            self._struct.pack_into(self._buf, 0, *values)
            self._capi(self._packed)
            err = 0 if self._result is None else self._result.value
        if err:
            raise RuntimeError(f"CUDA error {err} launching {self._what}")


def marshalled_values(compiled, values, kinds: tuple) -> list:
    """What the DSL's own marshalling passes for ``values`` (the stream last, as a raw handle),
    read back with ``kinds``: a CPU-side check that :class:`FastLauncher` packs the same ABI."""
    import cuda.bindings.driver as cuda

    args = list(values[:-1]) + [cuda.CUstream(values[-1])]
    exe_args, _keep = compiled.execution_args.generate_execution_args(tuple(args), {})
    if len(exe_args) != len(kinds):
        raise AssertionError(f"the compiled function takes {len(exe_args)} pointers, its ABI "
                             f"has {len(kinds)}")
    out = []
    for p, kind in zip(exe_args, kinds):
        addr = p.value if isinstance(p, ctypes.c_void_p) else int(p)
        out.append(kind.from_address(addr).value)
    return out
