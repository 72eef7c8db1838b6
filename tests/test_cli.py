import json
from pathlib import Path

import duckdb
import pytest

from tests.fixtures.small_project import write_small_project
from urbex.cli import main


def test_cli_synth_then_cache_registers_scenes(tmp_path, capsys):
    params = write_small_project(tmp_path)
    assert main(["--params", str(params), "-q", "synth"]) == 0
    raw = tmp_path / "assets" / "raw" / "synthetic"
    assert (raw / "scans" / "synthville_block_0" / "synthville_block_0.ply").exists()
    assert main(["--params", str(params), "-q", "cache"]) == 0
    out = capsys.readouterr().out
    assert "synthville_block_1" in out and "built in" in out
    con = duckdb.connect(str(tmp_path / "assets" / "warehouse.duckdb"), read_only=True)
    rows = con.execute("SELECT scene_id, n_points, resolution FROM scenes ORDER BY 1").fetchall()
    assert [r[0] for r in rows] == ["synthville_block_0", "synthville_block_1"]
    assert all(r[1] > 1000 and r[2] == 0.25 for r in rows)
    n_inst = con.execute("SELECT count(*) FROM instances").fetchone()[0]
    assert n_inst > 0
    con.close()
    # second run reuses the fresh caches
    assert main(["--params", str(params), "-q", "cache", "--scene", "synthville_block_0"]) == 0
    assert "reused" in capsys.readouterr().out
    # warehouse command prints JSON row counts
    assert main(["--params", str(params), "warehouse"]) == 0
    counts = json.loads(capsys.readouterr().out)
    assert counts["scenes"] == 2


def test_cli_unknown_scene_is_a_clear_error(tmp_path, capsys):
    params = write_small_project(tmp_path)
    assert main(["--params", str(params), "-q", "cache", "--scene", "atlantis"]) == 2
    err = capsys.readouterr().err
    assert "atlantis" in err and "synthville_block_0" in err


def test_cli_bad_params_exit_2_with_field(tmp_path, capsys):
    p = tmp_path / "params.yaml"
    p.write_text("scene:\n  resolution: zero\n")
    assert main(["--params", str(p), "warehouse"]) == 2
    assert "scene.resolution" in capsys.readouterr().err


def test_cli_synth_to_explicit_dir_writes_layout(tmp_path):
    out = tmp_path / "city"
    assert (
        main(
            [
                "-q",
                "synth",
                str(out),
                "--scenes",
                "1",
                "--size",
                "50",
                "--density",
                "3",
                "--seed",
                "1",
            ]
        )
        == 0
    )
    assert (out / "meta_data").is_dir() and (
        out / "box3d" / "synthville_block_0_bbox.json"
    ).exists()


def test_cli_registered_root_must_exist(tmp_path, capsys):
    params = write_small_project(tmp_path, data={"source": "las", "root": str(tmp_path / "nope")})
    assert main(["--params", str(params), "-q", "synth"]) == 2
    assert "not a directory" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["cache", "--help"], ["synth", "--help"], ["train", "--help"]])
def test_cli_help_exits_zero(argv):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 0


def test_cli_make_tiny_model_writes_a_loadable_checkpoint(tmp_path, capsys):
    assert main(["make-tiny-model", str(tmp_path / "tiny")]) == 0
    assert (tmp_path / "tiny" / "config.json").exists()
    assert (tmp_path / "tiny" / "model.safetensors").exists()


def test_cli_ground_oracle_prints_summary_and_writes_outputs(tmp_path, capsys):
    from tests.fixtures.city import build_synth_cache
    from urbex.landmarks import write_landmark_table

    params = write_small_project(tmp_path)
    cache, index, queries = build_synth_cache(
        tmp_path / "assets" / "scenes", seed=3, size=60, density=4
    )
    write_landmark_table(
        index.table, tmp_path / "assets" / "landmarks" / f"{cache.scene_id}.parquet"
    )
    q = queries[0]
    out = tmp_path / "g"
    argv = ["--params", str(params), "-q", "ground", "--scene", cache.scene_id]
    argv += ["--query", q.description, "--policy", "oracle", "--object-id", q.object_id]
    assert main([*argv, "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "turn 1:" in text and "IoU_bev" in text and str(out) in text
    for name in ("steps.jsonl", "answer.json", "trajectory.png", "views/global.png"):
        assert (out / name).is_file(), name
    # no cache for this scene: exit 2 with a one-line error naming what to run
    assert main(["--params", str(params), "ground", "--scene", "nowhere", "--query", "a car",
                 "--policy", "landmark_prior"]) == 2  # fmt: skip
    assert "urbex cache --scene nowhere" in capsys.readouterr().err


def test_cli_failing_quality_suite_exits_2_and_publishes_nothing(tmp_path, capsys):
    params = write_small_project(tmp_path, annotations={"min_chars": 500})
    for cmd in (["synth"], ["cache"], ["landmarks"]):
        assert main(["--params", str(params), "-q", *cmd]) == 0
    assert main(["--params", str(params), "-q", "splits"]) == 2
    err = capsys.readouterr().err
    assert "quality suite" in err and "not published" in err
    assert not (tmp_path / "assets" / "splits" / "clean_queries.parquet").exists()
    assert not (tmp_path / "assets" / "splits" / "queries.parquet").exists()


def test_cli_synth_format_without_out_is_an_error(tmp_path, capsys):
    params = write_small_project(tmp_path)
    assert main(["--params", str(params), "-q", "synth", "--format", "las"]) == 2
    assert "--format" in capsys.readouterr().err


def test_cli_data_scenes_beyond_the_synthetic_set_is_an_error(tmp_path, capsys):
    params = write_small_project(tmp_path, data={"scenes": ["synthville_block_7"]})
    assert main(["--params", str(params), "-q", "synth"]) == 2
    err = capsys.readouterr().err
    assert "synthville_block_7" in err and "data.scenes" in err


@pytest.mark.parametrize(
    ("flags", "field"),
    [(["--scenes", "0"], "synth.scenes"), (["--size", "5"], "synth.size")],
)
@pytest.mark.parametrize("to_out", [False, True])
def test_cli_synth_bad_flag_is_a_one_line_error(tmp_path, capsys, flags, field, to_out):
    params = write_small_project(tmp_path)
    out = [str(tmp_path / "city")] if to_out else []
    assert main(["--params", str(params), "-q", "synth", *out, *flags]) == 2
    err = capsys.readouterr().err
    assert field in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "city").exists()


@pytest.mark.parametrize("kind", ["directory", "binary"])
def test_cli_unreadable_params_file_exits_2_naming_it(tmp_path, capsys, kind):
    if kind == "directory":
        p = tmp_path / "params_dir"
        p.mkdir()
    else:
        p = tmp_path / "params.yaml"
        p.write_bytes(b"\xff\xfe\x00binary")
    assert main(["--params", str(p), "warehouse"]) == 2
    err = capsys.readouterr().err
    assert str(p) in err and len(err.strip().splitlines()) == 1


def test_cli_unwritable_output_path_is_a_one_line_error(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main(["make-tiny-model", str(blocker / "tiny")]) == 2
    err = capsys.readouterr().err
    assert str(blocker) in err and len(err.strip().splitlines()) == 1


def test_cli_cache_scene_outside_data_scenes_is_a_config_error(tmp_path, capsys):
    from urbex.config import load_params
    from urbex.errors import ConfigError
    from urbex.stages import build_scene

    params = write_small_project(tmp_path, data={"scenes": ["synthville_block_0"]})
    with pytest.raises(ConfigError, match=r"synthville_block_1.*data\.scenes"):
        build_scene(load_params(params), "synthville_block_1")


def test_cli_failed_synthesis_leaves_no_temporary_directory(tmp_path, monkeypatch, capsys):
    import urbex.raw

    def boom(root, **kw):
        (root / "scans").mkdir(parents=True)
        raise OSError(28, "No space left on device", str(root))

    monkeypatch.setattr(urbex.raw, "generate_dataset", boom)  # the raw stage's generator
    params = write_small_project(tmp_path)
    assert main(["--params", str(params), "-q", "synth"]) == 2
    raw = tmp_path / "assets" / "raw"
    leftovers = sorted(p.name for p in raw.iterdir()) if raw.exists() else []
    assert leftovers == []


def test_cli_invalid_yaml_is_one_line_with_position(tmp_path, capsys):
    p = tmp_path / "params.yaml"
    p.write_text("scene:\n  resolution: [0.1\n")
    assert main(["--params", str(p), "warehouse"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "line " in err and str(p) in err


def test_cli_commands_refresh_the_warehouse_once(tmp_path, monkeypatch, capsys):
    import urbex.report.warehouse

    calls: list[object] = []
    real = urbex.report.warehouse.refresh_warehouse

    def counting(assets, **kw):
        calls.append(assets)
        return real(assets, **kw)

    monkeypatch.setattr(urbex.report.warehouse, "refresh_warehouse", counting)  # front doors
    params = write_small_project(tmp_path)
    assert main(["--params", str(params), "-q", "synth"]) == 0
    assert calls == []
    for command in ("cache", "landmarks", "splits"):
        calls.clear()
        assert main(["--params", str(params), "-q", command]) == 0, command
        assert len(calls) == 1, command  # two scenes, one refresh (splits: two stages, one)
    con = duckdb.connect(str(tmp_path / "assets" / "warehouse.duckdb"), read_only=True)
    try:
        n = {
            t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
            for t in ("scenes", "instances", "landmarks", "queries")
        }
    finally:
        con.close()
    assert n["scenes"] == 2 and all(v > 0 for v in n.values()), n


# ---------------------------------------------------------------- global options, flags, run ids


def _one_line_error(err: str, *needles: str) -> None:
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    for n in needles:
        assert n in err, (n, err)


#: The positional/required arguments each command needs to parse.
_REQUIRED = {
    "ground": ["--scene", "s", "--query", "q", "--policy", "oracle"],
    "make-tiny-model": ["tiny"],
    "make-grafted-model": ["grafted"],
    "export": ["out", "--split", "train"],
}


def _commands() -> list[str]:
    import argparse

    from urbex.cli import _build_parser

    (sub,) = (a for a in _build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sorted(sub.choices)


def test_cli_commands_are_all_covered():
    assert {"cache", "evaluate", "report", "synth", "train", "warehouse"} <= set(_commands())


@pytest.mark.parametrize("command", _commands())
@pytest.mark.parametrize("where", ["before", "after"])
def test_cli_global_options_go_before_or_after_the_command(command, where):
    from urbex.cli import _build_parser, params_files

    opts = ["--params", "P.yaml", "-q"]
    rest = [command, *_REQUIRED.get(command, [])]
    args = _build_parser().parse_args([*opts, *rest] if where == "before" else [*rest, *opts])
    assert params_files(args) == [Path("P.yaml")] and args.quiet is True
    bare = _build_parser().parse_args(rest)
    assert params_files(bare) is None and bare.quiet is False


def test_cli_cache_reads_params_given_after_the_command(tmp_path, capsys):
    """``urbex cache --params P`` (how people type it) was 'unrecognized arguments'."""
    params = write_small_project(tmp_path, synth={"scenes": 1})
    assert main(["cache", "--params", str(params), "-q"]) == 2  # P read: its assets, 1 scene
    _one_line_error(capsys.readouterr().err, str(tmp_path / "assets"), "urbex synth")
    assert main(["warehouse", "--params", str(params), "-q"]) == 2  # P read: no such assets
    _one_line_error(capsys.readouterr().err, str(tmp_path / "assets"), "paths.assets")
    assert not (tmp_path / "assets").exists()


@pytest.mark.parametrize("value", ["-1", "0"])
def test_cli_evaluate_limit_follows_the_rule_of_eval_limit(tmp_path, capsys, value):
    """``--limit -1`` played 29 of 30 queries and ``--limit 0`` marked an empty run complete,
    while the same values in params.yaml are rejected."""
    params = write_small_project(tmp_path)
    argv = ["evaluate", "--params", str(params), "--policy", "oracle", "--limit", value]
    assert main(argv) == 2
    _one_line_error(capsys.readouterr().err, f"--limit {value}", "eval.limit", "greater than")
    assert not (tmp_path / "assets" / "eval").exists()
    in_file = write_small_project(tmp_path / "f", eval={"limit": int(value)})
    assert main(["evaluate", "--params", str(in_file), "--policy", "oracle"]) == 2
    _one_line_error(capsys.readouterr().err, "eval.limit", "greater than")


@pytest.mark.parametrize(
    ("flags", "needles"),
    [
        (["--max-steps", "0"], ["--max-steps 0", "train.max_steps"]),
        (["--run-name", "../x"], ["--run-name ../x", "train.run_name"]),
    ],
)
def test_cli_train_flags_follow_the_rules_of_their_params(tmp_path, capsys, flags, needles):
    params = write_small_project(tmp_path)
    assert main(["train", "--params", str(params), *flags]) == 2
    _one_line_error(capsys.readouterr().err, *needles)


@pytest.mark.parametrize("run_id", ["a/b", ".", "..", "", "-x", "a b", "../../escape"])
def test_cli_evaluate_unsafe_run_id_is_a_one_line_error(tmp_path, capsys, run_id):
    """``urbex evaluate --run-id a/b`` (also ``.`` and ``..``) ended in a traceback."""
    params = write_small_project(tmp_path)
    argv = ["evaluate", "--params", str(params), "--policy", "oracle", f"--run-id={run_id}"]
    assert main(argv) == 2
    _one_line_error(capsys.readouterr().err, "--run-id", repr(run_id), "safe name")
    assert not (tmp_path / "assets" / "eval").exists()


def test_cli_max_turns_true_is_an_error_not_a_one_turn_budget(tmp_path, capsys):
    """``env.max_turns: true`` became a 1-turn budget (oracle Hit@1 1.0 → 0.0, exit 0)."""
    params = write_small_project(tmp_path, env={"max_turns": True})
    assert main(["evaluate", "--params", str(params), "--policy", "oracle"]) == 2
    _one_line_error(capsys.readouterr().err, "env.max_turns", "valid integer", str(params))


@pytest.mark.parametrize("command", ["cache", "splits"])
def test_cli_empty_params_file_says_to_generate_the_synthetic_set(tmp_path, capsys, command):
    """An empty params file talked about ``cityrefer`` although the default is synthetic."""
    params = tmp_path / "params.yaml"
    params.write_text("")
    assert main(["--params", str(params), "-q", command]) == 2
    err = capsys.readouterr().err
    _one_line_error(err, "synthetic", "urbex synth", "data.source")
    assert "cityrefer" not in err.lower()


def _eval_project(root: Path) -> Path:
    """``root/params.yaml`` over one small synthetic scene whose queries are all ``test_no``."""
    import polars as pl

    from tests.fixtures.city import build_synth_cache, write_split_class_sizes
    from urbex.landmarks import write_landmark_table

    assets = root / "assets"
    cache, index, queries = build_synth_cache(assets / "scenes", seed=3, size=60, density=4)
    write_landmark_table(index.table, assets / "landmarks" / f"{cache.scene_id}.parquet")
    rows = [
        {
            "query_id": q.query_id,
            "scene_id": q.scene_id,
            "object_id": q.object_id,
            "class_name": q.class_name,
            "description": q.description,
            "split": "test_no",
        }
        for q in queries
    ]
    (assets / "splits").mkdir(parents=True)
    splits = pl.DataFrame(rows)
    splits.write_parquet(assets / "splits" / "queries.parquet")
    write_split_class_sizes(assets, splits)
    return write_small_project(root, eval={"workers": 1})


def test_cli_report_custom_run_id_beside_the_default_run(tmp_path, capsys):
    """``--run-id oracle`` beside ``oracle-test_no`` (same method × split) raised
    ``ValueError: several runs give the same method × split`` in ``urbex report``."""
    params = _eval_project(tmp_path)
    base = ["--params", str(params), "-q", "evaluate", "--policy", "oracle", "--limit", "2"]
    assert main([*base, "--split", "test_no", "--run-id", "oracle"]) == 0
    assert main([*base, "--split", "test_no"]) == 0
    runs = tmp_path / "assets" / "eval" / "runs"
    assert sorted(p.name for p in runs.iterdir()) == ["oracle", "oracle-test_no"]
    capsys.readouterr()
    assert main(["--params", str(params), "report"]) == 0
    md = (tmp_path / "assets" / "eval" / "report.md").read_text()
    assert "oracle [oracle]" in md, md
    main_table = md.split("## Table 11")[0]  # the Table-11 block repeats the test_no rows
    rows = [ln for ln in main_table.splitlines() if ln.startswith("| oracle")]
    assert len(rows) == 2, md


def test_cli_evaluate_repeats_and_tools_flags_are_checked(tmp_path, capsys):
    params = write_small_project(tmp_path)
    argv = ["evaluate", "--params", str(params), "--policy", "openai", "--repeats", "2"]
    assert main(argv) == 2
    _one_line_error(capsys.readouterr().err, "openai.temperature")
    argv = ["evaluate", "--params", str(params), "--policy", "oracle", "--tools", "teleport"]
    assert main(argv) == 2
    _one_line_error(capsys.readouterr().err, "--tools", "env.tools")
    argv = ["evaluate", "--params", str(params), "--policy", "oracle", "--repeats", "2"]
    assert main([*argv, "--run-id", "x"]) == 2
    _one_line_error(capsys.readouterr().err, "--repeats")
    assert not (tmp_path / "assets" / "eval").exists()


def test_cli_params_repeated_stacks_files_in_order_before_and_after_the_command():
    from urbex.cli import _build_parser, params_files

    argv = ["--params", "A.yaml", "cache", "--params", "B.yaml", "--params", "C.yaml"]
    got = params_files(_build_parser().parse_args(argv))
    assert got == [Path("A.yaml"), Path("B.yaml"), Path("C.yaml")]


def test_cli_params_later_file_overlays_earlier(tmp_path):
    base = write_small_project(tmp_path)
    over = tmp_path / "over.yaml"
    over.write_text("paths:\n  assets: other\n")
    (tmp_path / "other").mkdir()
    assert main(["--params", str(base), "warehouse", "--params", str(over), "-q"]) == 0
    assert (tmp_path / "other" / "warehouse.duckdb").is_file()
    assert not (tmp_path / "assets" / "warehouse.duckdb").exists()


def test_cli_params_overlay_typo_exit_2_naming_key_and_spelling(tmp_path, capsys):
    base = write_small_project(tmp_path)
    over = tmp_path / "over.yaml"
    over.write_text("train:\n  max_stpes: 3\n")
    assert main(["--params", str(base), "--params", str(over), "warehouse"]) == 2
    err = capsys.readouterr().err
    assert "over.yaml" in err and "'train.max_stpes'" in err and "'train.max_steps'" in err
