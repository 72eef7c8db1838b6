"""Landmark renaming: teacher episodes in a world whose landmarks carry other names.

A small student trained on one city's few dozen landmark names learns the *names* (it answers a
new scene's query with ``landmark_query("Newton Street Car Park")``, a name from a training
scene) instead of the *skill* (copy the name the description mentions into the call). Renaming
shows it the same scenes under many names: every landmark of the query's scene gets a fresh
name of its kind (road, building, ground, parking) from :class:`urbex.synth.names.NamePool`,
the description mentions the new names, and the episode is played through the real environment
over a landmark index with the new names — so the tool answers are the environment's own, in a
world that differs from the real one only in what its landmarks are called. Geometry, views,
targets and rewards are untouched.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from urbex.landmarks import LandmarkIndex
from urbex.landmarks.names import normalize_name
from urbex.synth.names import NamePool

if TYPE_CHECKING:
    from urbex.landmarks import LandmarkIndex
    from urbex.query import Query

__all__ = ["renamed_world"]

#: Landmark kind → the :class:`~urbex.synth.names.NamePool` draw that names it.
_DRAW = {"road": "road", "building": "building", "ground": "park", "parking": "parking"}


def renamed_world(
    query: Query, index: LandmarkIndex, rng: np.random.Generator, *, style: str = "sensaturban"
) -> tuple[Query, LandmarkIndex] | None:
    """``query`` and ``index`` with every landmark of the query's scene renamed (seeded).

    Returns None when the description mentions a landmark it does not spell exactly as the
    table does (a paraphrased or misspelt mention cannot be rewritten safely), or mentions none.

    Examples
    --------
    >>> import polars as pl
    >>> from urbex.query import Query
    >>> from urbex.landmarks import LandmarkIndex
    >>> t = pl.DataFrame({"scene_id": ["s", "s"], "name": ["Mill Lane", "Clare Park"],
    ...                   "kind": ["road", "ground"], "x": [0.0, 5.0], "y": [0.0, 5.0]})
    >>> q = Query(query_id="q", scene_id="s", description="the car on Mill Lane by clare park")
    >>> q2, idx2 = renamed_world(q, LandmarkIndex(t), np.random.default_rng(0))
    >>> "Mill Lane" in q2.description, idx2.mentions(q2.description, "s") != []
    (False, True)
    """
    import polars as pl

    table = index.table
    mentioned = index.mentions(query.description, query.scene_id)
    if not mentioned:
        return None
    scene = table["scene_id"] == query.scene_id
    rows = table.filter(scene)
    pool = NamePool(rng, style)
    taken = set(table["name"].to_list())  # no new name is an old one, here or elsewhere
    new: dict[str, str] = {}
    for name, kind in zip(rows["name"].to_list(), _kinds(rows), strict=True):
        if name in new:
            continue
        draw = getattr(pool, _DRAW.get(kind, "building"))
        fresh = draw()
        for _ in range(50):
            if fresh not in taken and fresh not in new.values():
                break
            fresh = draw()
        else:
            return None  # the name pool is exhausted: play the episode unrenamed
        new[name] = fresh
    text = query.description
    for name in sorted(mentioned, key=len, reverse=True):
        pattern = re.compile(rf"(?<!\w){re.escape(name)}(?!\w)", re.IGNORECASE)
        if not pattern.search(text):
            return None
        text = pattern.sub(new[name].replace("\\", r"\\"), text)
    names = [new.get(n, n) if s else n for n, s in zip(table["name"], scene, strict=True)]
    columns: dict[str, Any] = {"name": pl.Series("name", names, dtype=pl.String)}
    if "name_norm" in table.columns:
        columns["name_norm"] = pl.Series("name_norm", [normalize_name(n) for n in names])
    if "aliases" in table.columns:
        old = table["aliases"].to_list()
        kept = [[] if s else a for a, s in zip(old, scene, strict=True)]
        columns["aliases"] = pl.Series("aliases", kept, dtype=table.schema["aliases"])
    renamed = table.with_columns(**columns)
    out = LandmarkIndex(
        renamed,
        threshold=index.threshold,
        ambiguity_margin=index.ambiguity_margin,
        mention_threshold=index.mention_threshold,
    )
    return replace(query, description=text), out


def _kinds(rows: Any) -> list[str]:
    if "kind" not in rows.columns:
        return ["building"] * rows.height
    return [str(k or "building") for k in rows["kind"].to_list()]
