"""One speculative run judged against the target alone: speedup, where the time went, and exactness.

Notation: p is the target, q the draft, gamma the drafted tokens per round, alpha the chance a tested
draft is accepted. The numbers a person wants after one run, side by side with plain decoding:

    comparison = RunComparison(speculative.stats, plain.stats, gamma=4)
    comparison.wall_clock_speedup          # plain wall time / speculative wall time
    comparison.predicted_tokens_per_pass   # (1 - alpha^(gamma+1)) / (1 - alpha) from the alpha this run estimated
    comparison.time_split()                # draft / verify / other seconds and shares
    greedy_check(speculative.tokens, plain.tokens, "float32").verdict

With temperature 0 both runs should produce the same tokens. The target scores a drafted block
in one pass over several tokens, and plain decoding one token per pass; the two can round
differently (matrix products over another shape add in another order). In bfloat16 or float16
that flips near-ties now and then; in float32 the rounding is about 1e-6 of a logit, so a
difference there is either a near-tie at that size or a bug, and `greedy_check` says which to
suspect from the target's own margin between its two best tokens when the caller gives it.

Not handled: statistics over many runs (see `specdec.bench.harness`).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from specdec.engine.costs import CostProfile
from specdec.engine.model import Model
from specdec.engine.results import GenerationStats, Round
from specdec.kernels.devices import dtype_name
from specdec.pair.resources import LoadedPair
from specdec.pair.running import continued, target_margin
from specdec.reference.theory import expected_tokens_per_pass

EXACT_DTYPES = ("float32", "float64")


@dataclass(frozen=True)
class TimeShare:
    """Seconds spent in one part of a run, and that part's share of the wall time."""

    name: str
    seconds: float
    share: float


@dataclass(frozen=True)
class RunComparison:
    """A speculative run's statistics, with the target-alone run when there is one."""

    speculative: GenerationStats
    plain: GenerationStats | None
    gamma: int | None  # None: the stop rule chose each round's length

    @property
    def wall_clock_speedup(self) -> float:
        """Plain wall time / speculative wall time (NaN without a plain run). Above 1 is a gain."""
        if self.plain is None or self.speculative.wall_time_s <= 0:
            return math.nan
        return self.plain.wall_time_s / self.speculative.wall_time_s

    @property
    def tokens_per_round(self) -> float:
        """Tokens per drafting round, measured: the prompt pass (one token, nothing drafted) left out.

        >>> RunComparison(GenerationStats(10, 8, 6, 4, 8, 1.0, 0.2, 0.7), None, gamma=4).tokens_per_round
        3.0
        """
        stats = self.speculative
        return (stats.new_tokens - 1) / (stats.target_passes - 1) if stats.target_passes > 1 else math.nan

    @property
    def predicted_tokens_per_pass(self) -> float:
        """What theory expects per round from the alpha this run estimated (NaN if nothing was tested).

        The alpha is `GenerationStats.alpha_estimate`, accepted / tested drafted tokens: the
        per-token chance the formula assumes (accepted / drafted would count the drafts after a
        rejection, which are never tested, and predict too little).

        >>> stats = GenerationStats(10, 8, 6, 4, 8, 1.0, 0.2, 0.7, rejections=2)
        >>> round(RunComparison(stats, None, gamma=4).predicted_tokens_per_pass, 3)   # alpha = 6 / (6 + 2)
        3.051
        """
        alpha = self.speculative.alpha_estimate
        if math.isnan(alpha):
            return math.nan
        return expected_tokens_per_pass(alpha, self.gamma if self.gamma is not None else round(self.mean_drafted))

    @property
    def mean_drafted(self) -> float:
        """Drafted tokens per drafting round (NaN when nothing was drafted)."""
        stats = self.speculative
        return stats.drafted / (stats.target_passes - 1) if stats.target_passes > 1 else math.nan

    def time_split(self) -> list[TimeShare]:
        """Draft, verify and other time of the speculative run, each with its share of the wall time.

        >>> [(t.name, round(t.share, 2)) for t in RunComparison(GenerationStats(10, 8, 6, 4, 8, 1.0, 0.2, 0.7), None,
        ...     4).time_split()]
        [('draft', 0.2), ('verify', 0.7), ('other', 0.1)]
        """
        stats = self.speculative
        wall = stats.wall_time_s if stats.wall_time_s > 0 else math.nan
        parts = (("draft", stats.draft_time_s), ("verify", stats.verify_time_s), ("other", stats.other_time_s))
        return [TimeShare(name, seconds, seconds / wall) for name, seconds in parts]


@dataclass(frozen=True)
class GreedyCheck:
    """Whether greedy speculative decoding reproduced the target's own greedy tokens."""

    identical: bool
    first_difference: int | None  # index of the first differing token, None when identical
    verdict: str  # "identical", "rounding" (low precision, or a float32 near-tie) or "suspect"
    message: str


def first_difference(a: list[int], b: list[int]) -> int | None:
    """The first index where `a` and `b` differ (or where the shorter one ends); None if equal.

    >>> first_difference([1, 2, 3], [1, 2, 4]), first_difference([1, 2], [1, 2, 5]), first_difference([1], [1])
    (2, 2, None)
    """
    if a == b:
        return None
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


CONTROL_TOKEN = re.compile(r"<\|[a-z_]+\|>")  # "<|im_end|>": specdec's text shows it, llama.cpp's tools print none


def same_text(ours: str, theirs: str) -> tuple[bool, int]:
    """Whether specdec's greedy text and another engine's agree, and on how many characters. Ours is read up to its
    first control token: llama.cpp's --ignore-eos bans the end of sequence, so its text goes another way there, while
    specdec's runs write it and go on. Then one text must begin the other (llama-completion's asynchronous log may drop
    its last few bytes at exit).

    >>> same_text("def f(x):", "def f(x"), same_text("def f(y)", "def f(x)"), same_text("ok.<|im_end|>Human", "ok. The")
    ((True, 7), (False, 6), (True, 3))
    """
    ours = CONTROL_TOKEN.split(ours, maxsplit=1)[0]
    common = len(os.path.commonprefix([ours, theirs]))
    return common == min(len(ours), len(theirs)), common


NEAR_TIE = 1e-3  # a float32 gap between the two best logits below this can flip with the shape of the pass


def greedy_check(
    speculative_tokens: list[int], plain_tokens: list[int], dtype: str, margin: float | None = None
) -> GreedyCheck:
    """Judge a greedy pair of runs; `dtype` is the models' dtype name ("float32", "bfloat16", ...).

    `margin` is the target's gap between its two best logits where the runs part (when known): in
    float32 a gap below `NEAR_TIE` makes rounding the likely cause, a larger one a bug.

    >>> greedy_check([1, 2], [1, 2], "float32").verdict, greedy_check([1, 2], [1, 3], "bfloat16").verdict
    ('identical', 'rounding')
    >>> greedy_check([1, 2], [1, 3], "float32", margin=2e-5).verdict, greedy_check([1, 2], [1, 3], "float32",
    ...     margin=0.5).verdict
    ('rounding', 'suspect')
    """
    where = first_difference(speculative_tokens, plain_tokens)
    if where is None:
        return GreedyCheck(
            True, None, "identical", "identical: speculative decoding produced exactly the target's own greedy tokens"
        )
    if dtype not in EXACT_DTYPES:
        return GreedyCheck(
            False,
            where,
            "rounding",
            f"they part at token {where}: in {dtype} a pass over several tokens rounds differently from "
            "one-token steps, so near-ties can flip; choose dtype float32 to check exactness",
        )
    gap = "" if margin is None else f" (the target's two best logits there differ by {margin:.2g})"
    if margin is not None and margin < NEAR_TIE:
        return GreedyCheck(
            False,
            where,
            "rounding",
            f"they part at token {where} in {dtype} at a near-tie{gap}: a pass over several tokens rounds "
            "differently from one-token steps, even in float32, by about 1e-6 of a logit",
        )
    return GreedyCheck(
        False,
        where,
        "suspect",
        f"they part at token {where} in {dtype}{gap}: float32 rounding flips only near-ties, so unless the "
        "target's two best tokens there are within about 1e-3 of each other, please report this as a bug",
    )


def greedy_check_of_pair(
    pair: LoadedPair, input_ids: torch.Tensor, speculative_tokens: list[int], plain_tokens: list[int]
) -> GreedyCheck:
    """`greedy_check` for two greedy runs of `pair`; where float32 runs part, it measures the target's margin there."""
    dtype, where = dtype_name(pair.dtype), first_difference(speculative_tokens, plain_tokens)
    both_long_enough = where is not None and where < min(len(speculative_tokens), len(plain_tokens))
    margin = target_margin(pair, input_ids, plain_tokens, where) if both_long_enough and dtype in EXACT_DTYPES else None
    return greedy_check(speculative_tokens, plain_tokens, dtype, margin)


def oracle_speedup(rounds: Sequence[Round], costs: CostProfile) -> float:
    """The speedup a chain drafter would reach if it knew in advance how many tokens each round accepts.

    Such a drafter drafts exactly the n tokens the target will accept and gets the target's token
    after them: n + 1 tokens for n c + v(n) target steps (v(0) = 1, a plain step). Plain decoding
    pays one step a token, so the ratio below is the speedup over the target alone, in model time,
    for the rounds this run went through: the ceiling of any stop rule with this pair and machine.

    >>> from specdec.engine.results import Round, TokenOrigin as O
    >>> rounds = (Round((), 0, 5, O.TARGET, ((5, O.TARGET),)),
    ...           Round((), 3, 9, O.BONUS, ((6, O.ACCEPTED), (7, O.ACCEPTED), (8, O.ACCEPTED), (9, O.BONUS))))
    >>> oracle_speedup(rounds, CostProfile(0.1, 0.02, {1: 0.1, 3: 0.12}))   # 5 tokens for 1 + (3 * 0.2 + 1.2) steps
    1.7857142857142858
    """
    tokens = sum(len(round_.emitted) for round_ in rounds)
    # the prompt pass: 1
    steps = 1.0 + sum(round_.accepted * costs.c + costs.v(round_.accepted) for round_ in rounds[1:])
    return tokens / steps


def greedy_oracle_speedup(agrees: Sequence[bool], costs: CostProfile) -> float:
    """The greedy oracle: the same ceiling, from where the draft's own greedy choice matches the output.

    `agrees[i]` says whether the draft, fed the prompt and the first i output tokens, would pick
    output token i (`draft_agreement`). An oracle round starting at token i drafts the run of
    agreements that follows and gets the target's token after it; the first token comes from the
    prompt pass. Unlike `oracle_speedup`, no schedule's choices shape the rounds.

    >>> greedy_oracle_speedup([False, True, True, False, True], CostProfile(0.1, 0.02, {1: 0.1, 2: 0.11}))
    1.4285714285714286
    """
    steps, i = 1.0, 1  # token 0: the prompt pass
    while i < len(agrees):
        run = 0
        while i + run < len(agrees) and agrees[i + run]:
            run += 1
        drafted = min(run, len(agrees) - i - 1)  # the round's last token always comes from the target
        steps += drafted * costs.c + costs.v(drafted)
        i += drafted + 1
    return len(agrees) / steps


@torch.inference_mode()
def draft_agreement(draft: Model, input_ids: torch.Tensor, tokens: Sequence[int]) -> list[bool]:
    """For each output token, whether the draft's greedy choice after the text before it is that token (one pass)."""
    text = continued(input_ids, tokens, draft.device)  # [T + N]
    logits, _ = draft.rows([0]).feed([text], last=len(tokens) + 1)  # [1, N + 1, V]
    logits = logits[0, :-1]  # [N, V]
    choices = logits.argmax(dim=-1).tolist()
    return [choice == token for choice, token in zip(choices, tokens)]
