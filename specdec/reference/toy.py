"""The toy losslessness demo behind `python -m specdec toy`.

A target p and a draft q over three tokens A, B, C that disagree. Run the accept/reject rule many
times at one position and compare how often each token comes out with p. A correct rule matches p
to within sampling noise, however wrong the draft is; only alpha, the chance a draft is kept, depends on q.

The pass/fail threshold is statistical, not a magic number: every token's measured frequency
must lie within 5 binomial standard errors of its target probability (a correct rule fails that
about once in a million runs).

Not handled: more than one position (see `specdec.reference.rule.speculative_markov_generate`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from specdec.reference.rule import sample_one_position
from specdec.reference.stats import binomial_standard_error
from specdec.reference.theory import acceptance_rate

DEFAULT_TARGET = (0.30, 0.40, 0.30)  # p
DEFAULT_DRAFT = (0.60, 0.20, 0.20)  # q: over-confident in A, under-proposes B
STANDARD_ERRORS = 5.0


@dataclass(frozen=True)
class LosslessnessCheck:
    """What one toy run measured, and whether it matches the target."""

    labels: tuple[str, ...]
    target: tuple[float, ...]  # p
    draft: tuple[float, ...]  # q
    measured: tuple[float, ...]  # how often each token came out
    trials: int
    alpha_predicted: float  # sum(min(p, q))
    alpha_measured: float  # accepted drafts / trials
    max_error: float  # largest |measured - p|
    max_standard_errors: float  # largest |measured - p| / standard error
    passed: bool


def token_labels(size: int) -> tuple[str, ...]:
    """A, B, C, ... for the toy vocabulary.

    >>> token_labels(3)
    ('A', 'B', 'C')
    """
    return tuple(chr(ord("A") + index) if index < 26 else f"t{index}" for index in range(size))


def run_losslessness_check(
    target: tuple[float, ...] = DEFAULT_TARGET,
    draft: tuple[float, ...] = DEFAULT_DRAFT,
    trials: int = 200_000,
    seed: int | None = None,
) -> LosslessnessCheck:
    """Run the rule `trials` times and compare the output frequencies with p.

    >>> check = run_losslessness_check(trials=200_000, seed=0)
    >>> check.passed, round(check.alpha_predicted, 3)
    (True, 0.7)
    """
    alpha = acceptance_rate(target, draft)  # also validates both distributions
    if len(target) != len(draft):
        raise ValueError(f"target and draft must cover the same tokens, got {len(target)} and {len(draft)}")
    if trials < 1:
        raise ValueError(f"trials must be >= 1, got {trials}")
    p, q = np.asarray(target, dtype=np.float64), np.asarray(draft, dtype=np.float64)
    tokens, accepted = sample_one_position(p, q, trials, np.random.default_rng(seed))
    measured = np.bincount(tokens, minlength=len(p)) / trials
    errors = np.abs(measured - p)
    standard_errors = np.array([binomial_standard_error(float(value), trials) for value in p])
    with np.errstate(divide="ignore", invalid="ignore"):
        # a token with p = 0 has no noise: any appearance at all is an infinite error
        in_errors = np.where(standard_errors > 0, errors / standard_errors, np.where(errors > 0, np.inf, 0.0))
    worst = float(in_errors.max())
    return LosslessnessCheck(
        labels=token_labels(len(p)),
        target=tuple(float(v) for v in p),
        draft=tuple(float(v) for v in q),
        measured=tuple(float(v) for v in measured),
        trials=trials,
        alpha_predicted=alpha,
        alpha_measured=float(accepted.mean()),
        max_error=float(errors.max()),
        max_standard_errors=worst,
        passed=worst <= STANDARD_ERRORS,
    )


def format_check(check: LosslessnessCheck, show_theory: bool = False, bar_width: int = 40) -> str:
    """The seed's report: one row per token with a bar, then the verdict line."""
    trials_label = f"{check.trials // 1000}k" if check.trials % 1000 == 0 else str(check.trials)
    lines = [f"--- Losslessness check ({trials_label} trials) ---", "  token   target p  measured  match"]
    for label, p_value, measured in zip(check.labels, check.target, check.measured):
        lines.append(f"  {label:<8}{p_value:>8.3f}  {measured:>8.3f}   {'#' * round(measured * bar_width)}")
    verdict = "PASS: output matches target" if check.passed else "FAIL: output does not match target"
    lines.append(
        f"  max error = {check.max_error:.4f}  ->  {verdict}"
        f"  ({check.max_standard_errors:.1f} standard errors; the limit is {STANDARD_ERRORS:g})"
    )
    if show_theory:
        lines += [
            "--- Theory ---",
            f"  draft q       {'  '.join(f'{v:.3f}' for v in check.draft)}",
            f"  alpha = sum(min(p, q)) predicted {check.alpha_predicted:.4f}   measured {check.alpha_measured:.4f}",
        ]
    return "\n".join(lines)
