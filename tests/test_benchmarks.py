"""Every benchmark still runs (``--quick``) and prints its named figures, and they parse.

Each benchmark is run once (a module-scoped fixture); a parser per benchmark pulls out its
figures (throughputs, timings, the ratio against its peer, the table rows) and the tests assert
they are present, finite, positive where they must be, and that each peer ratio is printed and
agrees with the two figures it is the ratio of (within the rounding they were printed with).
No speed is asserted here: ``PASS``/``MISS``/``OK``/``OVER`` verdicts are parsed, never required.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = sorted((Path(__file__).resolve().parents[1] / "benchmarks").glob("bench_*.py"))
BY_NAME = {b.stem: b for b in BENCHMARKS}

# a printed number: digits with optional thousands separators and decimals (or nan/inf, so a
# non-finite figure parses and fails the finiteness check instead of "line not found")
NUM = r"(-?(?:\d[\d,]*)?\.?\d+|-?nan|-?inf)"


class Fig(float):
    """A printed figure: its value, and ``tol``, half its last printed digit (its rounding)."""

    tol: float

    def __new__(cls, text: str) -> Fig:
        self = super().__new__(cls, float(text.replace(",", "")))
        decimals = len(text.split(".")[1]) if "." in text else 0
        self.tol = 0.5 * 10.0**-decimals
        return self


def _match(text: str, pattern: str, shown: str | None = None) -> dict[str, Fig | str]:
    """The named groups of the first line matching ``pattern`` (``{N}``: an unnamed number);
    numeric groups as ``Fig``."""
    m = re.search(pattern.replace("{N}", NUM), text, flags=re.MULTILINE | re.IGNORECASE)
    assert m, f"no line matching {shown or pattern!r} in the benchmark's output:\n{text}"
    out: dict[str, Fig | str] = {}
    for k, v in m.groupdict().items():
        if v is None:
            continue
        try:
            out[k] = Fig(v)
        except ValueError:
            out[k] = v
    return out


def _figs(text: str, pattern: str) -> dict[str, Fig]:
    """``_match`` with ``{name}`` placeholders in ``pattern`` standing for named numbers."""
    regex = pattern
    for name in re.findall(r"\{(\w+)\}", pattern):
        regex = regex.replace("{" + name + "}", f"(?P<{name}>{NUM})")
    return {k: v for k, v in _match(text, regex, shown=pattern).items() if isinstance(v, Fig)}


def _finite(figs: dict[str, float], *, positive: tuple[str, ...] = ()) -> None:
    """All finite and >= 0 (a rounded duration may print as 0); those in ``positive`` > 0."""
    for k, v in figs.items():
        assert math.isfinite(v), f"{k} = {v} is not finite"
        assert v >= 0, f"{k} = {v} is negative"
    for k in positive:
        assert figs[k] > 0, f"{k} = {figs[k]} must be positive"


def _is_ratio(ratio: Fig, num: Fig | float, den: Fig | float) -> None:
    """``ratio`` is ``num / den`` as far as the rounding of all three printed figures allows."""
    tn, td = getattr(num, "tol", 0.0), getattr(den, "tol", 0.0)
    lo = max(num - tn, 0.0) / (den + td)
    hi = (num + tn) / (den - td) if den - td > 0 else math.inf
    eps = 1e-9 * max(1.0, abs(ratio))
    assert ratio - ratio.tol - eps <= hi and ratio + ratio.tol + eps >= lo, (
        f"printed ratio {ratio} is not {num} / {den} (in [{lo:.4g}, {hi:.4g}])"
    )


def _last_json(text: str, keys: tuple[str, ...] = ()) -> dict[str, float]:
    """The benchmark's last line: one JSON object holding at least ``keys``, numbers finite."""
    figs = json.loads(text.strip().splitlines()[-1])
    assert isinstance(figs, dict) and set(keys) <= figs.keys(), sorted(set(keys) - figs.keys())
    for k in keys:
        assert isinstance(figs[k], int | float) and math.isfinite(figs[k]), (k, figs[k])
    return figs


#: The documented keys of each benchmark's last line (bench_eval's: EVAL_KEYS below).
SYNTH_KEYS = (
    "points", "generate_mpts", "generate_vs_floor", "queries_s", "write_ply_mpts",
    "write_ply_vs_tofile", "write_laz_mpts", "end_to_end_mpts",
)  # fmt: skip
ENV_KEYS = (
    "global_view_ms", "episode_ms_median", "episode_ms_p90", "episodes", "episode_vs_budget",
    "landmark_query_ms_median", "zoom_in_ms_median", "oblique_render_ms_median",
    "answer_ms_median", "zoom_ms_median", "zoom_vs_pil",
)  # fmt: skip
SERVING_KEYS = (
    *(f"openai_{k}_c{c}" for c in (1, 4, 16, 64) for k in ("eps", "vs_ideal")),
    "openai_png_vs_ideal_c16",
    *(f"vlm_{k}_b{b}" for b in (1, 4, 16) for k in ("eps", "vs_ideal")),
)


def _run_quick(name: str, cwd: Path) -> str:
    out = subprocess.run(
        [sys.executable, str(BY_NAME[name]), "--quick"],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    return out.stdout


def _quick_output(name: str):
    """A module-scoped fixture ``<name without bench_>_out``: ``name``'s ``--quick`` stdout (run
    once, cwd a tmp dir)."""

    @pytest.fixture(scope="module", name=f"{name.removeprefix('bench_')}_out")
    def fixture(tmp_path_factory: pytest.TempPathFactory) -> str:
        if name not in BY_NAME:
            pytest.fail(f"benchmarks/{name}.py is missing")
        return _run_quick(name, tmp_path_factory.mktemp(name))

    return fixture


io_out = _quick_output("bench_io")
synth_out = _quick_output("bench_synth")
scene_out = _quick_output("bench_scene")
env_out = _quick_output("bench_env")
eval_out = _quick_output("bench_eval")
learning_out = _quick_output("bench_learning")
serving_out = _quick_output("bench_serving")
reader_out = _quick_output("bench_reader")
PARSED = {
    "bench_reader",
    "bench_io",
    "bench_synth",
    "bench_scene",
    "bench_env",
    "bench_eval",
    "bench_learning",
    "bench_serving",
}


def test_benchmarks_are_found():
    assert {b.stem for b in BENCHMARKS} >= PARSED


@pytest.mark.parametrize("bench", BENCHMARKS, ids=lambda p: p.stem)
def test_every_benchmark_has_a_figure_parser(bench):
    assert bench.stem in PARSED, f"add a fixture and a figure test for {bench.name} here"


# --- bench_io ---------------------------------------------------------------------------------


def parse_io(text: str) -> dict[str, dict[str, Fig]]:
    """PLY: size, write/read M pts/s, np.fromfile + xyz stack of the same file and the ratio, the
    second peer (plyfile or np.loadtxt) on a subset, urbex on the same subset and their ratio;
    LAS and LAZ: size, write/read M pts/s, laspy's and the ratio."""
    ply_block, _, las_part = text.partition("\nLAS ")
    las_block, _, laz_block = ("LAS " + las_part).partition("\nLAZ ")
    out = {
        "ply": {
            **_figs(ply_block, r"^PLY binary\s+{n} pts\s+{mb} MB$"),
            **_figs(ply_block, r"^\s+urbex write_ply\s+{write} M pts/s$"),
            **_figs(
                ply_block,
                r"^\s+urbex read_ply\s+{read} M pts/s\s+\(best of {repeat}; range {lo}–{hi}\)$",
            ),
            **_figs(
                ply_block,
                r"^\s+np\.fromfile \+ xyz stack\s*{ff} M pts/s\s+\(best of {ff_repeat}; "
                r"range {ff_lo}–{ff_hi}\)$",
            ),
            **_figs(ply_block, r"^\s+ratio urbex / fromfile\s+{ratio_ff} x\s+\(target >= 0\.8\)$"),
            **_figs(
                ply_block,
                r"^\s+peer \((?:plyfile mmap=False|np\.loadtxt ascii), {peer_n} pts\)\s+"
                r"{peer} M pts/s$",
            ),
            **_figs(ply_block, r"^\s+urbex on the same subset\s+{subset} M pts/s$"),
            **_figs(ply_block, r"^\s+ratio urbex / peer\s+{ratio} x$"),
        }
    }
    for key, block in (("las", las_block), ("laz", "LAZ " + laz_block)):
        out[key] = {
            **_figs(block, rf"^{key.upper()}\s+{{n}} pts\s+{{mb}} MB$"),
            **_figs(block, r"^\s+urbex write_las\s+{write} M pts/s$"),
            **_figs(block, r"^\s+urbex read_las\s+{read} M pts/s$"),
            **_figs(
                block, r"^\s+peer laspy\.read\+arrays\s+{peer} M pts/s\s+\(urbex/peer {ratio}x\)$"
            ),
        }
    return out


def test_bench_io_figures(io_out):
    figs = parse_io(io_out)
    js = _last_json(io_out)
    for key in ("ply_read_mpts", "ply_read_vs_fromfile", "las_read_vs_laspy", "laz_read_vs_laspy"):
        assert math.isfinite(js[key]) and js[key] > 0, key
    assert (
        abs(js["ply_read_vs_fromfile"] - figs["ply"]["ratio_ff"])
        <= figs["ply"]["ratio_ff"].tol + 1e-4
    )
    assert abs(js["las_read_vs_laspy"] - figs["las"]["ratio"]) <= figs["las"]["ratio"].tol + 1e-4
    assert abs(js["laz_read_vs_laspy"] - figs["laz"]["ratio"]) <= figs["laz"]["ratio"].tol + 1e-4
    for f in figs.values():
        _finite(f, positive=("n", "mb", "write", "read", "peer"))
    ply = figs["ply"]
    _finite(ply, positive=("peer_n", "subset", "repeat"))
    assert ply["n"] == 2_000_000 and ply["peer_n"] <= ply["n"]
    _is_ratio(ply["ratio"], ply["subset"], ply["peer"])  # same points: time ratio = M pts/s ratio
    _is_ratio(ply["ratio_ff"], ply["read"], ply["ff"])
    assert ply["lo"] <= ply["hi"] == ply["read"] and ply["ff_lo"] <= ply["ff_hi"] == ply["ff"]
    for key in ("las", "laz"):
        assert figs[key]["n"] == 1_000_000
        _is_ratio(figs[key]["ratio"], figs[key]["read"], figs[key]["peer"])
    assert figs["laz"]["mb"] < figs["las"]["mb"]  # compressed


# --- bench_synth ------------------------------------------------------------------------------


def parse_synth(text: str) -> dict[str, Fig]:
    """generate_block's points, instances, seconds and M pts/s with the numpy floor peer and its
    time ratio; scene_queries seconds; write_ply seconds, M pts/s, MB, MB/s with the tofile peer
    and its ratio; write_las (.laz) seconds and M pts/s; end-to-end M pts/s."""
    return {
        **_figs(
            text,
            r"^generate_block\(size={size} m, density={density}\): {points} points, "
            r"{instances} instances in {gen_s} s = {gen} M pts/s$",
        ),
        **_figs(
            text,
            r"^\s+peer \(numpy uniform xyz\+rgb, no geometry\): {floor} M pts/s; "
            r"generator / peer time ratio = {gen_ratio}x$",
        ),
        **_figs(text, r"^scene_queries: {queries_s} s$"),
        **_figs(
            text,
            r"^write_ply: {ply_s} s = {ply} M pts/s \({ply_mb} MB, {ply_mb_s} MB/s\)$",
        ),
        **_figs(
            text,
            r"^\s+peer \(pack \+ ndarray\.tofile\): {tofile} M pts/s; "
            r"write_ply / peer time ratio = {ply_ratio}x$",
        ),
        **_figs(text, r"^write_las \(\.laz\): {laz_s} s = {laz} M pts/s$"),
        **_figs(text, r"^generate \+ write PLY: {end_to_end} M pts/s end to end$"),
    }


def test_bench_synth_figures(synth_out):
    f = parse_synth(synth_out)
    # seconds are printed to 0.01 s and may round to 0; rates and sizes may not
    _finite(
        f,
        positive=(
            *("size", "density", "points", "instances", "gen", "floor", "ply", "ply_mb"),
            *("tofile", "laz", "end_to_end"),
        ),
    )
    assert (f["size"], f["density"]) == (200, 20)
    _is_ratio(f["gen_ratio"], f["floor"], f["gen"])  # time ratio = inverse rate ratio
    _is_ratio(f["ply_ratio"], f["tofile"], f["ply"])
    figs = _last_json(synth_out, SYNTH_KEYS)
    assert figs["points"] == f["points"]
    assert abs(figs["write_ply_vs_tofile"] - f["ply_ratio"]) <= f["ply_ratio"].tol + 1e-9


# --- bench_scene ------------------------------------------------------------------------------


def parse_scene(text: str) -> dict[str, Fig]:
    """The generated data; the build (read/build/total s, peak RSS vs raw arrays and its ratio);
    the BEV scatter (numba wall and 1-thread M pts/s vs np.maximum.at and the naive numpy job,
    with both ratios; the gather); bev_window median/p90 ms and global_view ms; the oblique
    render median and crop ms, with open3d's median and ratio (or its "unavailable" line:
    open3d is the optional ``render`` extra)."""
    f = {
        **_figs(text, r"^data: .*, {points_m} M points, {size} m block \({gen_s} s to generate\)$"),
        **_figs(text, r"^PLY written: {ply_gb} GB$"),
        **_figs(
            text,
            r"^== build \(read PLY → sort → rasters → write\), {build_m} M pts, "
            r"BEV {bev_w}×{bev_h} px$",
        ),
        **_figs(
            text, r"^\s+read_ply {read_s} s \+ build {build_s} s = total {total_s} s\s+\(target"
        ),
        **_figs(
            text,
            r"^\s+peak RSS delta {rss_gb} GB vs raw point arrays {raw_gb} GB = {rss_ratio}×",
        ),
        **_figs(
            text,
            r"^\s+numba {par} M pts/s on {threads} threads \(wall\), {one} M pts/s on 1 thread"
            r"\s+vs\s+np\.maximum\.at \(z only, full raster\) {maxat} M pts/s\s+→ {maxat_ratio}×",
        ),
        **_figs(
            text,
            r"^\s+naive numpy doing the same job .* {naive} M pts/s → numba on 1 thread is "
            r"{naive_ratio}× faster$",
        ),
        **_figs(
            text,
            r"^\s+\+ per-pixel attribute gather .* {gather_s} s on 1 thread; "
            r"scatter\+gather = {scatter_gather} M pts/s on 1 thread$",
        ),
        **_figs(text, r"^== bev_window {win_m} m \({win_px} px native\) → 768×768$"),
        **_figs(text, r"^\s+median {bev_ms} ms, p90 {bev_p90_ms} ms"),
        **_figs(text, r"^\s+global_view\(\) {global_ms} ms$"),
        **_figs(text, r"^== oblique render of {oblique_m} M points at 512×512 \(box {box_m} m\)$"),
        **_figs(text, r"^\s+render median {render_ms} ms \(target[^)]*\); crop {crop_ms} ms;"),
    }
    if re.search(r"^\s+open3d peer unavailable: ", text, flags=re.MULTILINE):
        return f
    return f | _figs(
        text,
        r"^\s+open3d OffscreenRenderer .* median {o3d_ms} ms \(first {o3d_first_ms} ms\) "
        r"→ ours {o3d_ratio}× faster",
    )


def test_bench_scene_figures(scene_out):
    f = parse_scene(scene_out)
    _finite(
        f,
        positive=(
            *("points_m", "size", "build_m", "bev_w", "bev_h", "build_s", "total_s", "raw_gb"),
            *("par", "threads", "one", "maxat", "naive", "scatter_gather", "win_m", "win_px"),
            *("bev_ms", "bev_p90_ms", "global_ms", "oblique_m", "box_m", "render_ms"),
        ),
    )
    assert f["size"] == 200
    assert f["bev_p90_ms"] + f["bev_p90_ms"].tol >= f["bev_ms"] - f["bev_ms"].tol
    _is_ratio(f["rss_ratio"], f["rss_gb"], f["raw_gb"])
    _is_ratio(f["maxat_ratio"], f["par"], f["maxat"])  # time ratio = inverse rate ratio
    _is_ratio(f["naive_ratio"], f["one"], f["naive"])
    if "o3d_ratio" in f:
        _is_ratio(f["o3d_ratio"], f["o3d_ms"], f["render_ms"])
    js = _last_json(scene_out)
    assert abs(js["build_s"] - f["total_s"]) <= f["total_s"].tol + 1e-3
    assert abs(js["build_rss_ratio"] - f["rss_ratio"]) <= f["rss_ratio"].tol + 1e-3
    assert abs(js["scatter_mpts_2t"] - f["par"]) <= f["par"].tol + 0.01
    assert abs(js["scatter_vs_maximum_at"] - f["maxat_ratio"]) <= f["maxat_ratio"].tol + 1e-3
    assert abs(js["oblique_ms"] - f["render_ms"]) <= f["render_ms"].tol + 0.01
    assert (js["oblique_vs_open3d"] is None) == ("o3d_ratio" not in f)


# --- bench_env --------------------------------------------------------------------------------

TOOLS = ("landmark_query", "zoom_in", "oblique_render", "answer")


def parse_env(text: str) -> dict[str, Fig]:
    """The scene; the global view build ms; the 8-turn oracle episode median/p90 ms over N
    episodes; each tool's median ms and call count; the ratio to the paper's 3.2 s budget; the
    zoom window median vs the PIL peer's and their ratio."""
    f = {
        **_figs(
            text,
            r"^scene: {size} m block, {points} points, BEV {bev_w}x{bev_h} px at 0\.1 m, "
            r"{queries} queries \(build {build_s} s, not counted\)$",
        ),
        **_figs(text, r"^global view build \(once per scene, cached\): {global_ms} ms$"),
        **_figs(
            text,
            r"^8-turn oracle episode overhead: median {episode_ms} ms, p90 {episode_p90_ms} ms "
            r"over {episodes} episodes \(target <= 50 ms\) -> (?:OK|OVER)$",
        ),
        **_figs(text, r"^ratio vs the paper's 3\.2 s per-query budget: {budget_ratio}$"),
        **_figs(
            text,
            r"^zoom window \(bev_window, area-weighted\) median {zoom_ms} ms vs peer "
            r"PIL crop\+BOX resize {peer_ms} ms -> ratio {zoom_ratio}$",
        ),
    }
    for tool in TOOLS:
        f |= _figs(text, rf"^\s+{tool}\s+median\s+{{{tool}_ms}} ms\s+\(n={{{tool}_n}}\)$")
    return f


def test_bench_env_figures(env_out):
    f = parse_env(env_out)
    _finite(
        f,
        positive=(
            *("size", "points", "bev_w", "bev_h", "queries", "global_ms", "episode_ms"),
            *("episode_p90_ms", "episodes", "budget_ratio", "zoom_ms", "peer_ms", "zoom_ratio"),
            *(f"{t}_{k}" for t in TOOLS for k in ("ms", "n")),
        ),
    )
    assert (f["size"], f["episodes"]) == (120, 10)
    assert f["episode_p90_ms"] + f["episode_p90_ms"].tol >= f["episode_ms"] - f["episode_ms"].tol
    assert sum(f[f"{t}_n"] for t in TOOLS) == 8 * f["episodes"]  # every turn of every episode
    _is_ratio(f["budget_ratio"], f["episode_ms"], 3200.0)
    _is_ratio(f["zoom_ratio"], f["zoom_ms"], f["peer_ms"])
    figs = _last_json(env_out, ENV_KEYS)
    assert figs["episodes"] == f["episodes"]
    assert abs(figs["episode_ms_median"] - f["episode_ms"]) <= f["episode_ms"].tol + 1e-9


# --- bench_eval -------------------------------------------------------------------------------

EVAL_COLUMNS = (
    "eps", "bare", "loop", "w1", "w1_bare", "w2", "w2_w1", "env_pct", "policy_pct", "hit1",
)  # fmt: skip
EVAL_HEADER = (
    r"^policy\s+split\s+eps\s+bare ep/s\s+loop ep/s\s+ep/s w1\s+w1/bare\s+ep/s w2\s+w2/w1\s+"
    r"env %\s+policy %\s+Hit@1$"
)
#: The keys bench_eval's last line (one JSON object) must carry, besides the per-split ones.
EVAL_KEYS = (
    "oracle_wall_vs_bare_w1", "landmark_prior_wall_vs_bare_w1", "oracle_w2_vs_w1",
    "landmark_prior_w2_vs_w1", "oracle_w2_cold_vs_w1", "pool_start_s", "rounds",
)  # fmt: skip
EVAL_SPLIT_KEYS = (
    "episodes", "eps_bare", "eps_loop", "eps_w1", "eps_w2", "wall_vs_bare_w1", "wall_vs_loop_w1",
    "w2_vs_w1",
)  # fmt: skip


def parse_eval(text: str) -> dict[tuple[str, str], dict[str, Fig]]:
    """The table: per (policy, split), episodes, the peer's ep/s with and without its setup,
    evaluate's ep/s with 1 worker and its ratio to the peer, with 2 workers and its ratio to 1,
    env % and policy % of episode latency, Hit@1 %."""
    _match(text, r"^project: .* \(built in {N} s\)$")
    _match(text, r"^a spawned worker process answers its first task after {N} s$")
    _match(text, r"^cold: oracle/\w+, 2 workers, starting its worker process: {N} s$")
    _match(text, EVAL_HEADER)
    header = re.search(EVAL_HEADER, text, flags=re.MULTILINE).end()
    row = re.compile(r"^(?P<policy>\w+)\s+(?P<split>\w+)" + rf"\s+{NUM}" * 10 + r"$")
    rows = {}
    for line in text[header:].strip().splitlines():
        m = row.match(line)
        if m is None:
            break  # the legend after the table
        key = (m["policy"], m["split"])
        assert key not in rows, f"row {key} printed twice"
        rows[key] = dict(zip(EVAL_COLUMNS, map(Fig, m.groups()[2:]), strict=True))
    _match(text, r"^ep/s: episodes / wall time, best of {N} ")
    return rows


def test_bench_eval_figures(eval_out):
    rows = parse_eval(eval_out)
    policies, splits = ("oracle", "landmark_prior"), ("test_nd", "test_no")
    assert set(rows) == {(p, s) for p in policies for s in splits}
    for key, r in rows.items():
        _finite(r, positive=("eps", "bare", "loop", "w1", "w2", "env_pct"))
        _is_ratio(r["w1_bare"], r["w1"], r["bare"])
        _is_ratio(r["w2_w1"], r["w2"], r["w1"])
        assert r["loop"] + r["loop"].tol >= r["bare"] - r["bare"].tol, key  # setup costs time
        assert r["hit1"] <= 100 and r["env_pct"] + r["policy_pct"] <= 100 + 2 * 0.05, key
    for s in splits:  # the same episodes whatever the policy
        assert len({rows[p, s]["eps"] for p in policies}) == 1, s
    figs = json.loads(eval_out.strip().splitlines()[-1])
    assert set(EVAL_KEYS) <= figs.keys()
    for (p, s), r in rows.items():  # the JSON agrees with the table
        for k in EVAL_SPLIT_KEYS:
            assert math.isfinite(figs[f"{p}_{s}_{k}"]) and figs[f"{p}_{s}_{k}"] > 0, (p, s, k)
        assert figs[f"{p}_{s}_episodes"] == r["eps"]
        assert abs(figs[f"{p}_{s}_wall_vs_bare_w1"] - r["w1_bare"]) <= r["w1_bare"].tol + 1e-9
        assert abs(figs[f"{p}_{s}_w2_vs_w1"] - r["w2_w1"]) <= r["w2_w1"].tol + 1e-9
    largest = max(splits, key=lambda s: rows["oracle", s]["eps"])
    for p in policies:  # the headline figures are the largest split's
        assert figs[f"{p}_wall_vs_bare_w1"] == figs[f"{p}_{largest}_wall_vs_bare_w1"]
        assert figs[f"{p}_w2_vs_w1"] == figs[f"{p}_{largest}_w2_vs_w1"]


# --- bench_learning ---------------------------------------------------------------------------

#: The keys the learning benchmark's last line (one JSON object) must carry.
LEARNING_KEYS = (
    "seed", "valid_rate_base", "valid_rate_sft", "valid_rate_grpo", "iou_val_sft",
    "iou_val_grpo", "hit1_val_sft", "hit1_val_grpo", "reward_first10", "reward_last10",
    "reward_sem", "frac_zero_std", "s_per_step", "env_share", "reader_acc_mark_lookup",
    "reader_acc_name_copy", "reader_acc_box_copy", "reader_acc_whole_turn", "reader_steps",
    "reader_s", "hit1_val_reader_only", "sft_landmark_named", "grpo_right_mark_given_shown",
)  # fmt: skip


def test_bench_learning_figures(learning_out):
    figs = json.loads(learning_out.strip().splitlines()[-1])
    assert set(LEARNING_KEYS) <= figs.keys()
    assert figs["seed"] == 1
    for k in ("valid_rate_base", "valid_rate_sft", "valid_rate_grpo", "iou_val_sft",
              "iou_val_grpo", "hit1_val_sft", "hit1_val_grpo", "frac_zero_std", "env_share"):  # fmt: skip
        assert 0.0 <= figs[k] <= 1.0, (k, figs[k])
    assert figs["s_per_step"] > 0 and figs["sft_s_per_step"] > 0
    assert math.isfinite(figs["reward_first10"]) and math.isfinite(figs["reward_last10"])
    assert figs["grpo_steps"] >= 2 and figs["sft_steps"] >= 1
    # the printed lines agree with the JSON
    sft = _figs(learning_out, r"^sft: {steps} steps, {sps} s/step")
    assert sft["steps"] == figs["sft_steps"]
    assert abs(sft["sps"] - figs["sft_s_per_step"]) <= sft["sps"].tol + 1e-9
    grpo = _figs(learning_out, r"^grpo: val valid {valid}  Hit@1 {hit1}  IoU {iou}")
    assert abs(grpo["valid"] - figs["valid_rate_grpo"]) <= grpo["valid"].tol + 1e-9
    reader = _figs(learning_out, r"^reader: {steps} steps, {sps} s/step, level {level} marks")
    assert reader["steps"] == figs["reader_steps"] and reader["level"] == figs["reader_level"]
    for k in ("mark_lookup", "name_copy", "box_copy", "whole_turn"):
        assert 0.0 <= figs[f"reader_acc_{k}"] <= 1.0, k
    verdicts = re.findall(r"^target .+: (PASS|MISS)$", learning_out, flags=re.MULTILINE)
    # n_val, two Hit@1 gains, validity x3, the reader's two, wall, reward, std, IoU, env
    assert len(verdicts) == 13


# --- bench_serving ----------------------------------------------------------------------------

SERVING_COLUMNS = ("eps", "ep_s", "ideal", "ratio")


def _table(text: str, header: str, first: str) -> dict[int, dict[str, Fig]]:
    """Rows ``<level> eps ep/s ideal ratio`` after the line matching ``header``."""
    start = re.search(header, text, flags=re.MULTILINE)
    assert start, f"no line matching {header!r} in the benchmark's output:\n{text}"
    row = re.compile(r"^\s*(?P<level>\d+)" + rf"\s+{NUM}" * 4 + r"$")
    rows: dict[int, dict[str, Fig]] = {}
    for line in text[start.end() :].strip().splitlines():
        m = row.match(line)
        if m is None:
            break
        rows[int(m["level"])] = dict(zip(SERVING_COLUMNS, map(Fig, m.groups()[1:]), strict=True))
    assert rows, f"no {first} rows after {header!r}"
    return rows


def parse_serving(text: str) -> dict[str, object]:
    """The project; the openai table (concurrency → episodes, ep/s, ideal, ratio) with the
    stub's latency and turns, the png line and the verdict; the vlm table (batch_size → ...)."""
    project = _figs(text, r"^project: {blocks} blocks of 100 m, {queries} test_no queries ")
    stub = _figs(text, r"^== openai vs the local stub: {turns} turns per episode .*, {ms} ms per")
    openai = _table(text, r"^concurrency\s+eps\s+ep/s\s+ideal ep/s\s+ratio$", "concurrency")
    png = _figs(
        text,
        r"^\s+png instead of jpeg at concurrency 16: {ep_s} ep/s over {eps} episodes, "
        r"ratio {ratio} ",
    )
    served = _figs(text, r"^\s+stub: served {served} peak_in_flight {peak}$")
    _match(text, r"^\s+target >= 0\.8 x ideal at concurrency 16: (?P<verdict>PASS|MISS)$")
    vlm = _table(text, r"^batch_size\s+eps\s+ep/s\s+ideal ep/s\s+ratio$", "batch_size")
    return {
        "project": project,
        "stub": stub,
        "openai": openai,
        "png": png,
        "served": served,
        "vlm": vlm,
    }


def test_bench_serving_figures(serving_out):
    f = parse_serving(serving_out)
    _finite(f["project"], positive=("blocks", "queries"))
    assert (f["stub"]["turns"], f["stub"]["ms"]) == (2, 200)
    openai, vlm = f["openai"], f["vlm"]
    assert set(openai) == {1, 4, 16, 64} and set(vlm) == {1, 4, 16}
    latency = f["stub"]["ms"] / 1000.0
    for c, r in openai.items():
        _finite(r, positive=SERVING_COLUMNS)
        assert r["ideal"] == pytest.approx(c / (f["stub"]["turns"] * latency), abs=r["ideal"].tol)
        _is_ratio(r["ratio"], r["ep_s"], r["ideal"])
    png = f["png"]
    _finite(png, positive=("ep_s", "eps", "ratio"))
    _is_ratio(png["ratio"], png["ep_s"], openai[16]["ideal"])
    # the stub served every turn of every episode (2 per episode, no retries on a local stub)
    total = sum(r["eps"] for r in openai.values()) + png["eps"]
    assert f["served"]["served"] == f["stub"]["turns"] * total
    assert f["served"]["peak"] >= 4  # episodes were in flight together
    for b, r in vlm.items():
        _finite(r, positive=SERVING_COLUMNS)
        _is_ratio(r["ratio"], r["ep_s"], r["ideal"])
        base = vlm[1]["ep_s"]  # perfect batching: b x the batch-1 rate
        assert abs(r["ideal"] - b * base) <= r["ideal"].tol + b * base.tol + 1e-9, (b, r)
    assert len({r["eps"] for r in vlm.values()}) == 1  # the same episodes at every batch size
    figs = _last_json(serving_out, SERVING_KEYS)
    for c, r in openai.items():
        assert abs(figs[f"openai_vs_ideal_c{c}"] - r["ratio"]) <= r["ratio"].tol + 1e-9
    for b, r in vlm.items():
        assert abs(figs[f"vlm_vs_ideal_b{b}"] - r["ratio"]) <= r["ratio"].tol + 1e-9


# --- make bench: benchmarks/collect.py --------------------------------------------------------

COLLECT = Path(__file__).resolve().parents[1] / "benchmarks" / "collect.py"


def _collect(tmp_path: Path, scripts: dict[str, str], *args: str):
    """collect.py over a folder of the given ``bench_*.py`` scripts; (process, output file)."""
    folder = tmp_path / "benchmarks"
    folder.mkdir()
    for name, body in scripts.items():
        (folder / f"{name}.py").write_text(body)
    out = tmp_path / "assets" / "bench" / "latest.json"
    proc = subprocess.run(
        [sys.executable, str(COLLECT), "--dir", str(folder), "--out", str(out), *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return proc, out


# --- bench_reader -----------------------------------------------------------------------------

READER_LEVELS = (8, 16, 32)
#: A level's row: marks, padding of one batch / of the groups, s/step of each, their ratio.
READER_ROW = r"^\s*(\d+)" + rf"\s+{NUM}" * 5 + r"\s*$"


def test_bench_reader_figures(reader_out):
    """Per level: padding shares (the groups pad less), the two step times, their ratio."""
    head = _figs(reader_out, r"^student: {params} M parameters, {threads} torch threads, "
                 r"{batch} drills a step, {steps} steps a level$")  # fmt: skip
    _finite(head, positive=("params", "threads", "batch", "steps"))
    _match(
        reader_out, r"^level\s+pad one\s+pad groups\s+one batch s/step\s+groups s/step\s+speedup$"
    )
    figs = _last_json(
        reader_out,
        ("threads", *(f"reader_level_{n}_{k}" for n in READER_LEVELS
                      for k in ("step_s", "one_batch_s", "speedup", "pad_one", "pad_groups"))),
    )  # fmt: skip
    rows = re.findall(READER_ROW, reader_out, flags=re.MULTILINE)
    assert [int(r[0]) for r in rows] == list(READER_LEVELS)
    for level, *vals in rows:
        pad_one, pad_groups, one_s, groups_s, speedup = map(Fig, vals)
        _finite(
            {"pad_one": pad_one, "pad_groups": pad_groups, "one_s": one_s, "groups_s": groups_s},
            positive=("one_s", "groups_s"),
        )
        assert pad_groups <= pad_one + pad_one.tol + pad_groups.tol  # groups never pad more
        _is_ratio(speedup, one_s, groups_s)
        assert abs(figs[f"reader_level_{level}_speedup"] - speedup) <= speedup.tol + 1e-9


def test_collect_writes_one_key_per_benchmark(tmp_path):
    ok = "import json, sys\nprint('figures')\nprint(json.dumps({'x': 1.5, 'quick': '--quick' in sys.argv}))\n"
    nan = "print('{\"y\": NaN}')\n"
    proc, out = _collect(tmp_path, {"bench_a": ok, "bench_b": nan}, "--quick")
    assert proc.returncode == 0, proc.stderr
    assert "figures" in proc.stdout  # the scripts' output is shown as it comes
    figs = json.loads(out.read_text())
    assert set(figs) == {"bench_a", "bench_b"}
    assert (figs["bench_a"]["x"], figs["bench_a"]["quick"]) == (1.5, True)
    assert figs["bench_b"]["y"] is None  # strict JSON: no NaN
    assert figs["bench_a"]["_seconds"] > 0 and figs["bench_a"]["_load"] >= 0
    assert [p.name for p in out.parent.iterdir()] == ["latest.json"]  # published atomically


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("raise SystemExit(3)\n", "bench_bad.py failed (exit status 3)"),
        ("print('done')\n", "bench_bad.py: its last line is not a JSON object"),
        ("print('[1, 2]')\n", "bench_bad.py: its last line is not a JSON object"),
    ],
)
def test_collect_fails_with_the_failing_benchmarks_name(tmp_path, body, message):
    out = tmp_path / "assets" / "bench" / "latest.json"
    out.parent.mkdir(parents=True)
    out.write_text("{}\n")  # the previous run's figures
    ok = "print('{\"x\": 1}')\n"
    proc, _ = _collect(tmp_path, {"bench_a": ok, "bench_bad": body})
    assert proc.returncode == 1 and message in proc.stderr, proc.stderr
    assert out.read_text() == "{}\n"  # left in place


def test_collect_only_names_known_benchmarks(tmp_path):
    proc, out = _collect(tmp_path, {"bench_a": "print('{}')\n"}, "--only", "bench_zzz")
    assert proc.returncode == 2 and "no benchmark ['bench_zzz']" in proc.stderr
    assert not out.exists()
