"""The host path of a fresh process: what ``import frost`` / ``import frost.sdpa`` load (no CuTe
DSL, no torch, no plotting), the ImportError without torch, ``FROST_DISABLE_PDL``, the type
hints of the public API and the ``py.typed`` marker.

Each import check runs in a fresh interpreter (this one has imported everything already) and
asserts on ``sys.modules``; import times are printed (``pytest -s``), never asserted."""

import inspect
import json
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

import frost

ROOT = pathlib.Path(frost.__file__).parent.parent

# loaded by compiling or launching (cutlass, frost.templates), by a call (torch), by drawing
# (matplotlib) or by planning (sympy, networkx): none of them by importing the API
HEAVY = ("cutlass", "torch", "frost.templates", "frost.sched", "sympy", "networkx", "matplotlib")


def _python(code: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """``code`` (dedented) in a fresh interpreter, ``env`` on top of this one's environment."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=300, env={**os.environ, **(env or {})})


def _loaded_after(statements: str) -> dict:
    """Which of :data:`HEAVY` ``statements`` leave in ``sys.modules`` of a fresh interpreter,
    and the seconds they took."""
    code = "\n".join([
        "import json, sys, time",
        "t = time.perf_counter()",
        textwrap.dedent(statements).strip(),
        "dt = time.perf_counter() - t",
        f"heavy = {HEAVY!r}",
        "loaded = sorted(m for m in sys.modules if any(m == h or m.startswith(h + '.') for h in heavy))",
        "print(json.dumps({'seconds': dt, 'loaded': loaded}))",
    ])
    out = _python(code)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.splitlines()[-1])


@pytest.mark.parametrize("statement", ["import frost", "import frost.sdpa"])
def test_import_loads_no_cutlass_torch_or_plotting(statement):
    got = _loaded_after(statement)
    print(f"\n{statement}: {got['seconds'] * 1e3:.0f} ms")
    assert got["loaded"] == []


def test_public_api_reads_load_nothing_heavy():
    """Reading frost.sdpa's names (but the two of frost.sdpa.autograd), and the calls that
    neither compile nor launch (the PDL switch, the cache's info), load no CuTe DSL and no
    torch."""
    got = _loaded_after("""
        import frost.sdpa
        from frost.sdpa import api
        fns = [getattr(frost.sdpa, n) for n in frost.sdpa.__all__ if n not in ("attention", "forward")]
        fns += [api.device_arch, api.raw_stream, api.VariantKey, api.CompiledChain]
        frost.sdpa.set_pdl(False)
        assert not frost.sdpa.pdl_enabled()
        assert frost.sdpa.cache_info()["variants"] == 0
        frost.sdpa.clear_cache()
    """)
    assert got["loaded"] == []


def test_autograd_names_load_torch_but_no_kernels():
    """frost.sdpa.attention and .forward (frost.sdpa.autograd: torch's custom ops) load on first
    read, with torch, still without CuTe DSL or the planner."""
    got = _loaded_after("""
        import frost.sdpa
        assert "torch" not in sys.modules
        from frost.sdpa import attention
        assert frost.sdpa.forward.__module__ == attention.__module__ == "frost.sdpa.autograd"
        assert {"attention", "forward"} <= set(dir(frost.sdpa))
    """)
    assert "torch" in got["loaded"]
    assert [m for m in got["loaded"] if m.split(".")[0] in ("cutlass", "matplotlib", "networkx")
            or m.startswith(("frost.templates", "frost.sched"))] == []


def test_deferred_names_reach_the_real_modules():
    """api's deferred names resolve to frost.sdpa.chain's and frost.templates.host's objects
    once used (host's functions patched here: this box has no GPU), and raw_stream's first call
    binds api's name to host's function, so later launches pay no import."""
    out = _python("""
        import sys
        from frost.sdpa import api
        assert "cutlass" not in sys.modules
        from frost.sdpa import chain
        from frost.templates import host
        assert api._chain.ARG_NAMES is chain.ARG_NAMES and "cutlass" in sys.modules
        host.device_arch = lambda device: f"sm_{device}a"
        host.raw_stream = lambda idx: 40 + idx
        assert api.device_arch(120) == "sm_120a"
        first = api.raw_stream
        assert first(2) == 42 and api.raw_stream is host.raw_stream is not first
        print("ok")
    """)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


@pytest.mark.parametrize("call", [
    "frost.sdpa.backward(None, None, None, None, None, None)",
    "frost.sdpa.attention(None, None, None)",
    "frost.sdpa.forward(None, None, None)",
    "frost.sdpa.validate(None, None, None, None, None, None)",
])
def test_without_torch_calls_say_how_to_install_it(call):
    out = _python("\n".join([
        "import sys",
        "sys.modules['torch'] = None  # as if torch were not installed: `import torch` fails",
        "import frost.sdpa",
        "try:",
        f"    {call}",
        "except ImportError as e:",
        "    print(type(e).__name__, '|', e.name, '|', e)",
    ]))
    assert out.returncode == 0, out.stderr
    kind, name, msg = (s.strip() for s in out.stdout.strip().split("|", 2))
    assert kind == "ImportError" and name == "torch"
    assert "pip install torch" in msg and "frost-dsl[torch]" in msg


def test_a_broken_torch_install_keeps_its_own_error(tmp_path):
    """A torch that is there but fails importing a module of its own is reported as that
    failure, not as "install torch"."""
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "__init__.py").write_text("import frost_no_such_module_xyz\n")
    out = _python("""
        import frost.sdpa
        try:
            frost.sdpa.backward(None, None, None, None, None, None)
        except ImportError as e:
            print(type(e).__name__, e.name)
    """, env={"PYTHONPATH": str(tmp_path)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["ModuleNotFoundError", "frost_no_such_module_xyz"]


@pytest.mark.parametrize("value,enabled", [
    (None, True), ("", True), ("0", True), ("false", True), ("off", True),
    ("1", False), ("true", False), ("YES", False), (" on ", False),
])
def test_frost_disable_pdl_sets_the_default(value, enabled):
    env = {k: v for k, v in os.environ.items() if k != "FROST_DISABLE_PDL"}
    if value is not None:
        env["FROST_DISABLE_PDL"] = value
    out = subprocess.run([sys.executable, "-c", "import frost.sdpa; print(frost.sdpa.pdl_enabled())"],
                         capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(enabled)


def test_frost_disable_pdl_refuses_an_unknown_value():
    out = _python("import frost.sdpa", env={"FROST_DISABLE_PDL": "maybe"})
    assert out.returncode != 0
    assert "ValueError" in out.stderr and "FROST_DISABLE_PDL='maybe'" in out.stderr


def test_set_pdl_after_the_environment():
    """The variable is only the start value: set_pdl still switches, and takes only bools."""
    out = _python("""
        import frost.sdpa
        print(frost.sdpa.pdl_enabled())
        frost.sdpa.set_pdl(True)
        print(frost.sdpa.pdl_enabled())
        try:
            frost.sdpa.set_pdl(1)
        except TypeError:
            print("TypeError")
    """, env={"FROST_DISABLE_PDL": "1"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "True", "TypeError"]


def _untyped(fn) -> list[str]:
    """The parameters of ``fn`` without an annotation, and "return" if it has none."""
    sig = inspect.signature(fn)
    missing = [n for n, p in sig.parameters.items() if p.annotation is inspect.Parameter.empty
               and n not in ("self", "cls")]
    return missing + (["return"] if sig.return_annotation is inspect.Signature.empty else [])


def test_public_functions_are_typed():
    from frost import cli, run
    from frost.sdpa import api

    fns = [api.backward, api.set_pdl, api.pdl_enabled, api.cache_info, api.clear_cache,
           api.device_arch, api.raw_stream, api.set_fast_launch, api.set_tail_split,
           api.variant_key, api.make_plan, api.main_choices, api.chain_program, api.build,
           api.get_chain, api.tail_split, api.launch_values, api.workspace_bytes,
           cli.main, cli.build_parser, run.cuda_torch, run.run_sdpa_bwd, run.run_gemm_rowsum,
           run.sdpa_bwd_flops, run.RunReport.failures, run.RunReport.tflops,
           run.RunReport.to_dict, run.RunReport.format]
    untyped = {f.__qualname__: m for f in fns if (m := _untyped(f))}
    assert untyped == {}


def test_py_typed_ships_with_the_package(tmp_path):
    """The PEP 561 marker is in the package and in the wheel setuptools builds from
    pyproject.toml (built from a copy of the sources, so nothing is written to the tree)."""
    import shutil

    assert (ROOT / "frost" / "py.typed").is_file()
    src = tmp_path / "src"
    shutil.copytree(ROOT / "frost", src / "frost",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, src / name)
    out = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                          "--no-build-isolation", "-q", "-w", str(tmp_path / "dist"), str(src)],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    import zipfile

    (wheel,) = (tmp_path / "dist").glob("frost_dsl-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        meta = next(zf.read(n).decode() for n in names if n.endswith(".dist-info/METADATA"))
    assert "frost/py.typed" in names and "frost/sdpa/api.py" in names
    assert "Classifier: Typing :: Typed" in meta
    assert "Requires-Dist: torch>=2.6; extra == \"torch\"" in meta  # a range, not a pin
