"""Lab 5 (chapter 5), a solution: Token Recycling's table and tree."""


def remember(table: list[list[int]], rows: list[int], top: list[list[int]], kept: list[int]) -> None:
    order = [i for i in range(len(rows)) if i not in set(kept)] + list(kept)  # the accepted path last: it wins
    latest = {}
    for i in order:
        latest[rows[i]] = i  # one write per token: the last one
    for token, i in latest.items():
        table[token] = list(top[i])


def recycle(table: list[list[int]], root: int, template: list[list[int]], limit: int) -> tuple[list[int], list[int]]:
    placed = {(): (-1, root)}  # template path -> (node, token); the root first
    tokens, parents = [], []
    for path in map(tuple, template):
        if len(path) > limit:
            break  # breadth-first: every later path is as deep or deeper
        if path[:-1] not in placed:
            continue  # its parent was left out: so is it
        parent_node, parent_token = placed[path[:-1]]
        candidate = table[parent_token][path[-1]]
        if candidate < 0:
            continue  # the target never read this token
        placed[path] = (len(tokens), candidate)
        tokens.append(candidate)
        parents.append(parent_node)
    return tokens, parents
