"""GroundingEnv: the episode life cycle, answer mapping and lifting, outcome, step records, no GT
leak, free-text queries (the tools themselves: test_tools.py)."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from urbex.agents import OraclePolicy
from urbex.config import EnvParams
from urbex.env.episode import GroundingEnv
from urbex.env.play import play_episode
from urbex.env.records import EpisodeOutcome
from urbex.eval.metrics import trajectory_metrics
from urbex.query import Query


def call(tool, **args):
    return f"<tool_call>{json.dumps({'name': tool, 'arguments': args})}</tool_call>"


def units(view, world_box):
    return [round(v) for v in np.clip(view.from_world_box(world_box), 0, 1000)]


def test_answer_maps_exactly_and_lifts_to_3d(env, city):
    q = city[2][0]  # a building
    env.reset(query=q)
    g = env.views["global"]
    box = g.from_world_box(q.target_box_2d)  # exact float units → exact world box
    _, r, term, trunc, info = env.step(
        f'<answer>{{"view_id": "global", "bbox_2d": {box.tolist()}}}</answer>'
    )
    assert term and not trunc
    o = info["outcome"]
    assert isinstance(o, EpisodeOutcome) and o.answered and o.stop_reason == "answer"
    assert o.answer_view_id == "global" and o.answer_box_view == pytest.approx(box.tolist())
    np.testing.assert_allclose(o.pred_box_2d_m, q.target_box_2d, atol=1e-6)
    z0, z1 = o.pred_box_3d_m[2], o.pred_box_3d_m[5]
    assert z0 == pytest.approx(q.target_box_3d[2], abs=0.05) and z1 == pytest.approx(
        q.target_box_3d[5], abs=0.05
    )
    assert r == pytest.approx(o.reward_terminal)
    p = env.params
    assert o.reward_terminal == pytest.approx(
        p.lambda_iou + p.lambda_dist - p.lambda_step / p.max_turns
    )


def test_point_metrics_option_counts_points_for_point_f1(env, city):
    q = city[2][0]
    traj = play_episode(env, OraclePolicy(env), q, seed=0, point_metrics=True)
    c = traj.outcome.point_counts
    assert c is not None and 0 < c.n_both <= min(c.n_pred, c.n_target)
    assert 0.5 < trajectory_metrics(traj, q.target_box_2d[None], 0)["point_f1"] <= 1.0
    assert play_episode(env, OraclePolicy(env), q, seed=0).outcome.point_counts is None
    with pytest.raises(ValueError, match="unknown keys"):
        env.reset(query=q, options={"nope": 1})


def test_point_counts_equal_those_of_the_union_crop(env, city):
    from urbex.env.answering import _lift

    # answers near and far from the target: the counts over the union of the answer's and the
    # target's boxes, as cropping that union counts them, and the lift of the answer's points
    rng = np.random.default_rng(0)
    scene, m = city[0], env.params.answer_lift_margin_m
    checked = 0
    for k, q in enumerate(city[2][:12]):
        env.reset(query=q, options={"point_metrics": True})
        g = env.views["global"]
        t = q.target_box_2d
        shift = rng.normal(0, 3 if k % 2 else 15, 2)
        pred = np.r_[t[:2] + shift, t[2:] + shift + rng.uniform(-2, 2, 2)]
        pred = np.r_[np.minimum(pred[:2], pred[2:]), np.maximum(pred[:2], pred[2:])]
        box = np.clip(g.from_world_box(pred), 0, 1000)
        _, _, _, _, info = env.step(
            f'<answer>{{"view_id": "global", "bbox_2d": {box.tolist()}}}</answer>'
        )
        if "outcome" not in info:
            continue  # a box clipped to nothing by the view's edge
        o, checked = info["outcome"], checked + 1
        p2 = o.pred_box_2d_m
        grown = p2 + np.array([-m, -m, m, m])
        union = np.r_[np.minimum(grown[:2], t[:2]), np.maximum(grown[2:], t[2:])]
        pts = scene.crop_points(union)
        lifted = _lift(scene, q, env.params, p2, pts, env._mentioned())
        in_target = pts.instance == int(q.object_id)
        c = o.point_counts
        assert (c.n_pred, c.n_target, c.n_both) == (
            int(lifted.mask.sum()),
            int(in_target.sum()),
            int((lifted.mask & in_target).sum()),
        ), q.query_id
        np.testing.assert_array_equal(o.pred_box_3d_m, lifted.box_3d_m)
    assert checked >= 10


def test_step_log_rows(env, city):
    q = city[2][-1]
    traj = play_episode(env, OraclePolicy(env), q, seed=0)
    steps = traj.steps
    assert [s.tool for s in steps] == ["landmark_query", "zoom_in", "oblique_render", "answer"]
    assert [s.turn for s in steps] == [1, 2, 3, 4]
    zoom = steps[1]
    assert zoom.arguments["view_id"] == "global" and zoom.view_id == "zoom_1"
    assert zoom.region_m == tuple(env.views["zoom_1"].world_box)  # world metres of the crop
    assert steps[0].region_m is None and steps[0].view_id is None
    assert sum(s.reward for s in steps) == pytest.approx(traj.outcome.reward)
    assert traj.outcome.turns == 4 and traj.n_invalid == 0


def _leaks(text: str, q: Query) -> list[str]:
    t = q.target_box_2d
    c = (t[:2] + t[2:]) / 2
    found = [f"{v:.1f}" for v in [*t, *c] if f"{v:.1f}" in text]
    found += [m for m in re.findall(r"object[_ ]?id\W*\w+", text)]
    if (
        re.search(rf"(?<![\w.]){re.escape(q.object_id)}(?![\w.])", text)
        and f"object {q.object_id}" in text
    ):
        found.append(q.object_id)
    return found


def test_observations_never_contain_ground_truth(env, city):
    rng = np.random.default_rng(0)
    for q in city[2][4:]:  # cars: not landmarks themselves
        obs, _ = env.reset(query=q)
        texts = [obs["text"]]
        policy = OraclePolicy(env)
        for _ in range(3):
            o, *_ = env.step(policy.act([], []))
            texts.append(o["text"])
        for _ in range(3):  # random (valid and invalid) probing
            x, y = sorted(rng.integers(0, 1000, 2)), sorted(rng.integers(0, 1000, 2))
            o, _, _term, _trunc, _ = env.step(
                call(
                    "zoom_in",
                    view_id="global",
                    bbox_2d=[int(x[0]), int(y[0]), int(x[1]) + 1, int(y[1]) + 1],
                )
            )
            texts.append(o["text"])
        blob = "\n".join(texts)
        assert _leaks(blob, q) == [], (q.query_id, _leaks(blob, q))


# --- free-text queries (no ground truth) -----------------------------------------------------


def _free(city, text="the car parked near Merton Hall"):
    return Query(query_id="free", scene_id=city[2][0].scene_id, description=text)


def test_free_text_answer_maps_to_world_box_without_iou(env, city):
    q = _free(city)
    assert not q.has_target and q.object_id == ""
    env.reset(query=q, options={"point_metrics": True})
    _, r_zoom, *_ = env.step(call("zoom_in", view_id="global", bbox_2d=[200, 200, 600, 600]))
    _, r_obl, *_ = env.step(
        call("oblique_render", view_id="zoom_1", bbox_2d=[100, 100, 900, 900], azimuth_deg=90)
    )
    assert r_zoom == 0.0 and r_obl == 0.0  # shaping needs ground truth
    box = [100, 200, 500, 700]
    _, r, terminated, truncated, info = env.step(
        f"<answer>{json.dumps({'view_id': 'zoom_1', 'bbox_2d': box})}</answer>"
    )
    o = info["outcome"]
    assert terminated and not truncated and o.answered
    np.testing.assert_allclose(o.pred_box_2d_m, env.views["zoom_1"].to_world_box(box))
    p3 = o.pred_box_3d_m
    assert p3[5] >= p3[2] and p3[0] == o.pred_box_2d_m[0]
    assert o.point_counts is None  # no ground truth to count against
    p = env.params
    assert r == pytest.approx(-p.lambda_step * 3 / p.max_turns)  # only the step cost is left
    assert o.reward == pytest.approx(r)


def test_free_text_budget_runs_out_without_exception(city):
    cache, index, _ = city
    env = GroundingEnv(EnvParams(global_view_size=(128, 128), max_turns=2), lambda s: cache, index)
    env.reset(query=_free(city))
    env.step("no idea")
    _, r, terminated, truncated, info = env.step(call("landmark_query", name="x", view_id="global"))
    o = info["outcome"]
    assert truncated and not terminated and not o.answered and o.stop_reason == "budget"
    assert o.pred_box_2d_m is None and o.pred_box_3d_m is None
    assert r == pytest.approx(-env.params.lambda_step)  # step cost 2/2; "x" is a valid call


def test_outcome_records_the_terminal_terms_and_the_whole_return(env, city):
    """The outcome holds what the terminal reward was computed from (its terms, the IoU), and
    its return counts every turn's shaping — the last turn of a budget-truncated episode too."""
    from urbex.env import rewards as R

    q = city[2][0]
    env.reset(query=q)
    zoom = call("zoom_in", view_id="global", bbox_2d=units(env.views["global"], q.target_box_2d))
    for _ in range(env.params.max_turns - 1):
        env.step(zoom if env.turn == 0 else "no idea")
    _, _, _, truncated, info = env.step("still no idea")  # the budget's last turn: a penalty
    o = info["outcome"]
    assert truncated and o.stop_reason == "budget" and o.iou_bev == 0.0
    assert o.terminal_terms == R.terminal_terms(
        0.0, float("inf"), env.params.max_turns, **R.weights(env.params)
    )
    assert o.reward_terminal == R.terminal_sum(o.terminal_terms)
    assert o.reward == env.episode_return == pytest.approx(sum(s.reward for s in env.steps))
    assert env.steps[-1].reward_shaping == -env.params.invalid_penalty

    env.reset(query=q)
    g = env.views["global"]
    box = g.from_world_box(q.target_box_2d).tolist()
    env.step(f'<answer>{{"view_id": "global", "bbox_2d": {box}}}</answer>')
    o = env.outcome
    assert o is not None and o.iou_bev == pytest.approx(1.0)
    assert o.terminal_terms["terminal_iou"] == env.params.lambda_iou * o.iou_bev
    with pytest.raises(ValueError, match="terminal_terms"):
        EpisodeOutcome(
            stop_reason="budget", turns=1, reward_shaping=0.0, reward_terminal=1.0,
            terminal_terms={"terminal_iou": 0.0, "terminal_dist": 0.0, "step_cost": -0.1},
            iou_bev=0.0,
        )  # fmt: skip


def test_oracle_refuses_a_free_text_query(env, city):
    from urbex.errors import PolicyError

    with pytest.raises(PolicyError, match=r"ground-truth target.*--object-id"):
        play_episode(env, OraclePolicy(env), _free(city), seed=0)


def test_query_targets_both_or_neither_and_rows_round_trip(city):
    q = city[2][0]
    with pytest.raises(ValueError, match="both"):
        Query(query_id="a", scene_id="s", description="x", target_box_2d=q.target_box_2d)
    free = _free(city)
    assert Query.from_row(free.to_row()) == free
    back = Query.from_row(q.to_row())
    assert back.has_target and np.array_equal(back.target_box_3d, q.target_box_3d)


@pytest.mark.parametrize("xy", [[[5.0, 5.0]], [[5.0, 5.0], [5.0, 5.0]]])
def test_reset_on_zero_extent_scene_shows_its_one_pixel(tmp_path, xy):
    """A scene whose points share one XY (a single point) has a 1-px BEV: reset must not raise
    (the global view covers that pixel) and answering it in the global view works."""
    from urbex.config import SceneParams
    from urbex.pointcloud import PointCloud
    from urbex.scene import SceneCache, build_scene_cache

    n = len(xy)
    cloud = PointCloud(
        xyz=np.column_stack([np.asarray(xy), np.arange(n, dtype=float)]).astype(np.float32),
        offset=np.array([100.0, 200.0, 0.0]),
        rgb=np.full((n, 3), 255, np.uint8),
        class_scheme="sensaturban",
        source="test",
    )
    build_scene_cache(cloud, tmp_path / "s", SceneParams(global_view_size=64), scene_id="s")
    cache = SceneCache.open(tmp_path / "s")
    env = GroundingEnv(EnvParams(global_view_size=(64, 32)), lambda s: cache)
    env.reset(query=Query(query_id="q", scene_id="s", description="the point"))
    g = env.views["global"]
    assert g.image.size == (64, 32) and np.asarray(g.image).max() == 255  # the pixel is shown
    assert g.world_box[2] > g.world_box[0] and g.world_box[3] > g.world_box[1]
    _, _, terminated, _, info = env.step(
        '<answer>{"view_id": "global", "bbox_2d": [0, 0, 1000, 1000]}</answer>'
    )
    assert terminated and info["outcome"].n_pred_points == n


def test_siblings_build_each_global_view_once_and_play_the_same_episodes(city, monkeypatch):
    import threading

    import urbex.env.views as views

    cache, index, qs = city
    built = []
    make = views.make_global_view
    monkeypatch.setattr(views, "make_global_view", lambda *a: built.append(1) or make(*a))
    params = EnvParams(global_view_size=(128, 128), zoom_size=(64, 64))
    env = GroundingEnv(params, lambda sid: cache, index)
    sibs = [env.sibling() for _ in range(6)]
    images = []
    threads = [
        threading.Thread(target=lambda e=e: images.append(e.reset(query=qs[0])[0]["images"][0]))
        for e in sibs
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(built) == 1 and all(im is images[0] for im in images)
    assert env.reset(query=qs[0])[0]["images"][0] is images[0] and len(built) == 1
    alone = GroundingEnv(params, lambda sid: cache, index)  # its own views: the same episode
    a = play_episode(sibs[0], OraclePolicy(sibs[0]), qs[1], seed=3)
    b = play_episode(alone, OraclePolicy(alone), qs[1], seed=3)
    assert [s.model_text for s in a.steps] == [s.model_text for s in b.steps]
    np.testing.assert_array_equal(a.outcome.pred_box_3d_m, b.outcome.pred_box_3d_m)
    assert a.outcome.reward_terminal == b.outcome.reward_terminal and len(built) == 2
    with pytest.raises(ValueError, match="global_view_size"):
        GroundingEnv(EnvParams(), lambda sid: cache, index, global_views=env.global_views)
