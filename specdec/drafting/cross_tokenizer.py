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
from collections.abc import Callable

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from specdec.engine.contract import Capabilities, ChainMethods, Draft, Generation
from specdec.drafting.draft_model import check_draft_model, model_name
from specdec.errors import SpecdecError
from specdec.engine.kv_cache import CachedModel
from specdec.engine.sampling import SamplingConfig, probabilities, sample


def retokenize(ids: list[int], source: PreTrainedTokenizerBase, destination: PreTrainedTokenizerBase) -> list[int]:
    """`ids` of `source` as `destination` reads the same text: decoded by one tokenizer, encoded by the other."""
    text = source.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)
    return destination.encode(text, add_special_tokens=False)


def whole_character_tokens(tokenizer: PreTrainedTokenizerBase, size: int) -> torch.Tensor:
    """[size] bool: which ids 0..size-1 decode to whole characters (not a lone byte of a multi-byte one, not nothing).

    Only those are drawn by a cross-tokenizer draft, so its text always re-encodes cleanly.
    """
    texts = tokenizer.batch_decode([[i] for i in range(size)], skip_special_tokens=False, clean_up_tokenization_spaces=False)
    return torch.tensor([bool(text) and "\ufffd" not in text for text in texts])


class CrossTokenizerDrafter(ChainMethods):
    """A draft model with its own tokenizer: it drafts text, the target's tokenizer cuts it into proposals.

        drafter = CrossTokenizerDrafter(smollm2, smollm2_tokenizer, qwen_tokenizer)
        speculative_generate(qwen, drafter, input_ids, temperature=0)   # exactly qwen's greedy tokens

    Finding the draft tokens that are whole characters decodes its vocabulary once (0.35 s for
    SmolLM2's 49,152 tokens on this project's CPU, `load_pair`'s "draft vocabulary" time); pass
    `whole=whole_character_tokens(...)` to reuse it for many drafters, as `LoadedPair` does.
    """

    reports_confidence = True   # propose() takes keep_drafting (specdec.engine.stop_rule)

    def __init__(self, draft_model: PreTrainedModel, draft_tokenizer: PreTrainedTokenizerBase,
                 target_tokenizer: PreTrainedTokenizerBase, name: str | None = None, whole: torch.Tensor | None = None) -> None:
        self.model = draft_model
        self.draft_tokenizer, self.target_tokenizer = draft_tokenizer, target_tokenizer
        self.name = name or model_name(draft_model)
        self.capabilities = Capabilities(reports_confidence=True, draft_model=draft_model)
        rows = draft_model.get_output_embeddings().out_features
        if whole is None:
            whole = whole_character_tokens(draft_tokenizer, min(rows, len(draft_tokenizer)))
        self.whole = torch.zeros(rows, dtype=torch.bool)                   # [V_draft]; ids past the tokenizer: never
        self.whole[:min(rows, whole.numel())] = whole[:rows]
        self.whole = self.whole.to(draft_model.device)
        if not self.whole.any():
            raise SpecdecError("no token of the draft's vocabulary decodes to whole characters: this draft cannot propose anything")
        self.start(torch.empty(0, dtype=torch.long), len(target_tokenizer))

    def begin(self, generation: Generation) -> None:
        check_draft_model(self.model, generation, same_tokenizer=False)
        self.start(generation.prompt, generation.vocab_size)

    def start(self, prompt: torch.Tensor, vocab_size: int) -> None:
        self.vocab_size = vocab_size
        self.cached = CachedModel(self.model)
        self.held: list[int] = []   # the draft ids in the draft's cache, in order
        self.passes = 0

    def draft_text(self, sequence: torch.Tensor) -> list[int]:
        """Step 1: the draft's ids for the target's text `sequence` [n]."""
        return retokenize(sequence.tolist(), self.target_tokenizer, self.draft_tokenizer)

    def propose(self, sequence: torch.Tensor, gamma: int, sampling: SamplingConfig, generator: torch.Generator | None,
                keep_drafting: Callable[[float], bool] | None = None) -> Draft:
        wanted = self.draft_text(sequence)
        if not wanted:
            return Draft(sequence.new_empty(0), None)                   # nothing the draft can read yet
        same = 0
        for held, want in zip(self.held, wanted):                      # the cache's prefix still valid
            if held != want:
                break
            same += 1
        same = min(same, len(wanted) - 1)                               # feed at least one token
        self.cached.rollback(same)
        self.held = self.held[:same]
        pending = wanted[same:]
        drafted: list[int] = []            # draft tokens
        proposal: list[int] = []           # their text in target tokens
        for _ in range(2 * gamma):                                      # a draft token may hold less than a target token
            draft_logits = self.cached.feed(torch.tensor(pending, device=self.model.device), keep=1)[0]   # [V_draft]
            self.held += pending
            logits = draft_logits.float().masked_fill(~self.whole, float("-inf"))      # [V_draft]
            if sampling.greedy:
                q_draft = logits.softmax(-1)
                d = int(logits.argmax())
            else:
                q_draft = probabilities(logits[None], sampling)[0]
                d = int(sample(q_draft[None], generator))
            drafted.append(d)
            text = self.draft_tokenizer.decode(drafted, skip_special_tokens=False, clean_up_tokenization_spaces=False)
            proposal = self.target_tokenizer.encode(text, add_special_tokens=False)     # step 3
            if keep_drafting is not None and not keep_drafting(float(q_draft[d])):
                break                                                   # the stop rule: propose what there is
            if len(proposal) > gamma:                                   # gamma tokens that can no longer grow
                break
            pending = [d]                                               # the draft reads its own token next
        proposal = list(itertools.takewhile(lambda t: t < self.vocab_size, proposal[:gamma]))   # ids the target's logits cover
        self.passes = self.cached.passes
        tokens = sequence.new_tensor(proposal, dtype=torch.long)       # [k]
        if sampling.greedy or not proposal:
            return Draft(tokens, None)
        q = torch.zeros(len(proposal), self.vocab_size, device=sequence.device)   # [k, V] point masses
        q[torch.arange(len(proposal)), tokens] = 1.0
        return Draft(tokens, q)

    def rollback(self, length: int) -> None:
        pass  # the next propose() re-encodes the accepted text and keeps the cache's valid prefix
