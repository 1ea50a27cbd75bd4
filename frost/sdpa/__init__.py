"""frost.sdpa: the user API of the fused scaled-dot-product-attention backward.

``frost.sdpa.backward(q, k, v, o, do, lse, *, causal=False, causal_align="bottom_right",
scale=None, deterministic=False) -> (dq, dk, dv)``; see :mod:`frost.sdpa.api`.
``frost.sdpa.attention(q, k, v, ...)``: a differentiable attention, torch's forward with that
backward (``frost.sdpa.forward`` returns the forward's o and lse); see :mod:`frost.sdpa.autograd`.

Importing it loads neither CuTe DSL (``cutlass``) nor torch: the kernels' modules load when a
variant is first compiled or launched, torch when a call needs it (``tests/test_host_path.py``).
``FROST_DISABLE_PDL=1`` in the environment starts the process with PDL off (:func:`set_pdl`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from frost.sdpa.api import backward, cache_info, clear_cache, pdl_enabled, set_pdl, validate
from frost.sdpa.validation import _torch

if TYPE_CHECKING:
    from frost.sdpa.autograd import attention, forward

__all__ = ["attention", "backward", "cache_info", "clear_cache", "forward", "pdl_enabled",
           "set_pdl", "validate"]

# frost.sdpa.autograd imports torch and registers frost's custom ops with it: it loads on the
# first read of one of its names (PEP 562), not with frost.sdpa
_AUTOGRAD = ("attention", "forward")


def __getattr__(name: str) -> Any:
    if name not in _AUTOGRAD:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    _torch()  # without torch: an ImportError that says how to install it
    value = getattr(importlib.import_module("frost.sdpa.autograd"), name)
    globals()[name] = value  # later reads skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
