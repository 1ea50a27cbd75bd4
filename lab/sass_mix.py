"""SASS instruction mix of bwd_main's q-tile loop, and a probe of what ptxas makes of one
PTX instruction -- both without a GPU.

    python3 lab/sass_mix.py --dims 64,128 --arch sm_120a       # loop mix per head dim
    python3 lab/sass_mix.py --probe "ex2.approx.f16x2 h1, h0;"  # one instruction's SASS
    python3 lab/sass_mix.py --dims 64 --arch sm_90a --same-loop trip_step=0  # a code choice
    python3 lab/sass_mix.py --dims 64 --arch sm_90a --same-loop tile.reduce_block=-1,code=default
    python3 lab/sass_mix.py --dims 64,128 --arch sm_90a --schedules reg_usage=0-10  # v80
    python3 lab/sass_mix.py --dims 64,128,256 --arch sm_90a --operand-distance   # v101a
    python3 lab/sass_mix.py --dims 256 --arch sm_90a --operand-distance reg_usage=5,do_early=0

Needs ``cuobjdump`` (``pip install nvidia-cuda-cuobjdump``; found on PATH or in the
``nvidia/cu13/bin`` folder of site-packages) and, for ``--probe``, ``ptxas`` on PATH.

The loop is the longest backward branch whose body holds HMMA instructions. The mix is a
static count over its body: where the loop branches (masked and unmasked softmax), both paths
are counted, and ``--skip A-B`` (hex addresses, repeatable) leaves one out. lab/LOG.md
v27 used ``--probe`` to see that ``ex2.approx.f16x2`` is two MUFU ops on sm_120a and sm_90a.
(``--same-loop`` also took the kernel's timing-only ``skip`` ablations until they left it on
2026-12-07: lab/LOG.md.)
"""

from __future__ import annotations

import argparse
import collections
import json
import pathlib
import re
import shutil
import site
import subprocess
import sys
import tempfile

_INSN = re.compile(r"\s+/\*([0-9a-f]+)\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)([^;]*);")


def cuobjdump() -> str:
    """Path of cuobjdump: PATH first, then the pip wheel's folder."""
    found = shutil.which("cuobjdump")
    if found:
        return found
    for root in site.getsitepackages() + [site.getusersitepackages()]:
        p = pathlib.Path(root, "nvidia", "cu13", "bin", "cuobjdump")
        if p.exists():
            return str(p)
    sys.exit("sass_mix: cuobjdump not found; pip install nvidia-cuda-cuobjdump")


def sass_of(cubin: bytes) -> str:
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        return subprocess.run([cuobjdump(), "-sass", f.name], check=True, capture_output=True,
                              text=True).stdout


def instructions(sass: str) -> list[tuple[int, str, str]]:
    """(address, opcode with modifiers, operands) per instruction."""
    return [(int(m.group(1), 16), m.group(2), m.group(3)) for m in map(_INSN.match,
            sass.splitlines()) if m]


def main_loop(insns) -> tuple[int, int]:
    """(first, last) address of the trip loop: of the backward branches' bodies that hold the
    most HMMAs, the shortest (a persistent build's tile loops hold the trip loop's HMMAs too;
    before v89 this took the longest body with any HMMA, the same loop on one-tile builds)."""
    best = None  # (HMMAs, -length, lo, hi)
    for addr, op, args in insns:
        t = re.search(r"0x([0-9a-f]+)", args)
        if op.startswith("BRA") and t and int(t.group(1), 16) < addr:
            lo = int(t.group(1), 16)
            n = sum(1 for a, o, _ in insns if lo <= a <= addr and o.startswith("HMMA"))
            if n and (best is None or (n, lo - addr) > best[:2]):
                best = (n, lo - addr, lo, addr)
    if best is None:
        raise SystemExit("sass_mix: no loop with HMMA found")
    return best[2], best[3]


def mix(insns, lo: int, hi: int, skip=()) -> collections.Counter:
    """Opcode (first dotted part) counts over [lo, hi], leaving out the ``skip`` ranges."""
    return collections.Counter(op.split(".")[0] for a, op, _ in insns
                               if lo <= a <= hi and not any(x <= a < y for x, y in skip))


def nop_neighbours(insns, lo: int, hi: int) -> collections.Counter:
    """Each run of NOPs in [lo, hi] as (opcode before, opcode after, run length): counts. On
    sm_120a ptxas puts one NOP between back-to-back HMMAs that write different accumulators
    (lab/LOG.md v46): issue spacing, not a dependency wait."""
    body = [op.split(".")[0] for a, op, _ in insns if lo <= a <= hi]
    runs: collections.Counter = collections.Counter()
    i = 0
    while i < len(body):
        if body[i] != "NOP":
            i += 1
            continue
        j = i
        while j < len(body) and body[j] == "NOP":
            j += 1
        runs[(body[i - 1] if i else "-", body[j] if j < len(body) else "-", j - i)] += 1
        i = j
    return runs


def _regs(operand: str, n: int) -> list[int]:
    """The ``n`` consecutive registers an operand names (``R12`` -> 12..12+n-1; none for RZ/URx)."""
    m = re.match(r"\s*R(\d+)", operand)
    return list(range(int(m.group(1)), int(m.group(1)) + n)) if m else []


def _dest_width(op: str) -> int:
    """Registers an instruction writes from its first operand on: LDSM .x4 / .x2 / .x1, an
    fp32 HMMA's 4 accumulators (fp16 ones: 2), 64-bit results (IMAD.WIDE, .64) 2, .128 4."""
    if op.startswith("LDSM"):
        return {".4": 4, ".2": 2}.get(op[-2:], 1)
    if op.startswith("HMMA"):
        return 4 if ".F32" in op else 2
    if ".128" in op:
        return 4
    return 2 if ".WIDE" in op or ".64" in op else 1


def operand_distances(insns, lo: int, hi: int) -> collections.Counter:
    """For each HMMA in [lo, hi]: how many instructions after the nearest earlier LDSM that
    wrote one of its A (4 registers) or B (2) operand registers it issues; ``None`` where no
    LDSM in the range wrote them (operands held in registers, or loaded before ``lo``). A
    register written again by any other instruction no longer counts as the LDSM's. Distance
    1-3: the HMMA waits out the ldmatrix's latency unless another warp has work (v101a)."""
    writer: dict[int, int] = {}  # register -> index of the LDSM that wrote it last
    out: collections.Counter = collections.Counter()
    body = [(op, args) for a, op, args in insns if lo <= a <= hi]
    for i, (op, args) in enumerate(body):
        parts = args.replace(".reuse", "").split(",")
        if op.startswith("HMMA"):
            src = (_regs(parts[1], 4) if len(parts) > 1 else []) + \
                  (_regs(parts[2], 2) if len(parts) > 2 else [])
            hits = [i - writer[r] for r in src if r in writer]
            out[min(hits) if hits else None] += 1
        for r in _regs(parts[0], _dest_width(op)) if parts and parts[0].strip() else []:
            if op.startswith("LDSM"):
                writer[r] = i
            else:
                writer.pop(r, None)
    return out


def product_plan(arch: str, d: int, causal: bool):
    """The bwd_main plan frost.sdpa runs on ``arch`` (``variant_plan``: sm_90a runs the sm_120a
    plans). Until v83 (2026-12-01) this module built ``default_plan(arch)``, which for sm_90a is the
    cost model's own pick: v76/v77's sm_90a loop checks looked at that plan, not the H200's."""
    from frost.recipes.bwd_main import variant_plan

    return variant_plan(arch, d, causal=causal).kernel("bwd_main")


def loop_mix(d: int, arch: str, causal: bool, skip) -> dict:
    insns, _ = product_insns(d, arch, causal)  # PDL on, as frost.sdpa builds it
    lo, hi = main_loop(insns)
    c = mix(insns, lo, hi, skip)
    nops = nop_neighbours(insns, lo, hi)
    return {"d": d, "arch": arch, "causal": causal, "loop": [hex(lo), hex(hi)],
            "total": sum(c.values()), "mix": dict(c.most_common()),
            "nop_runs": [[*k, v] for k, v in nops.most_common()]}


def product_insns(d: int, arch: str, causal: bool, **choices):
    """(SASS instructions, spill bytes) of the build ``frost.sdpa`` runs on ``arch`` (PDL on),
    or of it with other code ``choices``. Choices that name a forced
    plan key (``tile.reduce_block=-1``) or ``code="default"`` build as bench/bwd_main_ab.py's
    variant of that name does (:func:`bwd_main_ab.build_kernel`: sm_120a plans, the ones every
    supported device runs), so a loop read here is the one an A/B of that variant timed."""
    from frost.recipes.bwd_main import bwd_main_kernel

    if any(k.startswith("tile.") or k == "code" for k in choices):
        if str(pathlib.Path(__file__).resolve().parents[1] / "bench") not in sys.path:
            sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "bench"))
        from bwd_main_ab import build_kernel

        kern = build_kernel(d, causal, dict(choices), use_pdl=True)
    else:
        kern = bwd_main_kernel(product_plan(arch, d, causal), causal=causal, use_pdl=True,
                             **choices)
    rep = kern.compile(arch)
    return instructions(sass_of(rep.cubin)), rep.total_spill_bytes


def distance_line(d: int, arch: str, causal: bool, **choices) -> str:
    """One line of ``--operand-distance`` for the product build of (d, arch, causal), or of it
    with other code ``choices`` (e.g. v101a's ``reg_usage=5, do_early=0`` at d=256)."""
    insns, spilled = product_insns(d, arch, causal, **choices)
    c = operand_distances(insns, *main_loop(insns))
    n = sum(c.values())
    near = sum(v for k, v in c.items() if k is not None and k <= 3)
    far = sorted(k for k, v in c.items() if k is not None for _ in range(v))
    med = far[len(far) // 2] if far else "-"
    asked = "".join(f" {k}={v}" for k, v in choices.items())
    return (f"d={d} {arch}{' causal' if causal else ''}{asked}: {n} HMMA, {near} within 3 "
            f"instructions of their LDSM ({100 * near / max(n, 1):.0f} %), median distance "
            f"{med}, {c[None]} on held or earlier-loaded operands, {spilled} B spilled")


def loop_ops(d: int, arch: str, causal: bool, operands: bool = False, **choices) -> list[str]:
    """The opcodes (with ``operands``: whole instructions) from the first HMMA to the last of
    the default kernel, or of a build with other code ``choices``: the trip loop's body, which holds every GEMM. (:func:`main_loop`'s longest
    backward branch is no stable landmark across two builds: a rescheduled kernel can put a
    longer one around the prologue or epilogue.)"""
    return _loop(d, arch, causal, operands, **choices)[0]


def _loop(d, arch, causal, operands=False, **choices):
    insns, spilled = product_insns(d, arch, causal, **choices)  # as frost.sdpa
    ops = [op + args if operands else op for _, op, args in insns]
    hmma = [i for i, (_, op, _) in enumerate(insns) if op.startswith("HMMA")]
    return (ops[hmma[0]:hmma[-1] + 1] if hmma else []), spilled


def group_schedules(loops: dict) -> list[tuple[list, int, int]]:
    """``loops``: value -> (trip loop's instructions, spill bytes), in the values' order. The
    values that gave the same loop, as (values, instructions in the loop, spill bytes), in the
    order of each group's first value: how many schedules ptxas really makes over a knob's
    range (v80: three over ``--register-usage-level`` 0..10)."""
    groups: list[tuple[list, list, int]] = []
    for value, (loop, spills) in loops.items():
        for vals, seen, _ in groups:
            if seen == loop:
                vals.append(value)
                break
        else:
            groups.append(([value], loop, spills))
    return [(vals, len(loop), spills) for vals, loop, spills in groups]


def knob_values(text: str) -> tuple[str, list[int]]:
    """--schedules' KEY=VALUES: "reg_usage=0-10" or "ptxas_opt=1,2,3" -> (key, values)."""
    key, _, vals = (x.strip() for x in text.partition("="))
    if not key or not vals:
        raise SystemExit(f"sass_mix: --schedules wants KEY=A-B or KEY=A,B,..., got {text!r}")
    if "-" in vals:
        lo, _, hi = vals.partition("-")
        return key, list(range(int(lo), int(hi) + 1))
    return key, [int(v) for v in vals.split(",")]


def compare_loops(default: list[str], ablated: list[str]) -> dict:
    """Whether a variant left the trip loop's code alone: same opcode sequence, and the
    opcode counts that moved. For a change of work outside the loop, a different loop means
    ptxas rescheduled it, so the variant's time also prices that schedule (lab/LOG.md v76)."""
    ca, cb = collections.Counter(default), collections.Counter(ablated)
    moved = {k: cb[k] - ca[k] for k in sorted(set(ca) | set(cb)) if ca[k] != cb[k]}
    return {"default": len(default), "ablated": len(ablated), "same": default == ablated,
            "moved": moved}


def variant_kwargs(text: str) -> dict:
    """--same-loop's VARIANT as :func:`loop_ops` keywords: "k=v[,k=v]" -> code choices (ints
    where the value is one), or bench/bwd_main_ab.py's ``tile.<key>=int`` and ``code=default``
    (a forced plan, :func:`product_insns`)."""
    if "=" not in text:
        raise SystemExit(f"sass_mix: --same-loop wants key=value[,key=value], got {text!r}")
    out = {}
    for part in text.split(","):
        key, _, val = (x.strip() for x in part.partition("="))
        out[key] = int(val) if val.lstrip("-").isdigit() else val
    return out


def probe(ptx_lines: str, arch: str) -> list[str]:
    """SASS (opcode and operands) of a kernel that loads four floats, packs them into
    ``h0`` (f16x2) and ``b0`` (bf16x2), runs ``ptx_lines`` (which may write h1, b1, f4 or f5)
    and stores the results."""
    body = f"""
.version 8.8
.target {arch}
.address_size 64
.visible .entry probe(.param .u64 p) {{
  .reg .b64 a; .reg .f32 f<8>; .reg .b32 h<2>, b<2>;
  ld.param.u64 a, [p];
  ld.global.v4.f32 {{f0, f1, f2, f3}}, [a];
  cvt.rn.f16x2.f32 h0, f1, f0;
  cvt.rn.bf16x2.f32 b0, f3, f2;
  mov.b32 h1, h0; mov.b32 b1, b0; mov.f32 f4, f0; mov.f32 f5, f1;
  {ptx_lines}
  st.global.v4.f32 [a], {{f4, f5, f2, f3}};
  st.global.v2.b32 [a+16], {{h1, b1}};
  ret;
}}"""
    with tempfile.TemporaryDirectory() as tmp:
        src, out = pathlib.Path(tmp, "p.ptx"), pathlib.Path(tmp, "p.cubin")
        src.write_text(body)
        subprocess.run(["ptxas", "-arch", arch, str(src), "-o", str(out)], check=True)
        insns = instructions(sass_of(out.read_bytes()))
    return [f"{op}{args}" for _, op, args in insns
            if not op.startswith(("LDG", "STG", "LDC", "EXIT", "BRA", "NOP", "MOV", "ULDC"))]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dims", default="64,128,256", help="head dims, comma-separated")
    ap.add_argument("--arch", default="sm_120a")
    ap.add_argument("--causal", action="store_true")
    ap.add_argument("--skip", action="append", default=[], metavar="A-B",
                    help="hex address range [A, B) to leave out of the loop mix")
    ap.add_argument("--probe", metavar="PTX", help="show the SASS of these PTX lines instead")
    ap.add_argument("--json", metavar="FILE", help="also write the loop mixes here")
    ap.add_argument("--same-loop", metavar="VARIANT",
                    help="instead: do the code choices VARIANT, key=value[,key=value] (e.g. "
                    "trip_step=0), leave the trip loop's SASS as the default's? (v76: not always)")
    ap.add_argument("--operand-distance", nargs="?", const="default", metavar="CHOICES",
                    help="instead: for each HMMA of the trip loop, how many instructions after "
                    "the LDSM of its operands it issues (v101a: d=256's loop is register-starved); "
                    "optionally of a build with code choices key=value[,key=value] "
                    "(e.g. reg_usage=5,do_early=0)")
    ap.add_argument("--schedules", metavar="KEY=VALUES",
                    help="instead: build the default with each value of one code choice (e.g. "
                    "reg_usage=0-10, ptxas_opt=1,2,3) and group the values that give the same "
                    "trip loop (instructions and operands): the schedules worth an A/B")
    a = ap.parse_args(argv)
    if a.schedules:
        key, values = knob_values(a.schedules)
        for d in a.dims.split(","):
            loops = {v: _loop(int(d), a.arch, a.causal, operands=True, **{key: v})
                     for v in values}
            shown = " | ".join(f"{key}={','.join(map(str, vals))}: {n} instructions"
                               + (f", {sp} B spilled" if sp else "")
                               for vals, n, sp in group_schedules(loops))
            print(f"d={d} {a.arch}{' causal' if a.causal else ''}: {shown}")
        return
    if a.probe:
        print("\n".join(probe(a.probe, a.arch)))
        return
    if a.operand_distance:
        kw = {} if a.operand_distance == "default" else variant_kwargs(a.operand_distance)
        for d in a.dims.split(","):
            print(distance_line(int(d), a.arch, a.causal, **kw))
        return
    if a.same_loop:
        for d in a.dims.split(","):
            r = compare_loops(loop_ops(int(d), a.arch, a.causal),
                              loop_ops(int(d), a.arch, a.causal, **variant_kwargs(a.same_loop)))
            print(f"d={d} {a.arch} {a.same_loop}: loop {r['default']} -> {r['ablated']} "
                  f"instructions, {'same code' if r['same'] else 'rescheduled'}"
                  + (f"; counts moved: {r['moved']}" if r["moved"] else ""))
        return
    skip = [tuple(int(x, 16) for x in s.split("-")) for s in a.skip]
    rows = [loop_mix(int(d), a.arch, a.causal, skip) for d in a.dims.split(",")]
    for r in rows:
        top = ", ".join(f"{k} {v}" for k, v in list(r["mix"].items())[:14])
        print(f"d={r['d']} {r['arch']} loop {r['loop'][0]}..{r['loop'][1]}: "
              f"{r['total']} instructions: {top}")
        if r["nop_runs"]:
            where = ", ".join(f"{n}x {a}>NOP{f'x{k}' if k > 1 else ''}>{b}"
                              for a, b, k, n in r["nop_runs"][:4])
            print(f"    NOP runs (before > run > after): {where}")
    if a.json:
        pathlib.Path(a.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
