"""Lab 9 (chapter 9), a solution: batched bookkeeping with one length per row."""

import numpy as np


def batch_round(buffer: np.ndarray, lengths: np.ndarray, gamma: int, limit: int, draft_next, target_next) -> None:
    for b in range(len(lengths)):
        if lengths[b] >= limit:
            continue  # this row is done; the others go on
        text = buffer[b, : lengths[b]].tolist()
        drafts: list[int] = []
        for _ in range(gamma):
            drafts.append(draft_next(text + drafts))
        kept = 0
        while kept < gamma and drafts[kept] == target_next(text + drafts[:kept]):
            kept += 1
        new = (drafts[:kept] + [target_next(text + drafts[:kept])])[: limit - lengths[b]]
        buffer[b, lengths[b] : lengths[b] + len(new)] = new  # at this row's end
        lengths[b] += len(new)  # one length per row
