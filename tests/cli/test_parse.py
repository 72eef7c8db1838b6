"""``urbex parse``: the text and JSON output, ``--scene``'s names, ``--jsonl`` order and errors."""

from __future__ import annotations

import json
import time

import polars as pl
import pytest

from tests.fixtures.small_project import write_small_project
from urbex.cli import main
from urbex.cli.parse import read_requests
from urbex.errors import AnnotationError
from urbex.landmarks import write_landmark_table

KEYS = ["target_class", "target_colours", "sizes", "shape", "counts", "ordinal", "mentions"]


def test_parse_prints_the_reading_as_text(capsys):
    text = "On Mill Lane in the car park of the Red Lion, this dark grey van"
    assert main(["parse", text, "--landmark", "Mill Lane", "--landmark", "Red Lion"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["target", "class", "Car"]
    assert out[1].split() == ["colours", "grey"]
    assert 'Mill Lane: on ("On")' in out[6]
    assert out[7].strip() == 'Red Lion: in ("in the car park of")'


def test_parse_json_has_exactly_the_keys(capsys):
    assert main(["parse", "the 2nd house from the left, north of Elm Tower",
                 "--landmark", "Elm Tower", "--json"]) == 0  # fmt: skip
    d = json.loads(capsys.readouterr().out)
    assert list(d) == KEYS
    assert d["ordinal"] == {"k": 2, "from": "left"}
    assert [list(m) for m in d["mentions"]] == [["name", "relation", "text"]]
    assert d["mentions"][0]["relation"] == "north_of"


def test_parse_scene_takes_the_built_landmark_names(tmp_path, capsys):
    params = write_small_project(tmp_path)
    row = {"scene_id": ["s1"], "landmark_id": ["s1:geojson:0"], "name": ["Green Park"],
           "name_norm": ["green park"], "aliases": [["The Green"]], "kind": ["park"],
           "footprint_wkt": ["POINT (1 2)"], "x": [1.0], "y": [2.0], "source": ["geojson"],
           "object_id": [""]}  # fmt: skip
    table = pl.DataFrame(row)
    write_landmark_table(table, tmp_path / "assets" / "landmarks" / "s1.parquet")
    args = ["--params", str(params), "parse", "a red car next to Green Park", "--json"]
    assert main([*args, "--scene", "s1"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["mentions"] == [{"name": "Green Park", "relation": "next_to", "text": "next to"}]
    assert d["target_colours"] == ["red"]
    assert main([*args, "--scene", "atlantis"]) == 2
    assert "atlantis" in capsys.readouterr().err


def test_parse_jsonl_one_object_per_line_in_order(tmp_path, capsys):
    f = tmp_path / "requests.jsonl"
    lines = [
        {"description": "the green next to Mill Lane", "landmarks": ["Mill Lane"]},
        {"description": "a blue van", "landmarks": []},
        {
            "description": "the third car from the north end of Soho Road",
            "landmarks": ["Soho Road"],
        },
    ]
    f.write_text("\n".join(json.dumps(x) for x in lines) + "\n\n")
    assert main(["parse", "--jsonl", str(f)]) == 0
    out = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [d["target_class"] for d in out] == ["Ground", "Car", "Car"]
    assert all(list(d) == KEYS for d in out)
    assert out[2]["ordinal"] == {"k": 3, "from": "north"}


@pytest.mark.parametrize(
    ("body", "line"),
    [
        ('{"description": "a car", "landmarks": []}\nnot json\n', 2),
        ('{"description": "a car"}\n\n[1, 2]\n', 3),
        ('{"description": 5, "landmarks": []}\n', 1),
        ('{"description": "a car", "landmarks": "Mill Lane"}\n', 1),
    ],
)
def test_parse_jsonl_bad_line_names_its_number(tmp_path, capsys, body, line):
    f = tmp_path / "bad.jsonl"
    f.write_text(body)
    assert main(["parse", "--jsonl", str(f)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"bad.jsonl: line {line}:" in err[0]
    with pytest.raises(AnnotationError, match=f"line {line}"):
        read_requests(f)


def test_parse_needs_text_or_jsonl_not_both(tmp_path, capsys):
    f = tmp_path / "r.jsonl"
    f.write_text('{"description": "a car"}\n')
    assert main(["parse"]) == 2
    assert main(["parse", "a car", "--jsonl", str(f)]) == 2
    assert "not both or neither" in capsys.readouterr().err


# ---------------------------------------------------------------- hostile input (issue 36)


def test_parse_a_100k_character_description_is_a_one_line_error_within_a_second(capsys):
    text = ("a red car in a parking lot " * 3704)[:100_000]
    t0 = time.perf_counter()
    assert main(["parse", text]) == 2
    assert time.perf_counter() - t0 < 1.0
    err = capsys.readouterr().err.strip().splitlines()
    assert (
        len(err) == 1
        and "description: 100,000 characters; urbex reads descriptions of at most 2,000" in err[0]
    )


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            '{"description": "a car", "landmarks": ' + "[" * 10_000 + "]" * 10_000 + "}",
            "nested too deeply",
        ),
        ("[" * 10_000 + "]" * 10_000, "nested too deeply"),
        (
            json.dumps({"description": "a red car " * 300}),
            "2,999 characters; urbex reads descriptions of at most",
        ),
    ],
    ids=["deep_landmarks", "deep_line", "long_description"],
)
def test_parse_jsonl_hostile_line_is_a_one_line_error_naming_it(tmp_path, capsys, line, message):
    f = tmp_path / "hostile.jsonl"
    f.write_text('{"description": "a blue van"}\n' + line + "\n")
    assert main(["parse", "--jsonl", str(f)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"hostile.jsonl: line 2: {message}" in err[0], err
    assert "RecursionError" not in err[0]
