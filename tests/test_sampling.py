"""specdec.engine.sampling against transformers' own logits warpers: p and q are warped exactly like `generate` does."""

import pytest
import torch
from transformers.generation.logits_process import (
    LogitsProcessorList,
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
)

from specdec.engine.sampling import SamplingConfig, fit_vocabulary, probabilities, warp_logits
from specdec.errors import SpecdecError


def transformers_warp(logits: torch.Tensor, config: SamplingConfig) -> torch.Tensor:
    warpers = LogitsProcessorList()
    if config.temperature != 1.0:
        warpers.append(TemperatureLogitsWarper(config.temperature))
    if config.top_k > 0:
        warpers.append(TopKLogitsWarper(config.top_k))
    if config.top_p < 1.0:
        warpers.append(TopPLogitsWarper(config.top_p))
    return warpers(torch.zeros(logits.shape[0], 1, dtype=torch.long), logits.clone())


@pytest.mark.parametrize(
    "config",
    [
        SamplingConfig(1.0),
        SamplingConfig(0.7),
        SamplingConfig(1.3, top_k=5),
        SamplingConfig(1.0, top_p=0.9),
        SamplingConfig(0.5, top_k=10, top_p=0.6),
        SamplingConfig(1.0, top_k=1),
        SamplingConfig(1.0, top_p=0.01),
    ],
)
def test_warping_matches_transformers(config):
    generator = torch.Generator().manual_seed(0)
    logits = torch.randn(6, 50, generator=generator) * 3
    logits[0, :3] = 5.0  # ties at the top, the edge case top-k must keep
    ours, theirs = warp_logits(logits, config), transformers_warp(logits, config)
    assert torch.equal(torch.isinf(ours), torch.isinf(theirs))
    assert torch.allclose(ours[~torch.isinf(ours)], theirs[~torch.isinf(theirs)])


def test_greedy_is_a_point_mass_on_the_first_argmax():
    logits = torch.tensor([[1.0, 3.0, 3.0, 0.0]])
    assert probabilities(logits, SamplingConfig(temperature=0)).tolist() == [[0.0, 1.0, 0.0, 0.0]]


def test_probabilities_are_distributions():
    logits = torch.randn(4, 30)
    for config in (SamplingConfig(0.8, top_k=4), SamplingConfig(1.0, top_p=0.5)):
        probs = probabilities(logits, config)
        assert torch.allclose(probs.sum(-1), torch.ones(4))
        assert ((probs > 0).sum(-1) >= 1).all()


def test_fitting_the_vocabulary_gives_missing_ids_probability_zero():
    padded = fit_vocabulary(torch.zeros(2, 3), 5)
    assert padded.shape == (2, 5)
    assert probabilities(padded, SamplingConfig()).tolist()[0] == pytest.approx([1 / 3] * 3 + [0, 0])
    assert fit_vocabulary(torch.arange(6.0)[None], 4).tolist() == [[0.0, 1.0, 2.0, 3.0]]


@pytest.mark.parametrize(
    "kwargs", [dict(temperature=-0.1), dict(top_k=-1), dict(top_p=0.0), dict(top_p=1.5), dict(top_k=1.5)]
)
def test_bad_settings_are_refused(kwargs):
    with pytest.raises(SpecdecError):
        SamplingConfig(**kwargs)
