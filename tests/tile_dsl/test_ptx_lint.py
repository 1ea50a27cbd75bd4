"""frost.tile_dsl.ptx_lint: warp-collective instructions under lane-divergent branches.

The model tests run the check on hand-written PTX; the compile tests run it on real kernels:
a kernel that elects a lane from one thread is refused by ``compile_for``, the same kernel
with a warp-uniform branch passes, and bwd_main's staged-dQ form (whose one-thread TMA reduce
hung the H200, lab/LOG.md v8) is clean.
"""

import pytest

from frost.tile_dsl.ptx_lint import divergent_collectives, lane_varying_registers
from tests.conftest import ARCHS


def _fn(name, body):
    return f""".visible .entry {name}(
    .param .u64 {name}_param_0
)
{{
    .reg .pred %p<9>;
    .reg .b32 %r<20>;
{body}
    ret;
}}
"""


ONE_THREAD_ELECT = _fn("k", """
    mov.u32 %r2, %tid.x;
    setp.ne.b32 %p1, %r2, 0;
    @%p1 bra $L__BB0_2;
    elect.sync %r3|%p2, -1;
$L__BB0_2:
""")


def test_one_thread_elect_is_found():
    found = divergent_collectives(ONE_THREAD_ELECT)
    assert len(found) == 1
    f = found[0]
    assert f.instruction.startswith("elect.sync") and f.branch.startswith("@%p1 bra")
    assert f.line == ONE_THREAD_ELECT.splitlines().index("    elect.sync %r3|%p2, -1;") + 1
    assert "0:%p1" in lane_varying_registers(ONE_THREAD_ELECT)


@pytest.mark.parametrize("guard,flagged", [
    ("setp.ne.b32 %p1, %r2, 0;", True),          # tid == 0: one lane
    ("setp.ge.s32 %p1, %r2, 64;", False),        # tid < 64: whole warps
    ("setp.ge.s32 %p1, %r2, 40;", True),         # tid < 40: warp 1 splits
    ("setp.gt.s32 %p1, %r2, 63;", False),        # tid <= 63: whole warps
    ("setp.ne.b32 %p1, %r5, 0;", False),         # warp index (shr 5) == 0
    ("setp.ne.b32 %p1, %r6, 0;", False),         # make_warp_uniform: shfl.sync.idx broadcast
    ("setp.ne.b32 %p1, %r7, 0;", True),          # lane (and 31) == 0
    ("setp.ge.s32 %p1, %r8, 32;", False),        # (tid - 256) < 32: still whole warps
    ("setp.ge.s32 %p1, %r9, 32;", True),         # (tid - 8) < 32: splits warps
    ("setp.ne.b32 %p1, %r10, 64;", False),       # tid & 96 == 64: LLVM's tid // 32 == 2
    ("setp.ne.b32 %p1, %r11, 0;", True),         # (tid + 8) >> 5: not the warp index
])
def test_which_branches_split_a_warp(guard, flagged):
    ptx = _fn("k", f"""
    mov.u32 %r2, %tid.x;
    shr.u32 %r5, %r2, 5;
    shfl.sync.idx.b32 %r6, %r2, 0, 31, -1;
    and.b32 %r7, %r2, 31;
    add.s32 %r8, %r2, -256;
    add.s32 %r9, %r2, -8;
    and.b32 %r10, %r2, 96;
    shr.u32 %r11, %r9, 5;
    {guard}
    @%p1 bra $L__BB0_2;
    bar.sync 1, 64;
$L__BB0_2:
""")
    assert bool(divergent_collectives(ptx)) == flagged


def test_else_blocks_guards_and_barrier_forms():
    """The else-block of a lane-varying branch is divergent too; so is a collective guarded by
    a lane-varying predicate; the non-aligned barrier.sync may be reached by part of a warp."""
    tid = "    mov.u32 %r2, %tid.x;\n    setp.ne.b32 %p1, %r2, 0;\n"
    if_else = _fn("k", tid + """    @%p1 bra $L_else;
    st.shared.u32 [%r9], 1;
    bra.uni $L_end;
$L_else:
    elect.sync %r3|%p2, -1;
$L_end:
""")
    assert [f.instruction.split()[0] for f in divergent_collectives(if_else)] == ["elect.sync"]
    assert len(divergent_collectives(_fn("k", tid + "    @%p1 bar.sync 0;\n"))) == 1
    for body, flagged in (("bar.sync 1, 64;", True), ("barrier.sync.aligned 1, 64;", True),
                          ("barrier.sync 1, 64;", False), ("bar.warp.sync -1;", True),
                          ("bar.warp.sync 65535;", False)):
        ptx = _fn("k", tid + f"    @%p1 bra $L1;\n    {body}\n$L1:\n")
        assert bool(divergent_collectives(ptx)) == flagged, body


def test_registers_are_per_function_and_partial_masks_are_the_authors_choice():
    uniform_r2 = _fn("b", """
    mov.u32 %r1, %ctaid.x;
    add.s32 %r2, %r1, 1;
    setp.ne.b32 %p1, %r2, 0;
    @%p1 bra $L__BB1_2;
    mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%r3, %r4, %r5, %r6}, {%r7, %r8, %r9, %r10}, {%r11, %r12}, {%r13, %r14, %r15, %r16};
$L__BB1_2:
""")
    # %r2 is the thread index in k but a block index in b: only k's election is found
    found = divergent_collectives(ONE_THREAD_ELECT + uniform_r2)
    assert [f.instruction.split()[0] for f in found] == ["elect.sync"]
    assert found[0].line <= len(ONE_THREAD_ELECT.splitlines())
    partial = _fn("c", """
    mov.u32 %r2, %tid.x;
    setp.ge.u32 %p1, %r2, 16;
    @%p1 bra $L__BB0_2;
    shfl.sync.bfly.b32 %r3, %r2, 1, 31, 65535;
$L__BB0_2:
""")
    assert divergent_collectives(partial) == []
    full = partial.replace("65535;", "-1;")
    assert len(divergent_collectives(full)) == 1


# ---- real kernels (compile only) -----------------------------------------------------------

import cutlass  # noqa: E402
import cutlass.cute as cute  # noqa: E402


@cute.kernel
def _elect_kernel(x: cute.Tensor, uniform: cutlass.Constexpr):
    tid, _, _ = cute.arch.thread_idx()
    if cutlass.const_expr(uniform):
        pick = cute.arch.make_warp_uniform(tid // 32) == 0
    else:
        pick = tid == 0
    if pick:
        with cute.arch.elect_one():
            x[0] = cutlass.Float32(1.0)


@cute.jit
def _elect_host(x: cute.Tensor, uniform: cutlass.Constexpr):
    _elect_kernel(x, uniform).launch(grid=[1, 1, 1], block=[64, 1, 1])


@pytest.mark.compile
@pytest.mark.parametrize("arch", ARCHS)
def test_compile_for_refuses_an_election_from_one_thread(arch):
    from frost.tile_dsl.compile import DivergentCollectiveError, compile_for

    x = cute.runtime.make_fake_compact_tensor(cutlass.Float32, (4,), assumed_align=16)
    with pytest.raises(DivergentCollectiveError, match="elect.sync"):
        compile_for(_elect_host, x, False, arch=arch)
    rep = compile_for(_elect_host, x, False, arch=arch, lint=False)
    assert rep.count("elect.sync") >= 1 and len(rep.lint()) >= 1
    clean = compile_for(_elect_host, x, True, arch=arch)
    assert clean.count("elect.sync") >= 1 and clean.lint() == []


@pytest.mark.compile
def test_bwd_main_staged_dq_issues_its_tma_reduce_from_a_whole_warp():
    from frost.recipes.bwd_main import bwd_main_kernel
    from frost.recipes.bwd_main import default_plan

    t = dict(tile_m=32, tile_n=128, q_stages=2, v_in_regs=1, stage_reductions=1)
    rep = bwd_main_kernel(default_plan("sm_120a", 128, tile=t), "bf16").compile("sm_120a")
    assert rep.count("cp.reduce.async.bulk.tensor") >= 1 and rep.count("elect.sync") >= 1
    assert rep.lint() == []


def test_blocks_laid_out_inside_a_branch_but_entered_from_elsewhere():
    """A compiler may place another path's blocks between a lane-varying branch and its label
    (bwd_main's tail-split build does: the second copy of the MMA loop lands inside the range of
    the epilogue's ``tidx == 0`` store). Only what control reaches from the branch counts."""
    laid_out = _fn("k", """
    mov.u32 %r2, %tid.x;
    setp.ne.b32 %p1, %r2, 0;
    setp.eq.b32 %p2, %r5, 0;
    @%p2 bra $L__other;
    @%p1 bra $L__join;
    add.s32 %r3, %r2, 1;
    bra.uni $L__join;
$L__other:
    bar.sync 0;
    bra.uni $L__end;
$L__join:
    bar.sync 1;
$L__end:
""")
    assert divergent_collectives(laid_out) == []
    reached = laid_out.replace("    add.s32 %r3, %r2, 1;", "    bar.sync 2;")
    (f,) = divergent_collectives(reached)
    assert "bar.sync 2" in f.instruction and "%p1" in f.branch


def test_lanes_meet_again_at_the_post_dominator_not_at_the_label():
    """An out-of-line block that jumps back: the lanes that took the branch rejoin before the
    barrier, so it is not divergent (a line-range reading would call it the then-block). A
    loop whose exit test reads the thread index: its whole body is divergent."""
    cold = _fn("k", """
    mov.u32 %r2, %tid.x;
    setp.ne.b32 %p1, %r2, 0;
    @%p1 bra $L__cold;
$L__back:
    bar.sync 0;
    ret;
$L__cold:
    add.s32 %r3, %r2, 1;
    bra.uni $L__back;
""")
    assert divergent_collectives(cold) == []
    in_cold = cold.replace("    add.s32 %r3, %r2, 1;", "    bar.sync 1;")
    assert [f.instruction for f in divergent_collectives(in_cold)] == ["bar.sync 1"]
    loop = _fn("k", """
    mov.u32 %r2, %tid.x;
    mov.u32 %r3, 0;
$L__loop:
    bar.sync 0;
    add.s32 %r3, %r3, 1;
    setp.lt.s32 %p2, %r3, %r2;
    @%p2 bra $L__loop;
    bar.sync 1;
""")
    assert [f.instruction for f in divergent_collectives(loop)] == ["bar.sync 0"]
    uniform = loop.replace("%r3, %r2;", "%r3, 8;")  # a trip count the same on every lane
    assert divergent_collectives(uniform) == []


def test_inline_asm_scopes_their_labels_and_are_read_statement_by_statement():
    """Inline asm blocks reuse label names (every mbarrier wait loop has its own ``DONE``): a
    branch goes to its own block's label, so two waits do not become one loop. A one-line
    block's statements are instructions too, so a barrier inside one is checked."""
    wait = """    {
    .reg .pred P1;
    LAB_WAIT:
    mbarrier.try_wait.parity.shared.b64 P1, [%r4], %r5, 1000;
    @P1 bra.uni DONE;
    bra.uni LAB_WAIT;
    DONE:
    }
"""
    # one thread waits (the then-block), then every lane elects, then every lane waits again
    two_waits = _fn("k", """    mov.u32 %r2, %tid.x;
    setp.ne.b32 %p1, %r2, 0;
    @%p1 bra $L__join;
""" + wait + """$L__join:
    elect.sync %r3|%p2, -1;
""" + wait)
    assert divergent_collectives(two_waits) == []
    one_line = _fn("k", """
    mov.u32 %r2, %tid.x;
    setp.ne.b32 %p1, %r2, 0;
    @%p1 bra $L__end;
    { .reg .pred %p, %q; setp.ne.s32 %q, %r2, 0; bar.red.or.pred %p, 1, 256, %q; }
$L__end:
""")
    (f,) = divergent_collectives(one_line)
    assert f.instruction.startswith("bar.red.or.pred") and "%p1" in f.branch


@pytest.mark.parametrize("end,flagged", [("trap;", False), ("ret.uni;", True), ("ret;", True)])
def test_where_paths_end(end, flagged):
    """Lanes that trap abort the grid with it and never wait at the barrier after: not a
    finding. Lanes that return (``ret`` or ``ret.uni``) leave the others at it: a finding."""
    ptx = _fn("k", f"""
    mov.u32 %r2, %tid.x;
    setp.lt.u32 %p1, %r2, 100;
    @%p1 bra $L__ok;
    {end}
$L__ok:
    bar.sync 0;
""")
    assert bool(divergent_collectives(ptx)) == flagged


def test_lanes_that_may_spin_forever_never_rejoin():
    """A lane-varying branch into an endless loop: the lanes outside it reach the barrier
    alone, although the barrier post-dominates the branch on every path that exits."""
    spin = _fn("k", """
    mov.u32 %r2, %tid.x;
    setp.lt.u32 %p1, %r2, 100;
    @%p1 bra $L__spin;
    bar.sync 0;
    ret;
$L__spin:
    bra.uni $L__spin;
""")
    assert [f.instruction for f in divergent_collectives(spin)] == ["bar.sync 0"]


def test_registers_an_asm_block_declares_are_its_own():
    """A predicate without ``%`` set from the thread index guards a barrier: found. Two blocks
    that each declare ``%q``: the first block's lane-varying ``%q`` does not taint the second's."""
    p1 = _fn("k", """
    mov.u32 %r2, %tid.x;
    { .reg .pred P1; setp.eq.u32 P1, %r2, 0; @P1 bar.sync 0; }
""")
    (f,) = divergent_collectives(p1)
    assert f.instruction.startswith("@%P1__s") and "bar.sync 0" in f.instruction
    two = _fn("k", """
    mov.u32 %r2, %tid.x;
    mov.u32 %r3, %ctaid.x;
    { .reg .pred %q; setp.eq.u32 %q, %r2, 0; selp.u32 %r4, 1, 0, %q; }
    { .reg .pred %q; setp.eq.u32 %q, %r3, 0; @%q bar.sync 0; }
""")
    assert divergent_collectives(two) == []
    assert divergent_collectives(two.replace("%q, %r3, 0", "%q, %r2, 0"))


@pytest.mark.parametrize("store,flagged", [
    ("st.local.u32 [%rd1], %r2;", True),     # the lane's tid: every lane reads its own back
    ("st.local.u32 [%rd1], %r1;", False),    # the block index: the same on every lane
    ("st.u32 [%rd2], %r2;", True),           # generic store through the depot's address
    ("st.u32 [%rd3], %r2;", True),           # ... through a pointer selected from it
    ("st.shared.u32 [%r1], %r2;", False),    # not local: a uniform-address load reads one word
])
def test_lane_dependence_through_local_memory(store, flagged):
    """Each lane has its own local memory, so a lane-varying value stored there comes back
    lane-varying; shared memory read at a uniform address does not."""
    load = "ld.shared.u32 %r3, [%r1];" if ".shared" in store else (
        "ld.u32 %r3, [%rd3];" if store.startswith("st.u32") else "ld.local.u32 %r3, [%rd1];")
    ptx = _fn("k", f"""
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %tid.x;
    mov.u64 %rd1, __local_depot0;
    cvta.local.u64 %rd2, %rd1;
    selp.b64 %rd3, %rd2, %rd2, %p8;
    {store}
    {load}
    setp.ne.b32 %p1, %r3, 0;
    @%p1 bra $L1;
    bar.sync 1, 64;
$L1:
""")
    assert bool(divergent_collectives(ptx)) == flagged
    assert ("0:%r3" in lane_varying_registers(ptx)) == flagged


ONE_LINE_TABLE = "$L_tab: .branchtargets $L_a, $L_b;"
LLVM_TABLE = "$L_tab: .branchtargets\n    $L_a,\n    $L_b;"  # how NVVM lays them out


@pytest.mark.parametrize("table", [ONE_LINE_TABLE, LLVM_TABLE], ids=["one-line", "llvm"])
@pytest.mark.parametrize("index,flagged", [("%r7", True), ("%r5", False)])
def test_indirect_branch_targets_are_followed(index, flagged, table):
    """brx.idx on the lane index splits the warp between its .branchtargets until they meet
    again; on the warp index it does not. The table may be on one line or one label a line."""
    ptx = _fn("k", f"""
    mov.u32 %r2, %tid.x;
    shr.u32 %r5, %r2, 5;
    and.b32 %r7, %r2, 1;
{table}
    brx.idx {index}, $L_tab;
$L_a:
    bar.warp.sync -1;
    bra.uni $L_end;
$L_b:
    add.s32 %r9, %r2, 1;
$L_end:
    bar.sync 0;
""")
    found = divergent_collectives(ptx)
    assert [f.instruction.split()[0] for f in found] == (["bar.warp.sync"] if flagged else [])
    if flagged:
        assert found[0].branch.startswith("brx.idx")


def test_an_unknown_branch_table_may_go_anywhere():
    """A brx.idx whose table the reader cannot find is taken to reach every label: a collective
    after any of them is flagged when the index is lane-varying."""
    ptx = _fn("k", """
    mov.u32 %r2, %tid.x;
    and.b32 %r7, %r2, 1;
    brx.idx %r7, $L_missing;
$L_a:
    bar.warp.sync -1;
$L_b:
    ret;
""")
    assert [f.instruction.split()[0] for f in divergent_collectives(ptx)] == ["bar.warp.sync"]
