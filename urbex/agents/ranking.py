"""``ranking``: a non-neural **With-GT candidate-ranking baseline** (CityRefer/CityAnchor setting).

City-scale ranking methods (paper §2.1, §4.2, A.3) score a set of precomputed candidate
instances against the description and return the best one; in the paper's "With-GT" protocol the
candidates are the scene's **ground-truth instance boxes**. This policy does the same without a
network: it reads the scene's GT instance table (class, box, mean colour, size, landmark name —
*every* instance of the scene, not the target), the landmark index (a public map) and the
description, scores every candidate with :func:`score_candidates`, and answers the best
candidate's box in the global view on turn 1. It never reads the query's ``object_id`` or
``target_box_*``: it is privileged only in knowing the candidate boxes (With-GT), which is what
makes it a ranking baseline rather than a search policy.

Scoring reads the description's parse (:func:`urbex.language.parse`: target class, colours,
sizes, ordinal, mentions with relations; and its unnamed context objects); all terms are ≤ 0,
0 = the candidate satisfies the phrase, summed per candidate:

* **class** — ``-W_CLASS`` for a candidate of another class than the parse's target class.
* **colour** — the target's colours (parts included, shades folded) vs the candidate's mean RGB:
  the best ``log p(colour | rgb)`` of a soft nearest-palette model in CIELAB (D65),
  ``p ∝ exp(−ΔE76 / T)`` over :data:`PALETTE`.
* **relations** — every mention's relation and every context object's, measured by
  :func:`urbex.agents.relation_terms.relation_terms` (compass and map-frame directions, next to,
  near, in, on a road, the corner of A and B, between A and B, across R from L, at the end of,
  facing, "called X"): ``-W_REL`` per tolerance unit past the tolerance, ``-W_SELF`` for the
  landmark itself, ``-W_CLASS`` for anything but X when the description names X.
* **selectors** — an ordinal (the k-th from a compass end, a map side, the corner or a named
  place: :func:`urbex.agents.relation_terms.ordinal_positions`), else the target's size word
  (``largest``/``small``/``tall``...) pick within the *plausible set*: candidates whose score
  is within :data:`PLAUSIBLE_MARGIN` of the best.

Frames: boxes are BEV ``[x_min, y_min, x_max, y_max]`` in **world metres** (x east, y north)
until the final conversion to global-view units (0–1000).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from urbex.agents.heuristics import _to_units
from urbex.agents.ranking_records import Anchor, Candidates
from urbex.agents.relation_terms import ordinal_positions, relation_terms
from urbex.colour import PALETTE, colour_log_likelihood, exposure_gain, srgb_to_lab
from urbex.env.policy import PolicyBase
from urbex.errors import PolicyError
from urbex.landmarks.table import footprint_bounds
from urbex.language import ContextObject, Parse, context_objects, map_regions, parse

if TYPE_CHECKING:
    import polars as pl
    from PIL import Image

    from urbex.env.episode import GroundingEnv

__all__ = [
    "PALETTE",
    "PLAUSIBLE_MARGIN",
    "W_CLASS",
    "RankingPolicy",
    "Reading",
    "anchors_for",
    "colour_log_likelihood",
    "exposure_gain",
    "read_description",
    "scene_roads",
    "score_candidates",
    "srgb_to_lab",
]

#: Penalty for a candidate of another class than the parse's target class.
W_CLASS = 10.0
#: Penalty for answering the landmark itself to "north of / next to / in X" (never X).
W_SELF = 100.0
#: Weight of each relation's violation (per tolerance unit past the tolerance).
W_REL = 2.0
#: Candidates within this margin of the best filter score form the plausible set of a selector.
PLAUSIBLE_MARGIN = 0.3
#: Size words of the parse → (measure, sign): what a size selector ranks by.
_SIZE_OF: dict[str, tuple[str, float]] = {
    "largest": ("area", 1.0), "large": ("area", 1.0), "smallest": ("area", -1.0),
    "small": ("area", -1.0), "tallest": ("height", 1.0), "tall": ("height", 1.0),
    "lowest": ("height", -1.0), "low": ("height", -1.0), "longest": ("length", 1.0),
    "long": ("length", 1.0),
}  # fmt: skip


# ---------------------------------------------------------------------------------------------
# scoring
# ---------------------------------------------------------------------------------------------


def score_candidates(
    parse: Parse,
    candidates: Candidates,
    anchors: Mapping[str, Anchor] | None = None,
    context: Sequence[ContextObject] = (),
    *,
    roads: Sequence[Anchor] = (),
    regions: Sequence[str] = (),
) -> NDArray[np.float64]:
    """Score every candidate against a description's parse (higher is better; see the module
    docstring).

    Parameters
    ----------
    parse : Parse
        The description's parse (:func:`urbex.language.parse`).
    candidates : Candidates
        The scene's instances (K rows), world metres.
    anchors : mapping of str to Anchor
        Each mentioned landmark's name → its location (:func:`anchors_for`); a mention without
        one is not scored.
    context : sequence of ContextObject
        The description's unnamed context objects (:func:`urbex.language.context_objects`).
    roads : sequence of Anchor
        The scene's roads (what "in front of" an object is measured from).
    regions : sequence of str
        The parts of the map the description names (:func:`urbex.language.map_regions`).

    Returns
    -------
    ndarray, shape (K,), float64
        Scores; ``argmax`` is the answer (ties → the first candidate).

    Examples
    --------
    A red and a blue car, and a red building; a landmark hall at the origin:

    >>> from urbex.language import parse
    >>> c = Candidates.build(class_name=["Car", "Car", "Building"],
    ...     box=[[0, 20, 4, 22], [0, -22, 4, -20], [30, 0, 50, 20]],
    ...     rgb=[[200, 30, 30], [30, 60, 200], [200, 30, 30]])
    >>> hall = {"Merton Hall": Anchor(name="Merton Hall", box=np.array([-5.0, -5.0, 5.0, 5.0]),
    ...                               kind="building")}
    >>> int(np.argmax(score_candidates(parse("the red car"), c)))
    0
    >>> int(np.argmax(score_candidates(parse("the car south of Merton Hall", ["Merton Hall"]), c, hall)))
    1
    >>> int(np.argmax(score_candidates(parse("the red house"), c)))
    2
    """
    k = len(candidates)
    score = np.zeros(k, dtype=np.float64)
    if k == 0:
        return score
    anchors = anchors or {}
    if parse.target_class is not None:
        score -= W_CLASS * (candidates.class_name != parse.target_class)
    if parse.target_colours:  # after the scene's exposure correction (:func:`exposure_gain`)
        rgb = candidates.rgb * exposure_gain(candidates.rgb)
        score += np.max([colour_log_likelihood(c, rgb) for c in parse.target_colours], axis=0)
    for t in relation_terms(parse, candidates, anchors, context, roads=roads, regions=regions):
        if t.kind == "named":
            score -= W_CLASS * t.violation
        else:
            score -= W_REL * t.violation + W_SELF * t.is_self

    # selectors, within the plausible set
    rows = np.flatnonzero(score >= score.max() - PLAUSIBLE_MARGIN)
    top = score.max()
    pos = ordinal_positions(parse, candidates, anchors, rows)
    if pos is not None:
        rank = parse.ordinal.k if parse.ordinal is not None else 1
        score[rows] = top + 1.0 / (1.0 + np.abs(pos - rank))
        return score
    size = next((s for s in parse.sizes if s in _SIZE_OF), None)
    if size is not None and rows.size > 1:
        measure, sign = _SIZE_OF[size]
        ext = candidates.box[:, 2:] - candidates.box[:, :2]
        v = {"area": np.prod(ext, axis=1), "height": candidates.height, "length": ext.max(axis=1)}
        order = np.argsort(-sign * v[measure][rows], kind="stable")
        z = np.empty(rows.size, dtype=np.float64)
        z[order] = 1.0 - np.arange(rows.size) / rows.size
        score[rows] = top + z
    return score


# ---------------------------------------------------------------------------------------------
# the policy
# ---------------------------------------------------------------------------------------------


def _anchor_box(row: dict[str, Any], x: float, y: float) -> NDArray[np.float64]:
    """Footprint bounds (world m) of a landmark row; the point ``(x, y)`` without a footprint."""
    b = footprint_bounds(row)
    return b if b is not None else np.array([x, y, x, y], dtype=np.float64)


def anchors_for(parse: Parse, scene_id: str, index: Any) -> dict[str, Anchor]:
    """Each mentioned landmark's name → its :class:`Anchor` (``index``'s lookup of the name in
    the scene; a name it cannot place is left out)."""
    if index is None:
        return {}
    out: dict[str, Anchor] = {}
    for name in dict.fromkeys(m.name for m in parse.mentions):
        res = index.lookup(name, scene_id=scene_id, limit=1)
        best = res.best or (res.candidates[0] if res.candidates else None)
        if best is None:
            continue
        box = _anchor_box(best.row, best.x, best.y)
        out[name] = Anchor(name=best.name, box=box, kind=str(best.row.get("kind") or ""))
    return out


@dataclass(frozen=True, slots=True)
class Reading:
    """A description as the rankers read it (:func:`read_description`): its parse, context
    objects and map regions, its mentions located, and the scene's roads."""

    parse: Parse
    context: tuple[ContextObject, ...] = ()
    regions: tuple[str, ...] = ()
    anchors: dict[str, Anchor] = field(default_factory=dict)
    roads: tuple[Anchor, ...] = ()

    def score(self, candidates: Candidates) -> NDArray[np.float64]:
        """:func:`score_candidates` of this reading."""
        return score_candidates(self.parse, candidates, self.anchors, self.context,
                                roads=self.roads, regions=self.regions)  # fmt: skip


def scene_roads(index: Any, scene_id: str) -> tuple[Anchor, ...]:
    """The scene's roads (landmarks of kind ``road``) as anchors, world metres."""
    if index is None or "kind" not in index.table.columns:
        return ()
    return _roads(index, scene_id)


@functools.lru_cache(maxsize=64)
def _roads(index: Any, scene_id: str) -> tuple[Anchor, ...]:
    t = index.table
    rows = t.filter((t["scene_id"] == scene_id) & (t["kind"] == "road")).to_dicts()
    return tuple(
        Anchor(name=str(r["name"]), box=_anchor_box(r, float(r["x"]), float(r["y"])), kind="road")
        for r in rows
    )


def read_description(description: str, scene_id: str, index: Any) -> Reading:
    """The parse of ``description`` against ``scene_id``'s landmark names, its context objects
    and map regions, its located anchors and the scene's roads: what both rankers score."""
    names = index.names(scene_id) if index is not None else []
    th = getattr(index, "mention_threshold", 0.9)
    p = parse(description, names, threshold=th)
    return Reading(
        parse=p,
        context=context_objects(description, names, threshold=th),
        regions=map_regions(description, names, threshold=th),
        anchors=anchors_for(p, scene_id, index),
        roads=scene_roads(index, scene_id),
    )


class RankingPolicy(PolicyBase):
    """The With-GT candidate-ranking baseline, bound to an environment (answers on turn 1).

    It reads ``env.query.description`` and ``env.query.scene_id``, the landmark index
    (``env.landmarks``), the global view's transform, and the scene's GT instance table through
    ``instances`` — **never** the query's ``object_id`` or ``target_box_*``.

    Parameters
    ----------
    env
        The environment it plays in.
    instances
        ``scene_id → instance table`` (polars; :mod:`urbex.scene.instances` columns) — the
        With-GT candidate set (the registry passes the env's scene caches).
    candidate_classes
        Rank only these classes (``params.eval.candidate_classes``); None = all.
    """

    def __init__(
        self,
        env: GroundingEnv,
        *,
        instances: Callable[[str], pl.DataFrame],
        candidate_classes: Sequence[str] | None = None,
    ) -> None:
        self.env = env
        self.instances = instances
        self.candidate_classes = None if candidate_classes is None else tuple(candidate_classes)
        self._cands: dict[str, Candidates] = {}

    def candidates(self, scene_id: str) -> Candidates:
        """The scene's candidates (cached per scene).

        Raises
        ------
        PolicyError
            The scene has no candidate instances.
        """
        if scene_id not in self._cands:
            import polars as pl

            t = self.instances(scene_id)
            if self.candidate_classes is not None and "class_name" in t.columns:
                t = t.filter(pl.col("class_name").is_in(list(self.candidate_classes)))
            c = Candidates.from_table(t, scene_id=scene_id)
            if len(c) == 0:
                raise PolicyError(
                    f"ranking: scene {scene_id!r} has no candidate instances"
                    + (
                        f" of classes {list(self.candidate_classes)}"
                        if self.candidate_classes
                        else ""
                    )
                    + "; the With-GT ranking baseline needs the scene's instance table"
                )
            self._cands[scene_id] = c
        return self._cands[scene_id]

    def scores(self, description: str, scene_id: str) -> NDArray[np.float64]:
        """:func:`score_candidates` over the scene's candidates, shape (K,)."""
        return read_description(description, scene_id, self.env.landmarks).score(
            self.candidates(scene_id)
        )

    def predict(self, description: str, scene_id: str) -> NDArray[np.float64]:
        """The top candidate's BEV box (world metres), shape (4,)."""
        s = self.scores(description, scene_id)
        return self.candidates(scene_id).box[int(np.argmax(s))].copy()

    def act(self, messages: list[dict[str, Any]], images: list[Image.Image]) -> str:
        """Answer the top candidate in the global view (``messages``/``images`` unused)."""

        q = self.env.query
        box = self.predict(q.description, q.scene_id)
        units = _to_units(self.env.views["global"], box)
        return f"<answer>{json.dumps({'view_id': 'global', 'bbox_2d': units})}</answer>"
