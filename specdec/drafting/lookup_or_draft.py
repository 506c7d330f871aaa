"""Prompt lookup or a draft model, round by round, whichever is predicted to pay more: free drafts where the text repeats.

Notation: p is the target, q the draft's distribution, gamma the drafted tokens per round, alpha the chance a tested draft
is kept, c a draft step's cost over a target step, v(k) a verification pass over k drafted tokens in target steps.

A draft model costs c per drafted token wherever it drafts; prompt lookup (`specdec.drafting.prompt_lookup`) costs nothing,
and where the output copies its input (a summary, an edit, an answer quoting a document) it guesses long runs. Neither wins
everywhere: measured on the zoo's pair (Qwen2.5-Coder 0.5B for 1.5B, Intel Xeon with AVX-512, 2 threads, greedy, 128
tokens, a W8A8 target whose pass over 16 tokens costs 1.24 steps, the draft on llama.cpp's fastest settings, c = 0.55) the
draft model alone gave 16.8 tok/s on code and 13.0 on a summary, prompt lookup alone 14.3 on code and 24.7 on the summary.
So each round, for each text, this drafter prices three choices with the costs the planner measured and what it has seen
of each so far, and takes the best (Leviathan et al.'s expected tokens over the round's cost):

    lookup   the tokens that followed the text's last n tokens earlier (up to `max_gamma`), fixed candidates:
             E(beta, L) / v(L), beta the share of looked-up tokens the target kept so far
    model    a chain of k tokens from the draft model, with its q:  max over k of  E(alpha, k) / (k c + v(k))
    plain    nothing: one target step, one token:  1

with E(a, k) = (1 - a^(k+1)) / (1 - a), the expected tokens of a round whose drafts are kept with chance a. The estimates
start at a prior and weigh recent rounds more (`decay`); after a plain round they drift back towards the prior
(`recovery`), so drafting is tried again.

Exact whichever it picks: a round proposes one chain, with the law each token was drawn from (the model's q) or as fixed
candidates (point masses), and the target's rule decides (`specdec.engine.verification`). The choice depends only on what
happened before the round, never on the target's coming verdict. The draft model's cache lags behind while it is not asked:
its next pass reads the text it has not seen (`ModelDrafter` rolls back to what the target kept after every pass).

    speculative_generate(target, LookupOrModelDrafter(draft), input_ids, temperature=0)
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from specdec.drafting.draft_model import ModelDrafter
from specdec.drafting.prompt_lookup import PromptLookupDrafter
from specdec.engine.contract import Capabilities, DraftCosts, DraftRequest, Generation, Verified
from specdec.engine.trees import DraftTree
from specdec.errors import SpecdecError

LOOKUP, MODEL, PLAIN = "lookup", "model", "plain"


def expected_tokens(alpha: float, k: int) -> float:
    """E[tokens] of a round of k drafts each kept with chance alpha (the accepted ones and the target's own).

    >>> expected_tokens(0.5, 2), expected_tokens(1.0, 3)
    (1.75, 4.0)
    """
    return float(k + 1) if alpha >= 1.0 else (1 - alpha ** (k + 1)) / (1 - alpha)


@dataclass
class Estimate:
    """A running share of kept drafts: a prior worth `weight` tested drafts, recent rounds weighted more.

    >>> estimate = Estimate(0.5, 2.0)
    >>> estimate.update(4, 4, decay=1.0); round(estimate.value, 3)
    0.833
    """

    prior: float
    weight: float
    kept: float = 0.0
    tested: float = 0.0

    @property
    def value(self) -> float:
        return (self.kept + self.prior * self.weight) / (self.tested + self.weight)

    def update(self, kept: int, tested: int, decay: float) -> None:
        self.kept, self.tested = decay * self.kept + kept, decay * self.tested + tested

    def drift(self, recovery: float) -> None:
        """Forget a little of what was seen (a plain round tested nothing): the estimate moves back towards the prior."""
        self.kept, self.tested = recovery * self.kept, recovery * self.tested


def best_choice(found: int, alpha: float, beta: float, costs: DraftCosts, limit: int) -> tuple[str, int]:
    """(LOOKUP, L), (MODEL, k) or (PLAIN, 0): the choice of the module docstring with the highest predicted tokens per step.

    >>> costs = DraftCosts(0.5, 0.05, (1.0, 1.05, 1.08, 1.1, 1.12))
    >>> best_choice(4, alpha=0.9, beta=0.2, costs=costs, limit=4)        # a sure draft model beats a poor lookup
    ('model', 4)
    >>> best_choice(4, alpha=0.9, beta=0.8, costs=costs, limit=4)        # a good lookup is free
    ('lookup', 4)
    >>> best_choice(0, alpha=0.3, beta=0.8, costs=costs, limit=4)        # nothing found, a poor draft: one plain step
    ('plain', 0)
    """
    rates = {(PLAIN, 0): 1.0}
    if found:
        rates[(LOOKUP, found)] = expected_tokens(beta, found) / costs.v(found)
    for k in range(1, limit + 1):
        rates[(MODEL, k)] = expected_tokens(alpha, k) / (k * costs.c + costs.v(k))
    return max(rates, key=rates.get)


class LookupOrModelDrafter:
    """Prompt lookup, the draft model's chain, or nothing, round by round, whichever is predicted to pay (module docstring)."""

    capabilities = Capabilities(sizes_rounds=True, drafts="prompt lookup or the draft model, whichever pays")

    def __init__(self, model: object, name: str | None = None, max_ngram: int = 3, min_ngram: int = 1, max_gamma: int = 16,
                 prior_alpha: float = 0.75, prior_beta: float = 0.5, prior_weight: float = 2.0, decay: float = 0.9,
                 recovery: float = 0.97) -> None:
        if max_gamma < 1 or not 0 < prior_alpha < 1 or not 0 < prior_beta < 1 or not 0 < decay <= 1 or not 0 < recovery <= 1:
            raise SpecdecError(f"need max_gamma >= 1, priors in (0, 1), decay and recovery in (0, 1], got {max_gamma}, "
                               f"{prior_alpha}, {prior_beta}, {decay} and {recovery}")
        self.model_drafter = ModelDrafter(model, name)
        self.draft_model = self.model_drafter.draft_model
        self.name = f"prompt lookup or {self.model_drafter.name}"
        self.lookup = PromptLookupDrafter(max_ngram, min_ngram)
        self.max_gamma, self.decay, self.recovery = max_gamma, decay, recovery
        self.priors = (prior_alpha, prior_beta, prior_weight)
        self.alpha = Estimate(prior_alpha, prior_weight)       # the draft model's drafts
        self.beta = Estimate(prior_beta, prior_weight)         # looked-up tokens
        self.costs = DraftCosts(1.0, 1.0)
        self.chosen: dict[int, str] = {}                       # row -> what its last round drafted
        self.rounds = {LOOKUP: 0, MODEL: 0, PLAIN: 0}          # rounds drafted each way (for reports and tests)

    def begin(self, generation: Generation) -> None:
        self.model_drafter.begin(generation)
        prior_alpha, prior_beta, weight = self.priors
        self.alpha, self.beta = Estimate(prior_alpha, weight), Estimate(prior_beta, weight)
        self.costs, self.chosen = generation.costs, {}
        self.rounds = {LOOKUP: 0, MODEL: 0, PLAIN: 0}

    def draft(self, requests: dict[int, DraftRequest]) -> dict[int, DraftTree]:
        proposals, paid = {}, {}
        for row, request in requests.items():
            limit = min(request.limit, self.max_gamma)
            found = self.lookup.lookup(request.sequence.tolist(), limit)
            choice, length = best_choice(len(found), self.alpha.value, self.beta.value, self.costs, limit)
            self.chosen[row] = choice
            self.rounds[choice] += 1
            if choice == LOOKUP:
                proposals[row] = DraftTree.chain(request.sequence.new_tensor(found[:length], dtype=torch.long))
            elif choice == MODEL:
                paid[row] = DraftRequest(request.sequence, length, request.sampling, request.generator)
            else:
                proposals[row] = DraftTree.empty()
        return proposals | (self.model_drafter.draft(paid) if paid else {})

    def observe(self, verified: dict[int, Verified]) -> None:
        for row, seen in verified.items():
            tested = sum(outcome is not None for outcome in seen.tested)
            choice = self.chosen.pop(row, None)
            if choice == MODEL:
                self.alpha.update(len(seen.path), tested, self.decay)
            elif choice == LOOKUP:
                self.beta.update(len(seen.path), tested, self.decay)
            elif choice == PLAIN:
                self.alpha.drift(self.recovery)
                self.beta.drift(self.recovery)
        self.model_drafter.observe(verified)


@dataclass(frozen=True)
class LookupOrDraftOptions:
    """How lookup and the draft model are weighed."""

    max_ngram: int = field(default=3, metadata={"help": "the longest n-gram looked up"})
    min_ngram: int = field(default=1, metadata={"help": "the shortest n-gram looked up"})
    max_gamma: int = field(default=16, metadata={"help": "the longest round either drafts"})
