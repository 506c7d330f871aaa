"""Where the drafters lived before `specdec.drafting`; kept so that older imports keep working.

    from specdec.drafters import ModelDrafter, PromptLookupDrafter, Draft    # the same classes as specdec.drafting's
"""

from specdec.drafting.contract import ChainDrafter, Draft, Drafter  # noqa: F401
from specdec.drafting.draft_model import ModelDrafter, confidence  # noqa: F401
from specdec.drafting.prompt_lookup import PromptLookupDrafter  # noqa: F401
