"""Shared fixtures: tiny models built from configs (see tiny_models.py). Nothing is downloaded."""

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")          # tests never reach for a model hub
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
if os.environ.get("PYTEST_XDIST_WORKER"):                # one of pytest-xdist's workers (pyproject.toml: -n auto):
    os.environ.setdefault("OMP_NUM_THREADS", "1")      # one thread each, so the workers share the cores instead of fighting


@pytest.fixture(scope="session")
def pairs():
    """(target, draft) per architecture, built once per test session (torch is imported only here)."""
    from tiny_models import tiny_pair

    return {architecture: tiny_pair(architecture) for architecture in ("gpt2", "llama", "qwen2")}


def pytest_xdist_auto_num_workers(config):
    """`-n auto` (pyproject.toml): one worker per core, at most 4 (each holds torch and transformers, about 0.6 GB)."""
    return max(1, min(os.cpu_count() or 1, 4))
