"""Drafts with another tokenizer: a small model of another family proposes text for the target.

Notation: p is the target, q the draft, gamma the number of drafted tokens per round.

The accept/reject rule is exact for *any* proposal, as long as each proposed token x is drawn from
the q reported for it, given everything the drafter did before (`specdec.engine.verification`). A draft
with another tokenizer therefore drafts *text*, and the target's tokenizer turns it into proposals:

    1. Every round, decode the target's text and encode it with the draft's tokenizer; the draft's
       KV cache keeps the longest prefix it already holds and reads the rest in one pass.
    2. The draft drafts tokens of its own, one pass each: its top token when greedy, a draw from
       its distribution (warped like p) when sampling. Tokens that are not whole characters (a
       lone byte of a multi-byte character) are never drawn.
    3. The drafted text is encoded with the target's tokenizer. Those target tokens are the
       proposal, at most gamma of them; while more text could still merge into the last one
       (SmolLM2's "):" may become Qwen's "):\n"), the draft goes on or the last one is left out.
       Each proposed token has a point mass for its q (q = 1 on the token), as prompt lookup's do.

Why it is exact. Greedy: verification keeps the target's own top token at every position, whatever
was proposed. Sampling: once the draft has made its draws, every proposed token x is fixed, so a
point mass is exactly the distribution it was drawn from. The rule then keeps x with probability
p(x) and otherwise draws from p with x removed, renormalized, and

    P(output = y) = p(x) [y = x] + (1 - p(x)) * p(y) / (1 - p(x)) [y != x] = p(y).

Nothing about the tokenizers, the re-encoding or the draft's draws enters the output: they only
change what is proposed and how often it is kept.

What it costs: with a point mass a sampled token is kept with probability p(x), where the usual
rule with the draft's real q keeps min(1, p(x) / q(x)); the same for a confident target, lower for
an unsure one. The known alternative keeps the real q: draft only tokens that both vocabularies
spell alike (the token-level intersection, TLI, of Timor et al. 2025, "Lossless speculative
decoding algorithms for heterogeneous vocabularies"; transformers' universal speculative decoding
samples that way). It proposes one target token per draft token and so misses wherever the two
tokenizers cut text differently: Qwen2.5 writes "):\n" as one token, SmolLM2 "):" and then "\n    ",
so the intersection's "):" is rejected where re-encoded text offers Qwen its own "):\n". Code is
full of such boundaries, which is why this module re-encodes text.
"""

from __future__ import annotations

import itertools

import torch
from transformers import PreTrainedTokenizerBase

from specdec.drafting.draft_model import check_draft_model
from specdec.engine.model import Rows
from specdec.runtime import as_model
from specdec.engine.contract import Capabilities, DraftRequest, Generation, Verified
from specdec.engine.sampling import SamplingConfig, probabilities, sample
from specdec.engine.trees import DraftTree
from specdec.errors import SpecdecError


def retokenize(ids: list[int], source: PreTrainedTokenizerBase, destination: PreTrainedTokenizerBase) -> list[int]:
    """`ids` of `source` as `destination` reads the same text: decoded by one tokenizer, encoded by the other."""
    text = source.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)
    return destination.encode(text, add_special_tokens=False)


def whole_character_tokens(tokenizer: PreTrainedTokenizerBase, size: int) -> torch.Tensor:
    """[size] bool: which ids 0..size-1 decode to whole characters (not a lone byte of a multi-byte one, not nothing).

    Only those are drawn by a cross-tokenizer draft, so its text always re-encodes cleanly.
    """
    texts = tokenizer.batch_decode(
        [[i] for i in range(size)], skip_special_tokens=False, clean_up_tokenization_spaces=False
    )
    return torch.tensor([bool(text) and "\ufffd" not in text for text in texts])


class CrossTokenizerDrafter:
    """A draft model with its own tokenizer: it drafts text, the target's tokenizer cuts it into proposals.

        drafter = CrossTokenizerDrafter(smollm2, smollm2_tokenizer, qwen_tokenizer)
        speculative_generate(qwen, drafter, input_ids, temperature=0)   # exactly qwen's greedy tokens

    Finding the draft tokens that are whole characters decodes its vocabulary once (0.35 s for
    SmolLM2's 49,152 tokens on this project's CPU, `load_pair`'s "draft vocabulary" time); pass
    `whole=whole_character_tokens(...)` to reuse it for many drafters, as `LoadedPair` does. Several
    texts draft together, one draft pass per step for every row still drafting (as `ModelDrafter`).
    """

    capabilities = Capabilities(reports_confidence=True)

    def __init__(
        self,
        draft_model: object,
        draft_tokenizer: PreTrainedTokenizerBase,
        target_tokenizer: PreTrainedTokenizerBase,
        name: str | None = None,
        whole: torch.Tensor | None = None,
    ) -> None:
        self.model = self.draft_model = as_model(draft_model)
        self.draft_tokenizer, self.target_tokenizer = draft_tokenizer, target_tokenizer
        self.name = name or self.model.name
        rows = self.model.vocab_size
        if whole is None:
            whole = whole_character_tokens(draft_tokenizer, min(rows, len(draft_tokenizer)))
        self.whole = torch.zeros(rows, dtype=torch.bool)  # [V_draft]; ids past the tokenizer: never
        self.whole[: min(rows, whole.numel())] = whole[:rows]
        self.whole = self.whole.to(self.model.device)
        if not self.whole.any():
            raise SpecdecError(
                "no token of the draft's vocabulary decodes to whole characters: this draft cannot propose anything"
            )
        self.vocab_size = len(target_tokenizer)
        self.cache: Rows | None = None
        self.held: dict[int, list[int]] = {}  # per row: the draft ids in the draft's cache, in order

    def begin(self, generation: Generation) -> None:
        check_draft_model(self.model, generation, same_tokenizer=False)
        self.vocab_size = generation.vocab_size
        self.cache = self.model.rows(list(generation.prompts))
        self.held = {row: [] for row in generation.prompts}

    def draft_text(self, sequence: torch.Tensor) -> list[int]:
        """Step 1: the draft's ids for the target's text `sequence` [n]."""
        return retokenize(sequence.tolist(), self.target_tokenizer, self.draft_tokenizer)

    def draft(self, requests: dict[int, DraftRequest]) -> dict[int, DraftTree]:
        """Steps 1-3 for every row: at most `limit` target tokens
        of drafted text after the row's text, fixed candidates."""
        pending: dict[int, list[int]] = {}  # per row: draft ids its cache has not read yet
        for row, request in requests.items():
            wanted = self.draft_text(request.sequence)
            if wanted:  # (nothing the draft can read yet: the row drafts nothing)
                pending[row] = wanted[self._keep_prefix(row, wanted) :]
        drafted: dict[int, list[int]] = {row: [] for row in pending}  # draft tokens
        proposals: dict[int, list[int]] = {row: [] for row in requests}  # their text in target tokens
        drafting = set(pending)
        while drafting:
            logits, _ = self.cache.feed(
                [
                    torch.tensor(pending[row], device=self.model.device) if row in drafting else None
                    for row in self.cache.rows
                ],
                last=1,
            )  # [B, 1, V_draft]
            for i, row in enumerate(self.cache.rows):
                if row not in drafting:
                    continue
                request = requests[row]
                self.held[row] += pending[row]
                d, confidence = self._draw(logits[i, -1], request.sampling, request.generator)
                drafted[row].append(d)
                text = self.draft_tokenizer.decode(
                    drafted[row], skip_special_tokens=False, clean_up_tokenization_spaces=False
                )
                proposals[row] = self.target_tokenizer.encode(text, add_special_tokens=False)  # step 3
                pending[row] = [d]  # the draft reads its own token next
                if (
                    (request.keep_drafting is not None and not request.keep_drafting(confidence))
                    or len(proposals[row]) > request.limit
                    or len(drafted[row]) == 2 * request.limit
                ):
                    drafting.discard(row)  # the stop rule, gamma tokens that can no longer grow, or enough draft tokens
        return {row: self._proposal(proposals[row], request) for row, request in requests.items()}

    def observe(self, verified: dict[int, Verified]) -> None:
        """Nothing to cut: the next round re-encodes the accepted text and keeps the cache's valid prefix."""
        self.cache.compact([row for row in self.cache.rows if not (row in verified and verified[row].finished)])

    def _keep_prefix(self, row: int, wanted: list[int]) -> int:
        """Cut the row's cache to its longest prefix still valid
        for `wanted` (feeding at least one token); its length."""
        same = 0
        for held, want in zip(self.held[row], wanted):
            if held != want:
                break
            same += 1
        same = min(same, len(wanted) - 1)
        self.cache.rollback(row, same)
        self.held[row] = self.held[row][:same]
        return same

    def _draw(
        self, draft_logits: torch.Tensor, sampling: SamplingConfig, generator: torch.Generator | None
    ) -> tuple[int, float]:
        """Step 2: a whole-character draft token from logits [V_draft] (the top one when greedy), and its q."""
        logits = draft_logits.float().masked_fill(~self.whole, float("-inf"))  # [V_draft]
        if sampling.greedy:
            q_draft = logits.softmax(-1)
            d = int(logits.argmax())
        else:
            q_draft = probabilities(logits[None], sampling)[0]
            d = int(sample(q_draft[None], generator))
        return d, float(q_draft[d])

    def _proposal(self, proposal: list[int], request: DraftRequest) -> DraftTree:
        # ids the target covers
        proposal = list(itertools.takewhile(lambda t: t < self.vocab_size, proposal[: request.limit]))
        # [k], each a point mass (q=None)
        return DraftTree.chain(request.sequence.new_tensor(proposal, dtype=torch.long))
