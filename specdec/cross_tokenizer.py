"""Drafts with another tokenizer: a small model of another family proposes tokens for the target.

Notation: p is the target, q the draft, gamma the number of drafted tokens per round.

The accept/reject rule is exact for *any* q, as long as each proposed token x was drawn from the q
reported for it and q is a distribution over the target's vocabulary (`specdec.verification`). So
a draft with another tokenizer only has to turn its own next-token distribution into one over the
target's ids. This drafter uses the token-level intersection of the two vocabularies (Timor et al.
2025, "Lossless speculative decoding algorithms for heterogeneous vocabularies", algorithm TLI;
transformers' universal speculative decoding does the same):

    1. Match vocabularies once: a draft id d and a target id t are the same token when they spell
       the same string (`token_strings`). Draft ids with no twin are never proposed.
    2. Every round, decode the target's text and encode it with the draft's tokenizer; the draft's
       KV cache keeps the longest prefix it already holds and reads the rest in one pass.
    3. Each draft step: the draft's logits on its matched ids are moved to their twins' target ids
       (every other target id gets -inf), then warped and sampled exactly as a same-tokenizer draft
       would: q is now a proper distribution over the target's vocabulary, and the token drawn is
       a target id. Its twin d is what the draft reads next.

Why it is exact: the target only ever sees target ids with the q they were drawn from, and the rule
needs nothing more. The vocabulary match, the re-encoding and the draft's own tokenization affect
which tokens are proposed and how often they are accepted, never the output. Greedy decoding keeps
the target's own greedy tokens for the same reason.

What it costs: a draft can only propose tokens both vocabularies share. A target token the draft
has no single twin for (Qwen2.5's " fileobj" when the draft splits it) is never proposed; the
target then produces it itself, as the resampled or bonus token.

    >>> vocabulary_map(target_strings=["a", "b", "ab"], draft_strings=["b", "ab", "c"])   # (draft ids, target ids)
    (tensor([0, 1]), tensor([1, 2]))
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from specdec.drafters import Draft, confidence
from specdec.errors import SpecdecError
from specdec.kv_cache import CachedModel
from specdec.sampling import SamplingConfig, choose_next


def token_strings(tokenizer: PreTrainedTokenizerBase, size: int) -> list[str | None]:
    """The text each id 0..size-1 stands for in running text, or None where it is not whole characters.

    Each id is decoded after an anchor token and the anchor's text is cut off, so decoders that drop
    the leading space of a text's first token (SentencePiece's) still give " the" for "▁the". Ids
    that decode to pieces of a multi-byte character (U+FFFD) or to nothing get None.
    """
    anchor = tokenizer.encode("a", add_special_tokens=False)[:1]
    pairs = [anchor + [i] for i in range(size)]
    decoded = tokenizer.batch_decode(pairs, skip_special_tokens=False, clean_up_tokenization_spaces=False)
    prefix = tokenizer.decode(anchor, skip_special_tokens=False, clean_up_tokenization_spaces=False)
    strings: list[str | None] = []
    for i, text in enumerate(decoded):
        if text.startswith(prefix):
            text = text[len(prefix):]
        else:                                   # the anchor merged with the token: decode it alone
            text = tokenizer.decode([i], skip_special_tokens=False, clean_up_tokenization_spaces=False)
        strings.append(text if text and "\ufffd" not in text else None)
    return strings


def vocabulary_map(target_strings: list[str | None], draft_strings: list[str | None]) -> tuple[torch.Tensor, torch.Tensor]:
    """(draft_ids [M], target_ids [M]): the ids spelling the same string in both vocabularies, one twin each.

    Where several ids spell one string, the lowest id of each side is kept.
    """
    target_ids: dict[str, int] = {}
    for t, text in enumerate(target_strings):
        if text is not None:
            target_ids.setdefault(text, t)
    pairs: dict[int, int] = {}                  # target id -> draft id
    for d, text in enumerate(draft_strings):
        t = target_ids.get(text) if text is not None else None
        if t is not None and t not in pairs:
            pairs[t] = d
    draft = torch.tensor([pairs[t] for t in sorted(pairs)], dtype=torch.long)
    target = torch.tensor(sorted(pairs), dtype=torch.long)
    order = draft.argsort()
    return draft[order], target[order]


def match_vocabularies(draft_tokenizer: PreTrainedTokenizerBase, target_tokenizer: PreTrainedTokenizerBase,
                       draft_rows: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(draft_ids [M], target_ids [M]) spelling the same strings; draft ids below `draft_rows` (the draft's logits) only."""
    draft_size = min(draft_rows or len(draft_tokenizer), len(draft_tokenizer))
    draft_ids, target_ids = vocabulary_map(token_strings(target_tokenizer, len(target_tokenizer)),
                                           token_strings(draft_tokenizer, draft_size))
    if draft_ids.numel() == 0:
        raise SpecdecError("the draft's and the target's vocabularies share no token: this draft cannot propose anything")
    return draft_ids, target_ids


class CrossTokenizerDrafter:
    """A draft model with its own tokenizer, proposing target ids through the shared vocabulary.

        drafter = CrossTokenizerDrafter(smollm2, smollm2_tokenizer, qwen_tokenizer)
        speculative_generate(qwen, drafter, input_ids, temperature=0)   # exactly qwen's greedy tokens

    Matching the vocabularies decodes every id of both (about a second for 150k-token
    vocabularies); pass `vocabulary=match_vocabularies(...)` to reuse one match for many drafters.
    """

    reports_confidence = True   # propose() takes keep_drafting (specdec.stop_rule)

    def __init__(self, draft_model: PreTrainedModel, draft_tokenizer: PreTrainedTokenizerBase,
                 target_tokenizer: PreTrainedTokenizerBase, name: str | None = None,
                 vocabulary: tuple[torch.Tensor, torch.Tensor] | None = None) -> None:
        self.model = draft_model
        self.draft_tokenizer, self.target_tokenizer = draft_tokenizer, target_tokenizer
        self.name = name or getattr(draft_model.config, "_name_or_path", "") or type(draft_model).__name__
        draft_rows = draft_model.get_output_embeddings().out_features
        self.vocabulary = vocabulary or match_vocabularies(draft_tokenizer, target_tokenizer, draft_rows)
        self.start(torch.empty(0, dtype=torch.long), len(target_tokenizer))
        self.passes = 0

    @property
    def shared_tokens(self) -> int:
        """How many tokens the draft can propose: the size of the vocabularies' intersection."""
        return self.draft_ids.numel()

    def start(self, prompt: torch.Tensor, vocab_size: int) -> None:
        draft_ids, target_ids = self.vocabulary
        fits = target_ids < vocab_size                                  # ids the target's logits cover
        device = self.model.device
        self.draft_ids, self.target_ids = draft_ids[fits].to(device), target_ids[fits].to(device)
        self.twin = dict(zip(self.target_ids.tolist(), self.draft_ids.tolist()))   # target id -> draft id
        self.vocab_size = vocab_size
        self.cached = CachedModel(self.model)
        self.held: list[int] = []   # the draft ids in the draft's cache, in order
        self.passes = 0

    def draft_text(self, sequence: torch.Tensor) -> list[int]:
        """The draft's ids for the target's text `sequence` [n]: decoded by one tokenizer, encoded by the other."""
        text = self.target_tokenizer.decode(sequence.tolist(), skip_special_tokens=False, clean_up_tokenization_spaces=False)
        return self.draft_tokenizer.encode(text, add_special_tokens=False)

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
        device = self.model.device
        tokens, distributions = [], []
        for _ in range(gamma):
            draft_logits = self.cached.feed(torch.tensor(pending, device=device), keep=1)[0]   # [V_draft]
            self.held += pending
            logits = draft_logits.new_full((self.vocab_size,), float("-inf"))                   # [V], the target's ids
            logits[self.target_ids] = draft_logits[self.draft_ids]
            token, q = choose_next(logits, sampling, generator)       # a target id, q over the target's vocabulary
            tokens.append(token)
            distributions.append(q)
            pending = [self.twin[token]]                               # the draft reads its own twin next
            if keep_drafting is not None and not keep_drafting(confidence(logits, token, q)):
                break
        self.passes = self.cached.passes
        drafted = sequence.new_tensor(tokens, dtype=torch.long)        # [k]
        q = None if sampling.greedy or not tokens else torch.stack(distributions)   # [k, V]
        return Draft(drafted, q)

    def rollback(self, length: int) -> None:
        pass  # the next propose() re-encodes the accepted text and keeps the cache's valid prefix
