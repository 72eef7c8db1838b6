"""Landmark-name lookup: exact → normalised → fuzzy, never a wrong landmark silently.

:meth:`LandmarkIndex.lookup` returns ranked candidates with scores (0–1) and ``found=False`` with
the closest names when the best match is weak or ambiguous; :meth:`LandmarkIndex.mentions` lists
the landmark names a description mentions (n-gram fuzzy matching). Coordinates are world metres.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from numpy.typing import NDArray

from urbex.atomic import PUBLIC
from urbex.config_data import LandmarkParams
from urbex.landmarks.mentions import mention_spans
from urbex.landmarks.names import (
    GENERIC_WORDS,
    distinctive_tokens,
    landmark_kind,
    normalize_name,
)
from urbex.landmarks.table import FOOTPRINT_BOUNDS, read_landmark_table, with_footprint_bounds
from urbex.layout import AssetLayout

__all__ = ["LandmarkIndex", "LookupResult", "Match", "landmark_index"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Match:
    """One lookup candidate.

    Attributes
    ----------
    name : str
        The landmark's name (as in its source).
    score : float
        0–1; 1.0 for exact and normalised matches.
    method : str
        ``exact``, ``normalized`` or ``fuzzy``.
    landmark_id, scene_id : str
    x, y : float
        World centroid, metres (scene frame).
    row : dict
        The whole landmark-table row.
    """

    name: str
    score: float
    method: str
    landmark_id: str
    scene_id: str
    x: float
    y: float
    row: dict[str, Any] = field(repr=False, compare=False)

    def __post_init__(self) -> None:
        if not 0.0 <= self.score <= 1.0:
            raise ValueError(f"Match.score must be in [0, 1], got {self.score}")
        if self.method not in ("exact", "normalized", "fuzzy"):
            raise ValueError(f"Match.method must be exact/normalized/fuzzy, got {self.method!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class LookupResult:
    """The answer to :meth:`LandmarkIndex.lookup`.

    Attributes
    ----------
    query : str
    found : bool
        True when the best candidate is an exact/normalised match, or a fuzzy match scoring at
        least the threshold with no *different* name within the ambiguity margin.
    candidates : tuple[Match, ...]
        Ranked best first (method, then score).
    closest_names : tuple[str, ...]
        Distinct names of the best candidates, filled when not found.
    status : str
        ``exact``, ``normalized``, ``fuzzy``, ``ambiguous``, ``below_threshold`` or ``no_landmarks``.
    """

    query: str
    found: bool
    candidates: tuple[Match, ...]
    closest_names: tuple[str, ...] = ()
    status: str = ""

    @property
    def best(self) -> Match | None:
        """The matched landmark when found, else None."""
        return self.candidates[0] if self.found and self.candidates else None


# Extra query words that do not make the query name another place than the landmark.
_HARMLESS_EXTRA = frozenset({"and", "of", "building"})


def _names_other_place(query_tokens: list[str], name_tokens: list[str]) -> bool:
    """True if the query has a word absent (ratio < 80) from the name that names another place.

    Harmless extras are :data:`_HARMLESS_EXTRA` and words of the name's own (non-``other``)
    kind ("Jesus Green Park" for "Jesus Green").
    """
    from rapidfuzz import fuzz

    kind = landmark_kind(" ".join(name_tokens))
    for t in query_tokens:
        if t in _HARMLESS_EXTRA or max(fuzz.ratio(t, u) for u in name_tokens) >= 80:
            continue
        if kind != "other" and landmark_kind(t) == kind:
            continue
        return True
    return False


_METHOD_RANK = {"exact": 0, "normalized": 1, "fuzzy": 2}


class LandmarkIndex:
    """Name lookup over the landmark tables of one or many scenes.

    Parameters
    ----------
    table
        Landmark rows (:data:`LANDMARK_SCHEMA`). A table with ``footprint_wkt`` but without
        the footprint bounds columns gets them here (:func:`with_footprint_bounds`), so every
        :attr:`Match.row` carries its bounds.
    threshold
        Minimum fuzzy score (0–1) for ``found``.
    ambiguity_margin
        If a candidate with a different normalised name scores within this margin of the best
        fuzzy candidate, the lookup is ambiguous (not found).
    mention_threshold
        Minimum score (0–1) of a description n-gram to count as a mention.

    Raises
    ------
    urbex.errors.LandmarkError
        A footprint of a table without stored bounds is malformed.

    Examples
    --------
    >>> t = pl.DataFrame({"scene_id": ["s"], "name": ["Merton Hall"], "x": [1.0], "y": [2.0]})
    >>> idx = LandmarkIndex(t)
    >>> idx.lookup("mertn hall").best.name
    'Merton Hall'
    >>> idx.lookup("Town Hall").found, idx.lookup("Town Hall").closest_names
    (False, ('Merton Hall',))
    """

    def __init__(
        self,
        table: pl.DataFrame,
        *,
        threshold: float = 0.85,
        ambiguity_margin: float = 0.03,
        mention_threshold: float = 0.9,
    ) -> None:
        if "footprint_wkt" in table.columns and not set(FOOTPRINT_BOUNDS) <= set(table.columns):
            table = with_footprint_bounds(table)
        table = table.with_row_index("_i") if "_i" not in table.columns else table
        if "name_norm" not in table.columns:
            table = table.with_columns(
                pl.col("name")
                .map_elements(normalize_name, return_dtype=pl.String)
                .alias("name_norm")
            )
        if "aliases" not in table.columns:
            table = table.with_columns(pl.lit([], dtype=pl.List(pl.String)).alias("aliases"))
        if "landmark_id" not in table.columns:
            table = table.with_columns(
                (pl.col("scene_id") + ":" + pl.col("_i").cast(pl.String)).alias("landmark_id")
            )
        self._table = table
        self.threshold = float(threshold)
        self.ambiguity_margin = float(ambiguity_margin)
        self.mention_threshold = float(mention_threshold)
        self._rows = table.drop("_i").to_dicts()
        self._scene = np.array(table["scene_id"].to_list(), dtype=object)
        # Flat list of searchable strings: each row's name plus its aliases.
        strings, owner, raw = [], [], []
        for i, r in enumerate(self._rows):
            for s in [r["name"], *(r["aliases"] or [])]:
                strings.append(normalize_name(s))
                raw.append(str(s).strip())
                owner.append(i)
        self._strings = strings
        self._raw = raw
        self._owner = np.array(owner, dtype=np.int64)
        self._tokens = [s.split() for s in strings]

    @classmethod
    def from_params(cls, table: pl.DataFrame, p: LandmarkParams) -> LandmarkIndex:
        """Build with the thresholds of the ``landmarks`` params section."""
        return cls(
            table,
            threshold=p.threshold,
            ambiguity_margin=p.ambiguity_margin,
            mention_threshold=p.mention_threshold,
        )

    @classmethod
    def from_path(cls, path: str | Path, **kwargs: Any) -> LandmarkIndex:
        """Load a landmark Parquet file or a directory of them (see :func:`read_landmark_table`)."""
        return cls(read_landmark_table(path), **kwargs)

    @property
    def table(self) -> pl.DataFrame:
        """The landmark rows (all scenes)."""
        return self._table.drop("_i")

    @property
    def scene_ids(self) -> list[str]:
        """Scenes present in the index, sorted."""
        return sorted(set(self._scene.tolist()))

    def _string_mask(self, scene_id: str | None) -> NDArray[np.bool_]:
        if scene_id is None:
            return np.ones(len(self._strings), dtype=bool)
        return self._scene[self._owner] == scene_id

    def _score(self, q: str, js: NDArray[np.int64]) -> NDArray[np.float64]:
        """Fuzzy score (0–1) of normalised query ``q`` against strings ``js``.

        The maximum of the whole-string ratio, the token-sort ratio and the token-set ratio;
        the token-set ratio (which is 100 for any subset) is discounted unless the query's
        distinctive words are all in the name or the name's distinctive words are all in the
        query, so that "Hall" does not find "Merton Hall". No such credit is given when the query
        has a word the name lacks that names another place ("Merton Hall Road", "Mill Road
        Cemetery" are not "Merton Hall", "Mill Road"); see :func:`_names_other_place`.
        """
        from rapidfuzz import fuzz, process

        choices = [self._strings[j] for j in js]
        full = process.cdist([q], choices, scorer=fuzz.ratio)[0]
        srt = process.cdist([q], choices, scorer=fuzz.token_sort_ratio)[0]
        tset = process.cdist([q], choices, scorer=fuzz.token_set_ratio)[0]
        qt = q.split()
        qd = [t for t in qt if t not in GENERIC_WORDS]
        cov = np.zeros(len(js))
        if qd:
            for k, j in enumerate(js):
                toks = self._tokens[j]
                lc = np.mean(
                    [max(fuzz.ratio(t, u) for u in qt) >= 80 for t in distinctive_tokens(toks)]
                )
                qp = np.mean([max(fuzz.ratio(t, u) for u in toks) >= 80 for t in qd])
                cov[k] = 0.0 if _names_other_place(qt, toks) else max(lc, qp)
        return np.maximum.reduce([full, srt, tset * (0.6 + 0.4 * cov)]) / 100.0

    def _correct(self, q: str, js: NDArray[np.int64]) -> str:
        """``q`` with each word of 3+ letters replaced by the closest landmark word (ratio ≥ 85)."""
        from rapidfuzz import fuzz, process

        vocab = sorted({t for j in js for t in self._tokens[j]})
        out = []
        for t in q.split():
            if len(t) >= 3 and t not in vocab:
                m = process.extractOne(t, vocab, scorer=fuzz.ratio, score_cutoff=85)
                t = m[0] if m is not None else t
            out.append(t)
        return " ".join(out)

    def lookup(self, name: str, *, scene_id: str | None = None, limit: int = 5) -> LookupResult:
        """Find a landmark by name: exact, then normalised, then fuzzy.

        Parameters
        ----------
        name
            The name as the agent/user wrote it.
        scene_id
            Restrict to one scene (None: all scenes of the index).
        limit
            Number of ranked candidates returned.
        """
        q_raw = str(name).strip()
        q = normalize_name(q_raw)
        js = np.flatnonzero(self._string_mask(scene_id))
        if js.size == 0 or not q:
            status = "no_landmarks" if js.size == 0 else "below_threshold"
            return LookupResult(query=q_raw, found=False, candidates=(), status=status)
        fuzzy = self._score(q, js)
        q2 = self._correct(q, js)
        if q2 != q:  # spelling-corrected query, slightly discounted
            fuzzy = np.maximum(fuzzy, 0.98 * self._score(q2, js))
        best: dict[int, tuple[int, float]] = {}  # row -> (method rank, score)
        for j, s in zip(js.tolist(), fuzzy.tolist()):
            if self._raw[j] == q_raw:
                cand = (0, 1.0)
            elif self._strings[j] == q:
                cand = (1, 1.0)
            else:
                cand = (2, min(float(s), 1.0))
            i = int(self._owner[j])
            if i not in best or (cand[0], -cand[1]) < (best[i][0], -best[i][1]):
                best[i] = cand
        order = sorted(best, key=lambda i: (best[i][0], -best[i][1], i))
        methods = ("exact", "normalized", "fuzzy")
        cands = [
            Match(
                name=self._rows[i]["name"],
                score=round(best[i][1], 4),
                method=methods[best[i][0]],
                landmark_id=self._rows[i]["landmark_id"],
                scene_id=self._rows[i]["scene_id"],
                x=float(self._rows[i]["x"]),
                y=float(self._rows[i]["y"]),
                row=self._rows[i],
            )
            for i in order
        ]
        top = cands[0]
        if top.method != "fuzzy":
            found, status = True, top.method
        elif top.score < self.threshold:
            found, status = False, "below_threshold"
        else:
            top_norm = self._rows[order[0]]["name_norm"]
            rival = any(
                c.score >= top.score - self.ambiguity_margin and c.row["name_norm"] != top_norm
                for c in cands[1:]
            )
            found, status = (False, "ambiguous") if rival else (True, "fuzzy")
        closest = () if found else tuple(dict.fromkeys(c.name for c in cands))[:limit]
        return LookupResult(
            query=q_raw,
            found=found,
            candidates=tuple(cands[:limit]),
            closest_names=closest,
            status=status,
        )

    def mentions(self, description: str, scene_id: str) -> list[str]:
        """Landmark names of ``scene_id`` that ``description`` mentions, in order of appearance.

        :func:`urbex.landmarks.mentions.mention_spans` over the normalised description and the
        scene's names and aliases: every n-gram whose length is within one token of a name's is
        compared with it (rapidfuzz ratio); a score of at least ``mention_threshold`` counts.
        Overlapping mentions keep the best-scoring, longest one.

        Examples
        --------
        >>> t = pl.DataFrame({"scene_id": ["s", "s"], "name": ["St Mary's Church", "Kings Parade"],
        ...                   "x": [0.0, 1.0], "y": [0.0, 1.0]})
        >>> LandmarkIndex(t).mentions("the red car on kings pde west of saint marys church", "s")
        ['Kings Parade', "St Mary's Church"]
        """
        words = normalize_name(description).split()
        js = np.flatnonzero(self._string_mask(scene_id))
        spans = mention_spans(
            words, [self._strings[j] for j in js], threshold=self.mention_threshold
        )
        rows = [int(self._owner[js[s.which]]) for s in spans]
        return list(dict.fromkeys(self._rows[i]["name"] for i in rows))

    def names(self, scene_id: str) -> list[str]:
        """Every name and alias of ``scene_id``'s landmarks, as written in the table (what
        :func:`urbex.language.parse` takes as ``landmark_names``)."""
        js = np.flatnonzero(self._string_mask(scene_id))
        return list(dict.fromkeys(self._raw[j] for j in js.tolist()))

    def mentions_many(
        self, descriptions: Iterable[str], scene_ids: Iterable[str]
    ) -> list[list[str]]:
        """:meth:`mentions` over parallel sequences of descriptions and scene ids."""
        return [self.mentions(d, s) for d, s in zip(descriptions, scene_ids, strict=True)]


def landmark_index(lay: AssetLayout, landmarks: LandmarkParams) -> LandmarkIndex | None:
    """The landmark index of ``<assets>/landmarks/*.parquet`` with the thresholds of
    ``landmarks`` (None when there is no table)."""
    d = lay.landmarks
    if not d.exists() or not any(d.glob(f"{PUBLIC}.parquet")):
        return None
    return LandmarkIndex(
        read_landmark_table(d),
        threshold=landmarks.threshold,
        ambiguity_margin=landmarks.ambiguity_margin,
        mention_threshold=landmarks.mention_threshold,
    )
