"""The kernel chain is derived from the DAG, not named by hand."""

from frost.ir.attention import sdpa_bwd_program, sdpa_fwd_program
from frost.ir.examples import gemm_rowsum_program
from frost.ir.stages import Load, Store
from frost.sched.partition import partition


def test_backward_splits_into_three():
    ks = partition(sdpa_bwd_program())
    assert [(k.role, k.name) for k in ks] == [("pre", "rowdot"), ("main", "bwd_main"),
                                              ("post", "dq_convert")]
    pre, main, post = ks
    pre_names = {s.name for s in pre.program.stages}
    # q-only compute is hoisted; the loop gets it back as loads of materialised globals.
    assert {"dO_dot_O", "delta", "lse_log2", "store_delta", "store_lse_log2"} <= pre_names
    assert not {"S", "P", "dS"} & pre_names
    main_loads = {s.name for s in main.program.stages if isinstance(s, Load)}
    assert main_loads == {"load_K", "load_V", "load_Q", "load_dO", "load_delta", "load_lse_log2"}
    assert "load_O" not in main_loads and "load_LSE" not in main_loads
    # the materialised globals have the row shape of the q loop
    st = next(s for s in pre.program.stages if isinstance(s, Store) and s.dst.name == "delta")
    assert [str(x) for x in st.dst.shape] == ["B", "H", "S_q"]
    # the atomic workspace is zeroed by the first kernel and reduced into by the loop
    assert pre.zeroes == ("dq_accum",) and main.atomics == ("dq_accum",)
    assert {s.name for s in post.program.stages} == {"load_dq_accum", "dQ_scale", "dQ_cast",
                                                     "store_dQ"}


def test_forward_is_one_kernel():
    ks = partition(sdpa_fwd_program())
    assert [k.role for k in ks] == ["main"]


def test_gemm_rowsum_gets_a_zeroing_kernel():
    ks = partition(gemm_rowsum_program())
    assert [(k.role, k.name) for k in ks] == [("pre", "zero_rowsum"), ("main", "gemm_rowsum")]
    assert ks[0].zeroes == ("r",) and not ks[0].program.stages
    assert set(ks[1].writes) == {"C", "r"} and ks[1].atomics == ("r",)
