"""Sub-commands of the ``frost`` CLI. Each ``register(sub)`` adds one sub-parser."""

from __future__ import annotations

REGISTRY: list = []


def command(fn):
    REGISTRY.append(fn)
    return fn
