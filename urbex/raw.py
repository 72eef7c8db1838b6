"""The raw data set: generate the synthetic default, or register a user's root.

The first asset of the graph. For ``data.source: synthetic`` it writes the synthetic city
(CityRefer layout, plus LAZ and STPLS3D-style copies) under ``<assets>/raw/synthetic``; for any
other source it checks that ``data.root`` exists in that layout and records it in
``<assets>/raw/registered.json``. Either way it returns a :class:`RawDataset` that later stages
read through :mod:`urbex.io.datasets`.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from urbex.atomic import atomic_write, publish_dir, remove_stale, staging_path
from urbex.config import Params
from urbex.config_data import SynthParams
from urbex.errors import ConfigError
from urbex.io.datasets import list_scenes
from urbex.synth import generate_dataset
from urbex.synth.dataset import GENERATOR_VERSION

__all__ = ["RawDataset", "materialize_raw", "raw_dataset", "synthetic_scene_ids"]


@dataclass(frozen=True, slots=True, kw_only=True)
class RawDataset:
    """Where the raw data set lives and in which layout.

    Attributes
    ----------
    source : str
        ``cityrefer`` (also used for the synthetic set, which is written in that layout),
        ``stpls3d`` or ``las``.
    root : Path
        The directory in that layout.
    scene_ids : tuple[str, ...]
        The scenes that later stages process (``data.scenes`` if set, else all found).
    generated : bool
        True when urbex generated it (synthetic).
    found : tuple[str, ...]
        Every scene the data set holds (``scene_ids`` is a selection of them); an annotation of
        a scene outside ``found`` is a defect (dropped as ``unknown_scene``), one of a scene
        found but not selected is out of scope.
    """

    source: str
    root: Path
    scene_ids: tuple[str, ...]
    generated: bool
    found: tuple[str, ...] = ()


def synthetic_scene_ids(synth: SynthParams) -> list[str]:
    """The scene ids the synthetic generator produces for ``synth`` (known without generating)."""
    return [f"synthville_block_{i}" for i in range(synth.scenes)]


def _synth_fingerprint(synth: SynthParams) -> str:
    """The ``synth`` params and the generator's version: either changed → regenerate."""

    blob = json.dumps(
        {**synth.model_dump(mode="json"), "generator_version": GENERATOR_VERSION}, sort_keys=True
    ).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def _select(found: list[str], wanted: list[str] | None, root: Path) -> tuple[str, ...]:
    if wanted is None:
        return tuple(found)
    missing = sorted(set(wanted) - set(found))
    if missing:
        raise ConfigError(
            f"data.scenes lists {missing} but {root} holds only {found}; fix data.scenes "
            "(or data.root / synth.scenes)"
        )
    return tuple(wanted)


def raw_dataset(params: Params) -> RawDataset:
    """Describe the raw data set without generating anything (cheap; used to list partitions)."""

    if params.data.source == "synthetic":
        synth_root = params.layout.raw_synthetic
        every = synthetic_scene_ids(params.synth)
        ids = _select(every, params.data.scenes, synth_root)
        return RawDataset(
            source="cityrefer", root=synth_root, scene_ids=ids, generated=True, found=tuple(every)
        )
    root = params.data_root
    if root is None:
        raise ConfigError(f"data.root must be set when data.source is {params.data.source!r}")
    if not root.is_dir():
        raise ConfigError(
            f"data.root {root} is not a directory (data.source={params.data.source!r})"
        )
    found = list_scenes(params.data.source, root)
    if not found:
        raise ConfigError(
            f"data.root {root} holds no scenes in the {params.data.source!r} layout "
            "(see docs/DATA_FORMATS.md and the README section 'Bring your own data')"
        )
    return RawDataset(
        source=params.data.source,
        root=root,
        scene_ids=_select(found, params.data.scenes, root),
        generated=False,
        found=tuple(found),
    )


def materialize_raw(params: Params, *, force: bool = False, progress: bool = True) -> RawDataset:
    """Generate (synthetic) or register (real) the raw data set; idempotent.

    The synthetic set is regenerated only when the ``synth`` params or the generator's version
    (:data:`urbex.synth.dataset.GENERATOR_VERSION`) changed (a fingerprint is
    kept in ``<root>/.urbex_synth``) or ``force`` is given. Generation writes to a temporary
    sibling directory and renames it into place, so a killed run never leaves a half data set.
    """
    ds = raw_dataset(params)
    if not ds.generated:
        with atomic_write(params.layout.raw_registered, "w") as fh:
            json.dump(
                {"source": ds.source, "root": str(ds.root), "scene_ids": list(ds.scene_ids)},
                fh,
                indent=2,
            )
        return ds

    stamp = ds.root / ".urbex_synth"
    fp = _synth_fingerprint(params.synth)
    if not force and stamp.exists() and stamp.read_text().strip() == fp:
        return ds
    s = params.synth
    remove_stale(ds.root.parent, name=ds.root.name)  # what killed generations left
    tmp_root = staging_path(ds.root)
    try:
        generate_dataset(
            tmp_root,
            scenes=s.scenes,
            seed=s.seed,
            density=s.density,
            size=s.size,
            las_copy=s.las_copy,
            stpls3d_scenes=s.stpls3d_scenes,
            progress=progress,
        )
        (tmp_root / ".urbex_synth").write_text(fp + "\n")
    except BaseException:
        shutil.rmtree(tmp_root, ignore_errors=True)  # no half data set left beside the root
        raise
    publish_dir(tmp_root, ds.root)
    return ds
