"""The average sentence of each chapter, in words: `python guide/sentence_lengths.py`.

The course aims for at most 25 words a sentence on average in every chapter. Counted on the prose the reading time
counts (`reading_time.prose`: code blocks and link targets out), with tables and display formulas left out too; a
sentence ends at '.', '!' or '?' followed by a capital, a parenthesis, '*', '`' or '$'; a bullet or heading without a
full stop runs into the next sentence, so the counts are a little high where a chapter lists much.

    >>> sentence_words("One two three. Four five!  Six?")
    [3, 2, 1]
"""

from __future__ import annotations

import re

from reading_time import CHAPTERS, GUIDE, prose

TARGET = 25


def sentence_words(text: str) -> list[int]:
    """The number of words of each sentence of `text` (prose)."""
    text = re.sub(r"^\|.*\|[ \t]*$", "", text, flags=re.MULTILINE)
    text = re.sub(r"^\$\$.*?^\$\$", "", text, flags=re.MULTILINE | re.DOTALL)
    flat = re.sub(r"\s+", " ", text).strip()
    return [len(sentence.split()) for sentence in re.split(r"(?<=[.!?])\s+(?=[A-Z(*`$])", flat) if sentence.split()]


def main() -> None:
    for name in CHAPTERS:
        words = sentence_words(prose((GUIDE / name).read_text(encoding="utf-8")))
        mean = sum(words) / len(words)
        print(
            f"{name:24s} {len(words):4d} sentences, {mean:5.1f} words on average, {sum(w > 40 for w in words):3d} over "
            "40"
            f"{'' if mean <= TARGET else '   (over ' + str(TARGET) + ')'}"
        )


if __name__ == "__main__":
    main()
