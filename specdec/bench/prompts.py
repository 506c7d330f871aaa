"""The built-in prompt suite, in the spirit of Spec-Bench's categories, written for this project.

Speculative decoding's gain depends on the task: a draft (or an n-gram lookup) guesses well when
the output repeats the input (summaries, code edits) and badly when it must invent (open questions,
translation). Each category has a handful of prompts so the dashboard and `specdec bench` can show
that spread. The categories are Spec-Bench's six (multi-turn chat, translation, summarization, question
answering, math, retrieval-augmented generation: an answer from given documents) plus code.

    for prompt in suite(["code", "summarization"]):
        ids = encode_bench_prompt(tokenizer, prompt)   # chat template when the tokenizer has one
"""

from __future__ import annotations

from dataclasses import dataclass

from specdec.errors import SpecdecError
from specdec.pair.running import encode_chat, has_chat_template


@dataclass(frozen=True)
class BenchPrompt:
    category: str
    id: str
    messages: tuple[tuple[str, str], ...]  # (role, content) turns; the last is the user's

    @property
    def text(self) -> str:
        """The prompt as plain text, for models without a chat template."""
        return "\n\n".join(content for _, content in self.messages) + "\n\n"


_ARTICLE = (
    "The city council voted on Tuesday to convert the old rail yard into a public park. The project will "
    "cost about 40 million dollars, paid for by a bond approved by voters last year. Construction starts in "
    "the spring and the first section, with a playground and a community garden, should open within two "
    "years. Some residents worry about traffic on the streets around the park, and the council promised a "
    "study of parking before the second phase begins."
)
_EMAIL = (
    "Hi team, the release planned for Friday moves to next Wednesday. Two tests in the payment module fail "
    "on the new database version, and we need time to fix them and rerun the full suite. Please finish "
    "your open reviews by Monday so we can cut the release branch on Tuesday morning. Thanks, Dana"
)

_LIBRARY = (
    "Document 1: The Riverside Public Library opens at 9 am from Monday to Friday and at 10 am on Saturday. It is "
    "closed "
    "on Sunday. Members may borrow up to eight books at a time for three weeks; a loan can be renewed twice online.\n"
    "Document 2: Late returns cost 20 cents per book per day, up to a maximum of 5 dollars per book. Children's books "
    "have no late fees. Lost books are charged at their replacement price plus a 3 dollar processing fee."
)
_BATTERY = (
    "Document 1: The X200 vacuum cleaner runs for 45 minutes on a full charge in normal mode and 15 minutes in turbo "
    "mode. Charging from empty takes 4 hours with the included charger.\n"
    "Document 2: If the X200 stops after a few minutes, clean the filter and check that the brush roll turns freely. "
    "A battery that holds less than half its charge after two years can be replaced; order part number B-17."
)
_TRAIN = (
    "Document 1: Regional trains leave Central Station for the airport every 15 minutes between 5 am and midnight. The "
    "ride takes 22 minutes and a single ticket costs 4 euros 50. Tickets bought on the train cost 2 euros more.\n"
    "Document 2: At night, bus N7 replaces the train. It leaves Central Station every hour on the half hour, takes 40 "
    "minutes to the airport and accepts the same tickets."
)

_SUITE: dict[str, list[tuple[tuple[str, str], ...]]] = {
    "code": [
        (("user", "Write a Python function that checks whether a number is prime."),),
        (("user", "Write a Python function that returns the n-th Fibonacci number iteratively, with a docstring."),),
        (("user", "Write a Python class Stack with push, pop, peek and is_empty methods."),),
        (("user", "Write a function in Python that reverses the words in a sentence, and a test for it."),),
    ],
    "summarization": [
        (("user", f"Summarize the following article in two sentences.\n\n{_ARTICLE}"),),
        (("user", f"Summarize this email in one sentence.\n\n{_EMAIL}"),),
        (("user", f"List the three main facts of this article as bullet points.\n\n{_ARTICLE}"),),
    ],
    "qa": [
        (("user", "Why is the sky blue? Answer in a short paragraph."),),
        (("user", "What is the difference between a list and a tuple in Python?"),),
        (("user", "What causes the seasons on Earth?"),),
    ],
    "math": [
        (("user", "A shop sells pens at 3 dollars each. How much do 17 pens cost? Explain step by step."),),
        (("user", "Solve for x: 3x + 7 = 25. Show your steps."),),
        (("user", "What is the sum of the integers from 1 to 100? Explain how you get it."),),
    ],
    "translation": [
        (("user", "Translate into French: The weather is nice today, so we will walk to the market."),),
        (("user", "Translate into German: Please close the window before you leave the office."),),
        (("user", "Translate into Spanish: My brother is reading a book about the history of Rome."),),
    ],
    "rag": [
        (
            (
                "user",
                f"{_LIBRARY}\n\nUsing only the documents above, answer: how much would I pay if I return two novels "
                "five days late, and how long can I keep a book if I renew it?",
            ),
        ),
        (
            (
                "user",
                f"{_BATTERY}\n\nUsing only the documents above, answer: my X200 stops after ten minutes. What should I "
                "check, and what part do I order if the battery is worn out?",
            ),
        ),
        (
            (
                "user",
                f"{_TRAIN}\n\nUsing only the documents above, answer: how do I get from Central Station to the airport "
                "at 1 am, how long does it take, and what does it cost?",
            ),
        ),
    ],
    "chat": [
        (
            ("user", "I want to learn to cook. Where should I start?"),
            ("assistant", "Start with a few simple dishes you like to eat, such as eggs, pasta and a soup."),
            ("user", "Great. Give me a simple pasta recipe for two people."),
        ),
        (
            ("user", "Can you help me plan a weekend trip?"),
            ("assistant", "Of course. Where would you like to go, and what do you enjoy doing?"),
            ("user", "A quiet town near the sea. I like walking and good food."),
        ),
        (
            ("user", "What is a good name for a grey cat?"),
            ("assistant", "Some ideas: Smoke, Ash, Pebble, Earl Grey or Misty."),
            ("user", "I like Pebble. Write a two-line poem about Pebble the cat."),
        ),
    ],
}

CATEGORIES: tuple[str, ...] = tuple(_SUITE)


def suite(categories: list[str] | tuple[str, ...] | None = None, per_category: int | None = None) -> list[BenchPrompt]:
    """The prompts of the chosen categories (all by default), at most `per_category` of each.

    >>> [p.id for p in suite(["math"], per_category=2)]
    ['math-1', 'math-2']
    """
    chosen = CATEGORIES if categories is None else tuple(categories)
    unknown = [name for name in chosen if name not in _SUITE]
    if unknown:
        raise SpecdecError(f"unknown prompt categories {unknown}: choose from {', '.join(CATEGORIES)}")
    prompts = []
    for category in chosen:
        for index, messages in enumerate(_SUITE[category][:per_category], start=1):
            prompts.append(BenchPrompt(category, f"{category}-{index}", messages))
    return prompts


def encode_bench_prompt(tokenizer, prompt: BenchPrompt):
    """Token ids [1, T]: the chat template over all turns when the tokenizer has one, else plain text."""
    if has_chat_template(tokenizer):
        return encode_chat(tokenizer, prompt.messages)
    return tokenizer(prompt.text, return_tensors="pt").input_ids
