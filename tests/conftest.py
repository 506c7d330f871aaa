"""Shared fixtures: tiny models built from configs (see tiny_models.py). Nothing is downloaded."""

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")          # tests never reach for a model hub
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")


@pytest.fixture(scope="session")
def pairs():
    """(target, draft) per architecture, built once per test session (torch is imported only here)."""
    from tiny_models import tiny_pair

    return {architecture: tiny_pair(architecture) for architecture in ("gpt2", "llama", "qwen2")}
