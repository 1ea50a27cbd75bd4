"""Imports flow one way: tile_dsl <- ir <- sched <- templates <- recipes <- sdpa (<- top-level
modules); and sdpa reaches the bwd_main template only through recipes (no template internals).

Every ``import frost.X`` / ``from frost.X import`` in every module (including imports inside
functions) is parsed with ``ast``; a module may import only from its own layer or lower ones.
Top-level modules (``frost.cli``, ``frost.viz``, ...) sit above all layers. Imports under
``if TYPE_CHECKING:`` are annotations only and are not counted. ``KNOWN_UPWARD`` lists the
runtime exceptions the team has accepted for now; each is debt to remove, not a rule.
"""

import ast
import pathlib

import frost

ROOT = pathlib.Path(frost.__file__).parent
LAYERS = ["tile_dsl", "ir", "sched", "templates", "recipes", "sdpa"]
TOP = len(LAYERS)

# (importing module, imported module): accepted for now, see the docstring.
KNOWN_UPWARD: set[tuple[str, str]] = set()


def layer_of(module: str) -> int:
    parts = module.split(".")
    if parts[0] != "frost":
        raise ValueError(module)
    if len(parts) == 1:
        return -1  # the bare package (its __init__ imports nothing)
    return LAYERS.index(parts[1]) if parts[1] in LAYERS else TOP


def module_name(path: pathlib.Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def frost_imports(path: pathlib.Path, me: str | None = None):
    """(module, line) of every runtime frost import in ``path`` (module name ``me``)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    me = me or module_name(path)
    typing_only = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            typing_only |= {id(n) for b in node.body for n in ast.walk(b)}
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "frost":
                    yield a.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative import: resolve against this package
                base = me.split(".")
                if path.name != "__init__.py":
                    base = base[:-1]
                base = base[: len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if mod.split(".")[0] == "frost":
                yield mod, node.lineno


def test_layer_names_exist():
    for layer in LAYERS:
        assert (ROOT / layer).is_dir(), layer


def test_imports_flow_one_way():
    bad = []
    for path in sorted(ROOT.rglob("*.py")):
        me = module_name(path)
        mine = layer_of(me)
        for mod, line in frost_imports(path):
            if (me, mod) in KNOWN_UPWARD:
                continue
            if layer_of(mod) > max(mine, 0) and mine != TOP:
                bad.append(f"{path.relative_to(ROOT.parent)}:{line} ({LAYERS[mine]}) imports {mod}")
    assert not bad, "upward imports:\n" + "\n".join(bad)


def test_the_checker_catches_an_upward_import(tmp_path):
    # the checker itself must be able to fail: sched importing sdpa is a violation
    assert layer_of("frost.sdpa.api") > layer_of("frost.sched.scheduler")
    assert layer_of("frost.viz") > layer_of("frost.ir.program")
    src = tmp_path / "probe.py"
    src.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                   "    from frost.templates import x\ndef f():\n    from frost.sdpa import api\n"
                   "    from ..templates import y\n")
    found = [m for m, _ in frost_imports(src, me="frost.sched.probe")]
    assert found == ["frost.sdpa", "frost.templates"]


def _imports_of(paths, prefix: str) -> list:
    """(module, imported, line) for each import of a ``prefix`` module in ``paths``."""
    bad = []
    for path in sorted(paths):
        me = module_name(path)
        bad += [(me, mod, line) for mod, line in frost_imports(path, me) if mod.startswith(prefix)]
    return bad


def test_sdpa_imports_no_template_internals():
    """frost.sdpa builds the main kernel from a recipe: it imports no module of
    frost.templates.bwd_main (its picks, tables, masks, host helpers)."""
    bad = _imports_of((ROOT / "sdpa").glob("*.py"), "frost.templates.bwd_main")
    assert not bad, bad


def test_templates_never_import_recipes_or_the_planner_tables():
    """Templates take a resolved recipe: no template module imports frost.recipes."""
    bad = _imports_of((ROOT / "templates").rglob("*.py"), "frost.recipes")
    assert not bad, bad
