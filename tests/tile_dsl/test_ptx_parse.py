"""frost.tile_dsl.ptx_parse: PTX text to instructions and branch targets (the lint's reader)."""

from frost.tile_dsl.ptx_parse import functions, parse

PTX = """.visible .entry a()
{
    mov.u32 %r1, %tid.x;
    @%p1 bra $L_x;
$L_tab: .branchtargets
    $L_x,
    $L_y,
    $L_x;
    brx.idx %r1, $L_tab;
$L_x:
    { .reg .pred %p1; setp.ne.b32 %p1, %r1, 0; @%p1 bra DONE; bar.warp.sync -1; DONE: }
$L_y:
    ret;
}
.visible .entry b()
{
    bra.uni $L_gone;
}
"""


def test_branches_resolve_to_their_labels_and_tables():
    lines = PTX.splitlines()
    (a0, a1), (b0, b1) = functions(lines)
    insts, targets = parse(lines, a0, a1)
    ops = [i.op for i in insts]
    assert ops == ["mov.u32", "bra", "brx.idx", "setp.ne.b32", "bra", "bar.warp.sync", "ret"]
    x, y = ops.index("setp.ne.b32"), ops.index("ret")
    assert targets[0] is None and targets[1] == (x,)
    assert targets[2] == (x, y)  # the table's entries (over several lines), each once
    # the asm block's DONE is its own label; its %p1 is not the function's %p1
    assert targets[4] == (y,) and insts[4].guard != insts[1].guard
    assert insts[3].dst == [insts[4].guard] and "%r1" in insts[3].src
    g_insts, g_targets = parse(lines, b0, b1)
    assert g_targets == [(len(g_insts),)]  # a label the function lacks: out of the function
