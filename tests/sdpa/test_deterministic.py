"""The Q-stationary deterministic dQ fallback against the float64 reference (CPU, fp32 inputs)."""

import pytest
import torch

from frost.sdpa import deterministic as D
from frost.sdpa import reference as R


@pytest.mark.parametrize("causal,align,s_q,s_kv,h_q,h_kv", [
    (False, "bottom_right", 50, 70, 4, 2), (True, "bottom_right", 70, 50, 4, 1),
    (True, "top_left", 50, 70, 2, 2), (True, "bottom_right", 9, 40, 2, 1)])
def test_fallback_dq(causal, align, s_q, s_kv, h_q, h_kv, monkeypatch):
    monkeypatch.setattr(D, "CHUNK", 16)  # several chunks, one partial
    g = torch.Generator().manual_seed(s_q + s_kv)
    q, k, v, o, do, lse = R.make_inputs(2, s_q, s_kv, h_q, h_kv, 64, dtype=torch.float32, device="cpu",
                                        causal=causal, causal_align=align, generator=g)
    dq = D.dq(q, k, v, o, do, lse, causal=causal, causal_align=align, scale=0.125)
    rq, _, _ = R.backward(q, k, v, do, causal=causal, causal_align=align, scale=0.125)
    assert R.rel_err(dq, rq) < 1e-5
    assert torch.equal(dq, D.dq(q, k, v, o, do, lse, causal=causal, causal_align=align, scale=0.125))
