"""A batch on the real pair, checked row by row against transformers' `generate`: the batch issue's exactness goal.

Loads the zoo's Qwen2.5-Coder 0.5B -> 1.5B (float32 by default: the float model itself), runs the prompts as one batch
with speculative decoding (the draft model, chains with the stop rule) and with plain decoding, and holds every row
to the target's own greedy continuation from `model.generate(do_sample=False)` run on that prompt alone.

    #  4 built-in prompts of different lengths, 128 tokens
    python benchmarks/batch_exactness.py
    python benchmarks/batch_exactness.py --prompts my-prompts.txt      # one prompt per line
    #  `specdec run`'s default precision
    python benchmarks/batch_exactness.py --quantization auto --draft-quantization auto

Exit code 0 when every row is identical, 1 otherwise; one line per row either way.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

PROMPTS = [
    "Write a Python function that checks whether a number is prime.",
    "Translate to French: the cat sleeps.",
    "Summarize in two sentences: speculative decoding lets a small model draft tokens that a large model verifies in "
    "one "
    "pass, and a modified rejection rule keeps the output exactly the large model's, so the text is the same, only "
    "faster.",
    "What is 17 * 23?",
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--prompts", type=Path, default=None, help="a text file, one prompt per line (default: 4 built-in)"
    )
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--quantization", default="none")
    parser.add_argument("--draft-quantization", default="none")
    args = parser.parse_args(argv)

    import torch

    from specdec.engine.inputs import Decoding
    from specdec.pair.running import encode_prompt, generate_plain_batch, generate_speculative_batch
    from specdec.pair.loading import load_pair

    texts = (
        [line.strip() for line in args.prompts.read_text().splitlines() if line.strip()] if args.prompts else PROMPTS
    )
    pair = load_pair(
        "qwen2.5-coder-1.5b",
        "qwen2.5-coder-0.5b",
        device="cpu",
        dtype=args.dtype,
        quantization=args.quantization,
        draft_quantization=args.draft_quantization,
    )
    prompts = [encode_prompt(pair.tokenizer, text, chat=True)[0] for text in texts]
    decoding = Decoding(max_new_tokens=args.max_new_tokens, temperature=0)
    started = time.perf_counter()
    speculative = generate_speculative_batch(pair, prompts, decoding)
    plain = generate_plain_batch(pair, prompts, decoding)
    print(
        f"{pair.precisions}; batch of {len(prompts)} ({', '.join(str(p.numel()) for p in prompts)} prompt tokens), "
        f"{args.max_new_tokens} new tokens, batches in {time.perf_counter() - started:.0f} s"
    )
    same = True
    for row, (prompt, spec, own) in enumerate(zip(prompts, speculative, plain)):
        with torch.inference_mode():
            output = pair.target.generate(
                prompt[None],
                attention_mask=torch.ones_like(prompt[None]),
                do_sample=False,
                max_new_tokens=args.max_new_tokens,
                eos_token_id=pair.eos_token_ids or None,
                pad_token_id=(pair.eos_token_ids or [0])[0],
            )
        reference = output[0, prompt.numel() :].tolist()
        identical = spec.tokens == reference and own.tokens == reference
        same &= identical
        print(
            f"row {row}: {prompt.numel()} prompt tokens, {len(reference)} new; speculative "
            f"{'identical' if spec.tokens == reference else 'DIFFERS'}, plain batch "
            f"{'identical' if own.tokens == reference else 'DIFFERS'} "
            f"to generate; {spec.stats.tokens_per_target_pass:.2f} tokens per target pass"
        )
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
