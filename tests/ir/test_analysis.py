"""Symbolic FLOP and byte analyses."""

import sympy

from frost.ir.analysis import min_bytes, stage_costs, total_flops, total_traffic
from frost.ir.attention import sdpa_bwd_program, sdpa_fwd_program
from frost.ir.examples import gemm_rowsum_flops, gemm_rowsum_program
from frost.ir.symbols import B, H, S_kv, S_q, d_qk, d_v, tile_m, tile_n

d = sympy.Symbol("d", integer=True, positive=True)
SAME_D = {d_qk: d, d_v: d}


def test_backward_is_two_and_a_half_forwards():
    bwd, fwd = total_flops(sdpa_bwd_program()), total_flops(sdpa_fwd_program())
    assert sympy.simplify(bwd.subs(SAME_D) - 10 * B * H * S_q * S_kv * d) == 0
    assert sympy.simplify(fwd.subs(SAME_D) - 4 * B * H * S_q * S_kv * d) == 0
    assert sympy.simplify(bwd.subs(SAME_D) / fwd.subs(SAME_D)) == sympy.Rational(5, 2)
    # No tile symbol survives: the count does not depend on the tiling.
    assert not ({tile_m, tile_n} & bwd.free_symbols)


def test_causal_halves_the_work():
    full, causal = total_flops(sdpa_bwd_program()), total_flops(sdpa_bwd_program(causal=True))
    assert sympy.simplify(full / causal) == 2


def test_mla_head_dims():
    bwd = total_flops(sdpa_bwd_program())
    # S, dK, dQ contract/produce d_qk; dP, dV use d_v.
    assert sympy.expand(bwd) == sympy.expand(2 * B * H * S_q * S_kv * (3 * d_qk + 2 * d_v))


def test_gemm_rowsum_flops_and_bytes():
    p = gemm_rowsum_program()
    assert sympy.simplify(total_flops(p) - gemm_rowsum_flops()) == 0
    M, N, K = (sympy.Symbol(n, integer=True, positive=True) for n in "MNK")
    assert sympy.simplify(min_bytes(p) - (2 * M * K + 2 * N * K + 2 * M * N + 4 * M)) == 0


def test_per_stage_costs_add_up_and_loads_repeat():
    p = sdpa_bwd_program()
    costs = {c.stage: c for c in stage_costs(p)}
    assert sympy.simplify(sum(c.mma_flops for c in costs.values()) - total_flops(p)) == 0
    # K is read once per CTA (its minimum); Q once per KV tile (S_kv / tile_n times its minimum).
    assert sympy.simplify(costs["load_K"].traffic - costs["load_K"].min_bytes) == 0
    assert sympy.simplify(costs["load_Q"].traffic / costs["load_Q"].min_bytes - S_kv / tile_n) == 0
    assert total_traffic(p).subs({B: 1, H: 1, S_q: 128, S_kv: 128, d_qk: 64, d_v: 64,
                                  tile_m: 64, tile_n: 64}) > 0
