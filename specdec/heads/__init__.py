"""Trained draft heads: training an EAGLE-3 head on the target's own passes, and heads on disk.

- `training`: `train_head(target, sequences, steps=..., minutes=...)`, the training-time test, progress
- `files`: `save_head`/`load_head` in the layout vLLM and SGLang load (`"method": "eagle3"`), checksummed

The head's network lives with the drafters (`specdec.drafting.eagle_head`), the drafter that runs it
in `specdec.drafting.eagle`; this layer adds what needs data and disk.
"""
