"""The static results page: ``<assets>/eval/index.html`` and one page per run.

Written by ``urbex report`` and by the Dagster ``evaluation_report`` asset, after the report
table. Everything is plain HTML with a little inline JavaScript (table sorting, gallery
filters): no server, no external script, style sheet or font, and only *relative* links, so the
``eval/`` folder opens from disk and can be moved as a whole::

    eval/index.html                     the report table (sortable), the diagnostics plots,
                                        the training curves, one link per run
    eval/curves/<checkpoint>.png        copies of <assets>/checkpoints/<name>/train_curves.png
    eval/runs/<run_id>/index.html       the run's gallery: best, worst and a seeded random
                                        sample of episodes, filterable by split and outcome
    eval/runs/<run_id>/gallery/<q>.png  the gallery's trajectory pictures (small PNGs)
    eval/runs/<run_id>/gallery/<q>.html one episode's step list

The page's files in a run directory (``index.html``, ``gallery/``) are rewritten by every
call; the run's own files (``run.json``, ``episodes/``, ``steps/``, ``metrics.parquet``) are
only read. ``.dvcignore`` keeps the page's files out of the evaluation stages' outputs.

Pictures are drawn by the same code as ``urbex ground``
(:func:`urbex.viz.trajectory.trajectory_picture`) by **replaying the episode from the run's
stored steps**, not by playing it again: no policy or model is loaded. The global view is
rebuilt with :func:`urbex.env.episode.make_global_view` (what the agent saw), each zoom view
with the scene cache's ``bev_window`` over the step's stored world region (``region_*_m``) at
``params.env.zoom_size`` (the pixels the agent saw), the target from the scene's instance
table and the prediction from the episode row. Oblique renders are not stored and not
re-rendered (that is the expensive part): their region is drawn on the map and their thumbnail
is a grey placeholder saying so.

Outcome of an episode: ``invalid`` without a valid answer, else ``hit`` when Hit@1, else
``miss``. Bad input: no runs → the index says so; a run without episodes → an empty gallery and
a sentence; a picture that could not be drawn (no scene cache) → a visible placeholder.
"""

from __future__ import annotations

import hashlib
import html
import json
import random
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from urbex.atomic import atomic_write
from urbex.env.episode import CachedSceneProvider, make_global_view
from urbex.env.records import Step
from urbex.env.views import EpisodeView
from urbex.eval.episodes import read_episodes, read_steps
from urbex.eval.ground import landmark_hits
from urbex.landmarks import LandmarkIndex, read_landmark_table
from urbex.report.comparison import METRIC_LABELS, fmt_metric, report_table, split_metric
from urbex.viz.trajectory import trajectory_picture

if TYPE_CHECKING:
    import polars as pl

    from urbex.config import Params

__all__ = [
    "GalleryPick",
    "episode_outcome",
    "pick_episodes",
    "thumbnails",
    "write_results_page",
]

#: Side of the global panel and of each view thumbnail in gallery pictures (picture pixels;
#: 448 is the narrowest panel whose legend fits its two lines).
PANEL_PX, THUMB_PX = 448, 160
#: A run directory's sub-directory for the page's pictures and step lists.
GALLERY = "gallery"
#: Colours of a gallery picture's palette (a palette PNG is ~4x smaller than RGB).
PALETTE_COLORS = 128

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;background:#fafafa;color:#222}
table{border-collapse:collapse;font-size:13px}th,td{border:1px solid #ccc;padding:3px 6px}
th{background:#eee;cursor:pointer;user-select:none}td.n{text-align:right}
.plots img{max-width:480px;margin:4px;border:1px solid #ccc;background:#fff}
.gallery{display:flex;flex-wrap:wrap;gap:10px}.card{border:1px solid #ccc;background:#fff;
padding:6px;width:400px}.card img{width:100%}.card .ph{height:220px;display:flex;
align-items:center;justify-content:center;background:#ddd;color:#700;font-weight:bold}
.hit{color:#080}.miss{color:#a60}.invalid{color:#c00}.filters button{margin-right:4px}
button.on{background:#336;color:#fff}.empty{font-style:italic;color:#555}
"""

_SORT_JS = """
document.querySelectorAll('table.sortable th').forEach(function(th, i) {
  th.addEventListener('click', function() {
    var body = th.closest('table').tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    var asc = th.dataset.dir !== 'asc'; th.dataset.dir = asc ? 'asc' : 'desc';
    rows.sort(function(a, b) {
      var x = a.cells[i].dataset.v, y = b.cells[i].dataset.v;
      var nx = parseFloat(x), ny = parseFloat(y);
      var c = (!isNaN(nx) && !isNaN(ny)) ? nx - ny : String(x).localeCompare(String(y));
      return asc ? c : -c;
    });
    rows.forEach(function(r) { body.appendChild(r); });
  });
});
"""

_FILTER_JS = """
var want = {split: 'all', outcome: 'all'};
function apply() {
  var shown = 0;
  document.querySelectorAll('.card').forEach(function(c) {
    var ok = (want.split === 'all' || c.dataset.split === want.split) &&
             (want.outcome === 'all' || c.dataset.outcome === want.outcome);
    c.style.display = ok ? '' : 'none'; if (ok) shown++;
  });
  var n = document.getElementById('shown'); if (n) n.textContent = shown;
}
document.querySelectorAll('.filters button').forEach(function(b) {
  b.addEventListener('click', function() {
    want[b.dataset.key] = b.dataset.value;
    document.querySelectorAll('.filters button[data-key="' + b.dataset.key + '"]')
      .forEach(function(o) { o.classList.toggle('on', o === b); });
    apply();
  });
});
apply();
"""


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


def _page(title: str, body: str, *, script: str = "") -> str:
    js = f"<script>{script}</script>" if script else ""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{_CSS}</style></head>\n"
        f"<body>\n<h1>{html.escape(title)}</h1>\n{body}\n{js}\n</body></html>\n"
    )


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(path, "w", encoding="utf-8") as fh:
        fh.write(text)


def _cell(v: Any, metric: str | None) -> str:
    """A table cell; numbers formatted as in ``report.md`` (:func:`urbex.report.comparison.fmt_metric`) and
    sorted by their value (``data-v``)."""

    if metric is not None and (v is None or isinstance(v, int | float)):
        num = v is not None and v == v
        return f'<td class="n" data-v="{v if num else ""}">{fmt_metric(v, metric)}</td>'
    s = "" if v is None else str(v)
    return f'<td data-v="{html.escape(s)}">{html.escape(s)}</td>'


def _report_html(params: Params) -> tuple[str, int]:
    """The report table as a sortable HTML table, and its row count (0: no runs)."""

    if not any(params.layout.runs.glob("*/metrics.parquet")):
        return "", 0  # no finished run: no metrics view to read
    table = report_table(params, missing_as_null=True)
    if table.height == 0:
        return "", 0
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
    out = ['<table class="sortable" id="report"><thead><tr>']
    out += [f"<th>{html.escape(h)}</th>" for h in heads]
    out.append("</tr></thead><tbody>")
    for row in table.iter_rows(named=True):
        out.append("<tr>" + "".join(_cell(row[c], m) for c, m in zip(cols, metrics)) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out), table.height


def _run_ids(params: Params) -> list[str]:
    runs = params.layout.runs
    if not runs.is_dir():
        return []
    return sorted(p.name for p in runs.iterdir() if p.is_dir() and not p.name.startswith("."))


def write_results_page(
    params: Params, *, n_best: int = 2, n_worst: int = 2, n_random: int = 2
) -> Path:
    """Write ``<assets>/eval/index.html`` and every run's page; return the index's path.

    ``n_best``, ``n_worst``, ``n_random``: episodes pictured per run (the random sample is
    seeded by ``params.eval.seed``). See the module docstring for the layout and the pictures.
    """
    lay = params.layout
    lay.eval.mkdir(parents=True, exist_ok=True)
    parts: list[str] = []
    table, n_rows = _report_html(params)
    runs = _run_ids(params)
    if not runs:
        parts.append(
            '<p class="empty" id="no-runs">No evaluation runs yet: run '
            "<code>urbex evaluate</code> (or <code>make demo</code>), then "
            "<code>urbex report</code>.</p>"
        )
    if table:
        parts.append(f"<h2>Report</h2><p>{n_rows} method(s); click a column to sort.</p>{table}")
    plots = sorted(lay.diagnostics.glob("*.png")) if lay.diagnostics.is_dir() else []
    if plots:
        parts.append('<h2>Diagnostics</h2><div class="plots">')
        parts += [
            f'<a href="diagnostics/{p.name}"><img src="diagnostics/{p.name}" '
            f'alt="{html.escape(p.stem)}"></a>'
            for p in plots
        ]
        parts.append("</div>")
    curves = _copy_curves(params)
    if curves:
        parts.append('<h2>Training curves</h2><div class="plots">')
        parts += [
            f'<figure><img src="curves/{n}.png" alt="training curves of {html.escape(n)}">'
            f"<figcaption>{html.escape(n)}</figcaption></figure>"
            for n in curves
        ]
        parts.append("</div>")
    if runs:
        parts.append('<h2>Runs</h2><ul id="runs">')
        for rid in runs:
            n = _write_run_page(params, rid, n_best=n_best, n_worst=n_worst, n_random=n_random)
            parts.append(
                f'<li><a href="runs/{html.escape(rid)}/index.html">{html.escape(rid)}</a> '
                f"({n} episode(s))</li>"
            )
        parts.append("</ul>")
    index = lay.results_page
    _write(index, _page("urbex results", "\n".join(parts), script=_SORT_JS))
    return index


def _copy_curves(params: Params) -> list[str]:
    """Copy every checkpoint's ``train_curves.png`` to ``eval/curves/<name>.png``; their names."""
    lay = params.layout
    names = []
    if lay.checkpoints.is_dir():
        for d in sorted(lay.checkpoints.iterdir()):
            if d.is_dir() and not d.name.startswith(".") and lay.train_curves(d.name).is_file():
                (lay.eval / "curves").mkdir(exist_ok=True)
                shutil.copyfile(lay.train_curves(d.name), lay.eval / "curves" / f"{d.name}.png")
                names.append(d.name)
    return names


def _descriptions(params: Params) -> dict[str, str]:
    import polars as pl

    path = params.layout.queries
    if not path.is_file():
        return {}
    df = pl.read_parquet(path, columns=["query_id", "description"], glob=False)
    return dict(zip(df["query_id"].to_list(), df["description"].to_list()))


def _write_run_page(
    params: Params, run_id: str, *, n_best: int, n_worst: int, n_random: int
) -> int:
    """One run's gallery page and its pictures and step lists; returns the episode count."""
    import polars as pl

    lay = params.layout
    run_dir = lay.run(run_id)
    eps = read_episodes(run_dir)
    if eps.height == 0:
        body = (
            '<p><a href="../../index.html">← all results</a></p>'
            '<div class="gallery" id="gallery"></div>'
            '<p class="empty" id="no-episodes">This run has no episodes yet '
            "(nothing was played, or every shard is still being written).</p>"
        )
        _write(run_dir / "index.html", _page(f"run {run_id}", body))
        return 0
    steps = read_steps(run_dir)
    picks = pick_episodes(
        eps, n_best=n_best, n_worst=n_worst, n_random=n_random, seed=params.eval.seed
    )
    texts = _descriptions(params)
    shutil.rmtree(run_dir / GALLERY, ignore_errors=True)  # stale picks of an earlier page
    cards = []
    replay = _Replayer(params)
    for pick in picks:
        ep = eps.filter(pl.col("query_id") == pick.query_id).row(0, named=True)
        st = steps.filter(pl.col("query_id") == pick.query_id).sort("turn")
        stem = _file_stem(pick.query_id)
        text = texts.get(pick.query_id, pick.query_id)
        pic = run_dir / GALLERY / f"{stem}.png"
        drawn, why_not = replay.draw(ep, st, text, pic)
        _write(run_dir / GALLERY / f"{stem}.html", _steps_page(run_id, ep, st, text, stem, drawn))
        outcome = episode_outcome(bool(ep["valid_answer"]), bool(ep["hit1"]))
        img = (
            f'<img src="{GALLERY}/{stem}.png" alt="trajectory of {html.escape(pick.query_id)}">'
            if drawn
            else f'<div class="ph">picture missing: {html.escape(why_not)}</div>'
        )
        iou = ep.get("iou_bev")
        cards.append(
            f'<div class="card" data-split="{html.escape(str(ep["split"]))}" '
            f'data-outcome="{outcome}"><a href="{GALLERY}/{stem}.html">{img}</a>'
            f'<div><b>{pick.why}</b> · <span class="{outcome}">{outcome}</span> · '
            f"{html.escape(str(ep['split']))} · IoU {0.0 if iou is None else iou:.2f} · "
            f'{ep["turns"]} turn(s) · <a href="{GALLERY}/{stem}.html">steps</a></div>'
            f"<div>{html.escape(text)}</div></div>"
        )
    splits = sorted({str(s) for s in eps["split"].to_list()})
    buttons = ['<div class="filters">split: ']
    buttons += [
        f'<button data-key="split" data-value="{v}"{" class=on" if v == "all" else ""}>'
        f"{html.escape(v)}</button>"
        for v in ["all", *splits]
    ]
    buttons.append(" outcome: ")
    buttons += [
        f'<button data-key="outcome" data-value="{v}"{" class=on" if v == "all" else ""}>'
        f"{v}</button>"
        for v in ("all", "hit", "miss", "invalid")
    ]
    buttons.append("</div>")
    counts = {
        o: sum(
            episode_outcome(bool(v), bool(h)) == o
            for v, h in zip(eps["valid_answer"].to_list(), eps["hit1"].to_list())
        )
        for o in ("hit", "miss", "invalid")
    }
    body = (
        '<p><a href="../../index.html">← all results</a></p>'
        f"<p>{eps.height} episode(s): {counts['hit']} hit, {counts['miss']} miss, "
        f"{counts['invalid']} invalid. Pictured: best, worst and a seeded random sample "
        f'(<span id="shown">{len(cards)}</span> shown).</p>'
        + "".join(buttons)
        + '<div class="gallery" id="gallery">'
        + "".join(cards)
        + "</div>"
    )
    _write(run_dir / "index.html", _page(f"run {run_id}", body, script=_FILTER_JS))
    return eps.height


def _steps_page(
    run_id: str, ep: dict[str, Any], steps: pl.DataFrame, text: str, stem: str, drawn: bool
) -> str:
    rows = [
        "<table><thead><tr><th>turn</th><th>tool</th><th>arguments</th><th>valid</th>"
        "<th>error</th><th>view</th><th>reward</th><th>s</th></tr></thead><tbody>"
    ]
    for s in steps.iter_rows(named=True) if steps.height else ():
        rows.append(
            "<tr>"
            + "".join(
                f"<td>{html.escape('' if s.get(k) is None else str(s.get(k)))}</td>"
                for k in ("turn", "tool", "arguments", "valid", "error", "view_id")
            )
            + f"<td>{float(s['reward']):.3f}</td><td>{float(s['latency_s']):.3f}</td></tr>"
        )
    rows.append("</tbody></table>")
    if not steps.height:
        rows.append('<p class="empty">No steps stored for this episode.</p>')
    pic = f'<p><img src="{stem}.png" alt="trajectory"></p>' if drawn else ""
    body = (
        '<p><a href="../index.html">← the run</a></p>'
        f"<p>{html.escape(text)}</p><p>query {html.escape(str(ep['query_id']))} · scene "
        f"{html.escape(str(ep['scene_id']))} · object {html.escape(str(ep['object_id']))} · "
        f"IoU {float(ep['iou_bev'] or 0.0):.3f} · reward {float(ep['reward']):.3f}</p>"
        + "".join(rows)
        + pic
    )
    return _page(f"{run_id}: {ep['query_id']}", body)


class _Replayer:
    """Draws gallery pictures from stored episode and step rows (see the module docstring)."""

    def __init__(self, params: Params) -> None:

        self.params = params
        self.provider = CachedSceneProvider(params.layout.scenes, maxsize=2)
        self._index: dict[str, Any] = {}

    def _landmarks(self, scene_id: str) -> Any:
        """The scene's landmark index (None without a landmark table), as ``urbex ground``."""
        if scene_id not in self._index:
            table = self.params.layout.landmark_table(scene_id)
            self._index[scene_id] = (
                LandmarkIndex.from_params(read_landmark_table(table), self.params)
                if table.is_file()
                else None
            )
        return self._index[scene_id]

    def draw(
        self, ep: dict[str, Any], steps: pl.DataFrame, text: str, out: Path
    ) -> tuple[bool, str]:
        """Draw one picture to ``out``; ``(False, reason)`` when the scene cache is missing."""
        import numpy as np
        import polars as pl

        scene_id = str(ep["scene_id"])
        if not self.params.layout.scene_meta(scene_id).is_file():
            return False, f"no scene cache for {scene_id} (run urbex cache)"
        scene = self.provider(scene_id)
        views = [make_global_view(scene, self.params)]
        recs: list[Step] = []
        w, h = self.params.env.zoom_size
        for s in steps.iter_rows(named=True) if steps.height else ():
            region = [s.get(f"region_{a}_m") for a in ("x_min", "y_min", "x_max", "y_max")]
            view = None
            if s["valid"] and s["view_id"] and None not in region:
                box = np.asarray(region, dtype=np.float64)
                if s["tool"] == "zoom_in":
                    bev = scene.bev_window(box, out_size=(w, h))
                    from PIL import Image

                    view = EpisodeView(
                        view_id=s["view_id"], kind="zoom",
                        image=Image.fromarray(np.asarray(bev.image)), world_box=box,
                        transform=bev.transform, turn=int(s["turn"]),
                    )  # fmt: skip
                elif s["tool"] == "oblique_render":
                    view = EpisodeView(
                        view_id=s["view_id"], kind="oblique", image=_oblique_placeholder(),
                        world_box=box, transform=None, turn=int(s["turn"]),
                    )  # fmt: skip
            if view is not None:
                views.append(view)
            try:
                args = json.loads(s["arguments"]) if s["arguments"] else {}
            except json.JSONDecodeError:
                args = {"raw": s["arguments"]}
            recs.append(
                Step(
                    turn=int(s["turn"]), tool=s["tool"],
                    arguments=args if isinstance(args, dict) else {"raw": str(args)},
                    valid=bool(s["valid"]), error=s["error"], view=view,
                    reward_shaping=float(s["reward"]), reward_terminal=0.0,
                    env_s=float(s["env_s"]), policy_s=float(s["policy_s"]),
                )
            )  # fmt: skip
        inst = scene.instances.filter(pl.col("object_id") == str(ep["object_id"]))
        target = None
        if inst.height:
            r = inst.row(0, named=True)
            target = [r["x_min"], r["y_min"], r["x_max"], r["y_max"]]
        pred = None
        if ep["valid_answer"] and ep["pred_x_min"] is not None:
            pred = [ep["pred_x_min"], ep["pred_y_min"], ep["pred_x_max"], ep["pred_y_max"]]
        img = trajectory_picture(
            scene, recs, views, query_text=text, pred_box_2d=pred, target_box_2d=target,
            landmarks=landmark_hits(self._landmarks(scene_id), scene_id, recs),
            subtitle=f"policy {ep['policy']}  |  object {ep['object_id']}",
            panel_px=PANEL_PX, thumb_px=THUMB_PX,
        )  # fmt: skip
        out.parent.mkdir(parents=True, exist_ok=True)
        from PIL import Image

        small = img.quantize(colors=PALETTE_COLORS, method=Image.Quantize.FASTOCTREE)
        small.save(out, format="PNG")
        return True, ""


def _oblique_placeholder() -> Any:
    """A grey square saying the oblique render is not stored (see the module docstring)."""
    from PIL import Image, ImageDraw

    img = Image.new("RGB", (128, 128), (90, 90, 96))
    ImageDraw.Draw(img).text((8, 56), "oblique render\nnot stored", fill=(230, 230, 230))
    return img


def thumbnails(index: Path, *, k: int = 2) -> list[Path]:
    """Up to ``k`` gallery pictures under the page's runs (for asset metadata), sorted."""
    return sorted((index.parent / "runs").glob(f"*/{GALLERY}/*.png"))[:k]
