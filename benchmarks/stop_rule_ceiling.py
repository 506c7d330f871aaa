"""How close can a stop rule that only sees the draft's confidence come to the oracle? Greedy schedules replayed on
real text.

    #  bfloat16 draft (about 5 minutes)
    python benchmarks/stop_rule_ceiling.py --draft-quantization none --c 0.36 --s 0.04
    python benchmarks/stop_rule_ceiling.py --draft-quantization int8 --c 0.17 --s 0.04   # int8 draft

Greedy speculative decoding emits the target's own greedy text whatever the schedule; only the rounds
differ. So every greedy chain schedule can be replayed from two numbers per output token, recorded once
per prompt with one teacher-forced draft pass over the prompt and the output: whether the draft's greedy
choice after the text before the token is that token (it would be accepted), and the draft's confidence
there (q of its choice). A replayed round drafts while its schedule says so, is accepted up to its first
disagreement, and costs k c + v(k) target steps with v(k) = 1 + s k; the speedup is tokens over steps
(model time, as the benchmark's `oracle_speedup`, so no per-round overhead of either library counts).

Replayed, on the bench suite's 12 prompts (2 per category, 128 tokens, bfloat16 target Qwen2.5-Coder-1.5B,
draft -0.5B): fixed gammas; our default `ConfidenceStop`; transformers' assisted generation with its
defaults (20 tokens, stop below confidence 0.4) and with its +2/-1 schedule; the best *fixed confidence
threshold in hindsight* (threshold and maximum length picked on these very prompts, an upper bound for
that family); and the oracle (`specdec.bench.comparison.greedy_oracle_speedup`: drafts exactly the run
the target will accept). Approximation: after a round's first disagreement the draft's next confidences
are read from the true text (the real draft goes on from its own wrong token; those tokens are rejected
either way, only how many are drafted depends on them).
"""

from __future__ import annotations

import argparse
import itertools
import statistics
from collections.abc import Callable

import torch

from specdec import speculative_generate
from specdec.bench.comparison import greedy_oracle_speedup
from specdec.bench.prompts import encode_bench_prompt, suite
from specdec.engine.costs import CostProfile
from specdec.engine.stop_rule import ConfidenceStop
from specdec.pair.running import continued
from specdec.pair.loading import load_pair


class Schedule:
    """A greedy chain schedule as the replay sees it: a round's maximum, a decision after each token, a verdict."""

    def __init__(
        self, start: Callable[[], int], more: Callable[[float], bool], update: Callable[[int, int], None]
    ) -> None:
        self.start, self.more, self.update = start, more, update


def fixed(gamma: int) -> Schedule:
    return Schedule(lambda: gamma, lambda confidence: True, lambda drafted, accepted: None)


def ours(c: float, s: float) -> Schedule:
    rule = ConfidenceStop(c=c, verify_slope=s)
    return Schedule(rule.next_gamma, rule.keep_drafting, rule.update)


def threshold(limit: float, longest: int, grow: bool = False) -> Schedule:
    """Stop after a token drafted with confidence below `limit`; with `grow`, transformers' +2 / -1 on `longest`."""
    state = {"longest": longest}

    def update(drafted: int, accepted: int) -> None:
        if grow:
            state["longest"] = state["longest"] + 2 if accepted == drafted else max(1, state["longest"] - 1)

    return Schedule(lambda: state["longest"], lambda confidence: confidence >= limit, update)


def replay(agrees: list[bool], confidences: list[float], schedule: Schedule, c: float, s: float) -> float:
    """The speedup, in model time, of `schedule` on one output (token 0 comes from the prompt pass)."""
    steps, i = 1.0, 1
    while i < len(agrees):
        longest = min(schedule.start(), len(agrees) - i - 1)  # the round's last token always comes from the target
        drafted = 0
        while drafted < longest:
            drafted += 1
            if not schedule.more(confidences[i + drafted - 1]):
                break
        accepted = 0
        while accepted < drafted and agrees[i + accepted]:
            accepted += 1
        schedule.update(drafted, accepted)
        steps += drafted * c + 1.0 + s * drafted
        i += accepted + 1
    return len(agrees) / steps


@torch.inference_mode()
def record(pair, max_new_tokens: int) -> list[dict]:
    """Per prompt: its category, and per output token whether the draft agrees and how confident it is."""
    traces = []
    for prompt in suite(per_category=2):
        input_ids = encode_bench_prompt(pair.tokenizer, prompt)
        tokens = speculative_generate(
            pair.target, pair.draft, input_ids, max_new_tokens=max_new_tokens, temperature=0
        ).tokens
        text = continued(input_ids, tokens, pair.draft.device)  # [1, T + N]
        logits = pair.draft(input_ids=text, logits_to_keep=len(tokens) + 1).logits[0, :-1].float()  # [N, V]
        confidence, choice = torch.softmax(logits, dim=-1).max(dim=-1)
        traces.append(
            {
                "category": prompt.category,
                "agrees": [a == b for a, b in zip(choice.tolist(), tokens)],
                "confidences": confidence.tolist(),
            }
        )
        print(f"  {prompt.category}: {len(tokens)} tokens, the draft agrees on {sum(traces[-1]['agrees'])}", flush=True)
    return traces


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="qwen2.5-coder-1.5b")
    parser.add_argument("--draft", default="qwen2.5-coder-0.5b")
    parser.add_argument("--draft-quantization", default="none", choices=("none", "int8", "int4"))
    parser.add_argument(
        "--c",
        type=float,
        required=True,
        help="draft step / target step, as measured (the bench CSV's draft_cost_ratio)",
    )
    parser.add_argument("--s", type=float, required=True, help="verification slope: v(k) = 1 + s k")
    parser.add_argument("--max-new-tokens", type=int, default=128)
    args = parser.parse_args()
    torch.set_num_threads(2)
    pair = load_pair(
        args.target, args.draft, dtype="bfloat16", quantization="none", draft_quantization=args.draft_quantization
    )
    traces = record(pair, args.max_new_tokens)
    c, s = args.c, args.s
    costs = CostProfile(1.0, c, {k: 1.0 + s * k for k in range(1, args.max_new_tokens + 1)})  # v(k) = 1 + s k
    oracle = [greedy_oracle_speedup(t["agrees"], costs) for t in traces]
    schedules: dict[str, Callable[[], Schedule]] = {
        "fixed gamma 3": lambda: fixed(3),
        "fixed gamma 5": lambda: fixed(5),
        "ours (ConfidenceStop)": lambda: ours(c, s),
        "transformers defaults (20, conf 0.4)": lambda: threshold(0.4, 20),
        "transformers +2/-1 (20, conf 0.4)": lambda: threshold(0.4, 20, grow=True),
    }
    results = {
        name: [replay(t["agrees"], t["confidences"], make(), c, s) for t in traces] for name, make in schedules.items()
    }
    hindsight = max(
        itertools.product([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9], [8, 16, 32]),
        key=lambda grid: statistics.median(
            replay(t["agrees"], t["confidences"], threshold(*grid), c, s) / o for t, o in zip(traces, oracle)
        ),
    )
    results[f"best threshold in hindsight ({hindsight[0]}, max {hindsight[1]})"] = [
        replay(t["agrees"], t["confidences"], threshold(*hindsight), c, s) for t in traces
    ]
    results["oracle"] = oracle
    categories = sorted({t["category"] for t in traces})
    print(
        f"\nc = {c}, s = {s}; speedup in model time, median over {len(traces)} prompts; efficiency = speedup / oracle, "
        "median"
    )
    print(f"| schedule | speedup | efficiency | {' | '.join(categories)} |")
    print("|---|---|---|" + "---|" * len(categories))
    for name, speedups in results.items():
        efficiency = statistics.median(x / o for x, o in zip(speedups, oracle))
        by_category = [
            statistics.median(x for x, t in zip(speedups, traces) if t["category"] == category)
            for category in categories
        ]
        print(
            f"| {name} | {statistics.median(speedups):.2f} | {efficiency:.2f} | "
            f"{' | '.join(f'{x:.2f}' for x in by_category)} |"
        )


if __name__ == "__main__":
    main()
