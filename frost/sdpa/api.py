"""``frost.sdpa.backward``: the user API of the fused SDPA backward.

::

    dq, dk, dv = frost.sdpa.backward(q, k, v, o, do, lse, *, causal=False,
                                     causal_align="bottom_right", scale=None, deterministic=False)

The contract (shapes, layouts, dtypes, deterministic mode, what is returned and raised) is
:func:`backward`'s docstring. Every check runs before any CUDA call.

Variants: one compile per :class:`VariantKey` (arch, dtype, head dim, causal alignment,
deterministic, PDL); B, H, S and every stride are runtime scalars. Compiled chains live in an
in-process cache (:func:`cache_info`, :func:`clear_cache`). PDL is on by default; turn it off with
:func:`set_pdl`, or for the whole process with ``FROST_DISABLE_PDL=1`` (results are identical
either way). The workspace: :mod:`frost.sdpa.workspace`.

Launch path: the compiled chain (:mod:`frost.sdpa.chain`) takes only scalars, passed through
:class:`~frost.sdpa.chain.FastLauncher`, on ``torch.cuda.current_stream()``.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import json
import math
import os
import threading
from typing import TYPE_CHECKING, Any

from frost.sdpa import workspace as _ws
from frost.sdpa.workspace import (  # noqa: F401  (re-exported; backward calls them from here)
    _free_bytes, workspace_layout)
from frost.sdpa.validation import (  # noqa: F401  (re-exported: the API's names)
    _ALIGN_BYTES, _ALIGN_ELEMS, ALIGNS, HEAD_DIMS, Problem, _torch, validate)

if TYPE_CHECKING:
    import torch

    from frost.ir import Program
    from frost.ir.mods import AttentionMods

    from frost.sched.plan import Plan
    from frost.sdpa import chain as _chain
    from frost.recipes.grid import TailSplit


# ------------------------------------------------------------------------- deferred imports
# Importing frost.sdpa loads neither CuTe DSL (``cutlass``, ~1 s) nor torch: the modules that
# import cutlass (frost.sdpa.chain, frost.templates.*) load when a chain is compiled or launched,
# torch when a call needs it (:func:`frost.sdpa.validation._torch`).
class _OnFirstUse:
    """Module ``name``, imported on the first attribute read (cold paths only: each read goes
    through :func:`importlib.import_module`)."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        return getattr(importlib.import_module(self._name), attr)


if not TYPE_CHECKING:
    _chain = _OnFirstUse("frost.sdpa.chain")


def device_arch(device: torch.device | int | str) -> str:
    """The device's arch, e.g. "sm_90a" (:func:`frost.templates.host.device_arch`)."""
    from frost.templates.host import device_arch as arch

    return arch(device)


def raw_stream(idx: int) -> int:
    """The raw handle of device ``idx``'s current torch stream
    (:func:`frost.templates.host.raw_stream`). The first call binds this module's name to that
    function, so :func:`backward`'s later calls (one per launch) pay no import."""
    from frost.templates.host import raw_stream as raw

    globals()["raw_stream"] = raw
    return raw(idx)


def _env_flag(name: str) -> bool:
    """An on/off environment variable: 1 / true / yes / on, or unset / empty / 0 / false / no /
    off (any case); ValueError naming it otherwise."""
    value = os.environ.get(name, "").strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("", "0", "false", "no", "off"):
        return False
    raise ValueError(f"{name}={os.environ[name]!r}: expected 1/true/yes/on or 0/false/no/off")


# FROST_DISABLE_PDL=1 starts the process with PDL off (read once, here; set_pdl changes it). The
# compile cache keys on it (VariantKey.use_pdl), so no stale kernel survives a switch.
_PDL = {"enabled": not _env_flag("FROST_DISABLE_PDL")}
_FAST = {"enabled": True}  # FastLauncher (True) or the DSL's own argument marshalling (False)
_CACHE: dict = {}
_STATS = {"compiles": 0, "disk_hits": 0, "disk_stores": 0}  # (compiles: this process's)


def set_pdl(enabled: bool) -> None:
    """Launch the chain with (True) or without programmatic dependent launch. The default is
    True, or False when ``FROST_DISABLE_PDL`` was set (1 / true / yes / on) at import."""
    if not isinstance(enabled, bool):
        raise TypeError(f"enabled must be a bool, got {type(enabled).__name__}")
    _PDL["enabled"] = enabled


def set_fast_launch(enabled: bool) -> None:
    """Use the zero-marshalling :class:`~frost.sdpa.chain.FastLauncher` (default) or the DSL's
    own call path (slower; same kernels, same results)."""
    _FAST["enabled"] = bool(enabled)


def pdl_enabled() -> bool:
    """Whether chains launch with programmatic dependent launch (set by :func:`set_pdl`)."""
    return _PDL["enabled"]


@dataclasses.dataclass(frozen=True)
class VariantKey:
    """What a compiled chain is specialised on (everything else is a runtime scalar)."""

    arch: str
    dtype: str            # "fp16" | "bf16"
    head_dim: int
    causal_align: str     # "none" | "bottom_right" | "top_left"
    deterministic: bool
    use_pdl: bool
    tile: tuple = ()      # forced plan keys ((key, value), ...) on top of the default plan's;
                          # () for the default (tests and experiments; backward() never sets it)
    tail_split: bool = False  # the main kernel built with tail splits (for the calls whose
                              # grid the model cuts: tail_split())
    mods: str = ""        # the variant's score map and mask (frost.ir.mods.AttentionMods) as
                          # JSON (variant_mods()); "" for plain attention

    def attention_mods(self):
        """The :class:`frost.ir.mods.AttentionMods` of :attr:`mods`."""
        from frost.ir import mods as ir

        return ir.AttentionMods.from_dict(json.loads(self.mods)) if self.mods else ir.NO_MODS


# ------------------------------------------------------------------------------- variants
def variant_key(p: Problem, arch: str, causal: bool, causal_align: str, deterministic: bool,
                use_pdl: bool, mods: str = "") -> VariantKey:
    """The compile-cache key of a call: what the kernels are specialized on (B, H, S and strides
    are runtime values and are not in it)."""
    return VariantKey(arch=arch, dtype=p.dtype, head_dim=p.d,
                      causal_align=causal_align if causal else "none",
                      deterministic=deterministic, use_pdl=use_pdl, mods=mods)


def variant_mods(mods=None, softcap: float | None = None) -> str:
    """:attr:`VariantKey.mods` of a call's ``mods`` argument: an
    :class:`frost.ir.mods.AttentionMods`, or a :class:`frost.ir.Program` whose ScoreMod and Mask
    stages are read (:func:`frost.ir.mods.mods_of`); "" for None or the identity. ``softcap``
    adds the score map ``softcap·tanh(score / softcap)`` (:func:`frost.ir.mods.softcap`).
    TypeError or ValueError naming the argument for anything else."""
    if mods is None and softcap is None:
        return ""
    if softcap is not None and (isinstance(softcap, bool) or not isinstance(softcap, (int, float))):
        raise TypeError(f"softcap must be a number, got {type(softcap).__name__}")
    try:
        hash(mods)
    except TypeError:
        raise TypeError(f"mods must be a frost.ir.mods.AttentionMods or a frost.ir.Program, "
                        f"got {type(mods).__name__}") from None
    return _variant_mods(mods, None if softcap is None else float(softcap))


@functools.lru_cache(maxsize=256)
def _variant_mods(mods, softcap: float | None) -> str:
    """:func:`variant_mods` once its arguments are checked (cached: a call's hot path)."""
    from frost.ir import Program
    from frost.ir import mods as ir

    if isinstance(mods, Program):
        mods = ir.mods_of(mods)
    if mods is None:
        mods = ir.NO_MODS
    if not isinstance(mods, ir.AttentionMods):
        raise TypeError(f"mods must be a frost.ir.mods.AttentionMods or a frost.ir.Program, "
                        f"got {type(mods).__name__}")
    if softcap is not None:
        if mods.score_mod != ir.score:
            raise ValueError("softcap with a mods score map: put the cap into the map instead")
        mods = dataclasses.replace(mods, score_mod=ir.softcap(softcap))
    if mods.identity:
        return ""
    return json.dumps(mods.to_dict(), sort_keys=True)


# SM120 / SM121 are the targets; sm_90a (H100/H200) has every instruction the kernels use and runs
# them under the SM120 shared-memory budget
SUPPORTED_DEVICE_ARCHS = ("sm_120a", "sm_121a", "sm_90a")


def make_plan(key: VariantKey) -> Plan:
    """The chain's Plan from the scheduler (:func:`frost.recipes.bwd_main.variant_plan`): SM120
    budgets and tiles on every arch (the H200 runs the sm_120a plan under an sm_90a build of the
    same source), with ``key.tile``'s keys forced on top of the measured default; a tail-split
    key gets its split build's plan."""
    from frost.recipes.bwd_main import variant_plan

    if key.arch not in SUPPORTED_DEVICE_ARCHS:
        raise ValueError(f"q device: arch {key.arch} is not supported; frost's kernels need "
                         f"{', '.join(SUPPORTED_DEVICE_ARCHS)} (mma.sync + TMA + griddepcontrol)")
    return variant_plan(key.arch, key.head_dim, causal=key.causal_align != "none",
                        dtype=key.dtype, tile=dict(key.tile), tail_split=key.tail_split)


def main_choices(key: VariantKey) -> dict:
    """Code choices (:class:`frost.templates.bwd_main.code.CodeChoices`) the main kernel of
    ``key`` is built with on top of its plan's measured defaults: none today (a hook that
    ``bench/chain_ab.py`` wraps to time code choices on the whole call)."""
    return {}


def main_recipe(key: VariantKey, plan: Plan | None = None, code: dict | None = None):
    """The :class:`frost.recipes.bwd_main.BwdMainRecipe` of ``key``'s main kernel: its plan
    (default :func:`make_plan`), the variant and the code choices resolved (``code``: choices on
    top of :func:`main_choices`). ``frost plan`` and ``frost compile`` print it."""
    from frost.recipes.bwd_main import bwd_main_recipe

    plan = make_plan(key) if plan is None else plan
    causal = key.causal_align != "none"
    kw = dict(dtype=key.dtype, causal=causal, causal_align=key.causal_align if causal else None,
              use_pdl=key.use_pdl)
    if key.deterministic:
        kw["dq_splits"] = True
    if key.tail_split:
        kw["tail_split"] = 1
    if key.mods:
        kw["mods"] = key.attention_mods()
    return bwd_main_recipe(plan.kernel("bwd_main"), **kw, **{**main_choices(key), **(code or {})})


def _main_kernel(key: VariantKey, plan, code: dict | None = None):
    """The main kernel (:mod:`frost.templates.bwd_main`) built from :func:`main_recipe`."""
    from frost.recipes.bwd_main import kernel_of

    return kernel_of(main_recipe(key, plan, code))


@dataclasses.dataclass
class CompiledChain:
    key: VariantKey
    cfg: "_chain.ChainConfig"
    compiled: object
    main: object = None   # the BwdMainKernel inside (None for chains built without one)
    launchers: dict = dataclasses.field(default_factory=dict)  # device index -> launcher

    def launch(self, values, device_index: int = 0) -> None:
        """Launch on the current CUDA context, which must be that of ``device_index`` (the module
        is loaded once per device)."""
        if not _FAST["enabled"]:
            return self._slow(values)
        fn = self.launchers.get(device_index)
        if fn is None:
            fn = self.launchers[device_index] = _chain.FastLauncher.create(self.compiled) or self._slow
        fn(values)

    def _slow(self, values) -> None:
        import cuda.bindings.driver as cuda

        self.compiled(*values[:-1], cuda.CUstream(values[-1]))


def chain_program(key: VariantKey, *, with_main: bool = True,
                  stages: tuple[str, ...] = ("rowdot", "bwd_main", "dq_convert"),
                  plan: Plan | None = None,
                  code: dict | None = None) -> tuple[_chain.ChainConfig, _chain.BwdChain, tuple]:
    """(ChainConfig, the @cute.jit chain function, its compile args) for one variant.

    ``plan`` (default :func:`make_plan`) and ``code`` (main-kernel code choices on top of
    :func:`main_choices`) are for tools that compile a variant the call would not
    (``frost compile --from-model / --code``, :func:`frost.sdpa.resources.chain_resources`)."""
    import cutlass

    from frost.templates.dq_convert import DqConvertConfig
    from frost.templates.rowdot import RowDotConfig

    plan = make_plan(key) if plan is None else plan
    dtype = cutlass.BFloat16 if key.dtype == "bf16" else cutlass.Float16
    cfg = _chain.ChainConfig.of(
        plan.kernel("bwd_main"), dtype, key.head_dim,
        rowdot=RowDotConfig.from_plan(plan, 16, key.head_dim, key.use_pdl),
        dq_convert=DqConvertConfig.from_plan(plan, 16, key.head_dim, key.use_pdl))
    mk = _main_kernel(key, plan, code) if with_main else None
    return cfg, _chain.BwdChain(cfg, mk, stages), _chain.compile_args(dtype)


def build(key: VariantKey, *, with_main: bool = True,
          stages: tuple[str, ...] = ("rowdot", "bwd_main", "dq_convert")) -> CompiledChain:
    """Plan + compile one variant (no GPU needed to compile)."""
    import cutlass.cute as cute

    from frost.tile_dsl.compile import cute_options
    from frost.tile_dsl.nvvm import for_arch

    cfg, fn, args = chain_program(key, with_main=with_main, stages=stages)
    # the main kernel's code choices may add ptxas flags (CodeChoices.compile_options) for the
    # whole module: a function of the key too, like the arch's NVVM options
    opts = cute_options(key.arch, fn.main.code.compile_options if fn.main else "")
    with for_arch(key.arch):  # NVVM options are a function of the arch, so the key covers them
        compiled = cute.compile(fn, *args, options=opts)
    _STATS["compiles"] += 1
    return CompiledChain(key, cfg, compiled, fn.main)


_BUILD_LOCK = threading.Lock()


def get_chain(key: VariantKey) -> CompiledChain:
    """The compiled chain of ``key``: from the process's cache, else from the disk cache
    (:mod:`frost.sdpa.cache`, ``$FROST_CACHE_DIR``), else compiled (and stored there); kept
    for the process. Threads whose first calls want the same variant at once get one compile:
    the first loads or builds it under a lock, the others wait and take its entry (processes:
    the disk cache's file lock, the same way)."""
    entry = _CACHE.get(key)
    if entry is None:
        with _BUILD_LOCK:
            entry = _CACHE.get(key)
            if entry is None:
                from frost.sdpa.cache import default_store

                entry = _CACHE[key] = load_or_build(key, default_store())[0]
                return entry
    import logging

    from frost.tile_dsl.log import logger

    log = logger()
    if log.isEnabledFor(logging.DEBUG):
        _log_event(log, logging.DEBUG, key, "memory", 0.0, "memory hit")
    return entry


def load_or_build(key: VariantKey, store=None, *, note: bool = True) -> tuple[CompiledChain, str]:
    """``key``'s chain loaded from ``store`` (a :class:`frost.sdpa.cache.Store`), else
    compiled by :func:`build` and stored there (under the entry's file lock: a process that
    waited for another's compile loads its entry); ``store=None``: compiled, not stored.
    Returns (the chain, ``"disk"`` or ``"compile"``). Logs each through the ``frost`` logger;
    ``note``: a compile shows :func:`frost.tile_dsl.log.progress`'s note in a terminal."""
    import contextlib
    import logging
    import time

    from frost.sdpa import cache as disk
    from frost.tile_dsl.log import logger, progress

    log = logger()
    what = f"{disk.PROGRAM} {disk.variant_label(dataclasses.asdict(key))} {key.arch}"
    t0 = time.perf_counter()
    fn = slot = None
    if store is not None:
        plan = make_plan(key)
        fields = disk.entry_fields(dataclasses.asdict(key), plan.to_json(), main_choices(key))
        fn = store.load(fields)
    if fn is None:
        with (store.fill(fields) if store is not None else contextlib.nullcontext()) as slot:
            fn = slot.loaded if slot is not None else None
            if fn is None:
                with progress(what) if note else contextlib.nullcontext():
                    ch = build(key)
                seconds = time.perf_counter() - t0
                where = ""
                if slot is not None and isinstance(ch, CompiledChain):  # (tests stand builds in)
                    if slot.put(ch.compiled, seconds) is not None:
                        _STATS["disk_stores"] += 1
                        where = f"; stored in {store.root}"
                _log_event(log, logging.INFO, key, "miss", seconds,
                           f"miss, compiled in {seconds:.2f} s{where}")
                return ch, "compile"
    cfg, prog, _ = chain_program(key, plan=plan)
    _STATS["disk_hits"] += 1
    seconds = time.perf_counter() - t0
    _log_event(log, logging.INFO, key, "disk", seconds,
               f"disk hit, loaded in {seconds:.3f} s from {store.path(fields)}")
    return CompiledChain(key, cfg, fn, prog.main), "disk"


def _log_event(log, level: int, key: VariantKey, cache: str, seconds: float, text: str) -> None:
    """One record of where a chain came from: its message names the variant and the arch; its
    ``frost`` attribute holds the same as data (program, variant, arch, cache: memory | disk |
    miss, seconds)."""
    from frost.sdpa.cache import PROGRAM, variant_label

    what = variant_label(dataclasses.asdict(key))
    log.log(level, "%s %s %s: %s", PROGRAM, what, key.arch, text,
            extra={"frost": {"event": "chain", "program": PROGRAM, "variant": what,
                             "arch": key.arch, "cache": cache, "seconds": seconds}})


def cache_info() -> dict:
    """What the compile cache holds: ``variants`` (count) and ``keys`` in this process;
    ``compiles``, ``disk_hits`` and ``disk_stores`` so far in this process; ``disk_dir``, the
    disk cache's folder (None: off)."""
    from frost.sdpa.cache import cache_dir

    return {"variants": len(_CACHE), "compiles": _STATS["compiles"], "keys": list(_CACHE),
            "disk_hits": _STATS["disk_hits"], "disk_stores": _STATS["disk_stores"],
            "disk_dir": cache_dir()}


def clear_cache(disk: bool = False) -> None:
    """Forget every compiled chain and call signature of this process (the next call loads
    from the disk cache, or compiles); ``disk=True``: empty the disk cache's folder too
    (``frost cache clear``)."""
    _CACHE.clear()
    _SIGS.clear()
    if disk:
        from frost.sdpa.cache import default_store

        store = default_store()
        if store is not None:
            store.clear()


# -------------------------------------------------------------------------------- the call
@dataclasses.dataclass
class _Prepared:
    """Everything about a call that its tensor signature fixes (cached per signature)."""

    p: Problem
    scale: float
    deterministic: bool
    causal: bool
    causal_align: str
    strides: list
    mods: str = ""  # VariantKey.mods
    chains: dict = dataclasses.field(default_factory=dict)  # use_pdl -> _Launch


@dataclasses.dataclass(frozen=True)
class _Launch:
    """What a call with this signature and PDL setting launches: the chain, the shapes it
    allocates, and every launch value except the pointers and the stream (order:
    :data:`frost.sdpa.chain.ARG_NAMES`), precomputed once."""

    chain: CompiledChain
    shape_q: tuple
    shape_kv: tuple
    ws_floats: int        # delta | lse_log2 | dq_accum [| tail-split slots | counters]
    ws_rows: int          # B·H_q·S_q_pad: each workspace region's length in floats
    slots_at: int         # where the tail-split slots start, in floats (0: no cut)
    counters_at: int      # where its int32 arrival counters start (zeroed by every call)
    n_split: int          # tiles this call cuts (counters it needs)
    scalars: tuple        # b, s_q, s_kv, h_q, h_kv, s_pad, n_splits, n_whole, parts, strides..., scale

    @classmethod
    def of(cls, ch: CompiledChain, prep: "_Prepared", device_index: int) -> "_Launch":
        p = prep.p
        s_pad, n_splits, floats = workspace_layout(ch.cfg, p, prep.deterministic)
        split = tail_split(ch, p, device_index)
        if split.n_split:  # its kernel built with tail splits (rules.split_build_tile's plan)
            ch = get_chain(dataclasses.replace(ch.key, tail_split=True))
        slots_at = counters_at = 0
        if split.n_split:  # slots, then the counters, each a multiple of 4 floats (16 bytes)
            slots_at = floats
            counters_at = slots_at + split.n_split * split.parts * ch.cfg.split_slot_floats
            floats = counters_at + -(-split.n_split // 4) * 4
        return cls(ch, (p.b, p.s_q, p.h_q, p.d), (p.b, p.s_kv, p.h_kv, p.d), floats,
                   p.b * p.h_q * s_pad, slots_at, counters_at, split.n_split,
                   _scalars(p, s_pad, n_splits, prep.strides, prep.scale, split))


def _io_strides(q, k, v, o, do, lse) -> list:
    """The strides the chain takes: (b, s, h) of q, k, v, o, dO in 16-byte vectors (0 where
    the extent is 1), then lse's three in elements."""
    out = []
    for t in (q, k, v, o, do):
        out += [s // _ALIGN_ELEMS if n > 1 else 0 for s, n in zip(t.stride()[:3], t.shape[:3])]
    return out + list(lse.stride())


def _scalars(p: Problem, s_pad: int, n_splits: int, strides, scale: float, split=None) -> tuple:
    """Every launch value after the pointers and before the stream (``split``: a
    :class:`~frost.recipes.grid.TailSplit`, or None for every tile whole)."""
    n_whole, parts = (split.n_whole, split.parts) if split is not None else (0, 1)
    return (p.b, p.s_q, p.s_kv, p.h_q, p.h_kv, s_pad, n_splits, n_whole, parts, *strides, scale)


_TAIL_SPLIT = {"enabled": True}
_SMS: dict = {}


def set_tail_split(enabled: bool) -> None:
    """Let non-causal calls cut the grid's last KV tiles into parts (True, the default) or run
    every tile whole (for A/B timing). Every call signature is planned again; compiled chains
    stay cached. With a cut, dK/dV sum their parts in a fixed order (still bitwise reproducible
    from run to run), but the cut depends on the GPU's SM count and on this setting."""
    if not isinstance(enabled, bool):
        raise TypeError(f"enabled must be a bool, got {type(enabled).__name__}")
    _TAIL_SPLIT["enabled"] = enabled
    _SIGS.clear()


def tail_split(ch: CompiledChain, p: Problem, device_index: int) -> TailSplit:
    """The grid model's tail split (:func:`frost.recipes.grid.call_tail_split`) of this call on
    device ``device_index``'s SMs; no cut where the plan cannot take one, for chains without a
    main kernel, or after ``set_tail_split(False)``."""
    from frost.recipes.grid import call_tail_split

    main = ch.main
    sms = _SMS.get(device_index)
    if sms is None and main is not None and _TAIL_SPLIT["enabled"]:
        sms = _SMS[device_index] = _torch().cuda.get_device_properties(device_index).multi_processor_count
    return call_tail_split(main.kp if main is not None else None, ch.key.causal_align != "none",
                           p.b, p.h_q, p.h_kv, p.s_q, p.s_kv, sms=sms or 1,
                           enabled=_TAIL_SPLIT["enabled"])


_SIGS: dict = {}
_MAX_SIGS = 1024


def _signature(q, k, v, o, do, lse, causal, causal_align, scale, deterministic, mods, softcap):
    return (mods, softcap, type(softcap), q.shape, q.stride(), k.shape, k.stride(), v.shape, v.stride(), o.shape, o.stride(),
            do.shape, do.stride(), lse.shape, lse.stride(), q.dtype, k.dtype, v.dtype, o.dtype,
            do.dtype, lse.dtype, q.device, k.device, v.device, o.device, do.device, lse.device,
            causal, type(causal), causal_align, scale, type(scale), deterministic, type(deterministic),
            q.layout, k.layout, v.layout, o.layout, do.layout, lse.layout)


def _prepare(q, k, v, o, do, lse, causal, causal_align, scale, deterministic, mods,
             softcap) -> _Prepared:
    p = validate(q, k, v, o, do, lse, causal=causal, causal_align=causal_align, scale=scale,
                 deterministic=deterministic)
    strides = _io_strides(q, k, v, o, do, lse)
    # deterministic: dK/dV are reproducible in the KV-stationary chain; dQ uses bwd_main's
    # per-KV-tile split mode, summed in a fixed order by dq_convert
    return _Prepared(p, 1.0 / math.sqrt(p.d) if scale is None else float(scale), deterministic, causal,
                     causal_align, strides, variant_mods(mods, softcap))


def backward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, o: torch.Tensor,
             do: torch.Tensor, lse: torch.Tensor, *, causal: bool = False,
             causal_align: str = "bottom_right", scale: float | None = None,
             deterministic: bool = False, check_finite: bool = False,
             out: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None,
             workspace: torch.Tensor | None = None, mods: "AttentionMods | Program | None" = None,
             softcap: float | None = None,
             ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The gradients (dq, dk, dv) of ``o = softmax(q·kᵀ·scale)·v`` given ``do = ∂L/∂o``.

    Args:
        q, o, do: (B, S_q, H_q, D) fp16 or bf16 tensors on one CUDA device (sm_120a, sm_121a or
            sm_90a), all of one dtype; last dim contiguous, the other strides multiples of 8
            elements, base addresses 16-byte aligned.
        k, v: (B, S_kv, H_kv, D), the same dtype, device and stride rules. H_q must be a
            multiple of H_kv (GQA; H_kv = 1 is MQA): dk and dv are summed over each group.
        lse: fp32 (B, H_q, S_q), the forward's log-sum-exp in natural log (any strides).
        causal: mask key j from query i when j > i (after ``causal_align``).
        causal_align: "bottom_right" (the last query sees every key; the default) or
            "top_left" (query i sees keys 0..i); matters only when S_q != S_kv.
        scale: the softmax scale (default 1/sqrt(D)).
        deterministic: dq, dk and dv bitwise identical over repeated calls. dQ then sums one
            fp32 partial per KV tile in a fixed order, so the workspace grows with S_q·S_kv
            (:func:`workspace_bytes`; 4 GiB at B=4, H=16, S=4096, D=128). The first call of a
            signature (shapes, strides, options) checks it with the outputs against the
            device's free memory and raises ValueError before compiling if it cannot fit; a
            best-effort check (later calls of the signature and fragmentation are not seen).
        out: caller-owned (dq, dk, dv) to write: contiguous, q's (k's) shape, dtype and device;
            returned as they are. With ``workspace`` a training loop allocates nothing a call.
        workspace: a caller-owned fp32 CUDA tensor of at least :func:`workspace_bytes` / 4
            elements (contiguous, on q's device) used in place of a fresh one; ValueError if it
            is too small.
        mods: the attention variant, from the IR (:mod:`frost.ir.mods`): an ``AttentionMods``
            (a score map over ``score`` = scale·q·k and the pair's indices, and a mask), or a
            ``frost.ir.Program`` whose ``ScoreMod`` / ``Mask`` stages are read. ``lse`` and ``o``
            must come from a forward with the same variant. Each distinct variant compiles once.
        softcap: scores become ``softcap·tanh(score / softcap)`` before the softmax (Gemma 2;
            a number > 0), the gradient through it taken by sympy; ``lse`` and ``o`` from a
            forward with the same cap.
        check_finite: first check that every ``lse`` entry is finite or -inf, and raise
            ValueError naming the first bad row otherwise (a device-to-host sync; off by
            default).

    Non-finite values: NaN or inf in q, k, v, o or do propagate as in the float64 reference
    (the kernels do not hang on them). A row whose ``lse`` is -inf (every key masked) gets
    exactly zero gradients; a row whose ``lse`` is +inf or NaN, which no forward produces, gets
    NaN gradients (or the ValueError of ``check_finite=True``). Zero-size calls (B, S_q, S_kv or
    H = 0) return zero-filled outputs of the right shapes and launch nothing.

    D is any multiple of 8 in [32, 256]; S_q and S_kv are independent and need not be
    multiples of a tile. B, H and S are runtime values: one compile per (arch, dtype, D, causal
    alignment, deterministic, PDL), cached for the process (:func:`cache_info`), plus a
    tail-split build of the same variant for calls whose grid the model cuts.

    Returns:
        (dq, dk, dv): contiguous (B, S, H, D) tensors in the io dtype.

    Raises:
        ImportError: torch is not installed (``pip install torch``).
        TypeError: a non-tensor argument, a dtype that is not fp16 / bf16 (lse: not fp32),
            mixed dtypes, a non-bool ``causal`` / ``deterministic``, or a ``scale`` that is not
            a real number.
        ValueError: a non-strided layout, a shape, stride, alignment, head dim, GQA ratio, LSE
            shape or device the kernels cannot take, an unknown ``causal_align``, a non-finite
            ``scale``, a GPU arch frost has no kernels for, or a deterministic workspace that
            does not fit (above); each names the argument, and nothing is launched.

        >>> dq, dk, dv = frost.sdpa.backward(q, k, v, o, do, lse, causal=True)  # doctest: +SKIP
    """
    torch = _torch()  # first: without torch, say how to install it
    try:
        sig = _signature(q, k, v, o, do, lse, causal, causal_align, scale, deterministic, mods,
                         softcap)
        prep = _SIGS.get(sig)
    except (AttributeError, TypeError, RuntimeError):  # not tensors, unhashable option, sparse
        # tensors without strides: the slow path names the argument
        sig, prep = None, None
    if prep is None:
        prep = _prepare(q, k, v, o, do, lse, causal, causal_align, scale, deterministic, mods,
                        softcap)
        if sig is not None:
            if len(_SIGS) >= _MAX_SIGS:
                _SIGS.clear()
            _SIGS[sig] = prep
    if check_finite:
        _check_lse_finite(lse)
    ptrs = (q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(), do.data_ptr())
    if (ptrs[0] | ptrs[1] | ptrs[2] | ptrs[3] | ptrs[4]) % _ALIGN_BYTES:
        validate(q, k, v, o, do, lse, causal=causal, causal_align=causal_align, scale=scale,
                 deterministic=deterministic)  # raises, naming the misaligned argument
    p = prep.p
    dev, dt = q.device, q.dtype
    if out is not None:
        _check_out(out, q, k, v)
    if p.b * p.s_q * p.h_q == 0 or p.s_kv == 0:  # nothing to launch
        if out is not None:
            for x in out:
                x.zero_()
            return tuple(out)
        shape_q, shape_kv = (p.b, p.s_q, p.h_q, p.d), (p.b, p.s_kv, p.h_kv, p.d)
        return (torch.zeros(shape_q, dtype=dt, device=dev), torch.zeros(shape_kv, dtype=dt, device=dev),
                torch.zeros(shape_kv, dtype=dt, device=dev))
    use_pdl = _PDL["enabled"]
    run = prep.chains.get(use_pdl)
    if run is None:
        key = variant_key(p, device_arch(dev), causal, causal_align, prep.deterministic, use_pdl,
                          prep.mods)
        if prep.deterministic:  # before the compile: its dQ partials grow with S_q * S_kv
            outputs = q.element_size() * p.b * p.d * (p.s_q * p.h_q + 2 * p.s_kv * p.h_kv)
            check_workspace(key, p, _free_bytes(torch, q.get_device()) - outputs, q.get_device())
        run = prep.chains[use_pdl] = _Launch.of(get_chain(key), prep, q.get_device())
    try:
        if out is None:
            dq = torch.empty(run.shape_q, dtype=dt, device=dev)
            dk = torch.empty(run.shape_kv, dtype=dt, device=dev)
            dv = torch.empty(run.shape_kv, dtype=dt, device=dev)
        else:
            dq, dk, dv = out
        if workspace is None:
            ws = torch.empty(run.ws_floats, dtype=torch.float32, device=dev)
        else:
            ws = _check_workspace_tensor(workspace, run.ws_floats, dev)
    except torch.OutOfMemoryError as e:
        raise type(e)(
            f"frost.sdpa.backward: out of GPU memory allocating the outputs and the "
            f"{4 * run.ws_floats / 2**30:.2f} GiB fp32 workspace (deterministic="
            f"{prep.deterministic}; deterministic=True grows it with S_q·S_kv, see "
            f"frost.sdpa.api.workspace_bytes); nothing was launched. {e}") from None
    a, rows = ws.data_ptr(), run.ws_rows  # rows: a multiple of 32, regions stay 128-B aligned
    idx = q.get_device()
    stream = raw_stream(idx)
    slots = counters = 0
    if run.n_split:  # the arrival counters start at zero on every call (a memset)
        ws[run.counters_at:run.ws_floats].zero_()
        slots, counters = a + 4 * run.slots_at, a + 4 * run.counters_at
    vals = (*ptrs, lse.data_ptr(), dq.data_ptr(), dk.data_ptr(), dv.data_ptr(), a, a + 4 * rows,
            a + 8 * rows, slots, counters, *run.scalars, stream)
    if idx == torch.cuda.current_device():
        run.chain.launch(vals, idx)
    else:
        with torch.cuda.device(idx):
            run.chain.launch(vals, idx)
    return dq, dk, dv


def workspace_bytes(key: VariantKey, p: Problem) -> int:
    """Bytes of the fp32 workspace a call of variant ``key`` at sizes ``p`` allocates
    (:func:`frost.sdpa.workspace.workspace_bytes`, from the plan; nothing is compiled)."""
    return _ws.workspace_bytes(chain_program(key, with_main=False)[0], p, key.deterministic)


def check_workspace(key: VariantKey, p: Problem, free: int, device_index: int = 0) -> int:
    """The workspace's bytes, or ValueError naming ``deterministic`` where it exceeds ``free``
    (:func:`frost.sdpa.workspace.check_workspace`)."""
    return _ws.check_workspace(chain_program(key, with_main=False)[0], p, key.deterministic,
                               free, device_index)


def _check_out(out, q, k, v) -> None:
    """ValueError/TypeError naming the ``out`` entry that cannot take the result."""
    torch = _torch()
    if not isinstance(out, (tuple, list)) or len(out) != 3:
        raise TypeError("out must be a tuple (dq, dk, dv) of tensors")
    for name, x, like in zip(("dq", "dk", "dv"), out, (q, k, v)):
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"out {name} must be a torch.Tensor, got {type(x).__name__}")
        if tuple(x.shape) != tuple(like.shape) or x.dtype != like.dtype or x.device != like.device:
            raise ValueError(f"out {name} must be {tuple(like.shape)} {like.dtype} on "
                             f"{like.device}, got {tuple(x.shape)} {x.dtype} on {x.device}")
        if not x.is_contiguous():
            raise ValueError(f"out {name} must be contiguous")


def _check_workspace_tensor(ws, floats: int, dev):
    """``ws`` if it can serve as a call's workspace of ``floats`` fp32 elements, else ValueError
    naming ``workspace`` and the size needed."""
    torch = _torch()
    if not isinstance(ws, torch.Tensor) or ws.dtype != torch.float32 or ws.device != dev \
            or not ws.is_contiguous():
        raise ValueError(f"workspace must be a contiguous fp32 tensor on {dev}")
    if ws.data_ptr() % 128:
        raise ValueError("workspace must start 128-byte aligned (a fresh tensor does)")
    if ws.numel() < floats:
        raise ValueError(f"workspace has {ws.numel()} fp32 elements; this call needs {floats} "
                         f"({4 * floats} bytes, frost.sdpa.api.workspace_bytes)")
    return ws


def _check_lse_finite(lse) -> None:
    """ValueError naming the first (b, h, row) whose LSE is +inf or NaN (-inf is allowed: a fully
    masked row)."""
    torch = _torch()
    bad = ~(torch.isfinite(lse) | (lse == -math.inf))
    if bool(bad.any()):
        b, h, r = (int(x) for x in bad.nonzero()[0])
        raise ValueError(f"lse must be finite or -inf (check_finite=True): lse[{b}, {h}, {r}] = "
                         f"{float(lse[b, h, r])}, and {int(bad.sum())} entries in all")


def launch_values(cfg: _chain.ChainConfig, p: Problem, q: torch.Tensor, k: torch.Tensor,
                  v: torch.Tensor, o: torch.Tensor, do: torch.Tensor, lse: torch.Tensor,
                  dq: torch.Tensor, dk: torch.Tensor, dv: torch.Tensor, scale: float,
                  deterministic: bool,
                  ws: torch.Tensor | None = None) -> tuple[torch.Tensor, list[int | float]]:
    """Allocate the workspace (unless given) and build the chain's scalar arguments
    (order: :data:`frost.sdpa.chain.ARG_NAMES`). Returns (workspace, values)."""
    torch = _torch()
    s_pad, n_splits, floats = workspace_layout(cfg, p, deterministic)
    if ws is None:
        ws = torch.empty(floats, dtype=torch.float32, device=q.device)
    rows = p.b * p.h_q * s_pad  # a multiple of 32: every region stays 128-byte aligned
    a = ws.data_ptr()
    vals = [q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(), do.data_ptr(), lse.data_ptr(),
            dq.data_ptr(), dk.data_ptr(), dv.data_ptr(), a, a + 4 * rows, a + 8 * rows, 0, 0,
            *_scalars(p, s_pad, n_splits, _io_strides(q, k, v, o, do, lse), scale),
            raw_stream(q.get_device())]
    return ws, vals
