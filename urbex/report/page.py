"""The static results page: ``<assets>/eval/index.html`` and one page per run.

Written by ``urbex report`` and by the Dagster ``evaluation_report`` asset, after the report
table. Everything is plain HTML with a little inline JavaScript (table sorting, gallery
filters): no server, no external script, style sheet or font, and only *relative* links, so the
``eval/`` folder opens from disk and can be moved as a whole::

    eval/index.html                     every block of the report (sortable tables: the
                                        comparison, Tables 11, 9 and 2, latency, each
                                        diagnostic table), the diagnostic plots (one panel per
                                        policy family, at most 8 series each), the training
                                        curves, one link per run
    eval/curves/<checkpoint>.png        copies of <assets>/checkpoints/<name>/train_curves.png
                                        (a reader stage's: its reader_curves.png)
    eval/runs/<run_id>/index.html       the run's gallery: best, worst and a seeded random
                                        sample of episodes, filterable by split and outcome
    eval/runs/<run_id>/gallery/<q>.png  the gallery's trajectory pictures (small PNGs)
    eval/runs/<run_id>/gallery/<q>.html one episode's step list

The pages are rendered from the jinja2 templates ``urbex/report/templates/*.html.j2``
(:func:`render`), autoescaped: descriptions, ids and errors are text, never markup. Nothing is
marked :class:`markupsafe.Markup`: every tag is in a template.

The page's files in a run directory (``index.html``, ``gallery/``) are rewritten by every
call; the run's own files (``run.json``, ``episodes/``, ``steps/``, ``metrics.parquet``) are
only read. ``.dvcignore`` keeps the page's files out of the evaluation stages' outputs.

Pictures are replayed from the run's stored steps by :class:`urbex.report.replay.Replayer`
(the same drawing as ``urbex ground``; no policy or model is loaded).

Outcome of an episode: ``invalid`` without a valid answer, else ``hit`` when Hit@1, else
``miss``. Bad input: no runs → the index says so; a run without episodes → an empty gallery and
a sentence; a picture that could not be drawn (no scene cache) → a visible placeholder.
"""

from __future__ import annotations

import functools
import hashlib
import random
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl
from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from urbex.atomic import atomic_write
from urbex.eval.episodes import read_episodes, read_steps
from urbex.eval.rundir import read_spec
from urbex.layout import AssetLayout
from urbex.report.blocks import PLOT_TITLES, Block, Cell, markdown_blocks
from urbex.report.comparison import (
    METRIC_LABELS,
    fmt_metric,
    report_table,
    smoke_note,
    split_metric,
)
from urbex.report.replay import Replayer
from urbex.report.warehouse import readable_runs, refresh_warehouse

if TYPE_CHECKING:
    from collections.abc import Callable

    from urbex.config import EnvParams, EvalParams, LandmarkParams, Params

__all__ = [
    "GALLERY",
    "OUTCOMES",
    "GalleryPick",
    "episode_outcome",
    "pick_episodes",
    "render",
    "templates",
    "thumbnails",
    "write_results_page",
]

#: A run directory's sub-directory for the page's pictures and step lists.
GALLERY = "gallery"
#: ``urbex diagnose``'s Markdown of its tables, in ``eval/diagnostics/``.
DIAGNOSTICS_MD = "diagnostics.md"
#: The outcomes of an episode, in the order the page lists them.
OUTCOMES = ("hit", "miss", "invalid")


def episode_outcome(valid_answer: bool, hit1: bool) -> str:
    """``"invalid"`` without a valid answer, else ``"hit"`` (Hit@1) or ``"miss"``.

    >>> episode_outcome(False, False), episode_outcome(True, True), episode_outcome(True, False)
    ('invalid', 'hit', 'miss')
    """
    if not valid_answer:
        return "invalid"
    return "hit" if hit1 else "miss"


@dataclass(frozen=True, slots=True, kw_only=True)
class GalleryPick:
    """One episode shown in a run's gallery: its ``query_id`` and why (``best``/``worst``/
    ``random``)."""

    query_id: str
    why: str


def pick_episodes(
    episodes: pl.DataFrame, *, n_best: int = 2, n_worst: int = 2, n_random: int = 2, seed: int = 0
) -> list[GalleryPick]:
    """Best, worst and a seeded random sample of a run's episodes, without repeats.

    Ranked by ``(hit1, iou_bev)`` descending (ties by ``query_id``); the random sample is drawn
    with ``random.Random(seed)`` from the rest, so the same run and seed pick the same episodes.

    >>> import polars as pl
    >>> df = pl.DataFrame({"query_id": list("abcde"), "hit1": [True, False, True, False, False],
    ...                    "iou_bev": [0.9, 0.1, 0.5, 0.0, 0.2]})
    >>> [(p.query_id, p.why) for p in pick_episodes(df, n_best=1, n_worst=1, n_random=1)]
    [('a', 'best'), ('d', 'worst'), ('c', 'random')]
    >>> pick_episodes(df.head(0))
    []
    """
    if episodes.height == 0:
        return []
    ranked = episodes.sort(
        ["hit1", "iou_bev", "query_id"], descending=[True, True, False], nulls_last=True
    )["query_id"].to_list()
    picks: list[GalleryPick] = [GalleryPick(query_id=q, why="best") for q in ranked[:n_best]]
    taken = {p.query_id for p in picks}
    worst = [q for q in reversed(ranked) if q not in taken][:n_worst]
    picks += [GalleryPick(query_id=q, why="worst") for q in worst]
    taken |= set(worst)
    rest = sorted(q for q in ranked if q not in taken)
    sample = random.Random(seed).sample(rest, min(n_random, len(rest)))
    return picks + [GalleryPick(query_id=q, why="random") for q in sorted(sample)]


def _file_stem(query_id: str) -> str:
    """A file name for a query id: its safe characters plus a short hash (ids may hold ``:``)."""
    h = hashlib.blake2b(query_id.encode(), digest_size=4).hexdigest()
    return re.sub(r"[^A-Za-z0-9_.-]", "_", query_id)[:60] + "-" + h


def _text(v: Any) -> str:
    """A value as table text: ``""`` for None (the ``text`` filter of the templates)."""
    return "" if v is None else str(v)


@functools.cache
def templates() -> Environment:
    """The jinja2 environment of ``urbex/report/templates``: autoescaped, and a variable a
    template uses but is not given raises :class:`jinja2.UndefinedError` (``StrictUndefined``)."""
    # Every tag is in a template; nothing passed in is marked ``markupsafe.Markup``, so every
    # value (descriptions, ids, errors, file names) is escaped.
    env = Environment(
        loader=PackageLoader("urbex.report", "templates"),
        autoescape=select_autoescape(["html.j2"], default_for_string=True, default=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["text"] = _text
    return env


def render(name: str, /, **context: Any) -> str:
    """Render template ``name`` (e.g. ``"run.html.j2"``) with ``context``, autoescaped.

    Raises
    ------
    jinja2.TemplateNotFound
        No such template.
    jinja2.UndefinedError
        The template uses a variable that ``context`` lacks.
    """
    return templates().get_template(name).render(**context)


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(path, "w", encoding="utf-8") as fh:
        fh.write(text)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Card:
    """A pictured episode in a run's gallery (``stem``: its files' name in ``gallery/``)."""

    query_id: str
    why: str
    split: str
    outcome: str
    iou: float
    turns: int
    text: str
    stem: str
    drawn: bool
    why_not: str


def _cell(v: Any, metric: str | None) -> Cell:
    """Numbers formatted as in ``report.md`` (:func:`urbex.report.comparison.fmt_metric`) and
    sorted by their value; NaN and missing values sort as ``""``."""
    if metric is not None and (v is None or isinstance(v, int | float)):
        num = v is not None and v == v
        return Cell(sort=str(v) if num else "", text=fmt_metric(v, metric), numeric=True)
    return Cell(sort=_text(v), text=_text(v), numeric=False)


def _report(lay: AssetLayout, ev: EvalParams, base_dir: Path) -> Block | None:
    """The report table's columns and cells (None: no runs)."""
    if not any(lay.runs.glob("*/metrics.parquet")):
        return None  # no finished run: no metrics view to read
    table = report_table(lay, ev, base_dir, missing_as_null=True)
    if table.height == 0:
        return None
    cols = [c for c in table.columns if not c.endswith(("_lo", "_hi"))]
    heads: list[str] = []
    metrics: list[str | None] = []
    for c in cols:
        if c in ("method", "policy"):
            heads.append(c)
            metrics.append(None)
        else:
            split, metric = split_metric(c)
            heads.append(f"{split} {METRIC_LABELS.get(metric, metric)}")
            metrics.append(metric)
    rows = [
        [_cell(row[c], m) for c, m in zip(cols, metrics)] for row in table.iter_rows(named=True)
    ]
    note = f"{len(rows)} method(s); percent, except n. Click a column to sort."
    smoke = smoke_note(lay, table["method"].to_list())
    if smoke:
        note += " " + smoke.replace("`", "")
    return Block(key="report", title="Report (Table 1)", note=note, heads=heads, rows=rows)


#: The latency block's columns (the warehouse's ``metrics`` view; seconds per query).
_LATENCY = ("latency_s", "latency_p50_s", "latency_p90_s", "env_s", "policy_s")


def _latency(lay: AssetLayout) -> Block | None:
    """Seconds per query of every complete run (warm online latency, its median and 90th
    percentile, environment and policy shares): measured on this machine, so shown here and
    never in the versioned report.md."""
    import duckdb

    if not any(lay.runs.glob("*/metrics.parquet")):
        return None
    con = duckdb.connect(":memory:")
    try:
        refresh_warehouse(lay.root, con=con)
        cols = ", ".join(_LATENCY)
        rows = con.execute(
            f"SELECT run_id, split, n, {cols} FROM metrics ORDER BY run_id, split"
        ).fetchall()
    finally:
        con.close()
    if not rows:
        return None
    heads = ["run_id", "split", "n", *(METRIC_LABELS.get(c, c) for c in _LATENCY)]
    metrics = [None, None, "n", *_LATENCY]
    cells = [[_cell(v, m) for v, m in zip(r, metrics)] for r in rows]
    note = (
        "Seconds per query, warm online (model + environment; scene preparation excluded), "
        "measured where the runs were played: not part of the versioned report."
    )
    return Block(key="latency", title="Latency", note=note, heads=heads, rows=cells)


def _blocks(lay: AssetLayout) -> list[Block]:
    """Every block of report.md after its comparison (Tables 11, 9, 2), the latency, and every
    block of diagnostics.md (:func:`urbex.report.blocks.markdown_blocks`)."""
    out: list[Block] = []
    if lay.report_md.is_file():
        out += markdown_blocks(lay.report_md.read_text(), prefix="report", skip_first=True)
    latency = _latency(lay)
    if latency is not None:
        out.append(latency)
    diag = lay.diagnostics / DIAGNOSTICS_MD
    if diag.is_file():
        out += markdown_blocks(diag.read_text(), prefix="diag")
    return out


def _plot_groups(lay: AssetLayout) -> list[tuple[str, list[tuple[str, str]]]]:
    """The diagnostic plots by kind: (title, [(file name, stem)]) — one panel per policy
    family (``<stem>-<family>.png``, :data:`urbex.report.blocks.PLOT_TITLES`), then any other
    PNG of the folder under "Other plots"."""
    pngs = sorted(lay.diagnostics.glob("*.png")) if lay.diagnostics.is_dir() else []
    groups: dict[str, list[tuple[str, str]]] = {}
    for p in pngs:
        stem = p.stem.split("-", 1)[0]
        title = PLOT_TITLES.get(stem, "Other plots")
        groups.setdefault(title, []).append((p.name, p.stem))
    order = [*PLOT_TITLES.values(), "Other plots"]
    return [(t, groups[t]) for t in order if t in groups]


def _run_ids(lay: AssetLayout) -> list[str]:
    """The runs to show: those whose files can all be read (:func:`readable_runs`)."""
    return [d.name for d in readable_runs(lay.root)]


def write_results_page(
    params: Params, *, n_best: int = 2, n_worst: int = 2, n_random: int = 2
) -> Path:
    """Write ``<assets>/eval/index.html`` and every run's page; return the index's path.

    ``n_best``, ``n_worst``, ``n_random``: episodes pictured per run (the random sample is
    seeded by ``params.eval.seed``). See the module docstring for the layout and the pictures.
    """
    lay = params.layout
    lay.eval.mkdir(parents=True, exist_ok=True)
    report = _report(lay, params.eval, params.base_dir)
    blocks = _blocks(lay)
    plots = _plot_groups(lay)
    curves = _copy_curves(lay)
    seed = params.eval.seed
    runs = [
        (
            rid,
            _write_run_page(
                lay,
                rid,
                functools.partial(_replayer, lay, params.env, params.landmarks),
                seed=seed,
                n_best=n_best,
                n_worst=n_worst,
                n_random=n_random,
            ),
        )
        for rid in _run_ids(lay)
    ]
    index = lay.results_page
    page = render(
        "index.html.j2",
        title="urbex results",
        report=report,
        blocks=blocks,
        plots=plots,
        curves=curves,
        runs=runs,
    )
    _write(index, page)
    return index


def _copy_curves(lay: AssetLayout) -> list[str]:
    """Copy every checkpoint's ``train_curves.png`` (a reader stage's ``reader_curves.png``: its
    held-out drill accuracy) to ``eval/curves/<name>.png``; their names."""
    names = []
    if lay.checkpoints.is_dir():
        for d in sorted(lay.checkpoints.iterdir()):
            if not d.is_dir() or d.name.startswith("."):
                continue
            src = next(
                (p for p in (lay.train_curves(d.name), lay.reader_curves(d.name)) if p.is_file()),
                None,
            )
            if src is not None:
                (lay.eval / "curves").mkdir(exist_ok=True)
                shutil.copyfile(src, lay.eval / "curves" / f"{d.name}.png")
                names.append(d.name)
    return names


def _descriptions(lay: AssetLayout) -> dict[str, str]:
    path = lay.queries
    if not path.is_file():
        return {}
    df = pl.read_parquet(path, columns=["query_id", "description"], glob=False)
    return dict(zip(df["query_id"].to_list(), df["description"].to_list()))


def _replayer(
    lay: AssetLayout, env: EnvParams, landmarks: LandmarkParams, run_dir: Path
) -> Replayer:
    """The replayer of the run in ``run_dir``, in the environment it played (its spec's
    benchmark, numbered marks, tools, ...); the project's ``env`` for a run without a readable
    spec."""
    spec = read_spec(run_dir)
    if spec is None:
        return Replayer(lay, env, landmarks)
    played = AssetLayout(lay.root, benchmark=spec.benchmark)
    return Replayer(played, spec.play_env(env), landmarks)


def _write_run_page(
    lay: AssetLayout,
    run_id: str,
    replayer: Callable[[Path], Replayer],
    *,
    seed: int,
    n_best: int,
    n_worst: int,
    n_random: int,
) -> int:
    """One run's gallery page and its pictures and step lists (drawn by ``replayer(run_dir)``,
    built only when the run has episodes; the random picks seeded by ``seed``); returns the
    episode count."""
    run_dir = lay.run(run_id)
    eps = read_episodes(run_dir)
    cards: list[_Card] = []
    if eps.height:
        steps = read_steps(run_dir)
        picks = pick_episodes(eps, n_best=n_best, n_worst=n_worst, n_random=n_random, seed=seed)
        texts = _descriptions(lay)
        shutil.rmtree(run_dir / GALLERY, ignore_errors=True)  # stale picks of an earlier page
        replay = replayer(run_dir)
        for pick in picks:
            ep = eps.filter(pl.col("query_id") == pick.query_id).row(0, named=True)
            st = steps.filter(pl.col("query_id") == pick.query_id).sort("turn")
            stem = _file_stem(pick.query_id)
            text = texts.get(pick.query_id, pick.query_id)
            drawn, why_not = replay.draw(ep, st, text, run_dir / GALLERY / f"{stem}.png")
            steps_page = render(
                "steps.html.j2",
                title=f"{run_id}: {ep['query_id']}",
                ep=ep,
                text=text,
                steps=list(st.iter_rows(named=True)),
                stem=stem,
                drawn=drawn,
            )
            _write(run_dir / GALLERY / f"{stem}.html", steps_page)
            iou = ep["iou_bev"]
            cards.append(
                _Card(
                    query_id=pick.query_id, why=pick.why, split=str(ep["split"]),
                    outcome=episode_outcome(bool(ep["valid_answer"]), bool(ep["hit1"])),
                    iou=0.0 if iou is None else iou, turns=ep["turns"], text=text, stem=stem,
                    drawn=drawn, why_not=why_not,
                )
            )  # fmt: skip
    outcomes = (
        [episode_outcome(bool(v), bool(h)) for v, h in zip(eps["valid_answer"], eps["hit1"])]
        if eps.height
        else []
    )
    page = render(
        "run.html.j2",
        title=f"run {run_id}",
        gallery=GALLERY,
        n_episodes=eps.height,
        counts={o: outcomes.count(o) for o in OUTCOMES},
        outcomes=list(OUTCOMES),
        splits=sorted({str(s) for s in eps["split"]}) if eps.height else [],
        cards=cards,
    )
    _write(run_dir / "index.html", page)
    return eps.height


def thumbnails(index: Path, *, k: int = 2) -> list[Path]:
    """Up to ``k`` gallery pictures under the page's runs (for asset metadata), sorted."""
    return sorted((index.parent / "runs").glob(f"*/{GALLERY}/*.png"))[:k]
