"""How a benchmark's speculative runs pick gamma: a whole number, or a named schedule, written as a label.

Notation: gamma is the number of drafted tokens per round.

The labels are what the CSV's `schedule` column holds and what `specdec bench --gammas` and the Compare
page ask for; this module is the only one that knows how they are spelled:

    4            a fixed gamma, every round
    stop         the stop rule (`specdec.engine.stop_rule.ConfidenceStop`): draft while another token is worth it
    adaptive     our `AdaptiveGamma` (and transformers' own dynamic schedule for its "assisted-dynamic")
    tree, tree-N the registry's token tree with its defaults, or at most N nodes
    default      what the planner drafts when nothing is named (`specdec.default_drafter`)

Each label is a run spec's drafting (`drafting_of`), which the planner then plans as it plans every door's.

    >>> gamma_labels(fixed=range(2, 5), stop=True, tree_budget=8)
    ('stop', 2, 3, 4, 'tree-8')
    >>> parse_gammas("stop, 4 tree-8")
    ('stop', 4, 'tree-8')
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from specdec import registry
from specdec.engine.inputs import MAX_GAMMA
from specdec.errors import SpecdecError
from specdec.run_spec import Drafting

ADAPTIVE = "adaptive"  # the schedule name of rows whose gamma was chosen round by round
STOP = "stop"  # ... and of rows drafted under the stop rule (`specdec.engine.stop_rule.ConfidenceStop`), a chain
TREE = registry.TREE  # ... and of rows drafted as the registry's token tree; "tree-N": with budget N
DEFAULT = "default"  # ... and of rows drafted as the planner drafts when nothing is named (`specdec.default_drafter`)
# the gamma labels that name a schedule rather than a number (besides the tree labels)
SCHEDULES = (ADAPTIVE, STOP, DEFAULT)


def tree_budget(label: object) -> int | None:
    """The most nodes a tree label's tree may have (0: the tree method's own default), or None when it names no tree.

    >>> tree_budget("tree"), tree_budget("tree-8"), tree_budget("stop"), tree_budget(4)
    (0, 8, None, None)
    """
    if label == TREE:
        return 0
    if (
        isinstance(label, str)
        and label.startswith(TREE + "-")
        and label[len(TREE) + 1 :].isdigit()
        and int(label[len(TREE) + 1 :]) >= 1
    ):
        return int(label[len(TREE) + 1 :])
    return None


def drafting_of(
    label: int | str, chain: str, max_adaptive_gamma: int, options: tuple[tuple[str, str], ...] = ()
) -> Drafting:
    """The run spec's drafting a gamma label asks for, with `chain` the method of the pair's own draft (its chain) and
    `options` that method's options: DEFAULT what the planner drafts when nothing is named, a tree label the registry's
    tree method, STOP the chain under the stop rule, ADAPTIVE the chain under an adaptive gamma, a number a fixed gamma.

    >>> drafting_of("tree-8", "draft-model", 12)
    Drafting(method='tree', gamma=None, options=(('budget', '8'),), corpus=(), adaptive=None)
    >>> drafting_of(ADAPTIVE, "draft-model", 12).adaptive, drafting_of(4, "draft-model", 12).gamma
    (12, 4)
    """
    budget = tree_budget(label)
    if label == DEFAULT:
        return Drafting()
    if budget is not None:
        return Drafting(TREE, options=(("budget", str(budget)),) if budget else ())
    if label == ADAPTIVE:
        return Drafting(chain, options=options, adaptive=max_adaptive_gamma)
    return Drafting(chain, None if label == STOP else int(label), options)


def is_schedule(label: object) -> bool:
    """Whether a gamma label names a schedule ('adaptive', 'stop', 'default', 'tree', 'tree-N') rather than a number."""
    return label in SCHEDULES or tree_budget(label) is not None


def check_gammas(labels: Iterable[object]) -> tuple[int | str, ...]:
    """The labels as given, refused (one line) when empty or when one is neither a schedule nor a whole number 1..64."""
    labels = tuple(labels)
    if not labels or any(
        not is_schedule(label) and not (isinstance(label, int) and 1 <= label <= MAX_GAMMA) for label in labels
    ):
        raise SpecdecError(
            f"gammas must be whole numbers from 1 to {MAX_GAMMA}, '{ADAPTIVE}', '{STOP}', '{DEFAULT}', '{TREE}' or "
            f"'{TREE}-N' (a tree of at most N nodes), got {list(labels)}"
        )
    return labels


def parse_gammas(text: str) -> tuple[int | str, ...]:
    """Labels written on a command line, separated by commas or spaces: numbers become ints."""
    parts = [part for part in re.split(r"[,\s]+", text.strip()) if part]
    try:
        return check_gammas(part if is_schedule(part) else int(part) for part in parts)
    except ValueError as error:
        if isinstance(error, SpecdecError):
            raise
        raise SpecdecError(f"gammas must be whole numbers or schedule names, got '{text}'") from None


def gamma_labels(
    fixed: Iterable[int] = (),
    stop: bool = False,
    adaptive: bool = False,
    tree_budget: int | None = None,
    default: bool = False,
) -> tuple[int | str, ...]:
    """The labels for a set of choices (the Compare page's checkboxes):
    the stop rule, fixed gammas, adaptive, a tree, the default."""
    return check_gammas(
        ((STOP,) if stop else ())
        + tuple(fixed)
        + ((ADAPTIVE,) if adaptive else ())
        + ((f"{TREE}-{tree_budget}",) if tree_budget is not None else ())
        + ((DEFAULT,) if default else ())
    )
