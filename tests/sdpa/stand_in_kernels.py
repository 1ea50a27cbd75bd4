"""Test helper: stand-ins for the kernels behind ``frost.sdpa.attention``'s custom ops.

:class:`Reference` runs the float64 reference (:mod:`frost.sdpa.reference`) on any device, CPU
included, and records every call, so the op plumbing (registration, autograd, fake kernels,
torch.compile, autocast, the determinism flag) is tested without a GPU::

    ref = Reference()
    with ref.installed():          # frost.sdpa.autograd.stand_in_kernels_for_testing
        o = frost.sdpa.attention(q, k, v, causal=True)   # CPU bf16 tensors
    ref.calls   # [("forward", torch.bfloat16, None), ...]
"""

import torch

from frost.sdpa import autograd as A
from frost.sdpa import reference as R


class Reference:
    """``forward`` / ``backward`` as :class:`frost.sdpa.autograd.Kernels` takes them, by the
    float64 reference, results in the inputs' dtypes (lse fp32). ``calls``: one
    ``(name, q dtype, deterministic)`` a call (``deterministic`` None for the forward)."""

    def __init__(self):
        self.calls = []

    def forward(self, q, k, v, causal, causal_align, scale):
        self.calls.append(("forward", q.dtype, None))
        o, lse = R.forward(q, k, v, causal=causal, causal_align=causal_align, scale=scale)
        return o.to(q.dtype), lse.to(torch.float32)

    def backward(self, q, k, v, o, do, lse, *, causal, causal_align, scale, deterministic):
        self.calls.append(("backward", q.dtype, deterministic))
        grads = R.backward(q, k, v, do, causal=causal, causal_align=causal_align, scale=scale)
        return tuple(g.to(x.dtype) for g, x in zip(grads, (q, k, v)))

    def installed(self):
        """The context in which the custom ops run this object's kernels."""
        return A.stand_in_kernels_for_testing(self.forward, self.backward)
