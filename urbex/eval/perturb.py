"""Landmark-perturbation evaluations (the paper's controlled experiment, appendix D.3, Table 10).

An evaluation run may play every episode against a deliberately degraded landmark map
(``params.eval.landmark_perturbation``):

``none``     the landmark tables as built.
``noise``    every landmark's ``x, y`` (and its footprint) shifted by a seeded random 2D offset of
             length ``eval.landmark_noise_m`` in a uniformly random direction (per landmark).
``missing``  for each query, the landmarks its description mentions are dropped from the index,
             so ``landmark_query`` for them returns "not found" (the other landmarks stay).
``wrong``    within each scene the landmark positions (and footprints) are permuted by a seeded
             single cycle, so every landmark of a scene with at least two landmarks sits where
             another one is; names stay, so a lookup finds the name at a wrong place.

``noise`` and ``wrong`` are static (one perturbed table per run); ``missing`` depends on the query,
so :class:`PerturbedLandmarks` hands out a per-query index (:meth:`PerturbedLandmarks.for_query`).
The perturbation enters the run's fingerprint and default run id (:func:`perturbation_tag`), so
perturbed and clean episodes never mix in one run.

Frames: landmark ``x, y`` and footprints are world metres (scene frame).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from urbex.landmarks import FOOTPRINT_BOUNDS, LandmarkIndex, with_footprint_bounds

if TYPE_CHECKING:
    from urbex.config import EvalParams
    from urbex.landmarks import LandmarkIndex

__all__ = [
    "PERTURBATIONS",
    "LandmarkPerturbation",
    "PerturbedLandmarks",
    "perturb_landmark_table",
    "perturbation_tag",
]

#: The values of ``eval.landmark_perturbation``.
PERTURBATIONS: tuple[str, ...] = ("none", "noise", "missing", "wrong")


def perturbation_tag(mode: str, noise_m: float = 10.0) -> str:
    """The perturbation's label in run ids and tables (``""`` for none).

    >>> perturbation_tag("none"), perturbation_tag("noise", 10.0), perturbation_tag("wrong")
    ('', 'noise10', 'wrong')
    >>> perturbation_tag("noise", 2.5)
    'noise2.5'
    """
    if mode not in PERTURBATIONS:
        raise ValueError(f"landmark_perturbation: expected one of {PERTURBATIONS}, got {mode!r}")
    if mode == "none":
        return ""
    if mode == "noise":
        return f"noise{noise_m:g}"
    return mode


def _shift_wkt(wkts: list[str | None], dx: np.ndarray, dy: np.ndarray) -> list[str | None]:
    """Each footprint translated by ``(dx, dy)`` metres (validated WKT; null/"" kept)."""
    from shapely import affinity, from_wkt

    out: list[str | None] = []
    for w, a, b in zip(wkts, dx.tolist(), dy.tolist()):
        out.append(w if not w else str(affinity.translate(from_wkt(w), xoff=a, yoff=b).wkt))
    return out


def _with_offsets(table: pl.DataFrame, dx: np.ndarray, dy: np.ndarray) -> pl.DataFrame:
    """``table`` with every landmark (``x, y``, footprint, stored bounds) moved by ``(dx, dy)``.

    With a footprint the bounds are re-derived from the shifted WKT (so they are exactly what
    the footprint says, to the last bit); without one the stored bounds are shifted.
    """

    sx, sy = pl.Series(dx, dtype=pl.Float64), pl.Series(dy, dtype=pl.Float64)
    out = table.with_columns((pl.col("x") + sx).alias("x"), (pl.col("y") + sy).alias("y"))
    if "footprint_wkt" in table.columns:
        with_footprint_bounds(table)  # validate first: a bad footprint fails here, not later
        fps = _shift_wkt(table["footprint_wkt"].to_list(), dx, dy)
        out = out.with_columns(pl.Series("footprint_wkt", fps, dtype=pl.String))
        return with_footprint_bounds(out)
    if set(FOOTPRINT_BOUNDS) <= set(table.columns):
        x0, y0, x1, y1 = FOOTPRINT_BOUNDS
        out = out.with_columns(
            (pl.col(c) + d).alias(c) for c, d in ((x0, sx), (y0, sy), (x1, sx), (y1, sy))
        )
    return out


def perturb_landmark_table(
    table: pl.DataFrame, mode: str, *, noise_m: float = 10.0, seed: int = 0
) -> pl.DataFrame:
    """The landmark table under a static perturbation (``noise``, ``wrong``; else unchanged).

    Parameters
    ----------
    table
        Landmark rows with world ``x, y`` (metres) per :data:`urbex.landmarks.LANDMARK_SCHEMA`;
        the footprint bounds (``fp_*_m``) and ``footprint_wkt`` are translated along when
        present (bounds are derived first for a table that has a footprint but no bounds).
    mode
        One of :data:`PERTURBATIONS`; ``none`` and ``missing`` return ``table`` unchanged
        (``missing`` is per query, see :class:`PerturbedLandmarks`).
    noise_m
        ``noise``: every landmark moves by exactly this distance (metres), random direction.
    seed
        Seeds the directions (``noise``) or the permutation (``wrong``).

    Raises
    ------
    urbex.errors.LandmarkError
        A footprint of a table without stored bounds is malformed.

    Examples
    --------
    >>> t = pl.DataFrame({"scene_id": ["s", "s", "t"], "name": ["A", "B", "C"],
    ...                   "x": [0.0, 10.0, 5.0], "y": [0.0, 0.0, 5.0]})
    >>> n = perturb_landmark_table(t, "noise", noise_m=10.0)
    >>> np.hypot(n["x"] - t["x"], n["y"] - t["y"]).round(6).to_list()
    [10.0, 10.0, 10.0]
    >>> perturb_landmark_table(t, "wrong")["x"].to_list()   # A and B swap; C is alone in t
    [10.0, 0.0, 5.0]
    """
    perturbation_tag(mode, noise_m)
    if mode in ("none", "missing") or table.height == 0:
        return table
    rng = np.random.default_rng(seed)
    n = table.height
    if mode == "noise":
        theta = rng.uniform(0.0, 2.0 * np.pi, size=n)
        return _with_offsets(table, noise_m * np.cos(theta), noise_m * np.sin(theta))
    # wrong: a seeded single cycle inside each scene (no landmark keeps its own position)
    x = table["x"].to_numpy().astype(np.float64)
    y = table["y"].to_numpy().astype(np.float64)
    src = np.arange(n)
    scenes = table["scene_id"].to_numpy()
    for sid in sorted(set(scenes.tolist())):
        rows = np.flatnonzero(scenes == sid)
        if rows.size < 2:
            continue
        order = rows[rng.permutation(rows.size)]
        src[order] = np.roll(order, -1)  # order[i] takes the position of order[i + 1]
    return _with_offsets(table, x[src] - x, y[src] - y)


class PerturbedLandmarks:
    """The landmark index an evaluation run plays against, per query.

    Parameters
    ----------
    index
        The clean index (``None``: no landmarks; every perturbation is then a no-op).
    mode, noise_m, seed
        As :func:`perturb_landmark_table`.

    Examples
    --------
    >>> from urbex.landmarks import LandmarkIndex
    >>> t = pl.DataFrame({"scene_id": ["s", "s"], "name": ["Merton Hall", "Kings Parade"],
    ...                   "x": [0.0, 50.0], "y": [0.0, 0.0]})
    >>> pert = PerturbedLandmarks(LandmarkIndex(t), "missing")
    >>> idx = pert.for_query("the car north of Merton Hall", "s")
    >>> idx.lookup("Merton Hall", scene_id="s").found, idx.lookup("Kings Parade").found
    (False, True)
    """

    def __init__(
        self, index: LandmarkIndex | None, mode: str, *, noise_m: float = 10.0, seed: int = 0
    ) -> None:
        self.mode = mode
        self.tag = perturbation_tag(mode, noise_m)
        self.clean = index
        self._cache: dict[tuple[str, tuple[str, ...]], LandmarkIndex] = {}
        self.index: LandmarkIndex | None = index
        if index is not None and mode in ("noise", "wrong"):
            table = perturb_landmark_table(index.table, mode, noise_m=noise_m, seed=seed)
            self.index = self._rebuild(index, table)

    @staticmethod
    def _rebuild(index: LandmarkIndex, table: pl.DataFrame) -> LandmarkIndex:

        return LandmarkIndex(
            table,
            threshold=index.threshold,
            ambiguity_margin=index.ambiguity_margin,
            mention_threshold=index.mention_threshold,
        )

    @classmethod
    def from_eval(cls, index: LandmarkIndex | None, e: EvalParams) -> PerturbedLandmarks:
        """With ``e.landmark_perturbation`` / ``landmark_noise_m`` / ``..._seed``."""
        return cls(
            index,
            e.landmark_perturbation,
            noise_m=e.landmark_noise_m,
            seed=e.landmark_perturbation_seed,
        )

    def for_query(self, description: str, scene_id: str) -> Any:
        """The index for one query (``missing``: without the landmarks it mentions)."""
        if self.mode != "missing" or self.clean is None:
            return self.index
        names = tuple(self.clean.mentions(description, scene_id))
        if not names:
            return self.clean
        key = (scene_id, names)
        if key not in self._cache:
            t = self.clean.table
            drop = (pl.col("scene_id") == scene_id) & pl.col("name").is_in(list(names))
            self._cache[key] = self._rebuild(self.clean, t.filter(~drop))
            if len(self._cache) > 256:  # bounded: a run visits many queries
                self._cache.pop(next(iter(self._cache)))
        return self._cache[key]


@dataclass(frozen=True, slots=True, kw_only=True)
class LandmarkPerturbation:
    """The landmark map a run plays against (:mod:`urbex.eval.perturb`).

    Only the parameters that mean something for the mode are set: ``noise`` has ``noise_m``
    (metres) and ``seed``; ``wrong`` has ``seed``; ``missing`` and ``none`` have neither.

    >>> LandmarkPerturbation(mode="noise", noise_m=10.0, seed=0).tag
    'noise10'
    >>> LandmarkPerturbation().tag
    'none'
    >>> LandmarkPerturbation(mode="missing", seed=0)
    Traceback (most recent call last):
    ...
    ValueError: landmark perturbation 'missing': seed must be None (only noise/wrong are seeded), got 0
    """

    mode: str = "none"
    noise_m: float | None = None
    seed: int | None = None

    def __post_init__(self) -> None:

        if self.mode not in PERTURBATIONS:
            raise ValueError(
                f"landmark perturbation mode: expected one of {PERTURBATIONS}, got {self.mode!r}"
            )
        if self.mode == "noise":
            if not isinstance(self.noise_m, int | float) or isinstance(self.noise_m, bool):
                raise ValueError(
                    f"landmark perturbation 'noise': noise_m must be a number of metres, "
                    f"got {self.noise_m!r}"
                )
            if not (math.isfinite(self.noise_m) and self.noise_m > 0):
                raise ValueError(
                    f"landmark perturbation 'noise': noise_m must be > 0 m, got {self.noise_m!r}"
                )
            object.__setattr__(self, "noise_m", float(self.noise_m))
        elif self.noise_m is not None:
            raise ValueError(
                f"landmark perturbation {self.mode!r}: noise_m must be None (only noise has "
                f"it), got {self.noise_m!r}"
            )
        if self.mode in ("noise", "wrong"):
            if not (isinstance(self.seed, int) and not isinstance(self.seed, bool)):
                raise ValueError(
                    f"landmark perturbation {self.mode!r}: seed must be an int, got {self.seed!r}"
                )
        elif self.seed is not None:
            raise ValueError(
                f"landmark perturbation {self.mode!r}: seed must be None (only noise/wrong are "
                f"seeded), got {self.seed!r}"
            )

    @classmethod
    def from_eval(cls, e: EvalParams) -> LandmarkPerturbation:
        """``e.landmark_perturbation`` with the parameters its mode uses."""
        mode = e.landmark_perturbation
        return cls(
            mode=mode,
            noise_m=e.landmark_noise_m if mode == "noise" else None,
            seed=e.landmark_perturbation_seed if mode in ("noise", "wrong") else None,
        )

    @property
    def tag(self) -> str:
        """The label in run ids and tables: ``none``, ``noise10``, ``missing``, ``wrong``."""

        if self.mode == "noise":
            assert self.noise_m is not None
            return perturbation_tag(self.mode, self.noise_m)
        return perturbation_tag(self.mode) or "none"

    def fingerprint(self) -> dict[str, Any] | None:
        """The run fingerprint's ``landmark_perturbation`` entry (None when clean)."""
        if self.mode == "none":
            return None
        fp: dict[str, Any] = {"mode": self.mode}
        if self.seed is not None:
            fp["seed"] = self.seed
        if self.noise_m is not None:
            fp["noise_m"] = self.noise_m
        return fp
