"""Lab 9 (chapter 9): a batch with ragged acceptance, cache-free: one token buffer, one length per row.

`buffer` is a numpy int array [B, W]; row b's text (prompt and everything accepted so far) is
buffer[b, :lengths[b]], and the rest of the row is free space. The models are greedy and take one row's
text as a list of ints: `draft_next(text)` and `target_next(text)` return the next token. Grade your copy with

    cp guide/labs/09-batch/starter.py my_batch.py        # work on a copy; this file stays as it is
    python guide/labs/grade.py 09-batch my_batch.py
"""

import numpy as np


def batch_round(buffer: np.ndarray, lengths: np.ndarray, gamma: int, limit: int, draft_next, target_next) -> None:
    """One round for every row whose text is shorter than `limit` tokens, in place.

    Each such row: the draft proposes gamma tokens after the row's text; the target keeps them from the left
    while each equals target_next of the text before it; then the target's own token is added (its
    correction, or the bonus token after gamma kept). Write the new tokens at the row's own end, never past
    `limit` tokens in all (prompt included), and advance that row's length by what it wrote.
    """
    raise NotImplementedError("batch_round")
