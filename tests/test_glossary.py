"""Every term a chapter uses that a newcomer cannot be expected to know is defined in guide/glossary.md.

`INTRODUCES` lists, chapter by chapter, the terms it brings in (jargon of the field, of a library or of a CPU). Each
must appear in its chapter (so the list stays honest as the text changes) and head an entry of the glossary: a
line `**term** — ...`, or `**term, other term** — ...`, or `**term (symbol)** — ...`. A glossary that lost an entry
fails (the last test).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

GUIDE = Path(__file__).resolve().parents[1] / "guide"

INTRODUCES = {
    "00-intuition.md": [
        "dtype",
        "token",
        "forward pass",
        "greedy decoding",
        "residual distribution",
        "bonus token",
        "target",
        "draft",
    ],
    "01-math.md": [
        "total variation distance",
        "alpha",
        "expected tokens per target pass",
        "temperature",
        "top-k",
        "top-p",
    ],
    "02-algorithm.md": [
        "one-hot",
        "prefill",
        "rollback",
        "round",
        "verification pass",
        "chi-square test",
        "bfloat16",
        "float32",
    ],
    "03-methods.md": [
        "tokenizer",
        "latency",
        "throughput",
        "MT-Bench",
        "Hydra",
        "SAM-Decoding",
        "Spec-Bench",
        "prompt lookup decoding",
        "token tree",
        "Medusa",
        "EAGLE",
        "SGLang",
        "vLLM",
    ],
    "04-trees.md": [
        "stop rule",
        "confidence",
        "calibration",
        "stopping time",
        "oracle bound",
        "token tree",
        "reach",
        "slot",
        "frontier",
        "sampling without replacement",
        "recursive rejection sampling",
        "reader",
        "bfloat16",
    ],
    "05-model-free.md": [
        "fixed candidates",
        "point mass",
        "registry",
        "Token Recycling",
        "adjacency table",
        "lookahead decoding",
        "Jacobi decoding",
        "suffix decoding",
        "suffix trie",
        "self-speculation",
        "layer skipping",
        "Block Influence",
        "Spec-Bench",
        "AVX2",
        "AVX-512",
    ],
    "06-own-vocabulary.md": [
        "cross-entropy",
        "base model",
        "instruct model",
        "point mass",
        "draft head",
        "Medusa",
        "EAGLE",
        "draft vocabulary",
        "d2t",
        "t2d",
        "soft labels",
        "training-time test",
        "ShareGPT",
        "SGLang",
        "vLLM",
        "assisted generation",
    ],
    "07-kernels.md": [
        "quantization",
        "int8",
        "int4",
        "W8A8",
        "GGUF",
        "Q4_K_M",
        "llama.cpp",
        "llama-bench",
        "fbgemm",
        "oneDNN",
        "AVX2",
        "AVX-512",
        "VNNI",
        "AMX",
        "SIGILL",
        "dynamic int8",
        "bfloat16",
        "float32",
        "memory-bound",
    ],
    "08-runtimes.md": [
        "runtime",
        "model contract",
        "batch invariance",
        "ubatch",
        "repacking",
        "use_extra_bufts",
        "Q4_K",
        "Q6_K",
        "Q5_0",
        "Q8_0",
        "tinyBLAS",
        "flash attention",
        "split-KV",
        "sequence id",
        "self-test",
        "OpenMP",
        "passive wait",
        "GGUF",
        "compute-bound",
        "memory-bound",
    ],
    "09-batches.md": ["ragged batch", "batch invariance", "compact", "KV cache", "vLLM", "rollback"],
}
CHECK_IN_CHAPTER = {
    "ragged batch": "ragged",
    "instruct model": "instruct",
    "tokenizer": "tokenizer",
    "passive wait": "passive",
    "repacking": "repack",
    "point mass": "point mass",
    "fixed candidates": "fixed candidate",
    "layer skipping": "skip",
    "suffix trie": "trie",
    "sampling without replacement": "without replacement",
    "recursive rejection sampling": "recursive rejection sampling",
    "stopping time": "stopping time",
    "alpha": "alpha",
    "temperature": "temperature",
    "compute-bound": "bound",
    "memory-bound": "bound",
    "chi-square test": "chi-square",
    "float32": "float32",
    "Jacobi decoding": "Jacobi",
    "lookahead decoding": "lookahead",
    "prompt lookup decoding": "prompt lookup",
    "suffix decoding": "suffix decoding",
    "self-speculation": "self-speculation",
    "expected tokens per target pass": "tokens per",
    "total variation distance": "total variation",
    "verification pass": "verification pass",
    "residual distribution": "residual",
    "forward pass": "pass",
    "greedy decoding": "greedy",
    "KV cache": "cache",
    "training-time test": "training-time test",
    "draft head": "head",
    "soft labels": "soft labels",
    "sequence id": "sequence id",
    "dynamic int8": "dynamic int8",
    "oracle bound": "oracle bound",
    "assisted generation": "assisted generation",
    "compact": "compact",
    "rollback": "roll",
    "round": "round",
    "stop rule": "stop rule",
    "confidence": "confidence",
    "calibration": "calibrat",
    "reach": "reach",
    "slot": "slot",
    "frontier": "frontier",
    "reader": "reader",
    "adjacency table": "adjacency table",
    "Block Influence": "Block Influence",
    "self-test": "self-test",
    "model contract": "model contract",
    "runtime": "runtime",
    "batch invariance": "batch-invariant|batch invariance",
    "top-k": "top-k",
    "top-p": "top-p",
}


def glossary_heads(text: str) -> set[str]:
    """Every name an entry heads with: '**Q4_K, Q6_K** — ...' gives
    {'q4_k', 'q6_k'}; '**alpha (α)**' gives {'alpha', 'α'}."""
    heads = set()
    for head in re.findall(r"^\*\*(.+?)\*\* — ", text, flags=re.MULTILINE):
        for name in re.split(r",\s*|\s*\(|\)", head):
            name = name.strip().lower()
            if name:
                heads.add(name)
                heads.add(name.removeprefix("the "))
    return heads


def glossary_problems(glossary: str, introduces: dict[str, list[str]], chapters: dict[str, str]) -> list[str]:
    heads = glossary_heads(glossary)
    problems = []
    for chapter, terms in introduces.items():
        for term in terms:
            used = CHECK_IN_CHAPTER.get(term, re.escape(term))
            if not re.search(used, re.sub(r"\s+", " ", chapters[chapter]), flags=re.IGNORECASE):
                problems.append(f"{chapter} no longer uses {term!r}: take it off INTRODUCES")
            if term.lower() not in heads:
                problems.append(
                    f"{chapter} uses {term!r}, which guide/glossary.md does not define (add '**{term}** — ...')"
                )
    return problems


def read(name: str) -> str:
    return (GUIDE / name).read_text(encoding="utf-8")


def test_every_chapter_is_listed():
    assert sorted(INTRODUCES) == sorted(path.name for path in GUIDE.glob("[0-9][0-9]-*.md"))


@pytest.mark.parametrize("chapter", sorted(INTRODUCES))
def test_every_term_a_chapter_introduces_is_in_the_glossary(chapter):
    problems = glossary_problems(read("glossary.md"), {chapter: INTRODUCES[chapter]}, {chapter: read(chapter)})
    assert not problems, "\n".join(problems)


def test_the_issues_terms_are_defined():
    """Issue 51's list, term by term."""
    heads = glossary_heads(read("glossary.md"))
    for term in (
        "ubatch",
        "GGUF",
        "Q4_K",
        "Q6_K",
        "Q5_0",
        "Q8_0",
        "Q4_K_M",
        "repacking",
        "use_extra_bufts",
        "tinyBLAS",
        "split-KV",
        "flash attention",
        "passive wait",
    ):
        assert term.lower() in heads, term


def test_the_glossary_check_can_fail():
    glossary = read("glossary.md")
    broken = re.sub(r"^\*\*ubatch\*\* — .*$", "", glossary, flags=re.MULTILINE)
    assert broken != glossary
    problems = glossary_problems(broken, {"08-runtimes.md": ["ubatch"]}, {"08-runtimes.md": read("08-runtimes.md")})
    assert problems == [
        "08-runtimes.md uses 'ubatch', which guide/glossary.md does not define (add '**ubatch** — ...')"
    ]
    assert glossary_problems(glossary, {"08-runtimes.md": ["quux"]}, {"08-runtimes.md": read("08-runtimes.md")})
