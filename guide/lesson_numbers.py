"""Every number the lessons quote, and where it comes from.

A chapter never contains a typed-in result. It contains the number as text, and this file says
how that number is produced. `tests/test_guide.py` checks, for every entry, that the chapter
contains the entry's text with today's value filled in, and fails when a chapter contains a
decimal number, a percentage or a speedup ("2.4x") that no entry accounts for.

Three kinds of entries:

- `Computed(chapter, text, value)`: `value()` calls specdec now. `text` is the exact phrase in
  the chapter with `<<format>>` where each value goes, e.g.

      Computed("01-math.md", r"$\\alpha = <<.2f>>$", lambda: acceptance_rate(TOY_P, TOY_Q))

  The phrase carries some words around the number, so that a 0.30 that means "p(A)" cannot
  stand in for a 0.30 that means "1 - alpha". Whitespace and line breaks do not matter.
- `Measured(chapter, text, command, source, value)`: a number from a run on real models. The
  run's saved output is `guide/measurements/<source>`, `value(saved_text)` reads the number
  from it, and `command` (which produced that output) must appear in the chapter.
- `Reported(chapter, text, source)`: a number a paper or benchmark reports; `source` is its
  URL and must appear in the chapter.

`Output(chapter, command, produce)` is a whole code block: the output of a command that is run
again by the test (the seeded toy demo) and must match the block line for line.

The kinds and the helpers that fill them in are in `lesson_entries.py`; this file is the data.

Inputs a reader could change (the toy p and q, a cost ratio c) are `Computed` entries too: their
value is the constant below, so the text and the calculation use the same numbers.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

GUIDE = Path(__file__).resolve().parent
sys.path.insert(0, str(GUIDE.parent))  # specdec, from a checkout
sys.path.insert(0, str(GUIDE))  # lesson_entries.py

from lesson_entries import (  # noqa: E402,F401  (entry_text and the kinds are what tests/test_guide.py reads)
    MEASUREMENTS,
    Computed,
    Measured,
    Output,
    Reported,
    cli_output,
    drafts_for_one_target,
    entry_text,
    kernel_costs,
    report_line,
    side_by_side,
    stats,
    tree_against_chain,
    vector,
)

from specdec.engine.stop_rule import ConfidenceStop  # noqa: E402
from specdec.bugs import rules as bugs, trees as tree_bugs  # noqa: E402
from specdec.reference.stats import binomial_standard_error  # noqa: E402
from specdec.reference.theory import (  # noqa: E402
    acceptance_rate,
    best_gamma,
    expected_tokens_per_pass,
    multi_candidate_acceptance,
    pays_off,
    residual_distribution,
    total_variation,
    walltime_speedup,
)

# --- the running example: the seed's three-token p and q (also `specdec toy`'s default) -------

TOY_P = (0.30, 0.40, 0.30)  # target p over tokens A, B, C
TOY_Q = (0.60, 0.20, 0.20)  # draft q: over-proposes A, under-proposes B and C
A, B, C = 0, 1, 2
TOY_ALPHA = acceptance_rate(TOY_P, TOY_Q)
TOY_RESIDUAL = residual_distribution(TOY_P, TOY_Q)
TOY_OVERLAP = np.minimum(TOY_P, TOY_Q)
TOY_OUTPUT = bugs.correct_rule(TOY_P, TOY_Q)

# --- real runs, saved in guide/measurements/ ---------------------------------------------------

RUN_JSON = (
    "specdec run --temperature 0 --compare --chat --gamma 4 --runtime torch --dtype bfloat16 --quantization "
    "none --draft-quantization none --json"
)
RUN_TEXT = (
    "specdec run --temperature 0 --compare --chat --gamma 4 --runtime torch --dtype bfloat16 --quantization "
    "none --draft-quantization none"
)


def draft_cost_ratio(saved: str) -> float:
    """c from one saved run: seconds per draft pass / seconds per plain target step (its prompt pass included)."""
    draft_step = stats(saved, "draft_time_s") / stats(saved, "draft_passes")
    target_step = stats(saved, "verify_time_s", baseline=True) / stats(saved, "target_passes", baseline=True)
    return draft_step / target_step


INTUITION = "00-intuition.md"

NUMBERS: list[Computed | Measured | Reported] = [
    # 00: why generation is slow (1.5e9 parameters x 2 bytes each)
    Computed(
        INTUITION,
        "A model with <<.1f>> billion parameters stored in bfloat16 (2 bytes each) reads about <<.1f>> GB per token",
        lambda: (1.5, 1.5e9 * 2 / 1e9),
    ),
    # 00: the toy example in words
    Computed(INTUITION, "p = (<<s>>)", lambda: vector(TOY_P)),
    Computed(INTUITION, "q = (<<s>>)", lambda: vector(TOY_Q)),
    Computed(
        INTUITION,
        "The draft proposes A with <<.2f>> but the target wants <<.2f>>, so a proposed A is kept half of the time "
        "(<<.2f>>)",
        lambda: (TOY_Q[A], TOY_P[A], TOY_P[A] / TOY_Q[A]),
    ),
    Computed(
        INTUITION,
        "B is missing <<.2f>> (<<.2f>> wanted, <<.2f>> proposed) and C is missing <<.2f>>",
        lambda: (TOY_P[B] - TOY_Q[B], TOY_P[B], TOY_Q[B], TOY_P[C] - TOY_Q[C]),
    ),
    Computed(INTUITION, "A comes out only by being proposed and kept: <<.2f>>", lambda: TOY_OUTPUT[A]),
    Computed(
        INTUITION,
        "come out when they are proposed (<<.2f>> each) plus when they replace a rejected A. A is proposed <<.2f>> of "
        "the time and thrown out half of those times, so a rejection happens <<.2f>> of the time; the replacement is B "
        "two times out of three and C one time out of three, so <<.2f>> goes to B and <<.2f>> to C. "
        "That gives B <<.2f>> and C <<.2f>>.",
        lambda: (
            TOY_OVERLAP[B],
            TOY_Q[A],
            1 - TOY_ALPHA,
            (1 - TOY_ALPHA) * TOY_RESIDUAL[B],
            (1 - TOY_ALPHA) * TOY_RESIDUAL[C],
            TOY_OUTPUT[B],
            TOY_OUTPUT[C],
        ),
    ),
    Computed(
        INTUITION,
        "a guessed token is kept <<.0f>> % of the time, all but the <<.2f>> that are rejected (alpha = <<.2f>>)",
        lambda: (100 * TOY_ALPHA, 1 - TOY_ALPHA, TOY_ALPHA),
    ),
    Computed(INTUITION, "size has c roughly near <<.1f>>.", lambda: 0.1),
    Computed(
        INTUITION,
        "With alpha = <<.1f>> and gamma = <<d>>, a target pass produces <<.2f>> tokens on average. If the draft costs "
        "c = <<.1f>>, the whole thing is <<.2f>>x faster than the target alone.",
        lambda: (0.8, 4, expected_tokens_per_pass(0.8, 4), 0.1, walltime_speedup(0.8, 4, 0.1)),
    ),
    Computed(
        INTUITION,
        "c = <<.1f>>, and alpha = <<.1f>>, the same gamma gives only <<.2f>>x",
        lambda: (0.4, 0.7, walltime_speedup(0.7, 4, 0.4)),
    ),
    Measured(
        INTUITION,
        "The draft guessed <<d>> tokens and <<d>> were kept: an *acceptance rate* (accepted/drafted) of <<.3f>>.",
        RUN_JSON,
        "avx512-bf16/qwen-greedy-bf16.json",
        lambda saved: (stats(saved, "drafted"), stats(saved, "accepted"), stats(saved, "acceptance_rate")),
    ),
    Measured(
        INTUITION,
        "the target checked <<d>> guesses and kept <<d>>, so alpha, the chance that a *checked* guess is kept, was "
        "about "
        "<<.2f>> (accepted/tested). Each target pass produced <<.2f>> tokens, and the wall clock said <<.2f>>x faster "
        "than "
        "the target alone. Why only <<.2f>>x when each pass gave <<.2f>> tokens?",
        RUN_JSON,
        "avx512-bf16/qwen-greedy-bf16.json",
        lambda saved: (
            stats(saved, "accepted") + stats(saved, "rejections"),
            stats(saved, "accepted"),
            stats(saved, "alpha_estimate"),
            stats(saved, "tokens_per_target_pass"),
            json.loads(saved)["compare"]["wall_clock_speedup"],
            json.loads(saved)["compare"]["wall_clock_speedup"],
            stats(saved, "tokens_per_target_pass"),
        ),
    ),
    Measured(
        INTUITION,
        "the saved run says `identical_tokens: <<s>>`",
        RUN_JSON,
        "avx512-bf16/qwen-greedy-bf16.json",
        lambda saved: str(json.loads(saved)["compare"]["identical_tokens"]).lower(),
    ),
    Measured(
        INTUITION,
        "its text parted from the target's greedy text at token <<d>>",
        RUN_TEXT,
        "avx512-bf16/qwen-greedy-bf16-busy.txt",
        lambda saved: int(report_line(saved, r"they part at token (\d+)")),
    ),
    Measured(
        INTUITION,
        "the same command wrote the target's own text for all <<d>> tokens",
        "specdec run --temperature 0 --compare --chat --dtype float32",
        "avx512-bf16/qwen-greedy-fp32.txt",
        lambda saved: int(report_line(saved, r"new tokens: (\d+)")) if "greedy output: yes" in saved else -1,
    ),
    Measured(
        INTUITION,
        "each draft step cost about <<.2f>> of a target step",
        RUN_JSON,
        "avx512-bf16/qwen-greedy-bf16.json",
        draft_cost_ratio,
    ),
    Measured(
        INTUITION,
        "reported <<.2f>>x",
        RUN_TEXT,
        "avx512-bf16/qwen-greedy-bf16-busy.txt",
        lambda saved: report_line(saved, r"wall-clock speedup: ([\d.]+)x"),
    ),
    Computed(INTUITION, "p(A) / q(A) = <<.2f>> / <<.2f>> = <<.2f>>", lambda: (TOY_P[A], TOY_Q[A], TOY_P[A] / TOY_Q[A])),
    Computed(INTUITION, "the draft proposes it with <<.2f>>, the target wants <<.2f>>", lambda: (TOY_Q[A], TOY_P[A])),
]

OUTPUTS: list[Output] = [
    Output(INTUITION, "specdec toy --theory --seed 0", lambda: cli_output("toy", "--theory", "--seed", "0")),
]


# --- 01-math.md -------------------------------------------------------------------------------

MATH = "01-math.md"
LEVIATHAN = "https://arxiv.org/abs/2211.17192"
CLOSE_P = (0.50, 0.30, 0.20)  # a target and a close draft, for the warping section
CLOSE_Q = (0.40, 0.35, 0.25)
EXERCISE_P = (0.50, 0.50, 0.00)  # exercise 1
EXERCISE_Q = (0.25, 0.25, 0.50)


def verification_cost(saved: str) -> float:
    """v from one saved run: seconds per verification pass / seconds per plain target step (prompt passes included)."""
    verify_pass = stats(saved, "verify_time_s") / stats(saved, "target_passes")
    target_step = stats(saved, "verify_time_s", baseline=True) / stats(saved, "target_passes", baseline=True)
    return verify_pass / target_step


def _formula_against_run(saved: str) -> tuple:
    """Chapter 1: the run's c, v and tokens per pass in the speedup
    formula, at the run's gamma and at the drafts per pass it made."""
    c, v, tpp = draft_cost_ratio(saved), verification_cost(saved), stats(saved, "tokens_per_target_pass")
    gamma = json.loads(saved)["settings"]["gamma"]
    drafted, passes = stats(saved, "drafted"), stats(saved, "target_passes")
    per_pass = drafted / passes
    speedup = json.loads(saved)["compare"]["wall_clock_speedup"]
    return (
        gamma,
        tpp,
        tpp,
        gamma,
        c,
        v,
        tpp / (gamma * c + v),
        speedup,
        gamma,
        per_pass,
        drafted,
        passes,
        tpp,
        per_pass,
        c,
        v,
        tpp / (per_pass * c + v),
    )


def smallest_gamma_reaching(alpha: float, tokens: float) -> int:
    """The smallest gamma whose expected tokens per target pass reach `tokens`."""
    return next(gamma for gamma in range(1, 10_000) if expected_tokens_per_pass(alpha, gamma) >= tokens)


def table_row(label: str, values, digits: int = 2) -> str:
    return "| " + " | ".join([label] + [f"{v:.{digits}f}" for v in values]) + " |"


NUMBERS += [
    Computed(MATH, r"p = (<<s>>), \qquad q = (<<s>>)", lambda: (vector(TOY_P), vector(TOY_Q))),
    Computed(MATH, "r = (<<s>>)", lambda: vector(TOY_RESIDUAL, 3)),
    *[
        Computed(
            MATH,
            "<<s>>",
            (
                lambda i=i: table_row(
                    "ABC"[i], (TOY_P[i], TOY_Q[i], TOY_OVERLAP[i], (1 - TOY_ALPHA) * TOY_RESIDUAL[i], TOY_OUTPUT[i])
                )
            ),
        )
        for i in (A, B, C)
    ],
    Computed(
        MATH,
        r"For our example, $\alpha = <<.2f>>$ and $\mathrm{TV}(p, q) = <<.2f>>$",
        lambda: (TOY_ALPHA, total_variation(TOY_P, TOY_Q)),
    ),
    Computed(
        MATH,
        r"For $\alpha = <<.2f>>$ and $\gamma = <<d>>$: $$ \frac{1 - <<.2f>>^{<<d>>}}{1 - <<.2f>>} = <<.2f>> $$",
        lambda: (TOY_ALPHA, 4, TOY_ALPHA, 5, TOY_ALPHA, expected_tokens_per_pass(TOY_ALPHA, 4)),
    ),
    *[
        Computed(
            MATH,
            "<<s>>",
            (
                lambda alpha=alpha: table_row(
                    f"α = {alpha:g}", [expected_tokens_per_pass(alpha, g) for g in (1, 2, 4, 8)]
                )
            ),
        )
        for alpha in (0.5, 0.7, 0.8, 0.9)
    ],
    Computed(MATH, r"with $\alpha = <<.1f>>$, never more than <<.2f>> tokens per pass", lambda: (0.8, 1 / (1 - 0.8))),
    Computed(
        MATH,
        r"$\alpha = <<.1f>>$, $\gamma = <<d>>$, $c = <<.1f>>$: $S = <<.2f>>$.",
        lambda: (0.8, 4, 0.1, walltime_speedup(0.8, 4, 0.1)),
    ),
    Computed(
        MATH,
        r"$\alpha = <<.1f>>$, $\gamma = <<d>>$, $c = <<.1f>>$: $S = <<.2f>>$. "
        r"A draft that costs <<.0f>>% of the target",
        lambda: (0.7, 4, 0.4, walltime_speedup(0.7, 4, 0.4), 0.4 * 100),
    ),
    Computed(
        MATH,
        r"where the check costs $v = <<.1f>>$ instead of 1: $S = <<.2f>>$",
        lambda: (1.2, walltime_speedup(0.7, 4, 0.4, 1.2)),
    ),
    Computed(
        MATH,
        r"With $\alpha = <<.1f>>$, $\gamma = <<d>>$, $c = <<.1f>>$ and $u = <<.1f>>$, $S$ falls from <<.2f>> to "
        r"<<.2f>>.",
        lambda: (0.8, 4, 0.1, 0.1, walltime_speedup(0.8, 4, 0.1), walltime_speedup(0.8, 4, 0.1, catch_up=0.1)),
    ),
    Measured(
        MATH,
        r"a draft step cost $c \approx <<.2f>>$ target steps",
        RUN_JSON,
        "avx512-bf16/qwen-greedy-bf16.json",
        draft_cost_ratio,
    ),
    Measured(
        MATH,
        r"a verification pass cost $v \approx <<.2f>>$ target steps",
        RUN_JSON,
        "avx512-bf16/qwen-greedy-bf16.json",
        verification_cost,
    ),
    Measured(
        MATH,
        r"Put into the formula with $\gamma = <<d>>$ and its <<.2f>> tokens per pass, they predict $<<.2f>> / (<<d>> "
        r"\cdot <<.3f>> + "
        r"<<.3f>>) = <<.2f>>$, below the measured <<.2f>>x: the run did not draft <<d>> tokens per target pass but "
        r"<<.2f>> (<<d>> "
        r"drafts in <<d>> passes: the prompt pass drafts nothing, and the last round drafts only what is still "
        r"wanted), and "
        r"$<<.2f>> / (<<.2f>> \cdot <<.3f>> + <<.3f>>) = <<.2f>>$",
        RUN_JSON,
        "avx512-bf16/qwen-greedy-bf16.json",
        lambda saved: _formula_against_run(saved),
    ),
    Measured(
        MATH,
        "in chapter 0's run (on the AVX-512 BF16 machine), alpha was <<.2f>> (<<d>> of <<d>> tested) and the "
        "acceptance rate <<.3f>> (<<d>> of <<d>> drafted)",
        RUN_JSON,
        "avx512-bf16/qwen-greedy-bf16.json",
        lambda saved: (
            stats(saved, "alpha_estimate"),
            stats(saved, "accepted"),
            stats(saved, "accepted") + stats(saved, "rejections"),
            stats(saved, "acceptance_rate"),
            stats(saved, "accepted"),
            stats(saved, "drafted"),
        ),
    ),
    Computed(
        MATH,
        r"For $\alpha = <<.1f>>$, $c = <<.1f>>$ the best $\gamma$ is <<d>> at $v = 1$ and at $v = <<.1f>>$, and <<d>> "
        r"at $v = 2$. Only a "
        r"cost that grows with $\gamma$, as it does on CPUs, $v(\gamma) = 1 + \beta \gamma$, shrinks it: with $\beta = "
        r"<<.1f>>$ the best "
        r"$\gamma$ is <<d>>",
        lambda: (
            (
                0.8,
                0.1,
                best_gamma(0.8, 0.1)[0],
                1.2,
                best_gamma(0.8, 0.1, verify_cost=2.0)[0],
                0.2,
                max(range(1, 65), key=lambda g: walltime_speedup(0.8, g, 0.1, 1 + 0.2 * g)),
            )
            if best_gamma(0.8, 0.1)[0] == best_gamma(0.8, 0.1, verify_cost=1.2)[0]
            else "the best gamma at v = 1.2 changed: rewrite"
        ),
    ),
    Computed(
        MATH,
        r"with $\alpha = <<.1f>>$ and $c = <<.1f>>$ even the best $\gamma$ gives $S = <<.2f>>$: `pays_off(<<.1f>>, "
        r"<<.1f>>)` is `<<s>>`",
        lambda: (0.3, 0.4, best_gamma(0.3, 0.4)[1], 0.3, 0.4, str(pays_off(0.3, 0.4))),
    ),
    *[
        Computed(
            MATH,
            r"$\alpha = <<.1f>>$, $c = <<.1f>>$: best $\gamma = <<d>>$, speedup <<.2f>>.",
            (lambda alpha=alpha, c=c: (alpha, c, *best_gamma(alpha, c))),
        )
        for alpha, c in ((0.8, 0.1), (0.7, 0.4), (0.9, 0.1))
    ],
    Computed(
        MATH,
        r"The user asked for, say, temperature <<.1f>>, so $p$ must be the target's distribution "
        r"at temperature <<.1f>>",
        lambda: (0.5, 0.5),
    ),
    Computed(
        MATH,
        r"$(<<s>>)$ instead of the requested $(<<s>>)$",
        lambda: (vector(TOY_P), vector(bugs.warp(TOY_P, temperature=0.5))),
    ),
    # p_T ∝ p^(1/T), by hand
    Computed(
        MATH,
        r"(temperature <<.1f>> squares each probability, then divides by their sum, <<.2f>>)",
        lambda: (0.5, float(np.sum(np.asarray(TOY_P) ** (1 / 0.5)))),
    ),
    Computed(
        MATH,
        r"Take $p = (<<s>>)$ and a close draft $q = (<<s>>)$. At temperature <<.1f>>, warping both gives $\alpha = "
        r"<<.3f>>$; "
        r"warping only $p$ gives $\alpha = <<.3f>>$. With top-k = 2, warping both gives $\alpha = <<.3f>>$, warping "
        r"only $p$ gives $<<.3f>>$",
        lambda: (
            vector(CLOSE_P),
            vector(CLOSE_Q),
            0.5,
            acceptance_rate(bugs.warp(CLOSE_P, 0.5), bugs.warp(CLOSE_Q, 0.5)),
            acceptance_rate(bugs.warp(CLOSE_P, 0.5), CLOSE_Q),
            acceptance_rate(bugs.warp(CLOSE_P, top_k=2), bugs.warp(CLOSE_Q, top_k=2)),
            acceptance_rate(bugs.warp(CLOSE_P, top_k=2), CLOSE_Q),
        ),
    ),
    Computed(
        MATH,
        r"warping both to temperature <<.1f>> *lowers* alpha from $<<.3f>>$ (only $p$ warped, the draft raw) to "
        r"$<<.3f>>$",
        lambda: (
            0.5,
            acceptance_rate(bugs.warp(TOY_P, 0.5), TOY_Q),
            acceptance_rate(bugs.warp(TOY_P, 0.5), bugs.warp(TOY_Q, 0.5)),
        ),
    ),
    Computed(
        MATH, r"$\alpha = \sum \min(p, q) = <<.2f>> + <<.2f>> + <<.2f>> = <<.2f>>$", lambda: (*TOY_OVERLAP, TOY_ALPHA)
    ),
    Computed(MATH, r"rejections happen with probability $1 - \alpha = <<.2f>>$", lambda: 1 - TOY_ALPHA),
    Computed(
        MATH,
        r"Tokens per target pass with $\gamma = <<d>>$: $<<.2f>>$.",
        lambda: (4, expected_tokens_per_pass(TOY_ALPHA, 4)),
    ),
    Computed(
        MATH,
        r"Speedup with $c = <<.1f>>$, $\gamma = <<d>>$: $S = <<.2f>>$.",
        lambda: (0.1, 4, walltime_speedup(TOY_ALPHA, 4, 0.1)),
    ),
    Computed(
        MATH,
        r"Best gamma for $c = <<.1f>>$: $\gamma = <<d>>$, $S = <<.2f>>$. Best gamma for $c = <<.1f>>$: $\gamma = "
        r"<<d>>$, $S = <<.2f>>$.",
        lambda: (0.1, *best_gamma(TOY_ALPHA, 0.1), 0.4, *best_gamma(TOY_ALPHA, 0.4)),
    ),
    # exercises
    Computed(
        MATH, r"Let $p = (<<s>>)$ and $q = (<<s>>)$. Compute $\alpha$", lambda: (vector(EXERCISE_P), vector(EXERCISE_Q))
    ),
    Computed(
        MATH,
        r"$\min(p, q) = (<<s>>)$, so $\alpha = <<.2f>>$. The excess $\max(0, p - q) = (<<s>>)$ sums to $1 - \alpha = "
        r"<<.2f>>$, "
        r"so the residual is $r = (<<s>>)$",
        lambda: (
            vector(np.minimum(EXERCISE_P, EXERCISE_Q)),
            acceptance_rate(EXERCISE_P, EXERCISE_Q),
            vector(np.maximum(np.subtract(EXERCISE_P, EXERCISE_Q), 0)),
            1 - acceptance_rate(EXERCISE_P, EXERCISE_Q),
            vector(residual_distribution(EXERCISE_P, EXERCISE_Q)),
        ),
    ),
    Computed(MATH, r"The output is $(<<s>>) = p$", lambda: vector(bugs.correct_rule(EXERCISE_P, EXERCISE_Q))),
    Computed(MATH, r"accepted with $\alpha = <<.1f>>$ and costs $c = <<.2f>>$", lambda: (0.6, 0.25)),
    Computed(
        MATH,
        r"It pays off because $\alpha = <<.1f>> > c = <<.2f>>$. Trying every $\gamma$, the best is $\gamma = <<d>>$ "
        r"with "
        r"speedup $S = <<.2f>>$. At $\gamma = <<d>>$ each target pass produces $(1 - <<.1f>>^{<<d>>}) / (1 - <<.1f>>) "
        r"= <<.2f>>$ tokens "
        r"on average; the draft steps cost $<<d>> \times <<.2f>>$ of a target step per round, which is why the speedup "
        r"is much lower than <<.2f>>.",
        lambda: (
            0.6 if pays_off(0.6, 0.25) else float("nan"),
            0.25,
            *best_gamma(0.6, 0.25),
            best_gamma(0.6, 0.25)[0],
            0.6,
            best_gamma(0.6, 0.25)[0] + 1,
            0.6,
            expected_tokens_per_pass(0.6, best_gamma(0.6, 0.25)[0]),
            best_gamma(0.6, 0.25)[0],
            0.25,
            expected_tokens_per_pass(0.6, best_gamma(0.6, 0.25)[0]),
        ),
    ),
    Computed(MATH, r"What is that ceiling for $\alpha = <<.1f>>$?", lambda: 0.9),
    Computed(MATH, "four values of alpha at c = <<.1f>>", lambda: 0.1),
    Reported(MATH, "(their Theorem 3.8)", LEVIATHAN),
    Reported(MATH, "(Corollary 3.9)", LEVIATHAN),
    Computed(
        MATH,
        r"For $\alpha = <<.1f>>$ the ceiling is <<.2f>> tokens per pass. With $\gamma = <<d>>$ you already get "
        r"<<.2f>>; "
        r"reaching <<d>> tokens needs $\gamma = <<d>>$",
        lambda: (0.9, 1 / (1 - 0.9), 8, expected_tokens_per_pass(0.9, 8), 9, smallest_gamma_reaching(0.9, 9)),
    ),
]


# --- 02-algorithm.md --------------------------------------------------------------------------

ALGORITHM = "02-algorithm.md"
RUN_FP32 = "specdec run --temperature 0 --compare --chat --dtype float32"
USER_TEMPERATURE = 0.5
WARPED_P = bugs.warp(TOY_P, temperature=USER_TEMPERATURE)
BUG_TABLE = [  # (row label, exact output of one position)
    ("none (the correct rule)", bugs.correct_rule),
    ("drafting by argmax while sampling", bugs.argmax_drafting),
    ("skipping the residual: resample from p", bugs.resample_from_target),
    ("skipping the residual: retry after a rejection", bugs.retry_on_reject),
    ("skipping the check: accept every draft", bugs.accept_always),
    ("reseeding per position", bugs.reseeded_position),
]


def bug_output(bug) -> np.ndarray:
    return bug(TOY_P, TOY_Q)


def sampled_warped_ratio_raw() -> np.ndarray:
    """Bug 3a: the draft samples at the user's temperature, the ratio uses the raw q."""
    return bugs.mismatched_warping(WARPED_P, TOY_Q, sampled_with={"temperature": USER_TEMPERATURE}, ratio_with={})


NUMBERS += [
    Computed(ALGORITHM, "for our running example p = (<<s>>), q = (<<s>>)", lambda: (vector(TOY_P), vector(TOY_Q))),
    *[
        Computed(
            ALGORITHM,
            "| <<s>> | (<<s>>) | <<.3f>> |",
            (
                lambda label=label, bug=bug: (
                    label,
                    vector(bug_output(bug), 3),
                    bugs.largest_error(bug_output(bug), TOY_P),
                )
            ),
        )
        for label, bug in BUG_TABLE
    ],
    Computed(ALGORITHM, "The output is (<<s>>) instead of p.", lambda: vector(bugs.argmax_drafting(TOY_P, TOY_Q), 3)),
    Computed(
        ALGORITHM,
        r"The output is $\min(p, q) + (1 - \alpha)\, p$ = (<<s>>)",
        lambda: vector(bugs.resample_from_target(TOY_P, TOY_Q), 3),
    ),
    Computed(ALGORITHM, r"$\min(p, q) / \alpha$ = (<<s>>)", lambda: vector(bugs.retry_on_reject(TOY_P, TOY_Q), 3)),
    Computed(ALGORITHM, "The output is q itself, (<<s>>)", lambda: vector(bugs.accept_always(TOY_P, TOY_Q), 3)),
    Computed(
        ALGORITHM,
        r"The user asks for temperature <<.1f>>, so the target's distribution must be $p_{<<.1f>>} =$ (<<s>>)",
        lambda: (USER_TEMPERATURE, USER_TEMPERATURE, vector(WARPED_P, 3)),
    ),
    Computed(
        ALGORITHM,
        "The draft samples at temperature <<.1f>>, but the code that computes q for the accept test forgets the "
        "temperature and uses the raw q. The output is (<<s>>), off by up to <<.3f>>.",
        lambda: (
            USER_TEMPERATURE,
            vector(sampled_warped_ratio_raw(), 3),
            bugs.largest_error(sampled_warped_ratio_raw(), WARPED_P),
        ),
    ),
    Computed(
        ALGORITHM,
        "The output is then exactly the raw p, (<<s>>): a perfect sample of the wrong thing, off by up to <<.3f>>",
        lambda: (vector(bugs.correct_rule(TOY_P, TOY_Q), 3), bugs.largest_error(TOY_P, WARPED_P)),
    ),
    Computed(
        ALGORITHM, "works this out: the output is (<<s>>).", lambda: vector(bugs.reseeded_position(TOY_P, TOY_Q), 3)
    ),
    Computed(ALGORITHM, "<<.2f>> is stored as <<.8f>>", lambda: (0.3, float(bugs.round_to_bfloat16([0.3])[0]))),
    Computed(
        ALGORITHM,
        "For our example the output becomes (<<s>>), off by <<.4f>>.",
        lambda: (
            vector(bugs.mixed_dtypes(TOY_P, TOY_Q), 4),
            bugs.largest_error(bugs.mixed_dtypes(TOY_P, TOY_Q), TOY_P),
        ),
    ),
    Computed(
        ALGORITHM,
        "after 200,000 trials the standard error of a frequency near <<.1f>> is <<.4f>>",
        lambda: (0.4, binomial_standard_error(0.4, 200_000)),
    ),
    Measured(
        ALGORITHM,
        "In bfloat16 the speculative text parted from the target's own greedy text at token <<d>>",
        RUN_TEXT,
        "avx512-bf16/qwen-greedy-bf16-busy.txt",
        lambda saved: int(report_line(saved, r"they part at token (\d+)")),
    ),
    Measured(
        ALGORITHM,
        "in float32 it was identical to the target's greedy output for all <<d>> tokens",
        RUN_FP32,
        "avx512-bf16/qwen-greedy-fp32.txt",
        lambda saved: int(report_line(saved, r"new tokens: (\d+)")) if "greedy output: yes" in saved else -1,
    ),
    Computed(
        ALGORITHM,
        "produces the frequencies (<<s>>) for our example",
        lambda: vector(bugs.reseeded_position(TOY_P, TOY_Q), 1),
    ),
    Computed(
        ALGORITHM,
        "Two bugs in the table give A = <<.1f>>: argmax drafting gives (<<s>>) and reseeding gives (<<s>>)",
        lambda: (
            bugs.reseeded_position(TOY_P, TOY_Q)[A],
            vector(bugs.argmax_drafting(TOY_P, TOY_Q), 3),
            vector(bugs.reseeded_position(TOY_P, TOY_Q), 3),
        ),
    ),
    Computed(ALGORITHM, "with reseeding its proposals still follow q (A <<.0f>>% of the time)", lambda: 100 * TOY_Q[A]),
]


# --- 03-methods.md: numbers the papers and benchmarks report ---------------------------------

METHODS = "03-methods.md"
CROSS_BENCH = (
    'specdec bench --pairs "qwen2.5-coder-0.5b->qwen2.5-coder-1.5b" "smollm2-135m->qwen2.5-coder-1.5b" '
    '"gemma3-270m->qwen2.5-coder-1.5b" --methods speculative,assisted-dynamic --gammas stop,adaptive '
    "--prompts-per-category 2 "
    "--max-new-tokens 128 --out benchmarks/cross-tokenizer.csv --markdown"
)
CROSS_P = (0.60, 0.30, 0.10)  # chapter 6, exercise 1: a target, a point-mass proposal, a same-tokenizer draft
CROSS_POINT_MASS = (1.0, 0.0, 0.0)
CROSS_Q = (0.80, 0.20, 0.00)
TREE_BENCH_BF16 = (
    'specdec bench --pairs "qwen2.5-coder-0.5b->qwen2.5-coder-1.5b" --methods speculative --gammas 3,4,5,6,stop,tree '
    "--prompts-per-category 2 --max-new-tokens 128 --dtype bfloat16 --quantization none --draft-quantization none "
    "--out benchmarks/trees-bf16.csv --markdown"
)
# the chapter shows it as a change to the bf16 command
TREE_BENCH_INT8 = "--draft-quantization int8 --out benchmarks/trees-int8.csv"
KERNELS = (
    "python benchmarks/weight_kernels.py --llama-bench ~/.cache/specdec/llama.cpp-11434.0.0/build/bin/llama-bench "
    "--out guide/measurements/avx512-bf16/kernels.csv"
)
LLAMA_CPP = (
    "python benchmarks/llama_cpp.py --specdec plain:bfloat16:none plain:float32:int8 plain:bfloat16:int4 "
    "speculative:float32:int8:int4 "
    "speculative:float32:int8:int4:tree speculative:bfloat16:int4:int4 --out benchmarks/llama-cpp.csv"
)

# Spec-Bench: one revision of its leaderboard, read from the one table in the code (`specdec.bench.spec_bench`); every
# Spec-Bench number of every chapter is built from it below, so two chapters cannot quote two values for one row.
from specdec.bench.spec_bench import A100_VICUNA_7B, EAGLE3_VICUNA_13B  # noqa: E402
from specdec.bench.spec_bench import LEADERBOARD as SPEC_BENCH  # noqa: E402


def spec_bench(row: str, what: str = "overall", category: str | None = None) -> str:
    """A number of the cited revision's A100 table as a chapter writes it: '2.10x' (overall or a category's speedup) or
    '3.58' (mean accepted tokens per step). `row` is the leaderboard's name ('EAGLE-3' is the Vicuna-13B row).

    >>> spec_bench("PLD", category="summarization"), spec_bench("PLD", "tokens")
    ('2.66x', '1.75')
    """
    published = EAGLE3_VICUNA_13B if row == "EAGLE-3" else A100_VICUNA_7B[row]
    if what == "tokens":
        return f"{published.mean_accepted:.2f}"
    return f"{published.speedup[category] if category else published.overall:.2f}x"


def spec_bench_row(label: str, row: str, *extra: str) -> str:
    """A table row of the chapters: '| label | 2.10x | 3.58 |' (and any extra cells)."""
    return "| " + " | ".join([label, spec_bench(row), spec_bench(row, "tokens"), *extra]) + " |"


CHEN = "https://arxiv.org/abs/2302.01318"
PROMPT_LOOKUP = "https://github.com/apoorvumang/prompt-lookup-decoding"
SPECINFER = "https://arxiv.org/abs/2305.09781"
MEDUSA = "https://arxiv.org/abs/2401.10774"
EAGLE, EAGLE3 = "https://arxiv.org/abs/2401.15077", "https://arxiv.org/abs/2503.01840"
LOOKAHEAD = "https://arxiv.org/abs/2402.02057"
DRAFT_AND_VERIFY, LAYERSKIP = "https://arxiv.org/abs/2309.08168", "https://arxiv.org/abs/2404.16710"
SMARTSPEC = "https://arxiv.org/abs/2406.14066"
HETEROGENEOUS = "https://arxiv.org/abs/2502.05202"

NUMBERS += [
    Reported(
        METHODS,
        f"The same method can give {spec_bench('PLD', category='summarization')} on one task and "
        f"{spec_bench('PLD', category='translation')} on another",
        SPEC_BENCH,
    ),
    Reported(
        METHODS, "a 2X-3X acceleration compared to the standard T5X implementation, with identical outputs", LEVIATHAN
    ),
    Reported(METHODS, "a 2-2.5x decoding speedup in a distributed setup", CHEN),
    *[
        Reported(METHODS, spec_bench_row(label, row), SPEC_BENCH)
        for label, row in (
            ("EAGLE-2", "EAGLE-2"),
            ("Token Recycling", "Recycling"),
            ("EAGLE", "EAGLE"),
            ("Hydra", "Hydra"),
            ("Medusa", "Medusa"),
            ("prompt lookup (PLD)", "PLD"),
            ("small draft model (SpS)", "SpS"),
            ("REST", "REST"),
            ("lookahead", "Lookahead"),
        )
    ],
    Reported(METHODS, f"SAM-Decoding built on EAGLE-2 ({spec_bench('SAMD[EAGLE2]')})", SPEC_BENCH),
    Reported(METHODS, f"({spec_bench('SpS', 'tokens')} against {spec_bench('PLD', 'tokens')})", SPEC_BENCH),
    Reported(METHODS, 'Saxena: "2x-4x" on input-grounded tasks', PROMPT_LOOKUP),
    Reported(
        METHODS,
        f"{spec_bench('PLD', category='summarization')} on summarization but "
        f"{spec_bench('PLD', category='translation')} "
        "on translation",
        SPEC_BENCH,
    ),
    Reported(METHODS, "1.5-2.8x for distributed LLM inference and 2.6-3.5x for offloading-based inference", SPECINFER),
    Reported(
        METHODS,
        '2.18x for Medusa-1 and 2.83x for Medusa-2 (the paper\'s abstract: "over 2.2x" and "2.3-3.6x" across models)',
        MEDUSA,
    ),
    Reported(METHODS, f"Spec-Bench's A100 leaderboard: {spec_bench('Medusa')}.", SPEC_BENCH),
    Reported(METHODS, "a latency speedup of 2.7x-3.5x for LLaMA2-Chat 70B (abstract)", EAGLE),
    Reported(METHODS, "LLaMA2-Chat 7B decodes at 160.4 tokens/s on a single RTX 3090", EAGLE),
    Reported(
        METHODS,
        f"Spec-Bench's A100 leaderboard: {spec_bench('EAGLE')} for Vicuna-7B, and {spec_bench('EAGLE-2')} for EAGLE-2",
        SPEC_BENCH,
    ),
    Reported(
        METHODS,
        "a speedup of up to 6.5x, about 1.4x over EAGLE-2, and a 1.38x throughput improvement at batch size 64",
        EAGLE3,
    ),
    Reported(METHODS, "Up to 1.8x on MT-bench, and 4x with strong scaling on multiple GPUs", LOOKAHEAD),
    Reported(METHODS, f"Spec-Bench's A100 leaderboard: {spec_bench('Lookahead')}.", SPEC_BENCH),
    Reported(METHODS, "up to 1.99x on LLaMA-2 and its fine-tuned variants", DRAFT_AND_VERIFY),
    Reported(
        METHODS,
        "up to 2.16x on CNN/DM summarization, 1.82x on coding and 2.0x on the TOPv2 semantic parsing task",
        LAYERSKIP,
    ),
    Reported(METHODS, "it reduces average request latency by up to 3.2x", SMARTSPEC),
    Reported(METHODS, "Up to 2.8x over autoregressive decoding", HETEROGENEOUS),
    Reported(METHODS, f"Spec-Bench measured {spec_bench('PLD')} overall", SPEC_BENCH),
    Reported(METHODS, f"{spec_bench('PLD', 'tokens')} accepted tokens per step for prompt lookup", SPEC_BENCH),
    Computed(METHODS, r"$\alpha = <<.1f>>$ at $\gamma = <<d>>$, what speedup", lambda: (0.6, 4)),
    Computed(
        METHODS,
        r"With $c = 0$ the speedup equals the tokens per pass: $(1 - <<.1f>>^{<<d>>}) / (1 - <<.1f>>) = <<.2f>>$",
        lambda: (0.6, 5, 0.6, walltime_speedup(0.6, 4, 0.0)),
    ),
    Computed(METHODS, "far below <<.2f>>", lambda: expected_tokens_per_pass(0.6, 4)),
    Computed(METHODS, r"$\alpha = <<.1f>>$ and $\gamma = <<d>>$. Compute the speedup", lambda: (0.7, 4)),
    Computed(
        METHODS,
        r"The tokens per pass are $(1 - <<.1f>>^{<<d>>}) / (1 - <<.1f>>) = <<.2f>>$, so the speedup is $<<.2f>> / v$: "
        r"<<.2f>> for $v = 1$, <<.2f>> for $v = 2$ and <<.2f>> for $v = 3$. Speculation hurts once $v$ exceeds the "
        r"tokens "
        r"per pass, here above <<.2f>>.",
        lambda: (
            0.7,
            5,
            0.7,
            expected_tokens_per_pass(0.7, 4),
            expected_tokens_per_pass(0.7, 4),
            *(walltime_speedup(0.7, 4, 0.0, verify_cost=v) for v in (1.0, 2.0, 3.0)),
            expected_tokens_per_pass(0.7, 4),
        ),
    ),
]


# --- 04 to 09, split from the old chapter 4 (issue 51): trees (04), other tokenizers (06), kernels (07), the stop rule
# (04) -----

TREES, FREE, VOCABULARY = "04-trees.md", "05-model-free.md", "06-own-vocabulary.md"
KERNELS_CHAPTER, RUNTIMES, BATCHES = "07-kernels.md", "08-runtimes.md", "09-batches.md"
TREE_P = (0.60, 0.30, 0.10)  # the tree bugs' table and chapter 4, exercise 1: a target ...
TREE_Q = (0.10, 0.20, 0.70)  # ... and a draft that loves C


def top_k_tested_as_drawn(p, q, guesses: int) -> np.ndarray:
    """EAGLE-2's tree ported to sampling as it is: a node's children are q's `guesses` most likely tokens (no draw at
    all), but the rule tests them as draws without replacement from q. Exactly what one node emits, by enumeration.

    The guesses are fixed, so the only randomness is the rule's: keep x with min(1, r(x) / s(x)), else move r to
    norm(max(0, r - s)) and s to s without x; after the last rejection emit a sample of r.
    """
    r, s = np.asarray(p, dtype=np.float64), np.asarray(q, dtype=np.float64)
    output, reach = np.zeros_like(r), 1.0
    for x in np.argsort(-s, kind="stable")[:guesses]:
        keep = min(1.0, r[x] / s[x]) if s[x] > 0 else float(r[x] > 0)
        output[x] += reach * keep
        reach *= 1.0 - keep
        left = np.maximum(r - s, 0.0)
        r = left / left.sum() if left.sum() > 0 else r
        s = s.copy()
        s[x] = 0.0
        s = s / s.sum() if s.sum() > 0 else s
    return output + reach * r


TREE_BUG_TABLE = [  # (row label, exact output of one node with two guesses)
    ("none (the rule above)", lambda p, q: tree_bugs.node_output(p, q, 2)),
    ("testing every guess against p and q", lambda p, q: tree_bugs.same_test_for_every_guess(p, q, 2)),
    (
        "forgetting the guesses were drawn without replacement",
        lambda p, q: tree_bugs.forgot_without_replacement(p, q, 2),
    ),
    (
        "removing guesses that were drawn with replacement",
        lambda p, q: tree_bugs.removed_after_drawing_with_replacement(p, q, 2),
    ),
    ("sampling p when every guess failed", lambda p, q: tree_bugs.fallback_from_target(p, q, 2)),
    ("the top-2 tokens tested as if drawn (EAGLE-2's tree, sampled)", lambda p, q: top_k_tested_as_drawn(p, q, 2)),
]
TOLD_Q = (0.90, 0.50)  # the cross-tokenizer bug: the draft's own probability of its token, told as q(x)
CROSS_BUG_TABLE = [  # (row label, exact output of one position for CROSS_P and the proposal x)
    ("none (a point mass for x)", lambda: bugs.correct_rule(CROSS_P, CROSS_POINT_MASS)),
    *[
        (
            f"the draft's own probability, {told:.2f}, as q(x)",
            lambda told=told: bugs.output_distribution(CROSS_P, (told, 0.0, 0.0), CROSS_POINT_MASS),
        )
        for told in TOLD_Q
    ],
    ("resample from p after a rejection", lambda: bugs.resample_from_target(CROSS_P, CROSS_POINT_MASS)),
]


STOP_C, STOP_S = 0.2, 0.05  # chapter 4, exercise 3: a fresh ConfidenceStop's costs ...
# ... and two confidences (a fresh rule's chance of acceptance is their square root)
STOP_SURE, STOP_UNSURE = 0.81, 0.25


def stop_by_hand(confidence: float) -> tuple[float, float, float, float, float, float]:
    """Exercise 5's arithmetic for two drafted tokens of equal confidence: (a, P_2, E_2, T_2, gain side, rate side).

    Checked against `ConfidenceStop.worth_another` itself, so the exercise and the engine cannot disagree.
    """
    rule = ConfidenceStop(c=STOP_C, verify_slope=STOP_S)
    a = rule.acceptance(confidence)
    all_accepted, expected, cost = a * a, 1 + a + a * a, 2 * STOP_C + 1 + 2 * STOP_S
    gain, rate = all_accepted * a * cost, expected * (STOP_C + STOP_S)
    assert rule.worth_another([confidence, confidence]) == (gain > rate)
    return a, all_accepted, expected, cost, gain, rate


def break_even_alpha(round_cost: float, gamma: int) -> float:
    """The alpha at which a round of `gamma` drafts makes as many tokens as it costs target steps (bisection)."""
    low, high = 0.0, 1.0
    for _ in range(60):
        middle = (low + high) / 2
        low, high = (middle, high) if expected_tokens_per_pass(middle, gamma) < round_cost else (low, middle)
    return (low + high) / 2


def round_cost(kernels: dict, target: str, draft: str, gamma: int = 5) -> float:
    """gamma c + v(gamma) in target steps, from the kernel measurements (v measured at gamma = 5)."""
    return gamma * kernels[f"c_{target}_{draft}"] + kernels[f"{target}_v5"]


NUMBERS += [
    Computed(
        TREES,
        r"one guess is accepted with probability $\alpha = <<.2f>>$; two guesses drawn without replacement: <<.2f>>.",
        lambda: (multi_candidate_acceptance(TOY_P, TOY_Q, 1), multi_candidate_acceptance(TOY_P, TOY_Q, 2)),
    ),
    Measured(
        TREES,
        "The tree made <<.2f>> tokens per target pass against <<.2f>> for the best fixed chain (gamma <<d>>), and ran "
        "<<.2f>>x faster than the target alone against <<.2f>>x: <<.2f>>x the best chain (the median of the per-prompt "
        "ratios: <<.2f>>x). It drafted <<.1f>> nodes per round",
        TREE_BENCH_BF16,
        "avx512-bf16/trees-bf16.csv",
        lambda saved: (
            lambda t: (
                t["tree_tpp"],
                t["chain_tpp"],
                t["gamma"],
                t["tree"],
                t["chain"],
                t["ratio"],
                t["paired"],
                t["nodes"],
            )
        )(tree_against_chain(saved)),
    ),
    Measured(
        TREES,
        "On translation, where the draft agrees least, the tree gave <<.2f>>x against the chain's <<.2f>>x",
        TREE_BENCH_BF16,
        "avx512-bf16/trees-bf16.csv",
        lambda saved: (lambda t: (t["translation_tree"], t["translation_chain"]))(tree_against_chain(saved)),
    ),
    Measured(
        TREES,
        "(c is about <<.2f>> here: a bfloat16 draft step over a bfloat16 target step",
        TREE_BENCH_BF16,
        "avx512-bf16/trees-bf16.csv",
        lambda saved: tree_against_chain(saved)["c"],
    ),
    Measured(
        TREES,
        "a draft pass is cheaper (c about <<.2f>>), and the tree ran <<.2f>>x faster than the target alone against "
        "<<.2f>>x for the best fixed chain (gamma <<d>>): <<.2f>>x. It still lost on code (<<.2f>>x against the stop "
        "rule's "
        "<<.2f>>x)",
        TREE_BENCH_INT8,
        "avx512-bf16/trees-int8.csv",
        lambda saved: (
            lambda t: (t["c"], t["tree"], t["chain"], t["gamma"], t["ratio"], t["code_tree"], t["code_stop"])
        )(tree_against_chain(saved)),
    ),
    # same algorithm, other kernels (issue 10)
    *[
        Measured(
            KERNELS_CHAPTER,
            f"| {label} | <<.0f>> ms | <<.0f>> ms | <<.2f>> | <<.2f>> |",
            KERNELS,
            "avx512-bf16/kernels.csv",
            lambda saved, key=key: (
                lambda k: (k[f"{key}_step"], k[f"{key}_draft_step"], k[f"{key}_v5"], k[f"{key}_v17"])
            )(kernel_costs(saved)),
        )
        for label, key in (
            ("specdec bfloat16", "bfloat16"),
            ("specdec int8 (`Int8Linear`)", "float32 int8"),
            ("specdec int4 (`Int4Linear`, bfloat16)", "bfloat16 int4"),
            ("PyTorch's dynamic int8 (one scale per pass)", "float32 torch dynamic int8"),
            ("llama.cpp Q4_K_M", "Q4_K_M"),
        )
    ],
    Measured(
        KERNELS_CHAPTER,
        "llama.cpp's step is the fastest (<<.0f>> ms for the 1.5B), but its pass over 6 tokens costs <<.2f>> steps and "
        "its 0.5B draft costs c = <<.2f>>: with alpha = <<.1f>> and gamma = <<d>>, chapter 1's formula predicts "
        "<<.2f>>x.",
        KERNELS,
        "avx512-bf16/kernels.csv",
        lambda saved: (
            lambda k: (
                k["Q4_K_M_step"],
                k["Q4_K_M_v5"],
                k["c_Q4_K_M_Q4_K_M"],
                0.9,
                5,
                walltime_speedup(0.9, 5, k["c_Q4_K_M_Q4_K_M"], k["Q4_K_M_v5"]),
            )
        )(kernel_costs(saved)),
    ),
    Measured(
        KERNELS_CHAPTER,
        "specdec's int8 target keeps a pass over 6 tokens at <<.2f>> steps, and the int4 draft costs c = <<.2f>>: the "
        "same "
        "formula predicts <<.2f>>x.",
        KERNELS,
        "avx512-bf16/kernels.csv",
        lambda saved: (
            lambda k: (
                k["float32 int8_v5"],
                k["c_float32 int8_bfloat16 int4"],
                walltime_speedup(0.9, 5, k["c_float32 int8_bfloat16 int4"], k["float32 int8_v5"]),
            )
        )(kernel_costs(saved)),
    ),
    Measured(
        KERNELS_CHAPTER,
        "unpacks the weights again for every token of a pass (v(5) = <<.2f>>)",
        KERNELS,
        "avx512-bf16/kernels.csv",
        lambda saved: kernel_costs(saved)["bfloat16 int4_v5"],
    ),
    Measured(
        KERNELS_CHAPTER,
        "llama.cpp's speculative tool ran at <<.1f>> tokens/s against <<.1f>> for its plain decoding (both its Q4_K_M "
        "files); "
        "specdec's default (an int8 target, an int4 draft) ran at <<.1f>> tokens/s, <<.2f>>x its own int8 target alone "
        "(<<.1f>>)",
        LLAMA_CPP,
        "avx512-bf16/llama-cpp.csv",
        lambda saved: (
            lambda v: (
                v["speculative Q4_K_M n-max 16"],
                v["plain Q4_K_M"],
                v["speculative float32 int8 / int4"],
                v["default_vs_own_plain"],
                v["plain float32 int8"],
            )
        )(side_by_side(saved)),
    ),
    Measured(
        KERNELS_CHAPTER,
        "our default made <<.2f>> of llama.cpp's plain rate (<<.1f>> over <<.1f>>, the medians; the median of the "
        "per-prompt "
        "ratios is <<.2f>>)",
        LLAMA_CPP,
        "avx512-bf16/llama-cpp.csv",
        lambda saved: (
            lambda v: (
                v["speculative float32 int8 / int4"] / v["plain Q4_K_M"],
                v["speculative float32 int8 / int4"],
                v["plain Q4_K_M"],
                v["default_vs_plain"],
            )
        )(side_by_side(saved)),
    ),
    *[
        Measured(
            VOCABULARY,
            f"| {label} | {tokenizer} | <<.2f>> | <<.2f>> | <<.2f>> | <<.2f>>x | <<.2f>>x |",
            CROSS_BENCH,
            "avx512-bf16/cross-tokenizer.csv",
            lambda saved, d=draft: (
                lambda m: (m[f"{d}_c"], m[f"{d}_alpha"], m[f"{d}_tpp"], m[f"{d}_code"], m[f"{d}_speedup"])
            )(drafts_for_one_target(saved)),
        )
        for label, tokenizer, draft in (
            ("Qwen2.5-Coder-0.5B", "shared", "qwen2.5-coder-0.5b"),
            ("SmolLM2-135M", "its own", "smollm2-135m"),
            ("Gemma 3 270M", "its own", "gemma3-270m"),
        )
    ],
    Measured(
        VOCABULARY,
        "given the same SmolLM2 draft, ran at <<.2f>>x the target alone over all prompts",
        CROSS_BENCH,
        "avx512-bf16/cross-tokenizer.csv",
        lambda saved: drafts_for_one_target(saved)["smollm2-135m_hf"],
    ),
    Computed(VOCABULARY, r"Take the target's $p = (<<s>>)$ over $x, y, z$", lambda: vector(CROSS_P)),
    Computed(VOCABULARY, r"a same-tokenizer draft with $q = (<<s>>)$", lambda: vector(CROSS_Q)),
    Computed(
        VOCABULARY,
        r"keeps $x$ with probability $\min(1, p(x)) = <<.2f>>$",
        lambda: acceptance_rate(CROSS_P, CROSS_POINT_MASS),
    ),
    Computed(
        VOCABULARY, r"The output is $(<<s>>) = p$: exact", lambda: vector(bugs.correct_rule(CROSS_P, CROSS_POINT_MASS))
    ),
    Computed(
        VOCABULARY,
        r"kept with probability $\alpha = \sum \min(p, q) = <<.2f>>$",
        lambda: acceptance_rate(CROSS_P, CROSS_Q),
    ),
    # the classic tree bugs, chapter 4, exercise 1
    Computed(
        TREES,
        "a target p = (<<s>>) and a draft that loves C, q = (<<s>>)",
        lambda: (vector(TREE_P, 3), vector(TREE_Q, 3)),
    ),
    *[
        Computed(
            TREES,
            "| <<s>> | (<<s>>) | <<.3f>> |",
            (
                lambda label=label, bug=bug: (
                    label,
                    vector(bug(TREE_P, TREE_Q), 3),
                    bugs.largest_error(bug(TREE_P, TREE_Q), TREE_P),
                )
            ),
        )
        for label, bug in TREE_BUG_TABLE
    ],
    Computed(
        TREES,
        "Take the table's target p = (<<s>>) and the draft that loves C, q = (<<s>>)",
        lambda: (vector(TREE_P, 3), vector(TREE_Q, 3)),
    ),
    Computed(
        TREES, r"One guess: $\alpha = \sum \min(p, q) = <<.2f>>$", lambda: multi_candidate_acceptance(TREE_P, TREE_Q, 1)
    ),
    Computed(
        TREES,
        r"two guesses are kept with probability $<<.2f>> + <<.2f>> \cdot \frac{1}{2} = <<.2f>>$",
        lambda: (
            multi_candidate_acceptance(TREE_P, TREE_Q, 1),
            1 - multi_candidate_acceptance(TREE_P, TREE_Q, 1),
            multi_candidate_acceptance(TREE_P, TREE_Q, 2),
        ),
    ),
    Computed(
        TREES, "three guesses are kept with probability <<.2f>>", lambda: multi_candidate_acceptance(TREE_P, TREE_Q, 3)
    ),
    # the cross-tokenizer bugs
    Computed(
        VOCABULARY, "with the target's p = (<<s>>) over $x, y, z$ and the proposal $x$", lambda: vector(CROSS_P, 3)
    ),
    *[
        Computed(
            VOCABULARY,
            "| <<s>> | (<<s>>) | <<.3f>> |",
            (lambda label=label, output=output: (label, vector(output(), 3), bugs.largest_error(output(), CROSS_P))),
        )
        for label, output in CROSS_BUG_TABLE
    ],
    # chapter 7, exercise 1: the kernels' round cost
    Measured(
        KERNELS_CHAPTER,
        "With llama.cpp's costs the round costs <<.2f>> steps",
        KERNELS,
        "avx512-bf16/kernels.csv",
        lambda saved: round_cost(kernel_costs(saved), "Q4_K_M", "Q4_K_M"),
    ),
    Measured(
        KERNELS_CHAPTER,
        r"With specdec's int8 target and int4 draft it costs <<.2f>> steps, reached at $\alpha = <<.2f>>$",
        KERNELS,
        "avx512-bf16/kernels.csv",
        lambda saved: (lambda cost: (cost, break_even_alpha(cost, 5)))(
            round_cost(kernel_costs(saved), "float32 int8", "bfloat16 int4")
        ),
    ),
    # drafts that know when to stop
    Computed(
        TREES,
        "the output is (<<s>>) instead of (<<s>>)",
        lambda: (vector(bugs.stop_where_target_disagrees(TOY_P, TOY_Q), 3), vector(TOY_P)),
    ),
    Measured(
        TREES,
        "with an int8 draft (PyTorch's dynamic int8) the stop rule ran <<.2f>>x faster than the target alone against "
        "<<.2f>>x for the best fixed "
        "chain (gamma <<d>>), drafting <<.1f>> tokens per round, and reached <<.2f>> of the oracle bound",
        TREE_BENCH_INT8,
        "avx512-bf16/trees-int8.csv",
        lambda saved: (lambda t: (t["stop"], t["chain"], t["gamma"], t["stop_gamma"], t["stop_oracle"]))(
            tree_against_chain(saved)
        ),
    ),
    Measured(
        TREES,
        "against <<.2f>> for that chain",
        TREE_BENCH_INT8,
        "avx512-bf16/trees-int8.csv",
        lambda saved: tree_against_chain(saved)["chain_oracle"],
    ),
    Measured(
        TREES,
        "With a bfloat16 draft it ran at <<.2f>>x against <<.2f>>x",
        TREE_BENCH_BF16,
        "avx512-bf16/trees-bf16.csv",
        lambda saved: (lambda t: (t["stop"], t["chain"]))(tree_against_chain(saved)),
    ),
    # chapter 4, exercise 3: the stop rule by hand
    Computed(TREES, r"costs $c = <<.1f>>$ and $\beta = <<.2f>>$", lambda: (STOP_C, STOP_S)),
    Computed(TREES, r"two tokens with confidence <<.2f>> each", lambda: STOP_SURE),
    Computed(
        TREES,
        r"The two tokens are worth $a_1 = a_2 = <<.1f>>$, $P_2 = <<.2f>>$, $E_2 = <<.2f>>$ and $T_2 = <<.1f>>$. The "
        r"gain side is "
        r"$P_2 a_3 T_2 = <<.2f>> \cdot <<.1f>> \cdot <<.1f>> = <<.2f>>$, the rate side $E_2 (c + \beta) = <<.2f>> "
        r"\cdot <<.2f>> = <<.2f>>$",
        lambda: (lambda a, p2, e2, t2, gain, rate: (a, p2, e2, t2, p2, a, t2, gain, e2, STOP_C + STOP_S, rate))(
            *stop_by_hand(STOP_SURE)
        ),
    ),
    Computed(
        TREES,
        r"With confidence <<.2f>> each, $a = <<.1f>>$: the gain side is <<.4f>> and the rate side <<.4f>>",
        lambda: (lambda a, p2, e2, t2, gain, rate: (STOP_UNSURE, a, gain, rate))(*stop_by_hand(STOP_UNSURE)),
    ),
]


# --- 05: drafting without a draft model (issue 26): fixed candidates, Token Recycling, suffix, self-speculation ----

from specdec.drafting import suffix_tree, token_recycling  # noqa: E402
from specdec.drafting.suffix import SuffixDrafter  # noqa: E402
from specdec.bugs import candidates as candidate_bugs  # noqa: E402

LOOKUP_COUNTS = TOY_Q  # the shares a lookup or a table gives the candidate A, told to the rule as if they were q
CANDIDATE_BUG_TABLE = [  # (row label, exact output of one position for TOY_P and the fixed candidate A)
    ("none (the rule above)", lambda: candidate_bugs.candidates_output(TOY_P, [A])),
    ("a rejected A is left in r", lambda: candidate_bugs.kept_in_residual(TOY_P, [A])),
    (
        f"A tested as if drawn from $q$ = ({vector(LOOKUP_COUNTS)}), a lookup's counts",
        lambda: candidate_bugs.told_it_was_drawn(TOY_P, LOOKUP_COUNTS, A),
    ),
]
QWEN_VOCABULARY = 151_936
RECYCLING_P = (0.50, 0.30, 0.20)  # chapter 5, exercise 1: the target after "b", over ("d", "a", "e")
# chapter 5, exercise 3: "a b c a b c a b d a b" with a=1, b=2, c=3, d=4
SUFFIX_TEXT = [1, 2, 3, 1, 2, 3, 1, 2, 4, 1, 2]
# chapter 5, exercise 4: the output layer's share of a step, the layers kept, gamma
SKIP_HEAD, SKIP_KEPT, SKIP_GAMMA = 0.15, 0.5, 3


def recycling_by_hand() -> tuple[float, ...]:
    """Exercise 6: the first candidate's chance, what is left after it fails, the second's chance, and either's.

    Checked against the exact rule: the chance the position emits "d" or "a" with both as candidates.
    """
    first = RECYCLING_P[0]
    left = np.array([0.0, *RECYCLING_P[1:]]) / (1 - first)  # p without "d", renormalized
    either = first + (1 - first) * left[1]
    assert abs(either - candidate_bugs.candidates_output(RECYCLING_P, [0, 1])[:2].sum()) < 1e-12
    return first, vector(left), left[1], first, 1 - first, left[1], either


def recycling_parents() -> str:
    """The default template as the engine drafts it when the
    table fills every node: `DraftTree.parents`, -1 the root."""
    import torch

    from specdec.engine.contract import DraftRequest

    drafter, vocabulary = token_recycling.TokenRecyclingDrafter(), 64
    # [V, k], all filled
    drafter.table = (torch.arange(vocabulary)[:, None] * drafter.k + torch.arange(drafter.k)) % vocabulary
    tree = drafter.draft({0: DraftRequest(torch.tensor([3]), token_recycling.DEFAULT_BUDGET, None, None)})[0]
    assert len(tree.parents) == len(drafter.template), "the toy table left a template node empty"
    return str(tree.parents)


def suffix_by_hand() -> tuple[float, ...]:
    """Exercise 8, computed by `SuffixTree` itself: the speculation from "a b" (2 deep) and from "b" (1 deep)."""
    index = suffix_tree.SuffixTree(24)
    index.add(SUFFIX_TEXT)
    matches = dict(index.matches(SUFFIX_TEXT))  # length -> node
    min_chance = SuffixDrafter().min_chance
    long = index.continuations(matches[2], 2, 24, min_chance)
    short = index.continuations(matches[1], 1, 24, min_chance)
    assert sorted(matches) == [1, 2] and long.tokens == (3, 1, 4, 1) and long.score > short.score
    return (min_chance, *long.chances, long.score, short.score)


NUMBERS += [
    *[
        Computed(
            FREE,
            "| <<s>> | (<<s>>) | <<.3f>> |",
            (lambda label=label, output=output: (label, vector(output(), 3), bugs.largest_error(output(), TOY_P))),
        )
        for label, output in CANDIDATE_BUG_TABLE
    ],
    Computed(
        FREE,
        "($k = 8$; <<.1f>> MB of 64-bit ids for Qwen2.5's 151,936 tokens)",
        lambda: QWEN_VOCABULARY * token_recycling.TokenRecyclingDrafter().k * 8 / 1e6,
    ),
    Computed(
        FREE,
        r"keeps the template's <<d>> nodes of highest prior chance (the $i$-th candidate counts $<<.1f>> \cdot "
        r"<<.1f>>^i$",
        lambda: (token_recycling.DEFAULT_BUDGET, token_recycling.PRIOR_TOP, token_recycling.PRIOR_DECAY),
    ),
    Computed(FREE, "node filled, the parents are <<s>>, -1 the root", recycling_parents),
    Computed(FREE, "(shares below `min_chance` = <<.1f>> are never proposed)", lambda: SuffixDrafter().min_chance),
    Computed(
        FREE,
        "computed with the toy, counts of (<<s>>) make the output (<<s>>) instead of $p$",
        lambda: (vector(LOOKUP_COUNTS), vector(candidate_bugs.told_it_was_drawn(TOY_P, LOOKUP_COUNTS, A))),
    ),
    Computed(
        FREE,
        "the output is the skipped model's distribution: with the toy, (<<s>>) instead of (<<s>>)",
        lambda: (vector(candidate_bugs.q_is_p(TOY_P, TOY_Q)), vector(TOY_P)),
    ),
    # chapter 5, exercises 1, 3 and 4
    Computed(
        FREE, 'the target\'s distribution after "b" is p = (<<s>>) over ("d", "a", "e")', lambda: vector(RECYCLING_P)
    ),
    Computed(
        FREE,
        r'"d" is kept with probability $p(d) = <<.2f>>$. After a rejection what is left is $p$ without "d", '
        r'$(<<s>>)$, so "a" is kept with probability <<.2f>>: one of the two is kept with '
        r"$<<.2f>> + <<.2f>> \cdot <<.2f>> = <<.2f>>$",
        recycling_by_hand,
    ),
    Computed(FREE, "both above `min_chance` <<.1f>>. After", lambda: suffix_by_hand()[0]),
    Computed(
        FREE,
        "with chances <<.2f>>, <<.2f>>, <<.2f>> and <<.2f>>: an expected <<.2f>> tokens",
        lambda: suffix_by_hand()[1:6],
    ),
    Computed(FREE, "(c or d, an expected <<.2f>>)", lambda: suffix_by_hand()[6]),
    Computed(
        FREE,
        r"whose output layer is <<.0f>>% of the bytes a step reads, and take the step's cost as the bytes it reads. "
        r"What is "
        r"$c$? With a free verification ($v = 1$) and $\gamma = <<d>>$",
        lambda: (100 * SKIP_HEAD, SKIP_GAMMA),
    ),
    Computed(
        FREE,
        r"half of the <<.0f>>% in layers plus the whole output layer: $c = <<.1f>> \cdot <<.2f>> + <<.2f>> = <<.3f>>$. "
        r"A round "
        r"costs $<<d>> c + 1 = <<.3f>>$ steps and makes $1 + \alpha + \alpha^2 + \alpha^3$ tokens; these are equal at "
        r"$\alpha = <<.2f>>$",
        lambda: (
            lambda c: (
                100 * (1 - SKIP_HEAD),
                SKIP_KEPT,
                1 - SKIP_HEAD,
                SKIP_HEAD,
                c,
                SKIP_GAMMA,
                SKIP_GAMMA * c + 1,
                break_even_alpha(SKIP_GAMMA * c + 1, SKIP_GAMMA),
            )
        )(SKIP_KEPT * (1 - SKIP_HEAD) + SKIP_HEAD),
    ),
]


# --- 05: Spec-Bench on this machine (issue 26) -------------------------------------------------------------

from lesson_entries import families  # noqa: E402

FAMILIES_BENCH = (
    "specdec bench --methods all --prompts-per-category 2 --max-new-tokens 128 --out "
    "benchmarks/families-int8.csv --markdown"
)
KERNELS_HERE = "python benchmarks/weight_kernels.py --out guide/measurements/avx2/kernels.csv"
FAMILY_ROWS = (
    ("suffix decoding", "suffix", "REST"),
    ("prompt lookup", "prompt-lookup", "PLD"),
    ("Token Recycling", "recycling", "Recycling"),
    ("draft model (0.5B)", "speculative", "SpS"),
    ("lookahead", "lookahead", "Lookahead"),
)


def _family(saved: str, *keys: str) -> tuple:
    values = families(saved)
    return tuple(values[key] for key in keys)


NUMBERS += [
    Measured(
        FREE,
        "Medians over the <<d>> prompts",
        FAMILIES_BENCH,
        "avx2/families-int8.csv",
        lambda saved: _family(saved, "prompts")[0],
    ),
    *[
        Measured(
            FREE,
            f"| {label} | <<.2f>>x | <<.2f>> | <<.2f>> | <<.2f>> | {row} | <<.2f>>x | <<.2f>> |",
            FAMILIES_BENCH,
            "avx2/families-int8.csv",
            lambda saved, m=method: _family(
                saved,
                f"{m}_speedup",
                f"{m}_tokens_per_target_pass",
                f"{m}_c",
                f"{m}_v",
                f"{m}_spec_bench_speedup",
                f"{m}_spec_bench_tokens_per_step",
            ),
        )
        for label, method, row in FAMILY_ROWS
    ],
    Measured(
        FREE,
        "| layer skipping | <<.2f>>x | <<.2f>> | <<.2f>> | <<.2f>> | (none) | | |",
        FAMILIES_BENCH,
        "avx2/families-int8.csv",
        lambda saved: _family(
            saved, "layer-skip_speedup", "layer-skip_tokens_per_target_pass", "layer-skip_c", "layer-skip_v"
        ),
    ),
    Measured(
        FREE,
        "summarization, <<.2f>>x and <<.2f>>x. The draft model gains only on code (<<.2f>>x)",
        FAMILIES_BENCH,
        "avx2/families-int8.csv",
        lambda saved: _family(saved, "suffix_summarization", "prompt-lookup_summarization", "speculative_code"),
    ),
    Measured(
        FREE,
        "Token Recycling stays near even everywhere (at most <<.2f>>x)",
        FAMILIES_BENCH,
        "avx2/families-int8.csv",
        lambda saved: max(
            _family(
                saved,
                *(f"recycling_{c}" for c in ("chat", "code", "math", "qa", "rag", "summarization", "translation")),
            )
        ),
    ),
    Measured(
        FREE,
        "Token Recycling made <<.2f>> tokens per pass at $v = <<.2f>>$: <<.2f>>x by the formula, <<.2f>>x measured",
        FAMILIES_BENCH,
        "avx2/families-int8.csv",
        lambda saved: (lambda tpp, v, s: (tpp, v, tpp / v, s))(
            *_family(saved, "recycling_tokens_per_target_pass", "recycling_v", "recycling_speedup")
        ),
    ),
    Reported(FREE, f"so its {spec_bench('Recycling', 'tokens')} tokens per step become a large gain", SPEC_BENCH),
    Measured(
        FREE,
        "(<<.2f>> tokens per pass), but each of its steps costs $c = <<.2f>>$",
        FAMILIES_BENCH,
        "avx2/families-int8.csv",
        lambda saved: _family(saved, "speculative_tokens_per_target_pass", "speculative_c"),
    ),
    Measured(
        FREE,
        "half the layers still cost $c = <<.2f>>$",
        FAMILIES_BENCH,
        "avx2/families-int8.csv",
        lambda saved: _family(saved, "layer-skip_c")[0],
    ),
    Measured(
        FREE,
        "pass over 6 tokens costs <<.2f>> steps, so no family could gain",
        KERNELS_HERE,
        "avx2/kernels.csv",
        lambda saved: kernel_costs(saved)["bfloat16_v5"],
    ),
]

SHARED_INPUT = (
    'python benchmarks/weight_kernels.py --precisions "float32 int8" "float32 int8, layers alone" --rounds 7 '
    "--out guide/measurements/avx2/shared-input-int8.csv"
)


def _shared(saved: str) -> dict[str, float]:
    k = kernel_costs(saved)
    alone, shared = "float32 int8, layers alone", "float32 int8"
    return {
        "alone": k[f"{alone}_step"],
        "alone_draft": k[f"{alone}_draft_step"],
        "alone_pass": k[f"{alone}_step"] * k[f"{alone}_v5"],
        "shared": k[f"{shared}_step"],
        "shared_draft": k[f"{shared}_draft_step"],
        "shared_pass": k[f"{shared}_step"] * k[f"{shared}_v5"],
        "alone_v5": k[f"{alone}_v5"],
        "shared_v5": k[f"{shared}_v5"],
    }


NUMBERS += [
    Measured(
        KERNELS_CHAPTER,
        "| each layer alone | <<.0f>> ms | <<.0f>> ms | <<.0f>> ms |",
        SHARED_INPUT,
        "avx2/shared-input-int8.csv",
        lambda saved: (lambda s: (s["alone"], s["alone_draft"], s["alone_pass"]))(_shared(saved)),
    ),
    Measured(
        KERNELS_CHAPTER,
        "| q, k, v and gate, up in one call each | <<.0f>> ms | <<.0f>> ms | <<.0f>> ms |",
        SHARED_INPUT,
        "avx2/shared-input-int8.csv",
        lambda saved: (lambda s: (s["shared"], s["shared_draft"], s["shared_pass"]))(_shared(saved)),
    ),
    Measured(
        KERNELS_CHAPTER,
        "The step gains more than the pass (<<.2f>>x against <<.2f>>x), so $v(5)$ *rises*, from <<.2f>> to <<.2f>>",
        SHARED_INPUT,
        "avx2/shared-input-int8.csv",
        lambda saved: (
            lambda s: (s["alone"] / s["shared"], s["alone_pass"] / s["shared_pass"], s["alone_v5"], s["shared_v5"])
        )(_shared(saved)),
    ),
]

# ---- chapter 7, W8A8: vLLM's CPU kernel probed on an AVX-512 machine and on this AVX2 one (issue 36)

from lesson_entries import w8a8_probe  # noqa: E402

PROBE_AVX512 = "python benchmarks/w8a8_probe.py --out guide/measurements/avx512-bf16/w8a8-probe.txt"
PROBE_AVX2 = "python benchmarks/w8a8_probe.py --out guide/measurements/avx2/w8a8-probe.txt"
FBGEMM, SGL, ONEDNN = (
    "_C.abi3.so|int8 fbgemm (specdec today)",
    "_C.abi3.so|sgl int8_scaled_mm_with_quant",
    "_C.abi3.so|oneDNN onednn_scaled_mm",
)
AVX2_FBGEMM, AVX2_ONEDNN = "_C_AVX2.abi3.so|int8 fbgemm (specdec today)", "_C_AVX2.abi3.so|oneDNN onednn_scaled_mm"


def _probe_row(saved: str, key: str) -> tuple:
    numbers = w8a8_probe(saved)
    return (
        numbers[f"{key}|ms_m1"],
        numbers[f"{key}|ms_m6"],
        numbers[f"{key}|ms_m18"],
        numbers[f"{key}|v6"],
        "yes" if numbers.get(f"{key}|rows_equal", True) else "no",
    )


NUMBERS += [
    Measured(
        KERNELS_CHAPTER,
        "yet on the AVX-512 CPU below its pass over 6 tokens still costs <<.2f>> one-token passes",
        PROBE_AVX512,
        "avx512-bf16/w8a8-probe.txt",
        lambda saved: w8a8_probe(saved)[f"{FBGEMM}|v6"],
    ),
    *[
        Measured(
            KERNELS_CHAPTER,
            f"| {label} | <<.1f>> ms | <<.1f>> ms | <<.1f>> ms | <<.2f>> | <<>> |",
            PROBE_AVX512,
            "avx512-bf16/w8a8-probe.txt",
            lambda saved, key=key: _probe_row(saved, key),
        )
        for label, key in (
            ("fbgemm int8 (`Int8Linear`, today's default)", FBGEMM),
            ("sgl `int8_scaled_mm_with_quant` (`w8a8`)", SGL),
            ("oneDNN `onednn_scaled_mm`", ONEDNN),
        )
    ],
    Measured(
        KERNELS_CHAPTER,
        "The W8A8 step is <<.2f>>x faster than today's int8 step, and its pass over 6 tokens costs <<.2f>> steps "
        "instead of <<.2f>>.",
        PROBE_AVX512,
        "avx512-bf16/w8a8-probe.txt",
        lambda saved: (lambda n: (n[f"{FBGEMM}|ms_m1"] / n[f"{SGL}|ms_m1"], n[f"{SGL}|v6"], n[f"{FBGEMM}|v6"]))(
            w8a8_probe(saved)
        ),
    ),
    Measured(
        KERNELS_CHAPTER,
        "(error <<.1f>> in a 17-token pass)",
        PROBE_AVX512,
        "avx512-bf16/w8a8-probe.txt",
        lambda saved: w8a8_probe(saved)[f"{ONEDNN}|error_full"],
    ),
    Measured(
        KERNELS_CHAPTER,
        "oneDNN path errs by <<.2f>> of the largest output",
        PROBE_AVX2,
        "avx2/w8a8-probe.txt",
        lambda saved: w8a8_probe(saved)[f"{AVX2_ONEDNN}|error_full"],
    ),
    Measured(
        KERNELS_CHAPTER,
        "fbgemm's int8, at <<.1f>> ms per step and <<.1f>> ms per pass over 6 tokens (<<.2f>> steps; the linear layers "
        "alone",
        PROBE_AVX2,
        "avx2/w8a8-probe.txt",
        lambda saved: (lambda n: (n[f"{AVX2_FBGEMM}|ms_m1"], n[f"{AVX2_FBGEMM}|ms_m6"], n[f"{AVX2_FBGEMM}|v6"]))(
            w8a8_probe(saved)
        ),
    ),
]

# ---- chapter 9, batches: the classic bug computed on a tiny model, the measured gain per batch size, vLLM's server

from lesson_entries import batch_bug_demo, batch_numbers  # noqa: E402

BATCH_BENCH = (
    "specdec bench --batch-sizes 1,2,4,8 --gammas stop,1,3 --max-new-tokens 128 --out "
    "benchmarks/batches-int8.csv --markdown"
)
SERVER_BENCH = "python benchmarks/vllm_serving.py --out benchmarks/vllm-server.csv"


def _batch(saved: str, *keys: str) -> tuple:
    values = batch_numbers(saved)
    return tuple(values[key] for key in keys)


def _plain_batch_of_8(saved: str) -> tuple:
    """A plain pass over the batch of 8 in one-row steps, the rows
    it held on average, and a token's cost in one-row steps."""
    import io

    import pandas as pd

    frame = pd.read_csv(io.StringIO(saved))
    plain = frame[frame["method"] == "plain"].set_index("batch_size")
    step = plain.loc[8, "seconds_per_target_pass"] / plain.loc[1, "seconds_per_target_pass"]
    rows = plain.loc[8, "new_tokens"] / plain.loc[8, "target_passes"]
    return step, rows, int(plain.loc[8, "new_tokens"]), int(plain.loc[8, "target_passes"]), step / rows


def _server_speedups(saved: str) -> tuple:
    import io

    import pandas as pd

    frame = pd.read_csv(io.StringIO(saved))
    rows = frame[(frame["engine"] == "vllm-server") & (frame["method"] == "speculative")]
    levels = rows.groupby("concurrency")["speedup"].median()
    return tuple(levels[level] for level in (1, 4, 16))


NUMBERS += [
    Computed(
        BATCHES,
        "On a tiny random Llama with a noisy copy as the draft, <<d>> prompts of different lengths, gamma 4, <<d>> "
        "tokens "
        "each, greedy: with one length per row all <<d>> rows equal their own plain runs; with one count for the batch "
        "<<d>> of the <<d>> rows differ, <<d>> of their tokens are wrong, and the earliest wrong token is the <<d>>rd",
        lambda: (
            lambda d: (
                (d["rows"], d["tokens"], d["right_rows"], d["bug_rows"], d["rows"], d["bug_tokens"], d["first"])
                if d["same_round"]
                else "the bug already changed a first round: rewrite 'Every row's first round is still right'"
            )
        )(batch_bug_demo()),
    ),
    Measured(
        BATCHES,
        "greedy, <<d>> tokens, the same <<d>> prompts at every batch size, <<s>>:",
        BATCH_BENCH,
        "avx2/batches-int8.csv",
        lambda saved: (
            _batch(saved, "tokens", "prompts")
            + (
                "every row of every batch identical to plain decoding"
                if all(
                    value
                    for key, value in batch_numbers(saved).items()
                    if "_exact_" in key and not key.startswith("plain")
                )
                else "but NOT every row identical to plain decoding",
            )
        ),
    ),
    *[
        Measured(
            BATCHES,
            f"| {b} | <<.1f>> | <<.1f>> | <<.2f>>x | <<.2f>>x | <<.2f>>x | <<.2f>> | <<.2f>> |",
            BATCH_BENCH,
            "avx2/batches-int8.csv",
            lambda saved, b=b: _batch(
                saved,
                f"plain_tok_{b}",
                f"stop_tok_{b}",
                f"stop_gain_{b}",
                f"g1_gain_{b}",
                f"g3_gain_{b}",
                f"stop_c_{b}",
                f"stop_pass_{b}",
            ),
        )
        for b in (1, 2, 4, 8)
    ],
]

NUMBERS += [
    Measured(
        BATCHES,
        "Plain decoding's throughput grows <<.2f>>x from batch 1 to batch 8",
        BATCH_BENCH,
        "avx2/batches-int8.csv",
        lambda saved: _batch(saved, "plain_scaling_8")[0],
    ),
    Measured(
        BATCHES,
        "A plain pass of the batch of 8 costs <<.2f>> one-row steps, and holds fewer than 8 rows on average (<<.1f>>: "
        "<<d>> "
        "tokens in <<d>> passes, since a row that reaches its end leaves the batch), so a token costs <<.2f>> of a "
        "one-row step",
        BATCH_BENCH,
        "avx2/batches-int8.csv",
        _plain_batch_of_8,
    ),
    Measured(
        BATCHES,
        "<<.2f>>x its batch-1 rate at batch 4 and <<.2f>>x at batch 8; with gamma 1, <<.2f>>x at batch 4",
        BATCH_BENCH,
        "avx2/batches-int8.csv",
        lambda saved: _batch(saved, "stop_scaling_4", "stop_scaling_8", "g1_scaling_4"),
    ),
    Measured(
        BATCHES,
        "its $c$ goes from <<.2f>> alone to <<.2f>> at batch 8",
        BATCH_BENCH,
        "avx2/batches-int8.csv",
        lambda saved: _batch(saved, "stop_c_1", "stop_c_8"),
    ),
    Measured(
        BATCHES,
        "drafts costs <<.2f>> plain steps at batch 8 against <<.2f>> alone. So the gain, <<.2f>>x alone",
        BATCH_BENCH,
        "avx2/batches-int8.csv",
        lambda saved: _batch(saved, "stop_pass_8", "stop_pass_1", "stop_gain_1"),
    ),
    Measured(
        BATCHES,
        "(gamma 1: <<.2f>>x at batch 8)",
        BATCH_BENCH,
        "avx2/batches-int8.csv",
        lambda saved: _batch(saved, "g1_gain_8")[0],
    ),
    Measured(
        BATCHES,
        "(<<.2f>> per row alone, <<.2f>> at batch 8)",
        BATCH_BENCH,
        "avx2/batches-int8.csv",
        lambda saved: _batch(saved, "stop_tpp_1", "stop_tpp_8"),
    ),
    Measured(
        BATCHES,
        "made <<.2f>>x alone, <<.2f>>x with 4 requests in flight and <<.2f>>x with 16",
        SERVER_BENCH,
        "avx512-bf16/vllm-server.csv",
        _server_speedups,
    ),
]

# ---- chapter 6, trained draft heads: Medusa, EAGLE, EAGLE-2, EAGLE-3 (the head's size built from its config, on the
# meta device)

from functools import cache  # noqa: E402

from specdec.heads.head import EagleHead, HeadConfig  # noqa: E402
from specdec.heads.training import TrainingSettings  # noqa: E402

QWEN_1_5B = {
    "hidden_size": 1536,
    "intermediate_size": 8960,
    "num_attention_heads": 12,
    "num_key_value_heads": 2,
    "head_dim": 128,
    "vocab_size": QWEN_VOCABULARY,
    "layers": 28,
}  # Qwen2.5-Coder-1.5B's config.json
HEAD_TOY_P = TOY_P  # the classic bug: the toy target over A, B, C ...
HEAD_DRAFT_IDS = (B, C)  # ... a draft vocabulary without A ...
HEAD_Q = (0.50, 0.50)  # ... and the head's q over its two draft ids


@cache
def head_weights(draft_vocab: int = TrainingSettings().draft_vocab) -> dict[str, float]:
    """Millions of weights of an EAGLE-3 head for Qwen2.5-Coder-1.5B and of the target, both built on the meta device.

    A draft step runs the head's decoder layer, its final norm and its output layer (the fusion `fc` runs once a
    round, over the rows the target kept); a target step reads all of the target's weights.
    """
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    sizes = {key: value for key, value in QWEN_1_5B.items() if key != "layers"}
    config = HeadConfig(
        **sizes,
        draft_vocab_size=draft_vocab,
        layers=HeadConfig.default_layers(QWEN_1_5B["layers"]),
        target_layers=QWEN_1_5B["layers"],
    )
    with torch.device("meta"):
        head = EagleHead(config)
        target = Qwen2ForCausalLM(
            Qwen2Config(
                **{k: v for k, v in sizes.items() if k != "head_dim"},
                num_hidden_layers=QWEN_1_5B["layers"],
                tie_word_embeddings=True,
            )
        )

    def millions(module) -> float:
        return sum(parameter.numel() for parameter in module.parameters()) / 1e6

    step = millions(head.midlayer) + millions(head.norm) + millions(head.lm_head)
    return {
        "head": millions(head),
        "fc": millions(head.fc),
        "layer": millions(head.midlayer),
        "output": millions(head.lm_head),
        "target": millions(target),
        "step": step,
        "share": 100 * step / millions(target),
    }


def unmapped_q_output() -> tuple[np.ndarray, np.ndarray]:
    """The classic bug, exactly: tokens drawn from the head's q spread over the target's vocabulary, the rule told q
    laid on the first d target ids instead. Returns (the buggy output, the correct output)."""
    mapped = np.zeros(len(HEAD_TOY_P))
    mapped[list(HEAD_DRAFT_IDS)] = HEAD_Q
    unmapped = np.zeros(len(HEAD_TOY_P))
    unmapped[: len(HEAD_Q)] = HEAD_Q
    return bugs.output_distribution(HEAD_TOY_P, unmapped, mapped), bugs.correct_rule(HEAD_TOY_P, mapped)


NUMBERS += [
    Computed(
        VOCABULARY,
        "`specdec.EagleHead` holds <<.1f>> million weights: a fusion layer of <<.1f>> million, one decoder layer of "
        "<<.1f>> "
        "million and an output layer of <<.1f>> million over a draft vocabulary of <<,d>> tokens, beside the target's "
        "<<.1f>> million. A draft step runs the decoder layer and the output layer: <<.1f>>% of the weights a target "
        "step reads",
        lambda: (
            lambda w: (
                w["head"],
                w["fc"],
                w["layer"],
                w["output"],
                TrainingSettings().draft_vocab,
                w["target"],
                w["share"],
            )
        )(head_weights()),
    ),
    *[
        Reported(VOCABULARY, spec_bench_row(row, row, target), SPEC_BENCH)
        for row, target in (
            ("Medusa", "Vicuna-7B"),
            ("EAGLE", "Vicuna-7B"),
            ("EAGLE-2", "Vicuna-7B"),
            ("EAGLE-3", "Vicuna-13B"),
        )
    ],
    Reported(VOCABULARY, "LLaMA-3.1-8B in SGLang on one H100 went from 158 to 373 tokens/s", EAGLE3),
    Computed(
        VOCABULARY,
        r"(<<,d>> of Qwen's <<,d>>), which makes it <<.1f>>x smaller",
        lambda: (TrainingSettings().draft_vocab, QWEN_VOCABULARY, QWEN_VOCABULARY / TrainingSettings().draft_vocab),
    ),
    Computed(VOCABULARY, r"cross-entropy to $p_{i+1+k}$, weighted $<<.1f>>^k$", lambda: TrainingSettings().decay),
    Computed(
        VOCABULARY,
        "with a draft vocabulary of B and C (A left out) and the head's q = (<<s>>) over it, the rule emits (<<s>>) "
        "instead of $p$ = (<<s>>)",
        lambda: (vector(HEAD_Q), vector(unmapped_q_output()[0]), vector(unmapped_q_output()[1])),
    ),
    # chapter 6, exercise 2: what the draft vocabulary saves in a draft step
    Computed(
        VOCABULARY,
        "The decoder layer holds <<.1f>> million weights and the output layer <<,d>> rows of <<d>>, <<.1f>> million, "
        "so a "
        "step reads <<.1f>> million, <<.1f>>% of the target's <<.1f>> million. With the whole vocabulary the output "
        "layer "
        "holds <<,d>> rows, <<.1f>> million, and a step reads <<.1f>> million, <<.1f>>%: the draft vocabulary makes "
        "a step <<.2f>>x cheaper",
        lambda: (
            lambda small, full: (
                small["layer"],
                TrainingSettings().draft_vocab,
                QWEN_1_5B["hidden_size"],
                small["output"],
                small["step"],
                small["share"],
                small["target"],
                QWEN_VOCABULARY,
                full["output"],
                full["step"],
                full["share"],
                full["step"] / small["step"],
            )
        )(head_weights(), head_weights(QWEN_VOCABULARY)),
    ),
]

from lesson_entries import eagle_curve  # noqa: E402

HEAD_TRAINING = (
    "specdec heads train --target qwen2.5-coder-1.5b --minutes 60 --fresh --checkpoint-minutes 10 "
    "--snapshots runs/snapshots"
)
HEAD_CURVE = (
    "python benchmarks/eagle_curve.py --heads runs/snapshots/010.1min runs/snapshots/032.4min "
    "~/.cache/specdec/heads/qwen2.5-coder-1.5b --out benchmarks/eagle-curve.csv"
)


def _trained(saved: str) -> dict[str, float]:
    """From a head's saved training/progress.json: tokens,
    minutes, top-1 agreement over the first and last ten steps."""
    history = json.loads(saved)["history"]
    return {
        "tokens": history[-1]["tokens"],
        "minutes": history[-1]["minutes"],
        "first": sum(row["accuracy"] for row in history[:10]) / 10,
        "last": sum(row["accuracy"] for row in history[-10:]) / 10,
    }


def _curve_row(saved: str, key: str, paired: bool = True) -> tuple:
    values = eagle_curve(saved)
    columns = ("tokens_per_target_pass", "acceptance_rate", "c", "speedup") + (("paired",) if paired else ())
    return tuple(values[f"{key}_{column}"] for column in columns)


NUMBERS += [
    Measured(
        VOCABULARY,
        "read <<,d>> tokens of ShareGPT in <<.1f>> minutes",
        HEAD_TRAINING,
        "avx2/eagle-training.json",
        lambda saved: (_trained(saved)["tokens"], _trained(saved)["minutes"]),
    ),
    Measured(
        VOCABULARY,
        "top-1 agreement with the target rose from <<.1%>> over its first ten steps to <<.1%>> over its last ten",
        HEAD_TRAINING,
        "avx2/eagle-training.json",
        lambda saved: (_trained(saved)["first"], _trained(saved)["last"]),
    ),
    Measured(
        VOCABULARY,
        "the hour read them at <<.1f>> tokens a second",
        HEAD_TRAINING,
        "avx2/eagle-training.json",
        lambda saved: _trained(saved)["tokens"] / (_trained(saved)["minutes"] * 60),
    ),
    Measured(
        VOCABULARY,
        "ran <<d>> prompts of the bench suite",
        HEAD_CURVE,
        "avx2/eagle-curve.csv",
        lambda saved: eagle_curve(saved)["prompts"],
    ),
    Measured(
        VOCABULARY,
        "| 0.5B draft model (default) | <<.2f>> | <<.2f>> | <<.2f>> | <<.2f>>x | |",
        HEAD_CURVE,
        "avx2/eagle-curve.csv",
        lambda saved: _curve_row(saved, "speculative", paired=False),
    ),
    Measured(
        VOCABULARY,
        "it is not alpha, and <<.2f>> tokens per pass beside <<.2f>> is no contradiction",
        HEAD_CURVE,
        "avx2/eagle-curve.csv",
        lambda saved: _curve_row(saved, "speculative", paired=False)[:2],
    ),
    *[
        Measured(
            VOCABULARY,
            f"| head, {minutes} minutes | <<.2f>> | <<.3f>> | <<.3f>> | <<.2f>>x | <<.2f>>x |",
            HEAD_CURVE,
            "avx2/eagle-curve.csv",
            lambda saved, m=minutes: _curve_row(saved, f"eagle-{m}"),
        )
        for minutes in (10, 32, 60)
    ],
    Reported(
        VOCABULARY,
        f"EAGLE-3's published heads, which reach {spec_bench('EAGLE-3', 'tokens')} tokens per step",
        SPEC_BENCH,
    ),
]


# ---- chapter 4, the tree's growth rule step by step, its worked example from guide/tree_growth.py's trace (issues 45,
# 51)

import tree_growth  # noqa: E402  (guide/tree_growth.py: the procedure as the chapter numbers it)

NUMBERS += [Computed(TREES, "<<s>>", lambda i=i: tree_growth.worked_example_paragraphs()[i]) for i in range(3)]

# ---- chapter 8, two runtimes: llama.cpp's batch invariance, its exact settings, and v(k) on 2 AVX2 cores (issues 43,
# 44)

from lesson_entries import llama_cpp_numbers, runtime_side_by_side  # noqa: E402

LLAMA_RUNTIME = (
    "python benchmarks/llama_cpp.py --specdec llama.cpp:plain llama.cpp:defaults llama.cpp:draft-model "
    "llama.cpp:prompt-lookup --draft-n-max 5 --out benchmarks/llama-cpp-runtime.csv"
)

from specdec.engine.contract import DraftCosts  # noqa: E402
from specdec.planner.drafting import ASSUMED_ALPHA  # noqa: E402
from specdec.planner.pricing import best_chain  # noqa: E402

# guide/measurements/, a copy of benchmarks/llama-cpp-exactness.jsonl
LLAMA_EXACTNESS = "avx2/llama-cpp-exactness.jsonl"
LLAMA_OUT = "--out benchmarks/llama-cpp-exactness.jsonl"
LLAMA_CONTROLS = f"python benchmarks/llama_cpp_exactness.py controls --threads 2 {LLAMA_OUT}"
LLAMA_EXACT = f"python benchmarks/llama_cpp_exactness.py exactness {LLAMA_OUT}"
LLAMA_GREEDY = f"python benchmarks/llama_cpp_exactness.py greedy --threads 2 --tokens 64 {LLAMA_OUT}"
LLAMA_TIMING = f"python benchmarks/llama_cpp_exactness.py timing --models 1.5b --repeats 9 {LLAMA_OUT}"
LLAMA_TIMING_BUSY = f"python benchmarks/llama_cpp_exactness.py timing --repeats 7 --max-k 9 --busy 1 {LLAMA_OUT}"
LLAMA_TIMING_DEFAULTS = (
    "python benchmarks/llama_cpp_exactness.py timing --models 1.5b --threads 1 --repeats 9 "
    f"--settings defaults {LLAMA_OUT}"
)
LLAMA_CONTROL_ROWS = (
    ("llama.cpp's defaults", "defaults"),
    ("a ubatch of 4", "ubatch4"),
    ("a ubatch of 512", "ubatch"),
    ("a ubatch of 512, weights not repacked", "unrepacked"),
    ("flash attention off", "flash"),
    ("a float16 V cache", "value"),
)
LOOKUP_GAMMA = 3  # chapter 8, exercise 1: prompt lookup's round, and the draft's


def _llama(saved: str) -> dict[str, object]:
    return llama_cpp_numbers(saved)


def _control_row(saved: str, key: str) -> tuple[str, ...]:
    """A controls table row's cells: first differing k, largest logit difference, the 6 tokens after 300 (per model)."""
    n = _llama(saved)
    first = [n[f"{key}_{m}_first"] for m in ("1.5b", "0.5b")]
    largest = [n[f"{key}_{m}_max"] for m in ("1.5b", "0.5b")]
    long = [n[f"{key}_{m}_long"] for m in ("1.5b", "0.5b")]
    return (
        *("none" if k is None else str(k) for k in first),
        *("exact" if x == 0 else f"{x:.3f}" for x in largest),
        *("exact" if x == 0 else f"{x:.3f}" for x in long),
    )


def engine_v(timing: dict, gamma: int) -> float:
    """Chapter 1's v(gamma), a pass over gamma + 1 tokens in
    one-token steps, from the benchmark's v[k] over k tokens."""
    return timing["v"][gamma + 1]


TABLE_GAMMAS = (1, 2, 3, 4, 8, 16)  # the v(gamma) table's columns


def share_of_tokens(timing: dict) -> tuple[float, float]:
    """The least and the most of v(gamma) / (gamma + 1) over the
    table's gammas: how near a pass is to one step per token."""
    shares = [engine_v(timing, gamma) / (gamma + 1) for gamma in TABLE_GAMMAS]
    return min(shares), max(shares)


def _spelled(numbers: list[int]) -> str:
    """[2, 3, 4] -> '2, 3 and 4'."""
    return ", ".join(map(str, numbers[:-1])) + f" and {numbers[-1]}"


def free_ceiling(timing: dict) -> tuple[float, int]:
    """The most a draft that costs nothing and is always right can
    gain: the largest (gamma + 1) / v(gamma), and its gamma."""
    best = max(range(1, max(timing["v"])), key=lambda gamma: (gamma + 1) / engine_v(timing, gamma))
    return (best + 1) / engine_v(timing, best), best


def draft_prediction(saved: str) -> tuple[float, float, float, int, float]:
    """The 0.5B's step, the 1.5B's, c, and the policy's best chain
    at ASSUMED_ALPHA with that run's v (both on one thread)."""
    n = _llama(saved)
    draft, target = n["draft_t1"], n["busy_t1"]
    c = draft["step"] / target["step"]
    verify = tuple(engine_v(target, gamma) for gamma in range(0, max(target["v"])))
    gamma, speedup = best_chain(DraftCosts(c, 0.0, verify), ASSUMED_ALPHA)
    return draft["step"], target["step"], c, gamma, speedup


def _greedy_words(n: dict) -> str:
    if n["greedy_equal"]:
        return f"exactly the 1.5B's own {n['greedy_tokens']} greedy tokens"
    return f"NOT the 1.5B's own greedy tokens (they part at token {n['greedy_first_difference']})"


NUMBERS += [
    *[
        Measured(
            RUNTIMES,
            f"| {label} | <<>>, <<>> | <<>>, <<>> | <<>>, <<>> |",
            LLAMA_CONTROLS,
            LLAMA_EXACTNESS,
            lambda saved, key=key: _control_row(saved, key),
        )
        for label, key in LLAMA_CONTROL_ROWS
    ],
    Measured(
        RUNTIMES,
        "With llama.cpp's defaults <<d>> of the 1.5B's <<d>> rows differed (a row for each token of the passes of "
        "<<s>> tokens: <<s>> = <<d>>), and the argmax changed in <<d>>",
        LLAMA_CONTROLS,
        LLAMA_EXACTNESS,
        lambda saved: (
            (
                lambda n: (
                    n["defaults_1.5b_differ"],
                    n["defaults_1.5b_rows"],
                    _spelled(n["defaults_1.5b_passes"]),
                    " + ".join(map(str, n["defaults_1.5b_passes"])),
                    sum(n["defaults_1.5b_passes"]),
                    n["defaults_1.5b_argmax"],
                )
            )(_llama(saved))
            if sum(_llama(saved)["defaults_1.5b_passes"]) == _llama(saved)["defaults_1.5b_rows"]
            else "rows are not a row per token"
        ),
    ),
    Measured(
        RUNTIMES,
        "with them <<s>>, on both models at 1 and 2 threads: <<d>> rows of passes of <<d>> to <<d>> tokens for each "
        "(one pass of each length, a row for each token: <<d>> + <<d>> + ... + <<d>> = <<d>>), the step after a "
        "rollback, <<d>> rows of a tree's branches in one pass, <<d>> steps after keeping a branch "
        "that is not the tree's first, and <<d>> tokens after 300.",
        LLAMA_EXACT,
        LLAMA_EXACTNESS,
        lambda saved: (
            (
                lambda n: (
                    "every row compared was bit-equal to one-token steps"
                    if n["exact_differ"] == 0
                    else f"{n['exact_differ']} rows differed from one-token steps",
                    n["exact_rows"],
                    min(n["exact_passes"]),
                    max(n["exact_passes"]),
                    *n["exact_passes"][:2],
                    max(n["exact_passes"]),
                    sum(n["exact_passes"]),
                    n["tree_rows"],
                    n["keep_rows"],
                    n["long_rows"],
                )
            )(_llama(saved))
            if _llama(saved)["exact_passes"] == list(range(2, 33))
            and sum(_llama(saved)["exact_passes"]) == _llama(saved)["exact_rows"]
            else "the passes compared changed: rewrite the sentence"
        ),
    ),
    Measured(
        RUNTIMES,
        "A greedy speculative loop on 2 threads, the 0.5B drafting <<d>> tokens a round and the 1.5B verifying, "
        "wrote <<s>>.",
        LLAMA_GREEDY,
        LLAMA_EXACTNESS,
        lambda saved: (lambda n: (n["greedy_gamma"], _greedy_words(n)))(_llama(saved)),
    ),
    Measured(
        RUNTIMES,
        "On one thread, in two runs one after the other, its step took <<.1f>> ms with the exact settings "
        "(fastest <<.1f>>) and <<.1f>> ms with llama.cpp's defaults (fastest <<.1f>>)",
        LLAMA_TIMING_DEFAULTS,
        LLAMA_EXACTNESS,
        lambda saved: (lambda n: (n["t1"]["step"], n["t1"]["min"], n["t1_defaults"]["step"], n["t1_defaults"]["min"]))(
            _llama(saved)
        ),
    ),
    Measured(
        RUNTIMES,
        "a pass over 4 tokens cost $v(3) = <<.2f>>$ steps with llama.cpp's defaults and <<.2f>> with the exact "
        "settings; over 8 tokens, where the defaults change kernels again, $v(7) = <<.2f>>$ against <<.2f>>",
        LLAMA_TIMING_DEFAULTS,
        LLAMA_EXACTNESS,
        lambda saved: (
            lambda n: (
                engine_v(n["t1_defaults"], 3),
                engine_v(n["t1"], 3),
                engine_v(n["t1_defaults"], 7),
                engine_v(n["t1"], 7),
            )
        )(_llama(saved)),
    ),
    *[
        Measured(
            RUNTIMES,
            f"| {threads} | <<.1f>> ms | <<.2f>> | <<.2f>> | <<.2f>> | <<.2f>> | <<.2f>> | <<.2f>> |",
            LLAMA_TIMING,
            LLAMA_EXACTNESS,
            lambda saved, key=key: (lambda t: (t["step"], *(engine_v(t, gamma) for gamma in TABLE_GAMMAS)))(
                _llama(saved)[key]
            ),
        )
        for threads, key in ((1, "t1"), (2, "t2"))
    ],
    Measured(
        RUNTIMES,
        r"a pass over $\gamma + 1$ tokens costs <<.2f>> to <<.2f>> of $\gamma + 1$ steps on two threads, and <<.2f>> "
        r"to "
        r"<<.2f>> of them on one (the table's $\gamma$)",
        LLAMA_TIMING,
        LLAMA_EXACTNESS,
        lambda saved: (lambda n: (*share_of_tokens(n["t2"]), *share_of_tokens(n["t1"])))(_llama(saved)),
    ),
    Measured(
        RUNTIMES,
        r"the largest $(\gamma + 1) / v(\gamma)$: <<.2f>>x at $\gamma = <<d>>$ on one thread and <<.2f>>x at "
        r"$\gamma = <<d>>$ on two.",
        LLAMA_TIMING,
        LLAMA_EXACTNESS,
        lambda saved: (lambda n: (*free_ceiling(n["t1"]), *free_ceiling(n["t2"])))(_llama(saved)),
    ),
    Measured(
        RUNTIMES,
        r"its step took <<.1f>> ms against the 1.5B's <<.1f>>: $c = <<.2f>>$, and the 1.5B's pass over 4 tokens cost "
        r"$v(3) = <<.2f>>$ of its steps. With that run's $v$, the best chain at "
        r"$\alpha = <<.1f>>$ is $\gamma = <<d>>$, predicted at <<.2f>>x the target alone",
        LLAMA_TIMING_BUSY,
        LLAMA_EXACTNESS,
        lambda saved: (
            lambda d: (d[0], d[1], d[2], engine_v(_llama(saved)["busy_t1"], LOOKUP_GAMMA), ASSUMED_ALPHA, d[3], d[4])
        )(draft_prediction(saved)),
    ),
    Measured(
        RUNTIMES,
        "The greedy loop above, gamma 4 on 2 threads, ran at <<.2f>> tokens/s against <<.2f>> for plain decoding: "
        "<<.2f>>x.",
        LLAMA_GREEDY,
        LLAMA_EXACTNESS,
        lambda saved: (
            lambda n: (
                n["greedy_speculative_tok_s"],
                n["greedy_plain_tok_s"],
                n["greedy_speculative_tok_s"] / n["greedy_plain_tok_s"],
            )
        )(_llama(saved)),
    ),
    Computed(
        RUNTIMES,
        "Where even a draft that agrees `ASSUMED_ALPHA` = <<.0%>> of the time is predicted slower than the target "
        "alone, as here,",
        lambda: ASSUMED_ALPHA,
    ),
    Measured(
        RUNTIMES,
        "the 1.5B took a median of <<.1f>> ms a step on 2 threads and <<.1f>> ms on one (quiet: <<.1f>> and <<.1f>>)",
        LLAMA_TIMING_BUSY,
        LLAMA_EXACTNESS,
        lambda saved: (lambda n: (n["busy_t2"]["step"], n["busy_t1"]["step"], n["t2"]["step"], n["t1"]["step"]))(
            _llama(saved)
        ),
    ),
    # chapter 8, exercise 1: break-even alphas from the measured v
    Measured(
        RUNTIMES,
        r"a pass over 4 tokens costs $v(3) = <<.2f>>$ steps on two threads and <<.2f>> on one",
        LLAMA_TIMING,
        LLAMA_EXACTNESS,
        lambda saved: (lambda n: (engine_v(n["t2"], LOOKUP_GAMMA), engine_v(n["t1"], LOOKUP_GAMMA)))(_llama(saved)),
    ),
    Measured(
        RUNTIMES,
        r"The 0.5B draft at $c = <<.2f>>$, with the $v(3) = <<.2f>>$ of the run that $c$ comes from",
        LLAMA_TIMING_BUSY,
        LLAMA_EXACTNESS,
        lambda saved: (draft_prediction(saved)[2], engine_v(_llama(saved)["busy_t1"], LOOKUP_GAMMA)),
    ),
    Measured(
        RUNTIMES,
        r"these are equal at $\alpha = <<.2f>>$ on two threads and <<.2f>> on one",
        LLAMA_TIMING,
        LLAMA_EXACTNESS,
        lambda saved: (
            lambda n: (
                break_even_alpha(engine_v(n["t2"], LOOKUP_GAMMA), LOOKUP_GAMMA),
                break_even_alpha(engine_v(n["t1"], LOOKUP_GAMMA), LOOKUP_GAMMA),
            )
        )(_llama(saved)),
    ),
    Measured(
        RUNTIMES,
        r"The round costs $3 \cdot <<.2f>> + <<.2f>> = <<.2f>>$ steps, more than the <<d>> tokens",
        LLAMA_TIMING_BUSY,
        LLAMA_EXACTNESS,
        lambda saved: (lambda c, v: (c, v, LOOKUP_GAMMA * c + v, LOOKUP_GAMMA + 1))(
            draft_prediction(saved)[2], engine_v(_llama(saved)["busy_t1"], LOOKUP_GAMMA)
        ),
    ),
    Measured(
        RUNTIMES,
        r"even a free draft that is always right could reach <<.2f>>x on two threads",
        LLAMA_TIMING,
        LLAMA_EXACTNESS,
        lambda saved: free_ceiling(_llama(saved)["t2"])[0],
    ),
    Measured(
        KERNELS_CHAPTER,
        "its plain decoding made <<.2f>> tokens/s against <<.2f>> for `llama-completion` (<<.2f>>x, the median of the "
        "per-prompt ratios)",
        LLAMA_RUNTIME,
        "avx2/llama-cpp-runtime.csv",
        lambda saved: (lambda v: (v["plain"], v["completion"], v["plain_vs_completion"]))(runtime_side_by_side(saved)),
    ),
    Measured(
        KERNELS_CHAPTER,
        "The default made <<.2f>>; the 0.5B draft model <<.2f>>, and llama.cpp's own speculative tool <<.2f>>.",
        LLAMA_RUNTIME,
        "avx2/llama-cpp-runtime.csv",
        lambda saved: (lambda v: (v["defaults"], v["draft-model"], v["speculative"]))(runtime_side_by_side(saved)),
    ),
]

# ---- the chapters split out of chapter 4 (issue 51): the numbers of their new sentences and exercises


def _two_pairs(saved: str) -> tuple:
    """Chapter 7, exercise 2: the bfloat16 pair and the int8/int4
    pair at alpha 0.8, gamma 5, from the AVX-512 kernels."""
    k = kernel_costs(saved)
    rounds = []
    for target, draft in (("bfloat16", "bfloat16"), ("float32 int8", "bfloat16 int4")):
        c, v = k[f"c_{target}_{draft}"], k[f"{target}_v5"]
        speedup = walltime_speedup(0.8, 5, c, v)
        rounds.append(
            (
                k[f"{draft}_draft_step"],
                k[f"{target}_step"],
                c,
                v,
                5 * c + v,
                speedup,
                1000 * speedup / k[f"{target}_step"],
            )
        )
    (d1, t1, c1, v1, r1, s1, rate1), (d2, t2, c2, v2, r2, s2, rate2) = rounds
    return (
        0.8,
        expected_tokens_per_pass(0.8, 5),
        d1,
        t1,
        c1,
        v1,
        c1,
        v1,
        r1,
        s1,
        d2,
        t2,
        c2,
        v2,
        r2,
        s2,
        t1,
        t2,
        s1,
        t1,
        rate1,
        s2,
        t2,
        rate2,
    )


NUMBERS += [
    Measured(
        KERNELS_CHAPTER,
        "a whole model's pass, attention and all, cost <<.2f>> steps in the table above",
        KERNELS,
        "avx512-bf16/kernels.csv",
        lambda saved: kernel_costs(saved)["float32 int8_v5"],
    ),
    Computed(KERNELS_CHAPTER, r"formula predict at $\alpha = <<.1f>>$, $\gamma = 5$?", lambda: 0.8),
    Measured(
        KERNELS_CHAPTER,
        r"A round makes $(1 - <<.1f>>^6) / (1 - 0.8) = <<.2f>>$ tokens on average. The bfloat16 pair: "
        r"$c = <<.0f>> / <<.0f>> = <<.2f>>$ and $v(5) = <<.2f>>$, so a round costs $5 \cdot <<.2f>> + <<.2f>> = "
        r"<<.2f>>$ "
        r"steps and the formula predicts <<.2f>>x. The int8 target with the int4 draft: $c = <<.0f>> / <<.0f>> = "
        r"<<.2f>>$ "
        r"and $v(5) = <<.2f>>$, a round costs <<.2f>> steps: <<.2f>>x. The bfloat16 pair gains more over its own "
        r"target, but its target step costs <<.0f>> ms against <<.0f>>: <<.2f>>x of one token per <<.0f>> ms is "
        r"<<.2f>> "
        r"tokens a second, <<.2f>>x of one per <<.0f>> ms is <<.2f>>.",
        KERNELS,
        "avx512-bf16/kernels.csv",
        _two_pairs,
    ),
    Computed(BATCHES, r"with chance $\alpha = <<.1f>>$, independently, with $\gamma = 4$", lambda: 0.8),
    Computed(
        BATCHES,
        r"$1 + \alpha + \alpha^2 + \alpha^3 + \alpha^4 = <<.2f>>$ tokens",
        lambda: expected_tokens_per_pass(0.8, 4),
    ),
    Computed(
        BATCHES,
        r"Two rows: $\alpha^2 = <<.2f>>$ and <<.2f>> tokens; eight rows: $\alpha^8 = <<.2f>>$ and <<.2f>> tokens",
        lambda: (0.8**2, expected_tokens_per_pass(0.8**2, 4), 0.8**8, expected_tokens_per_pass(0.8**8, 4)),
    ),
]

# chapter 4's calibration, read from ConfidenceStop's own defaults: its bins, the prior's weight, the decay
_RULE = ConfidenceStop()
NUMBERS += [
    Computed(
        TREES,
        r"Then $a(q) = (h_b + <<.0f>> \sqrt{q}) / (t_b + <<.0f>>)$",
        lambda: (_RULE.prior_weight, _RULE.prior_weight),
    ),
    Computed(TREES, r"After each round every count is multiplied by <<.2f>>", lambda: _RULE.decay),
    Computed(
        TREES,
        r"<<s>> bins, bin $b = \min(\lfloor <<d>> q \rfloor, <<d>>)$",
        lambda: ({10: "Ten"}[len(_RULE.hits)], len(_RULE.hits), len(_RULE.hits) - 1),
    ),
]

NUMBERS += [
    Measured(
        VOCABULARY,
        r"costs most of one on this machine ($c = <<.2f>>$: a run's draft seconds per pass",
        HEAD_CURVE,
        "avx2/eagle-curve.csv",
        lambda saved: eagle_curve(saved)["speculative_c"],
    ),
]


# ---- chapter 8: each model on its fastest path, measured on the AVX-512 AMX machine (benchmarks/fast_paths.py,
# llama_cpp.py)
FAST_PATHS = "avx512-amx/fast-paths.json"
FAST_PATHS_RUN = (
    "python benchmarks/fast_paths.py --out guide/measurements/avx512-amx/fast-paths.json --llama-bench LLAMA_BENCH"
)
SIDE = "avx512-amx/side-by-side.csv"
SIDE_RUN = (
    "python benchmarks/llama_cpp.py --build no-amx --categories code summarization qa math --prompts-per-category 1 "
    "--llama-tools completion --specdec llama.cpp:plain llama.cpp:defaults llama.cpp:w8a8-plain "
    "llama.cpp:w8a8-defaults "
    "--out guide/measurements/avx512-amx/side-by-side.csv"
)
SIDE_CATEGORIES = ("code", "summarization", "qa", "math")


SAME = "avx512-amx/same-text.csv"
SAME_RUN = (
    "python benchmarks/llama_cpp.py --build-dir ~/.cache/specdec/llama_cpp/native-*/tools --llama-tools completion "
    "--llama-settings exact --specdec llama.cpp:plain --categories code summarization qa math --prompts-per-category 1 "
    "--out guide/measurements/avx512-amx/same-text.csv"
)


def _same_text_lengths(saved: str) -> tuple[int | None, ...]:
    """Per category, how many characters specdec's plain text and llama-completion's agree on; None where they differ
    (`specdec.bench.comparison.same_text`, the rule the benchmark's table uses)."""
    import csv
    import io

    from specdec.bench.comparison import same_text

    texts = {(row["tool"], row["category"]): row["text"] for row in csv.DictReader(io.StringIO(saved))}
    verdicts = [
        same_text(texts[("specdec", category)], texts[("llama-completion", category)]) for category in SIDE_CATEGORIES
    ]
    return tuple(common if agreed else None for agreed, common in verdicts)


def _fast(saved: str, *keys: str):
    found = json.loads(saved)
    for key in keys:
        found = found[key]
    return found


def _side_rates(saved: str, variant: str) -> list[float]:
    """Tokens a second with the prompt pass, per category, of the side-by-side run's `variant`."""
    import csv
    import io

    import statistics

    rows: dict[tuple[str, str], list[float]] = {}  # a prompt run several times (--repeats): its median
    for row in csv.DictReader(io.StringIO(saved)):
        rows.setdefault((row["variant"], row["category"]), []).append(float(row["total_tokens_per_s"]))
    return [statistics.median(rows[(variant, category)]) for category in SIDE_CATEGORIES]


SIDE_VARIANTS = (
    ("`llama-completion`", "plain Q4_K_M"),
    ("`specdec run --method auto` (then the default; target on llama.cpp)", "defaults on specdec's llama.cpp runtime"),
    ("the same, W8A8 target on torch", "defaults, W8A8 target on torch, draft on specdec's llama.cpp runtime"),
)

NUMBERS += [
    Measured(
        RUNTIMES,
        "Its one-token step is the same either way (exact <<.1f>> ms, fastest <<.1f>> ms), but a pass over "
        "4 rows of the 0.5B (a tree level) took <<.0f>> ms on the exact settings and <<.0f>> ms on llama.cpp's fastest",
        FAST_PATHS_RUN,
        FAST_PATHS,
        lambda saved: (
            *(_fast(saved, "draft_0.5b", "step_ms", way) for way in ("exact", "fastest")),
            *(_fast(saved, "draft_0.5b", "four_rows_ms", way) for way in ("exact", "fastest")),
        ),
    ),
    Measured(
        RUNTIMES,
        "The first pass over a <<d>>-token prompt took <<.1f>> s in ubatches of 3 and <<.2f>> s as a prompt pass; "
        "llama.cpp's own prompt pass (`llama-bench`, its default settings) <<.2f>> s: <<.2f>> times it",
        FAST_PATHS_RUN,
        FAST_PATHS,
        lambda saved: (
            _fast(saved, "prompt_1.5b", "tokens"),
            _fast(saved, "prompt_1.5b", "first_pass_ms", "ubatches of 3") / 1000,
            _fast(saved, "prompt_1.5b", "first_pass_ms", "prompt pass") / 1000,
            _fast(saved, "llama_bench_prompt_1.5b", "first_pass_ms") / 1000,
            _fast(saved, "prompt_1.5b", "first_pass_ms", "prompt pass")
            / _fast(saved, "llama_bench_prompt_1.5b", "first_pass_ms"),
        ),
    ),
    Measured(
        RUNTIMES,
        "printed the same greedy text as specdec's plain decoding on the four prompts below, <<d>>, <<d>>, <<d>> and "
        "<<d>> characters",
        SAME_RUN,
        SAME,
        _same_text_lengths,
    ),
    Measured(
        RUNTIMES,
        r"On llama.cpp's exact settings a pass over 8 rows cost $v(7) = <<.2f>>$ steps",
        FAST_PATHS_RUN,
        FAST_PATHS,
        lambda saved: _fast(saved, "target_1.5b", "llama.cpp exact", "v7"),
    ),
    Measured(
        RUNTIMES,
        r"its $v(7)$ was <<.2f>>, though its step is slower (<<.0f>> ms against <<.0f>>)",
        FAST_PATHS_RUN,
        FAST_PATHS,
        lambda saved: (
            _fast(saved, "target_1.5b", "torch w8a8", "v7"),
            _fast(saved, "target_1.5b", "torch w8a8", "step_ms"),
            _fast(saved, "target_1.5b", "llama.cpp exact", "step_ms"),
        ),
    ),
    Measured(
        RUNTIMES,
        "a one-token step took <<.1f>> ms through the wheel and <<.1f>> ms through the build",
        FAST_PATHS_RUN,
        FAST_PATHS,
        lambda saved: (
            _fast(saved, "library_step_ms_1.5b", "wheel"),
            _fast(saved, "library_step_ms_1.5b", "built for this CPU"),
        ),
    ),
    *[
        Measured(
            RUNTIMES,
            f"| {label} | <<.1f>> | <<.1f>> | <<.1f>> | <<.1f>> |",
            SIDE_RUN,
            SIDE,
            lambda saved, variant=variant: tuple(_side_rates(saved, variant)),
        )
        for label, variant in SIDE_VARIANTS
    ],
    Measured(
        RUNTIMES,
        "| `--method auto` against `llama-completion` | <<.2f>>x | <<.2f>>x | <<.2f>>x | <<.2f>>x |",
        SIDE_RUN,
        SIDE,
        lambda saved: tuple(
            ours / theirs
            for ours, theirs in zip(_side_rates(saved, SIDE_VARIANTS[1][1]), _side_rates(saved, SIDE_VARIANTS[0][1]))
        ),
    ),
]

# ---------------------------------------------------------------- chapter 8: what a waiting thread costs (the AVX2
# machine)

THREAD_WAIT_RUN = (
    "python benchmarks/thread_wait.py --rounds 2 --tokens 64 --out guide/measurements/avx2/thread-wait.csv"
)


def _waits(saved: str, load: str, policy: str) -> tuple[float, float]:
    """(slowest, fastest) tokens a second of plain decoding under `policy` with `load`, over the file's rounds."""
    import csv
    import io

    speeds = [
        float(row["tokens_per_s"])
        for row in csv.DictReader(io.StringIO(saved))
        if row["load"] == load and row["policy"] == policy
    ]
    return min(speeds), max(speeds)


NUMBERS += [
    Measured(
        RUNTIMES,
        "plain decoding of the 1.5B ran at <<.1f>>-<<.1f>> tokens a second spinning, <<.1f>>-<<.1f>> with libgomp's "
        "default (spin a while, then sleep) and <<.1f>>-<<.1f>> sleeping on a quiet machine; with one core kept busy "
        "by "
        "another process, <<.1f>>-<<.1f>> spinning and <<.1f>>-<<.1f>> sleeping",
        THREAD_WAIT_RUN,
        "avx2/thread-wait.csv",
        lambda saved: (
            *_waits(saved, "quiet", "active"),
            *_waits(saved, "quiet", "default spin"),
            *_waits(saved, "quiet", "passive"),
            *_waits(saved, "one core busy", "active"),
            *_waits(saved, "one core busy", "passive"),
        ),
    ),
]

THREAD_SPIN_RUN = (
    'python benchmarks/thread_wait.py --rounds 2 --tokens 64 --policies "active,spin 30M,spin 3M" --out '
    "guide/measurements/avx2/thread-wait-spin.csv"
)

NUMBERS += [
    Measured(
        RUNTIMES,
        "was as fast, <<.1f>>-<<.1f>> tokens a second quiet and <<.1f>>-<<.1f>> beside a busy core",
        THREAD_SPIN_RUN,
        "avx2/thread-wait-spin.csv",
        lambda saved: (*_waits(saved, "quiet", "spin 3M"), *_waits(saved, "one core busy", "spin 3M")),
    ),
]

THREAD_WAIT_AVX512_RUN = (
    "python benchmarks/thread_wait.py --rounds 2 --tokens 64 --out guide/measurements/avx512-bf16/thread-wait.csv"
)

NUMBERS += [
    Measured(
        RUNTIMES,
        "the long spin made <<.1f>>-<<.1f>> tokens a second quiet and <<.1f>>-<<.1f>> beside a busy core. "
        "Sleeping made <<.1f>>-<<.1f>> and <<.2f>>-<<.2f>>",
        THREAD_WAIT_AVX512_RUN,
        "avx512-bf16/thread-wait.csv",
        lambda saved: (
            *_waits(saved, "quiet", "spin 3M"),
            *_waits(saved, "one core busy", "spin 3M"),
            *_waits(saved, "quiet", "passive"),
            *_waits(saved, "one core busy", "passive"),
        ),
    ),
]

SIDE_AVX2 = "avx2/side-by-side.csv"
SIDE_AVX2_RUN = (
    "python benchmarks/llama_cpp.py --categories code summarization qa math --prompts-per-category 1 --llama-tools "
    "completion --specdec llama.cpp:plain llama.cpp:defaults llama.cpp:auto --out "
    "guide/measurements/avx2/side-by-side.csv"
)
SIDE_AVX2_VARIANTS = (
    ("`llama-completion` (built for this CPU)", "plain Q4_K_M"),
    ("specdec's plain decoding", "plain on specdec's llama.cpp runtime"),
    ("`specdec run --method auto`, the fastest exact plan", "auto on specdec's llama.cpp runtime"),
    ("`specdec run`'s default, the draft model at work", "defaults on specdec's llama.cpp runtime"),
)


def _auto_vs_completion(saved: str) -> tuple[float, ...]:
    """Per category, the fastest exact plan's tokens a second over `llama-completion`'s, in a side-by-side run."""
    auto, completion = SIDE_AVX2_VARIANTS[2][1], SIDE_AVX2_VARIANTS[0][1]
    return tuple(ours / theirs for ours, theirs in zip(_side_rates(saved, auto), _side_rates(saved, completion)))


NUMBERS += [
    *[
        Measured(
            RUNTIMES,
            f"| {label} | <<.1f>> | <<.1f>> | <<.1f>> | <<.1f>> |",
            SIDE_AVX2_RUN,
            SIDE_AVX2,
            lambda saved, variant=variant: tuple(_side_rates(saved, variant)),
        )
        for label, variant in SIDE_AVX2_VARIANTS
    ],
    Measured(
        RUNTIMES,
        "| the fastest exact plan against `llama-completion` | <<.2f>>x | <<.2f>>x | <<.2f>>x | <<.2f>>x |",
        SIDE_AVX2_RUN,
        SIDE_AVX2,
        _auto_vs_completion,
    ),
]

SIDE_AVX512 = "avx512-bf16/side-by-side.csv"
SIDE_AVX512_RUN = (
    "python benchmarks/llama_cpp.py --build-dir ~/.cache/specdec/llama_cpp/native-*/tools --categories code "
    "summarization qa math --prompts-per-category 1 --repeats 4 --llama-tools completion --specdec llama.cpp:plain "
    "llama.cpp:defaults llama.cpp:auto --out guide/measurements/avx512-bf16/side-by-side.csv"
)

NUMBERS += [
    Measured(
        RUNTIMES,
        "the fastest exact plan made <<.2f>>x, <<.2f>>x, <<.2f>>x and <<.2f>>x: each prompt's median",
        SIDE_AVX512_RUN,
        SIDE_AVX512,
        _auto_vs_completion,
    ),
]

HUGE_PAGES_RUN = "python benchmarks/huge_pages.py --rounds 8 --out guide/measurements/avx512-bf16/huge-pages.json"


def _huge_pages(saved: str) -> tuple[float, float, float, float, float, float]:
    """Step ratio, tokens a second (huge, small), load seconds (huge, small), and the tokens after which the slower
    load is paid back (to the hundred)."""
    report = json.loads(saved)
    huge, small = report["tokens_per_s"]["huge"], report["tokens_per_s"]["small"]
    load_huge, load_small = report["load_s"]["huge"], report["load_s"]["small"]
    payback = (load_huge - load_small) / (1 / small - 1 / huge)
    return report["step_x"], huge, small, load_huge, load_small, round(payback, -2)


NUMBERS += [
    Measured(
        KERNELS_CHAPTER,
        "a step ran <<.2f>>x as fast (<<.1f>> against <<.1f>> tokens a second). But a load took <<.1f>> s instead of "
        "<<.1f>> s: the VM hands out fresh memory slowly in huge pages. That pays back after about <<.0f>> tokens",
        HUGE_PAGES_RUN,
        "avx512-bf16/huge-pages.json",
        _huge_pages,
    ),
]

SIDE_HUGE_RUN = (
    "SPECDEC_HUGE_PAGES=1 python benchmarks/llama_cpp.py --build-dir ~/.cache/specdec/llama_cpp/native-*/tools "
    "--categories code summarization qa math --prompts-per-category 1 --repeats 4 --llama-tools completion --specdec "
    "llama.cpp:plain llama.cpp:auto --out guide/measurements/avx512-bf16/side-by-side-huge-pages.csv"
)

NUMBERS += [
    Measured(
        KERNELS_CHAPTER,
        "With huge pages it made <<.2f>>x, <<.2f>>x, <<.2f>>x and <<.2f>>x `llama-completion`",
        SIDE_HUGE_RUN,
        "avx512-bf16/side-by-side-huge-pages.csv",
        _auto_vs_completion,
    ),
]
