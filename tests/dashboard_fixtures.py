"""Fixtures for the dashboard's tests: tiny models in the catalogue, and a small guide.

    path = write_tiny_catalogue(tmp_path)        # then SPECDEC_EXTRA_MODELS=path
    folder = write_guide(tmp_path / "guide")     # then SPECDEC_GUIDE_DIR=folder

It adds three models and two pairs, all built from configs (nothing is downloaded):

- tiny-target and tiny-draft (the draft is the target with perturbed weights, see tiny_models.py),
  paired as "tiny-draft->tiny-target", and "prompt-lookup->tiny-target";
- tiny-other, with a different vocabulary, to provoke "different tokenizers".

The tokenizers have no end-of-sequence token, so every run produces exactly max_new_tokens
tokens, whatever the prompt (the built-in prompts are English, all unknown words here). The
target has a chat template, so the chat path runs too.
"""

from __future__ import annotations

import json
from pathlib import Path

from tiny_models import tiny_model, tiny_pair, tiny_tokenizer

TINY_PAIR = "tiny-draft->tiny-target"
TINY_LOOKUP_PAIR = "prompt-lookup->tiny-target"
CHAT_TEMPLATE = "{% for message in messages %}{{ message['content'] }} {% endfor %}"


def _save(folder: Path, model, chat_template: str | None = None) -> str:
    """Write `model` and a tiny tokenizer without an end-of-sequence token."""
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    tokenizer = tiny_tokenizer(model.config.vocab_size)
    tokenizer.eos_token = None
    if chat_template:
        tokenizer.chat_template = chat_template
    tokenizer.save_pretrained(folder)
    return str(folder)


def write_tiny_catalogue(folder: Path) -> Path:
    """Save the tiny models under `folder` and return the JSON file that adds them to the catalogue."""
    target, draft = tiny_pair("llama")
    models = [
        {
            "name": "tiny-target",
            "path": _save(folder / "tiny-target", target, CHAT_TEMPLATE),
            "family": "tiny",
            "chat": True,
        },
        {"name": "tiny-draft", "path": _save(folder / "tiny-draft", draft), "family": "tiny"},
        {
            "name": "tiny-other",
            "path": _save(folder / "tiny-other", tiny_model("llama", vocab_size=30, seed=3)),
            "family": "other",
        },
    ]
    pairs = [
        {"draft": "tiny-draft", "target": "tiny-target", "description": "tiny test pair"},
        {"draft": "prompt-lookup", "target": "tiny-target", "description": "tiny target with the n-gram draft"},
    ]
    path = folder / "extra-models.json"
    path.write_text(json.dumps({"models": models, "pairs": pairs}))
    return path


CHAPTER_0 = """# Welcome to the guide

Alpha, the chance a tested draft is kept, is $\\alpha = \\sum_x \\min(p(x), q(x))$, and a round yields

$$\\frac{1 - \\alpha^{\\gamma + 1}}{1 - \\alpha}$$

tokens on average.

![One round, drawn](figures/round.svg)

<details><summary>Solution</summary>

The answer is 42.

</details>
"""


def write_guide(folder: Path) -> Path:
    """Two chapters (the first with math, a figure, a solution block and a PDF) and an explainer page."""
    (folder / "pdf").mkdir(parents=True)
    (folder / "figures").mkdir()
    (folder / "figures" / "round.svg").write_text('<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>')
    (folder / "00-welcome.md").write_text(CHAPTER_0)
    (folder / "01-rounds.md").write_text("# Rounds\n\nA round drafts gamma tokens.\n")
    (folder / "pdf" / "00-welcome.pdf").write_bytes(b"%PDF-1.4 fixture")
    (folder / "explainer.html").write_text("<html><body><p id='fixture'>explainer fixture</p></body></html>")
    return folder
