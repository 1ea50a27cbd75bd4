"""The shared-memory allocator on small hand-made cases."""

import dataclasses

import pytest
import sympy

from frost.sched.plan import BufferPlan
from frost.sched.smem import BufferRequest, allocate, check_no_overlap, place_mbarriers


def req(name, rows, cols, live, stages=1, elem=2, async_write=False):
    return BufferRequest(name, rows, cols, "bf16" if elem == 2 else "fp32", elem, stages, live,
                         sympy.Integer(rows * cols * elem * stages), async_write)


def test_disjoint_lives_share_bytes_and_exact_shape_wins():
    bufs, end, _ = allocate([
        req("a", 64, 64, (0, 5)), req("b", 64, 128, (0, 5)),
        req("c", 64, 64, (6, 7)),  # fits in both; same shape as a -> a
    ])
    by = {b.name: b for b in bufs}
    assert by["c"].alias_of == "a" and by["c"].offset == by["a"].offset
    assert end == by["b"].end
    check_no_overlap(bufs)


def test_two_live_buffers_pack_inside_one_dead_region():
    bufs, _, _ = allocate([req("big", 64, 256, (0, 1)), req("p", 32, 64, (2, 9)),
                           req("q", 32, 64, (2, 9))])
    by = {b.name: b for b in bufs}
    assert by["p"].alias_of == by["q"].alias_of == "big"
    assert by["p"].end <= by["q"].offset or by["q"].end <= by["p"].offset
    check_no_overlap(bufs)


def test_a_buffer_no_one_region_holds_spans_adjacent_dead_regions():
    """An epilogue tile larger than either ring takes the bytes of both (they are adjacent and
    dead), recorded against the first; a later buffer live with it is not placed over the part
    in the second region; a region still live breaks the run."""
    rings = [req("A", 128, 32, (0, 3), stages=3, async_write=True),
             req("B", 256, 32, (0, 3), stages=3, async_write=True)]
    bufs, end, expr = allocate(rings + [req("C", 128, 256, (4, 7)), req("D", 16, 64, (5, 6))])
    by = {b.name: b for b in bufs}
    assert by["C"].alias_of == "A" and by["C"].offset == 0
    assert by["A"].end < by["C"].end <= by["B"].end  # C spans A and part of B
    assert by["D"].alias_of == "B" and by["D"].offset >= by["C"].end  # not over C's bytes
    assert end == by["B"].end and expr == sum(r.nbytes for r in rings)
    check_no_overlap(bufs)
    # a guarded TMA ring may take one dead region's bytes, never a run (its guard covers one)
    guarded = dataclasses.replace(req("G", 128, 256, (4, 7), async_write=True), guarded=True)
    bufs, _, _ = allocate(rings + [guarded])
    assert bufs[2].alias_of is None and bufs[2].offset >= bufs[1].end
    # B still live when C starts: no run of dead regions holds C, so it is appended
    live_b = [rings[0], dataclasses.replace(rings[1], live=(0, 4))]
    bufs, end, _ = allocate(live_b + [req("C", 128, 256, (4, 7))])
    assert bufs[2].alias_of is None and bufs[2].offset >= bufs[1].end
    check_no_overlap(bufs)


def test_async_buffers_never_alias():
    bufs, _, _ = allocate([req("big", 64, 256, (0, 1)), req("ring", 32, 64, (2, 9), stages=2,
                                                            async_write=True)])
    assert bufs[1].alias_of is None and bufs[1].offset >= bufs[0].end


def test_a_guarded_async_buffer_takes_a_dead_tiles_bytes():
    """A TMA-filled buffer whose ring waits for the consumers' release once after their
    prologue may take the bytes of a tile dead by then (V held in registers), next to other
    buffers living there; live at the same time as that tile it may not."""
    def ring(name, live, guarded):
        return dataclasses.replace(req(name, 32, 64, live, async_write=True), guarded=guarded)

    bufs, _, _ = allocate([req("V", 64, 256, (0, 1)), ring("dO", (2, 9), True),
                           req("P", 32, 64, (2, 9)), ring("Q", (2, 9), False)])
    by = {b.name: b for b in bufs}
    assert by["dO"].alias_of == by["P"].alias_of == "V" and by["Q"].alias_of is None
    check_no_overlap(bufs)
    bufs, _, _ = allocate([req("V", 64, 256, (0, 3)), ring("dO", (2, 9), True)])
    assert bufs[1].alias_of is None and bufs[1].offset >= bufs[0].end


def test_alignment_and_swizzle():
    bufs, _, _ = allocate([req("vec", 33, 1, (0, 9), elem=4), req("t", 64, 96, (0, 9))])
    vec, t = bufs
    assert vec.swizzle is None and vec.offset % 128 == 0
    assert t.swizzle == (2, 3, 3) and t.offset % 1024 == 0  # 96 cols: 64-byte swizzle


def test_overlap_checker_catches_a_clash():
    a = BufferPlan("a", 0, 1024, 8, 64, "bf16", live=(0, 3))
    b = BufferPlan("b", 512, 1024, 8, 64, "bf16", live=(3, 4))
    with pytest.raises(AssertionError):
        check_no_overlap([a, b])
    check_no_overlap([a, BufferPlan("c", 512, 1024, 8, 64, "bf16", live=(4, 5))])


def test_mbarriers_are_8_byte_aligned_after_buffers():
    mbs, end = place_mbarriers(1001, [("x_full", 2, 1, 64), ("x_empty", 2, 4, 0)])
    assert [m.offset for m in mbs] == [1008, 1024] and end == 1040
