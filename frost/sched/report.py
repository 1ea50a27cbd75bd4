"""A plan as human-readable text: the chain, PDL edges, warp roles, the shared-memory map,
barriers, mbarriers and the budget check. Used by ``frost plan``; handy in notebooks."""

from __future__ import annotations

from frost.sched.plan import KernelPlan, Plan
from frost.sched.warps import group_of


def table(headers: list[str], rows: list[list], indent: str = "  ") -> str:
    """Left-aligned text columns (numbers right-aligned)."""
    cells = [[str(h) for h in headers]] + [[_fmt(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    num = [all(isinstance(r[i], (int, float)) for r in rows) and rows for i in range(len(headers))]

    def line(r):
        return indent + "  ".join(c.rjust(w) if n else c.ljust(w)
                                  for c, w, n in zip(r, widths, num)).rstrip()

    sep = indent + "  ".join("-" * w for w in widths)
    return "\n".join([line(cells[0]), sep] + [line(r) for r in cells[1:]])


# kernel -> the frost/templates module whose kernel reads its plan (the tiny ``gemm`` builds its
# own plan; ``chain`` launches the SDPA three): a test checks each module exists
PLAN_TEMPLATES = {"rowdot": "rowdot", "bwd_main": "bwd_main", "dq_convert": "dq_convert",
                  "zero_rowsum": "gemm_rowsum", "gemm_rowsum": "gemm_rowsum",
                  "c_convert": "gemm_rowsum"}


def _reused(b, buffers) -> str | None:
    """The regions whose bytes ``b`` reuses: its ``alias_of``, plus the next regions when it
    spans a run of them (``sA+sB``)."""
    if not b.alias_of:
        return None
    return "+".join(r.name for r in buffers
                    if not r.alias_of and r.offset < b.end and b.offset < r.end) or b.alias_of


def has_template(name: str) -> bool:
    """Whether a template reads the plan of a kernel called ``name``."""
    return name in PLAN_TEMPLATES


def _fmt(c) -> str:
    if isinstance(c, bool):
        return "yes" if c else "-"
    if isinstance(c, int):
        return f"{c:,}"
    if c is None:
        return "-"
    if isinstance(c, (tuple, list)):
        return ",".join(str(x) for x in c) if c else "-"
    return str(c)


def budget_line(plan: Plan, k: KernelPlan) -> str:
    ok = k.smem_bytes <= plan.smem_budget
    pct = 100.0 * k.smem_bytes / plan.smem_budget
    return (f"Budget: {k.name} uses {k.smem_bytes:,} B of {plan.smem_budget:,} B shared memory "
            f"({pct:.1f}%) on {plan.arch}: {'OK' if ok else 'OVER BUDGET'}")


def format_plan(plan: Plan) -> str:
    """The plan as the text tables ``frost plan`` prints: chain, PDL edges, and per kernel its
    tile, warp roles, held operands, smem map, mbarriers, named barriers and budget check."""
    p = plan.params
    head = f"frost plan: {plan.program} on {plan.arch}"
    if p:
        head += "  (" + ", ".join(f"{k}={v}" for k, v in p.items() if k != "arch") + ")"
    padded = []  # the kernels' sizes, where they are not the input's
    for key, tkey in (("head_dim", "d_qk"), ("head_dim_v", "d_v")):
        sizes = {k.tile[tkey] for k in plan.kernels if tkey in k.tile}
        if p.get(key) is not None and sizes - {p[key]}:
            padded.append(f"{tkey}={max(sizes)} for {key}={p[key]}")
    if padded:
        head += (f"\n  planned as {', '.join(padded)} (frost.sched.sdpa.pad_head_dim: the next "
                 f"multiple of 32, 256 above 192, unless head_pad is forced); the kernels cost "
                 f"what that size's do")
    out = [head, "", "Kernel chain (PDL-linked, in launch order)"]
    out.append(table(["#", "kernel", "template", "threads", "smem B", "pdl", "reads", "writes"], [
        [i, k.name, k.template, k.threads, k.smem_bytes, "+".join(a.name for a in k.pdl),
         k.reads, k.writes] for i, k in enumerate(plan.kernels)]))
    missing = [k.name for k in plan.kernels if not has_template(k.template)]
    if missing:
        out.append(f"  no template reads this plan yet for: {', '.join(missing)} (the "
                   f"kernels that have one: {', '.join(PLAN_TEMPLATES)}); the plan is the "
                   f"spec one would read (notebooks/04_author_a_kernel.ipynb)")
    out += ["", "PDL edges (the consumer waits before its first read of these)"]
    out.append(table(["producer", "consumer", "tensors"],
                     [[e.producer, e.consumer, e.tensors] for e in plan.edges]))
    for k in plan.kernels:
        out += ["", f"== {k.name} =="]
        out.append("  tile: " + ", ".join(f"{a}={b}" for a, b in k.tile.items()))
        if k.params.get("tile_source"):
            out.append(f"  tile chosen by: {k.params['tile_source']}")
        if k.roles:
            out += ["", "  Warp roles"]
            est = k.params.get("regs_estimate", {})
            out.append(table(["role", "warps", "threads", "setmaxnreg", "est. regs"], [
                [g.role.name, f"{g.first_warp}..{g.first_warp + g.num_warps - 1}", g.threads,
                 g.max_regs, est.get(g.role.name)] for g in k.roles]))
            out.append(f"  launch: {k.params.get('launch_regs')} registers per thread; "
                       f"{k.threads} threads")
            if k.params.get("held_in_regs"):
                out.append("  held in MMA registers for the pass (in est. regs): "
                           + ", ".join(_held(h) for h in k.params["held_in_regs"]))
        if k.buffers:
            out += ["", "  Shared-memory map"]
            out.append(table(["buffer", "offset", "end", "bytes", "rows x cols", "dtype", "stages",
                              "swizzle", "alias of", "live"], [
                [b.name, b.offset, b.end, b.nbytes, f"{b.rows} x {b.cols}", b.dtype, b.stages,
                 f"S<{','.join(map(str, b.swizzle))}>" if b.swizzle else None,
                 _reused(b, k.buffers), f"{b.live[0]}..{b.live[1]}"] for b in k.buffers]))
        if k.mbarriers:
            out += ["", "  Mbarriers"]
            out.append(table(["name", "offset", "stages", "arrive", "tx bytes"], [
                [m.name, m.offset, m.stages, m.arrive_count, m.tx_bytes] for m in k.mbarriers]))
        if k.barriers:
            out += ["", "  Named barriers"]
            out.append(table(["name", "id", "threads"],
                             [[b.name, b.id, b.threads] for b in k.barriers]))
        if k.tile.get("exchange_sync") and k.barriers:
            n, div = k.tile["x_groups"], k.tile["x_group_div"]
            warps = k.tile["num_mma_warps"]
            groups = ", ".join(
                f"x_group{g} = warps {[w for w in range(warps) if group_of(w, div, n) == g]}"
                for g in range(n))
            ex = k.params.get("exchange", {})
            out += ["", f"  exchange_sync: {groups}",
                    f"    after its group barrier: {', '.join(ex.get('local', []))}; after x_full "
                    f"(every warp's P/dS): {', '.join(ex.get('late', []))}"]
        if k.stage_order:
            out += ["", "  Stage order: " + " > ".join(k.stage_order)]
        if k.buffers or k.mbarriers:
            if "smem_expr" in k.params:
                out.append(f"  smem (symbolic, before alignment): {k.params['smem_expr']}")
            out.append("  " + budget_line(plan, k))
    return "\n".join(out)


def _held(name: str) -> str:
    """``V`` (the whole tile; its smem then only feeds the copy) or ``K@dq`` (the B fragments
    of GEMM group dq; the tile stays in smem for its other readers)."""
    tile, _, group = name.partition("@")
    return f"{tile} (B fragments of grid {group}; also in smem)" if group else tile


def format_trip_floors(work, cards) -> str:
    """One bwd_main q-tile trip's floors on each card (:func:`frost.sched.tiles.trip_floors`):
    what the plan's MMAs and shared-memory reads need at least, and which is higher."""
    from frost.sched.tiles import trip_floors

    rows = []
    for c in cards:
        f = trip_floors(work, c)
        rows.append([c.name, f"{c.mma_tflops:g}", round(f["hmma"]), round(f["smem"]),
                     f["bound"]])
    return "\n".join([
        f"== bwd_main trip floors: {work.flops / 1e6:.2f} MFLOP and {work.smem / 1024:.0f} KiB "
        "of ldmatrix reads a q-tile trip (vendor rates; lab/LOG.md v46) ==",
        table(["card", "mma.sync TFLOP/s", "MMA clocks", "smem clocks", "bound by"], rows)])


def format_gemm_grid(plan: Plan, shape: tuple[int, int, int], sms: int, card=None) -> str:
    """gemm_rowsum's ``plan`` (the model's pick for ``shape``) beside the default plan, on
    ``sms`` SMs at ``card``'s rates (default: the model's own): CTAs, waves (CTAs per SM), the
    rounds they take, the work edge tiles and uneven K shares add, and the model's cost
    relative to the pick's (:func:`frost.sched.gemm_rowsum.shaped_cost`: a split-K plan's
    workspace included)."""
    from frost.sched.gemm_rowsum import plan_gemm_rowsum, shaped_cost, tile_label
    from frost.sched.tiles import CostModel

    default = plan_gemm_rowsum(plan.params["arch"], plan.params["dtype"])
    dims, model = dict(zip("MNK", shape)), CostModel()
    if card is not None:
        model = model.on_card(card)
    out = [f"grid for M={shape[0]} N={shape[1]} K={shape[2]} on {sms} SMs"
           + (f" at {card.name}'s rates" if card is not None else "") + " (frost.sched.rank)",
           f"  {'plan':<8} {'tile':<24} {'CTAs':>6} {'waves':>6} {'rounds':>6} {'edge':>6} "
           f"{'cost':>6}"]
    base = shaped_cost(plan, dims, sms, model).cost
    for label, p in (("picked", plan), ("default", default)):
        s = shaped_cost(p, dims, sms, model)
        out.append(f"  {label:<8} {tile_label(p):<24} {s.grid.ctas:>6} {s.grid.waves:>6.2f} "
                   f"{s.grid.makespan:>6.0f} {s.edge:>6.1%} {s.cost / base:>6.3f}")
    return "\n".join(out)
