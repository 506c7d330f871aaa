"""A trained head on disk: the layout vLLM and SGLang load for EAGLE-3, with a manifest of checksums.

    DIR/config.json          LlamaForCausalLMEagle3: one decoder layer, hidden_size, draft_vocab_size,
                             eagle_aux_hidden_state_layer_ids (the target layers it fuses), and a
                             "specdec" block (the target's layer count and name)
    DIR/model.safetensors    fc.weight, midlayer.*, norm.weight, lm_head.weight, d2t, t2d (the names of
                             SafeAILab/EAGLE and SpecForge; vLLM maps midlayer. to model.layers.0.)
    DIR/training/            a checkpoint's extras: optimizer.pt (AdamW's state), progress.json
    DIR/specdec-manifest.json  the store's manifest: size and SHA-256 of every file above (`specdec.store`)

The folder is written whole (`specdec.store.new_folder`: built beside it, then renamed into place; a
crash leaves the old head or the new one, never a mix of their files), and `load_head` refuses, in one
line, a folder whose files do not match its manifest; the manifest's stamps spare a load from hashing
the files again (425 MB for the 1.5B's head) while they are unchanged. A head an earlier specdec saved
(its manifest `manifest.json`, SHA-256s only) loads too: it is checked once against that manifest,
which is then replaced by the store's. A published EAGLE-3 checkpoint (no manifest) loads too: `midlayer.`
or `layers.0.` names, `embed_tokens.weight` ignored (the target's own table is used).

    save_head(head, "heads/qwen")      # then: vllm serve Qwen/Qwen2.5-Coder-1.5B-Instruct \\
    #  --speculative-config '{"method": "eagle3", "model": "heads/qwen", "num_speculative_tokens": 4}'
    head = load_head("heads/qwen")

Not handled: heads with more than one decoder layer, checkpoints in pickle (.bin) format.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file

from specdec.heads.head import EagleHead, HeadConfig
from specdec.errors import SpecdecError
from specdec.runtime import transformers_model
from specdec.store import MANIFEST, cache_dir, check_folder, file_sha256, new_folder, settle, write_manifest
from specdec.zoo.safetensors_writer import write_safetensors

WEIGHTS, CONFIG, TRAINING = "model.safetensors", "config.json", "training"
OLD_MANIFEST = "manifest.json"  # {"files": {name: sha256}}: the manifest of heads saved before `specdec.store`


def heads_dir() -> Path:
    """Where `specdec heads train` keeps heads by default: the model cache's `heads/` folder."""
    return cache_dir() / "heads"


def is_head(name: str) -> bool:
    """Whether a draft name means a trained head: `eagle` (the target's, in the cache) or a folder holding one.

    >>> is_head("eagle"), is_head("qwen2.5-coder-0.5b")
    (True, False)
    """
    if name == "eagle":
        return True
    path = Path(name)
    return path.is_dir() and (path / CONFIG).is_file() and "Eagle3" in (path / CONFIG).read_text()[:4000]


def trained_head(target_name: str) -> Path | None:
    """The folder of the head `specdec heads train` made for `target_name` in the cache, or None."""
    folder = settle(heads_dir() / Path(target_name).name)
    return folder if (folder / CONFIG).is_file() and (folder / WEIGHTS).is_file() else None


def find_head(name: str, target_name: str) -> Path:
    """The folder of the head a draft name means; one line saying how to make it when there is none."""
    if name != "eagle":
        return Path(name)
    folder = trained_head(target_name)
    if folder is None:
        raise SpecdecError(
            f"no EAGLE head is trained for {target_name} yet: run `specdec heads train --target {target_name} "
            "--minutes 30` (or give a head's folder as the draft)"
        )
    return folder


def load_for_target(name: str, target_name: str, target: object, weights: str = "auto") -> EagleHead:
    """The head a draft name means (`eagle`: the one trained for `target_name`; else a head's folder), bound to `target`
    (a model behind `specdec.engine.model` with internals), its linear layers in `weights` ("auto": int8 on a CPU, where
    c falls and the output stays)."""
    from specdec.kernels.quantization import quantize_linears

    if not target.traits.internals:
        raise SpecdecError(
            f"an EAGLE head reads the target's hidden states, which the {target.traits.runtime} runtime does not give: "
            "run it on the torch runtime (--runtime torch)"
        )
    head = load_head(find_head(name, target_name), transformers_model(target, "an EAGLE head"))
    chosen = ("int8" if target.device.type == "cpu" else "none") if weights == "auto" else weights
    quantize_linears(head, chosen)
    return head


def vllm_config(config: HeadConfig, dtype: torch.dtype) -> dict:
    """The config.json vLLM reads for an EAGLE-3 draft (`LlamaForCausalLMEagle3`), plus our own block."""
    return {
        "architectures": ["LlamaForCausalLMEagle3"],
        "model_type": "llama",
        "num_hidden_layers": 1,
        "hidden_size": config.hidden_size,
        "intermediate_size": config.intermediate_size,
        "hidden_act": "silu",
        "num_attention_heads": config.num_attention_heads,
        "num_key_value_heads": config.num_key_value_heads,
        "head_dim": config.head_dim,
        "rms_norm_eps": config.rms_norm_eps,
        "rope_theta": config.rope_theta,
        "max_position_embeddings": config.max_position_embeddings,
        "vocab_size": config.vocab_size,
        "draft_vocab_size": config.draft_vocab_size,
        "target_hidden_size": config.hidden_size,
        "eagle_aux_hidden_state_layer_ids": list(config.layers),
        "tie_word_embeddings": False,
        "torch_dtype": str(dtype).removeprefix("torch."),
        "specdec": {"target": config.target, "target_layers": config.target_layers},
    }


def head_tensors(head: EagleHead) -> dict[str, torch.Tensor]:
    """The head's tensors under the names EAGLE-3 checkpoints use (the bound target's embedding is not among them)."""
    return {name: tensor.detach().contiguous() for name, tensor in head.state_dict().items()}


def save_head(head: EagleHead, folder: str | Path, training: dict | None = None, optimizer: dict | None = None) -> Path:
    """Write `head` to `folder` in vLLM's EAGLE-3 layout, whole (it replaces what was there); `training`/`optimizer`: a
    checkpoint's extras. A folder that holds something other than a head is refused, not replaced."""
    folder = settle(folder)
    if folder.is_dir() and any(folder.iterdir()) and not _holds_a_head(folder):
        raise SpecdecError(
            f"{folder} holds files that are not a head: save the head into an empty folder or a head's folder"
        )
    with new_folder(folder) as work:
        sha256 = {WEIGHTS: write_safetensors(head_tensors(head), work / WEIGHTS)}
        (work / CONFIG).write_text(json.dumps(vllm_config(head.config, head.dtype), indent=2))
        if training is not None or optimizer is not None:
            (work / TRAINING).mkdir()
        if training is not None:
            (work / TRAINING / "progress.json").write_text(json.dumps(training, indent=2))
        if optimizer is not None:
            torch.save(optimizer, work / TRAINING / "optimizer.pt")
        write_manifest(work, known=sha256)
    return folder


def load_head(folder: str | Path, target: torch.nn.Module | None = None) -> EagleHead:
    """Read a head saved by `save_head` (checked against its manifest)
    or a published EAGLE-3 checkpoint; bound to `target` if given."""
    folder = settle(folder)
    if not (folder / CONFIG).is_file() or not (folder / WEIGHTS).is_file():
        raise SpecdecError(
            f"{folder} does not hold a head (config.json and model.safetensors): train one with "
            "`specdec heads train --target NAME --out DIR`"
        )
    check_manifest(folder)
    try:
        raw = json.loads((folder / CONFIG).read_text())
        tensors = {
            _our_name(name): tensor
            for name, tensor in load_file(str(folder / WEIGHTS)).items()
            if "embed_tokens" not in name
        }
    except (ValueError, SafetensorError, OSError) as error:
        raise SpecdecError(f"{folder} holds a head that cannot be read ({error}): train it again") from None
    head = EagleHead(config_from(raw, tensors))
    missing, unexpected = head.load_state_dict(tensors, strict=False)
    if missing or unexpected:
        raise SpecdecError(
            f"{folder} is not an EAGLE-3 head of this layout: missing {sorted(missing)[:3]}, unexpected "
            f"{sorted(unexpected)[:3]}"
        )
    if target is None:
        return head.eval()
    return head.to(next(target.parameters()).device).bind(target).eval()


def load_training(folder: str | Path) -> tuple[dict, dict] | None:
    """A checkpoint's (progress, optimizer state) to resume from, or None when the folder has none."""
    folder = settle(folder)
    progress, optimizer = folder / TRAINING / "progress.json", folder / TRAINING / "optimizer.pt"
    if not progress.is_file() or not optimizer.is_file():
        return None
    check_manifest(folder)  # the stamps make a second check (by `load_head`) cost nothing
    return json.loads(progress.read_text()), torch.load(optimizer, weights_only=True)


def check_manifest(folder: Path) -> None:
    """Refuse, in one line, a folder whose files do not match its manifest (no manifest: a published head)."""
    if not (folder / MANIFEST).is_file():
        if not (folder / OLD_MANIFEST).is_file():
            return
        _upgrade_old_manifest(folder)
    problem = check_folder(folder)
    if problem is not None:
        raise SpecdecError(f"{folder}: {problem} (corrupted or half-written): train the head again or copy it anew")


def _upgrade_old_manifest(folder: Path) -> None:
    """Check a head an earlier specdec saved against its own manifest ({"files": {name: sha256}}), hashing each file
    once, then record it in the store's manifest instead (so later loads need not hash it again)."""
    try:
        recorded = json.loads((folder / OLD_MANIFEST).read_text())["files"]
    except (OSError, ValueError, KeyError, TypeError):
        raise SpecdecError(f"{folder}/{OLD_MANIFEST} is damaged: train the head again") from None
    for name, sha256 in recorded.items():
        if not (folder / name).is_file() or file_sha256(folder / name) != sha256:
            raise SpecdecError(
                f"{folder}: {name} does not match its checksum (corrupted or half-written): train the head "
                "again or copy it anew"
            )
    write_manifest(folder, known=recorded, files=sorted(recorded))
    (folder / OLD_MANIFEST).unlink()


def _holds_a_head(folder: Path) -> bool:
    return any((folder / name).is_file() for name in (MANIFEST, OLD_MANIFEST)) or is_head(str(folder))


def config_from(raw: dict, tensors: dict[str, torch.Tensor]) -> HeadConfig:
    """A `HeadConfig` from an EAGLE-3 config.json (ours or a
    published one); layers unknown until bound default to vLLM's."""
    ours = raw.get("specdec", {})
    hidden, heads = raw["hidden_size"], raw["num_attention_heads"]
    target_layers = ours.get("target_layers") or 0
    layers = tuple(raw.get("eagle_aux_hidden_state_layer_ids") or ())  # () until bound: vLLM's default for the target
    return HeadConfig(
        hidden_size=hidden,
        intermediate_size=raw["intermediate_size"],
        num_attention_heads=heads,
        num_key_value_heads=raw.get("num_key_value_heads") or heads,
        head_dim=raw.get("head_dim") or hidden // heads,
        vocab_size=raw["vocab_size"],
        draft_vocab_size=raw.get("draft_vocab_size") or raw["vocab_size"],
        layers=layers,
        target_layers=target_layers,
        rms_norm_eps=raw.get("rms_norm_eps", 1e-6),
        rope_theta=float(raw.get("rope_theta", 10000.0)),
        max_position_embeddings=raw.get("max_position_embeddings", 32768),
        target=ours.get("target", ""),
    )


def _our_name(name: str) -> str:
    return name.replace("layers.0.", "midlayer.").removeprefix("model.")
