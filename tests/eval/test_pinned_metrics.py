"""Behaviour pin: oracle, landmark_prior and ranking_rules give the same episodes as before the refactor.

The figures in ``data/pinned_episodes.json`` were written by the code *before* the episode loop,
the trajectory record and the metrics were unified (issue 9), on the two-scene synthetic project
of :func:`tests.fixtures.city.build_eval_project`, and rewritten on purpose since (issue 12:
the generator's paraphrase families and noise change every description; the answer lift no longer
reads a class noun inside a landmark name; issue 23: the generator's people-like phrasing and
shades change the descriptions and the shaded objects' colours, and the rules and the landmark
prior read the one parse of a description). Every per-episode figure must stay the same: a
refactor that changes one number changed behaviour.

Regenerate only on purpose (a deliberate behaviour change, named in the commit)::

    .venv/bin/python -m tests.eval.test_pinned_metrics
"""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.city import build_eval_project
from urbex.config import Params
from urbex.eval.runner import evaluate
from urbex.eval.runspec import RunSpec

PIN = Path(__file__).parent / "data" / "pinned_episodes.json"
POLICIES = ("oracle", "landmark_prior", "ranking_rules")  # ranking_rules: "ranking" until issue 12
SPLITS = ("test_nd", "test_no")
#: Per-episode figures pinned (everything but times and run ids).
FIELDS = (
    "valid_answer",
    "answer_view_id",
    "pred_x_min",
    "pred_y_min",
    "pred_z_min",
    "pred_x_max",
    "pred_y_max",
    "pred_z_max",
    "iou_bev",
    "iou_3d",
    "point_f1",
    "center_dist_m",
    "target_rank",
    "target_rank_ciou",
    "hit1",
    "hit3",
    "turns",
    "n_landmark_query",
    "n_zoom_in",
    "n_oblique_render",
    "n_invalid",
    "reward",
    "stop_reason",
)


def _round(v: Any) -> Any:
    if isinstance(v, float):
        return None if not math.isfinite(v) else round(v, 9)
    return v


def measure(assets: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """``{"<policy>/<split>": {query_id: {field: value}}}`` of a fresh evaluation."""
    params = Params(paths={"assets": assets}, eval={"workers": 1, "chunk_size": 4})
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for policy in POLICIES:
        for split in SPLITS:
            r = evaluate(
                params, RunSpec.from_params(params, policy=policy, split=split), progress=False
            )
            import polars as pl

            eps = pl.concat(
                [pl.read_parquet(p) for p in sorted((r.run_dir / "episodes").glob("*.parquet"))]
            ).sort("query_id")
            out[f"{policy}/{split}"] = {
                row["query_id"]: {f: _round(row[f]) for f in FIELDS}
                for row in eps.iter_rows(named=True)
            }
    return out


@pytest.fixture(scope="module")
def measured(tmp_path_factory) -> dict[str, dict[str, dict[str, Any]]]:
    return measure(build_eval_project(tmp_path_factory.mktemp("pinned")))


@pytest.mark.parametrize("run", [f"{p}/{s}" for p in POLICIES for s in SPLITS])
def test_every_episode_figure_is_unchanged(measured, run):
    pinned = json.loads(PIN.read_text())[run]
    got = measured[run]
    assert sorted(got) == sorted(pinned), "the evaluated queries changed"
    diffs = [
        (qid, f, pinned[qid][f], got[qid][f])
        for qid in pinned
        for f in FIELDS
        if pinned[qid][f] != got[qid][f]
    ]
    assert not diffs, f"{len(diffs)} figures changed, e.g. {diffs[:5]}"


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        data = measure(build_eval_project(Path(tmp)))
    PIN.parent.mkdir(exist_ok=True)
    PIN.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    print(f"wrote {PIN}: {sum(len(v) for v in data.values())} episodes")
