"""Batches and scores of reading drills (:mod:`urbex.train.reader`).

:func:`encode_drills` tokenizes drills segment by segment (labels on the answers only, each
supervised token tagged with its answer); :func:`drill_loss` is the causal-LM loss on those
tokens alone, computing the LM head only where an answer token is predicted; an answer counts
as right when every one of its tokens is the model's greedy choice under teacher forcing
(:func:`right_answers`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from urbex.errors import ConfigError
from urbex.train.drills import Drill

__all__ = [
    "answer_logits",
    "drill_loss",
    "encode_drills",
    "exact_answers",
    "right_answers",
    "turn_owner",
]


def encode_drills(drills: Sequence[Drill], tok: Any, max_length: int) -> dict[str, Any]:
    """Right-padded ``input_ids``, ``attention_mask`` and ``labels`` (answers only) of drills;
    ``answer_of``: per label position, the index of its answer within the batch (-1 else)."""
    import torch

    rows, labs, owners = [], [], []
    k = 0
    for d in drills:
        ids: list[int] = []
        lab: list[int] = []
        own: list[int] = []
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
        rows.append(ids)
        labs.append(lab)
        owners.append(own)
    n = max(len(r) for r in rows)
    pad = tok.pad_token_id
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


def drill_loss(model: Any, batch: dict[str, Any]) -> Any:
    import torch

    logits, target, _ = answer_logits(model, batch)
    return torch.nn.functional.cross_entropy(logits, target)


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
