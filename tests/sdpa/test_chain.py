"""The compiled chain (CPU): variant keys, the compile cache, compile-only checks, the fast
launcher's ABI against the DSL's own argument marshalling."""

import dataclasses

import pytest

from tests.conftest import ARCHS
from frost.sdpa import api, chain


def _key(**kw):
    base = dict(arch="sm_120a", dtype="bf16", head_dim=64, causal_align="none", deterministic=False,
                use_pdl=True)
    return api.VariantKey(**(base | kw))


def test_variant_key_ignores_runtime_sizes():
    mk = lambda **kw: api.Problem(**(dict(b=2, s_q=100, s_kv=300, h_q=8, h_kv=2, d=64, dtype="bf16") | kw))  # noqa: E731
    k1 = api.variant_key(mk(), "sm_120a", False, "bottom_right", False, True)
    for p in (mk(b=7), mk(s_q=1), mk(s_kv=4096), mk(h_q=16, h_kv=1)):
        assert api.variant_key(p, "sm_120a", False, "bottom_right", False, True) == k1
    # causal_align only matters when causal
    assert api.variant_key(mk(), "sm_120a", False, "top_left", False, True) == k1
    distinct = {k1,
                api.variant_key(mk(), "sm_120a", True, "bottom_right", False, True),
                api.variant_key(mk(), "sm_120a", True, "top_left", False, True),
                api.variant_key(mk(d=128), "sm_120a", False, "bottom_right", False, True),
                api.variant_key(mk(dtype="fp16"), "sm_120a", False, "bottom_right", False, True),
                api.variant_key(mk(), "sm_121a", False, "bottom_right", False, True),
                api.variant_key(mk(), "sm_120a", False, "bottom_right", True, True),
                api.variant_key(mk(), "sm_120a", False, "bottom_right", False, False)}
    assert len(distinct) == 8


def test_cache_builds_once_per_key(monkeypatch):
    built = []
    monkeypatch.setattr(api, "build", lambda key: built.append(key) or object())
    monkeypatch.setattr(api, "_CACHE", {})
    a, b = _key(), _key(head_dim=128)
    first = api.get_chain(a)
    assert api.get_chain(a) is first and api.get_chain(_key()) is first
    api.get_chain(b)
    assert built == [a, b]
    assert api.cache_info()["variants"] == 2


def test_set_pdl_is_part_of_the_key():
    """PDL on and off compile to different chains: the flag is part of the variant key."""
    assert _key(use_pdl=True) != _key(use_pdl=False)
    assert len({_key(use_pdl=True), _key(use_pdl=False)}) == 2
    before = api.pdl_enabled()
    try:
        api.set_pdl(False)
        assert not api.pdl_enabled()
        with pytest.raises(TypeError):
            api.set_pdl("no")
    finally:
        api.set_pdl(before)


def test_chain_plan_has_the_contract_names():
    plan = api.make_plan(_key())
    assert [k.name for k in plan.kernels] == ["rowdot", "bwd_main", "dq_convert"]
    main = plan.kernel("bwd_main")
    assert {"tile_m", "tile_n", "d"} <= set(main.tile)
    assert main.tile["d"] >= 64 and main.tile["d"] % 8 == 0


@pytest.mark.compile
@pytest.mark.parametrize("arch", ARCHS)
def test_chain_compiles_without_main(arch, tmp_path, monkeypatch):
    import cutlass

    from frost.tile_dsl.compile import compile_for

    monkeypatch.chdir(tmp_path)
    key = _key(arch=arch, head_dim=96)
    plan = api.make_plan(key)
    from frost.templates.dq_convert import DqConvertConfig
    from frost.templates.rowdot import RowDotConfig
    m = plan.kernel("bwd_main")
    cfg = chain.ChainConfig(cutlass.BFloat16, 96, m.tile["d"], m.tile["tile_m"], m.tile["tile_n"],
                            RowDotConfig.from_plan(plan, 16, 96), DqConvertConfig.from_plan(plan, 16, 96))
    rep = compile_for(chain.BwdChain(cfg, None), *chain.compile_args(cutlass.BFloat16), arch=arch)
    assert len(rep.kernels) == 2, "ptxas report missing: the spill check would be vacuous"
    assert rep.count("griddepcontrol.wait") == 2 and rep.count("griddepcontrol.launch_dependents") == 2
    assert rep.count("ld.global.v4") >= 2
    assert rep.total_spill_bytes == 0

    # the fast launcher packs exactly what the DSL's own marshalling packs
    vals = [1000 + 16 * i for i in range(len(chain.ADDRS))] + [3, 17, 200, 8, 2, 64, 1, 9, 3]
    vals += [i + 1 for i in range(len(chain.STRIDES))] + [0.125, 0]
    got = chain.marshalled_values(rep.compiled, vals)
    assert got[:-1] == vals[:-1] and not got[-1]
    assert len(chain.ARG_KINDS) == len(chain.ARG_NAMES) == len(vals)


@pytest.mark.compile
@pytest.mark.parametrize("arch", ARCHS)
def test_full_chain_compiles_into_one_host_function(arch):
    """Integration: rowdot -> bwd_main -> dq_convert in one compiled host function, each kernel
    waiting before its first upstream read, spill-free, with the main kernel's instructions."""
    from frost.tile_dsl.compile import compile_for

    key = _key(arch=arch, head_dim=64, causal_align="bottom_right")
    cfg, fn, args = api.chain_program(key)
    rep = compile_for(fn, *args, arch=arch)
    assert len(rep.kernels) == 3, [k.name for k in rep.kernels]
    assert rep.total_spill_bytes == 0
    assert rep.count("griddepcontrol.wait") == 3
    for needle in ("mma.sync.aligned.m16n8k16", "cp.async.bulk.tensor", "red.global.add.v2.f32"):
        assert rep.count(needle) > 0, needle
    assert cfg.tile_m > 0 and cfg.d_pad >= 64


@pytest.mark.compile
def test_tail_split_chain_compiles():
    """The chain variant the API builds for calls it cuts: the main kernel with tail splits,
    fed the slot and counter addresses and the cut (n_whole, parts) from the launch values."""
    from frost.tile_dsl.compile import compile_for

    key = dataclasses.replace(_key(arch="sm_120a", head_dim=128, causal_align="none"),
                              tail_split=True)
    cfg, fn, args = api.chain_program(key)
    assert fn.main.code.tail_split == 1 and cfg.split_slot_floats == 128 * 256
    rep = compile_for(fn, *args, arch="sm_120a")
    assert len(rep.kernels) == 3 and rep.total_spill_bytes == 0
    assert rep.count("bar.red.or.pred") == 1 and rep.count("ld.global.cg.v4.f32") > 0
    assert len(chain.ARG_NAMES) == len(args) and "split_slots" in chain.ARG_NAMES


def test_build_counts_one_compile(monkeypatch):
    monkeypatch.setattr(api, "_STATS", {"compiles": 0})
    api.build(_key(head_dim=64))
    assert api._STATS["compiles"] == 1


def test_fast_launcher_slots_read_back_as_arg_kinds():
    import ctypes
    import struct

    st = struct.Struct(chain.PACK_FORMAT)
    assert st.size == 8 * len(chain.ARG_KINDS)
    vals = [(1 << 40) + 16 * i for i in range(len(chain.ADDRS))] + [3, -1, 200, 8, 2, 64, 5, 7, 4]
    vals += [-(i + 1) if i % 2 else i * 1000 for i in range(len(chain.STRIDES))] + [0.125, 2 ** 63 + 5]
    buf = ctypes.create_string_buffer(st.size)
    st.pack_into(buf, 0, *vals)
    base = ctypes.addressof(buf)
    back = [k.from_address(base + 8 * i).value for i, k in enumerate(chain.ARG_KINDS)]
    assert back == vals


@pytest.mark.parametrize("arch", ["sm_80a", "sm_100a"])
def test_unsupported_device_arch_is_refused_before_compiling(arch):
    with pytest.raises(ValueError, match=f"arch {arch} is not supported"):
        api.make_plan(_key(arch=arch))


def test_sm90_device_runs_the_sm120_plan():
    assert api.make_plan(_key(arch="sm_90a")).arch == "sm_120a"


def test_main_only_values_follow_the_chain_arguments(monkeypatch):
    """main_only_values (the A/B harness's launch of bwd_main alone, v68): each value lands
    in its ARG_NAMES slot with the chain's units (io strides in 16-byte vectors), and what the
    chain would misread is refused before any launch (CPU tensors, no compile)."""
    import types

    torch = pytest.importorskip("torch")
    from frost.sdpa import main_only as mo
    from frost.sdpa.main_only import main_only_values
    from frost.recipes.bwd_main import bwd_main_kernel
    from frost.recipes.bwd_main import default_plan

    kern = bwd_main_kernel(default_plan("sm_120a", 64))
    fn, _ = chain.main_only(kern, head_dim=64)
    ch = types.SimpleNamespace(cfg=fn.cfg, main=kern)
    monkeypatch.setattr(mo, "raw_stream", lambda idx: 7)
    b, s, h, d = 2, 200, 4, 64
    s_pad = 256  # whole 128-row blocks and q tiles
    q, k, v, do = (torch.randn(b, s, h, d).to(torch.bfloat16) for _ in range(4))
    dk, dv = torch.empty_like(k), torch.empty_like(v)
    lse2, delta = torch.zeros(b, h, s_pad), torch.zeros(b, h, s_pad)
    acc = torch.zeros(b, h, s_pad, d)
    got = main_only_values(ch, q, k, v, do, lse2, delta, acc, dk, dv, 0.125)
    assert len(got) == len(chain.ARG_NAMES)
    val = dict(zip(chain.ARG_NAMES, got))
    assert (val["q"], val["dk"], val["lse_log2"], val["delta"], val["dq_accum"]) == \
        (q.data_ptr(), dk.data_ptr(), lse2.data_ptr(), delta.data_ptr(), acc.data_ptr())
    assert [val[x] for x in ("b", "s_q", "s_kv", "h_q", "h_kv", "s_q_pad", "n_splits")] == \
        [b, s, s, h, h, s_pad, 1]
    assert (val["k_sb"], val["k_ss"], val["k_sh"]) == (s * h * d // 8, h * d // 8, d // 8)
    assert (val["n_whole"], val["parts"], val["scale"], val["stream"]) == (0, 1, 0.125, 7)

    def refused(match, **over):
        args = dict(q=q, k=k, v=v, do=do, lse_log2=lse2, delta=delta, dq_accum=acc, dk=dk,
                    dv=dv)
        args.update(over)
        with pytest.raises(ValueError, match=match):
            main_only_values(ch, *args.values(), 0.125)

    refused("q must be torch.bfloat16 with head dim 64", q=torch.randn(b, s, h, 56).to(torch.bfloat16))
    refused("do must be torch.bfloat16", do=do.to(torch.float16))
    refused("dk must be contiguous", dk=torch.empty(b, h, s, d, dtype=torch.bfloat16).transpose(1, 2))
    refused("dq_accum", dq_accum=torch.zeros(1, h, s_pad, d))
    refused("lse_log2/delta", delta=torch.zeros(b, h, 64))
