"""frost.sdpa.backward input validation: runs on the CPU, before any CUDA call or launch."""

import pytest
import torch

from frost.sdpa import api


def _inputs(b=2, s_q=16, s_kv=24, h_q=4, h_kv=2, d=64, dtype=torch.bfloat16, device="meta"):
    mk = lambda s, h: torch.empty(b, s, h, d, dtype=dtype, device=device)  # noqa: E731
    return dict(q=mk(s_q, h_q), k=mk(s_kv, h_kv), v=mk(s_kv, h_kv), o=mk(s_q, h_q), do=mk(s_q, h_q),
                lse=torch.empty(b, h_q, s_q, dtype=torch.float32, device=device))


@pytest.fixture
def no_launch(monkeypatch):
    """Any attempt to compile or launch fails the test."""
    def boom(*a, **k):
        raise AssertionError("a kernel was compiled or launched for a bad input")
    monkeypatch.setattr(api, "get_chain", boom)
    monkeypatch.setattr(api, "build", boom)
    monkeypatch.setattr(api, "device_arch", boom)


def _call(args, **kw):
    return api.backward(args["q"], args["k"], args["v"], args["o"], args["do"], args["lse"], **kw)


CASES = [
    # (mutation, exception, words that must appear in the message)
    (lambda a: a.update(q=a["q"].float()), TypeError, ["q", "dtype"]),
    (lambda a: a.update(k=a["k"].half()), TypeError, ["k", "dtype"]),
    (lambda a: a.update(do=a["do"].half()), TypeError, ["do", "dtype"]),
    (lambda a: a.update(lse=a["lse"].half()), TypeError, ["lse", "dtype"]),
    (lambda a: a.update(v=[1, 2]), TypeError, ["v", "Tensor"]),
    (lambda a: a.update(o=a["o"][0]), ValueError, ["o", "shape"]),
    (lambda a: a.update(k=a["k"][:, :, :, :32]), ValueError, ["k", "shape"]),
    (lambda a: a.update(v=a["v"][:, :20]), ValueError, ["v", "shape"]),
    (lambda a: a.update(do=a["do"][:, :8]), ValueError, ["do", "shape"]),
    (lambda a: a.update(lse=a["lse"][:, :, :8]), ValueError, ["lse", "shape"]),
    (lambda a: a.update(lse=a["lse"][..., None]), ValueError, ["lse", "shape"]),
    (lambda a: a.update(a | _inputs(h_q=3, h_kv=2)), ValueError, ["GQA", "H_q"]),
    (lambda a: a.update(_inputs(d=36)), ValueError, ["head dim"]),
    (lambda a: a.update(_inputs(d=264)), ValueError, ["head dim"]),
    (lambda a: a.update(_inputs(d=24)), ValueError, ["head dim"]),
    (lambda a: a.update(q=a["q"].transpose(1, 3)[:, :, :, :].transpose(1, 3).contiguous().transpose(2, 3)
                        .contiguous().transpose(2, 3)), ValueError, ["q", "stride"]),
    (lambda a: a.update(o=torch.empty(2, 16, 4, 68, dtype=torch.bfloat16, device="meta")[..., :64]),
     ValueError, ["o", "stride", "alignment"]),
    (lambda a: a.update(k=torch.empty(2, 24, 2, 64, dtype=torch.bfloat16)), ValueError, ["k", "device"]),
]


@pytest.mark.parametrize("i", range(len(CASES)))
def test_bad_input_raises_naming_argument(i, no_launch):
    mutate, exc, words = CASES[i]
    args = _inputs()
    mutate(args)
    with pytest.raises(exc) as ei:
        _call(args)
    msg = str(ei.value)
    for w in words:
        assert w in msg, f"{w!r} not in {msg!r}"


def test_misaligned_pointer(no_launch):
    args = _inputs(device="cpu")
    buf = torch.empty(2 * 16 * 4 * 64 + 8, dtype=torch.bfloat16)
    args["q"] = buf[4:4 + 2 * 16 * 4 * 64].view(2, 16, 4, 64)  # 8-byte offset
    with pytest.raises(ValueError, match="q alignment"):
        _call(args)


@pytest.mark.parametrize("kw,exc,word", [
    (dict(causal_align="middle"), ValueError, "causal_align"),
    (dict(causal=1), TypeError, "causal"),
    (dict(scale="0.1"), TypeError, "scale"),
    (dict(scale=torch.tensor(0.1)), TypeError, "pass float"),
    (dict(scale=float("nan")), ValueError, "scale"),
    (dict(deterministic=None), TypeError, "deterministic"),
])
def test_bad_options(kw, exc, word, no_launch):
    with pytest.raises(exc, match=word):
        _call(_inputs(), **kw)


@pytest.mark.parametrize("kw", [dict(), dict(h_q=8, h_kv=1), dict(s_q=1, s_kv=1000, d=256),
                                dict(d=32, s_q=127), dict(d=200)])
def test_good_input_reaches_device_check(kw, no_launch):
    """A well-formed CPU input passes every check but the device one: validation is complete
    before anything touches CUDA."""
    with pytest.raises(ValueError, match="q device must be a CUDA device"):
        _call(_inputs(device="cpu", **kw))


def test_validate_returns_problem():
    a = _inputs(device="cpu", b=3, s_q=5, s_kv=9, h_q=6, h_kv=3, d=96)
    with pytest.raises(ValueError, match="device"):
        api.validate(**a)


def test_size_one_dims_with_odd_strides_are_accepted(no_launch):
    a = _inputs(device="cpu", b=1)
    a["q"] = torch.empty(1, 16, 4, 64, dtype=torch.bfloat16).as_strided((1, 16, 4, 64), (3, 256, 64, 1))
    with pytest.raises(ValueError, match="q device"):
        _call(a)


@pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta")
@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_sparse_input_is_refused_as_such(layout, no_launch):
    """Sparse tensors (CSR ones have no strides at all) get the layout message from backward()."""
    a = _inputs(device="cpu")
    dense = torch.randn(2, 16, 4, 64).to(torch.bfloat16)
    a["q"] = dense.to_sparse() if layout == "coo" else dense.to_sparse_csr(dense_dim=2)
    with pytest.raises(ValueError, match="q must be a dense"):
        _call(a)


def test_numpy_scale_is_a_real_scale(no_launch):
    """np.float32 is a real number: validation gets past the scale to the device check."""
    np = pytest.importorskip("numpy")
    with pytest.raises(ValueError, match="q device must be a CUDA device"):
        _call(_inputs(device="cpu"), scale=np.float32(0.1))



@pytest.mark.parametrize("d,causal", [(128, False), (64, True)])
def test_deterministic_workspace_is_refused_when_it_does_not_fit(d, causal):
    """Deterministic mode keeps one fp32 dQ partial per KV tile: its workspace is the plan's
    ⌈S_kv / tile_n⌉ times the default's dQ accumulator, and check_workspace refuses it, naming
    ``deterministic`` and the default's size, when it exceeds the free bytes it is given."""
    p = api.Problem(4, 4096, 3000, 16, 8, d, "bf16")
    key = api.VariantKey("sm_120a", "bf16", d, "bottom_right" if causal else "none", True, True)
    tile = api.make_plan(key).kernel("bwd_main").tile
    rows = p.b * p.h_q * -(-p.s_q // tile["tile_m"]) * tile["tile_m"]
    splits = -(-p.s_kv // tile["tile_n"])
    need = api.workspace_bytes(key, p)
    other = api.workspace_bytes(api.VariantKey(**{**key.__dict__, "deterministic": False}), p)
    assert need == 4 * rows * (2 + splits * d) and other == 4 * rows * (2 + d)
    assert api.check_workspace(key, p, need) == need
    with pytest.raises(ValueError, match=r"deterministic=True needs a [0-9.]+ GiB") as e:
        api.check_workspace(key, p, need - 1, 2)
    assert "cuda:2" in str(e.value) and f"deterministic=False ({other / 2 ** 30:.2f} GiB)" in str(e.value)
