"""frost.sdpa: the user API of the fused scaled-dot-product-attention backward.

``frost.sdpa.backward(q, k, v, o, do, lse, *, causal=False, causal_align="bottom_right",
scale=None, deterministic=False) -> (dq, dk, dv)``; see :mod:`frost.sdpa.api`.
"""

from frost.sdpa.api import backward, cache_info, clear_cache, pdl_enabled, set_pdl, validate

__all__ = ["backward", "cache_info", "clear_cache", "pdl_enabled", "set_pdl", "validate"]
