"""Which (query, key) pairs a KV tile sees: bounds, causal alignment, and the q-tile range.

What a pair sees is the variant's ``Mask`` (:mod:`frost.ir.mods`; causal is one), lowered in
:mod:`.pointwise` per element and, for the walk, in :func:`q_block_range`. The pure-Python models
below (``*_model``) keep the causal forms by alignment, for the grid model and the tests.

Causal alignments (query row i, key column j):

* ``BOTTOM_RIGHT``: j <= i + (S_kv - S_q)  (the last query sees every key);
* ``TOP_LEFT``:     j <= i.

A tile needs the element mask only where some of its pairs are hidden: the last KV tile when
S_kv is not a multiple of tile_n, and under causal the tiles that cross the diagonal
(:func:`tile_needs_mask_model`, :attr:`.pointwise.VariantMath.needs_mask`); every other tile
takes the unmasked path.

Rows i >= S_q need no mask here: their lse_log2 is +inf (loaded so by the producer), so P = 0.
The walk over the range (:func:`q_tile`): trip t of a CTA takes q tile ``m_min + t % n_m``,
or with ``rotate`` that index turned by the CTA's KV tile, ``(t + n_block) % n_m``, so the CTAs
of one head, which start together, add their dQ partials into different rows of dq_accum
instead of all into the same 16 KB at once. Code choice ``trip_step`` carries the pair
(t // n_m, t % n_m) through the loop (:func:`walk_start`, :func:`walk_next`) instead of
dividing every trip.

Which CTA takes which KV tile (:func:`cta_tile`): the grid is (KV tiles, KV heads, batches) and
the hardware hands CTAs to free SMs in linear block order. Under causal a KV tile's work falls
with its index (tile 0 sees every q tile, the last sees a few), so in the linear order each head's
heavy CTAs start late in the grid's last wave and the grid ends on a few long CTAs. With
``lpt_heads`` G != 1 the linear block index is re-dealt heaviest first ("longest processing time
first"): KV tile 0 of G (batch, head) pairs, then tile 1 of the same pairs, and so on, group by
group. G = 1 is the linear order (a head's tiles together).

Tail splits (:func:`split_tile`, non-causal kernels built with ``tail_split``): the grid is 1-D.
Its first ``n_whole`` blocks take the first ``n_whole`` tiles of the linear order (KV tile fastest,
then KV head, then batch), one tile each; every later tile is cut into ``parts`` CTAs, part p of
which walks about trips [p·n/parts, (p+1)·n/parts) of the tile's n trips, cut at multiples of
twice the Q/dO ring's stages (:func:`trip_range_model`).
The parts' dK/dV partials are summed by the last part to finish (``epilogue.py``). Which tiles to
cut, and into how many parts, is the grid model's choice (:func:`frost.recipes.grid.pick_tail_split`):
a grid whose last wave is part-empty ends sooner when its last tiles run as smaller CTAs.

Pure-Python models (:func:`q_block_range_model`, :func:`visible_model`, :func:`q_tile_model`,
:func:`cta_tile_model`, :func:`split_tile_model`,
:func:`trip_range_model`, :func:`walk_model`) sit beside the device forms and are what the tests
compare against.
"""

from __future__ import annotations

import enum

import cutlass
import cutlass.cute as cute
import sympy

from frost.tile_dsl import lower


class CausalAlign(enum.IntEnum):
    NONE = 0
    TOP_LEFT = 1
    BOTTOM_RIGHT = 2

    @classmethod
    def parse(cls, causal: bool, align: "str | CausalAlign | None") -> "CausalAlign":
        if not causal:
            return cls.NONE
        if isinstance(align, CausalAlign):
            return align
        return {None: cls.BOTTOM_RIGHT, "bottom_right": cls.BOTTOM_RIGHT,
                "top_left": cls.TOP_LEFT}[align]


def diag_offset_model(align: CausalAlign, s_q: int, s_kv: int) -> int:
    return s_kv - s_q if align == CausalAlign.BOTTOM_RIGHT else 0


def visible_model(align: CausalAlign, i: int, j: int, s_q: int, s_kv: int) -> bool:
    if j >= s_kv or i >= s_q:
        return False
    return align == CausalAlign.NONE or j <= i + diag_offset_model(align, s_q, s_kv)


def q_block_range_model(align, n_block, tile_m, tile_n, s_q, s_kv) -> tuple[int, int]:
    """[m_min, m_max) of q tiles that can see any key of KV tile ``n_block``."""
    m_max = -(-s_q // tile_m)
    if align == CausalAlign.NONE:
        return 0, m_max
    first_row = max(0, n_block * tile_n - diag_offset_model(align, s_q, s_kv))
    return min(first_row // tile_m, m_max), m_max


def hidden_warp_tiles_model(align, n_block, tile_m, tile_n, wm, wn, order, s_q, s_kv):
    """[(q tile, warps)] for each trip of KV tile ``n_block`` that needs the element mask: the
    warps of the S/dP grid (``wm`` x ``wn``, warp order ``order``) whose every S element in
    that trip is hidden, i.e. whose MMAs a warp-skip could drop. A warp owns interleaved 16-row
    and 8-column runs (:mod:`frost.tile_dsl.warp_grid`), so far fewer warps are wholly hidden
    than contiguous blocks would be (lab/LOG.md v74)."""
    from frost.tile_dsl.warp_grid import cols_of, rows_of, warp_mn

    m_min, m_max = q_block_range_model(align, n_block, tile_m, tile_n, s_q, s_kv)
    out = []
    for m in range(m_min, m_max):
        row0, col0 = m * tile_m, n_block * tile_n
        if not tile_needs_mask_model(align, row0, col0, tile_m, tile_n, s_q, s_kv):
            continue
        dead = []
        for w in range(wm * wn):
            wr, wc = warp_mn(w, wm, wn, order)
            if not any(visible_model(align, row0 + r, col0 + c, s_q, s_kv)
                       for r in rows_of(wr, wm, tile_m) for c in cols_of(wc, wn, tile_n)):
                dead.append(w)
        out.append((m, frozenset(dead)))
    return out


def q_tile_model(t: int, m_min: int, n_m: int, n_block: int, rotate: bool) -> int:
    """The q tile of trip ``t`` (t % n_m is the place in the range; the quotient picks the
    q head of a GQA group)."""
    i = t % n_m
    return m_min + ((i + n_block) % n_m if rotate else i)


def cta_tile_model(block: tuple[int, int, int], grid: tuple[int, int, int],
                   lpt_heads: int) -> tuple[int, int, int]:
    """(n_block, head, batch) that CTA ``block`` = (x, y, z) of ``grid`` = (KV tiles, heads,
    batches) works on. ``lpt_heads`` 1: the block index itself; else the linear index
    x + nx·(y + ny·z) re-dealt KV tile by KV tile over groups of G (batch, head) pairs, so
    that every pair's tile 0 comes before any pair's tile 1."""
    (x, y, z), (nx, ny, nz) = block, grid
    if lpt_heads == 1:
        return x, y, z
    pairs = ny * nz
    g_size = min(lpt_heads, pairs)
    lin = x + nx * (y + ny * z)
    g = lin // (g_size * nx)
    r = lin - g * g_size * nx
    width = min(g_size, pairs - g * g_size)  # the last group may be narrower
    pair = g * g_size + r % width
    return r // width, pair % ny, pair // ny


def split_slot_floats(kp) -> int:
    """fp32 values one part of a split tile (:func:`split_tile`) stores: its dK and dV
    fragments, every MMA thread (the host sizes the slots by it, the epilogue checks it)."""
    return kp.tile["tile_n"] * (kp.tile["d"] + kp.tile["d_v"])


def split_tile_model(block: int, n_x: int, n_heads: int, n_whole: int,
                     parts: int) -> tuple[int, int, int, int, int]:
    """(n_block, head, batch, part, parts of this tile) of 1-D block ``block`` under a tail split:
    tiles are numbered in the linear order (``n_x`` KV tiles of a head, ``n_heads`` KV heads of a
    batch); blocks below ``n_whole`` run whole tiles, each later tile runs as ``parts`` blocks."""
    if block < n_whole:
        tile, part, n_parts = block, 0, 1
    else:
        j = block - n_whole
        tile, part, n_parts = n_whole + j // parts, j % parts, parts
    return tile % n_x, (tile // n_x) % n_heads, tile // (n_x * n_heads), part, n_parts


def split_grid_model(n_tiles: int, n_whole: int, parts: int) -> int:
    """Blocks in a tail-split grid of ``n_tiles`` tiles."""
    return n_whole + (n_tiles - n_whole) * parts


def trip_range_model(part: int, n_parts: int, n_iters: int, quantum: int = 1) -> tuple[int, int]:
    """[t0, t1) of the tile's ``n_iters`` trips that part ``part`` of ``n_parts`` walks: the
    trips cut in whole ``quantum``s (the kernel passes 2·q_stages, so that every part starts
    its Q/dO ring at stage 0, phase 0, with the trip index as it is)."""
    units = -(-n_iters // quantum)
    return (min(n_iters, part * units // n_parts * quantum),
            min(n_iters, (part + 1) * units // n_parts * quantum))


def tile_needs_mask_model(align, row0, col0, tile_m, tile_n, s_q, s_kv) -> bool:
    """True unless every key column of the tile is visible to every query row of it."""
    if col0 + tile_n > s_kv:
        return True
    if align == CausalAlign.NONE:
        return False
    return col0 + tile_n - 1 > row0 + diag_offset_model(align, s_q, s_kv)


def q_block_range(vm, n_block, tile_m: int, tile_n: int, s_q, s_kv, b):
    """[m_min, m_max) as Int32: the q tiles that can see any key of KV tile ``n_block``, from the
    variant's mask (``vm``: :class:`.pointwise.VariantMath`, its bounds on the query rows,
    :func:`frost.ir.mods.q_bounds`), lowered here once a CTA. :func:`q_block_range_of` is its
    model; for causal masks it equals :func:`q_block_range_model`."""
    m_max = (s_q + tile_m - 1) // tile_m
    m_min = cutlass.Int32(0)
    env = {"col0": n_block * tile_n, "S_q": s_q, "S_kv": s_kv, "b_idx": b}
    if cutlass.const_expr(len(vm.q_lows) > 0):
        first_row = lower.emit(sympy.Max(*vm.q_lows, 0), env)
        m_min = cutlass.min(first_row // tile_m, m_max)
    if cutlass.const_expr(len(vm.q_highs) > 0):
        last_row = lower.emit(sympy.Max(sympy.Min(*vm.q_highs), -1), env)
        m_max = cutlass.min(m_max, (last_row + tile_m) // tile_m)
        m_min = cutlass.min(m_min, m_max)
    return m_min, m_max


def q_block_range_of(vm, n_block: int, tile_m: int, tile_n: int, s_q: int, s_kv: int,
                     b: int = 0) -> tuple[int, int]:
    """:func:`q_block_range` over Python ints (the model the tests hold it to)."""
    env = {"col0": n_block * tile_n, "S_q": s_q, "S_kv": s_kv, "b_idx": b}
    m_max = -(-s_q // tile_m)
    m_min = 0
    if vm.q_lows:
        m_min = min(lower.evaluate(sympy.Max(*vm.q_lows, 0), env) // tile_m, m_max)
    if vm.q_highs:
        last_row = lower.evaluate(sympy.Max(sympy.Min(*vm.q_highs), -1), env)
        m_max = min(m_max, (last_row + tile_m) // tile_m)
        m_min = min(m_min, m_max)
    return m_min, m_max


@cute.jit
def q_walk_start(n_block, n_m, rotate: cutlass.Constexpr):
    """Where a CTA's q walk starts within its range: ``n_block % n_m`` with ``rotate`` (taken
    once per CTA, before the trip loop; 0 when the range is empty), else 0."""
    start = cutlass.Int32(0)
    if cutlass.const_expr(rotate):
        start = n_block % cutlass.max(n_m, cutlass.Int32(1))
    return start


@cute.jit
def q_tile(t, m_min, n_m, start, rotate: cutlass.Constexpr):
    """Device form of :func:`q_tile_model`, with ``start`` = :func:`q_walk_start` (``n_m`` > 0:
    it runs inside the trip loop)."""
    return q_tile_at(t % n_m, m_min, n_m, start, rotate)


def walk_model(t0: int, t1: int, n_m: int) -> list[tuple[int, int]]:
    """(t // n_m, t % n_m) for the trips t0..t1-1, computed as the device does under
    ``trip_step``: one division at t0 (:func:`walk_start`), then :func:`walk_next` steps."""
    w_q = t0 // max(n_m, 1)
    w_i = t0 - w_q * n_m
    out = []
    for _ in range(t0, t1):
        out.append((w_q, w_i))
        wrap = w_i + 1 == n_m
        w_q, w_i = w_q + (1 if wrap else 0), 0 if wrap else w_i + 1
    return out


def walk_start(t0, n_m):
    """divmod(t0, n_m) as Int32 (the trip loop's first q head offset and place in the q range;
    constants when ``t0`` is the constant 0). With code choice ``trip_step`` the MMA warps then
    step the pair with :func:`walk_next` instead of dividing by the runtime ``n_m`` every trip
    (lab/LOG.md v58)."""
    if isinstance(t0, int) and t0 == 0:
        return cutlass.Int32(0), cutlass.Int32(0)
    w_q = t0 // cutlass.max(n_m, 1)
    return w_q, t0 - w_q * n_m


def walk_next(w_q, w_i, n_m):
    """divmod(t + 1, n_m) from (w_q, w_i) = divmod(t, n_m)."""
    wrap = w_i + 1 == n_m
    return (w_q + cutlass.Int32(cutlass.select_(wrap, 1, 0)),
            cutlass.Int32(cutlass.select_(wrap, 0, w_i + 1)))


@cute.jit
def q_tile_at(i, m_min, n_m, start, rotate: cutlass.Constexpr):
    """:func:`q_tile` from the place ``i`` = t % n_m in the range (a loop can step it instead
    of dividing every trip)."""
    if cutlass.const_expr(rotate):
        i = i + start
        i = cutlass.select_(i >= n_m, i - n_m, i)
    return m_min + i


@cute.jit
def cta_tile(lpt_heads: cutlass.Constexpr):
    """Device form of :func:`cta_tile_model` for this CTA; (n_block, head, batch) as Int32.
    A few integer operations, once per CTA."""
    x, y, z = cute.arch.block_idx()
    if cutlass.const_expr(lpt_heads != 1):
        nx, ny, nz = cute.arch.grid_dim()
        x, y, z = tile_of_block(x, y, z, nx, ny, nz, lpt_heads)
    return x, y, z


@cute.jit
def tile_of_block(x, y, z, nx, ny, nz, lpt_heads: cutlass.Constexpr):
    """(n_block, head, batch) as Int32 of block (x, y, z) of a (nx, ny, nz) grid under
    ``lpt_heads`` G >= 2: :func:`cta_tile_model`'s map."""
    pairs = ny * nz
    g_size = cutlass.min(pairs, cutlass.Int32(lpt_heads))
    lin = x + nx * (y + ny * z)
    g = lin // (g_size * nx)
    r = lin - g * g_size * nx
    width = cutlass.min(g_size, pairs - g * g_size)
    pair = g * g_size + r % width
    return r // width, pair % ny, pair // ny


@cute.jit
def split_tile(n_x, n_heads, n_whole, parts):
    """Device form of :func:`split_tile_model` for this CTA; returns (n_block, head, batch, part,
    parts of this tile) as Int32. The block index is linear over the grid, which is 1-D for a
    cut launch and (KV tiles, heads, batches) for one without a cut."""
    bx, by, bz = cute.arch.block_idx()
    nx, ny, _ = cute.arch.grid_dim()
    x = bx + nx * (by + ny * bz)
    tile, part, n_parts = x, cutlass.Int32(0), cutlass.Int32(1)
    if x >= n_whole:
        j = x - n_whole
        ts = j // parts
        tile, part, n_parts = n_whole + ts, j - ts * parts, parts
    pair = tile // n_x
    return tile - pair * n_x, pair % n_heads, pair // n_heads, part, n_parts


@cute.jit
def trip_range(part, n_parts, n_iters, quantum: cutlass.Constexpr):
    """Device form of :func:`trip_range_model`: (t0, t1) as Int32."""
    units = (n_iters + quantum - 1) // quantum
    return (cutlass.min(n_iters, part * units // n_parts * quantum),
            cutlass.min(n_iters, (part + 1) * units // n_parts * quantum))
