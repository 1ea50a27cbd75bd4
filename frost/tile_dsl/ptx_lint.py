"""A PTX check for warp-collective instructions inside lane-divergent branches (no GPU needed).

Several PTX instructions are *warp-collective*: every lane their member mask names (the whole
warp for the ``.aligned`` forms) must execute them together. Issued from a branch that only
some lanes of a warp take, they hang or are undefined. CuTe DSL hides some of them inside
helpers: ``cute.copy`` of a TMA *reduce* wraps the instruction in ``elect.sync`` with a full
mask, so calling it under ``if tidx == 0:`` hangs the kernel (bench/RESULTS.md v8: found on
the H200 after the compile-only tests had passed). This check finds that class of bug in the
compiled PTX::

    findings = divergent_collectives(report.ptx)   # [] when clean; CompileReport.lint()

How (flow-insensitive, conservative where it must guess):

1. *lane-varying* registers: seeded by ``%tid.*`` / ``%laneid`` and by ``elect.sync``'s
   leader predicate; propagated through every instruction that reads one, except those whose
   result is the same on every lane of a warp: ``shfl.sync.idx`` (a broadcast, what
   ``cute.arch.make_warp_uniform`` emits), ``vote``/``redux``/``match``, and right shifts or
   divisions of a thread index by 32 or more (the warp index);
2. a branch ``@%p bra L`` on a lane-varying predicate opens a *divergent region*: the lines
   between it and the label L when L comes later (the if-then shape NVVM emits for a scalar
   ``if``);
3. a finding is a collective inside a divergent region: ``elect.sync``, ``shfl.sync`` /
   ``vote.sync`` / ``match.sync`` / ``redux.sync`` with a full mask, ``bar.sync`` /
   ``barrier.sync`` / ``bar.warp.sync``, ``mma.sync``, ``ldmatrix``, ``stmatrix``,
   ``wgmma``.

A branch on ``tidx < 32`` is warp-uniform in fact but lane-varying here (it compares a thread
index): write ``cute.arch.make_warp_uniform(tidx // 32) == 0`` instead, which also tells
ptxas the branch is uniform. The pure-Python model of the check is this module itself; its
tests run it on hand-written PTX and on every frost kernel.
"""

from __future__ import annotations

import dataclasses
import re

_REG = re.compile(r"%[A-Za-z_][\w.]*")
_LABEL = re.compile(r"^\s*(\$?[\w$]+):\s*$")
_BRANCH = re.compile(r"^\s*@(!?)(%\w+)\s+bra(?:\.uni)?\s+(\$?[\w$]+)\s*;")
_SEEDS = ("%tid.", "%laneid")

# instructions whose result is the same on every lane of the warp
_UNIFORM_OPS = ("shfl.sync.idx", "vote.", "redux.", "match.", "activemask")
# collective instructions: every lane of the (full) mask must execute them together
_COLLECTIVE = re.compile(
    r"^\s*(?:@!?%\w+\s+)?("
    r"elect\.sync|bar\.sync|bar\.warp\.sync|barrier\.sync|barrier\.cta\.sync|mma\.sync|"
    r"ldmatrix|stmatrix|wgmma|shfl\.sync|vote\.sync|match\.sync|redux\.sync)\b")
_PARTIAL_MASK_OK = ("shfl.sync", "vote.sync", "match.sync", "redux.sync")


@dataclasses.dataclass(frozen=True)
class Finding:
    """A collective instruction at PTX line ``line`` (1-based) under the lane-divergent branch
    at line ``branch_line``."""

    line: int
    instruction: str
    branch_line: int
    branch: str

    def __str__(self) -> str:
        return (f"PTX line {self.line}: {self.instruction!r} runs under the lane-divergent "
                f"branch at line {self.branch_line} ({self.branch!r}); a warp-collective "
                f"instruction needs every lane of its warp")


def _instructions(lines):
    for i, raw in enumerate(lines):
        text = raw.split("//", 1)[0].strip()
        if text and not text.startswith((".", "{", "}", "$")) and not _LABEL.match(text):
            yield i, text


_NO_DEST = ("st.", "st ", "red.", "bar.", "bar ", "barrier.", "cp.", "prefetch", "fence", "bra",
            "ret", "stmatrix", "griddepcontrol", "membar", "trap", "exit")


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


def _operands(text: str):
    """(destination registers, source registers) of one instruction: PTX writes its first
    operand (``a|b``: both, as ``setp`` and ``elect.sync`` do), except for stores, barriers and
    other instructions without a result, and where the first operand is an address ``[...]``."""
    body = re.sub(r"^@!?%\w+\s+", "", text).rstrip(";").strip()
    parts = body.split(None, 1)
    if len(parts) < 2:
        return [], []
    op, ops = parts[0], _split_operands(parts[1])
    if op.startswith(_NO_DEST) or ops[0].startswith("["):
        return [], _REG.findall(parts[1])
    return _REG.findall(ops[0]), _REG.findall(",".join(ops[1:]))


def _is_warp_index(op: str, text: str) -> bool:
    """``shr`` by >= 5 bits or ``div`` by a multiple of 32: a thread index becomes a warp's."""
    m = re.search(r",\s*(\d+)\s*;?$", text)
    if not m:
        return False
    k = int(m.group(1))
    return (op.startswith("shr") and k >= 5) or (op.startswith("div") and k and k % 32 == 0)


_FUNC = re.compile(r"^\s*(?:\.visible\s+|\.weak\s+|\.extern\s+)*\.(?:entry|func)\b")


def _functions(lines: list[str]) -> list[tuple[int, int]]:
    """(first, last) line index of every function in the PTX (registers are per function)."""
    starts = [i for i, raw in enumerate(lines) if _FUNC.match(raw)] or [0]
    return [(a, b - 1) for a, b in zip(starts, starts[1:] + [len(lines)])]


def _tid_compare_is_uniform(text: str, tid_like: set[str]) -> bool:
    """``setp.{lt,ge} t, 32k`` (or ``le,gt`` against 32k - 1) on a thread index plus a multiple
    of 32: the same answer on every lane of a warp."""
    m = re.match(r"setp\.(lt|ge|lo|hs|le|gt|ls|hi)\.\w+\s+%\w+\s*,\s*(%\w+)\s*,\s*(-?\d+)\s*;",
                 text)
    if not m or m.group(2) not in tid_like:
        return False
    k = int(m.group(3))
    return k % 32 == 0 if m.group(1) in ("lt", "ge", "lo", "hs") else (k + 1) % 32 == 0


def _lane_varying(insts) -> set[str]:
    varying: set[str] = set()
    tid_like: set[str] = set()  # thread index + a multiple of 32 (its lane is the low 5 bits)
    changed = True
    while changed:
        changed = False
        for _, text in insts:
            op = re.sub(r"^@!?%\w+\s+", "", text).split(None, 1)[0]
            dst, src = _operands(text)
            if not dst:
                continue
            if re.search(r"%tid\.x\b", text) and op.startswith("mov"):
                if dst[0] not in tid_like:
                    tid_like.add(dst[0])
                    changed = True
            elif (op.startswith(("add.", "sub.")) and src and src[0] in tid_like
                  and re.search(r",\s*(-?\d+)\s*;$", text)
                  and int(re.search(r",\s*(-?\d+)\s*;$", text).group(1)) % 32 == 0):
                if dst[0] not in tid_like:
                    tid_like.add(dst[0])
                    changed = True
            if op.startswith("elect.sync"):
                new = set(dst[1:])  # the leader predicate; the lane id is the leader's
            elif any(s in text for s in _SEEDS):
                new = set(dst)
            elif op.startswith(_UNIFORM_OPS) or _is_warp_index(op, text):
                new = set()
            elif op.startswith("setp") and _tid_compare_is_uniform(text, tid_like):
                new = set()
            elif any(s in varying for s in src):
                new = set(dst)
            else:
                new = set()
            if not new <= varying:
                varying |= new
                changed = True
    return varying


def lane_varying_registers(ptx: str) -> set[str]:
    """Registers (and predicates) whose value can differ between the lanes of one warp, as
    ``"<function index>:<register>"`` (PTX registers are local to their function)."""
    lines = ptx.splitlines()
    out = set()
    for f, (a, b) in enumerate(_functions(lines)):
        insts = [(i, t) for i, t in _instructions(lines) if a <= i <= b]
        out |= {f"{f}:{r}" for r in _lane_varying(insts)}
    return out


def divergent_collectives(ptx: str) -> list[Finding]:
    """Every warp-collective instruction inside a forward branch region that a lane-varying
    predicate guards (see the module doc); [] for a clean kernel."""
    lines = ptx.splitlines()
    labels = {m.group(1): i for i, raw in enumerate(lines) if (m := _LABEL.match(raw))}
    found = []
    for a, b in _functions(lines):
        insts = [(i, t) for i, t in _instructions(lines) if a <= i <= b]
        varying = _lane_varying(insts)
        regions = []  # (start, end, branch text)
        for i, text in insts:
            m = _BRANCH.match(text)
            if m and m.group(2) in varying and b >= labels.get(m.group(3), -1) > i:
                regions.append((i, labels[m.group(3)], text))
        for i, text in insts:
            m = _COLLECTIVE.match(text)
            if not m:
                continue
            if m.group(1) in _PARTIAL_MASK_OK and not re.search(r",\s*(-1|0xffffffff)\s*;", text):
                continue  # an explicit partial member mask: the author chose its lanes
            for start, end, bt in regions:
                if start < i < end:
                    found.append(Finding(i + 1, text, start + 1, bt))
                    break
    return found
