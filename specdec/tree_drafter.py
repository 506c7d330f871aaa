"""Where `TreeDrafter` lived before `specdec.drafting`; kept so that older imports keep working."""

from specdec.drafting.tree_drafter import TreeDrafter, TreeSettings  # noqa: F401
