"""Launching the compiled SDPA backward chain (:mod:`frost.templates.chain`, re-exported here):
:class:`FastLauncher` packs a call's scalars straight into the compiled entry point's argument
buffer; :func:`marshalled_values` checks that packing against the DSL's own marshalling (both
:mod:`frost.templates.launch`'s, for the chain's :data:`ARG_KINDS`)."""

from __future__ import annotations

from frost.templates import launch as _launch
from frost.templates.chain import (  # noqa: F401  (re-exported: frost.sdpa.chain's names)
    ADDRS, ARG_KINDS, ARG_NAMES, EXTENTS, IO_STRIDED, STRIDES, VEC, BwdChain, ChainConfig,
    compile_args, main_only)
from frost.templates.launch import pack_format

PACK_FORMAT = pack_format(ARG_KINDS)  # one 8-byte slot per argument


class FastLauncher(_launch.FastLauncher):
    """:class:`frost.templates.launch.FastLauncher` for the chain's ABI (:data:`ARG_KINDS`)."""

    @classmethod
    def create(cls, compiled):
        return super().create(compiled, ARG_KINDS, "the SDPA backward chain")


def marshalled_values(compiled, values) -> list:
    """What the DSL's own marshalling passes for the chain's ``values``, read back with
    :data:`ARG_KINDS` (a CPU-side check that :class:`FastLauncher` packs the same ABI)."""
    return _launch.marshalled_values(compiled, values, ARG_KINDS)
