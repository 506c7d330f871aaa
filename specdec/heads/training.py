"""Training an EAGLE-3 head on the target's own passes, with the training-time test (Li et al. 2025).

Notation: p is the target, q the head, d the draft vocabulary, K the steps unrolled.

Data. Any token sequences (ShareGPT conversations with the target's chat template, `specdec.zoo.sharegpt`;
or the target's own answers). For each chunk of T tokens ONE target pass (no gradient) gives what the
head learns from:

    features  h^low, h^mid, h^high   3 x [T, H]   the hidden states of the layers the head fuses
    labels    p_t restricted to the draft vocabulary and renormalised   [T, d]   (soft labels: the
              head learns the target's whole distribution, not only the text's next token)

Teacher forcing on a dataset's text costs one target pass per chunk; self-distillation (training on
answers the target wrote itself) also needs the target to generate them, token by token, which costs
far more per token on a CPU. Both are sequences here: the caller chooses.

The training-time test (EAGLE-3's change to training). At inference the head drafts from its own
outputs: depth 2 reads (y_1, g) where g is the head's own hidden state, not the target's. Trained only
on the target's features it would never have seen its own. So every step unrolls K times:

    step 0   entry i = (x_{i+1}, f_i)            attends entries j <= i            predicts x_{i+2}: label p_{i+1}
    step k   entry i = (x_{i+1+k}, g^{k-1}_i)    attends step-0 entries j <= i     predicts x_{i+2+k}: label p_{i+1+k}
                                                 and its own chain (steps 1..k at i)

exactly what a depth-(k+1) node sees in a tree (the text's entries and its ancestors), at position i + k.
The loss is sum_k 0.8^k CE(p_{i+1+k}, q^k_i), averaged over positions (EAGLE-3's weights).

    head = train_head(target, sequences, minutes=30)       # a fresh head, or `head=` to go on training one
    EagleDrafter(head)

It runs on whatever device the target is on (a CUDA target trains on CUDA). `progress` is told after
every step (a `specdec.store.Progress` whose `numbers` hold the step, tokens, loss and accuracy, and which tells the
time left); `stop()` returning True ends the
run after the current step; `checkpoint(head, progress, optimizer)` is called every `checkpoint_every_s`
and at the end (the file layer, `specdec.heads.files`, writes it atomically). No I/O here.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import nn

from specdec.heads.head import EagleHead
from specdec.heads.training_text import draft_vocabulary, training_pieces
from specdec.runtime import transformers_model
from specdec.store import Progress, check_run_length


@dataclass(frozen=True)
class TrainingSettings:
    """How a head is trained: unrolled steps, chunk length, learning rate, draft vocabulary size.

    >>> TrainingSettings().unroll, TrainingSettings().loss_weights()
    (3, [1.0, 0.8, 0.6400000000000001])
    """

    unroll: int = 3  # K: EAGLE-3 unrolls 7; 3 keeps a CPU step short
    chunk: int = 256  # tokens per target pass
    learning_rate: float = 3e-4
    draft_vocab: int = 32000  # d: EAGLE-3's size (a tenth of some vocabularies is enough to cover most text)
    clip: float = 0.5  # gradient norm
    decay: float = 0.8

    def loss_weights(self) -> list[float]:
        return [self.decay**k for k in range(self.unroll)]


@torch.inference_mode()
def target_features(
    target: nn.Module, ids: torch.Tensor, head: EagleHead
) -> tuple[tuple[torch.Tensor, ...], torch.Tensor]:
    """One target pass over ids [T]: the three hidden states the head
    fuses (3 x [T, H]) and p over the draft vocabulary [T, d]."""
    output = target(input_ids=ids[None].to(head.device), output_hidden_states=True)
    features = tuple(output.hidden_states[layer][0].float() for layer in head.config.layers)
    labels = torch.softmax(output.logits[0].float()[:, head.draft_ids()], dim=-1)  # [T, d]
    return features, labels


def unrolled_loss(
    head: EagleHead,
    ids: torch.Tensor,
    features: tuple[torch.Tensor, ...],
    labels: torch.Tensor,
    settings: TrainingSettings,
) -> tuple[torch.Tensor, float]:
    """The training-time test's loss over one chunk (module docstring) and step 0's top-1 agreement with p."""
    n = ids.numel() - 1  # entries i = 0 .. T - 2
    attention = head.midlayer.self_attn
    hidden = head.fuse(tuple(feature[:n] for feature in features))  # [n, H]
    keys = values = None
    chain_keys, chain_values = [], []  # steps 1..k: each entry's own chain
    total, accuracy = torch.zeros((), device=head.device), 0.0
    for k, weight in enumerate(settings.loss_weights()):
        m = n - k  # entries with a label at this depth
        if m <= 0:
            break
        x = head.midlayer.inputs(head.embed(ids[1 + k : 1 + k + m].to(head.device)), hidden[:m])  # [m, 2H]
        q, key, value = attention.project(x, torch.arange(k, k + m, device=head.device))
        if k == 0:
            keys, values = key, value
        else:
            chain_keys, chain_values = [c[:m] for c in chain_keys] + [key], [c[:m] for c in chain_values] + [value]
        mask = torch.ones(m, n, dtype=torch.bool, device=head.device).tril()  # step 0: j <= i
        mask = torch.cat([mask] + [torch.eye(m, dtype=torch.bool, device=head.device)] * len(chain_keys), dim=1)
        all_keys = torch.cat([keys] + chain_keys) if chain_keys else keys
        all_values = torch.cat([values] + chain_values) if chain_values else values
        g = head.midlayer.finish(attention.attend(q, all_keys, all_values, mask), hidden[:m])  # [m, H]
        logits = head.lm_head(head.norm(g))  # [m, d]
        target = labels[1 + k : 1 + k + m]  # p_{i+1+k}
        total = total + weight * -(target * torch.log_softmax(logits, dim=-1)).sum(-1).mean()
        if k == 0:
            accuracy = float((logits.argmax(-1) == target.argmax(-1)).float().mean())
        hidden = g
    return total, accuracy


def training_target(target: object) -> nn.Module:
    """The transformers model a head trains on: the target's own
    modules, which only the torch runtime reaches (one line else)."""
    return transformers_model(target, "training a head")


def train_head(
    target: object,
    sequences: Sequence[torch.Tensor | Sequence[int]],
    *,
    steps: int | None = None,
    minutes: float | None = None,
    seed: int = 0,
    head: EagleHead | None = None,
    settings: TrainingSettings = TrainingSettings(),
    progress: Callable[[Progress], None] | None = None,
    stop: Callable[[], bool] | None = None,
    checkpoint: Callable[[EagleHead, Progress, torch.optim.Optimizer], None] | None = None,
    checkpoint_every_s: float = 300.0,
    optimizer_state: dict | None = None,
    start_step: int = 0,
    name: str = "",
) -> EagleHead:
    """Train an EAGLE-3 head for `target` on `sequences` (token ids each: a [T] tensor or a list of ints) for `steps`
    steps and/or `minutes`. `target` is a transformers model (or a torch runtime's model: its hidden states are read).

    With `minutes`, it stops before a step that would not end in time (so it never runs over; at least one step is
    taken). A fresh head (`head=None`) takes its draft vocabulary from the sequences' most frequent tokens. Resume
    with the head, the optimizer's state and the step a checkpoint recorded. Deterministic for a seed on a CPU.
    """
    check_run_length(minutes, steps)
    target = training_target(target)
    pieces = training_pieces(sequences, settings.chunk)
    head = _bound_head(target, pieces, head, settings, seed, name)
    optimizer = _optimizer(head, settings, seed, optimizer_state)
    order = torch.randperm(len(pieces), generator=torch.Generator().manual_seed(seed)).tolist()
    started = last_checkpoint = time.monotonic()
    step, tokens, report, slowest = start_step, 0, None, 0.0
    while True:
        began = time.monotonic()
        piece = pieces[order[step % len(pieces)]]
        loss, accuracy = _train_step(target, head, piece, optimizer, settings)
        step, tokens = step + 1, tokens + piece.numel()
        elapsed = time.monotonic() - started
        report = training_progress(step, tokens, loss, accuracy, elapsed, step - start_step, steps, minutes)
        if progress is not None:
            progress(report)
        slowest = max(slowest, time.monotonic() - began)
        out_of_time = minutes is not None and elapsed + slowest > minutes * 60  # the next step would not end in time
        done = (steps is not None and step - start_step >= steps) or out_of_time
        done = done or (stop is not None and stop())
        if checkpoint is not None and (done or time.monotonic() - last_checkpoint >= checkpoint_every_s):
            checkpoint(head, report, optimizer)
            last_checkpoint = time.monotonic()
        if done:
            break
    return head.eval()


def _bound_head(
    target: nn.Module,
    pieces: Sequence[torch.Tensor],
    head: EagleHead | None,
    settings: TrainingSettings,
    seed: int,
    name: str,
) -> EagleHead:
    """The head to train, bound to `target` and in training mode: the one given, or a fresh one on the target's device
    whose draft vocabulary is the pieces' most frequent tokens."""
    vocab = target.get_output_embeddings().out_features
    if head is None:
        head = EagleHead.for_target(target, draft_vocabulary(pieces, settings.draft_vocab, vocab), name=name, seed=seed)
        head.to(next(target.parameters()).device)
    head.bind(target).train()
    return head


def _optimizer(head: EagleHead, settings: TrainingSettings, seed: int, state: dict | None) -> torch.optim.Optimizer:
    """AdamW over the head's parameters (torch seeded with `seed` first), from a checkpoint's `state` when resuming."""
    torch.manual_seed(seed)
    optimizer = torch.optim.AdamW(head.parameters(), lr=settings.learning_rate)
    if state is not None:
        optimizer.load_state_dict(state)
    return optimizer


def _train_step(
    target: nn.Module,
    head: EagleHead,
    piece: torch.Tensor,
    optimizer: torch.optim.Optimizer,
    settings: TrainingSettings,
) -> tuple[float, float]:
    """One step on one chunk: the target's pass, the training-time
    test's loss, a clipped AdamW update; (loss, accuracy)."""
    features, labels = target_features(target, piece, head)
    loss, accuracy = unrolled_loss(head, piece, tuple(f.clone() for f in features), labels.clone(), settings)
    optimizer.zero_grad()
    loss.backward()
    nn.utils.clip_grad_norm_(head.parameters(), settings.clip)
    optimizer.step()
    return loss.item(), accuracy


def training_progress(
    step: int,
    tokens: int,
    loss: float,
    accuracy: float,
    elapsed_s: float,
    done: int,
    steps: int | None,
    minutes: float | None,
) -> Progress:
    """Where a run stands after a step: its numbers, and the time left by the step count (at the pace of the `done`
    steps of this run) or by the minutes, whichever ends first.

    >>> report = training_progress(12, 3072, 2.0, 0.25, 30.0, 2, 10, 60)
    >>> report.describe(), report.numbers["loss"], report.seconds_left
    ('step 12: loss 2.000, top-1 agreement 25%, 3,072 tokens, about 2 min left', 2.0, 120.0)
    """
    return Progress(
        f"step {step}",
        "training",
        step,
        elapsed_s=elapsed_s,
        share=None if steps is None else done / steps,
        limit_s=None if minutes is None else minutes * 60,
        message=f"loss {loss:.3f}, top-1 agreement {accuracy:.0%}, {tokens:,} tokens",
        numbers={"step": step, "tokens": tokens, "loss": loss, "accuracy": accuracy},
    )
