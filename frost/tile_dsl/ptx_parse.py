"""PTX text as instructions, per function, for :mod:`frost.tile_dsl.ptx_lint` (no GPU needed).

:func:`functions` finds each ``.entry`` / ``.func``'s line range; :func:`parse` reads one into
:class:`Inst` records (operation, operands, guard predicate; the registers each writes and
reads) and, for each branch, the instructions it may go to: one for ``bra``, every
``.branchtargets`` entry of its table for ``brx.idx``. Labels are scoped by braces (inline asm
blocks reuse names such as ``DONE``) and registers a nested block declares are renamed per
block, so two asm blocks' ``%p`` are two registers.
"""

from __future__ import annotations

import dataclasses
import re

REG = re.compile(r"%[A-Za-z_][\w.]*")
_LABEL = re.compile(r"^(\$?[\w$]+):")
_GUARD = re.compile(r"^@(!?)(%?[\w.]+)\s+")  # inline asm may name P1, not %p1
_BRANCH = re.compile(r"^(?:@(!?)(%?[\w.]+)\s+)?bra(?:\.uni)?\s+(\$?[\w$]+)$")
# an indirect branch: brx.idx index, table (a label declared ``.branchtargets L1, L2, ...``)
BRX = re.compile(r"^(?:@(!?)(%?[\w.]+)\s+)?brx\.idx(?:\.uni)?\s+"
                 r"(%?[\w.]+)\s*,\s*(\$?[\w$]+)$")
_FUNC = re.compile(r"^\s*(?:\.visible\s+|\.weak\s+|\.extern\s+)*\.(?:entry|func)\b")
_NO_DEST = ("st.", "st ", "red.", "bar.", "bar ", "barrier.", "cp.", "prefetch", "fence", "bra",
            "brx", "ret", "stmatrix", "griddepcontrol", "membar", "trap", "exit", "setmaxnreg")


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
class Inst:
    """One PTX statement: its line (0-based), text (guard included, registers of nested blocks
    renamed), operation, operands and guard predicate."""

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
        return REG.findall(self.ops[0])

    @property
    def src(self) -> list[str]:
        read = self.ops if not self.dst else self.ops[1:]
        return REG.findall(",".join(read)) + ([self.guard] if self.guard else [])

    def imm(self, k: int) -> int | None:
        """Operand k as an integer immediate, else None."""
        try:
            return int(self.ops[k], 0)
        except (IndexError, ValueError):
            return None


def _statements(text: str):
    """The statements of one cleaned PTX line, in order: ``"{"`` / ``"}"`` for a scope's ends
    (inline asm blocks, one line or several), else a statement without its ``;``. Braces of a
    vector operand (``{%r1, %r2}``) stay inside their statement."""
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace() or c == ";":
            i += 1
        elif c in "{}":
            yield c
            i += 1
        else:
            depth, j = 0, i
            while j < n and not (text[j] in ";}" and depth == 0):
                depth += text[j] in "{["
                depth -= text[j] in "}]"
                j += 1
            yield text[i:j].strip()
            i = j


def _joined(lines: list[str], a: int, b: int) -> list[tuple[int, str]]:
    """(line, cleaned text) of lines [a, b], a ``.branchtargets`` list that LLVM spreads over
    several lines (one label a line up to the ``;``) joined onto its first line."""
    out, i = [], a
    while i <= b:
        text, first = _clean(lines[i]), i
        if ".branchtargets" in text:
            while ";" not in text.split(".branchtargets", 1)[1] and i < b:
                i += 1
                text += " " + _clean(lines[i])
        out.append((first, text))
        i += 1
    return out


def parse(lines: list[str], a: int, b: int) -> tuple[list[Inst], list[tuple[int, ...] | None]]:
    """The instructions of lines [a, b] and, for each, the indices of the instructions its branch
    goes to (one for ``bra``, the table's for ``brx.idx``; ``len(insts)``: out of the function;
    None: not a branch). A ``brx.idx`` whose table or one of its labels cannot be found may go
    to every label of the function and out of it. A label is local to its brace scope: inline
    asm blocks reuse names such as ``DONE``, and a branch resolves to the innermost enclosing
    scope that defines its label. Registers a nested block declares (``.reg .pred P1``, ``%p``)
    are renamed ``%P1__s<block>`` inside it, so that two blocks' ``%p`` are two registers and a
    predicate without ``%`` is one."""
    insts, labels, scope, fresh = [], {}, [], 0
    tables: dict[tuple, list[str]] = {}  # (scope, label) -> its .branchtargets
    scopes = []  # the scope path of each instruction
    renames: list[list[tuple[re.Pattern, str]]] = []  # per open scope
    for i, text in _joined(lines, a, b):
        for st in _statements(text):
            if st == "{":
                fresh += 1
                scope.append(fresh)
                renames.append([])
                continue
            if st == "}":
                scope, renames = scope[:-1], renames[:-1]
                continue
            if m := _LABEL.match(st):
                labels[(tuple(scope), m.group(1))] = len(insts)
                st = st[m.end():].strip()
                if st.startswith(".branchtargets"):
                    tables[(tuple(scope), m.group(1))] = [
                        t.strip() for t in st[len(".branchtargets"):].split(",") if t.strip()]
            if st.startswith(".reg") and len(scope) > 1:  # a block inside the function body
                for name in st.split(None, 2)[2].split(","):
                    name = name.strip()
                    if re.fullmatch(r"%?[A-Za-z_]\w*", name):
                        renames[-1].append((re.compile(rf"(?<![\w%$]){re.escape(name)}(?!\w)"),
                                            f"%{name.lstrip('%')}__s{scope[-1]}"))
            if not st or st.startswith("."):
                continue
            for pattern, new in (r for level in renames for r in level):
                st = pattern.sub(new, st)
            g = _GUARD.match(st)
            body = st[g.end():] if g else st
            op, _, rest = body.partition(" ")
            insts.append(Inst(i, st, op, tuple(_split_operands(rest.strip())),
                              g.group(2) if g else None))
            scopes.append(tuple(scope))

    def resolve(path, label, where):  # the innermost enclosing scope's definition
        found = [where[(path[:d], label)] for d in range(len(path), -1, -1)
                 if (path[:d], label) in where]
        return found[0] if found else None

    targets: list[tuple[int, ...] | None] = []
    for inst, path in zip(insts, scopes):
        if m := _BRANCH.match(inst.text):
            t = resolve(path, m.group(3), labels)
            targets.append((len(insts) if t is None else t,))
        elif m := BRX.match(inst.text):
            table = resolve(path, m.group(4), tables)
            found = [resolve(path, name, labels) for name in table or ()]
            if not found or None in found:  # unknown: anywhere in the function, or out of it
                found = [*labels.values(), len(insts)]
            targets.append(tuple(sorted(set(found))))
        else:
            targets.append(None)
    return insts, targets


def functions(lines: list[str]) -> list[tuple[int, int]]:
    """(first line, last line) of each ``.entry`` / ``.func`` (the whole text if none)."""
    starts = [i for i, raw in enumerate(lines) if _FUNC.match(raw)] or [0]
    return [(a, b - 1) for a, b in zip(starts, starts[1:] + [len(lines)])]
