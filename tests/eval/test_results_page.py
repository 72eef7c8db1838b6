"""The static results page: written from a small evaluated project, checked as HTML and in a
real headless Chromium (tests/fixtures/browser.py, CDP over a websocket)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.fixtures.browser import Browser, find_chromium
from tests.fixtures.pages import build_page_project, page_params
from urbex.config import Params
from urbex.report.page import episode_outcome, pick_episodes, write_results_page


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> Path:
    """The results page of the small project (written once; tests read it)."""
    assets = build_page_project(tmp_path_factory.mktemp("page"))
    return write_results_page(page_params(assets))


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

        b.goto(page.parent / "runs" / "ghost" / "index.html")  # placeholders, no broken image
        assert b.eval("document.images.length") == 0
        assert b.eval("document.querySelectorAll('.ph').length") > 0
        b.goto(page.parent / "runs" / "empty" / "index.html")
        assert b.eval("document.getElementById('no-episodes') !== null")
        assert b.errors == [], b.errors
