"""Batches and scores of reading drills (:mod:`urbex.train.reader`).

:func:`encode_drills` tokenizes drills segment by segment (labels on the answers only, each
supervised token tagged with its answer); :func:`drill_loss` is the causal-LM loss on those
tokens alone, computing the LM head only where an answer token is predicted, over drills
padded in groups of similar length (:func:`length_groups`; a step mixes 2- and 32-mark
listings, and one padded batch was a third padding); an answer counts as right when every one
of its tokens is the model's greedy choice under teacher forcing (:func:`right_answers`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from urbex.errors import ConfigError
from urbex.train.drills import Drill

__all__ = [
    "GROUP_SIZE",
    "answer_logits",
    "drill_loss",
    "encode_drills",
    "exact_answers",
    "length_batches",
    "length_groups",
    "right_answers",
    "turn_owner",
]

#: Drills per padded group in :func:`drill_loss` (16 drills: 4 groups; measured on the recipe's
#: 3.8 M-parameter student, one thread: fewer, longer groups left more padding, single drills
#: lose the batched matrix products).
GROUP_SIZE = 4

#: One tokenized drill: token ids, labels (-100 off the answers), answer index per token (-1
#: off the answers; numbered within the drill).
_Encoded = tuple[list[int], list[int], list[int]]


def _encode_one(d: Drill, tok: Any, max_length: int) -> _Encoded:
    ids: list[int] = []
    lab: list[int] = []
    own: list[int] = []
    k = 0
    for text, sup in d.segments:
        t = tok(text, add_special_tokens=False)["input_ids"]
        ids += t
        lab += t if sup else [-100] * len(t)
        own += [k] * len(t) if sup else [-1] * len(t)
        k += int(sup)
    if len(ids) > max_length:
        raise ConfigError(
            f"a {d.family} drill of {d.level} marks is {len(ids)} tokens, over "
            f"reader.max_length={max_length}; raise reader.max_length or lower reader.levels "
            "/ env.marks.max_listed",
            field="reader.max_length",
        )
    return ids, lab, own


def encode_drills(drills: Sequence[Drill], tok: Any, max_length: int) -> dict[str, Any]:
    """Right-padded ``input_ids``, ``attention_mask`` and ``labels`` (answers only) of drills;
    ``answer_of``: per label position, the index of its answer within the batch (-1 else).

    Raises
    ------
    ConfigError
        A drill is longer than ``max_length`` tokens (the message names ``reader.max_length``).
    """
    return _pad([_encode_one(d, tok, max_length) for d in drills], tok.pad_token_id)


def length_groups(lengths: Sequence[int], size: int = GROUP_SIZE) -> list[list[int]]:
    """Indices of ``lengths`` sorted by length (ties in their order), cut into runs of ``size``:
    the groups :func:`drill_loss` pads together.

    >>> length_groups([9, 2, 7, 3, 8], size=2)
    [[1, 3], [2, 4], [0]]
    """
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    return [order[i : i + size] for i in range(0, len(order), size)]


def length_batches(
    drills: Sequence[Drill], tok: Any, max_length: int, size: int = GROUP_SIZE
) -> list[dict[str, Any]]:
    """``drills`` as padded batches (:func:`encode_drills`' keys) of :func:`length_groups`: each
    drill once, grouped with the drills nearest its length.

    Raises
    ------
    ConfigError
        A drill is longer than ``max_length`` tokens.
    """
    encoded = [_encode_one(d, tok, max_length) for d in drills]
    groups = length_groups([len(e[0]) for e in encoded], size)
    return [_pad([encoded[i] for i in g], tok.pad_token_id) for g in groups]


def _pad(encoded: Sequence[_Encoded], pad: int) -> dict[str, Any]:
    import torch

    rows = [e[0] for e in encoded]
    labs = [e[1] for e in encoded]
    owners, k = [], 0
    for _, _, own in encoded:  # answer indices numbered across the batch
        owners.append([o + k if o >= 0 else -1 for o in own])
        k += max(own, default=-1) + 1
    n = max(len(r) for r in rows)
    input_ids = torch.full((len(rows), n), pad, dtype=torch.long)
    mask = torch.zeros((len(rows), n), dtype=torch.long)
    labels = torch.full((len(rows), n), -100, dtype=torch.long)
    owner = torch.full((len(rows), n), -1, dtype=torch.long)
    for i, (r, lb, ow) in enumerate(zip(rows, labs, owners, strict=True)):
        input_ids[i, : len(r)] = torch.tensor(r)
        mask[i, : len(r)] = 1
        labels[i, : len(r)] = torch.tensor(lb)
        owner[i, : len(r)] = torch.tensor(ow)
    return {"input_ids": input_ids, "attention_mask": mask, "labels": labels, "answer_of": owner}


def answer_logits(model: Any, batch: dict[str, Any]) -> tuple[Any, Any, Any]:
    """Logits at the positions that predict an answer token only (the LM head over the whole
    vocabulary is most of a small model's cost; drills supervise a few tokens in ten), their
    targets and their answer index, for text-only drill batches."""
    hidden = model.model(
        input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]
    ).last_hidden_state
    target = batch["labels"][:, 1:]
    keep = target != -100
    logits = model.lm_head(hidden[:, :-1][keep]).float()
    return logits, target[keep], batch["answer_of"][:, 1:][keep]


def drill_loss(model: Any, drills: Sequence[Drill], tok: Any, max_length: int) -> Any:
    """Mean cross-entropy over the answer tokens of ``drills`` — the loss of one padded batch of
    them (to float round-off; tested) — computed over :func:`length_groups` of similar length,
    so that short drills are not padded to the longest.

    Raises
    ------
    ConfigError
        A drill is longer than ``max_length`` tokens.
    """
    import torch

    total, n = torch.zeros(()), 0
    for batch in length_batches(drills, tok, max_length):
        logits, target, _ = answer_logits(model, batch)
        total = total + torch.nn.functional.cross_entropy(logits, target, reduction="sum")
        n += int(target.numel())
    return total / max(1, n)


def right_answers(wrong: Any, owner: Any) -> tuple[int, int]:
    """(answers right, answers): ``wrong`` and ``owner`` are per supervised token (the token is
    not the greedy choice; the answer it belongs to). An answer is right when none of its
    tokens is wrong."""
    import torch

    if owner.numel() == 0:
        return 0, 0
    n = int(owner.max()) + 1
    bad = torch.zeros(n, dtype=torch.long).index_add_(0, owner, wrong.long())
    present = torch.zeros(n, dtype=torch.long).index_add_(0, owner, torch.ones_like(owner))
    return int(((bad == 0) & (present > 0)).sum()), int((present > 0).sum())


def exact_answers(model: Any, inputs: dict[str, Any], owner: Any) -> tuple[int, int]:
    """(answers right, answers) of a batch with images (whole turns): an answer is right when
    every one of its tokens is the greedy choice under teacher forcing."""
    import torch

    with torch.no_grad():
        logits = model(**{k: v for k, v in inputs.items() if k != "labels"}).logits[:, :-1]
    target = inputs["labels"][:, 1:]
    own = owner[:, 1:]
    keep = target != -100
    return right_answers((logits.argmax(-1) != target)[keep], own[keep])


def turn_owner(labels: Any) -> Any:
    """Per label position, the index of its assistant turn in the batch (-1 off the turns)."""
    import torch

    sup = labels != -100
    start = sup & ~torch.nn.functional.pad(sup[:, :-1], (1, 0), value=False)
    turn = torch.cumsum(start.reshape(-1).long(), 0).reshape(sup.shape) - 1
    return torch.where(sup, turn, torch.full_like(turn, -1))
