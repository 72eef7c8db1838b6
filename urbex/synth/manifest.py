"""The synthetic data set's manifest: what :func:`urbex.synth.dataset.generate_dataset` wrote.

``<out>/synth_manifest.json`` records the generator's params and seed, every scene written
(layout, split, CRS and the offset between the local frame and the CRS, in metres), the planted
defective annotation rows and how each valid row was worded: its paraphrase family, the noise
applied and the phenomena it shows (:data:`urbex.synth.phrasing.PHENOMENA`: context objects,
the map frame, counts, shades, misspelled names, ...).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from urbex.errors import AnnotationError
from urbex.synth.phrasing import Phrasing

__all__ = [
    "DEFECT_REASONS",
    "Defect",
    "PhrasingRecord",
    "SceneEntry",
    "SynthManifest",
    "read_manifest",
]

#: Reasons a planted annotation row is defective.
DEFECT_REASONS = ("duplicate", "empty", "too_short", "missing_instance", "false_segment")


@dataclass(frozen=True, slots=True, kw_only=True)
class Defect:
    """One planted defective annotation row, identified by ``(scene_id, object_id, ann_id)``."""

    scene_id: str
    ann_id: int
    object_id: str
    reason: str

    def __post_init__(self) -> None:
        if self.reason not in DEFECT_REASONS:
            raise ValueError(
                f"Defect.reason: expected one of {DEFECT_REASONS}, got {self.reason!r}"
            )


@dataclass(frozen=True, slots=True, kw_only=True)
class PhrasingRecord:
    """How one valid annotation row, ``(scene_id, object_id, ann_id)``, was worded."""

    scene_id: str
    ann_id: int
    object_id: str
    family: str
    noise: tuple[str, ...] = ()
    phenomena: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        Phrasing(family=self.family, noise=self.noise, phenomena=self.phenomena)  # validates


@dataclass(frozen=True, slots=True, kw_only=True)
class SceneEntry:
    """One written scene. ``offset`` (3,) metres: ``local + offset`` = coordinates in ``crs``."""

    scene_id: str
    layout: str  # "cityrefer" or "stpls3d"
    split: str  # train / val / test ("" for STPLS3D scenes)
    style: str
    seed: int
    crs: str
    offset: tuple[float, float, float]
    n_points: int
    n_instances: int
    n_queries: int


@dataclass(frozen=True, slots=True, kw_only=True)
class SynthManifest:
    """What :func:`generate_dataset` wrote (also stored as ``<out>/synth_manifest.json``)."""

    root: Path
    params: dict[str, Any]
    seed: int
    scenes: tuple[SceneEntry, ...]
    defects: tuple[Defect, ...] = field(default=())
    phrasings: tuple[PhrasingRecord, ...] = field(default=())

    def scene_ids(self, layout: str = "cityrefer") -> list[str]:
        """Scene ids of one layout, in generation order."""
        return [s.scene_id for s in self.scenes if s.layout == layout]

    def to_dict(self) -> dict[str, Any]:
        """JSON-able dict (``root`` is not stored)."""
        return {
            "params": self.params,
            "seed": self.seed,
            "scenes": [
                {k: (list(v) if isinstance(v, tuple) else v) for k, v in _fields(s).items()}
                for s in self.scenes
            ],
            "defects": [_fields(d) for d in self.defects],
            "phrasings": [
                {**_fields(r), "noise": list(r.noise), "phenomena": list(r.phenomena)}
                for r in self.phrasings
            ],
        }


def _fields(obj: Any) -> dict[str, Any]:
    return {k: getattr(obj, k) for k in obj.__slots__}


def read_manifest(path: str | os.PathLike[str]) -> SynthManifest:
    """Read ``synth_manifest.json`` (a file, or the data-set directory holding it).

    Raises
    ------
    AnnotationError
        Missing file or a malformed record.
    """
    p = Path(path)
    if p.is_dir():
        p = p / "synth_manifest.json"
    try:
        raw = json.loads(p.read_text(encoding="utf-8"))
        scenes = tuple(SceneEntry(**{**s, "offset": tuple(s["offset"])}) for s in raw["scenes"])
        defects = tuple(Defect(**d) for d in raw["defects"])
        phrasings = tuple(
            PhrasingRecord(
                **{**r, "noise": tuple(r["noise"]), "phenomena": tuple(r.get("phenomena", ()))}
            )
            for r in raw.get("phrasings", [])
        )  # phrasings absent before GENERATOR_VERSION 2, phenomena before 3
        return SynthManifest(
            root=p.parent,
            params=raw["params"],
            seed=raw["seed"],
            scenes=scenes,
            defects=defects,
            phrasings=phrasings,
        )
    except (OSError, json.JSONDecodeError, KeyError, TypeError, ValueError) as e:
        raise AnnotationError(f"not a valid synth manifest: {e}", path=p) from e
