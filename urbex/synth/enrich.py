"""More true facts for a description, as people give them: shades, hedges, parts, shapes,
context objects, the map, counts.

:func:`decorations` lists, for a unique *core* expression of one target and one paraphrase
family, the richer expressions to try, richest first. Each adds facts true of the target —
``also`` facts (its walls, shape, colour, a context object, its part of the map), a count of
the group it belongs to (:class:`~urbex.synth.predicates.Counted`), its colour worded as its
own shade or hedged ("dark grey or black") — and each is kept only if it still selects exactly
the target (:func:`urbex.synth.expressions.satisfying`). A family's rates (:data:`RATES`) say
how often each fact is added; ``detailed`` adds them all and leaves them out one by one until
its wording fits.

Frames: the block's local world frame (metres), as in :mod:`urbex.synth.facts`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import numpy as np

from urbex.synth.candidates import LOCATION, context_facts
from urbex.synth.expressions import (
    Expression,
    Extreme,
    Filter,
    HasColour,
    IsLandmark,
    OnRoad,
    Ordinal,
    SceneFacts,
    filter_names,
    satisfying,
)
from urbex.synth.predicates import (
    MAP_SIDES,
    Context,
    Counted,
    FacingSide,
    HasShape,
    HasWalls,
    MapRegion,
    MapRelation,
)
from urbex.synth.wording import HEDGES

__all__ = ["MAX_COUNT", "RATES", "decorations"]

#: Largest group people count ("one of the nine cars"); larger ones are not counted.
MAX_COUNT = 9
_ALL = {"shade": 0.85, "hedge": 0.15, "walls": 1.0, "shape": 0.35, "colour": 1.0, "context": 0.45,
        "region": 0.3, "side": 0.5, "facing": 0.8, "count": 0.6}  # fmt: skip
_SOME = {"shade": 0.8, "hedge": 0.12, "walls": 0.8, "shape": 0.1, "colour": 0.7,
         "context": 0.2, "region": 0.12, "side": 0.35, "facing": 0.5, "count": 0.6}  # fmt: skip
#: Family → chance of each decoration (absent: never).
RATES: Mapping[str, Mapping[str, float]] = {
    "plain": _SOME,
    "two_sentence": _SOME,
    "relative": {**_SOME, "context": 0.2, "region": 0.2, "count": 0.2},
    "only": {"shade": 0.55, "hedge": 0.08, "walls": 0.2, "shape": 0.15},
    "detailed": _ALL,
    "fronted": {"shade": 0.55, "hedge": 0.08},
    "existential": {**_SOME, "count": 1.0},
}
# What "detailed" leaves out first when its wording runs long.
_DROP_ORDER = ("region", "side", "shape", "count", "facing", "walls", "context", "colour")


def _is_location(f: Filter) -> bool:
    return isinstance(f, LOCATION) or (isinstance(f, Context) and f.target_first)


def _recolour(
    e: Expression, facts: SceneFacts, row: int, rng: np.random.Generator, rates: Mapping
) -> Expression:
    """The colour filter worded as the target's own shade, or hedged (if still unique)."""
    k = next((i for i, f in enumerate(e.filters) if isinstance(f, HasColour)), None)
    if k is None or isinstance(e.selector, Ordinal):  # a shade would change the ranked group
        return e
    c = e.filters[k]
    assert isinstance(c, HasColour)
    new: HasColour | None = None
    if facts.shade[row] and rng.random() < rates.get("shade", 0.0):
        new = HasColour(c.colour, shade=str(facts.shade[row]))
    elif c.colour in HEDGES and rng.random() < rates.get("hedge", 0.0):
        new = HasColour(c.colour, among=HEDGES[c.colour][1])
    if new is None:
        return e
    out = dataclasses.replace(e, filters=(*e.filters[:k], new, *e.filters[k + 1 :]))
    return out if satisfying(out, facts).tolist() == [int(facts.ids[row])] else e


def _region(facts: SceneFacts, row: int) -> MapRegion | None:
    one = np.zeros(len(facts.ids), bool)
    one[row] = True
    return next((MapRegion(s) for s in MAP_SIDES[::-1] if MapRegion(s).mask(facts, one)[row]), None)


def _extras(e: Expression, facts: SceneFacts, row: int) -> dict[str, Filter]:
    """Facts true of the target that ``e`` does not state yet, by decoration name."""
    said = (*e.filters, *e.also)
    has = lambda t: any(isinstance(f, t) for f in said)  # noqa: E731
    cls = str(facts.cls[row])
    out: dict[str, Filter] = {}
    if facts.wall_colour[row] and not has(HasWalls):
        out["walls"] = HasWalls(str(facts.wall_colour[row]), str(facts.wall_shade[row]))
    if facts.shape[row] and cls != "Car" and not has(HasShape):
        out["shape"] = HasShape(str(facts.shape[row]))
    if cls in ("Car", "Building") and not has(HasColour):
        out["colour"] = HasColour(str(facts.colour[row]), shade=str(facts.shade[row]))
    ctx = [c for c in context_facts(facts, row, limit=2) if c not in said]
    if ctx:
        out["context"] = ctx[0]
    region = _region(facts, row)
    if region is not None and not has(MapRegion):
        out["region"] = region
    one = np.zeros(len(facts.ids), bool)
    one[row] = True
    named = {n for f in said for n in filter_names(f)}  # a landmark is related to once
    near = [
        str(facts.landmark[r])
        for r in np.flatnonzero(facts.landmark != "")
        if r != row and facts.landmark[r] not in named
    ]
    for key, kind, sides in (
        ("side", MapRelation, ("left", "right")),
        ("facing", FacingSide, ("front", "back")),
    ):
        if not has(kind):
            hit = [kind(n, s) for n in near for s in sides if kind(n, s).mask(facts, one)[row]]  # type: ignore[arg-type]
            if hit:
                out[key] = hit[0]
    return out


def _with_count(e: Expression, facts: SceneFacts) -> Expression | None:
    """``e`` with the size of the group it picks its target from (``None`` if it has none or
    the group is too large to count): the selector's candidates, or — without a selector — the
    instances its location filters leave, of which its other filters single the target out."""
    if any(isinstance(f, Counted | IsLandmark) for f in e.filters):
        return None
    group: tuple[Filter, ...]
    rest: tuple[Filter, ...] = ()
    if isinstance(e.selector, Ordinal):
        group = (*e.filters, OnRoad(e.selector.road))
    elif isinstance(e.selector, Extreme):
        group = e.filters
    else:
        group = tuple(f for f in e.filters if _is_location(f))
        rest = tuple(f for f in e.filters if not _is_location(f))
        if not rest or not group:
            return None
    n = len(satisfying(Expression(object_name=e.object_name, filters=group), facts))
    if not 2 <= n <= MAX_COUNT:
        return None
    return dataclasses.replace(e, filters=(*group, Counted(n), *rest))


def decorations(
    core: Expression,
    facts: SceneFacts,
    row: int,
    family: str,
    rng: np.random.Generator,
) -> list[Expression]:
    """Richer expressions of the target at ``row`` for ``family``, richest first.

    Parameters
    ----------
    core
        An expression selecting exactly the target.
    facts
        The block's facts.
    row
        The target's row in ``facts``.
    family
        The paraphrase family that will word it (its :data:`RATES` apply).
    rng
        Draws which decorations are added (deterministic per seed).

    Returns
    -------
    list of Expression
        Each selects exactly the target; the last is the leanest (for ``detailed``, each
        leaves out one more decoration, in the order :data:`_DROP_ORDER`; ``existential``
        without a count possible is the core alone).
    """
    target = [int(facts.ids[row])]
    rates = RATES.get(family, {})
    base = _recolour(core, facts, row, rng, rates)
    extras = _extras(base, facts, row)
    chosen = [k for k in extras if rng.random() < rates.get(k, 0.0)]
    want_count = rng.random() < rates.get("count", 0.0)

    def build(keep: list[str], count: bool) -> Expression | None:
        e = dataclasses.replace(base, also=(*base.also, *(extras[k] for k in keep)))
        if count:
            e2 = _with_count(e, facts)
            if e2 is None:
                return None
            e = e2
        return e if satisfying(e, facts).tolist() == target else None

    out: list[Expression] = []
    keep, count = list(chosen), want_count
    steps = [None, *_DROP_ORDER] if family == "detailed" else [None]
    for drop in steps:
        if drop == "count":
            count = False
        elif drop in keep:
            keep.remove(drop)
        e = build(keep, count)
        if e is None and count:
            e = build(keep, False)
        if e is not None and e not in out:
            out.append(e)
    if family == "existential":
        out = [e for e in out if any(isinstance(f, Counted) for f in e.filters)] + [core]
    return out or [core]
