"""frost.templates.host: the GEMM templates' shared host checks, and their fake operands.
The checks run before anything touches the GPU, so CPU tensors show each refusal."""

import pytest

from frost.templates import host


class Refused(ValueError):
    pass


def test_fake_operands_share_runtime_extents():
    import cutlass

    a, b, c, m = host.fake_gemm_operands(cutlass.BFloat16, cutlass.Float32)
    assert a.element_type == cutlass.BFloat16 and c.element_type == cutlass.Float32
    assert a.shape[0] is m and c.shape[0] is m  # one M for A, C (and whatever else takes it)
    assert c.shape[1] is b.shape[0] and a.shape[1] is b.shape[1]


def test_check_ab_names_what_is_wrong():
    torch = pytest.importorskip("torch")
    bf = torch.bfloat16
    a, b = torch.zeros(4, 8, dtype=bf), torch.zeros(6, 8, dtype=bf)
    with pytest.raises(Refused, match="must be torch.float16, got torch.bfloat16"):
        host.check_ab(a, b, torch.float16, Refused)
    with pytest.raises(Refused,
                       match=r"need a \(M, K\) and b \(N, K\), got \(4, 8\) and \(6, 16\)"):
        host.check_ab(a, torch.zeros(6, 16, dtype=bf), bf, Refused)
    with pytest.raises(Refused, match="contiguous CUDA tensors"):
        host.check_ab(a, b, bf, Refused)  # (CPU tensors)


def test_output_checks_or_allocates():
    torch = pytest.importorskip("torch")
    like = torch.zeros(2, dtype=torch.float32)
    new = host.output(None, "r", (5,), torch.float32, like, Refused)
    assert new.shape == (5,) and new.dtype == torch.float32
    given = torch.empty(5)
    assert host.output(given, "r", (5,), torch.float32, like, Refused) is given
    with pytest.raises(Refused, match=r"r must be a \(5,\) torch.float32 tensor, got \(4,\)"):
        host.output(torch.empty(4), "r", (5,), torch.float32, like, Refused)
    with pytest.raises(Refused, match="c must be contiguous"):
        host.output(torch.empty(6, 4).T, "c", (4, 6), torch.float32, like, Refused)


def test_torch_dtype_names():
    torch = pytest.importorskip("torch")
    assert host.io_name(torch.bfloat16) == "bf16" and host.io_name(torch.float16) == "fp16"
    assert host.io_name(torch.float32) is None
    assert host.torch_dtype("bf16") is torch.bfloat16
    assert host.torch_dtype("fp16") is torch.float16
    with pytest.raises(KeyError):
        host.torch_dtype("fp8")
