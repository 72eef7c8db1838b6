"""Reading drills: the reader stage's data (:mod:`urbex.train.reader`).

A drill is one token sequence in the environment's own text formats with **many supervised
answers** (the segments marked ``True``); the loss and the accuracy are computed on those alone.
Four families, each generated from the train split's teacher episodes (:class:`DrillSources`)
and from random listings and names — never from val or test:

``mark_lookup``
    A marks listing exactly as a zoom's tool text prints it (:func:`urbex.env.marks.marks_text`,
    ``env.marks.describe`` / ``layout``), its ids re-drawn at random from 1..N (no id can be
    remembered; N the largest id the train listings show, at least 99), then several short
    descriptions of its marks (``Query: the red car``), each
    answered ``<answer>{"mark": N}</answer>``. Listings are cut to the curriculum level's number
    of marks (the order kept); at the full level the train split's own descriptions join, with
    the teacher's mark.
``name_copy``
    Descriptions naming a landmark (the split's, with the name replaced by another — misspelled
    as the synthetic generator misspells, 1 in 10 — where ``reader.rename_rate`` says), each
    answered with the ``landmark_query`` call that names it.
``box_copy``
    A ``landmark_query`` tool text, its numbers re-drawn, answered with the ``zoom_in`` call on
    the printed surroundings box.
``whole_turn``
    The teacher's conversations (description, tool texts, images → each next call or answer),
    rendered as SFT renders them (:func:`urbex.train.sft_examples.render_examples`).

Frames: every box in a drill is in view units 0–1000 of the view it names.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from urbex.classes import TARGET_CLASSES
from urbex.colour import PALETTE
from urbex.env.marks import ViewMark, marks_text
from urbex.env.prompts import query_line
from urbex.errors import ConfigError
from urbex.synth.names import NamePool
from urbex.synth.noise import misspell
from urbex.tool_vocabulary import ToolName

if TYPE_CHECKING:
    from urbex.config_env import MarksParams
    from urbex.config_reader import LookupAsks, ReaderParams
    from urbex.env.trajectory import Trajectory

__all__ = [
    "Drill",
    "DrillSources",
    "box_copy_drill",
    "drill_batch",
    "drill_sources",
    "lookup_size",
    "make_drill",
    "mark_lookup_drill",
    "name_copy_drill",
    "random_listing",
]

#: The class word each listing line and description uses (as :func:`marks_text` prints it).
_CLASS_WORD = {"Building": "building", "Car": "car", "Parking": "parking", "Ground": "ground"}
#: Ids a drill's marks are shown under at least (re-drawn per drill, as SFT's shuffled ids;
#: :attr:`DrillSources.id_pool` widens it to the largest id the train split's listings show).
ID_POOL = 99
_SIZE = ("large", "small")
#: The name generator's draws a fresh name comes from (:class:`urbex.synth.names.NamePool`).
_FRESH_KINDS = ("road", "building", "park", "parking")


@dataclass(frozen=True, slots=True, kw_only=True)
class Drill:
    """One drill sequence.

    Attributes
    ----------
    family : str
        One of :data:`urbex.config_reader.DRILL_FAMILIES` (not ``whole_turn``: those are SFT
        examples).
    segments : tuple of (str, bool)
        The text in order; ``True`` marks an answer (supervised and scored). An answer starts
        and ends on a special token, so tokenizing the segments one by one gives the tokens of
        the whole text.
    level : int
        Marks per listing (``mark_lookup``), else 0.
    """

    family: str
    segments: tuple[tuple[str, bool], ...]
    level: int = 0

    @property
    def text(self) -> str:
        """The whole sequence."""
        return "".join(s for s, _ in self.segments)

    @property
    def answers(self) -> int:
        """Supervised answers in the drill."""
        return sum(1 for _, sup in self.segments if sup)


@dataclass(frozen=True, slots=True, kw_only=True)
class DrillSources:
    """The train split's text pieces drills are built from (:func:`drill_sources`).

    Attributes
    ----------
    listings : tuple of tuple of ViewMark
        The marks each teacher zoom showed (as described to the agent; its own ids).
    lookups : tuple of (str, int, int)
        (description, index into ``listings``, the teacher's answered mark).
    names : tuple of (str, str)
        (description, the landmark name the teacher queried), where the description holds the
        name verbatim.
    query_texts : tuple of str
        ``landmark_query`` tool texts that print a surroundings box.
    name_pool : tuple of str
        Landmark names to rename with (every train scene's).
    id_pool : int
        A drill's mark ids are re-drawn from ``1..id_pool``: the largest id the teacher's
        listings show, at least :data:`ID_POOL`, so that every id an episode can list is one
        the look-ups copy (a scene of 239 proposals lists ids up to 239).
    """

    listings: tuple[tuple[ViewMark, ...], ...] = ()
    lookups: tuple[tuple[str, int, int], ...] = ()
    names: tuple[tuple[str, str], ...] = ()
    query_texts: tuple[str, ...] = ()
    name_pool: tuple[str, ...] = ()
    id_pool: int = ID_POOL


def drill_sources(trajectories: Sequence[Trajectory]) -> DrillSources:
    """The pieces of the teacher's train episodes that drills re-use: each zoom's marks, each
    description with the mark it was answered by and the name queried, each
    ``landmark_query`` text that prints a surroundings box."""
    listings: list[tuple[ViewMark, ...]] = []
    lookups: list[tuple[str, int, int]] = []
    names: list[tuple[str, str]] = []
    texts: list[str] = []
    pool: set[str] = set()
    for t in trajectories:
        desc = t.query.description
        for v in t.views:
            if v.kind == "zoom" and v.marks:
                listings.append(tuple(v.marks))
        for m in t.messages:
            if m.get("role") == "tool" and m.get("name") == ToolName.LANDMARK_QUERY:
                c = m.get("content")
                parts = c if isinstance(c, list) else [{"type": "text", "text": c}]
                text = "\n".join(str(p.get("text", "")) for p in parts if isinstance(p, dict))
                if "surroundings box [" in text:
                    texts.append(text)
        for s in t.steps:
            if not s.valid:
                continue
            args = s.arguments or {}
            if s.tool == ToolName.LANDMARK_QUERY and isinstance(args.get("name"), str):
                name = str(args["name"])
                pool.add(name)
                if name in desc:
                    names.append((desc, name))
        mark = _answered_id(t)
        if mark is not None and listings:
            last = len(listings) - 1
            if any(vm.mark_id == mark for vm in listings[last]):
                lookups.append((desc, last, int(mark)))
    return DrillSources(
        listings=tuple(listings),
        lookups=tuple(lookups),
        names=tuple(names),
        query_texts=tuple(texts),
        name_pool=tuple(sorted(pool)),
        id_pool=max(ID_POOL, max((m.mark_id for ls in listings for m in ls), default=0)),
    )


def _answered_id(t: Trajectory) -> int | None:
    """The mark id the episode's answer named as the agent saw it (the listings' ids; the
    outcome's ``answer_mark`` is the scene's own, which differs under shuffled or episode
    numbering); None without a valid mark answer."""
    if t.outcome.answer_mark is None:
        return None
    for s in reversed(t.steps):
        if s.valid and s.tool == ToolName.ANSWER and isinstance(s.arguments.get("mark"), int):
            return int(s.arguments["mark"])
    return None


# ---------------------------------------------------------------------------------------------
# mark look-up
# ---------------------------------------------------------------------------------------------


def random_listing(
    rng: np.random.Generator, n: int, *, names: Sequence[str] = (), words: bool = True
) -> list[ViewMark]:
    """``n`` random marks (classes, colour / size words, a map name for some, boxes in view
    units 0–1000), grouped as a listing groups them (class order, nearest the centre first)."""
    colours = list(PALETTE)
    out = []
    for _ in range(n):
        cls = TARGET_CLASSES[int(rng.integers(len(TARGET_CLASSES)))]
        w: list[str] = []
        if words:
            if rng.random() < 0.9:
                w.append(colours[int(rng.integers(len(colours)))])
            r = rng.random()
            if r < 0.25:
                w.append("large")
            elif r < 0.5:
                w.append("small")
            if cls == "Building" and rng.random() < 0.25:
                w.append("tall")
        name = ""
        if names and cls in ("Building", "Ground") and rng.random() < 0.2:
            name = names[int(rng.integers(len(names)))]
        x1, y1 = (int(v) for v in rng.integers(0, 950, size=2))
        x2 = min(1000, x1 + int(rng.integers(10, 400)))
        y2 = min(1000, y1 + int(rng.integers(10, 400)))
        out.append(
            ViewMark(
                mark_id=0, class_name=cls, box_view=(x1, y1, x2, y2), words=tuple(w), name=name
            )
        )
    order = {c: i for i, c in enumerate(TARGET_CLASSES)}
    return sorted(out, key=lambda m: order.get(m.class_name, len(order)))


def _phrase(m: ViewMark, marks: Sequence[ViewMark], rng: np.random.Generator) -> str | None:
    """A short description that selects ``m`` alone among ``marks`` (None: none does). A mark
    that says where it lies from a queried landmark (``env.marks.relate``) is described by
    that relation half the time when it selects it alone (``the car west of Clare Park``)."""
    cls = _CLASS_WORD.get(m.class_name, m.class_name.lower())
    same = [o for o in marks if o is not m and o.class_name == m.class_name]
    alone = [r for r in m.relations if all(r not in o.relations for o in same)]
    if alone and rng.random() < 0.5:
        return f"the {cls} {alone[int(rng.integers(len(alone)))].replace(chr(34), '')}"
    if m.name and all(o.name != m.name for o in same):
        if any(o is not m and o.name == m.name for o in marks):  # another class shares it
            return f"{cls} known as {m.name}"
        return str(rng.choice([f"the {m.name}", f"{cls} known as {m.name}"]))
    colour = [w for w in m.words if w in PALETTE]
    size = [w for w in m.words if w in (*_SIZE, "tall")]
    for picked in (colour, colour + size, size, []):
        if not same and not picked:
            return f"the {cls}"
        if not picked:
            continue
        if all(not set(picked) <= set(o.words) for o in same):
            if len(picked) == 2 and rng.random() < 0.5:
                return f"the {picked[0]} {cls} that is {picked[1]}"
            return f"the {' '.join(reversed(picked))} {cls}"
    return None


def _redraw_ids(
    marks: Sequence[ViewMark], rng: np.random.Generator, pool: int = ID_POOL
) -> list[ViewMark]:
    ids = rng.choice(np.arange(1, pool + 1), size=len(marks), replace=False)
    return [replace(m, mark_id=int(i)) for m, i in zip(marks, ids, strict=True)]


def _cut(marks: Sequence[ViewMark], n: int, rng: np.random.Generator) -> list[ViewMark]:
    """At most ``n`` of ``marks``, their order kept."""
    if len(marks) <= n:
        return list(marks)
    keep = np.sort(rng.choice(len(marks), size=n, replace=False))
    return [marks[int(i)] for i in keep]


def _turn(user: str) -> str:
    return f"<|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n"


def _answer_mark(mark_id: int) -> str:
    return f"<answer>{json.dumps({'mark': int(mark_id)})}</answer><|im_end|>"


#: Listings a look-up drill packs at most (short listings describe few marks each).
MAX_BLOCKS = 4


def mark_lookup_drill(
    rng: np.random.Generator,
    sources: DrillSources,
    *,
    level: int,
    full: bool,
    answers: int,
    synthetic_rate: float,
    marks: MarksParams,
    asks: LookupAsks = "each_mark_once",
    query_first: float = 0.0,
) -> Drill | None:
    """Listings of at most ``level`` marks each, each followed by look-ups of its marks, until
    the drill holds ``answers`` look-ups (or :data:`MAX_BLOCKS` listings: a 2-mark listing
    describes at most 2). None: no mark of the drawn listings can be described alone.
    ``full``: the curriculum's last level, where the train split's own descriptions join (one
    per listing, with the teacher's mark). ``query_first``: the share of listings asked in an
    episode's order instead — one description, then the listing, then its mark."""
    segs: list[tuple[str, bool]] = []
    n, size = 0, 0
    for _ in range(MAX_BLOCKS):
        first = query_first > 0 and rng.random() < query_first  # no draw when off
        block = _lookup_block(
            rng, sources, level=level, full=full, answers=1 if first else answers - n,
            synthetic_rate=synthetic_rate, marks=marks, asks=asks, query_first=first,
        )  # fmt: skip
        if block is not None:
            segs += block[0]
            n, size = n + block[1], max(size, block[2])
        if n >= answers:
            break
    if not n:
        return None
    return Drill(family="mark_lookup", segments=tuple(segs), level=size)


def _lookup_block(
    rng: np.random.Generator,
    sources: DrillSources,
    *,
    level: int,
    full: bool,
    answers: int,
    synthetic_rate: float,
    marks: MarksParams,
    asks: LookupAsks = "each_mark_once",
    query_first: bool = False,
) -> tuple[list[tuple[str, bool]], int, int] | None:
    """One listing and up to ``answers`` look-ups of it: (segments, look-ups, marks listed).

    ``asks``: ``each_mark_once`` asks about the listing's marks in a random order, each once;
    ``independent`` draws each look-up's mark anew (a mark may be asked twice, another never),
    so that which marks were already asked says nothing about the next answer.
    ``query_first``: the first look-up's description comes before the listing, as an episode
    gives its query before the tool texts (call it with ``answers=1``); with ``marks.remind``
    the listing's tool text ends repeating it, as the environment's then does."""
    real = None
    if sources.listings and rng.random() >= synthetic_rate:
        if full and sources.lookups and rng.random() < 0.5:
            desc, li, mark = sources.lookups[int(rng.integers(len(sources.lookups)))]
            real = (desc, mark)
            listing = list(sources.listings[li])
        else:
            listing = list(sources.listings[int(rng.integers(len(sources.listings)))])
    else:
        listing = random_listing(rng, level, names=sources.name_pool)
    if real is not None:
        target = next(m for m in listing if m.mark_id == real[1])
        rest = _cut([m for m in listing if m is not target], level - 1, rng)
        listing = [m for m in listing if m is target or m in rest]
    else:
        listing = _cut(listing, level, rng)
    old = [m.mark_id for m in listing]
    listing = _redraw_ids(listing, rng, sources.id_pool)
    new_of = dict(zip(old, (m.mark_id for m in listing), strict=True))
    questions = []
    if real is not None:
        questions.append((real[0], new_of[real[1]]))
    order = (
        rng.permutation(len(listing)).tolist()
        if asks == "each_mark_once"
        else rng.integers(len(listing), size=len(listing)).tolist()
    )
    for i in order:
        if len(questions) >= answers:
            break
        p = _phrase(listing[i], listing, rng)
        if p is not None:
            questions.append((p, listing[i].mark_id))
    if not questions:
        return None
    text = marks_text("zoom_1", listing, marks.describe, layout=marks.layout)
    if query_first and marks.remind:  # the tool text ends repeating the query, as the env's
        text += "\n" + query_line(questions[0][0])
    tool = f"<|im_start|>user\n<tool_response>\n{text}\n</tool_response><|im_end|>"
    if query_first:
        desc, mark_id = questions[0]
        query = f"<|im_start|>user\nQuery: {desc}<|im_end|>\n"
        segs = [(query, False), (tool, False), ("\n<|im_start|>assistant\n", False)]
        return [*segs, (_answer_mark(mark_id), True)], 1, len(listing)
    segs = [(tool, False)]
    for desc, mark_id in questions:
        segs += [("\n", False), (_turn(f"Query: {desc}"), False), (_answer_mark(mark_id), True)]
    return segs, len(questions), len(listing)


# ---------------------------------------------------------------------------------------------
# name and box copy
# ---------------------------------------------------------------------------------------------


def _call(tool: str, **arguments: Any) -> str:
    return f"<tool_call>{json.dumps({'name': tool, 'arguments': arguments})}</tool_call><|im_end|>"


def name_copy_drill(
    rng: np.random.Generator,
    sources: DrillSources,
    *,
    answers: int,
    rename_rate: float,
    fresh_names: float = 0.0,
) -> Drill | None:
    """Up to ``answers`` descriptions, each answered with the ``landmark_query`` call naming
    its landmark (renamed at ``rename_rate``; a renamed mention misspelled 1 in 10). A share
    ``fresh_names`` of the new names comes from the synthetic city's name generator
    (:class:`urbex.synth.names.NamePool`, any kind) rather than from ``sources.name_pool``, so
    the name copied need not be one the train split shows."""
    if not sources.names:
        return None
    segs: list[tuple[str, bool]] = []
    for _ in range(answers):
        desc, name = sources.names[int(rng.integers(len(sources.names)))]
        if sources.name_pool and rng.random() < rename_rate:
            new = sources.name_pool[int(rng.integers(len(sources.name_pool)))]
            if fresh_names and rng.random() < fresh_names:
                pool = NamePool(rng, "sensaturban")
                new = getattr(pool, _FRESH_KINDS[int(rng.integers(len(_FRESH_KINDS)))])()
            shown = new
            if rng.random() < 0.1:
                shown = misspell(new, rng) or new
            desc, name = desc.replace(name, shown), new
        segs += [
            (_turn(f"Query: {desc}"), False),
            (_call(ToolName.LANDMARK_QUERY, name=name, view_id="global"), True),
            ("\n", False),
        ]
    return Drill(family="name_copy", segments=tuple(segs))


_NUMS = re.compile(r"\[(\d+), (\d+)(?:, (\d+), (\d+))?\]")
_SURROUNDINGS = re.compile(r"surroundings box \[(\d+), (\d+), (\d+), (\d+)\]")


def _random_box(rng: np.random.Generator) -> list[int]:
    x1, y1 = (int(v) for v in rng.integers(0, 900, size=2))
    return [
        x1,
        y1,
        min(1000, x1 + int(rng.integers(20, 700))),
        min(1000, y1 + int(rng.integers(20, 700))),
    ]


def box_copy_drill(
    rng: np.random.Generator, sources: DrillSources, *, answers: int, synthetic_rate: float
) -> Drill | None:
    """Up to ``answers`` ``landmark_query`` tool texts, each answered with the ``zoom_in`` call
    on its first surroundings box (global view units); at ``synthetic_rate`` every box, centre
    and name in the text is re-drawn."""
    if not sources.query_texts:
        return None
    segs: list[tuple[str, bool]] = []
    for _ in range(answers):
        text = sources.query_texts[int(rng.integers(len(sources.query_texts)))]
        if rng.random() < synthetic_rate:

            def new_numbers(m: re.Match[str]) -> str:
                if m.group(3) is None:
                    return f"[{int(rng.integers(0, 1001))}, {int(rng.integers(0, 1001))}]"
                return str(_random_box(rng))

            text = _NUMS.sub(new_numbers, text)
        found = _SURROUNDINGS.search(text)
        if found is None:
            continue
        box = [int(v) for v in found.groups()]
        segs += [
            (_turn(f"<tool_response>\n{text}\n</tool_response>"), False),
            (_call(ToolName.ZOOM_IN, view_id="global", bbox_2d=box), True),
            ("\n", False),
        ]
    if not segs:
        return None
    return Drill(family="box_copy", segments=tuple(segs))


def lookup_size(rng: np.random.Generator, r: ReaderParams, level_index: int) -> int:
    """Marks per listing of one look-up drill at curriculum level ``r.levels[level_index]``.

    A quarter of the drills revisit an earlier (shorter) level; with ``r.spread_from`` the size
    is then drawn uniformly from ``spread_from`` up to that level, so one step mixes short and
    long listings."""
    size = r.levels[level_index]
    if level_index > 0 and rng.random() < 0.25:
        size = r.levels[int(rng.integers(level_index))]
    if r.spread_from is not None:
        size = int(rng.integers(min(r.spread_from, size), size + 1))
    return size


def make_drill(
    family: str,
    rng: np.random.Generator,
    src: DrillSources,
    r: ReaderParams,
    marks: MarksParams,
    *,
    level: int,
) -> Drill | None:
    """One drill of ``family`` (not ``whole_turn``) with ``level`` marks per look-up listing, by
    the settings of ``r`` and the listing format of ``marks``; None when ``src`` holds nothing
    to build it from."""
    if family == "mark_lookup":
        return mark_lookup_drill(
            rng,
            src,
            level=level,
            full=level >= r.levels[-1],
            answers=r.answers_per_drill,
            synthetic_rate=r.synthetic_rate,
            marks=marks,
            asks=r.asks,
            query_first=r.query_first,
        )
    if family == "name_copy":
        return name_copy_drill(
            rng,
            src,
            answers=r.answers_per_drill,
            rename_rate=r.rename_rate,
            fresh_names=r.fresh_names,
        )
    return box_copy_drill(
        rng, src, answers=max(1, r.answers_per_drill // 2), synthetic_rate=r.synthetic_rate
    )


def drill_batch(
    rng: np.random.Generator,
    src: DrillSources,
    r: ReaderParams,
    marks: MarksParams,
    counts: dict[str, int],
    *,
    level_index: int,
) -> list[Drill]:
    """``counts[family]`` drills of each text family (``whole_turn`` is skipped: those are SFT
    examples) at curriculum level ``r.levels[level_index]`` (look-up listings sized by
    :func:`lookup_size`).

    Raises
    ------
    ConfigError
        A family asked for cannot be built from ``src`` (no listing, name or query text in the
        train split's teacher episodes).
    """
    out: list[Drill] = []
    for family, n in counts.items():
        if family == "whole_turn" or n <= 0:
            continue
        made, tries = 0, 0
        while made < n:
            level = (
                lookup_size(rng, r, level_index)
                if family == "mark_lookup"
                else r.levels[level_index]
            )
            d = make_drill(family, rng, src, r, marks, level=level)
            tries += 1
            if d is not None:
                out.append(d)
                made += 1
            elif tries > 20 * n + 100:
                raise ConfigError(
                    f"no {family} drill can be built from the train split's teacher episodes; "
                    "check env.marks and the landmark tables",
                    field="reader.mix",
                )
    return out
