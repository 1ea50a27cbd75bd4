"""dQ partials of ``bwd_main`` into the fp32 workspace: ``red.global.add`` per lane (the MMA warps'
last step of a trip, :mod:`.mma`)."""

from __future__ import annotations

import cutlass
import cutlass.cute as cute

from frost.tile_dsl.gmem import ATOM, ATOM_COLS, ATOM_ROWS, ROWS, blocked, tile_dims
from frost.tile_dsl.ptx import red_add_v2_f32, red_add_v4_f32
from frost.tile_dsl.regs import pair_to_v4
from frost.tile_dsl.warp_grid import MMA_M


def dq_half_of(first_row, wm: int):
    """Which half (0 or 1) of a kv-tile pair adds the dQ rows of the warp whose first output row
    is ``first_row``, under the timing-only ``dq_half`` ablation: warp row m = (first_row // 16)
    % wm of the dQ grid (its rows are the interleaved 16-row runs of ``warp_grid.rows_of``) goes
    to half m * 2 // wm, so for an even ``wm`` each half is wm / 2 warp rows and the pair adds
    every row once. Works on ints and on traced Int32 alike."""
    return (first_row // MMA_M) % wm * 2 // wm


def _assert_whole_atom(coords0, i: int, col0: int) -> None:
    """Trace-time check (thread 0's static coordinates): values i .. i+3 are c0..c3 of one m16n8
    atom, (r, c), (r, c+1), (r+8, c), (r+8, c+1), and the first atom starts on a 16x8 tile."""
    r, c = coords0[i]
    assert i or (r % ATOM_ROWS == 0 and (c + col0) % ATOM_COLS == 0), (r, c)
    assert [coords0[i + k] for k in (1, 2, 3)] == [(r, c + 1), (r + 8, c), (r + 8, c + 1)], \
        "not c0..c3 of one atom"


class DqAtomics:
    """Mixin of the MMA role: :meth:`dq_atomics`."""

    @cute.jit
    def dq_atomics(self, acc_dQ, tdQcdQ, tdQcdQ0, mdQacc, b, h, m_block, s_q,
                   col0: cutlass.Constexpr):
        """Add this tile's dQ partial into dq_accum (fp32, un-scaled): on the plan's ATOM
        workspace each lane's whole m16n8 atom (c0..c3, 16 contiguous bytes there) by one
        ``.v4``; else ``dq_vec`` columns per atomic (4: lane pairs first trade values,
        ``regs.pair_to_v4``, so each lane holds four consecutive columns of one row; 2: each
        lane's own pairs). Under ``dq_guard="tile"``
        one warp-uniform test a trip picks the unchecked atomics for a q tile wholly inside
        S_q and the row-checked ones for the edge tile."""
        if cutlass.const_expr(self.code.dq_guard == "tile"):
            if (m_block + 1) * self.kp.tile["tile_m"] <= s_q:
                self.dq_add_tile(acc_dQ, tdQcdQ, tdQcdQ0, mdQacc, b, h, m_block, s_q, col0,
                                 checked=False)
            else:
                self.dq_add_tile(acc_dQ, tdQcdQ, tdQcdQ0, mdQacc, b, h, m_block, s_q, col0,
                                 checked=True)
        else:
            self.dq_add_tile(acc_dQ, tdQcdQ, tdQcdQ0, mdQacc, b, h, m_block, s_q, col0,
                             checked=self.code.dq_guard in ("rows", "row_once"))

    @cute.jit
    def dq_add_tile(self, acc_dQ, tdQcdQ, tdQcdQ0, mdQacc, b, h, m_block, s_q,
                    col0: cutlass.Constexpr, checked: cutlass.Constexpr):
        """:meth:`dq_atomics`' adds, under the row check if ``checked`` (each add its own, or
        under ``dq_guard="row_once"`` one check per row on the blocked workspaces)."""
        for ok, adds in self.dq_add_groups(acc_dQ, tdQcdQ, tdQcdQ0, mdQacc, b, h, m_block, s_q,
                                           col0):
            self.red_add(checked, ok, *adds)

    def dq_add_side(self, acc_dQ, tdQcdQ, tdQcdQ0, mdQacc, b, h, m_block, s_q, col0) -> list:
        """The adds of :meth:`dq_add_tile` (the dQ chunk at column ``col0``) as callables, one
        per row check, for ``gemm_interleaved``'s ``side`` work (code choice ``dq_spread``)."""
        assert self.code.dq_guard != "tile", "dq_spread has no edge-tile form"
        checked = self.code.dq_guard in ("rows", "row_once")
        return [lambda ok=ok, adds=adds: self.red_add(checked, ok, *adds) for ok, adds in
                self.dq_add_groups(acc_dQ, tdQcdQ, tdQcdQ0, mdQacc, b, h, m_block, s_q, col0)]

    def dq_add_groups(self, acc_dQ, tdQcdQ, tdQcdQ0, mdQacc, b, h, m_block, s_q, col0):
        """The tile's adds, yielded as ``(ok, [(ptr, vals), ...])``: each group under one row
        test ``ok`` (row < S_q), in issue order. A generator traced in the caller's jit context:
        :meth:`dq_add_tile` issues each group before the next one's addresses are computed."""
        tl = self.kp.tile
        t_m, d = tl["tile_m"], tl["d"]
        # the plan's workspace layout: row-major, reduce_block x reduce_block tiles, or ATOM
        block = tl.get("reduce_block", ROWS)
        acc = blocked(mdQacc, block, d)
        g = cute.local_tile(acc[b, h, None, None], (t_m, d), (m_block, 0))
        row0 = m_block * t_m
        if cutlass.const_expr(self.dq_vec == 4):  # (CodeChoices refuses it on ATOM)
            for i in range(0, cute.size(acc_dQ), 4):
                r, c = tdQcdQ[i]  # c0 of this m16n8 atom: row g, column 2t
                odd, v0, v1, v2, v3 = pair_to_v4(acc_dQ[i], acc_dQ[i + 1], acc_dQ[i + 2],
                                                 acc_dQ[i + 3])
                rr = r + cutlass.select_(odd, 8, 0)
                cc = c - cutlass.select_(odd, 2, 0)
                ptr = g.iterator + cute.crd2idx((rr, cc + col0), g.layout)
                yield row0 + rr < s_q, [(ptr, (v0, v1, v2, v3))]
        elif cutlass.const_expr(block != ROWS):
            # one base address per thread; every add's offset from it is a constant: adds sit
            # whole storage tiles apart (8x8 blocks: row halves 8 rows or atoms 16 x 8 apart;
            # ATOM: whole atoms), and whole tiles are linear in either layout. An ATOM add is a
            # lane's whole atom (c0..c3), checked on its first row only: its row + 8 is in the
            # same tile, inside S_q_pad (whole 16-row tiles)
            # Under dq_guard="row_once" the adds of one row (a static offset dr from the lane's
            # first) go under one check, in row order; else each add is checked on its own.
            n = 4 if block == ATOM else 2
            tr, tc = tile_dims(block)
            r0, c0 = tdQcdQ[0]
            base = g.iterator + cute.crd2idx((r0, c0 + col0), g.layout)
            checks: dict = {}  # one row check each: key -> [(i, dr, dc)], in first-add order
            for i in range(0, cute.size(acc_dQ), n):
                dr, dc = (x - y for x, y in zip(tdQcdQ0[i], tdQcdQ0[0]))
                assert dr % tr == 0 and dc % tc == 0, (dr, dc, block)
                if block == ATOM:
                    _assert_whole_atom(tdQcdQ0, i, col0)
                key = dr if self.code.dq_guard == "row_once" else i
                checks.setdefault(key, []).append((i, dr, dc))
            for adds in checks.values():
                r, _ = tdQcdQ[adds[0][0]]
                yield row0 + r < s_q, [
                    (base + cute.crd2idx((dr, dc), g.layout), [acc_dQ[i + k] for k in range(n)])
                    for i, dr, dc in adds]
        else:  # row-major (the v15 code: with the form above, d=256 spilled 8 B on sm_120a)
            for i in range(0, cute.size(acc_dQ), 2):
                r, c = tdQcdQ[i]
                ptr = g.iterator + cute.crd2idx((r, c + col0), g.layout)
                yield row0 + r < s_q, [(ptr, (acc_dQ[i], acc_dQ[i + 1]))]

    @cute.jit
    def red_add(self, checked: cutlass.Constexpr, ok, *adds):
        """For each ``(ptr, vals)`` of ``adds``: ``ptr[0..n) += vals`` (2 or 4 fp32, one vector
        atomic), all under one test of ``ok`` (the row is inside S_q; an ATOM add tests its
        atom's first row: rows S_q .. S_q rounded up to 16 may take pad values) if ``checked``:
        ptxas compiles each such test to a branch inside its own convergence barrier
        (BSSY/BSYNC; a predicate written inside the asm gets the same, v54), and the compiler
        merges adjacent tests of one row (ATOM's atoms of a row). Unchecked adds are safe for
        ``dq_guard="pad"`` (the workspace's S_q_pad is a multiple of tile_m, checked at launch:
        a row past S_q lands in the pad, which dq_convert never reads) and for ``"tile"``'s
        tiles wholly inside S_q. The ``dq_atomic2`` ablation (timing only) issues each add
        twice: dQ comes out doubled."""
        for _ in cutlass.range_constexpr(2 if "dq_atomic2" in self.skip else 1):
            if cutlass.const_expr(not checked):
                self.red_adds(adds)
            elif ok:
                self.red_adds(adds)

    @staticmethod
    def red_adds(adds) -> None:
        for ptr, vals in adds:
            (red_add_v4_f32 if len(vals) == 4 else red_add_v2_f32)(ptr, *vals)
