"""frost.tile_dsl.compile: the resource report must be read whatever pytest does with stderr."""

import pytest

from frost.tile_dsl.compile import compile_for, parse_ptxas_log
from tests.conftest import ARCHS

LOG = """ptxas info    : Compiling entry function 'kern_a' for 'sm_120a'
ptxas info    : Function properties for kern_a
ptxas         .     8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 96 registers, used 1 barriers, 512 bytes smem
ptxas info    : Compiling entry function 'kern_b' for 'sm_120a'
ptxas info    : Function properties for kern_b
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 10 registers, used 0 barriers
"""


def test_parse_ptxas_log():
    a, b = parse_ptxas_log(LOG)
    assert (a.name, a.registers, a.spills, a.stack_bytes, a.static_smem_bytes, a.barriers) == (
        "kern_a", 96, 16, 8, 512, 1)
    assert (b.name, b.registers, b.spills) == ("kern_b", 10, 0)


def _kernel_fn():
    import cutlass
    import cutlass.cute as cute

    @cute.kernel
    def scale2(a: cute.Tensor, b: cute.Tensor):
        tid, _, _ = cute.arch.thread_idx()
        b[tid] = a[tid] * 2.0

    @cute.jit
    def launch(a: cute.Tensor, b: cute.Tensor):
        scale2(a, b).launch(grid=(1, 1, 1), block=(128, 1, 1))

    n = cute.sym_int()
    fake = lambda: cute.runtime.make_fake_compact_tensor(cutlass.Float32, (n,), assumed_align=16)
    return launch, fake(), fake()


@pytest.mark.compile
@pytest.mark.parametrize("arch", ARCHS)
def test_report_is_read_under_pytest_capture(arch):
    fn, a, b = _kernel_fn()
    rep = compile_for(fn, a, b, arch=arch)
    assert len(rep.kernels) == 1
    assert rep.kernels[0].registers > 0
    assert f".target {arch}" in rep.ptx
    assert rep.cubin[:4] == b"\x7fELF"


def test_rejects_unknown_arch():
    with pytest.raises(ValueError, match="arch"):
        compile_for(lambda: None, arch="sm_75")


WRAPPED = """remark: ptxas output: ptxas info    : Compiling entry function
'kern_spill' for 'sm_120a'
ptxas info    : Function properties for kern_spill
ptxas         .     72 bytes stack frame, 68 bytes
spill stores, 68 bytes spill loads
ptxas info    : Used 255 registers, used 1 barriers
"""


def test_parse_wrapped_remark_with_spills():
    (k,) = parse_ptxas_log(WRAPPED)
    assert (k.name, k.registers, k.spill_store_bytes, k.spill_load_bytes) == ("kern_spill", 255, 68, 68)


def test_ptx_sha_ignores_comment_lines_only():
    """CompileReport.ptx_sha: the compiler banner and indented comments do not count, any
    instruction does."""
    from frost.tile_dsl.compile import CompileReport

    def sha(ptx):
        return CompileReport("sm_120a", None, ptx, b"", "", []).ptx_sha

    body = ".version 8.8\n.target sm_120a\n\tmov.u32 %r1, 0;\n"
    base = sha(body)
    assert len(base) == 12 and int(base, 16) >= 0
    assert sha("//\n// Compiler Build ID: X\n" + body + "\t// .globl k\n") == base
    assert sha(body.replace("0;", "1;")) != base


def test_entry_ptx_cuts_a_module_at_its_entries():
    """CompileReport.entry_ptx: one kernel's body out of a module of several (the SDPA chain),
    so a count per kernel does not see its neighbours' instructions (nor a .func after it);
    LookupError unless one entry matches."""
    from frost.tile_dsl.compile import CompileReport

    ptx = (".version 8.8\n.target sm_120a\n"
           ".visible .entry kernel_RowDot_0(\n\t.param .u64 a\n)\n{\n\tld.global.f32 %f1, [a];\n}\n"
           ".visible .entry kernel_BwdMainKernel_1(\n)\n{\n\tmma.sync.aligned.m16n8k16 x;\n"
           "\tmma.sync.aligned.m16n8k16 y;\n}\n"
           ".entry kernel_DqConvert_2(\n)\n{\n\tst.global.f32 [b], %f2;\n}\n"
           ".func (.reg .b32 r) helper_3(\n)\n{\n\tmma.sync.aligned.m16n8k16 z;\n}\n")
    rep = CompileReport("sm_120a", None, ptx, b"", "", [])
    main = rep.entry_ptx("BwdMain")
    assert main.startswith(".visible .entry kernel_BwdMainKernel_1(") and "DqConvert" not in main
    assert rep.count("mma.sync", entry="BwdMain") == 2 and rep.count("mma.sync") == 3
    assert rep.count("mma.sync", entry="RowDot") == 0
    cvt = rep.entry_ptx("DqConvert")  # ends where the .func after it starts
    assert cvt.rstrip().endswith("}") and "helper_3" not in cvt and "st.global" in cvt
    with pytest.raises(LookupError, match="0 PTX entries"):
        rep.entry_ptx("helper")  # a .func is not an entry
    with pytest.raises(LookupError, match="3 PTX entries"):
        rep.entry_ptx("kernel_")
    with pytest.raises(LookupError, match="0 PTX entries"):
        rep.entry_ptx("Nope")


@pytest.mark.compile
def test_report_survives_its_scratch_folder_being_deleted():
    """Something outside the process (a temp cleaner) deletes the per-process dump folder between
    compiles: the next report still holds PTX text and an ELF cubin, not a file path."""
    import shutil

    from frost.tile_dsl import compile as comp

    fn, a, b = _kernel_fn()
    compile_for(fn, a, b, arch="sm_120a")
    shutil.rmtree(comp._dump_dir())
    rep = compile_for(fn, a, b, arch="sm_120a")
    assert ".entry" in rep.ptx and rep.ptx.lstrip().startswith("//")
    assert rep.cubin[:4] == b"\x7fELF" and rep.count("st.global") >= 1


def test_unreadable_artifacts_raise_one_clear_error(monkeypatch):
    """When the PTX still cannot be read back after the retry, compile_for raises
    CompileArtifactError instead of returning a report whose PTX is a path."""
    import types

    import cutlass.cute as cute

    from frost.tile_dsl import compile as comp

    calls = []

    def fake_compile(fn, *args, options="", **kw):
        calls.append(options)
        return types.SimpleNamespace(__ptx__="/tmp/gone/cutlass_x.sm_120a.ptx",
                                     __cubin__="/tmp/gone/cutlass_x.sm_120a.cubin")

    monkeypatch.setattr(cute, "compile", fake_compile)
    with pytest.raises(comp.CompileArtifactError, match="could not be read back"):
        compile_for(lambda: None, arch="sm_120a")
    assert len(calls) == 2  # one retry with the folder made again
