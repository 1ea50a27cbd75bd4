"""How ``bwd_main`` emits a plan: code choices that keep the plan (tiles, smem, roles) and change
only the instructions. Each default was measured on the H200 (lab/LOG.md, round-robin
A/B with ``bench/bwd_main_ab.py``); each choice has at least two values that some default
picks (``lab/default_picks.py`` lists them). The forms no default picks (among them
``dq_vec``, ``p_store``, ``lookahead``, ``exp2_poly``, ``serial_sdp``, ``dq_lag``,
``sdp_accs``, ``kv_prefetch``, ``l2_hints``, ``dq_spread``, ``persistent``, and
``dq_guard="tile"`` / ``"row_once"``, ``do_early=2``, ``lpt_heads=0``) left on 2026-12-07:
lab/LOG.md says where each was measured and how to get it back.

================  =========================================================================
``dq_chunks``     dQ = dS·K in this many d-column chunks (fewer live fp32 accumulators)
``interleave``    0: one GEMM at a time; 1: S with dP, dV with dK; 2: also dQ with dV/dK
                  (:func:`frost.recipes.bwd_rules.pick_interleave`: 2 where dQ's accumulator is small, else 1; 0 for
                  staged or chunked dQ below d=192; v4, v28; at most 1 under the plan's
                  ``exchange_sync``, where dQ waits for all of dS)
``dq_guard``      rows past S_q: ``rows`` skips their dQ atomics (ptxas puts each atomic in a
                  branch and a convergence barrier), ``pad`` adds them into the workspace's
                  padding (S_q_pad a multiple of tile_m, checked at launch; v54,
                  :func:`frost.recipes.bwd_rules.pick_dq_guard`)
``dq_accs``       1 or 2 fp32 accumulators for dQ = dS·K: with 2 the odd k-blocks go to the
                  second (twice the independent MMA chains, 16 more registers at d=128; v54,
                  :data:`frost.recipes.bwd_measured.DQ_ACCS_MEASURED`)
``stat_vec``      1: each MMA thread's lse_log2 / delta rows sit in consecutive smem slots
                  (the producer permutes them, ``pointwise.stat_slot``): two vector loads a
                  trip instead of 2 V scalar ones (V = rows a thread owns, 4 at d=128);
                  on for the non-causal d=64 default only (v63, :data:`frost.recipes.bwd_measured.STAT_VEC_MEASURED`)
``trip_step``     1: the MMA warps step each trip's (q head, q tile) instead of dividing the
                  trip index by the runtime q-range length every trip (v58,
                  :data:`frost.recipes.bwd_measured.TRIP_STEP_MEASURED`; non-causal d=128 since v121); 0: divide
``q_rotate``      1: each CTA starts its q-tile walk at its KV tile index (``masks.q_tile``), so
                  concurrent CTAs of a head add dQ into different rows (default at non-causal
                  d > 192; on causal d=128's default plan, v105; on d=64's default plans with
                  ptxas level 7, v124)
``lpt_heads``     which CTA takes which KV tile (``masks.cta_tile``): 1 the linear block order
                  (a head's KV tiles together); G >= 2 heaviest KV tiles first, in groups of G
                  (batch, head) pairs. Non-causal tiles all carry the same work: causal plans
                  only (G=8, G=2 at d > 192; v41)
``dq_k_held``     1: K's B fragments of dQ = dS·K stay in registers for the whole pass (one dQ
                  chunk; K's smem is still read by S): the dQ GEMM then reads only dS.
                  Default where the plan holds them (``dq_b_in_regs``, the scheduler's
                  choice: <= 32 registers a thread within the MMA budget; v20); 0 or 1
                  overrides the plan for an A/B (the plan's estimate then is not exact)
``tail_split``    1: the kernel can cut the grid's last KV tiles into parts along their q walk
                  (``masks.split_tile``; the launch says how many, from the grid model,
                  ``frost.recipes.grid.pick_tail_split``); the last part to finish sums the
                  parts' dK/dV (``epilogue.gather_parts``). Where it fits
                  (:func:`tail_split_fits`); built only for the calls that cut (v44)
``reg_usage``     ptxas ``--register-usage-level`` (0..10; 5, ptxas' default, adds no flag) for
                  the module the kernel is compiled in (:attr:`CodeChoices.compile_options`):
                  the same PTX, allocated and scheduled otherwise (v80,
                  :data:`frost.recipes.bwd_measured.REG_USAGE_MEASURED`)
``ptxas_opt``     ptxas ``-O`` level (1..3; 3, ptxas' default, adds no flag), likewise (v82,
                  :data:`frost.recipes.bwd_measured.PTXAS_OPT_MEASURED`: -O2 with level 3 at causal d=128, v86;
                  a build asked for another ``reg_usage`` keeps -O3)
``dq_ds_held``    1: dS's A fragments of dQ = dS·K loaded once a trip and held through every
                  dQ chunk (chunked dQ re-reads only K; v88); 0: each chunk re-reads dS
                  (:data:`frost.recipes.bwd_measured.DQ_DS_HELD_MEASURED`: 1 at d=256, causal v95, v96)
``do_early``      1 (the plan's split ring, ``do_stages``): dV = Pᵀ dO runs alone first and
                  releases dO's stage, then dK runs with dQ's first chunk and releases Q's;
                  interleave 1 and 2 build the same trip. 0: both stages released together
                  after dV/dK (after dQ too at interleave 2 with one chunk). The refill starts
                  early only where do_stages < q_stages (the producer waits on Q's stage
                  first). :data:`frost.recipes.bwd_measured.DO_EARLY_MEASURED`: 1 at non-causal d=256 with
                  ptxas level 3 (0.98x, v102/v103); causal 1.015x / 1.018x; 1.04-1.09x on
                  d=160/192 split rings (v98-v100)
================  =========================================================================
"""

from __future__ import annotations

import dataclasses

from frost.sched.plan import KernelPlan
from frost.tile_dsl.compile import (PTXAS_DEFAULT_OPT_LEVEL, PTXAS_DEFAULT_REG_USAGE,
                                   ptxas_options)

from frost.tile_dsl.swizzle import Swizzle, chunk_cols_for, dtype_bytes


class CodeChoiceError(ValueError):
    """A code choice that this plan cannot take."""


# choices that are not a variant's to set: ``tail_split`` (frost.sdpa builds it for the calls
# whose grid the model cuts)
CALL_DECIDES = frozenset({"tail_split"})


@dataclasses.dataclass(frozen=True)
class CodeChoices:
    dq_chunks: int
    interleave: int
    q_rotate: int = 0
    dq_k_held: int = 0
    lpt_heads: int = 1
    tail_split: int = 0
    dq_guard: str = "pad"
    dq_accs: int = 1
    trip_step: int = 0
    stat_vec: int = 0
    reg_usage: int = PTXAS_DEFAULT_REG_USAGE
    ptxas_opt: int = PTXAS_DEFAULT_OPT_LEVEL
    dq_ds_held: int = 0
    do_early: int = 0

    @property
    def compile_options(self) -> str:
        """The ``cute.compile`` options these choices ask for (ptxas' ``--register-usage-level``
        and ``-O``, each unless it is ptxas' default). They apply to the whole module: a chain
        compiled with them passes them to its other kernels too."""
        return ptxas_options(register_usage_level=self.reg_usage, opt_level=self.ptxas_opt)

    @classmethod
    def names(cls) -> frozenset[str]:
        """The choices' names: the keywords :func:`frost.recipes.bwd_main.resolve_code` takes."""
        return frozenset(f.name for f in dataclasses.fields(cls))

    @classmethod
    def types(cls) -> dict:
        """{name: int or str}: the type each choice's value takes (``dq_guard`` is a word, the
        others ints)."""
        return {f.name: (str if f.type in (str, "str") else int) for f in dataclasses.fields(cls)}

    @classmethod
    def parse(cls, items) -> dict:
        """``["reg_usage=7", "dq_guard=rows"]`` -> ``{"reg_usage": 7, "dq_guard": "rows"}``: the
        command line's ``KEY=VALUE`` form, each value typed by :meth:`types`. ValueError naming
        the item for a malformed one, an unknown name (listing the known ones), a name given
        twice or a non-int value of an int choice; whether the plan can take the value is checked when the recipe
        resolves them (:func:`frost.recipes.bwd_main.resolve_code`)."""
        types, out = cls.types(), {}
        for item in items:
            key, sep, val = (x.strip() for x in str(item).partition("="))
            if not sep or not key or not val:
                raise ValueError(f"bad code choice {item!r}: want KEY=VALUE")
            if key not in types:
                raise ValueError(f"bad code choice {item!r}: {key!r} is not one of "
                                 f"{', '.join(sorted(types))}")
            if key in out:
                raise ValueError(f"bad code choice {item!r}: {key} given twice")
            if types[key] is int:
                try:
                    val = int(val)
                except ValueError:
                    raise ValueError(f"bad code choice {item!r}: {val!r} is not an int") from None
            out[key] = val
        return out


# ----------------------------------------------------- where each choice can be built at all
def dq_chunks_fit(kp: KernelPlan, n: int) -> bool:
    """d splits into ``n`` chunks that are whole MMA steps of the dQ warp columns and that
    tile sK's swizzle atoms (each chunk is a column block of K's smem tile, so it must hold
    whole atoms or divide one: 32-column chunks of d=64's 64-column atoms do, 80-column chunks
    of d=160's 32-column atoms do not)."""
    d, wn = kp.tile["d"], kp.tile["dq_wn"]
    if n < 1 or d % n or (d // n) % (8 * wn):
        return False
    sk = kp.buffer("sK")
    atom = chunk_cols_for(Swizzle(*sk.swizzle), dtype_bytes(sk.dtype))
    d_c = d // n
    return d_c % atom == 0 or atom % d_c == 0


def tail_split_fits(kp: KernelPlan, causal: bool = False) -> bool:
    """Whether this plan can be built with ``tail_split=1``: non-causal (causal grids order
    their CTAs with ``lpt_heads``), at padded d <= 160, on the default dQ forms. With the
    split's code the d=192 plan (head dims 168..192) spills 16 B on sm_120a, the plans above
    d=192 (32x64 tiles, 4 dQ chunks) 20 B, the forced forms that stage dQ in smem
    (``stage_reductions``) 16 B at d=128, and the row-major workspace (``reduce_block=0``)
    52 B at d=256."""
    tl = kp.tile
    return (not causal and tl["d"] <= 160 and not tl.get("stage_reductions")
            and bool(tl.get("reduce_block")))


def exchange_split(kp: KernelPlan) -> int | None:
    """bwd_main's form of the plan's ``exchange_sync`` (``params["exchange"]``, the scheduler's
    ``_exchange_sync``): 0 without it, 1 when dV/dK are the local readers and dQ the late one,
    2 when dQ is local and dV/dK late, None for a split bwd_main does not run."""
    if not kp.tile.get("exchange_sync"):
        return 0
    ex = kp.params.get("exchange", {})
    split = (tuple(sorted(ex.get("local", ()))), tuple(sorted(ex.get("late", ()))))
    return {(("dK_part", "dV_part"), ("dQ_part",)): 1,
            (("dQ_part",), ("dK_part", "dV_part")): 2}.get(split)


def stmatrix_fits(kp: KernelPlan) -> bool:
    """Every MMA warp's S tile is whole 16x16 blocks (what one stmatrix.x4 writes)."""
    tl = kp.tile
    return tl["tile_n"] % (16 * tl["s_wn"]) == 0 and tl["tile_m"] % (16 * tl["s_wm"]) == 0


class BwdMainError(ValueError):
    """The bwd_main template cannot implement the requested plan or option."""


def exchange_mode(kp: KernelPlan) -> int:
    """:func:`exchange_split`, with BwdMainError for a split bwd_main does not run."""
    mode = exchange_split(kp)
    if mode is None:
        raise BwdMainError(f"exchange_sync: bwd_main runs dV/dK and dQ as local + late readers, "
                           f"one way or the other; the plan has {kp.params.get('exchange')}")
    return mode
