"""The static results page (urbex/report/page.py): written from a small evaluated project,
checked as HTML and in a real headless Chromium (tests/fixtures/browser.py, CDP over a websocket)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import jinja2
import polars as pl
import pytest
from markupsafe import escape

from tests.fixtures.browser import Browser, find_chromium
from tests.fixtures.pages import build_page_project, page_params
from urbex.config import Params
from urbex.report.page import (
    OUTCOMES,
    episode_outcome,
    pick_episodes,
    render,
    write_results_page,
)

#: A description that runs script if the page pastes it in as markup (the browser test reads
#: ``window.pwned``; the broken image would also fail the relative-links test).
HOSTILE = '<script>window.pwned = 1</script>"><img src=x onerror="window.pwned = 2">'


#: Table 9 and Table 2 blocks (their runs need a checkpoint and a second benchmark, which the
#: small project lacks), appended to its report.md as ``urbex report`` writes them.
EXTRA_BLOCKS = {
    "Table 9: free policy vs fixed workflow": pl.DataFrame({
        "split": ["test_no"] * 2, "mode": ["free", "fixed"], "method": ["vlm-g", "workflow-g"],
        "n": [10, 10], "hit1": [0.3, 0.2], "hit3": [0.5, 0.4], "iou_bev": [0.25, 0.2],
        "landmark_query": [0.5, 1.0], "zoom_in": [1.5, 1.0], "oblique_render": [0.0, 1.0],
        "invalid_rate": [0.1, 0.3], "turns": [3.0, 4.5], "lzoa_share": [0.0, 0.9]}),
    "Table 2: zero-shot on a second benchmark": pl.DataFrame({
        "benchmark": ["b", "b"], "method": ["oracle"] * 2, "policy": ["oracle"] * 2,
        "run_id": ["r"] * 2, "subset": ["all", "landmark_free"], "n": [10, 4],
        "hit1": [1.0, 0.75], "hit3": [1.0, 1.0], "iou_bev": [0.99, 0.5]}),
}  # fmt: skip


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> Path:
    """The results page of the small project (written once; tests read it) after `urbex
    diagnose` and `urbex report` (+ :data:`EXTRA_BLOCKS`). Every query's description starts
    with :data:`HOSTILE` (queries are read by the page, after evaluation)."""
    from urbex.report.diagnose import diagnose
    from urbex.report.publish import report
    from urbex.report.table2 import table2_markdown
    from urbex.report.table9 import table9_markdown

    assets = build_page_project(tmp_path_factory.mktemp("page"))
    p = page_params(assets)
    diagnose(p)
    report(p, echo=False, page=False)
    md = {"Table 9": table9_markdown, "Table 2": table2_markdown}
    with p.layout.report_md.open("a") as fh:
        for title, frame in EXTRA_BLOCKS.items():
            fh.write(f"\n## {title}\n\nA note.\n\n{md[title.split(':')[0]](frame)}\n")
    queries = pl.read_parquet(p.layout.queries)
    hostile = pl.lit(HOSTILE + " ") + pl.col("description")
    queries.with_columns(hostile.alias("description")).write_parquet(p.layout.queries)
    return write_results_page(p)


def _md_tables(path: Path) -> dict[str, int]:
    """``## `` section title → rows of its table, of a Markdown report."""
    out, title = {}, None
    for line in path.read_text().splitlines():
        if line.startswith("## "):
            title = line[3:].strip()
        elif title and line.startswith("|") and not line.startswith("|---"):
            out[title] = out.get(title, -1) + 1  # the header row is not a row
    return out


def _run_kwargs(**over):
    """A complete context of run.html.j2 (one pictured episode), with ``over`` replaced."""
    card = {
        "query_id": "s:1", "why": "best", "split": "test", "outcome": "hit", "iou": 0.5,
        "turns": 2, "text": "the red roof", "stem": "s_1-00", "drawn": True, "why_not": "",
    }  # fmt: skip
    kw = {
        "title": "run r", "gallery": "gallery", "n_episodes": 1,
        "counts": {"hit": 1, "miss": 0, "invalid": 0}, "outcomes": list(OUTCOMES),
        "splits": ["test"], "cards": [card],
    }  # fmt: skip
    return {**kw, **over}


def test_render_escapes_a_hostile_description():
    card = {**_run_kwargs()["cards"][0], "text": HOSTILE, "why_not": HOSTILE}
    out = render("run.html.j2", **_run_kwargs(cards=[card], title=HOSTILE))
    assert HOSTILE not in out and "<img src=x" not in out
    assert out.count(str(escape(HOSTILE))) == 3  # the title, the heading and the card
    assert out.count("<script>") == 1  # the page's own filter script


def test_render_missing_variable_fails_loudly():
    kw = _run_kwargs()
    del kw["cards"]
    with pytest.raises(jinja2.UndefinedError, match="cards"):
        render("run.html.j2", **kw)
    card = dict(_run_kwargs()["cards"][0])
    del card["iou"]
    with pytest.raises(jinja2.UndefinedError, match="iou"):
        render("run.html.j2", **_run_kwargs(cards=[card]))


def test_results_page_escapes_hostile_descriptions(page):
    gallery = page.parent / "runs" / "landmark_prior-test_nd"
    pages = [gallery / "index.html", *(gallery / "gallery").glob("*.html")]
    assert len(pages) > 1
    for f in pages:
        text = f.read_text()
        assert HOSTILE not in text and "<img src=x" not in text, f
        assert str(escape(HOSTILE)) in text, f
        assert "<script>window" not in text, f


def test_results_page_no_runs_says_so(tmp_path):
    index = write_results_page(Params(paths={"assets": tmp_path}))
    assert index == tmp_path / "eval" / "index.html"
    assert 'id="no-runs"' in index.read_text()


def test_results_page_links_are_relative_and_exist(page):
    for html_file in page.parent.rglob("*.html"):
        for link in re.findall(r'(?:href|src)="([^"]+)"', html_file.read_text()):
            assert not re.match(r"^(/|[a-z]+:)", link), (html_file, link)  # no absolute/remote
            assert (html_file.parent / link).exists(), (html_file, link)


def test_results_page_report_plots_curves_and_runs(page):
    text = page.read_text()
    assert text.count("<tr>") >= 3  # header + oracle + landmark_prior
    assert 'src="diagnostics/plot.png"' in text and 'src="curves/tiny.png"' in text
    for stem in ("success_vs_distractors", "area_ratio_hist"):  # one panel per policy family
        for family in ("landmark_prior", "oracle"):
            assert f'src="diagnostics/{stem}-{family}.png"' in text
    for rid in ("oracle-test_no", "landmark_prior-test_nd", "empty", "ghost"):
        assert f'href="runs/{rid}/index.html"' in text


def test_results_page_run_gallery_bad_inputs(page):
    runs = page.parent / "runs"
    empty = (runs / "empty" / "index.html").read_text()
    assert 'id="no-episodes"' in empty and 'class="card"' not in empty
    ghost = (runs / "ghost" / "index.html").read_text()
    assert "picture missing: no scene cache for gone_scene" in ghost and "<img" not in ghost
    lp = (runs / "landmark_prior-test_nd" / "index.html").read_text()
    assert lp.count('class="card"') == len(
        list((runs / "landmark_prior-test_nd" / "gallery").glob("*.png"))
    )


def test_results_page_leaves_the_runs_files_alone(page):
    run = page.parent / "runs" / "oracle-test_no"
    before = {
        p: p.read_bytes()
        for p in run.rglob("*")
        if p.is_file() and "gallery" not in p.parts and p.name != "index.html"
    }
    assert any(p.parent.name == "steps" for p in before) and any(
        p.parent.name == "episodes" for p in before
    )
    write_results_page(page_params(page.parent.parent))
    after = {
        p: p.read_bytes()
        for p in run.rglob("*")
        if p.is_file() and "gallery" not in p.parts and p.name != "index.html"
    }
    assert after == before


def test_results_page_is_moveable(page, tmp_path):
    moved = shutil.copytree(page.parent, tmp_path / "elsewhere")
    assert str(page.parent) not in (moved / "index.html").read_text()


def test_pick_episodes_is_seeded_and_unique():
    import polars as pl

    df = pl.DataFrame(
        {
            "query_id": [f"q{i}" for i in range(20)],
            "hit1": [i % 3 == 0 for i in range(20)],
            "iou_bev": [i / 20 for i in range(20)],
        }
    )
    a = pick_episodes(df, seed=1)
    assert a == pick_episodes(df, seed=1) and len({p.query_id for p in a}) == 6
    assert [p.why for p in a] == ["best", "best", "worst", "worst", "random", "random"]
    assert episode_outcome(True, False) == "miss"


@pytest.mark.skipif(
    find_chromium() is None,
    reason="no chromium installed (scripts/setup.sh installs Debian's chromium as root)",
)
def test_results_page_in_headless_chromium(page, tmp_path):
    with Browser(find_chromium(), tmp_path / "profile") as b:
        b.goto(page)
        rows = b.eval("document.querySelectorAll('#report tbody tr').length")
        assert rows >= 2
        first = b.eval("document.querySelector('#report tbody tr td').dataset.v")
        b.eval("document.querySelector('#report th').click()")  # sort by method
        b.eval("document.querySelector('#report th').click()")  # and back, descending
        assert (
            b.eval("document.querySelector('#report tbody tr td').dataset.v") != first or rows == 1
        )
        imgs = b.eval("Array.from(document.images).map(i => [i.complete, i.naturalWidth])")
        assert imgs and all(ok and w > 0 for ok, w in imgs), imgs
        # every block of report.md and diagnostics.md, as a table with all its rows
        shown = b.eval(
            "Object.fromEntries(Array.from(document.querySelectorAll('section.block')).map("
            "s => [s.querySelector('h2').innerText, s.querySelectorAll('tbody tr').length]))"
        )
        eval_dir = page.parent
        want = {
            **_md_tables(eval_dir / "report.md"),
            **_md_tables(eval_dir / "diagnostics" / "diagnostics.md"),
        }
        assert {"Table 11 (test_no): box and point quality", *EXTRA_BLOCKS} <= set(want)
        assert {"disambiguation", "area_ratio", "box_extent", "tool_use"} <= set(want)
        assert {t: shown.get(t) for t in want} == want
        assert shown["Report (Table 1)"] >= 2 and shown["Latency"] >= 2
        panels = b.eval("document.querySelectorAll('img.panel').length")
        assert panels == len(list((eval_dir / "diagnostics").glob("*.png"))) >= 5
        b.eval("document.querySelector('#report-table-9-free-policy-vs-fixed-workflow th').click()")
        b.screenshot(tmp_path / "index.png")

        b.goto(page.parent / "runs" / "landmark_prior-test_nd" / "index.html")
        imgs = b.eval("Array.from(document.images).map(i => [i.complete, i.naturalWidth])")
        assert imgs and all(ok and w > 0 for ok, w in imgs), imgs
        visible = "Array.from(document.querySelectorAll('.card')).filter(c => c.offsetParent !== null).length"
        n_all = b.eval(visible)
        n_hit = b.eval("document.querySelectorAll('.card[data-outcome=hit]').length")
        b.eval("document.querySelector('button[data-key=outcome][data-value=hit]').click()")
        assert b.eval(visible) == n_hit < n_all
        b.eval("document.querySelector('button[data-key=outcome][data-value=invalid]').click()")
        assert b.eval(visible) == b.eval(
            "document.querySelectorAll('.card[data-outcome=invalid]').length"
        )
        b.eval("document.querySelector('button[data-key=outcome][data-value=all]').click()")
        assert b.eval(visible) == n_all
        shot = b.screenshot(tmp_path / "run.png")
        assert shot.stat().st_size > 1000

        assert b.eval("window.pwned === undefined")  # the hostile descriptions stayed text
        steps = sorted((page.parent / "runs" / "landmark_prior-test_nd" / "gallery").glob("*.html"))
        b.goto(steps[0])
        assert b.eval("window.pwned === undefined")
        assert "window.pwned = 1" in b.eval("document.body.innerText")

        b.goto(page.parent / "runs" / "ghost" / "index.html")  # placeholders, no broken image
        assert b.eval("document.images.length") == 0
        assert b.eval("document.querySelectorAll('.ph').length") > 0
        b.goto(page.parent / "runs" / "empty" / "index.html")
        assert b.eval("document.getElementById('no-episodes') !== null")
        assert b.errors == [], b.errors
