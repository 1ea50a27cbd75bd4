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
                  (:func:`.rules.pick_interleave`: 2 where dQ's accumulator is small, else 1; 0 for
                  staged or chunked dQ below d=192; v4, v28; at most 1 under the plan's
                  ``exchange_sync``, where dQ waits for all of dS)
``dq_guard``      rows past S_q: ``rows`` skips their dQ atomics (ptxas puts each atomic in a
                  branch and a convergence barrier), ``pad`` adds them into the workspace's
                  padding (S_q_pad a multiple of tile_m, checked at launch; v54,
                  :func:`.rules.pick_dq_guard`)
``dq_accs``       1 or 2 fp32 accumulators for dQ = dS·K: with 2 the odd k-blocks go to the
                  second (twice the independent MMA chains, 16 more registers at d=128; v54,
                  :data:`.measured.DQ_ACCS_MEASURED`)
``stat_vec``      1: each MMA thread's lse_log2 / delta rows sit in consecutive smem slots
                  (the producer permutes them, ``pointwise.stat_slot``): two vector loads a
                  trip instead of 2 V scalar ones (V = rows a thread owns, 4 at d=128);
                  on for the non-causal d=64 default only (v63, :data:`.measured.STAT_VEC_MEASURED`)
``trip_step``     1: the MMA warps step each trip's (q head, q tile) instead of dividing the
                  trip index by the runtime q-range length every trip (v58,
                  :data:`.measured.TRIP_STEP_MEASURED`; non-causal d=128 since v121); 0: divide
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
                  ``frost.sdpa.grid.pick_tail_split``); the last part to finish sums the
                  parts' dK/dV (``epilogue.gather_parts``). Where it fits
                  (:func:`.rules.tail_split_fits`); built only for the calls that cut (v44)
``reg_usage``     ptxas ``--register-usage-level`` (0..10; 5, ptxas' default, adds no flag) for
                  the module the kernel is compiled in (:attr:`CodeChoices.compile_options`):
                  the same PTX, allocated and scheduled otherwise (v80,
                  :data:`.measured.REG_USAGE_MEASURED`)
``ptxas_opt``     ptxas ``-O`` level (1..3; 3, ptxas' default, adds no flag), likewise (v82,
                  :data:`.measured.PTXAS_OPT_MEASURED`: -O2 with level 3 at causal d=128, v86;
                  a build asked for another ``reg_usage`` keeps -O3)
``dq_ds_held``    1: dS's A fragments of dQ = dS·K loaded once a trip and held through every
                  dQ chunk (chunked dQ re-reads only K; v88); 0: each chunk re-reads dS
                  (:data:`.measured.DQ_DS_HELD_MEASURED`: 1 at d=256, causal v95, v96)
``do_early``      1 (the plan's split ring, ``do_stages``): dV = Pᵀ dO runs alone first and
                  releases dO's stage, then dK runs with dQ's first chunk and releases Q's;
                  interleave 1 and 2 build the same trip. 0: both stages released together
                  after dV/dK (after dQ too at interleave 2 with one chunk). The refill starts
                  early only where do_stages < q_stages (the producer waits on Q's stage
                  first). :data:`.measured.DO_EARLY_MEASURED`: 1 at non-causal d=256 with
                  ptxas level 3 (0.98x, v102/v103); causal 1.015x / 1.018x; 1.04-1.09x on
                  d=160/192 split rings (v98-v100)
================  =========================================================================
"""

from __future__ import annotations

import dataclasses

from frost.sched.plan import KernelPlan
from frost.tile_dsl.compile import (PTXAS_DEFAULT_OPT_LEVEL, PTXAS_DEFAULT_REG_USAGE,
                                   ptxas_options)

from .measured import (pick_do_early, pick_dq_accs, pick_dq_ds_held, pick_ptxas_opt,
                       pick_reg_usage, pick_stat_vec, pick_trip_step, stat_vec_fits)
from .rules import (default_tail_split, dq_chunks_fit, pick_dq_chunks, pick_dq_guard,
                    pick_dq_k_held, pick_interleave, pick_lpt_heads, pick_q_rotate,
                    tail_split_fits)


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
        """The choices' names: the keywords :meth:`resolve` (and ``BwdMainKernel``) take."""
        return frozenset(f.name for f in dataclasses.fields(cls))

    @classmethod
    def types(cls) -> dict:
        """{name: int or str}: the type each choice's value takes (``dq_guard`` is a word, the
        others ints)."""
        return {f.name: (str if f.type in (str, "str") else int) for f in dataclasses.fields(cls)}

    @classmethod
    def pinned(cls, kp: KernelPlan, causal: bool = False, **named) -> dict:
        """Every choice as plan ``kp`` resolves it (less :data:`CALL_DECIDES`), with ``named``
        on top: a variant that changes the choices it names and keeps the others at ``kp``'s
        defaults, instead of letting them resolve again around the named ones (e.g. d=128's
        ``trip_step=0`` alone brings back its K/V prefetch). The benchmarks' ``code=default``."""
        base = dataclasses.asdict(cls.resolve(kp, causal=causal))
        return {**{k: v for k, v in base.items() if k not in CALL_DECIDES}, **named}

    @classmethod
    def parse(cls, items) -> dict:
        """``["reg_usage=7", "dq_guard=rows"]`` -> ``{"reg_usage": 7, "dq_guard": "rows"}``: the
        command line's ``KEY=VALUE`` form, each value typed by :meth:`types`. ValueError naming
        the item for a malformed one, an unknown name (listing the known ones), a name given
        twice or a non-int value of an int choice; whether the plan can take the value is checked when the kernel
        is built (:meth:`resolve`)."""
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

    @classmethod
    def resolve(cls, kp: KernelPlan, dq_chunks: int | None = None, interleave: int | None = None,
                q_rotate: int | None = None, causal: bool = False, dq_k_held: int | None = None,
                lpt_heads: int | None = None, tail_split: int | None = None,
                dq_guard: str | None = None, dq_accs: int | None = None,
                trip_step: int | None = None, stat_vec: int | None = None,
                reg_usage: int | None = None, ptxas_opt: int | None = None,
                dq_ds_held: int | None = None, do_early: int | None = None) -> "CodeChoices":
        """The measured default for every choice left None; raises CodeChoiceError for a value
        the plan cannot take."""
        tl = kp.tile
        chunks = pick_dq_chunks(kp) if dq_chunks is None else int(dq_chunks)
        if not dq_chunks_fit(kp, chunks):
            raise CodeChoiceError(f"dq_chunks={chunks} does not split d={tl['d']} into whole "
                                  f"MMA steps of {tl['dq_wn']} warp columns that tile sK's "
                                  f"swizzle atoms")
        level = pick_interleave(kp, chunks, causal) if interleave is None else int(interleave)
        if level not in (0, 1, 2):
            raise CodeChoiceError(f"interleave must be 0, 1 or 2, got {interleave!r}")
        if tl.get("exchange_sync"):
            if interleave is None:
                level = min(level, 1)
            elif level == 2:
                raise CodeChoiceError("interleave=2 runs dQ with dV/dK, but under the plan's "
                                      "exchange_sync dQ waits for every warp's dS after them")
        held = pick_dq_k_held(kp, chunks) if dq_k_held is None else dq_k_held
        if held not in (0, 1):
            raise CodeChoiceError(f"dq_k_held must be 0 or 1, got {dq_k_held!r}")
        if held and chunks != 1:
            raise CodeChoiceError(f"dq_k_held=1 holds K for the whole of d: it needs dq_chunks=1, "
                                  f"got {chunks}")
        lpt = pick_lpt_heads(kp, causal) if lpt_heads is None else lpt_heads
        if isinstance(lpt, bool) or not isinstance(lpt, int) or not 1 <= lpt < 2**31:
            raise CodeChoiceError(f"lpt_heads must be an int in [1, 2**31) (1: linear CTA order, "
                                  f"G: heaviest KV tiles first in groups of G), got {lpt_heads!r}")
        split = default_tail_split(kp, causal) if tail_split is None else tail_split
        if isinstance(split, bool) or split not in (0, 1) or \
                (split and not tail_split_fits(kp, causal)):
            raise CodeChoiceError(f"tail_split must be 0 or 1, and 1 only where it fits "
                                  f"(rules.tail_split_fits: non-causal, d <= 160, blocked dQ "
                                  f"workspace, unstaged dQ), got {tail_split!r}")
        if split and tl.get("store_warp"):
            raise CodeChoiceError("tail_split=1 needs the plan's store_warp=0 (with the producer "
                                  "warp's stores it spills 16 B; frost.sdpa plans splits so)")
        if split and lpt != 1:
            raise CodeChoiceError("tail_split=1 deals tiles in the linear order: lpt_heads must be 1")
        guard = pick_dq_guard(kp, causal) if dq_guard is None else dq_guard
        if guard not in ("pad", "rows"):
            raise CodeChoiceError(f"dq_guard must be 'pad' or 'rows', got {dq_guard!r}")
        accs = pick_dq_accs(kp, causal, chunks) if dq_accs is None else dq_accs
        if isinstance(accs, bool) or accs not in (1, 2):
            raise CodeChoiceError(f"dq_accs must be 1 or 2, got {dq_accs!r}")
        step = pick_trip_step(kp, causal) if trip_step is None else trip_step
        if isinstance(step, bool) or step not in (0, 1):
            raise CodeChoiceError(f"trip_step must be 0 or 1, got {trip_step!r}")
        sv = pick_stat_vec(kp, causal) if stat_vec is None else stat_vec
        if isinstance(sv, bool) or sv not in (0, 1) or (sv and not stat_vec_fits(kp)):
            raise CodeChoiceError(f"stat_vec must be 0 or 1, and 1 only where each MMA thread "
                                  f"owns 2, 4 or 8 S rows (whole m16 atoms), got {stat_vec!r}")
        rul = pick_reg_usage(kp, causal, split) if reg_usage is None else reg_usage
        if isinstance(rul, bool) or not isinstance(rul, int) or not 0 <= rul <= 10:
            raise CodeChoiceError(f"reg_usage must be an int in [0, 10] (ptxas' "
                                  f"--register-usage-level; 5 its default), got {reg_usage!r}")
        rot = pick_q_rotate(kp, causal, split, rul) if q_rotate is None else q_rotate
        if rot not in (0, 1):
            raise CodeChoiceError(f"q_rotate must be 0 or 1, got {q_rotate!r}")
        opt = pick_ptxas_opt(kp, causal, split, rul) if ptxas_opt is None else ptxas_opt
        if isinstance(opt, bool) or not isinstance(opt, int) or not 1 <= opt <= 3:
            raise CodeChoiceError(f"ptxas_opt must be 1, 2 or 3 (ptxas' -O; 3 its default), "
                                  f"got {ptxas_opt!r}")
        dq_ds_held = pick_dq_ds_held(kp, causal, chunks) if dq_ds_held is None else dq_ds_held
        if isinstance(dq_ds_held, bool) or not isinstance(dq_ds_held, int) or \
                dq_ds_held not in (0, 1) or (dq_ds_held and chunks < 2):
            # (dq_k_held needs one chunk: it never meets a held dS)
            raise CodeChoiceError(f"dq_ds_held must be 0 or 1, and 1 only with dQ in 2 or more "
                                  f"chunks (here dq_chunks={chunks}), got {dq_ds_held!r}")
        do_early = pick_do_early(kp, causal, level) if do_early is None else do_early
        if isinstance(do_early, bool) or not isinstance(do_early, int) or \
                do_early not in (0, 1) or (do_early and (
                "do_stages" not in tl or tl.get("exchange_sync") or level == 0)):
            raise CodeChoiceError(f"do_early must be 0 or 1, and 1 only on the plan's split ring "
                                  f"(do_stages), without exchange_sync, at interleave >= 1, got "
                                  f"{do_early!r}")
        return cls(chunks, level, rot, held, lpt, split, guard, accs, step, sv, rul, opt,
                   dq_ds_held, do_early)
