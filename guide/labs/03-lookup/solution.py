"""Lab 3 (chapter 3), a solution: prompt lookup."""


def lookup(text: list[int], gamma: int, max_ngram: int = 3, min_ngram: int = 1) -> list[int]:
    for n in range(min(max_ngram, len(text) - 1), min_ngram - 1, -1):  # the longest tail first
        tail = text[-n:]
        for start in range(len(text) - n - 1, -1, -1):  # the most recent occurrence first
            if text[start : start + n] == tail:
                return text[start + n : start + n + gamma]
    return []
