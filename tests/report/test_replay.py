"""The results page's replay (urbex/report/replay.py): pictures drawn from stored episode and
step rows, over the scenes and landmarks of ``World.open``."""

from __future__ import annotations

import json
from dataclasses import replace

import polars as pl
import pytest
from PIL import Image

from tests.fixtures.city import build_toy_project
from urbex.config import Params
from urbex.eval.episodes import step_schema
from urbex.report.replay import PANEL_PX, Replayer, oblique_placeholder

_STEPS = pl.from_arrow(step_schema().empty_table()).schema


@pytest.fixture(scope="module")
def replayer(tmp_path_factory) -> Replayer:
    assets = build_toy_project(tmp_path_factory.mktemp("replay"))
    p = Params(paths={"assets": assets})
    return Replayer(p.layout, p.env, p.landmarks)


def _episode(replayer: Replayer) -> tuple[dict, pl.DataFrame, str]:
    """An episode row of the toy scene with a landmark lookup, a zoom and an oblique render,
    then the answer; and the name looked up."""
    landmarks = replayer.world.landmarks
    assert landmarks is not None  # the toy project's table, read by World.open
    lm = landmarks.table.row(0, named=True)
    scene_id, name = lm["scene_id"], lm["name"]
    inst = replayer.world.scenes(scene_id).instances.row(0, named=True)
    box = [inst["x_min"] - 5, inst["y_min"] - 5, inst["x_max"] + 5, inst["y_max"] + 5]
    calls = [
        ("landmark_query", {"name": name}, None, [None] * 4),
        ("zoom_in", {"view_id": "global", "bbox_2d": [0, 0, 500, 500]}, "zoom_1", box),
        ("oblique_render", {"view_id": "zoom_1"}, "oblique_2", box),
        ("answer", {"view_id": "zoom_1", "bbox_2d": [100, 100, 900, 900]}, None, [None] * 4),
    ]
    rows = [
        {
            "run_id": "r", "query_id": "q", "scene_id": scene_id, "turn": t, "tool": tool,
            "arguments": json.dumps(args), "valid": True, "error": None, "view_id": view,
            "reward": 0.1, "latency_s": 0.01, "env_s": 0.005, "policy_s": 0.005,
            "model_text": "", **dict(zip(("region_x_min_m", "region_y_min_m", "region_x_max_m",
                                          "region_y_max_m"), region)),
        }
        for t, (tool, args, view, region) in enumerate(calls, start=1)
    ]  # fmt: skip
    ep = {
        "scene_id": scene_id, "object_id": str(inst["object_id"]), "policy": "scripted",
        "valid_answer": True, "pred_x_min": box[0], "pred_y_min": box[1], "pred_x_max": box[2],
        "pred_y_max": box[3],
    }  # fmt: skip
    return ep, pl.DataFrame(rows, schema=_STEPS), name


def test_replay_draws_the_stored_episode(replayer, tmp_path):
    ep, steps, _ = _episode(replayer)
    out = tmp_path / "a.png"
    assert replayer.draw(ep, steps, "the first building", out) == (True, "")
    img = Image.open(out)
    assert img.mode == "P" and img.width > PANEL_PX  # the panel and the view thumbnails
    assert [p.name for p in tmp_path.iterdir()] == ["a.png"]  # no staging file left


def test_replay_draws_the_worlds_landmarks(replayer, tmp_path):
    """The landmark a step looked up is drawn from the world's index; without an index the
    same episode's picture differs (only by the landmark marker)."""
    ep, steps, _ = _episode(replayer)
    replayer.draw(ep, steps, "text", tmp_path / "with.png")
    bare = Replayer(replayer.layout, replayer.env_params, replayer.landmark_params)
    bare.world = replace(replayer.world, landmarks=None)
    bare.draw(ep, steps, "text", tmp_path / "without.png")
    assert (tmp_path / "with.png").read_bytes() != (tmp_path / "without.png").read_bytes()
    bare.draw(ep, steps, "text", tmp_path / "again.png")  # drawing is deterministic
    assert (tmp_path / "again.png").read_bytes() == (tmp_path / "without.png").read_bytes()


def test_replay_without_scene_cache_says_why(replayer, tmp_path):
    ep, steps, _ = _episode(replayer)
    drawn, why = replayer.draw({**ep, "scene_id": "gone"}, steps, "t", tmp_path / "x.png")
    assert not drawn and why == "no scene cache for gone (run urbex cache)"
    assert not (tmp_path / "x.png").exists()


def test_oblique_placeholder_is_a_grey_square():
    img = oblique_placeholder()
    assert img.size == (128, 128) and img.getpixel((2, 2)) == (90, 90, 96)


def test_replay_opens_the_layouts_scenes_two_at_a_time(replayer):
    assert replayer.world.scenes.root == replayer.layout.scenes
    assert replayer.world.scenes.maxsize == 2
