"""The lessons' classic bugs: the engine's own pieces broken on purpose, so the lessons and the tests' negative
controls show exactly what each mistake does to the output.

Notation: p is the target, q the draft, gamma the drafted tokens per round.

    rules.py        the exact output distribution of each classic mistake at one position, and the broken rules
                    themselves
                    (`rules.warp` borrows the engine's warping, so the lessons warp exactly as a run does)
    trees.py        the same for token trees
    candidates.py   the same for fixed candidates (point masses: the model-free drafters)
    batches.py      one count for a whole batch's cache, run through the engine's own loop

This layer sits above the engine (it breaks the engine's pieces) and below the drafting methods; the correct rule, its
formulas and statistics are `specdec.reference`, below the engine, in NumPy.
"""
