"""What a generation returns: the new tokens, statistics, and (for speculative runs) a per-round trace.

    result = speculative_generate(target, draft, input_ids, gamma=4)
    result.tokens                       # [int, ...] the new tokens only
    result.stats.acceptance_rate        # the acceptance rate: accepted / drafted (what serving engines report)
    result.stats.alpha_estimate         # alpha: accepted / tested, the estimate of the formulas' alpha
    result.stats.tokens_per_target_pass # new tokens / target forward passes (prompt pass included)
    result.rounds[0].drafted[0].p       # p(x) of the first drafted token of the first round
    result.origins()                    # how each new token arose, for colouring text
    result.timeline[-1].end_s           # when the last target pass ended, seconds from the run's start

Every field is computed by the loop (`specdec.engine.loop`) as `specdec.generation.run` and
`specdec.generation.autoregressive` run it; nothing here runs a model.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from enum import Enum


class TokenOrigin(str, Enum):
    """How a token of the output arose."""

    ACCEPTED = "accepted"  # drafted by q and accepted by the rule
    RESAMPLED = "resampled"  # sampled by the target from the residual after a rejection
    BONUS = "bonus"  # sampled by the target after every drafted token was accepted
    TARGET = "target"  # sampled by the target with nothing drafted (prompt pass, plain decoding)


@dataclass(frozen=True)
class DraftedToken:
    """One drafted token and how the accept/reject rule treated it."""

    token: int
    p: float  # the target's probability of this token (after warping)
    q: float  # the draft's probability of this token (after warping)
    u: float | None  # the uniform draw it was tested with; None when greedy or not tested
    accepted: bool | None  # None: never used, after a rejection or after an accepted end-of-sequence token


@dataclass(frozen=True)
class TreeTrace:
    """The shape of a round's token tree (`specdec.engine.trees`): the nodes are the round's `drafted` tokens."""

    parents: tuple[int, ...]  # the parent of each drafted node; -1 for the root's children
    path: tuple[int, ...]  # the accepted nodes in the output, from the root's child down


@dataclass(frozen=True)
class Round:
    """One draft-then-verify round (or the prompt pass, which drafts nothing)."""

    drafted: tuple[DraftedToken, ...]
    accepted: int  # drafted tokens accepted and in the output (none after an EOS)
    next_token: int  # the token the target added after them
    next_origin: TokenOrigin  # RESAMPLED, BONUS, or TARGET when nothing was drafted
    emitted: tuple[tuple[int, TokenOrigin], ...]  # what this round appended to the output, cut at EOS
    tree: TreeTrace | None = None  # a tree round's shape; None for a chain (or nothing drafted)
    draft_s: float = 0.0  # seconds inside the drafter this round
    verify_s: float = 0.0  # seconds inside the target's pass this round (the prompt pass for the first)


@dataclass(frozen=True)
class PassTime:
    """When one target pass (a speculative round, or one token of plain decoding) ran, on the run's own stopwatch.

    The seconds are those spent between the end of the previous pass (or the run's start) and `end_s`:
    a round's `Round.draft_s` also holds the drafter's look at the pass before it, this holds only what
    happened in its own window, so draft_s + verify_s <= end_s - (the previous end_s).
    """

    draft_s: float  # seconds inside the drafter in this window (0 for plain decoding)
    verify_s: float  # seconds inside the target's pass
    end_s: float  # seconds from the run's start until this pass's tokens were decided
    tokens: int  # tokens this pass appended to the output


@dataclass(frozen=True)
class GenerationStats:
    """Counts and times of one generation. Times are seconds of wall clock, device synchronised."""

    new_tokens: int
    drafted: int
    accepted: int
    target_passes: int  # forward passes of the target, the prompt pass included
    draft_passes: int  # forward passes of the draft model (0 for a model-free drafter)
    wall_time_s: float
    draft_time_s: float  # time inside the drafter
    verify_time_s: float  # time inside target forward passes (the prompt pass included)
    prompt_tokens: int = 0
    rejections: int = 0  # rounds whose last output token replaced a rejected drafted token

    @property
    def acceptance_rate(self) -> float:
        """The acceptance rate, accepted / drafted (NaN when nothing was drafted), as serving engines report it.

        Shown as "acceptance rate (accepted/drafted)" by the CLI, the dashboard and the course.

        Drafted tokens after a rejection (or after an accepted end-of-sequence token) never reach
        the output but count as drafted here, so this is lower than the per-token alpha of the
        theory; see `alpha_estimate`.
        """
        return self.accepted / self.drafted if self.drafted else math.nan

    @property
    def alpha_estimate(self) -> float:
        """Alpha, the per-token chance of acceptance the formulas assume: accepted / (accepted + rejections).

        Shown as "alpha (accepted/tested)" by the CLI, the dashboard and the course.

        Each round tests drafted tokens until the first rejection, so accepted + rejections is the
        number of tokens the rule actually tested (the maximum-likelihood estimate of alpha).
        """
        tested = self.accepted + self.rejections
        return self.accepted / tested if tested else math.nan

    @property
    def tokens_per_target_pass(self) -> float:
        """New tokens / target forward passes. Plain decoding gives 1; above 1 is the speculative gain."""
        return self.new_tokens / self.target_passes if self.target_passes else math.nan

    @property
    def other_time_s(self) -> float:
        """Wall time outside draft and target passes: sampling, the accept test, bookkeeping."""
        return max(self.wall_time_s - self.draft_time_s - self.verify_time_s, 0.0)

    @property
    def tokens_per_second(self) -> float:
        return self.new_tokens / self.wall_time_s if self.wall_time_s > 0 else math.nan

    def to_dict(self) -> dict[str, float | int | None]:
        """Fields and derived rates as a JSON-friendly dict (NaN becomes None)."""
        values = asdict(self) | {
            "acceptance_rate": self.acceptance_rate,
            "alpha_estimate": self.alpha_estimate,
            "tokens_per_target_pass": self.tokens_per_target_pass,
            "other_time_s": self.other_time_s,
            "tokens_per_second": self.tokens_per_second,
        }
        return {
            key: (None if isinstance(value, float) and math.isnan(value) else value) for key, value in values.items()
        }


@dataclass(frozen=True)
class GenerationResult:
    """The new tokens of one generation, its statistics and, for speculative runs, its rounds."""

    tokens: list[int]
    stats: GenerationStats
    rounds: tuple[Round, ...] = field(default=())
    drafting: str = ""  # how the rounds were drafted, in words ('chain, stop rule'); '' for plain decoding
    by_default: bool = False  # the policy chose how to draft (a draft model given with gamma left out)
    draft_cost_ratio: float | None = None  # c the plan priced rounds with (measured where `verify_costs` is given)
    verify_costs: tuple[float, ...] = ()  # v(0), v(1), ... measured on this machine (the llama.cpp runtime), else ()
    # one per target pass, the prompt pass first (plain decoding too: one per token)
    timeline: tuple[PassTime, ...] = ()
    plan: str = ""  # the planner's header line: each model's runtime and precision, the drafting and why

    def origins(self) -> list[TokenOrigin]:
        """How each new token arose, aligned with `tokens` (all TARGET for plain decoding)."""
        if not self.rounds:
            return [TokenOrigin.TARGET] * len(self.tokens)
        return [origin for round_ in self.rounds for _, origin in round_.emitted]
