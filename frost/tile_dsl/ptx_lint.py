"""A PTX check for warp-collective instructions inside lane-divergent code (no GPU needed).

Several PTX instructions are *warp-collective*: every lane their member mask names (the whole
warp for the ``.aligned`` forms) must execute them together. Issued where only some lanes of a
warp are, they hang or are undefined. CuTe DSL hides some of them inside helpers: ``cute.copy``
of a TMA *reduce* wraps the instruction in ``elect.sync`` with a full mask, so calling it under
``if tidx == 0:`` hangs the kernel (lab/LOG.md v8: found on the H200 after the
compile-only tests had passed). This check finds that class of bug in the compiled PTX::

    findings = divergent_collectives(report.ptx)   # [] when clean; CompileReport.lint()

How, per PTX function (registers are function-local; :mod:`frost.tile_dsl.ptx_parse` reads the
text), flow-insensitively:

1. *lane-varying* values: seeded by ``%tid.*``, ``%laneid``, ``%lanemask_*``, ``elect.sync``'s
   leader predicate and ``atom`` results; propagated through every instruction that reads one
   (the guard predicate of a predicated instruction counts as read), and through local memory:
   each lane has its own copy, so once any store to local memory (``st.local``, or a generic
   store through an address derived from the ``__local_depot``) writes a lane-varying value,
   every load from local memory is lane-varying. A result is the same on
   every lane of a warp, and stops the propagation, for ``vote``/``redux``/``match.all``, for
   ``shfl.sync.idx`` from a uniform source lane with clamp 31 (a broadcast: what
   ``cute.arch.make_warp_uniform`` emits), and for the warp index of a thread index (``%tid.x``
   plus multiples of 32): a right shift by ≥ 5, a division by a multiple of 32, an ``and``
   with a mask whose low 5 bits are clear, a ``bfe`` from bit ≥ 5, and ``lt/ge`` compares
   against multiples of 32 (``le/gt`` against 32k − 1);
2. *divergent code*: for each branch on a lane-varying predicate (or an indirect branch,
   ``brx.idx``, on a lane-varying index: its ``.branchtargets`` are its successors), every
   basic block control reaches from it before its immediate post-dominator, where the lanes
   meet again (networkx's dominator tree of the reversed control-flow graph); for a loop whose
   exit is lane-varying that is the whole body;
3. a *finding*: a collective there, or one guarded by a lane-varying predicate. Collectives are
   every ``.aligned`` instruction (``mma.sync``, ``ldmatrix``, ``stmatrix``, ``movmatrix``,
   ``wgmma``, ``wmma``, ``setmaxnreg``, ``barrier.sync.aligned``), ``bar.sync`` / ``bar.arrive``
   / ``bar.red`` (aligned by definition), and ``elect.sync``, ``bar.warp.sync``, ``shfl.sync``,
   ``vote.sync``, ``match.sync``, ``redux.sync`` with a full member mask. ``barrier.sync``
   without ``.aligned`` is allowed in divergent code and is not reported.

Known limits: misses a lane dependence carried by a register that the PTX redefines (NVVM's own
output is in SSA form; registers that inline asm blocks declare are renamed per block); local
memory is one location (a lane-varying store anywhere taints every local load); calls
(``call``) are not followed into their callee.
Blocks the compiler lays out between a branch and its label but that control enters only from
elsewhere, and out-of-line blocks that jump back, are placed by the graph, not by their lines.
``compile_for(..., lint=False)`` returns the report anyway. ``tidx < 32`` on an index that is
not ``%tid.x`` plus a multiple of 32 counts as lane-varying: branch on
``cute.arch.make_warp_uniform(tidx // 32)`` instead, which also tells ptxas the branch is
uniform. The tests run the check on hand-written PTX and on every frost kernel.
"""

from __future__ import annotations

import dataclasses

from frost.tile_dsl.ptx_parse import BRX, REG, Inst, functions, parse

_SEEDS = ("%tid.", "%laneid", "%lanemask_")
_ST = ("st.", "st ")
# collectives that take a member mask (their last operand): only a full mask is checked
_MASKED = ("elect.sync", "bar.warp.sync", "shfl.sync", "vote.sync", "match.sync", "redux.sync")
_FULL_MASK = ("-1", "0xffffffff", "4294967295")


@dataclasses.dataclass(frozen=True)
class Finding:
    """A collective instruction at PTX line ``line`` (1-based) in code that the lane-varying
    branch (or guard) at line ``branch_line`` makes divergent."""

    line: int
    instruction: str
    branch_line: int
    branch: str

    def __str__(self) -> str:
        return (f"PTX line {self.line}: {self.instruction!r} runs under the lane-divergent "
                f"branch at line {self.branch_line} ({self.branch!r}); a warp-collective "
                f"instruction needs every lane of its warp")


def _warp_index_of(inst: Inst, tid_like: set[str]) -> bool:
    """The result is a function of the warp index only (same on every lane of a warp)."""
    if len(inst.ops) < 3 or inst.ops[1] not in tid_like:
        return False
    op, k = inst.op, inst.imm(2)
    if op.startswith("bfe"):
        return k is not None and k >= 5
    if k is None:
        return False
    if op.startswith("shr"):
        return k >= 5
    if op.startswith("div"):
        return k != 0 and k % 32 == 0
    if op.startswith("and"):
        return k & 31 == 0
    if op.startswith("setp"):
        cmp = op.split(".")[1]
        if cmp in ("lt", "ge", "lo", "hs"):
            return k % 32 == 0
        if cmp in ("le", "gt", "ls", "hi"):
            return (k + 1) % 32 == 0
    return False


def _uniform_result(inst: Inst, varying: set[str], tid_like: set[str]) -> bool:
    op = inst.op
    if op.startswith(("vote.", "redux.", "match.all", "activemask")):
        return True
    if op.startswith("shfl.sync.idx"):
        lane, clamp = (inst.ops[2], inst.imm(3)) if len(inst.ops) > 3 else ("", None)
        return lane not in varying and clamp == 31 and inst.guard not in varying
    return _warp_index_of(inst, tid_like) and inst.guard not in varying


def _local_pointers(insts: list[Inst]) -> set[str]:
    """Registers that may hold an address in local memory: from ``__local_depot`` (the frame
    NVVM spills and keeps local arrays in) through any instruction that computes with one
    (``mov``, ``cvta.local``, ``add``, ``mad``, ``selp``, ``cvt``, ...), but not through a load,
    which reads memory instead."""
    ptrs: set[str] = set()
    changed = True
    while changed:
        changed = False
        for inst in insts:
            dst = inst.dst
            if not dst or dst[0] in ptrs or inst.op.startswith(("ld", "atom", "shfl", "vote")):
                continue
            if "__local_depot" in inst.text or any(r in ptrs for r in inst.src):
                ptrs.add(dst[0])
                changed = True
    return ptrs


def _local_access(inst: Inst, ptrs: set[str]) -> bool:
    """A load or store of local memory: ``.local``, or generic through a local pointer."""
    if ".local" in inst.op:
        return True
    if not inst.op.startswith(("ld", "st")) or ".shared" in inst.op or ".global" in inst.op \
            or ".param" in inst.op or ".const" in inst.op:
        return False
    addr = next((o for o in inst.ops if o.startswith("[")), "")
    return any(r in ptrs for r in REG.findall(addr))


def _lane_varying(insts: list[Inst]) -> set[str]:
    varying: set[str] = set()
    tid_like: set[str] = set()  # %tid.x plus a multiple of 32 (its low 5 bits are the lane)
    ptrs = _local_pointers(insts)
    local_loads = [i for i in insts if i.op.startswith("ld") and _local_access(i, ptrs)]
    local_stores = [i for i in insts if i.op.startswith(_ST) and _local_access(i, ptrs)]
    tainted = False  # some lane-varying value went to local memory: every local load varies
    changed = True
    while changed:
        changed = False
        if not tainted and any(r in varying for i in local_stores for r in i.src):
            tainted = True
            for i in local_loads:
                varying |= set(i.dst)
            changed = True
        for inst in insts:
            dst = inst.dst
            if not dst:
                continue
            if inst.op.startswith("mov") and inst.ops[1:2] == ("%tid.x",):
                grow = {dst[0]} - tid_like
            elif (inst.op.startswith(("add.", "sub.")) and inst.ops[1:2] and inst.ops[1] in
                  tid_like and inst.imm(2) is not None and inst.imm(2) % 32 == 0):
                grow = {dst[0]} - tid_like
            else:
                grow = set()
            if grow:
                tid_like |= grow
                changed = True
            if inst.op.startswith("elect.sync"):
                new = set(REG.findall(inst.ops[0].split("|")[-1]))  # the leader predicate
            elif inst.op.startswith("atom") or any(s in inst.text for s in _SEEDS):
                new = set(dst)
            elif _uniform_result(inst, varying, tid_like):
                new = set()
            elif any(s in varying for s in inst.src):
                new = set(dst)
            else:
                new = set()
            if not new <= varying:
                varying |= new
                changed = True
    return varying


def lane_varying_registers(ptx: str) -> set[str]:
    """Registers (and predicates) whose value can differ between the lanes of one warp, as
    ``"<function index>:<register>"``."""
    lines = ptx.splitlines()
    out = set()
    for f, (a, b) in enumerate(functions(lines)):
        out |= {f"{f}:{r}" for r in _lane_varying(parse(lines, a, b)[0])}
    return out


def _collective(inst: Inst, consts: dict[str, int]) -> bool:
    op = inst.op
    if op.startswith(_MASKED):
        mask = inst.ops[-1].lower() if inst.ops else ""
        value = consts.get(mask)
        return mask in _FULL_MASK or (value is not None and value & 0xFFFFFFFF == 0xFFFFFFFF)
    if op.startswith("barrier.") and ".aligned" not in op:
        return False  # the non-aligned barrier may be reached by any subset of a warp
    return ".aligned" in op or (op.startswith("bar.") and not op.startswith("bar.warp"))


_ENDS = ("ret", "exit", "trap")  # no fall-through; ret/exit go to EXIT, trap to TRAP
EXIT = -1  # the function's exit node in the control-flow graph
TRAP = -2  # where a trap goes: the grid aborts, so the lanes that trap never rejoin the others


def _end(inst: Inst) -> str | None:
    """"ret", "exit" or "trap" for an instruction that ends its path (``ret.uni`` too)."""
    op = inst.op.split(".")[0]
    return op if op in _ENDS else None


def _cfg(insts: list[Inst], targets: list[int | None]):
    """(graph, block of each instruction) of one function: basic blocks as nodes, ``EXIT`` after
    every ``ret``/``exit``, a branch to a label the function does not define (none in NVVM's
    output), and the fall-through past the last instruction; ``TRAP`` after a ``trap``."""
    import networkx as nx

    n = len(insts)
    ends = {k for k, inst in enumerate(insts) if targets[k] is not None or _end(inst)}
    leaders = sorted({0, *(t for ts in targets if ts is not None for t in ts),
                      *(k + 1 for k in ends)} & set(range(n)))
    block = [0] * n
    for b, (k0, k1) in enumerate(zip(leaders, leaders[1:] + [n])):
        block[k0:k1] = [b] * (k1 - k0)
    g = nx.DiGraph()
    g.add_nodes_from(range(len(leaders)))
    g.add_nodes_from((EXIT, TRAP))
    for b in range(len(leaders)):
        k = (leaders[b + 1] if b + 1 < len(leaders) else n) - 1
        inst, t, end = insts[k], targets[k], _end(insts[k])
        for x in t or ():
            g.add_edge(b, block[x] if x < n else EXIT)
        if t is None and end:
            g.add_edge(b, TRAP if end == "trap" else EXIT)
        if inst.guard is None and (end or t is not None):
            continue  # no fall-through
        g.add_edge(b, block[k + 1] if k + 1 < n else EXIT)
    return g, block


def _regions(insts: list[Inst], targets: list[int | None], varying: set[str]):
    """(instruction indices, branch): the code each lane-varying branch makes divergent, i.e.
    every block control reaches from the branch before the branch's immediate post-dominator,
    where the warp's lanes meet again (a loop with a lane-varying exit: its whole body). Lanes
    that can reach an endless loop may never meet the others: then all the branch reaches
    counts. Paths into a ``trap`` end there (the grid aborts)."""
    import networkx as nx

    if not insts:
        return []
    g, block = _cfg(insts, targets)
    ipdom = nx.immediate_dominators(g.reverse(copy=False), EXIT)
    ends = nx.ancestors(g, EXIT) | nx.ancestors(g, TRAP) | {EXIT, TRAP}  # can finish
    members: dict[int, list[int]] = {}
    for k, b in enumerate(block):
        members.setdefault(b, []).append(k)
    out = []
    for k, inst in enumerate(insts):
        brx = BRX.match(inst.text)
        if targets[k] is None or (inst.guard not in varying and
                                  not (brx and brx.group(3) in varying)):
            continue
        stop = ipdom.get(block[k]) if nx.descendants(g, block[k]) <= ends else None
        seen: set[int] = set()
        stack = list(g.successors(block[k]))
        while stack:
            b = stack.pop()
            if b in seen or b in (stop, EXIT, TRAP):
                continue
            seen.add(b)
            stack.extend(g.successors(b))
        out.append(({k for b in seen for k in members[b]}, inst))
    return out


def divergent_collectives(ptx: str) -> list[Finding]:
    """Every warp-collective instruction in lane-divergent code (see the module doc); [] for
    a clean kernel."""
    lines = ptx.splitlines()
    found = []
    for a, b in functions(lines):
        insts, targets = parse(lines, a, b)
        varying = _lane_varying(insts)
        consts = {inst.dst[0]: inst.imm(1) for inst in insts
                  if inst.op.startswith("mov") and inst.dst and inst.imm(1) is not None}
        regions = _regions(insts, targets, varying)
        for k, inst in enumerate(insts):
            if not _collective(inst, consts):
                continue
            if inst.guard in varying:
                found.append(Finding(inst.line + 1, inst.text, inst.line + 1, inst.text))
                continue
            for region, br in regions:
                if k in region:
                    found.append(Finding(inst.line + 1, inst.text, br.line + 1, br.text))
                    break
    return found
