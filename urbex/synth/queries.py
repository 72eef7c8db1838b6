"""Unique, worded descriptions of a block's instances: what the generator writes.

:func:`scene_queries` draws targets per class, keeps the expressions of
:func:`urbex.synth.candidates.candidate_expressions` that select exactly the target (checked
with :func:`urbex.synth.expressions.satisfying`), and words each with
:func:`urbex.synth.phrasing.phrase` — a paraphrase family drawn by weight, the expression
decorated for it with more true facts (:func:`urbex.synth.enrich.decorations`, checked again),
then human-like noise; a misspelled place name is kept only if the project's landmark lookup
(:class:`urbex.landmarks.LandmarkIndex`) still resolves it. Each :class:`Query` records the
expression it says and its :class:`~urbex.synth.phrasing.Phrasing`, so a test can re-check
both.

Frames: the block's local world frame (metres), as in :mod:`urbex.synth.expressions`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import polars as pl

from urbex.landmarks.lookup import LandmarkIndex
from urbex.synth.block import CITYREFER_LABELS, Block
from urbex.synth.candidates import LOCATION, candidate_expressions
from urbex.synth.enrich import decorations
from urbex.synth.expressions import (
    Expression,
    IsLandmark,
    Ordinal,
    SceneFacts,
    satisfying,
)
from urbex.synth.noise import Findable
from urbex.synth.phrasing import NOISE_RATES, Phrasing, family_weights, phrase
from urbex.synth.predicates import (
    Between,
    FacingSide,
    MapRegion,
    MapRelation,
)

__all__ = ["Query", "dedup_key", "name_check", "scene_queries"]

_KEY_WORD = re.compile(r"[a-z0-9']+")


@dataclass(frozen=True, slots=True, kw_only=True)
class Query:
    """One generated description of one target instance, the expression it says (checked to
    select exactly the target) and how it was worded."""

    object_id: str
    object_name: str
    expression: Expression
    description: str
    phrasing: Phrasing


def dedup_key(text: str) -> str:
    """What two descriptions must differ in: lower-case words, articles and punctuation gone.

    >>> dedup_key("The red car, on Mill Lane.") == dedup_key("red car on mill lane")
    True
    """
    return " ".join(w for w in _KEY_WORD.findall(text.lower()) if w not in ("the", "a", "an"))


#: Extra draw weight of the relations people use that the first generator lacked (tuned so
#: the demo's shares come near people's: docs/synthetic.md).
_BONUS = {MapRelation: 1.0, FacingSide: 2.0, Between: 6.0, MapRegion: 0.5}


def _weight(expr: Expression) -> float:
    """Draw weight of a unique expression: richer (more relations, a selector) is likelier,
    and some relations people use that the first generator lacked count extra."""
    fs = expr.filters
    if any(isinstance(f, IsLandmark) for f in fs):
        return 1.0
    rich = sum(isinstance(f, LOCATION) for f in fs)
    rich += isinstance(expr.selector, Ordinal)
    new = sum(_BONUS.get(type(f), 0.0) for f in fs)
    return 0.3 + rich + new + 0.5 * (expr.selector is not None)


def name_check(block: Block) -> Findable:
    """The check a misspelled place name of ``block`` must pass: the project's landmark lookup
    (:class:`~urbex.landmarks.LandmarkIndex`, default thresholds) finds the same names in the
    description as if it were spelled right, and a landmark query for the misspelling
    (``landmark_query``'s lookup) resolves to the right place."""
    sid = block.scene_id
    rows = [
        {"scene_id": sid, "name": lm.name, "x": float(lm.geometry[:, 0].mean()),
         "y": float(lm.geometry[:, 1].mean())}
        for lm in block.landmarks
    ]  # fmt: skip
    index = LandmarkIndex(pl.DataFrame(rows))

    def findable(text: str, name: str, written: str) -> bool:
        if index.mentions(text, sid) != index.mentions(text.replace(written, name), sid):
            return False
        hit = index.lookup(written, scene_id=sid)
        return hit.found and hit.best is not None and hit.best.name == name

    return findable


def scene_queries(
    block: Block,
    *,
    seed: int = 0,
    max_targets_per_class: int = 5,
    max_per_target: int = 3,
    exclude: frozenset[int] = frozenset(),
    families: Mapping[str, float] | None = None,
    noise_rates: Mapping[str, float] = NOISE_RATES,
) -> list[Query]:
    """Unique descriptions for a sample of a block's instances.

    For each class (Building, Car, Parking, Ground), up to ``max_targets_per_class`` targets
    that have at least one unique expression are drawn; each gets 1..``max_per_target``
    different expressions, each verified with :func:`satisfying` to select exactly it.
    Descriptions are unique within the scene, also once articles and punctuation are ignored
    (:func:`dedup_key`).

    Parameters
    ----------
    block
        The scene.
    seed
        Seeds target sampling, expression choice, wording and noise.
    max_targets_per_class, max_per_target
        Caps.
    exclude
        Instance ids never used as targets (e.g. instances planted as false segments).
    families
        Paraphrase family → weight (:func:`urbex.synth.phrasing.family_weights`); ``None``:
        the training families only (the held-out family is for held-out scenes).
    noise_rates
        Noise kind → chance per description (``{}``: no noise).

    Returns
    -------
    list of Query
        Ordered by class then instance id.
    """
    weights = family_weights(held_out_scene=False) if families is None else dict(families)
    rng = np.random.default_rng([seed, 7919])
    facts = SceneFacts.from_block(block)
    findable = name_check(block) if noise_rates.get("misspelled_name", 0.0) > 0 else None
    seen: set[str] = set()
    out: list[Query] = []
    for cls in CITYREFER_LABELS:
        rows = [
            int(r) for r in np.flatnonzero(facts.cls == cls) if int(facts.ids[r]) not in exclude
        ]
        rng.shuffle(rows)
        chosen = 0
        for row in rows:
            if chosen >= max_targets_per_class:
                break
            target = int(facts.ids[row])
            unique = [
                x
                for x in candidate_expressions(facts, row)
                if satisfying(x, facts).tolist() == [target]
            ]
            if not unique:
                continue
            w = np.array([_weight(x) for x in unique])
            k = min(len(unique), int(rng.integers(1, max_per_target + 1)))
            picks = rng.choice(len(unique), size=k, replace=False, p=w / w.sum())
            got = 0
            for i in sorted(picks.tolist()):
                text, how, said = phrase(
                    unique[i],
                    rng=rng,
                    families=weights,
                    noise_rates=noise_rates,
                    decorate=lambda e, fam: decorations(e, facts, row, fam, rng),  # noqa: B023
                    findable=findable,
                )
                if dedup_key(text) in seen:
                    continue
                seen.add(dedup_key(text))
                out.append(
                    Query(
                        object_id=str(target),
                        object_name=cls,
                        expression=said,
                        description=text,
                        phrasing=how,
                    )
                )
                got += 1
            chosen += got > 0
    return sorted(
        out, key=lambda q: (list(CITYREFER_LABELS).index(q.object_name), int(q.object_id))
    )
