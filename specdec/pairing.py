"""A draft/target pair, loaded and checked, ready to generate: what the CLI, the dashboard and the benchmark share.

    spec = RunSpec(target="qwen2.5-coder-1.5b", draft="qwen2.5-coder-0.5b", decoding=Decoding(max_new_tokens=64, temperature=0))
    pair = load_spec(spec)                                                 # or load_pair(target, draft, device=..., ...)
    input_ids = encode_prompt(pair.tokenizer, "Write a haiku.", chat=True)   # [1, T]
    result = generate(pair, input_ids, spec)                               # as the spec drafts; result.drafting says how
    plain = generate_plain(pair, input_ids, spec.decoding)                 # the target alone

A pair holds resources, not one slot per kind: the target and its tokenizer always, and what the draft
name asks for (`specdec.registry.needs_of`): a draft model (with its own tokenizer when the two differ),
a trained head (`eagle`, or a head's folder), nothing for a method that needs only the target
(`prompt-lookup`, `recycling`, ...). Which method drafts, and with which drafter, is the registry's
(`specdec.registry.method_for`) and the policy's (`specdec.generation.policy`), decided once per
generation; a result says what it drafted (`result.drafting`, `result.by_default`).

This is where the zoo (models on disk) meets the engine (generation): neither knows the other.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import torch
from transformers import PreTrainedTokenizerBase

from specdec.drafting.cross_tokenizer import retokenize, whole_character_tokens
from specdec.engine.contract import DraftCosts, Drafter
from specdec.engine.costs import CostProfile
from specdec.engine.inputs import Decoding
from specdec.engine.model import Model
from specdec.engine.results import GenerationResult, Round
from specdec.errors import SpecdecError
from specdec.generation.autoregressive import autoregressive_generate
from specdec.generation.policy import ASSUMED_ALPHA, DraftingPlan, plan_drafting, plan_for_draft_model, refused
from specdec.generation.run import run_plan
from specdec.kernels.precision import AUTO, Precision, gguf_precision, read_off, resolve_pair_precision
from specdec.kernels.quantization import precision_summary
from specdec.reference.explainer import VerificationCurve, verification_curve
from specdec.registry import (CORPUS, DRAFT_MODEL, DRAFT_TOKENIZER, METHODS, RESOURCES, TARGET, TOKENIZER, WHOLE, Method, Resources,
                              corpus_files, method_for, needs_of)
from specdec.run_spec import Drafting, RunSpec
from specdec.runtime import as_model
from specdec.runtime.costs import draft_costs, measured_costs
from specdec.runtime.torch_model import TorchModel
from specdec.store import Progress, Reporter
from specdec.zoo.fetch import where
from specdec.zoo.gguf_files import gguf_file_type, parsed_once
from specdec.zoo.kernel_library import require_w8a8
from specdec.zoo.loading import TOKENIZERS, load_tokenizer, same_tokenizer, same_tokenizer_files
from specdec.zoo.loading import load_model as load_torch_model

@dataclass
class LoadedPair:
    """What a pair's draft name asked for, loaded on one device: `resources` by name (`specdec.registry`), the target always.

    The drafters of a pair live as long as it (`drafter`), so that those that learn across texts (Token Recycling's
    table, suffix decoding's earlier outputs) keep what they learned; a benchmark asks for fresh ones.
    """

    target_name: str
    draft_name: str
    resources: Resources
    device: torch.device
    dtype: torch.dtype                 # the target's dtype (its activations; see `specdec.kernels.quantization`)
    load_seconds: dict[str, float] = field(default_factory=dict)
    resolved: dict[str, Precision] = field(default_factory=dict)  # "target", "draft": how each was loaded (`specdec.kernels.precision`)
    drafters: dict[tuple, Drafter] = field(default_factory=dict)
    costs: CostProfile | None = None   # c and v(k) measured on this machine at load (the llama.cpp runtime), else None: estimated

    @classmethod
    def from_models(cls, target_name: str, draft_name: str, target: object, draft: object | None, tokenizer: PreTrainedTokenizerBase,
                    device: torch.device | None = None, dtype: torch.dtype | None = None,
                    draft_tokenizer: PreTrainedTokenizerBase | None = None, whole: torch.Tensor | None = None) -> LoadedPair:
        """A pair put together by hand from models already loaded (transformers models or runtime models); its precision is read
        off the models when asked."""
        resources: Resources = {TARGET: as_model(target), TOKENIZER: tokenizer}
        if draft is not None:
            resources[DRAFT_MODEL] = as_model(draft)
        if draft_tokenizer is not None:
            resources[DRAFT_TOKENIZER] = draft_tokenizer
            resources[WHOLE] = whole if whole is not None else whole_character_tokens(draft_tokenizer, resources[DRAFT_MODEL].vocab_size)
        model = resources[TARGET]
        held = next(model.module.parameters()).dtype if model.traits.internals else torch.float32    # llama.cpp: float32 activations
        return cls(target_name, draft_name, resources, device or model.device, dtype or held)

    @property
    def target(self) -> Model:
        return self.resources[TARGET]

    @property
    def tokenizer(self) -> PreTrainedTokenizerBase:
        return self.resources[TOKENIZER]

    @property
    def draft(self) -> Model | None:
        """The draft model, or None for a drafter that needs none (prompt lookup, a trained head)."""
        return self.resources.get(DRAFT_MODEL)

    @property
    def draft_tokenizer(self) -> PreTrainedTokenizerBase | None:
        """The draft's own tokenizer, only when it maps text to other ids than the target's."""
        return self.resources.get(DRAFT_TOKENIZER)

    @property
    def cross_tokenizer(self) -> bool:
        """Whether the draft has its own tokenizer."""
        return DRAFT_TOKENIZER in self.resources

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
            self.resolved[role] = read_off(model.module, role)
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

    def method(self, name: str | None = None) -> Method:
        """The drafting method named, else the one the pair's draft implies (`specdec.registry.method_for`); one line for a method
        the target's runtime cannot serve (it reads the target's hidden states or layers), before anything is looked for."""
        refusal = None if name not in METHODS else refused(self.target, METHODS[name].capabilities, name)
        if refusal is not None:
            raise SpecdecError(refusal)
        return method_for(self.draft_name, self.resources, name)

    def drafter(self, drafting: Drafting = Drafting(), fresh: bool = False) -> Drafter:
        """The drafter `drafting` asks for, made from this pair's resources; kept for the next generation unless `fresh`."""
        method = self.method(drafting.method)
        refusal = refused(self.target, method.capabilities, method.name)
        if refusal is not None:                          # before making it: a drafter may reach for what is not there
            raise SpecdecError(refusal)
        options = method.parse_options(dict(drafting.options))
        key = (method.name, options)
        if fresh or key not in self.drafters:
            made = method.make(self.resources, options)
            if fresh:
                return made
            self.drafters[key] = made
        return self.drafters[key]

    def plan(self, drafting: Drafting = Drafting(), rows: int = 1) -> DraftingPlan:
        """What a generation of `rows` texts drafts with, decided once: with no method, gamma or option named, a draft model
        drafts what the policy picks for it (`plan_for_draft_model`: a tree where trees pay, else the stop rule's chain)."""
        method, costs = self.method(drafting.method), self.draft_costs()
        if drafting.method is None and not drafting.options and method.needs == (DRAFT_MODEL,):
            return plan_for_draft_model(self.target, self.draft, drafting.gamma, rows, self.draft_name, costs)
        drafter = self.drafter(drafting)
        if costs is not None and drafter.draft_model is not self.draft:     # measured for the pair's draft, not this one's
            costs = None if drafter.draft_model is not None else draft_costs(replace(self.costs, draft_step_s=0.0),
                                                                             self.target.verify_slope())
        return plan_drafting(self.target, drafter, drafting.gamma, rows, costs=costs)

    def machine_costs(self) -> CostProfile:
        """c and v(k) of this pair on this machine: those measured at load, else timed now (a few seconds) and kept in the
        store under the models, their precision and the CPU (`measured_costs`); the plan is not changed by them."""
        if self.costs is not None:
            return self.costs
        key = cost_key(self.resources, self.target.traits.runtime) | {"precision": self.precisions}
        return measured_costs(self.target, self.draft, key)

    def costs_curve(self, alpha: float = ASSUMED_ALPHA, max_gamma: int = 16) -> VerificationCurve:
        """This machine's measured v(gamma) for the pair, and the speedup it allows (`machine_costs`, `verification_curve`):
        the default policy's alpha unless another is given."""
        costs = draft_costs(self.machine_costs(), self.target.verify_slope())
        return verification_curve(costs.verify, costs.c, alpha, max_gamma)

    def draft_costs(self) -> DraftCosts | None:
        """The policy's costs from what was measured at load (None: none were, the policy estimates them)."""
        return None if self.costs is None else draft_costs(self.costs, self.target.verify_slope())

    def draft_ids(self, input_ids: torch.Tensor) -> torch.Tensor:
        """`input_ids` [1, T] as the draft reads them: the same ids, or the text re-encoded by the draft's tokenizer."""
        if self.draft_tokenizer is None:
            return input_ids
        return torch.tensor([retokenize(input_ids.reshape(-1).tolist(), self.tokenizer, self.draft_tokenizer)])

    @property
    def eos_token_ids(self) -> list[int]:
        """Every id that ends generation: the tokenizer's EOS and the target's own (its generation config's)."""
        ids = set(self.target.eos_token_ids)
        if self.tokenizer.eos_token_id is not None:
            ids.add(int(self.tokenizer.eos_token_id))
        return sorted(ids)


def load_spec(spec: RunSpec, progress: Callable[[str], None] | None = None,
              steps: Callable[[Progress], None] | None = None) -> LoadedPair:
    """The pair a run spec names, with the precision it chose (checked first: a bad choice costs no load)."""
    spec.check()
    models = spec.models
    return load_pair(spec.target, spec.draft, models.device, models.dtype, progress, models.draft_quantization, models.quantization,
                     steps, corpus=spec.drafting.corpus, runtime=models.runtime, threads=models.threads)


def load_pair(target_name: str, draft_name: str, device: str = "auto", dtype: str = "auto",
              progress: Callable[[str], None] | None = None, draft_quantization: str = "none",
              quantization: str = "none", steps: Callable[[Progress], None] | None = None,
              corpus: Sequence[str] = (), runtime: str = "auto", threads: int | None = None) -> LoadedPair:
    """Load the target, its tokenizer and what the draft name asks for (`specdec.registry.needs_of`).

    `quantization` is the target's weights, `draft_quantization` the draft's: "none", "int8",
    "int4" (CPU only), or "auto" (int8 target and int4 draft on a CPU, `auto_quantization`). The
    draft's precision changes c, never the output; the target's changes the target itself, and
    exactness then holds against that target as loaded. An int4 draft runs in bfloat16 whatever
    `dtype` says: its kernel is fast only there, and a draft's rounding cannot change the output.
    `corpus`: text files a method that reads a corpus drafts from. `progress` gets a line per model; `steps` a
    `specdec.store.Progress` per tokenizer read, GGUF tensor dequantized and layer quantized, for a progress bar with
    the time left.
    """
    if target_name in METHODS:
        raise SpecdecError(f"{target_name} can only be the draft: give a model as the target")
    say = progress or (lambda message: None)
    _, needs = needs_of(draft_name)
    with_draft = DRAFT_MODEL in needs
    precisions = dict(zip(("target", "draft"), resolve_pair_precision(device, dtype, quantization, draft_quantization, with_draft)))
    if any(precision is not None and precision.weights == "w8a8" for precision in precisions.values()):
        require_w8a8(say)                          # before anything is read: its kernel must pass this machine's test
    for need in needs:
        if need in RESOURCES and RESOURCES[need].check is not None:
            RESOURCES[need].check(draft_name, target_name)     # a missing head: refused before anything loads
    texts = corpus_files(corpus)
    with parsed_once():                            # each GGUF header parsed once for the tokenizers and both models
        seconds: dict[str, float] = {}
        start = time.perf_counter()
        names = [target_name] + ([draft_name] if with_draft and not same_tokenizer_files(target_name, draft_name) else [])
        report, tokenizers = Reporter(target_name, steps), []    # seconds each from a GGUF file on a first load: a stage of its own
        for done, name in enumerate(names):
            report(TOKENIZERS, done, len(names))
            tokenizers.append(load_tokenizer(name))
        report(TOKENIZERS, len(names), len(names))
        resources: Resources = {TOKENIZER: tokenizers[0]}
        if len(tokenizers) > 1 and not same_tokenizer(tokenizers[0], tokenizers[1]):
            resources[DRAFT_TOKENIZER] = tokenizers[1]
        seconds["tokenizers"] = time.perf_counter() - start
        roles = [("target", target_name)] + ([("draft", draft_name)] if with_draft else [])
        chosen, why = choose_runtime(runtime, [name for _, name in roles], precisions["target"].device,
                                     (dtype, quantization, draft_quantization))
        for role, name in roles:
            say(f"Loading {role} {name} …")
            start = time.perf_counter()
            if chosen == LLAMA_CPP:
                model, precisions[role] = load_on_llama_cpp(name, why, threads)
            else:
                module = load_torch_model(name, precision=precisions[role], role=role, progress=steps)
                precisions[role] = precisions[role].as_loaded(module)    # "auto" keeps a model int8/int4 cannot handle as it is
                model = TorchModel(module, name)
            resources[TARGET if role == "target" else DRAFT_MODEL] = model
            seconds[role] = time.perf_counter() - start
            say(f"Loaded {role} {name} in {seconds[role]:.1f} s ({chosen}: {why})")
    if DRAFT_TOKENIZER in resources:
        say(f"{draft_name} has its own tokenizer: its drafted text will be re-encoded for {target_name}")
        start = time.perf_counter()
        draft_tokenizer, rows = resources[DRAFT_TOKENIZER], resources[DRAFT_MODEL].vocab_size
        resources[WHOLE] = whole_character_tokens(draft_tokenizer, min(rows, len(draft_tokenizer)))
        seconds[WHOLE] = time.perf_counter() - start
    for need in needs:
        if need in RESOURCES:
            say(f"Loading the {need} for {target_name} …")
            start = time.perf_counter()
            resources[need] = RESOURCES[need].load(draft_name, target_name, resources[TARGET], draft_quantization)
            seconds[need] = time.perf_counter() - start
    if texts:
        resources[CORPUS] = [resources[TOKENIZER](text).input_ids for text in texts]
    costs = None
    if chosen == LLAMA_CPP:                         # verification is compute-bound there: time c and v(k), once per machine
        start = time.perf_counter()
        costs = measured_costs(resources[TARGET], resources.get(DRAFT_MODEL), cost_key(resources, chosen),
                               timing=lambda: say("Timing a draft step and the verification passes (kept for next time) …"))
        seconds["costs"] = time.perf_counter() - start
    target = precisions["target"]
    return LoadedPair(target_name, draft_name, resources, target.device, target.dtype, seconds,
                      resolved={role: value for role, value in precisions.items() if value is not None}, costs=costs)


def cost_key(resources: Resources, runtime: str) -> dict[str, object]:
    """What measured costs are kept under: each model as its runtime names it (a file, its size, time and threads), the CPU."""
    from specdec.store.machine import cpu_facts

    draft = resources.get(DRAFT_MODEL)
    return {"target": resources[TARGET].identity, "draft": None if draft is None else draft.identity, "runtime": runtime,
            "cpu": cpu_facts()["cpu"]}


TORCH, LLAMA_CPP = "torch", "llama.cpp"


def choose_runtime(runtime: str, names: Sequence[str], device: torch.device, precision_choices: Sequence[str]) -> tuple[str, str]:
    """Which runtime loads these models, and why in a few words: llama.cpp where asked, or (auto) for GGUF files on a CPU
    with every precision left to auto and this machine's exactness self-test passed; else torch (one line when asked for what
    cannot be: not a GGUF file, another device, a self-test that failed here)."""
    if runtime == TORCH:
        return TORCH, "asked for"
    gguf = all(where(name).gguf for name in names)
    reasons = [] if gguf else [f"{next(name for name in names if not where(name).gguf)} is not a GGUF file"]
    if device.type != "cpu":
        reasons.append(f"the models run on {device.type} (llama.cpp runs here on the CPU)")
    if runtime == AUTO and any(choice != AUTO for choice in precision_choices):
        return TORCH, "a dtype or weights were asked for"
    if not reasons:
        from specdec.runtime.llama_cpp import check_runtime

        try:
            usable, refusal = check_runtime()
        except SpecdecError as error:                        # the library is not installed, or does not load here
            usable, refusal = False, str(error)
        if usable:
            return LLAMA_CPP, "asked for" if runtime == LLAMA_CPP else "auto: GGUF files on a CPU, exact here"
        reasons.append(f"its exactness self-test failed here ({refusal})")
    if runtime == LLAMA_CPP:
        raise SpecdecError(f"the llama.cpp runtime cannot run this pair: {'; '.join(reasons)}: use --runtime torch")
    return TORCH, f"auto: llama.cpp not used, {'; '.join(reasons)}" if gguf and device.type == "cpu" else "auto"


def load_model(name_or_path: str, device: str = "auto", dtype: str = "auto", quantization: str = "none", runtime: str = TORCH,
               threads: int | None = None, **options) -> object:
    """A causal LM from a zoo name, hub id, folder or .gguf file: on torch (default) a transformers model in eval mode
    (`specdec.zoo.loading.load_model`, which takes `options`); on `runtime="llama.cpp"` the GGUF file mapped into llama.cpp's
    own kernels with the exact settings, a model behind `specdec.engine.model` that the generate functions take alike.

        target = specdec.load_model("qwen2.5-coder-1.5b", runtime="llama.cpp")
        speculative_generate(target, specdec.PromptLookupDrafter(), input_ids, temperature=0)
    """
    if runtime == LLAMA_CPP:
        if (device, dtype, quantization) != ("auto", "auto", "none") or options:
            raise SpecdecError("the llama.cpp runtime runs a GGUF file's own weights on the CPU: drop device, dtype and quantization")
        choose_runtime(LLAMA_CPP, [name_or_path], torch.device("cpu"), ())        # one line if it cannot be llama.cpp here
        return load_on_llama_cpp(name_or_path, "asked for", threads)[0]
    if runtime != TORCH:
        raise SpecdecError(f"unknown runtime '{runtime}' for one model: choose {TORCH} or {LLAMA_CPP}")
    return load_torch_model(name_or_path, device, dtype, quantization, **options)


def load_on_llama_cpp(name: str, why: str, threads: int | None = None) -> tuple[Model, Precision]:
    """A GGUF model mapped into llama.cpp with the exact settings (`threads`: the runtime's choice when None), and its
    precision (the file's own weights)."""
    from specdec.runtime.llama_cpp import load_gguf

    path = where(name).location
    model = load_gguf(path, threads=threads)
    model.name = name
    return model, gguf_precision(gguf_file_type(path), f"the GGUF file's own weights on llama.cpp ({why})")


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


def generate(pair: LoadedPair, input_ids: torch.Tensor, spec: RunSpec, on_round: Callable[[Round], None] | None = None) -> GenerationResult:
    """One text as `spec` drafts and decodes it (`generate_speculative` with the spec's drafting and decoding)."""
    return generate_speculative(pair, input_ids, spec.decoding, spec.drafting, on_round)


def generate_speculative(pair: LoadedPair, input_ids: torch.Tensor, decoding: Decoding, drafting: Drafting = Drafting(),
                         on_round: Callable[[Round], None] | None = None) -> GenerationResult:
    """One text with the pair's resources and end-of-sequence ids, drafted as `LoadedPair.plan` says for `drafting`.
    `result.drafting` says what it drafted, `result.by_default` whether the policy chose it."""
    plan = pair.plan(drafting)
    callback = None if on_round is None else (lambda row, round_: on_round(round_))
    return run_plan(pair.target, plan, [input_ids.reshape(-1)], decoding, pair.eos_token_ids, callback)[0]


def generate_speculative_batch(pair: LoadedPair, prompts: Sequence[torch.Tensor], decoding: Decoding, drafting: Drafting = Drafting(),
                               on_round: Callable[[int, Round], None] | None = None) -> list[GenerationResult]:
    """Several prompts at once with the pair's resources: a draft model's chains (one draft pass per step for all rows), a
    draft with its own tokenizer (row by row), or a method that needs only the target; one result per prompt."""
    plan = pair.plan(drafting, rows=len(prompts))
    return run_plan(pair.target, plan, [prompt.reshape(-1) for prompt in prompts], decoding, pair.eos_token_ids, on_round)


def generate_plain_batch(pair: LoadedPair, prompts: Sequence[torch.Tensor], decoding: Decoding) -> list[GenerationResult]:
    """The target alone on several prompts at once, one pass per token for all of them."""
    return autoregressive_generate(pair.target, list(prompts), eos_token_id=pair.eos_token_ids, **decoding.as_kwargs())


def generate_plain(pair: LoadedPair, input_ids: torch.Tensor, decoding: Decoding,
                   on_token: Callable[[int], None] | None = None) -> GenerationResult:
    """The target alone, with the same decoding."""
    return autoregressive_generate(pair.target, input_ids, eos_token_id=pair.eos_token_ids, on_token=on_token, **decoding.as_kwargs())


def continued(input_ids: torch.Tensor, tokens: Sequence[int], device: torch.device) -> torch.Tensor:
    """The prompt followed by `tokens`, as one sequence [T + N] on `device`, for a single forward pass.

    >>> continued(torch.tensor([[5, 6]]), [7], torch.device("cpu")).tolist()
    [5, 6, 7]
    """
    return torch.cat([input_ids.reshape(-1).cpu(), torch.tensor(list(tokens), dtype=torch.long)]).to(device)


@torch.inference_mode()
def target_margin(pair: LoadedPair, input_ids: torch.Tensor, tokens: Sequence[int], position: int) -> float:
    """The gap between the target's two best logits for new token `position`, from one pass over the text before it.

    Where greedy speculative and plain decoding part, a tiny gap says the two passes rounded a
    near-tie differently; a large one says something else went wrong (`bench.comparison.greedy_check`).
    """
    context = continued(input_ids, tokens[:position], pair.device)                                   # [T + position]
    logits, _ = pair.target.rows([0]).feed([context], keep=1)                                          # [1, 1, V]
    best, second = logits[0, -1].float().topk(2).values.tolist()
    return best - second
