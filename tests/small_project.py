"""A tiny urbex project on disk (params.yaml + assets/) for CLI and pipeline tests."""

from __future__ import annotations

from pathlib import Path

import yaml

REPO_ROOT = Path(__file__).resolve().parents[1]

#: Overrides of the repository's params.yaml (every section stays present, as DVC needs).
SMALL_PARAMS = {
    "paths": {"assets": "assets"},
    "data": {"source": "synthetic", "root": None, "scenes": None},
    "synth": {
        "scenes": 2,
        "seed": 3,
        "density": 4.0,
        "size": 60.0,
        "las_copy": False,
        "stpls3d_scenes": 0,
    },
    "scene": {"resolution": 0.25, "global_view_size": 256},
}


def write_small_project(root: Path, **updates: dict) -> Path:
    """Write ``root/params.yaml`` for a 2-scene, 60 m synthetic city; return its path."""
    params = yaml.safe_load((REPO_ROOT / "params.yaml").read_text())
    for key, upd in SMALL_PARAMS.items():
        params.setdefault(key, {}).update(upd)
    for key, upd in updates.items():
        params.setdefault(key, {}).update(upd)
    root.mkdir(parents=True, exist_ok=True)
    path = root / "params.yaml"
    path.write_text(yaml.safe_dump(params))
    return path
