"""The text a head trains on (`specdec.heads.training`): the sequences cut into chunks of at most T tokens (one target
pass each), and the draft vocabulary, the d token ids the head predicts, chosen as the text's most frequent tokens.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import torch

from specdec.engine.inputs import as_ids
from specdec.errors import SpecdecError


def draft_vocabulary(sequences: Sequence[torch.Tensor], size: int, vocab_size: int) -> torch.Tensor:
    """The `size` most frequent token ids of `sequences` (ties to the lower id), filled up with the lowest unseen ids;
    ascending.

    >>> draft_vocabulary([torch.tensor([5, 5, 2, 7])], 3, 10).tolist()
    [2, 5, 7]
    >>> draft_vocabulary([torch.tensor([5, 5])], 3, 10).tolist()       # one seen, two filled in
    [0, 1, 5]
    """
    size = min(size, vocab_size)
    counts = Counter()
    for sequence in sequences:
        counts.update(sequence.tolist())
    chosen = [token for token, _ in sorted(counts.items(), key=lambda item: (-item[1], item[0])) if token < vocab_size][
        :size
    ]
    taken = set(chosen)
    chosen += [token for token in range(vocab_size) if token not in taken][: size - len(chosen)]
    return torch.tensor(sorted(chosen), dtype=torch.long)


def chunks(sequences: Sequence[torch.Tensor], length: int) -> list[torch.Tensor]:
    """Every sequence cut into pieces of at most `length` tokens (pieces under 3 tokens teach nothing and are dropped).

    >>> [c.tolist() for c in chunks([torch.arange(7), torch.arange(2)], 3)]
    [[0, 1, 2], [3, 4, 5]]
    """
    pieces = [
        sequence[start : start + length] for sequence in sequences for start in range(0, sequence.numel(), length)
    ]
    return [piece for piece in pieces if piece.numel() >= 3]


def training_pieces(sequences: Sequence[torch.Tensor | Sequence[int]], length: int) -> list[torch.Tensor]:
    """The chunks the head trains on (each sequence's ids cut into `length` tokens); none at all is an error."""
    pieces = chunks([as_ids(sequence, "each training sequence") for sequence in sequences], length)
    if not pieces:
        raise SpecdecError("no training text: give sequences of at least 3 tokens")
    return pieces
