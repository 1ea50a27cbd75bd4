"""The stage IR: structure, reprs, JSON, subs, and the checks that reject bad programs."""

import json

import networkx as nx
import pytest
import sympy

from frost.ir.attention import sdpa_bwd_program, sdpa_fwd_program
from frost.ir.examples import gemm_rowsum_program
from frost.ir.program import Program
from frost.ir.stages import Gemm, Load, Pointwise, RowReduce, stage_from_dict
from frost.ir.symbols import B, H, Level, S_q, d_qk, d_v, tile_m, tile_n
from frost.ir.tensor import Space, global_, tile

PROGRAMS = [sdpa_bwd_program, sdpa_fwd_program, gemm_rowsum_program]


@pytest.mark.parametrize("make", PROGRAMS)
def test_dag_and_levels(make):
    p = make()
    assert nx.is_directed_acyclic_graph(p.graph)
    for u, v, data in p.graph.edges(data=True):
        if data["space"] == Space.TILE:
            assert p.stage(u).level <= p.stage(v).level
    order = [s.name for s in p.topo()]
    assert sorted(order) == sorted(s.name for s in p.stages)
    for u, v in p.graph.edges:
        assert order.index(u) < order.index(v)


@pytest.mark.parametrize("make", PROGRAMS)
def test_json_round_trip(make):
    p = make()
    text = p.to_json()
    json.loads(text)
    q = Program.from_json(text)
    assert q == p
    assert [repr(s) for s in q.stages] == [repr(s) for s in p.stages]
    for s in p.stages:
        assert stage_from_dict(json.loads(json.dumps(s.to_dict()))) == s


def test_pointwise_names_that_shadow_sympy_parse_as_symbols():
    # "S", "O", "Q", "N" would be sympy singletons / functions under plain sympify.
    p = sdpa_bwd_program()
    q = Program.from_json(p.to_json())
    P = q.stage("P")
    assert {s.name for s in P.expr.free_symbols} == {"S", "lse_log2", "scale", "log2e"}
    dOO = q.stage("dO_dot_O")
    assert dOO.expr == sympy.Symbol("dO") * sympy.Symbol("O")


def test_backward_reads_like_the_math():
    p = sdpa_bwd_program()
    text = repr(p)
    for needle in ["S[tile_m, tile_n]:fp32 = Q·Kᵀ", "dV_part[tile_n, d_v]:fp32 = Pᵀ·dO",
                   "dK_part[tile_n, d_qk]:fp32 = dSᵀ·Q", "dQ_part[tile_m, d_qk]:fp32 = dS·K",
                   "exp2(", "rowsum(dOO)", "(atomic, across CTAs)"]:
        assert needle in text, needle
    assert [s.name for s in p.at(Level.PROLOGUE)] == ["load_K", "load_V"]
    assert {s.name for s in p.at(Level.BODY) if isinstance(s, Load)} == \
        {"load_Q", "load_dO", "load_O", "load_LSE"}


def test_subs_specialises_shapes():
    p = sdpa_bwd_program().subs({tile_m: 64, tile_n: 128, d_qk: 96, d_v: 64})
    S = p.stage("S")
    assert (S.m, S.n, S.k) == (64, 128, 96)
    assert p.stage("dV_part").out.shape == (128, 64)
    assert p.grid == B * H * sympy.Symbol("S_kv", integer=True, positive=True) / 128
    assert p.stage("load_Q").src.shape == (B, H, S_q, 96)


def test_gemm_operand_shapes():
    p = sdpa_bwd_program()
    dV = p.stage("dV_part")
    assert (dV.m, dV.n, dV.k) == (tile_n, d_v, tile_m)
    dQ = p.stage("dQ_part")
    assert (dQ.m, dQ.n, dQ.k) == (tile_m, d_qk, tile_n)


def _tiny(*stages, name="t"):
    return Program(name, stages, 1, 1)


def test_rejects_unknown_tile():
    X = tile("X", (tile_m, 8), "bf16")
    Y = tile("Y", (tile_m,), "fp32")
    with pytest.raises(ValueError, match="nobody writes"):
        _tiny(RowReduce("r", Level.BODY, X, Y))


def test_rejects_reading_a_later_level():
    g = global_("G", (S_q, 8), "bf16")
    X = tile("X", (tile_m, 8), "bf16")
    Y = tile("Y", (tile_m,), "fp32")
    with pytest.raises(ValueError, match="later level"):
        _tiny(Load("ld", Level.EPILOGUE, g, X), RowReduce("r", Level.BODY, X, Y))


def test_rejects_double_writer_and_bad_expression():
    g = global_("G", (S_q, 8), "bf16")
    X = tile("X", (tile_m, 8), "bf16")
    with pytest.raises(ValueError, match="written by"):
        _tiny(Load("a", Level.BODY, g, X), Load("b", Level.BODY, g, X))
    with pytest.raises(ValueError, match="not in args"):
        Pointwise("p", Level.BODY, sympy.Symbol("Z") * 2, (X,), tile("Y", (tile_m, 8), "fp32"))


def test_tensor_repr_and_bytes():
    t = tile("Q", (tile_m, d_qk), "bf16")
    assert repr(t) == "Q[tile_m, d_qk]:bf16"
    assert t.nbytes == 2 * tile_m * d_qk
    assert t.subs({tile_m: 64, d_qk: 128}).nbytes == 16384
    assert "@global" in repr(global_("LSE", (B, H, S_q), "fp32"))
    g = Gemm("g", Level.BODY, t, tile("K", (tile_n, d_qk), "bf16"), tile("S", (tile_m, tile_n),
                                                                          "fp32"))
    assert g.mma_flops() == 2 * tile_m * tile_n * d_qk
