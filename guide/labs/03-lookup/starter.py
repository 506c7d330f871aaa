"""Lab 3 (chapter 3): prompt lookup, drafting without a draft model.

Find the most recent earlier occurrence of the text's last n tokens, for n from max_ngram down to
min_ngram (the longest tail that occurred before wins), and propose up to gamma tokens that followed it.
Grade your copy with

    cp guide/labs/03-lookup/starter.py my_lookup.py        # work on a copy; this file stays as it is
    python guide/labs/grade.py 03-lookup my_lookup.py
"""


def lookup(text: list[int], gamma: int, max_ngram: int = 3, min_ngram: int = 1) -> list[int]:
    """Up to `gamma` tokens that followed the most recent earlier occurrence of the longest matching tail.

    lookup([7, 8, 9, 4, 5, 7, 8], 3) == [9, 4, 5]    ("7 8" occurred before, followed by 9 4 5)
    An occurrence must start before the tail itself does, and may overlap it; no occurrence: [].
    """
    raise NotImplementedError("lookup")
