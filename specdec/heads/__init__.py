"""Trained draft heads: training an EAGLE-3 head on the target's own passes, and heads on disk.

- `training`: `train_head(target, sequences, steps=..., minutes=...)`, the training-time test, progress
- `files`: `save_head`/`load_head` in the layout vLLM and SGLang load (`"method": "eagle3"`), checksummed

The head's network lives with the drafters (`specdec.heads.head`), the drafter that runs it
in `specdec.heads.reader`; this layer adds what needs data and disk.
"""
