"""A draft/target pair, loaded and checked, ready to generate: what the CLI and the dashboard share.

    pair = load_pair("Qwen/Qwen2.5-1.5B", "Qwen/Qwen2.5-0.5B", device="auto", dtype="auto")
    input_ids = encode_prompt(pair.tokenizer, "Write a haiku.", chat=True)   # [1, T]
    decoding = Decoding(max_new_tokens=64, temperature=0)
    result = generate_speculative(pair, input_ids, decoding, gamma=4)
    plain = generate_plain(pair, input_ids, decoding)                       # the target alone

The draft may be a drafting method that needs no model of its own (`prompt-lookup`, `recycling`, `lookahead`,
`suffix`, `layer-skip`: `specdec.generation.methods`); only the target is loaded then. It may be a trained
EAGLE-3 head: `eagle` (the head `specdec heads train` made for this target, in the cache) or a head's folder. A draft whose
tokenizer differs from the target's drafts text that the target's tokenizer re-encodes
(`specdec.drafting.cross_tokenizer`). The drafting decisions are the engine's policy's
(`specdec.generation.policy`), made once per generation; a result says what it drafted (`result.drafting`).

This is where the zoo (models on disk) meets the engine (generation): neither knows the other.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from specdec.drafting.cross_tokenizer import CrossTokenizerDrafter, retokenize, whole_character_tokens
from specdec.drafting.draft_model import ModelDrafter
from specdec.drafting.eagle import EagleDrafter
from specdec.drafting.eagle_head import EagleHead
from specdec.drafting.tree_drafter import TreeDrafter, TreeSettings
from specdec.engine.contract import Drafter
from specdec.engine.inputs import Decoding
from specdec.engine.results import GenerationResult, Round
from specdec.engine.schedule import GammaSchedule
from specdec.errors import SpecdecError
from specdec.generation.autoregressive import autoregressive_generate
from specdec.generation.methods import is_target_only, make_drafter
from specdec.generation.policy import DraftingPlan, plan_drafting
from specdec.generation.run import run_plan
from specdec.heads.files import find_head, is_head, load_head
from specdec.kernels.precision import Precision, read_off, resolve_pair_precision
from specdec.kernels.quantization import precision_summary, quantize_linears
from specdec.store import Progress, Reporter
from specdec.zoo.gguf_files import parsed_once
from specdec.zoo.kernel_library import require_w8a8
from specdec.zoo.loading import TOKENIZERS, load_model, load_tokenizer, same_tokenizer, same_tokenizer_files

AUTO = "auto"   # `generate_speculative(tree=AUTO)`: draft as `speculative_generate` does by default


@dataclass
class LoadedPair:
    """A target, its draft (None for a drafter without a model, such as prompt lookup) and the target's tokenizer, on one device.

    `draft_tokenizer` is set only when the draft reads text with another tokenizer; `whole` then
    marks the draft tokens it may draw (`specdec.drafting.cross_tokenizer.whole_character_tokens`).
    The drafters that need no model (`method_drafter`) live as long as the pair, so that those that
    learn (Token Recycling's table, suffix decoding's earlier outputs) keep what they learned.
    """

    target_name: str
    draft_name: str
    target: PreTrainedModel
    draft: PreTrainedModel | None
    tokenizer: PreTrainedTokenizerBase
    device: torch.device
    dtype: torch.dtype                 # the target's dtype (its activations; see `specdec.kernels.quantization`)
    load_seconds: dict[str, float] = field(default_factory=dict)
    draft_tokenizer: PreTrainedTokenizerBase | None = None
    whole: torch.Tensor | None = None
    drafters: dict[str, Drafter] = field(default_factory=dict)   # the target-only drafters made so far, by name
    resolved: dict[str, Precision] = field(default_factory=dict)  # "target", "draft": how each was loaded (`specdec.kernels.precision`)
    head: EagleHead | None = None      # a trained EAGLE-3 head drafts (the draft name was `eagle` or a head's folder)

    @property
    def cross_tokenizer(self) -> bool:
        """Whether the draft has its own tokenizer."""
        return self.draft_tokenizer is not None

    @property
    def tokenizer_note(self) -> str:
        """For reports: 'shared', or 'its own, text re-encoded' for a draft with another tokenizer."""
        return "its own, text re-encoded" if self.cross_tokenizer else "shared"

    def precision_of(self, role: str = "target") -> Precision | None:
        """How the target or the draft runs: device, dtype, weights, kernel and why, resolved once when the pair was loaded
        (read off the models for a pair put together by hand); None for the draft of a drafter that needs no model."""
        model = self.target if role == "target" else self.draft
        if model is None:
            return None
        if role not in self.resolved:
            self.resolved[role] = read_off(model, role)
        return self.resolved[role]

    @property
    def quantization(self) -> str:
        """The target's weights: "none", "int8" or "int4", as loaded."""
        return self.precision_of("target").weights

    @property
    def draft_quantization(self) -> str:
        """The draft's weights ("none" for prompt lookup)."""
        return "none" if self.draft is None else self.precision_of("draft").weights

    @property
    def precision(self) -> str:
        """How the target ran, for reports: 'float32', 'float32 int8'."""
        return self.precision_of("target").name

    @property
    def draft_precision(self) -> str:
        """How the draft ran: 'bfloat16 int4', or 'none' for prompt lookup."""
        return "none" if self.draft is None else self.precision_of("draft").name

    @property
    def kernels(self) -> str:
        """Each model's precision in one line with its kernel and why (`Precision.describe`), for a report."""
        lines = [f"target {self.precision_of('target').describe()}"]
        if self.draft is not None:
            lines.append(f"draft {self.precision_of('draft').describe()}")
        return "   ".join(lines)

    @property
    def precisions(self) -> str:
        """Both, for a caption: 'target float32 int8, draft bfloat16 int4' (just the target's for prompt lookup)."""
        return precision_summary(self.precision, None if self.draft is None else self.draft_precision)

    def method_drafter(self, name: str) -> Drafter:
        """The pair's drafter of a method that needs no draft model (`specdec.generation.methods`), made once."""
        if name not in self.drafters:
            self.drafters[name] = make_drafter(name, self.target)
        return self.drafters[name]

    def drafter(self, vocab_limit: int | None = None, tree: TreeSettings | None = None, method: str | None = None) -> Drafter:
        """The drafter for one generation: the pair's draft model as a chain (`vocab_limit`: see `ModelDrafter`) or a tree
        (`tree`), a draft with its own tokenizer, or the method `method` (or the pair's draft name, when it is one of
        the target-only drafters)."""
        if self.head is not None and method is None:
            if vocab_limit is not None:
                raise SpecdecError("an EAGLE head has its own draft vocabulary: drop the draft vocabulary limit")
            settings = tree or TreeSettings()
            return EagleDrafter(self.head, f"EAGLE-3 head ({self.draft_name})", settings.budget, min(settings.depth, 8), settings.width)
        method = method or (None if self.draft is not None else self.draft_name)
        if method is not None:
            if tree is not None or vocab_limit is not None:
                raise SpecdecError(f"{method} drafts without a draft model: turn off the tree and the draft vocabulary limit")
            return self.method_drafter(method)
        if self.draft_tokenizer is not None:
            if tree is not None or vocab_limit is not None:
                raise SpecdecError("a draft with another tokenizer drafts a chain of text: turn off the tree "
                                   "and the draft vocabulary limit")
            return CrossTokenizerDrafter(self.draft, self.draft_tokenizer, self.tokenizer, self.draft_name, self.whole)
        if tree is not None:
            if vocab_limit is not None:
                raise SpecdecError("a tree drafter reads the whole output layer: drop the draft vocabulary limit to draft a tree")
            return TreeDrafter.from_settings(self.draft, tree, self.draft_name)
        return ModelDrafter(self.draft, self.draft_name, vocab_limit)

    def plan(self, gamma: int | GammaSchedule | None = None, vocab_limit: int | None = None, tree: TreeSettings | str | None = None,
             method: str | None = None, rows: int = 1) -> DraftingPlan:
        """What a generation of `rows` texts drafts with (`specdec.generation.policy`), decided once: `tree=AUTO` with gamma
        left out lets the policy choose for the pair's draft model (a tree where trees pay, else the stop rule's chain)."""
        if tree == AUTO:
            if gamma is None and vocab_limit is None and method is None and self.draft is not None and not self.cross_tokenizer:
                return plan_drafting(self.target, self.draft, None, rows, self.draft_name)
            tree = None
        drafter = self.drafter(vocab_limit, tree, method)
        return plan_drafting(self.target, drafter, None if drafter.capabilities.sizes_rounds else gamma, rows)

    def draft_ids(self, input_ids: torch.Tensor) -> torch.Tensor:
        """`input_ids` [1, T] as the draft reads them: the same ids, or the text re-encoded by the draft's tokenizer."""
        if self.draft_tokenizer is None:
            return input_ids
        return torch.tensor([retokenize(input_ids.reshape(-1).tolist(), self.tokenizer, self.draft_tokenizer)])

    @property
    def eos_token_ids(self) -> list[int]:
        """Every id that ends generation: the tokenizer's EOS and the target's generation config's."""
        ids = set()
        if self.tokenizer.eos_token_id is not None:
            ids.add(int(self.tokenizer.eos_token_id))
        configured = getattr(self.target.generation_config, "eos_token_id", None)
        if configured is not None:
            ids.update([configured] if isinstance(configured, int) else configured)
        return sorted(ids)


def load_pair(target_name: str, draft_name: str, device: str = "auto", dtype: str = "auto",
              progress: Callable[[str], None] | None = None, draft_quantization: str = "none",
              quantization: str = "none", steps: Callable[[Progress], None] | None = None) -> LoadedPair:
    """Load the target, the draft (unless it is a method that needs no model: `specdec.generation.methods`) and the tokenizers.

    `quantization` is the target's weights, `draft_quantization` the draft's: "none", "int8",
    "int4" (CPU only), or "auto" (int8 target and int4 draft on a CPU, `auto_quantization`). The
    draft's precision changes c, never the output; the target's changes the target itself, and
    exactness then holds against that target as loaded. An int4 draft runs in bfloat16 whatever
    `dtype` says: its kernel is fast only there, and a draft's rounding cannot change the output.
    `progress` gets a line per model; `steps` a `specdec.store.Progress` per tokenizer read, GGUF tensor dequantized
    and layer quantized, for a progress bar with the time left.
    """
    if is_target_only(target_name):
        raise SpecdecError(f"{target_name} can only be the draft: give a model as the target")
    say = progress or (lambda message: None)
    precisions = dict(zip(("target", "draft"), resolve_pair_precision(device, dtype, quantization, draft_quantization,
                                                                                          not is_target_only(draft_name) and not is_head(draft_name))))
    if any(precision is not None and precision.weights == "w8a8" for precision in precisions.values()):
        require_w8a8(say)                          # before anything is read: its kernel must pass this machine's test
    with parsed_once():                            # each GGUF header parsed once for the tokenizers and both models
        seconds: dict[str, float] = {}
        start = time.perf_counter()
        head_folder = find_head(draft_name, target_name) if is_head(draft_name) else None   # refuse a missing head before loading
        names = [target_name] if is_target_only(draft_name) or head_folder or same_tokenizer_files(target_name, draft_name) else [target_name, draft_name]
        report, tokenizers = Reporter(target_name, steps), []    # seconds each from a GGUF file on a first load: a stage of its own
        for done, name in enumerate(names):
            report(TOKENIZERS, done, len(names))
            tokenizers.append(load_tokenizer(name))
        report(TOKENIZERS, len(names), len(names))
        tokenizer, draft_tokenizer = tokenizers[0], (tokenizers[1] if len(tokenizers) > 1 else None)
        if draft_tokenizer is not None and same_tokenizer(tokenizer, draft_tokenizer):
            draft_tokenizer = None
        seconds["tokenizers"] = time.perf_counter() - start
        models = {}
        for role, name in (("target", target_name), ("draft", draft_name)):
            if is_target_only(name) or (role == "draft" and head_folder is not None):
                continue
            say(f"Loading {role} {name} …")
            start = time.perf_counter()
            models[role] = load_model(name, precision=precisions[role], role=role, progress=steps)
            precisions[role] = precisions[role].as_loaded(models[role])    # "auto" keeps a model int8/int4 cannot handle as it is
            seconds[role] = time.perf_counter() - start
            say(f"Loaded {role} {name} in {seconds[role]:.1f} s")
    whole = None
    if draft_tokenizer is not None:
        say(f"{draft_name} has its own tokenizer: its drafted text will be re-encoded for {target_name}")
        start = time.perf_counter()
        rows = models["draft"].get_output_embeddings().out_features
        whole = whole_character_tokens(draft_tokenizer, min(rows, len(draft_tokenizer)))
        seconds["draft vocabulary"] = time.perf_counter() - start
    head = None
    if head_folder is not None:
        say(f"Loading the EAGLE-3 head {head_folder} …")
        head = load_head(head_folder, models["target"])
        head_weights = "int8" if draft_quantization == "auto" and precisions["target"].device.type == "cpu" else draft_quantization
        quantize_linears(head, "none" if head_weights == "auto" else head_weights)   # int8 on a CPU: c falls, the output stays
    target = precisions["target"]
    return LoadedPair(target_name, draft_name, models["target"], models.get("draft"), tokenizer, target.device, target.dtype, seconds,
                      draft_tokenizer, whole, resolved={role: value for role, value in precisions.items() if value is not None}, head=head)


def encode_chat(tokenizer: PreTrainedTokenizerBase, messages: Sequence[tuple[str, str]]) -> torch.Tensor:
    """Token ids [1, T] of (role, content) turns in the tokenizer's chat template, ready for the assistant's reply."""
    turns = [{"role": role, "content": content} for role, content in messages]
    text = tokenizer.apply_chat_template(turns, tokenize=False, add_generation_prompt=True)
    return tokenizer(text, return_tensors="pt", add_special_tokens=False).input_ids     # the template holds the specials


def has_chat_template(tokenizer: PreTrainedTokenizerBase) -> bool:
    return bool(getattr(tokenizer, "chat_template", None))


def encode_prompt(tokenizer: PreTrainedTokenizerBase, prompt: str, chat: bool = False) -> torch.Tensor:
    """Token ids [1, T] for `prompt`, wrapped in the tokenizer's chat template when `chat`."""
    if not prompt.strip():
        raise SpecdecError("the prompt is empty: give some text to continue")
    if not chat:
        return tokenizer(prompt, return_tensors="pt").input_ids
    if not has_chat_template(tokenizer):
        raise SpecdecError("this model's tokenizer has no chat template: run without --chat (chat needs an instruct model)")
    return encode_chat(tokenizer, [("user", prompt)])


def generate_speculative(pair: LoadedPair, input_ids: torch.Tensor, decoding: Decoding, gamma: int | GammaSchedule | None = None,
                         draft_vocab_limit: int | None = None, on_round: Callable[[Round], None] | None = None,
                         tree: TreeSettings | str | None = None, method: str | None = None) -> GenerationResult:
    """One text with the pair's models and end-of-sequence ids, drafted as `LoadedPair.plan` says: the draft model as a
    chain, or a tree (`tree`: `TreeSettings`; `AUTO` with gamma None: what the engine drafts by default), or the
    target-only method `method` (`specdec.generation.methods`). `result.drafting` says what it drafted."""
    plan = pair.plan(gamma, draft_vocab_limit, tree, method)
    callback = None if on_round is None else (lambda row, round_: on_round(round_))
    return run_plan(pair.target, plan, [input_ids.reshape(-1)], decoding, pair.eos_token_ids, callback)[0]


def generate_speculative_batch(pair: LoadedPair, prompts: Sequence[torch.Tensor], decoding: Decoding,
                               gamma: int | GammaSchedule | None = None, method: str | None = None,
                               on_round: Callable[[int, Round], None] | None = None) -> list[GenerationResult]:
    """Several prompts at once with the pair's models: the draft model's chains (one draft pass per step for all rows), a
    draft with its own tokenizer (row by row), or the target-only method `method` (or the pair's, when its draft is one);
    one result per prompt."""
    plan = pair.plan(gamma, method=method, rows=len(prompts))
    return run_plan(pair.target, plan, [prompt.reshape(-1) for prompt in prompts], decoding, pair.eos_token_ids, on_round)


def generate_plain_batch(pair: LoadedPair, prompts: Sequence[torch.Tensor], decoding: Decoding) -> list[GenerationResult]:
    """The target alone on several prompts at once, one pass per token for all of them."""
    return autoregressive_generate(pair.target, list(prompts), eos_token_id=pair.eos_token_ids, **decoding.as_kwargs())


def generate_plain(pair: LoadedPair, input_ids: torch.Tensor, decoding: Decoding,
                   on_token: Callable[[int], None] | None = None) -> GenerationResult:
    """The target alone, with the same decoding."""
    return autoregressive_generate(pair.target, input_ids, eos_token_id=pair.eos_token_ids, on_token=on_token, **decoding.as_kwargs())


def continued(input_ids: torch.Tensor, tokens: Sequence[int], device: torch.device) -> torch.Tensor:
    """The prompt followed by `tokens`, as one sequence [1, T + N] on `device`, for a single forward pass.

    >>> continued(torch.tensor([[5, 6]]), [7], torch.device("cpu")).tolist()
    [[5, 6, 7]]
    """
    return torch.cat([input_ids.reshape(-1).cpu(), torch.tensor(list(tokens), dtype=torch.long)])[None].to(device)


@torch.inference_mode()
def target_margin(pair: LoadedPair, input_ids: torch.Tensor, tokens: Sequence[int], position: int) -> float:
    """The gap between the target's two best logits for new token `position`, from one pass over the text before it.

    Where greedy speculative and plain decoding part, a tiny gap says the two passes rounded a
    near-tie differently; a large one says something else went wrong (`bench.comparison.greedy_check`).
    """
    context = continued(input_ids, tokens[:position], pair.device)                                   # [1, T + position]
    logits = pair.target(input_ids=context, logits_to_keep=1).logits[0, -1].float()                  # [V]
    best, second = logits.topk(2).values.tolist()
    return best - second
