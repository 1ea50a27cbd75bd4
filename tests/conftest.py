"""Shared pytest setup: the `gpu` marker skips cleanly when no CUDA device (or no torch) is present."""

import os

import pytest
from hypothesis import settings

# no per-example deadline: a loaded 2-core CI box must not turn a slow example into a failure
settings.register_profile("frost", deadline=None)
settings.load_profile("frost")


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


HAS_CUDA = _cuda_available()


# The exhaustive compile sweeps, run by `python3 -m pytest -q -m slow` (README): every sm_121a
# twin of an sm_120a compile test (the two targets differ only in the .target line and ptxas'
# schedule; the default kernels of every head dim keep their sm_121a golden-PTX check in the
# default run).
FAST_ON_SM121 = {"test_compile", "test_report_is_read_under_pytest_capture"}


def _slow(item) -> bool:
    name = getattr(item, "originalname", item.name)
    params = getattr(getattr(item, "callspec", None), "params", {})
    return "compile" in item.keywords and params.get("arch") == "sm_121a" \
        and name not in FAST_ON_SM121


def pytest_collection_modifyitems(config, items):
    for item in items:
        if _slow(item):
            item.add_marker(pytest.mark.slow)
    if HAS_CUDA:
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (run on the H200 with `python3 -m pytest -m gpu`)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


def pytest_configure(config):
    # the default run leaves the slow sweeps out unless a -m expression was given
    if not config.option.markexpr:
        config.option.markexpr = "not slow"


ARCHS = ("sm_120a", "sm_121a")


# Tests never read or fill the user's on-disk compile cache (frost.sdpa.cache): a rerun would
# otherwise load where a test counts compiles. The cache's own tests set a folder of their own;
# FROST_TEST_KEEP_CACHE=1 keeps a FROST_CACHE_DIR the caller set.
if not os.environ.get("FROST_TEST_KEEP_CACHE"):
    os.environ["FROST_CACHE_DIR"] = "off"
