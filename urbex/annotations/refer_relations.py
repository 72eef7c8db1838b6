"""STPLS3D-Refer's richer template families: rows and ordinals, nearest-to-anchor, colour + size.

:func:`urbex.annotations.stpls3d_refer.generate_expressions` asks these functions for more
candidate expressions per pseudo-instance; each candidate comes with the mask of every
instance that satisfies it, so the caller keeps it only when that mask is the target alone
(verified unique). The families:

* **ordinal within a row** — parked cars side by side form a row (same orientation, centres on
  one line, gaps of at most :data:`ROW_MAX_GAP_M`); a row is named without landmarks when its
  size is unique ("the row of 7 cars") or it is the extreme one in a compass direction ("the
  northernmost row of cars"), and a car in it by its position from an end ("the third car from
  the north end of the row of 7 cars");
* **nearest to an anchor** — the car (or building) closest to a unique object ("the tallest
  building", "the only orange building") or to a landmark / road ("the car closest to Childs
  Drive"), only when it is closer than the runner-up by :data:`NEAREST_MARGIN_M`;
* **colour + size** — "the largest red car", when it beats the other cars of that colour by the
  superlative margin.

Frames: world metres (x east, y north), as the pseudo-instance table.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl
from numpy.typing import NDArray

from urbex.geometry import gap_2d

__all__ = [
    "NEAREST_MARGIN_M",
    "ROW_MAX_GAP_M",
    "Candidate",
    "anchor_candidates",
    "car_rows",
    "colour_size_candidates",
    "row_candidates",
]

#: Largest gap (m) between successive car centres of one row (one empty bay of ~2.5 m allowed).
ROW_MAX_GAP_M = 5.5
#: Largest sideways offset (m) between the centres of cars of one row.
ROW_ALIGN_M = 1.0
#: Fewest cars that make a row.
ROW_MIN_CARS = 3
#: A row's extreme ("the northernmost row") must beat the runner-up by this much (m).
ROW_EXTREME_MARGIN_M = 5.0
#: Positions from either end that get an ordinal phrase.
MAX_ORDINAL = 5
#: "the car closest to X" needs the winner this much (m) closer than the runner-up.
NEAREST_MARGIN_M = 2.0
#: Anchors farther than this (m, box to box) are not used for "closest to".
NEAREST_MAX_M = 40.0

_ORDINALS = ("first", "second", "third", "fourth", "fifth")


@dataclass(frozen=True, slots=True, kw_only=True)
class Candidate:
    """One candidate expression of one target.

    Attributes
    ----------
    target : int
        Row index of the target in the instance table.
    template : str
        Template family (``row_ordinal``, ``nearest_object``, ``nearest_landmark``, ...).
    description : str
    mask : ndarray, shape (M,), bool
        Every instance the expression fits (kept only when it is the target alone).
    landmark : str
        The landmark name the expression mentions (``""`` for a landmark-free one).
    """

    target: int
    template: str
    description: str
    mask: NDArray[np.bool_]
    landmark: str = ""


def _one(m: int, i: int) -> NDArray[np.bool_]:
    out = np.zeros(m, dtype=bool)
    out[i] = True
    return out


def car_rows(
    cls: NDArray[np.object_], cxy: NDArray[np.float64], dxy: NDArray[np.float64]
) -> list[tuple[NDArray[np.int64], int]]:
    """Rows of parked cars: ``[(indices sorted along the row, axis), ...]``.

    Parameters
    ----------
    cls : ndarray, shape (M,), object
        Class names (``Car`` rows only are used).
    cxy, dxy : ndarray, shape (M, 2), float64
        Box centres and sizes, world metres.

    Returns
    -------
    list
        ``axis`` 1 (the row runs south → north; cars lie east-west, side by side) or 0 (west →
        east). Cars whose footprint is nearly square (no clear orientation) are in no row.

    Examples
    --------
    >>> import numpy as np
    >>> cls = np.array(["Car"] * 4, dtype=object)
    >>> cxy = np.array([[0.0, 0.0], [0.0, 2.5], [0.2, 5.0], [0.0, 30.0]])
    >>> dxy = np.array([[4.5, 1.8]] * 4)
    >>> [(r.tolist(), a) for r, a in car_rows(cls, cxy, dxy)]
    [([0, 1, 2], 1)]
    """
    out: list[tuple[NDArray[np.int64], int]] = []
    is_car = cls == "Car"
    long_x = dxy[:, 0] >= dxy[:, 1] + 0.8
    long_y = dxy[:, 1] >= dxy[:, 0] + 0.8
    for cars, axis in ((is_car & long_x, 1), (is_car & long_y, 0)):
        idx = np.flatnonzero(cars)
        if idx.size < ROW_MIN_CARS:
            continue
        across = cxy[idx, 1 - axis]
        order = idx[np.argsort(across, kind="stable")]
        # lines: runs of centres whose sideways coordinate differs by <= ROW_ALIGN_M
        cuts = np.flatnonzero(np.diff(cxy[order, 1 - axis]) > ROW_ALIGN_M) + 1
        for line in np.split(order, cuts):
            line = line[np.argsort(cxy[line, axis], kind="stable")]
            gaps = np.flatnonzero(np.diff(cxy[line, axis]) > ROW_MAX_GAP_M) + 1
            for row in np.split(line, gaps):
                if row.size >= ROW_MIN_CARS:
                    out.append((row.astype(np.int64), axis))
    return out


def _row_names(
    rows: Sequence[tuple[NDArray[np.int64], int]], cxy: NDArray[np.float64]
) -> list[list[str]]:
    """Landmark-free names of each row that no other row shares."""
    sizes = [r.size for r, _ in rows]
    names: list[list[str]] = [[] for _ in rows]
    for k, (r, _) in enumerate(rows):
        if sizes.count(r.size) == 1:
            names[k].append(f"the row of {r.size} cars")
    if len(rows) >= 2:
        cent = np.array([cxy[r].mean(axis=0) for r, _ in rows])
        for word, axis, sign in (
            ("northernmost", 1, 1.0), ("southernmost", 1, -1.0),
            ("easternmost", 0, 1.0), ("westernmost", 0, -1.0),
        ):  # fmt: skip
            v = sign * cent[:, axis]
            top = int(np.argmax(v))
            if v[top] - np.max(np.delete(v, top)) >= ROW_EXTREME_MARGIN_M:
                names[top].append(f"the {word} row of cars")
    return names


def row_candidates(
    cls: NDArray[np.object_], cxy: NDArray[np.float64], dxy: NDArray[np.float64]
) -> list[Candidate]:
    """Ordinal phrases within a uniquely named row ("the second car from the west end of the
    row of 7 cars"); landmark-free. Each names one car of one unique row (mask = that car)."""
    m = cls.size
    rows = car_rows(cls, cxy, dxy)
    names = _row_names(rows, cxy)
    out: list[Candidate] = []
    for (row, axis), row_names in zip(rows, names):
        if not row_names:
            continue
        lo, hi = ("south", "north") if axis == 1 else ("west", "east")
        n = row.size
        for p, i in enumerate(row.tolist()):
            k, end = (p, lo) if p <= n - 1 - p else (n - 1 - p, hi)
            if k >= MAX_ORDINAL:
                continue
            for rn in row_names:
                desc = (
                    f"the car at the {end} end of {rn}"
                    if k == 0
                    else f"the {_ORDINALS[k]} car from the {end} end of {rn}"
                )
                out.append(
                    Candidate(target=i, template="row_ordinal", description=desc, mask=_one(m, i))
                )
    return out


def _boxes_m(inst: pl.DataFrame) -> NDArray[np.float64]:
    """Every instance's BEV box ``(M, 4)`` ``[x_min, y_min, x_max, y_max]``, world metres."""
    return np.stack(
        [inst[c].to_numpy().astype(np.float64) for c in ("x_min", "y_min", "x_max", "y_max")],
        axis=-1,
    ).reshape(-1, 4)


def _geometry_gaps(inst: pl.DataFrame, geom: object) -> NDArray[np.float64]:
    """Distance (m) from every instance box to one landmark footprint (shapely polygon, line
    or point: not a box, so not :func:`urbex.geometry.gap_2d`)."""
    import shapely

    boxes = shapely.box(*_boxes_m(inst).T)
    return np.asarray(shapely.distance(boxes, geom), dtype=np.float64)


def _nearest(gaps: NDArray[np.float64], scope: NDArray[np.bool_]) -> int | None:
    """The index of ``scope`` nearest by ``gaps`` if it beats the runner-up by the margin."""
    idx = np.flatnonzero(scope & np.isfinite(gaps))
    if idx.size == 0:
        return None
    order = idx[np.argsort(gaps[idx], kind="stable")]
    best = int(order[0])
    if gaps[best] > NEAREST_MAX_M:
        return None
    if order.size > 1 and gaps[order[1]] - gaps[best] < NEAREST_MARGIN_M:
        return None
    return best


def anchor_candidates(
    inst: pl.DataFrame,
    cls: NDArray[np.object_],
    col: NDArray[np.object_],
    anchors: Sequence[tuple[int, str]],
    landmarks: pl.DataFrame,
) -> list[Candidate]:
    """ "the [colour] car closest to <anchor>": anchors are unique objects (``(row index, short
    phrase)``, e.g. ``(0, "the tallest building")``: landmark-free) and the landmarks (their
    name: landmark-bound). The nearest instance of the class (and colour) must beat the
    runner-up by :data:`NEAREST_MARGIN_M`; the anchor itself is never a candidate."""
    import shapely

    m = inst.height
    out: list[Candidate] = []
    targets: list[tuple[str, str, NDArray[np.float64], NDArray[np.bool_], str]] = []
    box_m = _boxes_m(inst)
    for a, phrase in anchors:
        not_self = np.ones(m, dtype=bool)
        not_self[a] = False
        gaps = np.asarray(gap_2d(box_m, box_m[a]), dtype=np.float64)
        targets.append(("nearest_object", phrase, gaps, not_self, ""))
    if landmarks.height:
        boxes = shapely.box(*box_m.T)
        for name, wkt in zip(landmarks["name"].to_list(), landmarks["footprint_wkt"].to_list()):
            g = shapely.from_wkt(wkt)
            # an instance that *is* the landmark (covers most of its footprint) is no candidate
            inter = np.asarray(shapely.area(shapely.intersection(boxes, g)), dtype=np.float64)
            not_self = ~(inter > 0.5 * max(float(shapely.area(g)), 1e-9))
            gaps = _geometry_gaps(inst, g)
            targets.append(("nearest_landmark", str(name), gaps, not_self, str(name)))
    for tmpl, phrase, gaps, ok, lm in targets:
        for c in ("Car", "Building"):
            noun = "car" if c == "Car" else "building"
            scope = ok & (cls == c)
            best = _nearest(gaps, scope)
            if best is not None:
                out.append(
                    Candidate(
                        target=best,
                        template=tmpl,
                        description=f"the {noun} closest to {phrase}",
                        mask=_one(m, best),
                        landmark=lm,
                    )
                )
            for colour in sorted(set(col[scope].tolist()) - {"unknown"}):
                cb = _nearest(gaps, scope & (col == colour))
                if cb is not None and cb != best:
                    out.append(Candidate(target=cb, template=f"colour_{tmpl}", description=f"the {colour} {noun} closest to {phrase}", mask=_one(m, cb), landmark=lm))  # fmt: skip
    return out


def colour_size_candidates(
    cls: NDArray[np.object_],
    col: NDArray[np.object_],
    area: NDArray[np.float64],
    margin: float,
) -> list[Candidate]:
    """ "the largest / smallest <colour> car in the scene", when the target's footprint beats
    every other one of that class and colour by ``margin`` (a ratio); landmark-free."""
    m = cls.size
    out: list[Candidate] = []
    for c, noun in (("Car", "car"), ("Building", "building")):
        for colour in sorted(set(col[cls == c].tolist()) - {"unknown"}):
            scope = (cls == c) & (col == colour)
            idx = np.flatnonzero(scope)
            if idx.size < 2:
                continue
            vals = area[idx]
            for word, k, ok in (
                ("largest", int(idx[np.argmax(vals)]), np.sort(vals)[-1] >= margin * np.sort(vals)[-2]),
                ("smallest", int(idx[np.argmin(vals)]), np.sort(vals)[0] * margin <= np.sort(vals)[1]),
            ):  # fmt: skip
                if ok:
                    out.append(Candidate(target=k, template="colour_size", description=f"the {word} {colour} {noun} in the scene", mask=_one(m, k)))  # fmt: skip
    return out
