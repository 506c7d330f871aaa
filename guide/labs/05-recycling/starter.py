"""Lab 5 (chapter 5): Token Recycling's adjacency table, and the tree it drafts, in plain Python.

`table` is a list of V lists of k token ids: table[x] is the target's k likeliest tokens after x, best first, the last
time it read x; -1 where it never did. Grade your copy with

    cp guide/labs/05-recycling/starter.py my_recycling.py        # work on a copy; this file stays as it is
    python guide/labs/grade.py 05-recycling my_recycling.py
"""


def remember(table: list[list[int]], rows: list[int], top: list[list[int]], kept: list[int]) -> None:
    """File one pass into the table, in place.

    `rows[i]` is the token the pass's row i read (the text's rows, then the tree's nodes), `top[i]` the target's k
    likeliest tokens after it, best first; `kept` the indices of the rows the rule kept (the text and the accepted
    nodes). Every row read is filed, the rejected ones too; when a token was read by several rows, the row filed
    last wins, and the kept rows are filed after the others (so the accepted path wins), each group in row order.
    """
    raise NotImplementedError("remember")


def recycle(table: list[list[int]], root: int, template: list[list[int]], limit: int) -> tuple[list[int], list[int]]:
    """The tree drafted after `root`: (tokens, parents), nodes numbered in order, parents -1 for the root.

    Walk `template` in its order (breadth-first: paths of candidate indices, [0, 1] is the 2nd candidate after the
    1st candidate after the root). A path deeper than `limit` ends the walk. A path whose parent was not placed is
    skipped, and so is a path whose candidate is -1 (the table knows nothing after that token).
    """
    raise NotImplementedError("recycle")
