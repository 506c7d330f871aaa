"""Lab 4 (chapter 4), a solution: the token tree's growth rule, greedy, step by step."""

import numpy as np


def acceptance(confidence: float, hits: np.ndarray, tests: np.ndarray) -> float:
    b = min(int(confidence * 10), 9)  # the confidence's bin
    return float((hits[b] + 4 * confidence**0.5) / (tests[b] + 4))  # the prior sqrt(q), worth 4 tests


def grow(
    draft, c: float, beta: float, hits: np.ndarray, tests: np.ndarray, width: int = 3, budget: int = 16, depth: int = 12
) -> tuple[list[int], list[int], int]:
    def a(q: float) -> float:
        return acceptance(q, hits, tests)

    tokens, parents, reach, confidence, path = [], [], [], [], {-1: ()}
    frontier, laws, passes = [-1], {-1: draft(())}, 1  # 1. one pass reads the text
    for level in range(depth):
        E, T = 1 + sum(reach), passes * c + 1 + beta * len(tokens)
        room = min(width, budget - len(tokens), len(laws[-1]))
        slots = []  # 2. every frontier node's slots
        for i, f in enumerate(frontier):
            R = 1.0 if f == -1 else reach[f]
            slots += [(R * a(q), i) for q in sorted(laws[f], reverse=True)[:room] if q > 0]
        slots = sorted(slots, reverse=True)[:room]  # 3. the best first
        children = {f: 0 for f in frontier}
        for rank, (worth, i) in enumerate(slots):  # 4. while each pays
            if not (level == 0 and rank == 0) and worth * T <= E * beta:
                break
            children[frontier[i]] += 1
            E, T = E + worth, T + beta
        new = []
        for f in frontier:  # 5. the children, numbered in order
            for x in np.argsort(-laws[f], kind="stable")[: children[f]]:
                new.append(len(tokens))
                tokens.append(int(x))
                parents.append(f)
                confidence.append(float(laws[f][x]))
                reach.append((1.0 if f == -1 else reach[f]) * a(float(laws[f][x])))
                path[new[-1]] = path[f] + (int(x),)
        if not new or level + 1 == depth or len(tokens) == budget:  # 6.
            break
        best = sorted(new, key=lambda n: -reach[n])[:width]  # 7. another level?
        G = sum(reach[n] * a(confidence[n]) for n in best)
        E, T = 1 + sum(reach), passes * c + 1 + beta * len(tokens)
        if G * T <= E * (c + beta * len(best)):
            break
        passes += 1  # 8. one pass over all the new nodes
        laws |= {n: draft(path[n]) for n in new}
        frontier = new
    return tokens, parents, passes
