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


def pytest_collection_modifyitems(config, items):
    if HAS_CUDA:
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (run on the H200 with `python3 -m pytest -m gpu`)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


ARCHS = ("sm_120a", "sm_121a")


# Tests never read or fill the user's on-disk compile cache (frost.sdpa.cache): a rerun would
# otherwise load where a test counts compiles. The cache's own tests set a folder of their own;
# FROST_TEST_KEEP_CACHE=1 keeps a FROST_CACHE_DIR the caller set.
if not os.environ.get("FROST_TEST_KEEP_CACHE"):
    os.environ["FROST_CACHE_DIR"] = "off"
