"""EAGLE-3 heads: exact drafting from the target's hidden states, training that helps, heads on disk in vLLM's layout.

Against the trusted references, on tiny targets built from configs:
- greedy output equals the target's own `generate` (three architectures), end-of-sequence and max_new_tokens honoured;
- the sampled distribution equals the target's (chi-square against enumeration) at temperature 1.0 and at 0.7 with
  top-k, with a draft vocabulary smaller than the target's; a drafter that reports q over the draft vocabulary
  unmapped (the draft ids read as target ids) fails the same test;
- training on a few thousand tokens lowers the loss and raises tokens per target pass (both asserted);
- save/load is bit-identical and drafts the same text; the file layout's names and shapes are the ones vLLM's
  EAGLE-3 loader reads; a corrupted checkpoint, a head for another target and bad input each get one clear line.
"""

import copy
import json
from pathlib import Path

import pytest
import torch
from distribution_check import RUNS, SIGNIFICANCE, speculative_fit
from test_cli import error_lines
from test_greedy import PROMPTS, reference_greedy
from tiny_models import save_tiny_model, tiny_model, tiny_tokenizer

import specdec.heads.reader
from specdec import SpecdecError, speculative_generate
from specdec.cli import main
from specdec.heads.reader import EagleDrafter
from specdec.heads.head import EagleHead, HeadConfig
from specdec.engine.sampling import SamplingConfig
from specdec.engine.trees import DraftTree
from specdec.heads.files import load_head, save_head
from specdec.heads.training import TrainingSettings, train_head
from specdec.kernels.quantization import quantize_linears
from specdec.store import MANIFEST, VERIFIED

NEW_TOKENS = 40
SETTINGS = TrainingSettings(chunk=64, learning_rate=3e-3, draft_vocab=18)


def own_texts(target, count: int = 24, vocab: int = 24, seed: int = 0) -> list[torch.Tensor]:
    """The target's own greedy continuations of random prompts: what a head learns to predict (self-distillation)."""
    generator = torch.Generator().manual_seed(seed)
    texts = []
    for _ in range(count):
        prompt = torch.randint(2, vocab, (4,), generator=generator).tolist()
        texts.append(torch.tensor(prompt + reference_greedy(target, prompt, max_new_tokens=40)))
    return texts


def tokens_per_pass(target, head, prompts=PROMPTS) -> float:
    results = [
        speculative_generate(target, EagleDrafter(head), torch.tensor(prompt), max_new_tokens=NEW_TOKENS, temperature=0)
        for prompt in prompts
    ]
    return sum(r.stats.tokens_per_target_pass for r in results) / len(results)


@pytest.fixture(scope="module")
def trained():
    """architecture -> (a four-layer tiny target, a head trained 60 steps on its own texts)."""
    pairs = {}
    for architecture in ("gpt2", "llama", "qwen2"):
        target = tiny_model(architecture, layers=4, seed=3)
        pairs[architecture] = target, train_head(target, own_texts(target), steps=60, settings=SETTINGS)
    return pairs


@pytest.mark.parametrize("architecture", ["gpt2", "llama", "qwen2"])
def test_greedy_equals_target_generate(trained, architecture):
    target, head = trained[architecture]
    accepted = drafted = 0
    for prompt in PROMPTS:
        result = speculative_generate(
            target, EagleDrafter(head), torch.tensor(prompt), max_new_tokens=NEW_TOKENS, temperature=0
        )
        assert result.tokens == reference_greedy(target, prompt, max_new_tokens=NEW_TOKENS), (architecture, prompt)
        accepted, drafted = accepted + result.stats.accepted, drafted + result.stats.drafted
    assert accepted >= 20 and drafted > accepted, (accepted, drafted)  # it drafted, and the target took a real share


def test_eos_and_max_new_tokens_like_generate(trained):
    target, head = trained["llama"]
    prompt = PROMPTS[0]
    free_run = reference_greedy(target, prompt, max_new_tokens=NEW_TOKENS)
    eos = free_run[len(free_run) // 2]
    assert speculative_generate(
        target, EagleDrafter(head), torch.tensor(prompt), max_new_tokens=NEW_TOKENS, temperature=0, eos_token_id=eos
    ).tokens == reference_greedy(target, prompt, max_new_tokens=NEW_TOKENS, eos_token_id=eos)
    for new_tokens in (1, 2, 7):
        short = speculative_generate(
            target, EagleDrafter(head), torch.tensor(prompt), max_new_tokens=new_tokens, temperature=0
        )
        assert short.tokens == free_run[:new_tokens]


def test_an_int8_head_is_exact_too(trained):
    """`specdec run` runs a head in int8 on a CPU: q changes (it still drafts well), the output does not."""
    target, head = trained["llama"]
    quantized = quantize_linears(copy.deepcopy(head), "int8")
    drafted = accepted = 0
    for prompt in PROMPTS:
        result = speculative_generate(
            target, EagleDrafter(quantized), torch.tensor(prompt), max_new_tokens=NEW_TOKENS, temperature=0
        )
        assert result.tokens == reference_greedy(target, prompt, max_new_tokens=NEW_TOKENS)
        drafted, accepted = drafted + result.stats.drafted, accepted + result.stats.accepted
    assert accepted >= 10 and drafted > accepted, (accepted, drafted)


def test_a_batch_of_texts_is_exact(trained):
    target, head = trained["qwen2"]
    results = speculative_generate(
        target, EagleDrafter(head), [torch.tensor(p) for p in PROMPTS], max_new_tokens=NEW_TOKENS, temperature=0
    )
    assert [r.tokens for r in results] == [reference_greedy(target, p, max_new_tokens=NEW_TOKENS) for p in PROMPTS]


def test_training_lowers_the_loss_and_raises_tokens_per_pass():
    """A real assertion on what training buys: the same head after 1
    step and after 150, on ~1,000 tokens of the target's own text."""
    target = tiny_model("llama", layers=4, seed=5)
    texts = own_texts(target, seed=1)
    losses = []
    barely = train_head(target, texts, steps=1, settings=SETTINGS)
    trained = train_head(
        target, texts, steps=150, settings=SETTINGS, progress=lambda report: losses.append(report.numbers["loss"])
    )
    assert sum(losses[-10:]) / 10 < 0.6 * sum(losses[:10]) / 10, (losses[:10], losses[-10:])
    before, after = tokens_per_pass(target, barely), tokens_per_pass(target, trained)
    assert after > before + 0.3, (before, after)


# --- the sampled distribution --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def small():
    """A vocabulary of 8 (every continuation enumerable) and a
    head that can say only 6 of them (ids 0 and 5 left out)."""
    target = tiny_model("gpt2", vocab_size=8, layers=3, seed=0)
    head = EagleHead.for_target(target, torch.tensor([1, 2, 3, 4, 6, 7]), seed=2)
    head = train_head(target, own_texts(target, count=16, vocab=8), steps=40, settings=SETTINGS, head=head)
    return target, head


SAMPLED = [SamplingConfig(temperature=1.0), SamplingConfig(temperature=0.7, top_k=5)]


@pytest.mark.slow
@pytest.mark.parametrize(
    "sampling, weights",
    [(SAMPLED[0], "none"), (SAMPLED[1], "none"), (SAMPLED[0], "int8")],
    ids=["t1.0", "t0.7_top_k5", "t1.0_int8_head"],
)
def test_sampled_distribution_is_the_targets(small, sampling, weights):
    target, head = small
    head = quantize_linears(copy.deepcopy(head), weights)
    fit, acceptance = speculative_fit(
        target, lambda: EagleDrafter(head), sampling, prompt=[2, 3, 4], gamma_factory=lambda: None, runs=RUNS
    )
    assert fit.p_value > SIGNIFICANCE, fit
    assert 0.05 < acceptance < 0.95, acceptance


def unmapped(grow):
    """BROKEN: the tree's tokens are drawn from the mapped q, but
    the rule is told q over the draft ids read as target ids."""

    def broken(self, state, sequence, max_depth, sampling, generator):
        tree = grow(self, state, sequence, max_depth, sampling, generator)
        if tree.q is None:
            return tree
        q = torch.zeros_like(tree.q)
        head = self.reader.head
        q[:, : head.config.draft_vocab_size] = tree.q[:, head.draft_ids()]
        return DraftTree(tree.tokens, tree.parents, q)

    return broken


@pytest.mark.slow
def test_negative_control_an_unmapped_q_fails(small, monkeypatch):
    """Power: the unmapped q moves the first round's distribution by D = 0.2 or more here (a third of the drafted ids
    are read as other tokens), against df of about 60 at 3,000 runs: the statistic's mean is several times the
    threshold."""
    target, head = small
    monkeypatch.setattr(specdec.heads.reader.EagleDrafter, "grow", unmapped(specdec.heads.reader.EagleDrafter.grow))
    fit, _ = speculative_fit(
        target,
        lambda: EagleDrafter(head),
        SamplingConfig(temperature=1.0),
        prompt=[2, 3, 4],
        gamma_factory=lambda: None,
        runs=RUNS,
    )
    assert fit.p_value < SIGNIFICANCE, fit


def test_q_is_zero_outside_the_draft_vocabulary(small):
    target, head = small
    seen = []
    drafter = EagleDrafter(head)
    grow = drafter.grow
    drafter.grow = lambda *args: seen.append(grow(*args)) or seen[-1]
    speculative_generate(target, drafter, torch.tensor([2, 3, 4]), max_new_tokens=12, temperature=1.0, seed=3)
    tables = [tree.q for tree in seen if tree.q is not None and tree.size]
    assert tables and all(float(q[:, [0, 5]].abs().sum()) == 0.0 for q in tables)
    assert all(
        tree.tokens.tolist() and 0 not in tree.tokens.tolist() and 5 not in tree.tokens.tolist()
        for tree in seen
        if tree.size
    )


# --- heads on disk -------------------------------------------------------------------------------------


def test_save_and_load_are_bit_identical(trained, tmp_path):
    target, head = trained["llama"]
    save_head(head, tmp_path / "head")
    again = load_head(tmp_path / "head", target)
    assert head.state_dict().keys() == again.state_dict().keys()
    assert all(torch.equal(a, b) for a, b in zip(head.state_dict().values(), again.state_dict().values()))
    assert again.config == head.config
    prompt = torch.tensor(PROMPTS[1])
    first = speculative_generate(target, EagleDrafter(head), prompt, max_new_tokens=20, temperature=0)
    second = speculative_generate(target, EagleDrafter(again), prompt, max_new_tokens=20, temperature=0)
    assert [r.drafted for r in first.rounds] == [r.drafted for r in second.rounds]


def vllm_expected(config: dict) -> dict[str, tuple[int, ...]]:
    """The parameters vLLM's `Eagle3LlamaForCausalLM` holds (vllm/model_executor/models/llama_eagle3.py), with their
    shapes, for a checkpoint without embed_tokens: q/k/v stacked into qkv_proj reading 2H, gate/up into gate_up_proj, fc
    from 3 x target_hidden_size, lm_head over draft_vocab_size, draft_id_to_target_id (from d2t)."""
    h, i, heads, kv = (
        config["hidden_size"],
        config["intermediate_size"],
        config["num_attention_heads"],
        config["num_key_value_heads"],
    )
    dim = config.get("head_dim") or h // heads
    layer = "model.layers.0."
    return {
        layer + "self_attn.qkv_proj.weight": ((heads + 2 * kv) * dim, 2 * h),
        layer + "self_attn.o_proj.weight": (h, heads * dim),
        layer + "mlp.gate_up_proj.weight": (2 * i, h),
        layer + "mlp.down_proj.weight": (h, i),
        layer + "input_layernorm.weight": (h,),
        layer + "hidden_norm.weight": (h,),
        layer + "post_attention_layernorm.weight": (h,),
        "model.fc.weight": (h, 3 * config.get("target_hidden_size", h)),
        "model.norm.weight": (h,),
        "lm_head.weight": (config["draft_vocab_size"], h),
        "draft_id_to_target_id": (config["draft_vocab_size"],),
    }


def vllm_loaded(tensors: dict[str, torch.Tensor], config: dict) -> dict[str, tuple[int, ...]]:
    """What vLLM's `load_weights` makes of a checkpoint's tensors: its renames ("t2d" skipped, "d2t" ->
    draft_id_to_target_id, "model." before all but lm_head, "midlayer." -> "layers.0.") and its stacking of shards, as
    shapes per parameter."""
    shapes: dict[str, list] = {}
    stacked = {
        ".q_proj": ".qkv_proj",
        ".k_proj": ".qkv_proj",
        ".v_proj": ".qkv_proj",
        ".gate_proj": ".gate_up_proj",
        ".up_proj": ".gate_up_proj",
    }
    for name, tensor in tensors.items():
        if "t2d" in name:
            continue
        if "d2t" in name:
            name = name.replace("d2t", "draft_id_to_target_id")
        elif "lm_head" not in name:
            name = "model." + name
        name = name.replace("midlayer.", "layers.0.")
        for shard, whole in stacked.items():
            if shard in name:
                name = name.replace(shard, whole)
                break
        shapes.setdefault(name, []).append(tuple(tensor.shape))
    return {name: (sum(shape[0] for shape in parts),) + parts[0][1:] for name, parts in shapes.items()}


def test_the_layout_is_what_vllm_loads(trained, tmp_path):
    from safetensors.torch import load_file

    target, head = trained["qwen2"]
    folder = save_head(head, tmp_path / "head")
    config = json.loads((folder / "config.json").read_text())
    assert config["architectures"] == ["LlamaForCausalLMEagle3"] and config["num_hidden_layers"] == 1
    assert config["eagle_aux_hidden_state_layer_ids"] == list(head.config.layers)
    tensors = load_file(str(folder / "model.safetensors"))
    assert vllm_loaded(tensors, config) == vllm_expected(config)
    assert (tensors["d2t"] + torch.arange(config["draft_vocab_size"])).tolist() == head.draft_ids().tolist()
    assert tensors["t2d"].dtype == torch.bool and int(tensors["t2d"].sum()) == config["draft_vocab_size"]


def test_a_published_checkpoint_loads(trained, tmp_path):
    """A checkpoint as SpecForge writes one: `layers.0.` names, an embed_tokens copy, no manifest, no specdec block."""
    from safetensors.torch import save_file

    target, head = trained["llama"]
    folder = save_head(head, tmp_path / "published")
    (folder / MANIFEST).unlink()
    config = json.loads((folder / "config.json").read_text())
    del config["specdec"], config["eagle_aux_hidden_state_layer_ids"]
    (folder / "config.json").write_text(json.dumps(config))
    tensors = {name.replace("midlayer.", "layers.0."): tensor for name, tensor in head.state_dict().items()}
    save_file(
        tensors | {"embed_tokens.weight": target.get_input_embeddings().weight.detach().clone()},
        str(folder / "model.safetensors"),
    )
    loaded = load_head(folder, target)
    assert loaded.config.layers == HeadConfig.default_layers(4) and loaded.config.target_layers == 4
    assert all(torch.equal(a, b) for a, b in zip(head.state_dict().values(), loaded.state_dict().values()))


# --- bad input -----------------------------------------------------------------------------------------


def test_a_head_saved_by_the_previous_version_loads_checked_once(tmp_path):
    """Before `specdec.store`, a head's manifest was manifest.json holding SHA-256s only: such a head loads, checked
    against it, and its manifest becomes the store's; a damaged one is refused in one line. A folder of other files
    is never replaced by a head."""
    import shutil

    target = tiny_model("llama", layers=2)
    head = EagleHead.for_target(target, torch.arange(10), name="tiny")
    folder = save_head(head, tmp_path / "head", training={"step": 1}, optimizer={"state": {}, "param_groups": []})
    files = json.loads((folder / MANIFEST).read_text())["files"]
    for name in (MANIFEST, VERIFIED):
        (folder / name).unlink()
    (folder / "manifest.json").write_text(
        json.dumps({"files": {name: recorded["sha256"] for name, recorded in files.items()}})
    )
    damaged = Path(shutil.copytree(folder, tmp_path / "damaged"))
    data = bytearray((damaged / "model.safetensors").read_bytes())
    data[-5] ^= 0xFF
    (damaged / "model.safetensors").write_bytes(bytes(data))
    with pytest.raises(SpecdecError, match="model.safetensors does not match its checksum") as refused:
        load_head(damaged, target)
    assert "\n" not in str(refused.value)
    loaded = load_head(folder, target)
    assert all(torch.equal(a, b) for a, b in zip(head.state_dict().values(), loaded.state_dict().values()))
    assert not (folder / "manifest.json").exists() and json.loads((folder / MANIFEST).read_text())["files"] == files
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "todo.txt").write_text("mine")
    with pytest.raises(SpecdecError, match="holds files that are not a head"):
        save_head(head, tmp_path / "notes")
    assert (tmp_path / "notes" / "todo.txt").read_text() == "mine"


def test_a_corrupted_checkpoint_is_refused_in_one_line(trained, tmp_path, capsys):
    target, head = trained["gpt2"]
    folder = save_head(head, tmp_path / "head")
    data = bytearray((folder / "model.safetensors").read_bytes())
    data[-5] ^= 0xFF
    (folder / "model.safetensors").write_bytes(bytes(data))
    with pytest.raises(SpecdecError, match="does not match its checksum"):
        load_head(folder, target)
    target_folder = save_tiny_model(tmp_path / "target", target)
    tiny_tokenizer().save_pretrained(target_folder)
    capsys.readouterr()
    code = main(
        [
            "run",
            "--target",
            str(target_folder),
            "--draft",
            str(folder),
            "--prompt",
            "w2 w3",
            "--max-new-tokens",
            "4",
            "--quantization",
            "none",
        ]
    )
    err = error_lines(capsys.readouterr().err)
    assert code == 2 and len(err) == 1 and "checksum" in err[0], err


def test_cli_runs_a_head_exactly(trained, tmp_path, capsys):
    target, head = trained["gpt2"]
    folder = save_head(head, tmp_path / "head")
    target_folder = save_tiny_model(tmp_path / "target", target)
    tiny_tokenizer().save_pretrained(target_folder)
    code = main(
        [
            "run",
            "--target",
            str(target_folder),
            "--draft",
            str(folder),
            "--prompt",
            "w2 w3 w4",
            "--max-new-tokens",
            "16",
            "--temperature",
            "0",
            "--quantization",
            "none",
            "--compare",
            "--json",
        ]
    )
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["settings"]["drafting"].startswith("EAGLE-3 head, tree"), report
    assert report["compare"]["identical_tokens"] is True and report["stats"]["accepted"] > 0, report


def test_a_head_for_another_target_is_refused(trained):
    _, head = trained["llama"]
    other = tiny_model("llama", layers=2, seed=3)
    with pytest.raises(SpecdecError, match="trained for a target with hidden size 32, 4 layers") as error:
        speculative_generate(other, EagleDrafter(head), torch.tensor(PROMPTS[0]), max_new_tokens=4, temperature=0)
    assert "\n" not in str(error.value)


def test_a_target_with_no_hidden_states_is_refused():
    with pytest.raises(SpecdecError, match="has no hidden states to read"):
        EagleHead.for_target(torch.nn.Linear(4, 4), torch.tensor([0, 1]))


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["heads", "train", "--minutes", "0"], "--minutes must be more than 0"),
        (["heads", "train"], "say how long to train"),
    ],
)
def test_bad_training_input_is_one_line_and_exit_2(capsys, argv, fragment):
    assert main(argv) == 2
    err = error_lines(capsys.readouterr().err)
    assert len(err) == 1 and fragment in err[0], err


def test_train_head_refuses_bad_lengths():
    target = tiny_model("llama", layers=2)
    with pytest.raises(SpecdecError, match="steps=N or minutes=M"):
        train_head(target, [torch.arange(10)])
    with pytest.raises(SpecdecError, match="minutes > 0"):
        train_head(target, [torch.arange(10)], minutes=0)
    with pytest.raises(SpecdecError, match="no training text"):
        train_head(target, [torch.arange(2)], steps=1)
