"""Property-based fuzz of frost.sdpa.backward on the GPU (L1): hypothesis draws geometries, and
each is compared with the float64 reference on poisoned outputs.

Drawn: B, H_kv, the GQA ratio, S_q and S_kv (1 and non-multiples of every tile included), the
head dim, the dtype, causal and its alignment, the memory layout (BSHD, BHSD, packed QKV) and
deterministic. Head dims come from a short list so that the variants compiled (one per dtype,
head-dim class, alignment, deterministic) stay few; every size is a runtime value. At least
:data:`EXAMPLES` geometries run, within hypothesis' own time limits (no deadline per example).

A failure shrinks and prints its reproducer (``@reproduce_failure`` blob and the drawn values).
The example database lives outside the tree (``$FROST_HYPOTHESIS_DIR``, default
``~/.cache/frost/hypothesis``).
"""

import os

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.database import DirectoryBasedExampleDatabase

import frost.sdpa as sdpa
from frost.sdpa import reference as R
from frost.templates import host

pytestmark = pytest.mark.gpu
EXAMPLES = 200
TOL = {torch.bfloat16: 1e-2, torch.float16: 5e-3}
DB = DirectoryBasedExampleDatabase(os.environ.get(
    "FROST_HYPOTHESIS_DIR", os.path.expanduser("~/.cache/frost/hypothesis")))

seq = st.one_of(st.sampled_from([1, 2, 63, 64, 65, 127, 129, 200]), st.integers(1, 320))


@st.composite
def geometry(draw):
    h_kv = draw(st.integers(1, 3))
    return dict(
        b=draw(st.integers(1, 3)), h_kv=h_kv, h_q=h_kv * draw(st.sampled_from([1, 2, 4])),
        s_q=draw(seq), s_kv=draw(seq), d=draw(st.sampled_from([40, 64, 128, 256])),
        dtype=draw(st.sampled_from([torch.bfloat16, torch.float16])),
        causal=draw(st.sampled_from(["none", "bottom_right", "top_left"])),
        layout=draw(st.sampled_from(["bshd", "bhsd", "packed"])),
        deterministic=draw(st.booleans()))


def lay_out(layout: str, q, k, v, do):
    """q, k, v, do (B, S, H, D) contiguous → the same values in ``layout``'s storage, viewed as
    (B, S, H, D): ``bhsd`` heads-major, ``packed`` q/k/v slices of one (B, S, 3, H, D) tensor
    (only when S and H agree; else BSHD)."""
    if layout == "bhsd":
        return [x.transpose(1, 2).contiguous().transpose(1, 2) for x in (q, k, v, do)]
    if layout == "packed" and q.shape == k.shape:
        qkv = torch.stack([q, k, v], dim=2)  # (B, S, 3, H, D)
        return [qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2], do]
    return [q, k, v, do]


@settings(max_examples=EXAMPLES, deadline=None, database=DB, print_blob=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(g=geometry(), seed=st.integers(0, 2**31 - 1))
def test_backward_matches_float64_on_drawn_geometries(g, seed):
    causal = g["causal"] != "none"
    align = g["causal"] if causal else "bottom_right"
    gen = torch.Generator().manual_seed(seed)
    q, k, v, o, do, lse = R.make_inputs(g["b"], g["s_q"], g["s_kv"], g["h_q"], g["h_kv"], g["d"],
                                        dtype=g["dtype"], device="cuda", causal=causal,
                                        causal_align=align, generator=gen)
    q, k, v, do = lay_out(g["layout"], q, k, v, do)
    with host.poisoned(q, k, v):
        dq, dk, dv = sdpa.backward(q, k, v, o, do, lse, causal=causal, causal_align=align,
                                   deterministic=g["deterministic"])
    torch.cuda.synchronize()
    refs = R.backward(q, k, v, do, causal=causal, causal_align=align)
    for name, x, r in zip(("dq", "dk", "dv"), (dq, dk, dv), refs):
        assert not x.isnan().any(), f"{name}: unwritten (NaN) elements for {g}"
        assert R.rel_err(x, r) <= TOL[g["dtype"]], (name, R.rel_err(x, r), g)
