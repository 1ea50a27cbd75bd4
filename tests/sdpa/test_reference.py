"""The float64 reference (whole and one head at a time) against torch autograd of a plain
softmax-attention forward (CPU)."""

import pytest
import torch

from frost.sdpa import reference as R


@pytest.mark.parametrize("causal,align,s_q,s_kv,h_q,h_kv", [
    (False, "bottom_right", 5, 7, 4, 2), (True, "bottom_right", 7, 5, 4, 1),
    (True, "top_left", 5, 7, 2, 2), (True, "top_left", 9, 4, 2, 1), (True, "bottom_right", 3, 9, 3, 3)])
def test_backward_matches_autograd(causal, align, s_q, s_kv, h_q, h_kv):
    g = torch.Generator().manual_seed(s_q * 31 + s_kv)
    q = torch.randn(2, s_q, h_q, 16, dtype=torch.float64, generator=g, requires_grad=True)
    k = torch.randn(2, s_kv, h_kv, 16, dtype=torch.float64, generator=g, requires_grad=True)
    v = torch.randn(2, s_kv, h_kv, 16, dtype=torch.float64, generator=g, requires_grad=True)
    do = torch.randn(2, s_q, h_q, 16, dtype=torch.float64, generator=g)
    rep = h_q // h_kv
    qh = q.permute(0, 2, 1, 3)
    kh = k.permute(0, 2, 1, 3).repeat_interleave(rep, 1)
    vh = v.permute(0, 2, 1, 3).repeat_interleave(rep, 1)
    s = qh @ kh.transpose(-1, -2) * 0.3
    if causal:
        s = s.masked_fill(~R.causal_mask(s_q, s_kv, align), float("-inf"))
    o = (torch.softmax(s, -1).nan_to_num(0.0) @ vh).permute(0, 2, 1, 3)
    o.backward(do)
    dq, dk, dv = R.backward(q.detach(), k.detach(), v.detach(), do, causal=causal, causal_align=align, scale=0.3)
    o2, lse = R.forward(q.detach(), k.detach(), v.detach(), causal=causal, causal_align=align, scale=0.3)
    kw = dict(causal=causal, causal_align=align, scale=0.3)
    hq, hk, hv = R.by_head(q.detach(), k.detach(), v.detach(), do, **kw)  # one head at a time
    ho, hlse = R.by_head(q.detach(), k.detach(), v.detach(), **kw)
    for a, b in ((dq, q.grad), (dk, k.grad), (dv, v.grad), (o2, o.detach()), (hq, q.grad),
                 (hk, k.grad), (hv, v.grad), (ho, o.detach())):
        assert torch.allclose(a, b, atol=1e-12)
    assert torch.equal(hlse.isinf(), lse.isinf())
    assert torch.allclose(hlse[~lse.isinf()], lse[~lse.isinf()], atol=1e-12)
    masked_rows = (~R.causal_mask(s_q, s_kv, align)).all(-1).sum().item() if causal else 0
    assert torch.isinf(lse).sum().item() == masked_rows * 2 * h_q


def test_masks():
    assert R.causal_mask(2, 4, "bottom_right").tolist() == [[True, True, True, False], [True] * 4]
    assert R.causal_mask(2, 4, "top_left").tolist() == [[True, False, False, False], [True, True, False, False]]
    with pytest.raises(ValueError):
        R.causal_mask(2, 2, "diag")


@pytest.mark.parametrize("h_q,h_kv,d_k,msg", [(4, 3, 32, "multiple of k/v heads"),
                                               (4, 2, 16, "k shape")])
def test_shape_errors_name_the_argument(h_q, h_kv, d_k, msg):
    q = torch.randn(1, 8, h_q, 32)
    k = torch.randn(1, 8, h_kv, d_k)
    with pytest.raises(ValueError, match=msg):
        R.backward(q, k, k, q)

