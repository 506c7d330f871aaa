"""Tiny causal LMs and a tiny tokenizer, built from configs in the tests: nothing is downloaded.

The output layer is drawn with a large standard deviation ("sharpened") so the next-token
distributions are peaked and two models built with different seeds really disagree: p and q then
differ enough that the accept/reject rule is exercised in both directions.
"""

from __future__ import annotations

from pathlib import Path

import torch
from transformers import (
    Gemma3ForCausalLM,
    Gemma3TextConfig,
    GPT2Config,
    GPT2LMHeadModel,
    LlamaConfig,
    LlamaForCausalLM,
    PreTrainedTokenizerFast,
    Qwen2Config,
    Qwen2ForCausalLM,
)

ARCHITECTURES = ("gpt2", "llama", "qwen2")
SLIDING_WINDOW = 6  # the tiny Gemma 3's local layers see the last 6 tokens


def tiny_model(
    architecture: str = "gpt2",
    vocab_size: int = 24,
    seed: int = 0,
    sharpness: float = 3.0,
    hidden_size: int = 32,
    layers: int = 2,
    max_positions: int = 256,
) -> torch.nn.Module:
    """A randomly initialised causal LM in float32 and eval mode."""
    torch.manual_seed(seed)
    if architecture == "gpt2":
        config = GPT2Config(
            vocab_size=vocab_size,
            n_embd=hidden_size,
            n_layer=layers,
            n_head=2,
            n_positions=max_positions,
            tie_word_embeddings=False,
            bos_token_id=None,
            eos_token_id=None,
        )
        model = GPT2LMHeadModel(config)
    elif architecture in ("llama", "qwen2"):
        config_class, model_class = (
            (LlamaConfig, LlamaForCausalLM) if architecture == "llama" else (Qwen2Config, Qwen2ForCausalLM)
        )
        config = config_class(
            vocab_size=vocab_size,
            hidden_size=hidden_size,
            intermediate_size=2 * hidden_size,
            num_hidden_layers=layers,
            num_attention_heads=2,
            num_key_value_heads=1,
            max_position_embeddings=max_positions,
            tie_word_embeddings=False,
            bos_token_id=None,
            eos_token_id=None,
            pad_token_id=None,
        )
        model = model_class(config)
    elif architecture == "gemma3":  # local (sliding-window) and global layers alternate, like Gemma 2/3
        config = Gemma3TextConfig(
            vocab_size=vocab_size,
            hidden_size=hidden_size,
            intermediate_size=2 * hidden_size,
            num_hidden_layers=max(layers, 4),
            num_attention_heads=2,
            num_key_value_heads=1,
            head_dim=16,
            query_pre_attn_scalar=16,
            sliding_window=SLIDING_WINDOW,
            sliding_window_pattern=2,
            max_position_embeddings=max_positions,
            initializer_range=0.3,
            tie_word_embeddings=False,
            bos_token_id=None,
            eos_token_id=None,
            pad_token_id=None,
        )
        # initializer_range 0.3: a tiny Gemma that does not fall into one repeated token
        model = Gemma3ForCausalLM(config)
    else:
        raise ValueError(f"unknown architecture {architecture}")
    with torch.no_grad():
        head = model.get_output_embeddings()
        head.weight.normal_(0.0, sharpness / hidden_size**0.5)
    return model.float().eval()


def tiny_tokenizer(vocab_size: int = 24) -> PreTrainedTokenizerFast:
    """A whitespace word-level tokenizer: ids 0 and 1 are <s> and </s>, then words w2, w3, ..."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    vocab = {"<s>": 0, "</s>": 1} | {f"w{i}": i for i in range(2, vocab_size - 1)} | {"<unk>": vocab_size - 1}
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    backend.decoder = decoders.WordPiece(prefix="##")  # joins words with spaces
    return PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<s>", eos_token="</s>", unk_token="<unk>")


def save_tiny_model(folder: Path, model: torch.nn.Module, chat_template: str | None = None) -> Path:
    """Write `model` and a matching tiny tokenizer to `folder` (what `load_model(folder)` reads)."""
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    tokenizer = tiny_tokenizer(model.config.vocab_size)
    if chat_template:
        tokenizer.chat_template = chat_template
    tokenizer.save_pretrained(folder)
    return folder


def tiny_pair(
    architecture: str = "gpt2",
    vocab_size: int = 24,
    seed: int = 0,
    noise: float = 0.5,
    draft_vocab_size: int | None = None,
) -> tuple[torch.nn.Module, torch.nn.Module]:
    """(target, draft): the draft is the target with every weight perturbed, so they agree often but not always.

    With `draft_vocab_size` the draft gets a different number of output rows (ids shared below the
    smaller size), like Qwen2.5 sizes that share a tokenizer.
    """
    target = tiny_model(architecture, vocab_size, seed)
    draft = tiny_model(architecture, draft_vocab_size or vocab_size, seed)
    generator = torch.Generator().manual_seed(seed + 1000)
    with torch.no_grad():
        target_params = dict(target.named_parameters())
        for name, parameter in draft.named_parameters():
            source = target_params[name]
            rows = min(source.shape[0], parameter.shape[0])
            parameter[:rows] = source[:rows]
            scale = float(parameter.std()) if parameter.numel() > 1 else 1.0
            parameter.add_(noise * scale * torch.randn(parameter.shape, generator=generator))
        if draft_vocab_size is not None and draft_vocab_size < vocab_size:
            # like the padding rows of a real checkpoint: ids the target (almost) never predicts
            target.get_output_embeddings().weight[draft_vocab_size:] = 0.0
    return target, draft


# Two tokenizers over the same four characters, for drafts with another tokenizer: byte-pair
# merges ("ab", " a", "cab" ...) differ, so a text splits differently in each; 8 strings are shared.
TARGET_PIECES = ["<s>", "</s>", "a", "b", "c", " ", "ab", " a", "ca", "abc", " ab", "bb", "cc", "ba", " c", "cab"]
TARGET_MERGES = [
    ("a", "b"),
    (" ", "a"),
    ("c", "a"),
    ("ab", "c"),
    (" a", "b"),
    ("b", "b"),
    ("c", "c"),
    ("b", "a"),
    (" ", "c"),
    ("c", "ab"),
]
DRAFT_PIECES = [" ", "c", "b", "a", "</s>", "<s>", "aa", "bc", " b", "ca", "cc", "b ", "ac", "a "]
DRAFT_MERGES = [("a", "a"), ("b", "c"), (" ", "b"), ("c", "a"), ("c", "c"), ("b", " "), ("a", "c"), ("a", " ")]
# The target's pieces renumbered (reversed) without "abc" and "cab": texts with those split differently.
NEAR_PIECES = [piece for piece in reversed(TARGET_PIECES) if piece not in ("abc", "cab")]
NEAR_MERGES = [merge for merge in TARGET_MERGES if "".join(merge) not in ("abc", "cab")]


def tiny_bpe_tokenizer(pieces: list[str], merges: list[tuple[str, str]]) -> PreTrainedTokenizerFast:
    """A byte-pair tokenizer with the given pieces (ids in list order) and merges; decoding joins pieces as they are."""
    from tokenizers import Tokenizer, decoders, models

    backend = Tokenizer(models.BPE(vocab={piece: i for i, piece in enumerate(pieces)}, merges=merges))
    backend.decoder = decoders.Fuse()
    return PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<s>", eos_token="</s>")


def borrowed_draft(
    target: torch.nn.Module, target_pieces: list[str], draft_pieces: list[str], noise: float = 0.0, seed: int = 0
) -> torch.nn.Module:
    """A draft for another tokenizer that knows what the target knows: the target's weights, each piece's
    embedding and output rows moved to the draft's id for that piece (pieces the target lacks get
    random rows), plus `noise` (relative) on every weight."""
    import copy

    draft = copy.deepcopy(target)
    draft.resize_token_embeddings(len(draft_pieces))
    rows = {piece: i for i, piece in enumerate(target_pieces)}
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for layer, source in (
            (draft.get_input_embeddings(), target.get_input_embeddings()),
            (draft.get_output_embeddings(), target.get_output_embeddings()),
        ):
            for d, piece in enumerate(draft_pieces):
                if piece in rows:
                    layer.weight[d] = source.weight[rows[piece]]
                else:
                    layer.weight[d] = source.weight.std() * torch.randn(source.weight.shape[1], generator=generator)
        for parameter in draft.parameters():
            scale = float(parameter.std()) if parameter.numel() > 1 else 1.0
            parameter.add_(noise * scale * torch.randn(parameter.shape, generator=generator))
    return draft.eval()


def target_cache_as(monkeypatch, target: torch.nn.Module, cache_type) -> None:
    """Runs on `target` build its cache as `cache_type(model, rows)` (a checking, recording or broken cache); every
    other model's cache (the drafts') is built as usual. Passes still count on the target's model
    (`TorchModel.passes`)."""
    from specdec.runtime.pytorch.torch_model import TorchModel

    rows_of = TorchModel.rows

    def rows(self, rows, output_rows=None):
        if self.module is not target:
            return rows_of(self, rows, output_rows)
        cache = cache_type(self.module, list(rows))
        cache.on_pass = self._counted
        return cache

    monkeypatch.setattr(TorchModel, "rows", rows)
