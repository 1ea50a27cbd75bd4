"""frost.sdpa: the user API of the fused scaled-dot-product-attention backward.

``frost.sdpa.backward(q, k, v, o, do, lse, *, causal=False, causal_align="bottom_right",
scale=None, deterministic=False) -> (dq, dk, dv)``; see :mod:`frost.sdpa.api`.
``frost.sdpa.attention(q, k, v, ...)``: a differentiable attention, torch's forward with that
backward (``frost.sdpa.forward`` returns the forward's o and lse); see :mod:`frost.sdpa.autograd`.
"""

from frost.sdpa.api import backward, cache_info, clear_cache, pdl_enabled, set_pdl, validate
from frost.sdpa.autograd import attention, forward

__all__ = ["attention", "backward", "cache_info", "clear_cache", "forward", "pdl_enabled",
           "set_pdl", "validate"]
