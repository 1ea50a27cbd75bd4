"""A PTX check for warp-collective instructions inside lane-divergent code (no GPU needed).

Several PTX instructions are *warp-collective*: every lane their member mask names (the whole
warp for the ``.aligned`` forms) must execute them together. Issued where only some lanes of a
warp are, they hang or are undefined. CuTe DSL hides some of them inside helpers: ``cute.copy``
of a TMA *reduce* wraps the instruction in ``elect.sync`` with a full mask, so calling it under
``if tidx == 0:`` hangs the kernel (bench/RESULTS.md v8: found on the H200 after the
compile-only tests had passed). This check finds that class of bug in the compiled PTX::

    findings = divergent_collectives(report.ptx)   # [] when clean; CompileReport.lint()

How, per PTX function (registers are function-local), flow-insensitively:

1. *lane-varying* values: seeded by ``%tid.*``, ``%laneid``, ``%lanemask_*``, ``elect.sync``'s
   leader predicate and ``atom`` results; propagated through every instruction that reads one
   (the guard predicate of a predicated instruction counts as read). A result is the same on
   every lane of a warp, and stops the propagation, for ``vote``/``redux``/``match.all``, for
   ``shfl.sync.idx`` from a uniform source lane with clamp 31 (a broadcast: what
   ``cute.arch.make_warp_uniform`` emits), and for the warp index of a thread index (``%tid.x``
   plus multiples of 32): a right shift by ≥ 5, a division by a multiple of 32, an ``and``
   with a mask whose low 5 bits are clear, a ``bfe`` from bit ≥ 5, and ``lt/ge`` compares
   against multiples of 32 (``le/gt`` against 32k − 1);
2. *divergent code*: the then-block of a forward branch on a lane-varying predicate (up to its
   label), its else-block (from the label to the then-block's closing ``bra``), and the body of
   a loop whose backward branch is lane-varying;
3. a *finding*: a collective there, or one guarded by a lane-varying predicate. Collectives are
   every ``.aligned`` instruction (``mma.sync``, ``ldmatrix``, ``stmatrix``, ``movmatrix``,
   ``wgmma``, ``wmma``, ``setmaxnreg``, ``barrier.sync.aligned``), ``bar.sync`` / ``bar.arrive``
   / ``bar.red`` (aligned by definition), and ``elect.sync``, ``bar.warp.sync``, ``shfl.sync``,
   ``vote.sync``, ``match.sync``, ``redux.sync`` with a full member mask. ``barrier.sync``
   without ``.aligned`` is allowed in divergent code and is not reported.

Known limits: misses a lane dependence that round-trips through local memory, and a register
that the PTX redefines (NVVM's output is in SSA form, so this does not arise there);
reports a false finding for a collective that lanes reach again by a jump back from code
placed out of line (a cold block after the function's tail). Code that the compiler lays out
between a branch and its label but that control enters only from elsewhere (another path's
blocks) is not counted as divergent: the regions are what control reaches inside them. ``compile_for(..., lint=False)``
returns the report anyway. ``tidx < 32`` on an index that is not ``%tid.x`` plus a multiple of
32 counts as lane-varying: branch on ``cute.arch.make_warp_uniform(tidx // 32)`` instead,
which also tells ptxas the branch is uniform. The tests run the check on hand-written PTX and
on every frost kernel.
"""

from __future__ import annotations

import dataclasses
import re

_REG = re.compile(r"%[A-Za-z_][\w.]*")
_LABEL = re.compile(r"^(\$?[\w$]+):$")
_GUARD = re.compile(r"^@(!?)(%\w+)\s+")
_BRANCH = re.compile(r"^(?:@(!?)(%\w+)\s+)?bra(?:\.uni)?\s+(\$?[\w$]+)$")
_FUNC = re.compile(r"^\s*(?:\.visible\s+|\.weak\s+|\.extern\s+)*\.(?:entry|func)\b")
_SEEDS = ("%tid.", "%laneid", "%lanemask_")
_NO_DEST = ("st.", "st ", "red.", "bar.", "bar ", "barrier.", "cp.", "prefetch", "fence", "bra",
            "ret", "stmatrix", "griddepcontrol", "membar", "trap", "exit", "setmaxnreg")
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


def _clean(raw: str) -> str:
    return raw.split("//", 1)[0].strip()


def _split_operands(rest: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for ch in rest:
        depth += ch in "{["
        depth -= ch in "}]"
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return out + ([cur.strip()] if cur.strip() else [])


@dataclasses.dataclass(frozen=True)
class _Inst:
    line: int  # 0-based
    text: str
    op: str
    ops: tuple[str, ...]
    guard: str | None

    @property
    def dst(self) -> list[str]:
        """Registers written: the first operand (``a|b``: both), except for instructions
        without a result and where the first operand is an address ``[...]``."""
        if not self.ops or self.op.startswith(_NO_DEST) or self.ops[0].startswith("["):
            return []
        return _REG.findall(self.ops[0])

    @property
    def src(self) -> list[str]:
        read = self.ops if not self.dst else self.ops[1:]
        return _REG.findall(",".join(read)) + ([self.guard] if self.guard else [])

    def imm(self, k: int) -> int | None:
        """Operand k as an integer immediate, else None."""
        try:
            return int(self.ops[k], 0)
        except (IndexError, ValueError):
            return None


def _parse(lines: list[str], a: int, b: int) -> tuple[list[_Inst], dict[str, int]]:
    insts, labels = [], {}
    for i in range(a, b + 1):
        text = _clean(lines[i]).rstrip(";").strip()
        if not text or text.startswith((".", "{", "}")):
            continue
        if m := _LABEL.match(text):
            labels[m.group(1)] = i
            continue
        g = _GUARD.match(text)
        body = text[g.end():] if g else text
        op, _, rest = body.partition(" ")
        insts.append(_Inst(i, text, op, tuple(_split_operands(rest.strip())),
                           g.group(2) if g else None))
    return insts, labels


def _functions(lines: list[str]) -> list[tuple[int, int]]:
    starts = [i for i, raw in enumerate(lines) if _FUNC.match(raw)] or [0]
    return [(a, b - 1) for a, b in zip(starts, starts[1:] + [len(lines)])]


def _warp_index_of(inst: _Inst, tid_like: set[str]) -> bool:
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


def _uniform_result(inst: _Inst, varying: set[str], tid_like: set[str]) -> bool:
    op = inst.op
    if op.startswith(("vote.", "redux.", "match.all", "activemask")):
        return True
    if op.startswith("shfl.sync.idx"):
        lane, clamp = (inst.ops[2], inst.imm(3)) if len(inst.ops) > 3 else ("", None)
        return lane not in varying and clamp == 31 and inst.guard not in varying
    return _warp_index_of(inst, tid_like) and inst.guard not in varying


def _lane_varying(insts: list[_Inst]) -> set[str]:
    varying: set[str] = set()
    tid_like: set[str] = set()  # %tid.x plus a multiple of 32 (its low 5 bits are the lane)
    changed = True
    while changed:
        changed = False
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
                new = set(_REG.findall(inst.ops[0].split("|")[-1]))  # the leader predicate
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
    for f, (a, b) in enumerate(_functions(lines)):
        out |= {f"{f}:{r}" for r in _lane_varying(_parse(lines, a, b)[0])}
    return out


def _collective(inst: _Inst, consts: dict[str, int]) -> bool:
    op = inst.op
    if op.startswith(_MASKED):
        mask = inst.ops[-1].lower() if inst.ops else ""
        value = consts.get(mask)
        return mask in _FULL_MASK or (value is not None and value & 0xFFFFFFFF == 0xFFFFFFFF)
    if op.startswith("barrier.") and ".aligned" not in op:
        return False  # the non-aligned barrier may be reached by any subset of a warp
    return ".aligned" in op or (op.startswith("bar.") and not op.startswith("bar.warp"))


def _reachable(insts: list[_Inst], labels: dict[str, int], first: int, last: int) -> set[int]:
    """Lines of the instructions in lines [first, last] that control reaches from the first of
    them without leaving the range (fall-through, and branches to labels inside it). Code that
    the compiler laid out inside the range but enters only from elsewhere (another path's
    blocks placed between a branch and its label) is not in it."""
    ks = [k for k, inst in enumerate(insts) if first <= inst.line <= last]
    if not ks:
        return set()
    at = {insts[k].line: k for k in ks}
    lines = sorted(at)

    def entry(line: int):  # the first instruction at or after a label's line, if in range
        nxt = [x for x in lines if x >= line]
        return at[nxt[0]] if nxt else None

    seen, stack = set(), [ks[0]]
    while stack:
        k = stack.pop()
        if k is None or k in seen or not first <= insts[k].line <= last:
            continue
        seen.add(k)
        inst = insts[k]
        m = _BRANCH.match(inst.text)
        if m and m.group(3) in labels and first <= labels[m.group(3)] <= last:
            stack.append(entry(labels[m.group(3)]))
        if (m and m.group(2) is None) or (inst.guard is None and inst.op in ("ret", "exit")):
            continue  # no fall-through
        stack.append(k + 1 if k + 1 < len(insts) else None)
    return {insts[k].line for k in seen}


def _regions(insts: list[_Inst], labels: dict[str, int], varying: set[str]):
    """(lines, branch): the code each lane-varying branch makes divergent."""
    by_line = {inst.line: k for k, inst in enumerate(insts)}
    out = []
    for k, inst in enumerate(insts):
        m = _BRANCH.match(inst.text)
        if not m or m.group(2) not in varying or m.group(3) not in labels:
            continue
        target = labels[m.group(3)]
        if target < inst.line:  # a loop whose lanes leave at different trips
            out.append((set(range(target, inst.line + 1)), inst))
            continue
        then = _reachable(insts, labels, inst.line + 1, target - 1)
        out.append((then, inst))
        # the else-block: from the label to where the then-block's closing bra goes
        last = insts[by_line[max(then)]] if then else None
        e = _BRANCH.match(last.text) if last is not None else None
        if e and e.group(2) is None and labels.get(e.group(3), -1) > target:
            out.append((_reachable(insts, labels, target + 1, labels[e.group(3)] - 1), inst))
    return out


def divergent_collectives(ptx: str) -> list[Finding]:
    """Every warp-collective instruction in lane-divergent code (see the module doc); [] for
    a clean kernel."""
    lines = ptx.splitlines()
    found = []
    for a, b in _functions(lines):
        insts, labels = _parse(lines, a, b)
        varying = _lane_varying(insts)
        consts = {inst.dst[0]: inst.imm(1) for inst in insts
                  if inst.op.startswith("mov") and inst.dst and inst.imm(1) is not None}
        regions = _regions(insts, labels, varying)
        for inst in insts:
            if not _collective(inst, consts):
                continue
            if inst.guard in varying:
                found.append(Finding(inst.line + 1, inst.text, inst.line + 1, inst.text))
                continue
            for lines_in, br in regions:
                if inst.line in lines_in:
                    found.append(Finding(inst.line + 1, inst.text, br.line + 1, br.text))
                    break
    return found
