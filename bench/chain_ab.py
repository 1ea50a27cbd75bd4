"""A/B of plan options and code choices on the whole backward chain (``frost.sdpa.backward``).

Why: a plan option can change more than ``bwd_main`` (``reduce_block`` also changes how
``dq_convert`` reads the dQ workspace), so ``bench/bwd_main_ab.py``'s kernel-only ratio may not
reach the call (lab/LOG.md v106: d=128's 0.993x there, -0.6 % in the chain). Here each
variant is the row's measured options (:func:`frost.sched.tuned.tuned_options`: the row's, and
causal the causal ones) with some keys set or removed, and the main kernel's code choices
(:class:`frost.templates.bwd_main.code.CodeChoices`, e.g. ``trip_step=0``) set on top of their
measured defaults, exactly as it would ship: for each variant the planner's lookup and the
chain's main-kernel factory are patched, the chain is compiled and warmed through
``frost.sdpa.backward`` (the plan and the code built are checked to carry the variant), and its
compiled chain and call cache are kept; then ``--rounds`` rounds time every variant (rotated order) for
``--iters`` CUDA-event calls each. Per variant: the median call; per round: its median / the
first variant's.
Each variant's dQ, dK, dV are checked against the first's (relative error <= 1e-2).

    python3 bench/chain_ab.py --shapes 4,16,4096,128 16,16,1024,128 4,16,4096,128,c \\
        --variants "default;reduce_block=-1;trip_step=0,reg_usage=5" --commit SHA --out $OUT

A shape is ``B,H,S,D`` (``,c``: causal); a variant ``default`` or ``key=value[,key=value]``: a
plan key (``value`` an int, or ``none`` to drop the row's option) or a code choice (an int, or
the word a word-valued choice takes, e.g. ``dq_guard=rows``). A ``code=default`` item (how
``lab/variant_grid.py --top`` writes a code-only variant) pins the choices the variant does
not name to the default build's values, as bench/bwd_main_ab.py does; without it they resolve
again around the named ones. A call that cuts its grid (a tail-split build) is refused when a
variant sets code choices: they reach only the whole-tile build. Writes ``chain_ab.json`` and
``chain_ab.png`` to ``--out`` with the card, the date and the commit; ``--replot JSON...``
draws stored files again on any machine.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import statistics
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, _ROOT)
sys.path.insert(0, os.path.join(_ROOT, "bench"))

from bwd_main_ab import plot, round_robin, write_report  # noqa: E402
from sdpa_bwd import commit_id, flops, make_set, rel_err  # noqa: E402

PLAN_ARCH = "sm_120a"  # the plans every supported device runs (frost.sched.arch.plan_arch)
from frost.templates.bwd_main.code import CALL_DECIDES  # noqa: E402  (tail_split)


def code_choices() -> dict:
    """{name: type} of the code choices a variant may set (:class:`CodeChoices`' fields less
    :data:`CALL_DECIDES`)."""
    from frost.templates.bwd_main.code import CodeChoices

    return {k: t for k, t in CodeChoices.types().items() if k not in CALL_DECIDES}


def parse_variant(text: str) -> dict:
    """``default`` -> {}; ``a=1,b=none`` -> {"a": 1, "b": None} (None: drop the plan option).
    A code choice's name keeps its value (an int, or a word for the word-valued ones). ValueError
    for a malformed item, a key that is neither a plan key the planner can force nor a code
    choice, or a plan value it may not take (:func:`frost.sched.sdpa.check_tile`; a code choice's
    value is checked when its variant is built)."""
    from frost.sched.sdpa import FORCEABLE, check_tile

    text = text.strip()
    if text == "default":
        return {}
    out, code = {}, code_choices()
    for item in text.split(","):
        key, sep, val = (x.strip() for x in item.partition("="))
        if not sep or not key or not val:
            raise ValueError(f"bad variant item {item!r}: want key=int or key=none")
        if key == "code" and val == "default":  # lab/variant_grid.py's suffix: the choices
            out[key] = val                       # not named keep the default's resolved values
            continue
        if key in CALL_DECIDES:
            raise ValueError(f"bad variant item {item!r}: {key} is not a variant's to set "
                             f"(tail_split: frost.sdpa decides it per call)")
        if key in code:
            out[key] = val if code[key] is str else _int(item, val)
            continue
        if val == "none":
            if key not in FORCEABLE:
                check_tile({key: 0})  # names the known keys
            out[key] = None
            continue
        out[key] = _int(item, val)
        check_tile({key: out[key]})
    if "code" in out and split_change(out)[0]:
        raise ValueError(f"bad variant {text!r}: code=default with plan keys (there the other "
                         f"code choices resolve on the new plan, not to the default's)")
    return out


def _int(item: str, val: str) -> int:
    try:
        return int(val)
    except ValueError:
        raise ValueError(f"bad variant item {item!r}: {val!r} is not an int") from None


def split_change(change: dict) -> tuple[dict, dict]:
    """A variant's (plan options, code choices); its ``code`` item is neither."""
    code = code_choices()
    return ({k: v for k, v in change.items() if k not in code and k != "code"},
            {k: v for k, v in change.items() if k in code})


def parse_shape(text: str) -> tuple:
    parts = text.split(",")
    causal = parts[-1] == "c"
    b, h, s, d = (int(x) for x in parts[:4 if not causal else -1])
    return b, h, s, d, causal


class OptionPatch:
    """Plan head dim ``d`` (causal or not) with its row's measured options changed by
    ``change``'s plan keys ({key: int, or None to drop}), applied on top of everything
    :func:`frost.sched.tuned.tuned_options` merges for that row (the row's options and, causal,
    the causal ones), and its main kernel built with ``change``'s code choices: the planner's
    lookup and :func:`frost.sdpa.api.main_choices` are wrapped, no table is edited. With
    ``code=default`` in ``change`` the choices it does not name are pinned to the default
    build's resolved values (as bench/bwd_main_ab.py builds such a variant), instead of
    resolving again around the named ones (e.g. ``trip_step=0`` alone brings back d=128's
    prefetch). Tail-split builds are left alone (:func:`main` refuses a call that cuts). Every
    cached plan and compiled chain is forgotten on entry and on :meth:`restore`, which puts both
    back."""

    def __init__(self, d: int, causal: bool, change: dict):
        from frost.sched import sdpa as sched_sdpa
        from frost.sdpa import api

        self.sched, self.orig = sched_sdpa, sched_sdpa.tuned_options
        self.api, self.orig_main = api, api.main_choices
        self.padded, self.causal = sched_sdpa.pad_head_dim(d), bool(causal)
        self.change, self.code = split_change(change)
        self.pinned = change.get("code") == "default"
        sched_sdpa.tuned_options = self.lookup
        api.main_choices = self.main_choices
        self._forget()

    def lookup(self, arch: str, padded_d: int, causal: bool = False) -> dict:
        out = self.orig(arch, padded_d, causal)
        if padded_d == self.padded and bool(causal) == self.causal:
            for k, v in self.change.items():
                if v is None:
                    out.pop(k, None)
                else:
                    out[k] = v
        return out

    def main_choices(self, key) -> dict:
        """``frost.sdpa.api.main_choices`` with this variant's code choices on top, for its row's
        whole-tile builds (pinned: on top of the default build's resolved choices)."""
        out = dict(self.orig_main(key))
        if self.sched.pad_head_dim(key.head_dim) != self.padded or key.tail_split or \
                (key.causal_align != "none") != self.causal:
            return out
        if self.pinned:
            from frost.recipes.bwd_main import resolve_code

            kp = self.api.make_plan(key).kernel("bwd_main")
            resolved = dataclasses.asdict(resolve_code(kp, causal=self.causal, **out))
            out = {k: v for k, v in resolved.items() if k not in CALL_DECIDES}
        out.update(self.code)
        return out

    @property
    def options(self) -> dict:
        """The options the patched row plans with."""
        return self.lookup(PLAN_ARCH, self.padded, self.causal)

    def restore(self):
        self.sched.tuned_options = self.orig
        self.api.main_choices = self.orig_main
        self._forget()

    def _forget(self):
        self.sched._best.cache_clear()
        self.api.clear_cache()


def built_tile(cache: dict, options: dict, code=None) -> dict:
    """The bwd_main tile the variant's call compiled (``frost.sdpa.api``'s chain cache, the
    whole-tile build), after checking it carries every option it was patched with: where the
    options do not fit, the planner falls back to the bare tile, which would time another plan
    under this variant's name. ``code``: the code choices its main kernel must carry (a dict, or
    a function of the chain's key giving one: :meth:`OptionPatch.main_choices`), checked the
    same way (the returned dict then also holds the built kernel's code choices under
    ``"code"``)."""
    chains = [(key, ch) for key, ch in cache.items() if not key.tail_split]
    if len(chains) != 1:
        raise SystemExit(f"expected one whole-tile chain in the cache, found {len(chains)}")
    key, chain = chains[0]
    if callable(code):
        code = code(key)
    tile = dict(chain.main.kp.tile)
    wrong = {k: (v, tile.get(k, 0)) for k, v in options.items()  # (-1: the planner's pick)
             if tile.get(k, 0) != v and not (k.endswith("_order") and v == -1)}
    if code is not None:
        built = dataclasses.asdict(chain.main.code)
        wrong.update({k: (v, built.get(k)) for k, v in code.items() if built.get(k) != v})
        tile["code"] = built
    if wrong:
        raise SystemExit(f"the chain built does not carry its variant (wanted, got): {wrong}")
    return tile


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", nargs="+", default=["4,16,4096,128", "16,16,1024,128"],
                    help="B,H,S,D[,c]")
    ap.add_argument("--variants", default="default;reduce_block=-1")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--commit", default="")
    ap.add_argument("--out", default=os.environ.get("OUT") or os.path.join(_ROOT, "bench", "out"))
    ap.add_argument("--replot", nargs="+", metavar="JSON",
                    help="no run: draw stored chain_ab.json files again (one PNG each) into --out")
    args = ap.parse_args(argv)
    if args.replot:
        for i, path in enumerate(args.replot):
            with open(path) as fh:
                data = json.load(fh)
            sub = os.path.join(args.out, str(i)) if len(args.replot) > 1 else args.out
            os.makedirs(sub, exist_ok=True)
            print(draw(data["results"], data["meta"], sub))
        return 0
    names = [v.strip() for v in args.variants.split(";")]
    try:
        changes = [parse_variant(v) for v in names]
    except ValueError as e:
        ap.error(str(e))
    import torch

    if not torch.cuda.is_available():
        ap.error("timing the chain needs a CUDA GPU")
    import frost.sdpa
    from frost.sdpa import api

    results = []
    for text in args.shapes:
        b, h, s, d, causal = parse_shape(text)
        t = make_set(torch, b, h, s, d, causal, torch.bfloat16, seed=0)

        def call():
            return frost.sdpa.backward(t["q"], t["k"], t["v"], t["o"], t["do"], t["lse"],
                                       causal=causal)

        caches, outs, opts, tiles = [], [], [], []
        for change in changes:  # compile + warm each variant, keep its caches
            patch = OptionPatch(d, causal, change)
            try:
                for _ in range(3):
                    out = call()
                torch.cuda.synchronize()
                opts.append(patch.options)
                if patch.code and any(key.tail_split for key in api._CACHE):
                    raise SystemExit(f"{text}: the call cuts its grid (a tail-split build, which "
                                     f"a variant's code choices do not reach): time a shape "
                                     f"that does not cut")
                tiles.append(built_tile(api._CACHE, opts[-1], patch.main_choices))
                caches.append((dict(api._CACHE), dict(api._SIGS)))
                outs.append([x.clone() for x in out])
            finally:
                patch.restore()
        same = [n for n, t, c in zip(names[1:], tiles[1:], changes[1:]) if t == tiles[0] and c]
        if same:
            raise SystemExit(f"{text}: {same} built the same plan and code as {names[0]}: "
                             f"nothing to time")
        errs = [max(rel_err(torch, a, r) for a, r in zip(o, outs[0])) for o in outs]
        bad = [n for n, e in zip(names, errs) if not e <= 1e-2]
        if bad:
            raise SystemExit(f"{text}: {bad} disagree with {names[0]} (rel err {errs})")

        def use(i):
            api._CACHE.clear()
            api._CACHE.update(caches[i][0])
            api._SIGS.clear()
            api._SIGS.update(caches[i][1])

        def switch(i):  # variant i's compiled chain and call cache, one untimed call
            use(i)
            call()

        samples, round_ratio = round_robin(torch, len(names), lambda i: call(), args.rounds,
                                           args.iters, switch)
        api.clear_cache()
        f = flops(b, h, s, d, causal)
        base = statistics.median(samples[0])
        for i, name in enumerate(names):
            ms = statistics.median(samples[i])
            results.append(dict(shape=text, d=d, causal=causal, variant=f"{b},{h},{s} {name}",
                                change=changes[i], options=opts[i], tile=tiles[i], ms=ms,
                                tflops=f / (ms * 1e-3) / 1e12, ratio=ms / base,
                                round_ratio_min=min(round_ratio[i]),
                                round_ratio_max=max(round_ratio[i]), rel_err_vs_first=errs[i]))
        t = caches = outs = None  # free this shape's tensors before the next
        torch.cuda.empty_cache()
    meta = dict(date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                gpu=torch.cuda.get_device_name(), commit=commit_id(args.commit),
                rounds=args.rounds, iters=args.iters, plan_arch=PLAN_ARCH, variants=names)
    write_report(args.out, "chain_ab", meta, results,
                 f"# {meta['gpu']} {meta['date']} commit {meta['commit']}: {args.rounds} rounds x "
                 f"{args.iters} calls; ratio = call ms / first variant's",
                 lambda r: f"{r['shape']:<16} {r['variant'].split(' ', 1)[1]}")
    draw(results, meta, args.out)
    return 0


def draw(results: list[dict], meta: dict, out: str) -> str:
    return plot([dict(r, baseline=r["variant"].endswith(f" {meta['variants'][0]}"))
                 for r in results], os.path.join(out, "chain_ab.png"),
                f"whole chain: {meta['gpu']} {meta['date'][:10]} {meta['commit']}",
                timed="frost.sdpa.backward call")


if __name__ == "__main__":
    raise SystemExit(main())
