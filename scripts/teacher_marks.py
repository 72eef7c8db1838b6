"""The anchored teacher's mark answers on a split: the ids they name, and what matching words can get.

usage: .venv/bin/python scripts/teacher_marks.py PARAMS [SPLIT]

Plays the anchored teacher (every episode zooms on the printed surroundings box, no deliberate
mistakes) on ``SPLIT`` (default ``val``) with the params' ``env.marks`` and prints:

* how many queries it answers by a mark, and its hits (BEV IoU >= 0.5);
* the ids its answers name as the agent sees them (median, 90th percentile, largest, share
  above 99) and the largest id an episode showed — scene ids against ``numbering: episode``;
* the Hit@1 ceiling of a reader that only matches words in the last zoom's listing: a uniform
  pick among the listed marks of the described class, then among those whose side of the first
  one / two mentioned landmarks (the words ``env.marks.relate`` writes) matches the side the
  description states (:attr:`urbex.language.Mention.bearing`).
"""

from __future__ import annotations

import sys
from pathlib import Path


def _side(bearing: tuple[float, float]) -> str:
    e, n = bearing
    return ("east" if e >= 0 else "west") if abs(e) >= abs(n) else ("north" if n >= 0 else "south")


def main(argv: list[str]) -> int:
    import numpy as np

    from urbex.agents.oracle import TeacherPolicy
    from urbex.annotations.splits import load_queries
    from urbex.config import load_params
    from urbex.env.marks import relation_words
    from urbex.env.play import episode_seed, play_episode
    from urbex.env.world import World
    from urbex.landmarks.table import footprint_bounds
    from urbex.language import parse

    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    params = load_params(Path(argv[0]))
    split = argv[1] if len(argv) > 1 else "val"
    if not params.env.marks.enabled:
        print("env.marks.enabled is false: the teacher answers by box", file=sys.stderr)
        return 2
    world = World.from_params(params)
    index, env = world.landmarks, world.env()
    teacher = TeacherPolicy(env, p_mistake=0.0, p_anchor=1.0)
    queries = load_queries(params.layout, split)
    table = index.table if index is not None else None

    def footprint(scene_id: str, name: str) -> np.ndarray | None:
        if table is None:
            return None
        rows = table.filter((table["scene_id"] == scene_id) & (table["name"] == name))
        for row in rows.iter_rows(named=True):
            b = footprint_bounds(row, require_area=False)
            if b is not None:
                return np.asarray(b, dtype=np.float64)
        return None

    ids, largest, hits, by_mark = [], [], 0, 0
    pick = {"class": 0.0, "1 landmark": 0.0, "2 landmarks": 0.0}
    for q in queries:
        traj = play_episode(env, teacher, q, seed=episode_seed(params.sft.seed, q.query_id))
        o, marks = traj.outcome, env.marks
        assert marks is not None
        largest.append(max(marks.shown))
        if o.answer_mark is None:
            continue
        by_mark += 1
        ids.append(marks.label(o.answer_mark))
        if o.iou_bev < 0.5:
            continue
        hits += 1
        props = marks.proposals
        last = env.views.last("zoom")
        listed = [marks.scene(m.mark_id) for m in last.marks] if last is not None else []
        names = index.mentions(q.description, q.scene_id) if index is not None else []
        p = parse(q.description, names)
        cand = [m for m in listed if props.class_name[props.row(m)] == p.target_class] or listed
        if not cand:
            continue
        pick["class"] += (o.answer_mark in cand) / len(cand)
        mentions = []
        for m in p.mentions:
            b = footprint(q.scene_id, m.name)
            if b is not None:
                mentions.append((m, b))
        for k, key in ((1, "1 landmark"), (2, "2 landmarks")):
            keep = list(cand)
            for m, b in mentions[:k]:
                want = {f'{_side(m.bearing)} of "{m.name}"'} if m.bearing is not None else set()
                if m.relation == "next_to":
                    want.add(f'next to "{m.name}"')
                box = props.box_2d_m
                fit = [c for c in keep if want <= set(relation_words(box[props.row(c)], b, m.name))]
                keep = fit or keep
            pick[key] += (o.answer_mark in keep) / len(keep)
    a = np.asarray(ids)
    n = len(queries)
    print(f"{split}: {n} queries; answered by mark {by_mark}; hits {hits} ({hits / n:.3f})")
    print(
        f"answer ids (as seen): median {np.median(a):.0f}, p90 {np.percentile(a, 90):.0f}, "
        f"largest {a.max()}, above 99 {np.mean(a > 99):.3f}; largest id shown "
        f"{max(largest)} (numbering: {params.env.marks.numbering})"
    )
    for key, v in pick.items():
        print(f"word-matcher ceiling, {key}: {v / max(hits, 1):.3f} of hits, Hit@1 {v / n:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
