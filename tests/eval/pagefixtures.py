"""A small evaluated project for the results-page tests (library and browser)."""

from __future__ import annotations

import shutil
from pathlib import Path

import polars as pl
from PIL import Image

from tests.env.envfixtures import build_eval_project
from urbex.config import Params
from urbex.eval.runner import evaluate
from urbex.eval.runspec import RunSpec


def page_params(assets: Path) -> Params:
    return Params(paths={"assets": assets}, eval={"workers": 1, "chunk_size": 8})


def build_page_project(root: Path) -> Path:
    """Two real runs (oracle on test_no, landmark_prior on test_nd), a zero-episode run
    ``empty``, a run ``ghost`` whose scene cache is gone (its pictures cannot be drawn), a
    diagnostics plot and a checkpoint's training curves. Returns the assets path."""
    assets = build_eval_project(root)
    p = page_params(assets)
    evaluate(p, RunSpec.from_params(p, policy="oracle", split="test_no"), progress=False)
    r = evaluate(
        p, RunSpec.from_params(p, policy="landmark_prior", split="test_nd"), progress=False
    )
    (assets / "eval" / "runs" / "empty" / "episodes").mkdir(parents=True)
    ghost = assets / "eval" / "runs" / "ghost"
    shutil.copytree(r.run_dir, ghost)
    for shard in (ghost / "episodes").glob("*.parquet"):
        df = pl.read_parquet(shard).with_columns(pl.lit("gone_scene").alias("scene_id"))
        df.write_parquet(shard)
    (ghost / "metrics.parquet").unlink()
    (assets / "eval" / "diagnostics").mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (64, 48), (200, 30, 30)).save(assets / "eval" / "diagnostics" / "plot.png")
    (assets / "checkpoints" / "tiny").mkdir(parents=True)
    Image.new("RGB", (80, 40), (30, 30, 200)).save(
        assets / "checkpoints" / "tiny" / "train_curves.png"
    )
    return assets
