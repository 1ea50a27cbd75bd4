"""Global-memory layouts of fp32 reduction workspaces: rows, ``block`` x ``block`` tiles, or
m16n8 accumulator atoms in lane order.

Why: an MMA warp adds its m16n8 accumulator into a workspace with one ``red.global.add.v2.f32``
per row half: 32 lanes x 2 floats covering rows ``g = lane // 4`` (8 of them) and columns ``2 t,
2 t + 1`` (``t = lane % 4``) of one 8 x 8 block. In a row-major workspace those 8 rows are 8
cache lines, and the L1 handles the instruction as 8 requests (H200 Nsight Compute, 2026-11-30:
8 "L1 Tag Requests Global" per REDG, 512 a trip at d=128, next to 2,818 ldmatrix wavefronts on
the same pipe). Stored as 8 x 8 blocks, the same 64 floats are 256 contiguous bytes: 2 lines.

Layout ``blocked(block)`` of a (rows, cols) matrix, ``rows % block == cols % block == 0``::

    offset(r, c) = ((r // block) * (cols // block) + c // block) * block**2
                   + (r % block) * block + c % block

Blocks are row-major and so are the elements inside a block. A band of whole block rows
(``block`` consecutive rows, or any multiple) occupies the same contiguous bytes as in the
row-major layout, so a kernel that only zeroes or copies whole bands need not know the layout.
Inside a row, each ``block`` consecutive columns starting at a multiple of ``block`` are
contiguous (a 16-byte vector load of 4 floats stays inside one block when block % 4 == 0).

``block = 0`` means the row-major layout: ``offset(r, c) = r * cols + c``.

``block = ATOM`` (-1) stores 16 x 8 tiles, row-major over the matrix, each in the lane order of
an m16n8 accumulator: lane ``4 g + t`` owns (g, 2t), (g, 2t+1), (g+8, 2t), (g+8, 2t+1), and
those four floats are 16 contiguous bytes::

    offset(r, c) = ((r // 16) * (cols // 8) + c // 8) * 128
                   + (r % 8) * 16 + (c % 8 // 2) * 4 + (r % 16 // 8) * 2 + c % 2

so a lane adds its whole atom with one ``red.global.add.v4.f32`` and no shuffle: a warp's add is
512 contiguous bytes (4 lines) and a warp issues half the atomics of the 8 x 8 blocks. Bands of
16 rows are contiguous as in the row-major layout; inside a row only column pairs are, but an
atom's row pair (g, g + 8) is 64 contiguous bytes: both rows' 8 columns, which a reader loads
with four 16-byte loads (:func:`atom_row_pairs`; :data:`PAIR_ORDER` says which float is which).

Model: :func:`offset_model` (plain Python); :func:`to_rows_model` reads a whole blocked array
(numpy or torch) back into rows; :func:`warp_add_offsets` (and :func:`warp_add_v4_offsets`, the
ATOM layout's add) with :func:`lines_touched` count the cache lines one warp's atomic touches (8
row-major, 2 blocked, 4 for an atom's v4 add of twice the data); :func:`pair_offset_model` and
:data:`PAIR_ORDER` place an atom's row pair. Device form: :func:`blocked` re-views a CuTe tensor
whose last two modes are a contiguous row-major (rows, cols) matrix (:func:`blocked_layout` does
the same to a layout); every other mode keeps its stride. :func:`atom_row_pairs` views an ATOM
matrix as row pairs of 16 contiguous floats, :func:`pair_layout` reads one as (column, row half).
"""

from __future__ import annotations

ROWS = 0  # the block value that means "plain row-major"
ATOM = -1  # the block value that means "16 x 8 tiles in m16n8 accumulator lane order"
ATOM_ROWS, ATOM_COLS = 16, 8


def tile_dims(block: int) -> tuple[int, int]:
    """(rows, cols) of one storage tile of layout ``block``: (1, 1) for rows, (16, 8) for ATOM."""
    if block == ROWS:
        return 1, 1
    if block == ATOM:
        return ATOM_ROWS, ATOM_COLS
    return block, block


def describe(block: int) -> str:
    """A layout's name for messages: ``row-major``, ``8x8 blocks``, ``m16n8 atoms``."""
    if block == ROWS:
        return "row-major"
    return "m16n8 atoms" if block == ATOM else f"{block}x{block} blocks"


def check_block(block: int, rows: int | None, cols: int) -> None:
    """Raise ValueError unless ``block`` (ROWS, ATOM or a positive edge) tiles a (rows, cols)
    matrix (rows None: not known)."""
    if not isinstance(block, int) or block < ATOM:
        raise ValueError(f"block must be {ROWS} (rows), {ATOM} (atoms) or a positive edge, "
                         f"got {block!r}")
    tr, tc = tile_dims(block)
    if cols % tc or (rows is not None and rows % tr):
        raise ValueError(f"block={block} ({describe(block)}, {tr}x{tc} tiles) does not tile a "
                         f"({rows}, {cols}) matrix")


def offset_model(r: int, c: int, cols: int, block: int) -> int:
    """Element offset of (r, c) in a (·, cols) matrix stored as layout ``block``."""
    if block == ROWS:
        return r * cols + c
    if block == ATOM:
        return ((r // 16) * (cols // 8) + c // 8) * 128 \
            + (r % 8) * 16 + (c % 8 // 2) * 4 + (r % 16 // 8) * 2 + c % 2
    return ((r // block) * (cols // block) + c // block) * block * block \
        + (r % block) * block + c % block


LINE_BYTES = 128  # an L1/L2 cache line; the L1 handles a warp's global access once per line


def warp_add_offsets(r0: int, c0: int, cols: int, block: int) -> list[tuple[int, int]]:
    """The (offset, lane) pairs of one warp-wide ``red.global.add.v2.f32`` of an m16n8
    accumulator's row half whose first element is (r0, c0): lane ``4 g + t`` adds rows
    ``r0 + g``, columns ``c0 + 2 t`` and ``c0 + 2 t + 1``."""
    return [(offset_model(r0 + lane // 4, c0 + 2 * (lane % 4) + e, cols, block), lane)
            for lane in range(32) for e in (0, 1)]


def warp_add_v4_offsets(r0: int, c0: int, cols: int, block: int) -> list[tuple[int, int]]:
    """The (offset, lane) pairs of one warp-wide ``red.global.add.v4.f32`` of a whole m16n8
    accumulator atom at (r0, c0) (the ATOM layout's add, no shuffle): lane ``4 g + t`` adds
    its own (g, 2t), (g, 2t+1), (g+8, 2t), (g+8, 2t+1), in that order."""
    return [(offset_model(r0 + lane // 4 + 8 * h, c0 + 2 * (lane % 4) + e, cols, block), lane)
            for lane in range(32) for h in (0, 1) for e in (0, 1)]


# The 16 floats of an atom's row pair (g, g + 8), in storage order, as (row half, column):
# float k holds row g + 8 * (k % 4 // 2), column 2 * (k // 4) + k % 2.
PAIR_ORDER = tuple((k % 4 // 2, 2 * (k // 4) + k % 2) for k in range(16))


def pair_offset_model(r: int, cols: int) -> int:
    """Element offset of the first float of the row pair (r, r + 8) (``r % 16 < 8``) of every
    atom of an ATOM-stored (·, cols) matrix's band; atom ``j``'s pair starts ``128 j`` later."""
    if r % 16 >= 8:
        raise ValueError(f"row {r} is the second row of its pair (r % 16 must be < 8)")
    return offset_model(r, 0, cols, ATOM)


def lines_touched(offsets, elem_bytes: int = 4) -> set[int]:
    """The cache lines (:data:`LINE_BYTES`) a set of element offsets falls in."""
    return {o * elem_bytes // LINE_BYTES for o in offsets}


def to_rows_model(x, block: int):
    """An array (numpy or torch) whose last two dims hold (rows, cols) in ``block`` x ``block``
    storage, read back into row-major order (a copy; ``x`` itself when ``block`` is 0)."""
    if block == ROWS:
        return x
    *lead, rows, cols = x.shape
    n = len(lead)
    check_block(block, rows, cols)
    if block == ATOM:  # (rows/16, cols/8, r%8, c%8//2, r%16//8, c%2) -> rows, cols
        y = x.reshape(*lead, rows // 16, cols // 8, 8, 4, 2, 2)
        axes = list(range(n)) + [n + k for k in (0, 4, 2, 1, 3, 5)]
        y = y.permute(*axes) if hasattr(y, "permute") else y.transpose(axes)
        return y.reshape(*lead, rows, cols)
    y = x.reshape(*lead, rows // block, cols // block, block, block)
    axes = list(range(n)) + [n, n + 2, n + 1, n + 3]
    y = y.permute(*axes) if hasattr(y, "permute") else y.transpose(axes)
    return y.reshape(*lead, rows, cols)


def blocked_layout(layout, block: int, cols: int):
    """``layout`` (…, rows, cols) with its last two modes re-strided as layout ``block`` (tiles
    or atoms, see the module docstring); the other modes keep their shapes and strides. ``rows``
    may be a runtime value (whole tiles: a multiple of ``tile_dims(block)[0]``); ``cols`` is the
    static row length."""
    import cutlass.cute as cute

    check_block(block, None, cols)
    if block == ROWS:
        return layout
    n = cute.rank(layout)
    lead_shape = tuple(layout.shape[i] for i in range(n - 2))
    lead_stride = tuple(layout.stride[i] for i in range(n - 2))
    rows = layout.shape[n - 2]
    if block == ATOM:  # rows (r%8, r%16//8, r//16), cols (c%2, c%8//2, c//8)
        shape = lead_shape + ((8, 2, rows // 16), (2, 4, cols // 8))
        stride = lead_stride + ((16, 2, 16 * cols), (1, 4, 128))
        return cute.make_layout(shape, stride=stride)
    shape = lead_shape + ((block, rows // block), (block, cols // block))
    stride = lead_stride + ((block, block * cols), (1, block * block))
    return cute.make_layout(shape, stride=stride)


def blocked(t, block: int, cols: int):
    """Tensor ``t`` (…, rows, cols), row-major in its last two modes, viewed as stored in
    layout ``block`` (:func:`blocked_layout`); ``t`` itself when ``block`` is 0."""
    import cutlass.cute as cute

    if block == ROWS:
        return t
    return cute.make_tensor(t.iterator, blocked_layout(t.layout, block, cols))


def atom_row_pairs(t, cols: int):
    """Tensor ``t`` (…, rows, cols), row-major in its last two modes and holding an ATOM-stored
    matrix, viewed as (…, rows // 16, cols // 8, 8, 16): [band, atom j, g, k] is float k
    (:data:`PAIR_ORDER`) of the row pair (16 band + g, 16 band + g + 8) of atom j; the last
    mode is 16 contiguous floats. ``rows`` may be a runtime value (whole bands)."""
    import cutlass.cute as cute

    check_block(ATOM, None, cols)
    lay = t.layout
    n = cute.rank(lay)
    lead_shape = tuple(lay.shape[i] for i in range(n - 2))
    lead_stride = tuple(lay.stride[i] for i in range(n - 2))
    rows = lay.shape[n - 2]
    shape = lead_shape + (rows // ATOM_ROWS, cols // ATOM_COLS, 8, 16)
    stride = lead_stride + (ATOM_ROWS * cols, 128, 16, 1)
    return cute.make_tensor(t.iterator, cute.make_layout(shape, stride=stride))


def pair_layout():
    """The rmem layout that reads an atom row pair's 16 floats (storage order) as (8 columns,
    2 row halves): ``frag[c, half]`` is row g + 8 half, column c (:data:`PAIR_ORDER`)."""
    import cutlass.cute as cute

    return cute.make_layout(((2, 4), 2), stride=((1, 4), 2))
