"""Every negative control has the runs it needs: its broken rule fails the chi-square test at p < 1e-3 with power 0.999.

The effects D (how far each broken rule moves the distribution) were measured once (`distribution_check.EFFECTS`);
this checks the run counts the tests really use against them, so lowering a count below what its control needs
fails here, in the fast tier, before a weakened test can pass unnoticed.
"""

import test_batches
import test_cross_tokenizer
import test_trees
from distribution_check import EFFECTS, LLAMA_RUNS, RUNS, power

CONTROLS = {  # the effect, and the runs its test uses
    "accept always, a draft model (3,000)": RUNS,
    "skip the residual, a draft model (3,000)": RUNS,
    "skip the residual, a draft with another tokenizer (3,000)": test_cross_tokenizer.CROSS_RUNS,
    "accept always, a draft with another tokenizer (3,000)": test_cross_tokenizer.CROSS_RUNS,
    "skip the residual, layer skipping (3,000)": RUNS,
    "skip the residual, a quantized target (3,000)": RUNS,
    "no correction between sibling guesses, a tree (3,000)": test_trees.RUNS,
    "only the most probable child, a tree (3,000)": test_trees.RUNS,
    "fixed candidates against the wrong row, Token Recycling (1,500)": RUNS,
    "a rejected candidate left in the draw, lookahead (1,500)": RUNS,
    "a rejected candidate left in the draw, suffix decoding (1,500)": RUNS,
    "a rejected candidate left in the draw, a drafter in a test file (1,500)": RUNS,
    "one count for a batch's cache, the weakest of 3 rows (1,500 each)": test_batches.RUNS,
    "skip the residual, a draft model on the llama.cpp runtime (1,500)": LLAMA_RUNS,
}


def test_every_negative_control_has_the_runs_to_fail():
    assert set(CONTROLS) == set(EFFECTS)
    for name, runs in CONTROLS.items():
        effect, df = EFFECTS[name]
        assert power(runs, effect, df) >= 0.999, (name, runs, power(runs, effect, df))


def test_the_power_calculation_says_no_to_too_few_runs():
    effect, df = EFFECTS["skip the residual, a draft with another tokenizer (3,000)"]
    assert power(3000, effect, df) < 0.7  # what the cross-tokenizer test had before it was sized
