"""dQ partials of ``bwd_main`` into the fp32 workspace: ``red.global.add`` per lane (the MMA warps'
last step of a trip, :mod:`.mma`)."""

from __future__ import annotations

import cutlass
import cutlass.cute as cute

from frost.tile_dsl.gmem import ATOM, ATOM_COLS, ATOM_ROWS, ROWS, blocked, tile_dims
from frost.tile_dsl.ptx import red_add_v2_f32, red_add_v4_f32


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
        """Add this tile's dQ partial (the chunk at column ``col0``) into dq_accum (fp32,
        un-scaled): on the plan's ATOM workspace each lane's whole m16n8 atom (c0..c3, 16
        contiguous bytes there) by one ``.v4``; else each lane's own column pairs by ``.v2``.
        Under ``dq_guard="rows"`` each add is checked against S_q; under ``"pad"`` none is."""
        checked = self.code.dq_guard == "rows"
        for ok, adds in self.dq_add_groups(acc_dQ, tdQcdQ, tdQcdQ0, mdQacc, b, h, m_block, s_q,
                                           col0):
            self.red_add(checked, ok, *adds)

    def dq_add_groups(self, acc_dQ, tdQcdQ, tdQcdQ0, mdQacc, b, h, m_block, s_q, col0):
        """The tile's adds, yielded as ``(ok, [(ptr, vals)])``: each under its row test ``ok``
        (row < S_q), in issue order. A generator traced in the caller's jit context:
        :meth:`dq_atomics` issues each add before the next one's address is computed."""
        tl = self.kp.tile
        t_m, d = tl["tile_m"], tl["d"]
        # the plan's workspace layout: row-major, reduce_block x reduce_block tiles, or ATOM
        block = tl.get("reduce_block", ROWS)
        acc = blocked(mdQacc, block, d)
        g = cute.local_tile(acc[b, h, None, None], (t_m, d), (m_block, 0))
        row0 = m_block * t_m
        if cutlass.const_expr(block != ROWS):
            # one base address per thread; every add's offset from it is a constant: adds sit
            # whole storage tiles apart (8x8 blocks: row halves 8 rows or atoms 16 x 8 apart;
            # ATOM: whole atoms), and whole tiles are linear in either layout. An ATOM add is a
            # lane's whole atom (c0..c3), checked on its first row only: its row + 8 is in the
            # same tile, inside S_q_pad (whole 16-row tiles). Each add is checked on its own.
            n = 4 if block == ATOM else 2
            tr, tc = tile_dims(block)
            r0, c0 = tdQcdQ[0]
            base = g.iterator + cute.crd2idx((r0, c0 + col0), g.layout)
            for i in range(0, cute.size(acc_dQ), n):
                dr, dc = (x - y for x, y in zip(tdQcdQ0[i], tdQcdQ0[0]))
                assert dr % tr == 0 and dc % tc == 0, (dr, dc, block)
                if block == ATOM:
                    _assert_whole_atom(tdQcdQ0, i, col0)
                r, _ = tdQcdQ[i]
                yield row0 + r < s_q, [
                    (base + cute.crd2idx((dr, dc), g.layout), [acc_dQ[i + k] for k in range(n)])]
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
        a row past S_q lands in the pad, which dq_convert never reads)."""
        if cutlass.const_expr(not checked):
            self.red_adds(adds)
        elif ok:
            self.red_adds(adds)

    @staticmethod
    def red_adds(adds) -> None:
        for ptr, vals in adds:
            (red_add_v4_f32 if len(vals) == 4 else red_add_v2_f32)(ptr, *vals)
