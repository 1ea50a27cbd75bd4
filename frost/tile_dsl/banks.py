"""Bank-conflict analyzer (model): shared-memory wavefronts of one warp-wide access.

Shared memory has 32 banks of 4 bytes; one wavefront serves at most 128 bytes, and two distinct
4-byte words in the same bank within one phase serialize (the same word is a broadcast). An
access is a :class:`WarpAccess`: the byte addresses each lane touches, grouped into the phases
the hardware issues (ldmatrix: 8 lanes x 16 B per 8x8 matrix; 16-byte stores: 4 phases of 8
lanes; 4-byte accesses: 1 phase of 32 lanes). :func:`bank_conflicts` returns a
:class:`BankReport`. Pattern generators over a :class:`~frost.tile_dsl.swizzle.SwizzledTile`:
:func:`ldmatrix_x4_rows`, :func:`row_store_16B`, :func:`fragment_store_4B`.
"""

from __future__ import annotations

import dataclasses


from frost.tile_dsl.swizzle import SwizzledTile

BANKS = 32
BANK_BYTES = 4
PHASE_BYTES = BANKS * BANK_BYTES  # one wavefront serves at most 128 B


@dataclasses.dataclass(frozen=True)
class WarpAccess:
    """The byte addresses one warp-wide shared-memory instruction touches.

    Lanes are served in phases of ``128 // width`` lanes (8 lanes for 16-byte accesses and for
    each 8x8 matrix of ldmatrix, 16 for 8-byte, 32 for 4-byte). ``phases[p]`` holds the start
    addresses of the lanes of phase ``p``; each lane touches ``width`` bytes from its address.
    """

    name: str
    width: int
    phases: tuple[tuple[int, ...], ...]

    @classmethod
    def from_lanes(cls, name: str, addresses, width: int) -> "WarpAccess":
        """Group per-lane start addresses (lane order) into hardware phases."""
        if width not in (4, 8, 16):
            raise ValueError(f"width must be 4, 8 or 16 bytes, got {width}")
        addresses = [int(a) for a in addresses]
        bad = [a for a in addresses if a % width]
        if bad:
            raise ValueError(f"{name}: misaligned {width}-byte addresses {bad[:4]}")
        per = PHASE_BYTES // width
        return cls(name, width, tuple(tuple(addresses[i:i + per]) for i in range(0, len(addresses), per)))


@dataclasses.dataclass(frozen=True)
class BankReport:
    """Wavefronts an access needs, against the ideal (distinct 4-byte words / 32 per phase)."""

    wavefronts: int
    ideal: int
    per_phase: tuple[int, ...]

    @property
    def conflict_degree(self) -> float:
        """``wavefronts / ideal``: 1.0 is conflict-free, 8.0 an 8-way conflict."""
        return self.wavefronts / self.ideal

    @property
    def conflict_free(self) -> bool:
        return self.wavefronts == self.ideal


def bank_conflicts(access: WarpAccess) -> BankReport:
    """Count shared-memory wavefronts (32 banks x 4 B) of one warp-wide access.

    Within a phase, distinct 4-byte words that fall in the same bank serialize; lanes that
    read the same word share it (broadcast). A phase costs max over banks of distinct words.
    """
    per_phase, ideal = [], 0
    for lanes in access.phases:
        words = {(a + i) // BANK_BYTES for a in lanes for i in range(0, access.width, BANK_BYTES)}
        load = [0] * BANKS
        for w in words:
            load[w % BANKS] += 1
        per_phase.append(max(load) if words else 0)
        ideal += -(-len(words) // BANKS)
    return BankReport(sum(per_phase), max(ideal, 1), tuple(per_phase))


def ldmatrix_x4_rows(tile: SwizzledTile, row0: int, col0: int, num_matrices: int = 4,
                     stage: int = 0) -> WarpAccess:
    """Row addresses ``ldmatrix.x{1,2,4}`` reads for the 16x16 block at ``(row0, col0)``.

    Lane ``l`` points at row ``l % 8`` of matrix ``m = l // 8``; matrix ``m`` covers rows
    ``row0 + 8 * (m % 2)`` and columns ``col0 + 8 * (m // 2)`` (the A-fragment order, see
    :mod:`frost.tile_dsl.mma`). Each matrix row is 16 B, each matrix one phase. ``.trans``
    reads the same addresses.
    """
    if num_matrices not in (1, 2, 4):
        raise ValueError(f"num_matrices must be 1, 2 or 4, got {num_matrices}")
    per_row = 16 // tile.elem_bytes
    addrs = []
    for lane in range(8 * num_matrices):
        m = lane // 8
        addrs.append(tile.address(row0 + lane % 8 + 8 * (m % 2), col0 + per_row * (m // 2), stage))
    return WarpAccess.from_lanes(f"ldmatrix.x{num_matrices}@({row0},{col0})", addrs, 16)


def row_store_16B(tile: SwizzledTile, row0: int = 0, col0: int = 0, lanes_per_row: int | None = None,
                  stage: int = 0) -> WarpAccess:
    """32 lanes storing 16 B each, ``lanes_per_row`` lanes side by side per row.

    Lane ``l`` writes ``(row0 + l // lanes_per_row, col0 + (l % lanes_per_row) * 16 B)``. The
    default covers whole rows (a gmem->smem copy of a row-major tile); ``lanes_per_row=1``
    writes one 16 B unit per row down a column, the classic conflicting pattern.
    """
    vec = 16 // tile.elem_bytes
    if lanes_per_row is None:
        lanes_per_row = max(1, min(32, (tile.cols - col0) // vec))
    addrs = [tile.address(row0 + l // lanes_per_row, col0 + (l % lanes_per_row) * vec, stage)
             for l in range(32)]
    return WarpAccess.from_lanes(f"st.shared.v4@({row0},{col0})x{lanes_per_row}", addrs, 16)


def fragment_store_4B(tile: SwizzledTile, row0: int, col0: int, stage: int = 0) -> WarpAccess:
    """32 lanes storing one 2x16-bit pair of an mma accumulator's 8x8 quarter.

    Lane ``l`` writes ``(row0 + l // 4, col0 + 2 * (l % 4))`` (4 bytes of 16-bit data): storing
    P or dS from registers to smem with 32-bit ``st.shared``. One phase of 32 lanes.
    """
    addrs = [tile.address(row0 + l // 4, col0 + 2 * (l % 4), stage) for l in range(32)]
    return WarpAccess.from_lanes(f"st.shared.b32@({row0},{col0})", addrs, 4)
