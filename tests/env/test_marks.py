"""Numbered marks (``env.marks``): views draw and list the scene's proposals, answers name a
shown mark, bad mark answers are invalid turns, old caches name the rebuild command, and box
answers snap to proposals (``env.answer_snap``)."""

from __future__ import annotations

import json
import re
import shutil

import numpy as np
import pytest
from PIL import Image
from pydantic import ValidationError

from urbex.agents import OraclePolicy
from urbex.config import EnvParams
from urbex.config_env import MarksParams
from urbex.env.episode import GroundingEnv
from urbex.env.marks import (
    MarkState,
    ViewMark,
    draw_marks,
    marks_text,
    marks_under_bev,
    relation_words,
)
from urbex.env.play import play_episode
from urbex.errors import StaleCacheError
from urbex.geometry import iou_2d
from urbex.scene import SceneCache

SIZES = {"global_view_size": (256, 256), "zoom_size": (128, 128), "oblique_size": (96, 96)}


def call(tool, **args):
    return f"<tool_call>{json.dumps({'name': tool, 'arguments': args})}</tool_call>"


def marked_env(city, **marks) -> GroundingEnv:
    cache, index, _ = city
    params = EnvParams(**SIZES, marks={"enabled": True, **marks})
    return GroundingEnv(params, lambda sid: cache, index)


def best_mark(cache, q) -> int:
    props = cache.proposals
    ious = [float(iou_2d(q.target_box_2d, b)) for b in props.box_2d_m]
    return int(props.mark_id[int(np.argmax(ious))])


def zoom_on_target(env, q, factor: float = 3.0) -> dict:
    g = env.views["global"]
    t = q.target_box_2d
    c, half = (t[:2] + t[2:]) / 2, np.maximum(t[2:] - t[:2], 8.0) * factor / 2
    box = np.clip(np.rint(g.from_world_box(np.r_[c - half, c + half])), 0, 1000).astype(int)
    obs, *_ = env.step(call("zoom_in", view_id="global", bbox_2d=box.tolist()))
    return obs


def test_marks_off_is_the_papers_protocol(env, city):
    _, _, queries = city
    env.reset(query=queries[0])
    assert env.marks is None and env.marks_shown is None
    zoom = zoom_on_target(env, queries[0])
    assert "Marks in" not in zoom["text"] and env.views["zoom_1"].marks == ()
    _, _, term, _, info = env.step('<answer>{"mark": 1}</answer>')
    assert not term and "exactly the keys" in info["step"].error


def test_zoom_lists_and_draws_its_marks_nearest_the_centre_first(city):
    cache, _, queries = city
    env = marked_env(city)
    q = queries[0]
    env.reset(query=q)
    obs = zoom_on_target(env, q)
    z = env.views["zoom_1"]
    assert z.marks and obs["images"][0] is z.image
    listed = [int(m) for m in re.findall(r"(?:^[a-z]+: |; )(\d+) ", obs["text"], re.M)]
    assert sorted(listed) == sorted(m.mark_id for m in z.marks)
    for line in obs["text"].splitlines()[2:-1]:  # one line per class, nearest first
        cls, _, rest = line.partition(": ")
        ids = [int(e.split()[0]) for e in rest.split("; ")]
        assert ids == [m.mark_id for m in z.marks if m.class_name.lower() == cls]
    assert best_mark(cache, q) in listed and set(listed) <= env.marks_shown
    centre = [np.hypot(*(np.add(m.box_view[:2], m.box_view[2:]) / 2 - 500)) for m in z.marks]
    assert centre == sorted(centre)  # from the view's centre outwards
    # the listed box is the proposal's box in the zoom's units
    m = z.marks[0]
    props = cache.proposals
    want = np.clip(np.rint(z.from_world_box(props.box_2d_m[props.row(m.mark_id)])), 0, 1000)
    assert list(m.box_view) == want.astype(int).tolist()
    # drawn marks changed the image
    plain = cache.bev_window(z.world_box, out_size=z.size).image
    assert any(m.drawn for m in z.marks) and not np.array_equal(np.asarray(z.image), plain)


def test_answer_by_mark_takes_the_proposals_boxes_and_points(city):
    cache, _, queries = city
    env = marked_env(city)
    q = queries[0]
    env.reset(query=q, options={"point_metrics": True})
    zoom_on_target(env, q)
    mark = best_mark(cache, q)
    _, _, term, _, info = env.step(f'<answer>{{"mark": {mark}}}</answer>')
    o = info["outcome"]
    props = cache.proposals
    row = props.row(mark)
    assert term and o.answered and o.answer_mark == mark and not o.snapped
    np.testing.assert_array_equal(o.pred_box_2d_m, props.box_2d_m[row])
    np.testing.assert_array_equal(o.pred_box_3d_m, props.box_3d_m(row))
    assert o.n_pred_points == props.n_points[row]
    assert o.iou_bev == pytest.approx(float(iou_2d(props.box_2d_m[row], q.target_box_2d)))
    assert o.point_counts is not None and o.point_counts.n_pred == props.n_points[row]
    assert info["step"].arguments == {"mark": mark}


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        ('{"mark": "7"}', "must be an integer mark id, got str"),
        ('{"mark": 7.0}', "must be an integer mark id, got float"),
        ('{"mark": true}', "must be an integer mark id, got bool"),
        ('{"mark": -1}', "must be >= 0"),
        ('{"mark": 99999}', "mark 99999 was never shown; marks shown so far: ["),
        ('{"mark": 1, "view_id": "global", "bbox_2d": [0, 0, 9, 9]}', "a mark or a box, not both"),
        ('{"mark": 1, "why": "x"}', 'exactly the key "mark"'),
    ],
)
def test_bad_mark_answers_are_invalid_turns_naming_the_problem(city, answer, error):
    _, _, queries = city
    env = marked_env(city)
    env.reset(query=queries[0])
    zoom_on_target(env, queries[0])
    _, r, term, trunc, info = env.step(f"<answer>{answer}</answer>")
    assert not term and not trunc and not info["step"].valid
    assert error in info["step"].error and r == pytest.approx(-env.params.invalid_penalty)


def test_a_mark_never_shown_is_invalid_until_a_view_shows_it(city):
    cache, _, queries = city
    env = marked_env(city, min_label_px=10_000)  # the global view draws (shows) nothing
    q = queries[0]
    env.reset(query=q)
    mark = best_mark(cache, q)
    assert env.marks_shown == frozenset()
    _, _, term, _, info = env.step(f'<answer>{{"mark": {mark}}}</answer>')
    assert not term and "marks shown so far: none" in info["step"].error
    zoom_on_target(env, q)
    _, _, term, _, info = env.step(f'<answer>{{"mark": {mark}}}</answer>')
    assert term and info["outcome"].answer_mark == mark


def test_the_global_view_shows_the_legible_marks(city):
    cache, _, queries = city
    env = marked_env(city)
    env.reset(query=queries[0])
    g = env.views["global"]
    assert g.marks and all(m.drawn for m in g.marks)
    assert env.marks_shown == {m.mark_id for m in g.marks}
    assert len(g.marks) <= len(cache.proposals)


def test_landmark_query_prints_the_surroundings_box_with_marks_on(city, env):
    _, _, queries = city
    q = next(q for q in queries if "called" in q.description)
    name = q.description.split("called ")[1]
    env.reset(query=q)
    plain, *_ = env.step(call("landmark_query", name=name, view_id="global"))
    assert "surroundings" not in plain["text"]
    menv = marked_env(city, context_m=10.0)
    menv.reset(query=q)
    obs, *_ = menv.step(call("landmark_query", name=name, view_id="global"))
    box = json.loads(re.search(r"surroundings box (\[[^\]]+\])", obs["text"]).group(1))
    g = menv.views["global"]
    got = g.to_world_box(box)
    assert np.all(got[:2] <= q.target_box_2d[:2] - 9.0) or np.any(np.array(box) == 0)
    assert np.all(got[2:] >= q.target_box_2d[2:] + 9.0) or np.any(np.array(box) == 1000)


def test_marks_name_the_landmark_they_cover(city):
    _, _, queries = city
    q = next(q for q in queries if "called" in q.description)
    name = q.description.split("called ")[1]
    env = marked_env(city)
    env.reset(query=q)
    obs = zoom_on_target(env, q)
    assert re.search(rf'^building: .*\d+ "{name}" \[', obs["text"], re.M)


def test_oblique_views_list_their_marks(city):
    _, _, queries = city
    env = marked_env(city)
    q = queries[0]
    env.reset(query=q)
    zoom_on_target(env, q)
    z = env.views["zoom_1"]
    box = np.clip(np.rint(z.from_world_box(q.target_box_2d)), 0, 1000).astype(int).tolist()
    obs, *_ = env.step(call("oblique_render", view_id="zoom_1", bbox_2d=box, azimuth_deg=180))
    o = env.views.last("oblique")
    assert o.marks and 'Marks in "oblique_' in obs["text"]
    assert {m.mark_id for m in o.marks} <= env.marks_shown


def test_the_oracle_answers_the_target_mark(city):
    cache, _, queries = city
    env = marked_env(city)
    for q in queries[:4]:
        traj = play_episode(env, OraclePolicy(env), q, seed=0)
        assert traj.outcome.answer_mark == best_mark(cache, q)
        assert traj.outcome.iou_bev > 0.5


def test_remind_ends_every_tool_text_with_the_query(city):
    """``marks.remind``: each tool text's last line repeats the query (after the marks and the
    turns left), so the description stands right before the answer; off, no tool text does."""
    cache, _, queries = city
    q = queries[0]
    for remind in (True, False):
        env = marked_env(city, remind=remind)
        env.reset(query=q)
        text = zoom_on_target(env, q)["text"]
        last = text.splitlines()[-1]
        assert (last == f"Query: {q.description.strip()}") is remind
        assert ("\nQuery: " in text) is remind and 'Marks in "zoom_1"' in text
        traj = play_episode(env, OraclePolicy(env), q, seed=0)
        assert traj.outcome.answer_mark == best_mark(cache, q)


@pytest.mark.parametrize("remind", [True, "listings"])
def test_remind_listings_ends_only_the_texts_that_list_marks_with_the_query(city, remind):
    """``marks.remind: listings``: a ``landmark_query`` text ends on its own lines (the boxes
    the next ``zoom_in`` copies), a zoom's listing ends with the query; ``true``: both do."""
    cache, _, queries = city
    q = queries[0]
    env = marked_env(city, remind=remind)
    env.reset(query=q)
    looked, *_ = env.step(call("landmark_query", name="Merton Hall", view_id="global"))
    assert looked["text"].startswith("landmark_query:")
    ends = f"\nQuery: {q.description.strip()}"
    assert looked["text"].endswith(ends) is (remind is True)
    assert zoom_on_target(env, q)["text"].endswith(ends)
    traj = play_episode(env, OraclePolicy(env), q, seed=0)
    assert traj.outcome.answer_mark == best_mark(cache, q)


def test_remind_refuses_another_word_naming_the_field():
    with pytest.raises(ValidationError, match="remind"):
        EnvParams(**SIZES, marks={"enabled": True, "remind": "always"})


def test_marks_on_a_cache_built_before_proposals_name_the_rebuild_command(city, tmp_path):
    cache, index, queries = city
    old = tmp_path / cache.scene_id
    shutil.copytree(cache.path, old)
    meta = json.loads((old / "meta.json").read_text())
    meta.pop("n_proposals")
    (old / "meta.json").write_text(json.dumps(meta))
    opened = SceneCache.open(old)
    env = GroundingEnv(EnvParams(**SIZES, marks={"enabled": True}), lambda sid: opened, index)
    with pytest.raises(StaleCacheError, match=rf"urbex cache --scene {cache.scene_id} --force"):
        env.reset(query=queries[0])
    # marks off: the same cache still plays
    plain = GroundingEnv(EnvParams(**SIZES), lambda sid: opened, index)
    plain.reset(query=queries[0])


def test_box_answers_snap_to_the_best_proposal_of_the_described_class(city):
    cache, index, queries = city
    q = queries[0]
    params = EnvParams(**SIZES, answer_snap="proposal", snap_min_iou=0.3)
    env = GroundingEnv(params, lambda sid: cache, index)
    env.reset(query=q)
    g = env.views["global"]
    t = q.target_box_2d
    loose = np.r_[t[:2] - 0.3 * (t[2:] - t[:2]), t[2:] + 0.3 * (t[2:] - t[:2])]  # 2.6x the area
    box = np.clip(g.from_world_box(loose), 0, 1000).tolist()
    _, _, term, _, info = env.step(
        f"<answer>{json.dumps({'view_id': 'global', 'bbox_2d': box})}</answer>"
    )
    o, args = info["outcome"], info["step"].arguments
    mark = best_mark(cache, q)
    assert term and o.snapped and o.answer_mark == mark
    assert args["snap"]["mark"] == mark and len(args["snap"]["answer_box_2d_m"]) == 4
    props = cache.proposals
    np.testing.assert_array_equal(o.pred_box_2d_m, props.box_2d_m[props.row(mark)])
    assert o.iou_bev > float(iou_2d(np.asarray(args["snap"]["answer_box_2d_m"]), t))


def test_a_box_far_from_every_proposal_stands_and_says_why(city):
    cache, index, queries = city
    q = queries[0]
    params = EnvParams(**SIZES, answer_snap="proposal", snap_min_iou=0.3)
    env = GroundingEnv(params, lambda sid: cache, index)
    env.reset(query=q)
    _, _, term, _, info = env.step(
        '<answer>{"view_id": "global", "bbox_2d": [0, 0, 3, 3]}</answer>'
    )
    o = info["outcome"]
    assert term and not o.snapped and o.answer_mark is None
    assert "overlaps the box enough" in info["step"].arguments["snap"]["kept"]


def test_marks_text_and_drawing_edge_cases():
    assert marks_text("zoom_3", [], "attributes") == 'Marks in "zoom_3": none.'
    img = Image.new("RGB", (64, 64))
    tiny = [ViewMark(mark_id=1, class_name="Car", box_view=(10, 10, 30, 30))]
    out, marks = draw_marks(img, tiny, EnvParams().marks)  # 1.3 px wide: listed, not drawn
    assert not marks[0].drawn and np.asarray(out).max() == 0
    assert marks_under_bev(_Empty(), np.zeros(4), lambda b: b, limit=None) == []


class _Empty:
    box_2d_m = np.zeros((0, 4))
    mark_id = np.zeros(0, np.int32)
    class_name = np.zeros(0, str)


def test_shuffled_mark_ids_are_what_the_agent_sees_and_answers(city):
    """SFT's augmentation (``sft.mark_shuffle_rate``): the episode shows shuffled ids; an answer
    names a shown id and the outcome records the scene's own mark."""
    cache, _, queries = city
    env = marked_env(city)
    q = queries[0]
    env.shuffle_mark_ids(7)
    env.reset(query=q)
    zoom_on_target(env, q)
    z = env.views["zoom_1"]
    mark = best_mark(cache, q)
    shown_id = env.marks.display(mark)
    assert shown_id != mark and shown_id in [m.mark_id for m in z.marks]
    _, _, term, _, info = env.step(f'<answer>{{"mark": {shown_id}}}</answer>')
    assert term and info["outcome"].answer_mark == mark
    env.shuffle_mark_ids(None)
    env.reset(query=q)
    assert env.marks.display(mark) == mark


def test_episode_numbering_numbers_marks_1_2_3_as_first_shown(city):
    """``marks.numbering: episode``: the ids the agent sees are 1, 2, 3 … in the order the views
    first show the marks (the global view's drawn marks, then each zoom's listing in its order);
    a mark keeps its number in later views; an answer by that number is the scene's own mark,
    and the shuffle (SFT's augmentation) is not used."""
    cache, _, queries = city
    q = queries[0]
    env = marked_env(city, numbering="episode")
    env.shuffle_mark_ids(7)  # unused with episode numbering
    env.reset(query=q)
    glob = [m.mark_id for m in env.views["global"].marks]
    assert glob == list(range(1, len(glob) + 1))
    obs = zoom_on_target(env, q)
    z = env.views["zoom_1"]
    listed = [int(m) for m in re.findall(r"(?:^[a-z]+: |; )(\d+) ", obs["text"], re.M)]
    assert listed == [m.mark_id for m in z.marks]  # listing order is numbering order
    new = [i for i in listed if i not in glob]
    assert glob and new and new == list(range(len(glob) + 1, len(glob) + 1 + len(new)))
    assert env.marks_shown == set(range(1, len(glob) + len(new) + 1))
    scene_of = {env.marks.scene(i): i for i in listed}
    zoom_on_target(env, q, factor=2.0)  # the same marks keep their numbers
    for m in env.views["zoom_2"].marks:
        sid = env.marks.scene(m.mark_id)
        assert sid not in scene_of or scene_of[sid] == m.mark_id
    mark = best_mark(cache, q)
    shown_id = env.marks.display(mark)
    assert shown_id <= len(env.marks_shown)
    _, _, term, _, info = env.step(f'<answer>{{"mark": {shown_id}}}</answer>')
    assert term and info["outcome"].answer_mark == mark
    env.reset(query=q)  # a new episode numbers from 1 again, the global view alike
    assert [m.mark_id for m in env.views["global"].marks] == glob
    assert env.marks_shown == set(glob)


def test_episode_numbering_keeps_the_oracle_on_the_target_mark(city):
    cache, _, queries = city
    env = marked_env(city, numbering="episode")
    for q in queries[:4]:
        traj = play_episode(env, OraclePolicy(env), q, seed=0)
        assert traj.outcome.answer_mark == best_mark(cache, q)
        assert traj.outcome.iou_bev > 0.5


def test_episode_numbering_refuses_to_renumber_a_mark(city):
    cache, _, _ = city
    state = MarkState(proposals=cache.proposals, params=MarksParams(numbering="episode"))
    a, b, c = (int(v) for v in cache.proposals.mark_id[:3])
    assert state.number([b, a]) == {b: 1, a: 2} and state.displayed(a) is None  # not kept yet
    state.commit({b: 1, a: 2})
    assert state.number([c, a]) == {c: 3, a: 2} and state.scene(2) == a
    with pytest.raises(ValueError, match=f"mark {a}: numbered 2"):
        state.commit({a: 5})
    # a picture names a mark as the agent saw it; one never numbered keeps its scene id
    assert state.label(a) == 2 and state.label(c) == c and state.label(None) is None


def test_relate_lists_where_each_mark_lies_from_the_queried_landmark(city):
    """``marks.relate``: after a ``landmark_query``, each listed mark (but the landmark's own)
    says its side of that landmark, computed from the two world boxes; before any query, and
    with it off, no line does."""
    cache, index, queries = city
    q = next(q for q in queries if index.mentions(q.description, q.scene_id))
    name = index.mentions(q.description, q.scene_id)[0]
    for relate in (True, False):
        env = marked_env(city, relate=relate, describe="attributes", layout="id_last")
        env.reset(query=q)
        first = zoom_on_target(env, q)["text"]  # nothing queried yet
        assert not re.search(r' (north|south|east|west) of "', first)
        env.step(call("landmark_query", name=name, view_id="global"))
        text = zoom_on_target(env, q, factor=4.0)["text"]
        lines = [ln for ln in text.splitlines() if re.search(r" = \d+$", ln)]
        assert lines
        related = [ln for ln in lines if re.search(r' (north|south|east|west) of "', ln)]
        assert bool(related) is relate
        if relate:
            anchor = env.marks.anchors[-1]
            for m in env.views["zoom_2"].marks:
                box = cache.proposals.box_2d_m[cache.proposals.row(env.marks.scene(m.mark_id))]
                want = (
                    () if m.name == anchor[0] else tuple(relation_words(box, anchor[1], anchor[0]))
                )
                assert m.relations == want
            assert len(related) >= len(lines) - 1
            traj = play_episode(env, OraclePolicy(env), q, seed=0)
            assert traj.outcome.answer_mark == best_mark(cache, q)
