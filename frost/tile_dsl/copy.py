"""Tile copies between global and shared memory: TMA loads/stores and a cp.async fallback.

Model
-----
:func:`tma_tx_bytes` is the number of bytes one TMA tile load delivers to its mbarrier: the full
box, ``prod(tile_shape) * sizeof(dtype)``. TMA zero-fills the part of a box that lies outside the
tensor (rows past M, columns past K) and still counts those bytes, so the expect-tx count of a
load never depends on where the tile sits. Templates rely on that zero fill: a K tail is padded
with zeros and contributes nothing to an MMA.

Device forms
------------
* **TMA load** (``cp.async.bulk.tensor ... .mbarrier::complete_tx::bytes``). On the host side,
  inside the ``@cute.jit`` launcher, :func:`make_tma_load` builds the atom with
  ``cpasync.make_tiled_tma_atom(CopyBulkTensorTileG2SOp(), gmem, smem_layout, tile)``. In the kernel,
  :func:`tma_load_fn` partitions once and returns ``load(tile_coord, stage)``: one
  warp calls it (all 32 lanes; one is elected inside); it does
  ``mbarrier.arrive.expect_tx(ring[stage], tma_tx_bytes(tile))`` and issues the copy, which
  completes on the same mbarrier. Each ``load`` is one arrival, so a stage filled by two
  loads (A and B) has an arrive count of 2 and an expect-tx total of both tiles.
* **TMA store** (:func:`make_tma_store`, :func:`tma_store_fn`): smem tile -> global, after a
  ``fence.proxy.async.shared::cta``; followed by a bulk commit/wait group.
* **cp.async fallback** (:func:`cp_async_load_fn`): 16-byte ``cp.async.cg`` (L2 only) per thread for
  tiles TMA cannot describe (e.g. a smem layout TMA rejects, or a source with no descriptor). Rows
  past the tensor's extent are zero-filled with plain shared stores. Complete with
  :func:`cp_async_commit` / :func:`cp_async_wait`.
* **vectorized store** (:func:`smem_to_global_fn`): smem tile -> global with 16-byte ``st.global``
  per thread, rows past the extent skipped.

All ``*_fn`` factories return closures, so a kernel body reads ``load_a((m, k), stage)``.
"""

from __future__ import annotations

import math

_BITS = {"fp32": 32, "float32": 32, "f32": 32, "fp16": 16, "float16": 16, "f16": 16,
         "bf16": 16, "bfloat16": 16, "fp8": 8, "e4m3": 8, "e5m2": 8, "int8": 8}

CP_ASYNC_BYTES = 16  # one cp.async / vector store moves 16 bytes


def dtype_bits(dtype) -> int:
    """Bit width of a cutlass Numeric type, a torch/numpy dtype, or a short name ("bf16")."""
    if isinstance(dtype, str):
        if dtype.lower() not in _BITS:
            raise ValueError(f"unknown dtype name {dtype!r}; know {sorted(_BITS)}")
        return _BITS[dtype.lower()]
    width = getattr(dtype, "width", None)  # cutlass Numeric classes
    if isinstance(width, int):
        return width
    itemsize = getattr(dtype, "itemsize", None)  # torch.dtype, numpy.dtype
    if isinstance(itemsize, int):
        return 8 * itemsize
    raise TypeError(f"cannot tell the width of dtype {dtype!r}")


def tma_tx_bytes(tile_shape, dtype) -> int:
    """Bytes one TMA load of a ``tile_shape`` box of ``dtype`` delivers (OOB zero-fill included)."""
    shape = tuple(int(s) for s in tile_shape)
    if not shape or any(s <= 0 for s in shape):
        raise ValueError(f"tile_shape must be positive extents, got {tile_shape!r}")
    return math.prod(shape) * dtype_bits(dtype) // 8


def cp_async_thread_layout(tile_shape, dtype, threads: int) -> tuple[int, int, int]:
    """Model of the cp.async thread arrangement: (rows per pass, threads per row, elems per copy).

    Each thread copies 16 B vectors; a row of ``tile_shape[1]`` elements takes
    ``cols // vec`` threads; ``threads`` threads cover ``threads // that`` rows per pass.
    """
    rows, cols = (int(s) for s in tile_shape)
    vec = CP_ASYNC_BYTES * 8 // dtype_bits(dtype)
    if cols % vec:
        raise ValueError(f"tile columns ({cols}) must be a multiple of {vec} for 16-byte copies")
    per_row = cols // vec
    if threads % per_row and per_row % threads:
        raise ValueError(f"{threads} threads cannot tile rows of {per_row} vectors")
    if per_row > threads:
        raise ValueError(f"a row needs {per_row} vectors but only {threads} threads copy")
    rows_per_pass = threads // per_row
    if rows % rows_per_pass:
        raise ValueError(f"tile rows ({rows}) must be a multiple of {rows_per_pass} rows per pass")
    return rows_per_pass, per_row, vec


# --------------------------------------------------------------------------------------------
# TMA (device)
# --------------------------------------------------------------------------------------------


def tma_smem_layout(rows: int, cols: int, dtype, stages: int = 1):
    """Swizzled smem layout of a TMA box (inside ``@cute.jit``): ``(rows, cols[, stages])``.

    Same tiling as :func:`frost.tile_dsl.swizzle.make_smem_layout` with the swizzle
    :func:`~frost.tile_dsl.swizzle.choose_swizzle` picks, but expressed in *byte* units
    (``Swizzle.in_bytes``): CuTe's TMA descriptor builder and pointer swizzles read the swizzle
    of a smem layout on byte addresses. (With the element-unit swizzle, ``make_tiled_tma_atom``
    does not recognise the pattern and splits a 64x64 bf16 box into 128 small copies.) Allocate
    with :func:`alloc_tma_tile`.
    """
    from frost.tile_dsl.swizzle import choose_swizzle, make_smem_layout

    eb = dtype_bits(dtype) // 8
    sw, chunk = choose_swizzle(cols, eb)
    return make_smem_layout(rows, cols, sw.in_bytes(eb), chunk_cols=chunk, stages=stages,
                            elem_bytes=eb)


def alloc_tma_tile(smem, dtype, layout, align: int = 1024):
    """Allocate a tile with a :func:`tma_smem_layout` layout: swizzle on the pointer, 1 KiB aligned
    (the 128-byte swizzle repeats every 1024 bytes)."""
    return smem.allocate_tensor(dtype, layout.outer, byte_alignment=align, swizzle=layout.inner)


def make_tma_load(gmem, smem_layout, tile):
    """Host side (inside ``@cute.jit``): TMA atom + coordinate tensor for ``tile`` boxes of ``gmem``.

    ``smem_layout`` is the one-stage (possibly swizzled, composed) smem layout of the box.
    Returns ``(atom, tma_tensor)``; pass both to the kernel.
    """
    from cutlass.cute.nvgpu import cpasync

    atom, tma_tensor = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), gmem,
                                                   smem_layout, tile)
    return atom, tma_tensor


def make_tma_store(gmem, smem_layout, tile):
    """Host side: TMA store atom + coordinate tensor (``CopyBulkTensorTileS2GOp``)."""
    from cutlass.cute.nvgpu import cpasync

    atom, tma_tensor = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileS2GOp(), gmem,
                                                   smem_layout, tile)
    return atom, tma_tensor


def tma_box(atom, tma_tensor, s_tile, tile, coord):
    """(smem, gmem) TMA partitions of the box at tile coordinate ``coord`` of a tensor whose
    first two modes are the box's (rows, cols); ``s_tile`` is one (rows, cols) smem tile. For
    a caller that issues its own ``cute.copy(atom, g, s, tma_bar_ptr=...)`` (e.g. several
    loads completing on one mbarrier)."""
    import cutlass.cute as cute
    from cutlass.cute.nvgpu import cpasync

    g = cute.local_tile(tma_tensor, tile, coord)
    return cpasync.tma_partition(atom, 0, cute.make_layout(1), cute.group_modes(s_tile, 0, 2),
                                 cute.group_modes(g, 0, 2))


def _tma_partition(atom, tma_tensor, s_tiles, tile):
    import cutlass.cute as cute
    from cutlass.cute.nvgpu import cpasync

    g_tiles = cute.local_tile(tma_tensor, tile, (None, None))  # (r, c, tiles_r, tiles_c)
    t_s, t_g = cpasync.tma_partition(atom, 0, cute.make_layout(1),
                                     cute.group_modes(s_tiles, 0, 2), cute.group_modes(g_tiles, 0, 2))
    return t_s, t_g  # (TMA, stages), (TMA, tiles_r, tiles_c)


def tma_load_fn(atom, tma_tensor, s_tiles, ring_ptr, tile):
    """Kernel side: ``load(tile_coord, stage)`` for a staged smem tensor ``s_tiles`` (r, c, stages).

    The expect-tx count is derived here from ``tile`` and the element type; the load arrives once
    on ``ring_ptr + stage``. Call ``load`` from **all 32 lanes of one warp**, converged: one lane
    (``elect.sync``) arrives with the expect-tx and the TMA copy elects its own issuing lane.
    Calling it from a single thread (``if tid == 0``) leaves ``elect.sync`` without its warp:
    undefined behaviour, seen to hang on an H200 (2026-11-30).
    """
    import cutlass.cute as cute

    tx = tma_tx_bytes(tile, s_tiles.element_type)
    t_s, t_g = _tma_partition(atom, tma_tensor, s_tiles, tile)

    def load(tile_coord, stage):
        bar = ring_ptr + stage
        with cute.arch.elect_one():
            cute.arch.mbarrier_arrive_and_expect_tx(bar, tx)
        cute.copy(atom, t_g[None, tile_coord[0], tile_coord[1]], t_s[None, stage], tma_bar_ptr=bar)

    load.tx_bytes = tx
    return load


def tma_store_fn(atom, tma_tensor, s_tiles, tile):
    """Kernel side: ``store(tile_coord, stage)`` of smem stage -> global box, from ONE thread.

    Unlike the load, the store elects nothing: every calling thread issues its own bulk copy, so
    guard the call (``if tid == 0``). Before it, the writers of the smem tile must call
    :func:`tma_store_fence` (generic -> async proxy) and meet at a barrier; the closure issues the
    copy and commits the bulk group. Call :func:`tma_store_wait` before reusing the smem tile or
    exiting.
    """
    import cutlass.cute as cute

    t_s, t_g = _tma_partition(atom, tma_tensor, s_tiles, tile)

    def store(tile_coord, stage):
        cute.copy(atom, t_s[None, stage], t_g[None, tile_coord[0], tile_coord[1]])
        cute.arch.cp_async_bulk_commit_group()

    return store


def tma_store_fence() -> None:
    """Order this thread's generic-proxy smem writes before a later TMA store reads them."""
    import cutlass.cute as cute

    cute.arch.fence_proxy("async.shared", space="cta")


def tma_store_wait(pending: int = 0) -> None:
    """Wait until at most ``pending`` committed TMA store groups are still reading smem."""
    import cutlass.cute as cute

    cute.arch.cp_async_bulk_wait_group(pending, read=True)


def prefetch(atom) -> None:
    """Prefetch a TMA descriptor (one thread)."""
    from cutlass.cute.nvgpu import cpasync

    cpasync.prefetch_descriptor(atom)


# --------------------------------------------------------------------------------------------
# cp.async fallback and vectorized stores (device)
# --------------------------------------------------------------------------------------------


def _tiled_row_copy(op, dtype, tile, threads: int):
    import cutlass.cute as cute

    rows_per_pass, per_row, vec = cp_async_thread_layout(tile, dtype, threads)
    atom = cute.make_copy_atom(op, dtype, num_bits_per_copy=CP_ASYNC_BYTES * 8)
    thr_layout = cute.make_ordered_layout((rows_per_pass, per_row), order=(1, 0))
    return cute.make_tiled_copy_tv(atom, thr_layout, cute.make_layout((1, vec)))


def cp_async_load_fn(gmem, s_tiles, tile, tid, threads: int):
    """Kernel side: ``load(tile_coord, stage)`` with 16-byte ``cp.async.cg`` from all ``threads``.

    Every thread of the group calls ``load``. Rows at or past ``gmem``'s row extent are zero-filled
    in smem (plain stores); columns must be in bounds. Completion: :func:`cp_async_commit` then
    :func:`cp_async_wait` and a barrier over the group.
    """
    import cutlass
    import cutlass.cute as cute
    from cutlass.cute.nvgpu import cpasync

    dtype = gmem.element_type
    tiled = _tiled_row_copy(cpasync.CopyG2SOp(cache_mode=cpasync.LoadCacheMode.GLOBAL), dtype, tile,
                            threads)
    thr = tiled.get_slice(tid)
    g_tiles = cute.local_tile(gmem, tile, (None, None))
    c_tiles = cute.local_tile(cute.make_identity_tensor(gmem.shape), tile, (None, None))
    rows = gmem.shape[0]

    @cute.jit
    def load(tile_coord, stage):
        t_g = thr.partition_S(g_tiles[None, None, tile_coord[0], tile_coord[1]])
        t_c = thr.partition_S(c_tiles[None, None, tile_coord[0], tile_coord[1]])
        t_s = thr.partition_D(s_tiles[None, None, stage])
        for i in cutlass.range_constexpr(cute.size(t_s, mode=[1])):
            for j in cutlass.range_constexpr(cute.size(t_s, mode=[2])):
                if t_c[0, i, j][0] < rows:
                    cute.copy(tiled, t_g[None, i, j], t_s[None, i, j])
                else:
                    t_s[None, i, j].fill(0)

    return load


def cp_async_commit() -> None:
    import cutlass.cute as cute

    cute.arch.cp_async_commit_group()


def cp_async_wait(pending: int = 0) -> None:
    """Wait until at most ``pending`` of this thread's cp.async groups are in flight."""
    import cutlass.cute as cute

    cute.arch.cp_async_wait_group(pending)


def smem_to_global_fn(gmem, s_tile, tile, tid, threads: int):
    """Kernel side: ``store(tile_coord)`` of a smem tile (r, c) to global with 16-byte ``st.global``.

    All ``threads`` call it after a barrier that orders the smem writes; rows past the extent are
    skipped.
    """
    import cutlass
    import cutlass.cute as cute

    dtype = gmem.element_type
    tiled = _tiled_row_copy(cute.nvgpu.CopyUniversalOp(), dtype, tile, threads)
    thr = tiled.get_slice(tid)
    g_tiles = cute.local_tile(gmem, tile, (None, None))
    c_tiles = cute.local_tile(cute.make_identity_tensor(gmem.shape), tile, (None, None))
    rows = gmem.shape[0]
    t_s = thr.partition_S(s_tile)

    @cute.jit
    def store(tile_coord):
        t_g = thr.partition_D(g_tiles[None, None, tile_coord[0], tile_coord[1]])
        t_c = thr.partition_D(c_tiles[None, None, tile_coord[0], tile_coord[1]])
        for i in cutlass.range_constexpr(cute.size(t_s, mode=[1])):
            for j in cutlass.range_constexpr(cute.size(t_s, mode=[2])):
                if t_c[0, i, j][0] < rows:
                    cute.copy(tiled, t_s[None, i, j], t_g[None, i, j])

    return store
