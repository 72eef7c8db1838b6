"""Reading drills: the environment's own text formats, answers that the text determines."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import numpy as np
import pytest

from urbex.config_env import MarksParams
from urbex.env.marks import ViewMark
from urbex.train.drills import (
    DrillSources,
    box_copy_drill,
    mark_lookup_drill,
    name_copy_drill,
    random_listing,
)

_MARKS = MarksParams(enabled=True, describe="attributes", layout="id_last")
_QUERY_TEXT = (
    "landmark_query: 1 match(es) for 'Merton Hall':\n1. 'Merton Hall' (building): world XY "
    '(61.0, 9.6) m; in view "global": box [336, 896, 419, 976], centre [381, 939]; '
    "surroundings box [86, 646, 669, 1000]\nTurns left: 7."
)


def _sources() -> DrillSources:
    listing = (
        ViewMark(mark_id=68, class_name="Building", box_view=(428, 626, 571, 763), words=("grey",), name="Merton Hall"),
        ViewMark(mark_id=69, class_name="Building", box_view=(630, 616, 803, 772), words=("brown",)),
        ViewMark(mark_id=57, class_name="Car", box_view=(493, 530, 541, 550), words=("red", "small")),
        ViewMark(mark_id=62, class_name="Car", box_view=(432, 537, 477, 556), words=("red", "large")),
        ViewMark(mark_id=50, class_name="Car", box_view=(638, 484, 686, 503), words=("silver",)),
    )  # fmt: skip
    return DrillSources(
        listings=(listing,),
        lookups=(("the red car that is small, east of Merton Hall", 0, 57),),
        names=(("the car parked north of Merton Hall", "Merton Hall"),),
        query_texts=(_QUERY_TEXT,),
        name_pool=("Merton Hall", "Clare Park", "Victoria Road"),
    )


def _listing(text: str) -> dict[int, str]:
    """id → its listing line, of a listing segment."""
    lines = text.splitlines()
    return {int(m.group(2)): m.group(1) for ln in lines if (m := re.match(r"(.*) = (\d+)$", ln))}


def _blocks(drill):
    """(listing lines, [(description, answered mark)]) per listing the drill packs."""
    out: list = []
    texts = [t for t, _ in drill.segments]
    for k, (text, sup) in enumerate(drill.segments):
        if "<tool_response>" in text:
            out.append((_listing(text), []))
        elif sup:
            mark = json.loads(text.removeprefix("<answer>").split("</answer>")[0])["mark"]
            desc = texts[k - 1].split("Query: ")[1].split("<|im_end|>")[0]
            out[-1][1].append((desc, mark))
    return out


def _seeded_blocks(src, seeds, *, answers, synthetic_rate):
    """:func:`_blocks` of a level-8 look-up drill per seed (none where no drill is built)."""
    for seed in seeds:
        d = mark_lookup_drill(
            np.random.default_rng(seed), src, level=8, full=False, answers=answers,
            synthetic_rate=synthetic_rate, marks=_MARKS,
        )  # fmt: skip
        yield from _blocks(d) if d is not None else []


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("synthetic_rate", [0.0, 1.0])
def test_mark_lookup_answers_the_only_mark_its_description_fits(seed, synthetic_rate):
    rng = np.random.default_rng(seed)
    d = mark_lookup_drill(
        rng, _sources(), level=4, full=False, answers=8, synthetic_rate=synthetic_rate, marks=_MARKS
    )
    if d is None:  # random listings no mark of which can be described alone
        return
    assert 1 <= d.answers <= 8 and len(_blocks(d)) <= 4
    for lines, asks in _blocks(d):
        assert 1 <= len(lines) <= 4 and all(1 <= i <= 99 for i in lines)
        for desc, mark in asks:
            _check_fits(desc, mark, lines)


def _check_fits(desc: str, mark: int, lines: dict[int, str]) -> None:
    named = [n for n in _sources().name_pool if n in desc]
    if named:  # "the Clare Park", "ground known as Clare Park": the one line with that name
        fits = [i for i, ln in lines.items() if f'"{named[0]}"' in ln]
        if " known as " in desc:  # (of that class: another class may share the name)
            cls = desc.split(" known as ")[0]
            fits = [i for i in fits if lines[i].split()[-1] == cls]
    else:
        words = set(desc.removeprefix("the ").replace(" that is ", " ").split())
        fits = [i for i, ln in lines.items() if words <= set(ln.split()[4:])]
    assert fits == [mark], (desc, lines)


def test_a_name_two_classes_share_is_described_with_its_class():
    """'the Victoria Road' would fit a building and a ground of that name: the phrase names the
    class ('building known as Victoria Road')."""
    from urbex.train.drills import _phrase

    road = ViewMark(mark_id=1, class_name="Ground", box_view=(0, 0, 9, 9), name="Victoria Road")
    house = ViewMark(
        mark_id=2, class_name="Building", box_view=(20, 0, 29, 9), name="Victoria Road"
    )
    for seed in range(20):
        assert _phrase(house, [road, house], np.random.default_rng(seed)) == (
            "building known as Victoria Road"
        )


@pytest.mark.parametrize("asks", ["each_mark_once", "independent"])
def test_mark_lookup_asks_each_mark_once_or_independently(asks):
    repeated = answered_all = listings = 0
    for seed in range(60):
        d = mark_lookup_drill(
            np.random.default_rng(seed), _sources(), level=3, full=False, answers=8,
            synthetic_rate=1.0, marks=_MARKS, asks=asks,
        )  # fmt: skip
        for lines, block in _blocks(d) if d is not None else []:
            marks = [mark for _, mark in block]
            assert set(marks) <= set(lines)
            listings += 1
            repeated += len(set(marks)) < len(marks)
            answered_all += set(marks) == set(lines)
    assert listings > 50
    if asks == "each_mark_once":  # the last look-up is the mark not yet asked about
        assert repeated == 0 and answered_all > listings // 2
    else:  # which marks were asked says nothing about the next one
        assert repeated > listings // 4


def _episode_blocks(drill):
    """(description, listing lines, answered mark) per look-up asked in an episode's order: the
    description's user turn, then the listing's, then the answer."""
    segs = drill.segments
    out = []
    for k, (text, sup) in enumerate(segs):
        if sup and k >= 3 and "<tool_response>" in segs[k - 2][0] and "Query: " in segs[k - 3][0]:
            mark = json.loads(text.removeprefix("<answer>").split("</answer>")[0])["mark"]
            desc = segs[k - 3][0].split("Query: ")[1].split("<|im_end|>")[0]
            out.append((desc, _listing(segs[k - 2][0]), mark))
    return out


@pytest.mark.parametrize("query_first", [0.0, 0.5, 1.0])
def test_mark_lookup_query_first_asks_in_an_episodes_order(query_first):
    """``query_first``: that share of listings comes after its one description, as an episode's
    query comes before its tool texts; the answer is still the one mark the description fits.
    Off, no random number is drawn for it (the drills of a seed are the same as before)."""
    episode = listing_first = 0
    for seed in range(40):
        d = mark_lookup_drill(
            np.random.default_rng(seed), _sources(), level=4, full=False, answers=8,
            synthetic_rate=1.0, marks=_MARKS, query_first=query_first,
        )  # fmt: skip
        if d is None:
            continue
        asked = _episode_blocks(d)
        for desc, lines, mark in asked:
            _check_fits(desc, mark, lines)
        episode += len(asked)
        listing_first += d.answers - len(asked)
        if query_first == 0.0:
            same = mark_lookup_drill(
                np.random.default_rng(seed), _sources(), level=4, full=False, answers=8,
                synthetic_rate=1.0, marks=_MARKS,
            )  # fmt: skip
            assert same == d
    if query_first == 0.0:
        assert episode == 0 and listing_first > 0
    elif query_first == 1.0:
        assert episode > 0 and listing_first == 0
    else:
        assert episode > 0 and listing_first > 0


def test_mark_lookup_with_remind_ends_an_episode_order_listing_with_its_description():
    marks = MarksParams(enabled=True, describe="attributes", layout="id_last", remind=True)
    n = 0
    for seed in range(10):
        d = mark_lookup_drill(
            np.random.default_rng(seed), _sources(), level=4, full=False, answers=4,
            synthetic_rate=1.0, marks=marks, query_first=1.0,
        )  # fmt: skip
        for desc, lines, mark in _episode_blocks(d) if d is not None else []:
            _check_fits(desc, mark, lines)
            n += 1
        for k, (text, _) in enumerate(d.segments if d is not None else ()):
            if "<tool_response>" in text:
                asked = d.segments[k - 1][0].split("Query: ")[1].split("<|im_end|>")[0]
                assert text.endswith(f"\nQuery: {asked}\n</tool_response><|im_end|>")
    assert n > 10


def test_look_up_ids_cover_every_id_the_train_listings_show():
    """A scene of 239 proposals lists ids up to 239: the drills draw their ids up to there, not
    only 1..99, or the student never copies an id above 99."""
    src = _sources()
    assert src.id_pool == 99  # the listings' ids are all below 99
    wide = replace(src, id_pool=239)
    seen: set[int] = set()
    for lines, asks in _seeded_blocks(wide, range(30), answers=8, synthetic_rate=0.5):
        assert set(lines) <= set(range(1, 240))
        seen |= {mark for _, mark in asks}
    assert max(seen) > 200 and min(seen) < 50


def test_mark_lookup_at_full_length_keeps_the_teachers_description_and_mark():
    found = False
    for seed in range(40):
        d = mark_lookup_drill(
            np.random.default_rng(seed), _sources(), level=32, full=True, answers=3,
            synthetic_rate=0.0, marks=_MARKS,
        )  # fmt: skip
        for lines, asks in _blocks(d) if d is not None else []:
            for desc, mark in asks:
                if "east of Merton Hall" in desc:
                    assert lines[mark].endswith("red small car")  # the teacher's mark, new id
                    found = True
    assert found


def test_mark_lookup_listing_is_the_environments_format():
    d = mark_lookup_drill(
        np.random.default_rng(0), _sources(), level=8, full=False, answers=2, synthetic_rate=0.0,
        marks=_MARKS,
    )  # fmt: skip
    assert d is not None and d.segments[0][1] is False
    first = d.segments[0][0]
    assert first.startswith('<|im_start|>user\n<tool_response>\nMarks in "zoom_1", each class')
    assert re.search(r"\n\[\d+, \d+, \d+, \d+\] .*car = \d+\n", first)


def test_name_copy_names_the_landmark_the_description_holds():
    rng = np.random.default_rng(3)
    d = name_copy_drill(rng, _sources(), answers=6, rename_rate=1.0)
    assert d is not None and d.answers == 6
    seg = [t for t, _ in d.segments]
    for k, (text, sup) in enumerate(d.segments):
        if sup:
            call = json.loads(text.removeprefix("<tool_call>").split("</tool_call>")[0])
            assert call["name"] == "landmark_query"
            assert call["arguments"]["view_id"] == "global"
            name = call["arguments"]["name"]
            desc = seg[k - 1]
            misspelled = name not in desc
            assert not misspelled or "north of" in desc  # a misspelled mention of the new name


def test_fresh_names_come_from_the_name_generator_not_the_train_pool():
    src = _sources()
    d = name_copy_drill(np.random.default_rng(4), src, answers=40, rename_rate=1.0, fresh_names=1.0)
    assert d is not None
    called = [
        json.loads(t.removeprefix("<tool_call>").split("</tool_call>")[0])["arguments"]["name"]
        for t, sup in d.segments
        if sup
    ]
    assert not set(called) & set(src.name_pool)  # every name is new to the split
    assert len(set(called)) > 20  # and they vary
    descs = [t for t, sup in d.segments if not sup and t.startswith("<|im_start|>")]
    assert (
        sum(n in t for n, t in zip(called, descs, strict=True)) >= 30
    )  # copied (1 in 10 misspelled)
    old = name_copy_drill(np.random.default_rng(4), src, answers=40, rename_rate=1.0)
    assert old is not None and {  # fresh_names 0: the train pool, as before
        json.loads(t.removeprefix("<tool_call>").split("</tool_call>")[0])["arguments"]["name"]
        for t, sup in old.segments
        if sup
    } <= set(src.name_pool)


def test_box_copy_copies_the_printed_surroundings_box():
    for rate in (0.0, 1.0):
        d = box_copy_drill(np.random.default_rng(1), _sources(), answers=3, synthetic_rate=rate)
        assert d is not None
        seg = [t for t, _ in d.segments]
        for k, (text, sup) in enumerate(d.segments):
            if sup:
                box = json.loads(text.removeprefix("<tool_call>").split("</tool_call>")[0])
                printed = re.search(r"surroundings box (\[[\d, ]+\])", seg[k - 1]).group(1)
                assert box["arguments"]["bbox_2d"] == json.loads(printed)
                assert box["name"] == "zoom_in"


def test_random_listing_is_grouped_by_class_and_seeded():
    a = random_listing(np.random.default_rng(5), 10, names=["Clare Park"])
    b = random_listing(np.random.default_rng(5), 10, names=["Clare Park"])
    assert a == b and len(a) == 10
    from urbex.classes import TARGET_CLASSES

    order = list(TARGET_CLASSES)
    ranks = [order.index(m.class_name) for m in a]
    assert ranks == sorted(ranks)
    assert all(0 <= v <= 1000 for m in a for v in m.box_view)


def test_drill_sources_are_empty_without_episodes():
    from urbex.train.drills import drill_sources

    s = drill_sources([])
    assert s.listings == () and s.names == () and s.query_texts == () and s.id_pool == 99
    assert name_copy_drill(np.random.default_rng(0), s, answers=2, rename_rate=0.5) is None
    assert box_copy_drill(np.random.default_rng(0), s, answers=2, synthetic_rate=0.5) is None


@pytest.mark.parametrize("numbering", ["scene", "episode"])
def test_drill_sources_keep_the_answered_id_as_the_listing_shows_it(synth_city, numbering):
    """The real look-ups pair a description with the id its listing shows for the teacher's
    mark — not the scene's own id, which differs under episode numbering."""
    from urbex.agents.oracle import TeacherPolicy
    from urbex.config import EnvParams
    from urbex.env.episode import GroundingEnv
    from urbex.env.play import play_episode
    from urbex.train.drills import drill_sources

    cache, index, queries = synth_city
    marks = {"enabled": True, "describe": "attributes", "numbering": numbering}
    env = GroundingEnv(EnvParams(marks=marks), lambda s: cache, index)
    teacher = TeacherPolicy(env, p_anchor=1.0, p_oblique=0.0)
    trajs, differ = [], 0
    for q in queries:
        t = play_episode(env, teacher, q, seed=0)
        if t.outcome.answer_mark is not None:
            trajs.append(t)
            differ += env.marks.display(t.outcome.answer_mark) != t.outcome.answer_mark
    src = drill_sources(trajs)
    assert len(src.lookups) >= 3
    answered = {t.query.description: t.steps[-1].arguments["mark"] for t in trajs}
    for desc, li, mark in src.lookups:
        assert mark == answered[desc] and any(m.mark_id == mark for m in src.listings[li])
    assert (differ > 0) is (numbering == "episode")


def test_mark_lookup_describes_a_mark_by_its_relation_when_that_selects_it():
    """With relation words in the listing (``env.marks.relate``), a look-up may describe a mark
    by the relation that no other mark of its class shares, and answers that mark."""
    rel = {
        57: ('west of "Merton Hall"',),
        62: ('east of "Merton Hall"',),
        50: ('east of "Merton Hall"',),
    }
    listing = tuple(replace(m, relations=rel.get(m.mark_id, ())) for m in _sources().listings[0])
    src = replace(_sources(), listings=(listing,), lookups=())
    asked: dict[str, int] = {}
    for lines, asks in _seeded_blocks(src, range(40), answers=5, synthetic_rate=0.0):
        for desc, mark in asks:
            if " of Merton Hall" in desc:
                asked[desc] = mark
                assert 'west of "Merton Hall"' in lines[mark]
    assert asked == {"the car west of Merton Hall": next(iter(asked.values()))}
