"""urbex.versioning names a file's version as DVC does; .dvcignore and urbex.layout agree."""

import subprocess

import pytest

from pipelines.demo import dvc_env, dvc_executable
from tests.fixtures.small_project import REPO_ROOT
from urbex.layout import UNVERSIONED, AssetLayout
from urbex.versioning import content_hash, file_md5, tree_md5

DVC = dvc_executable(REPO_ROOT)


def test_dvcignore_lists_the_unversioned_patterns(repo_root):
    lines = (repo_root / ".dvcignore").read_text().splitlines()
    patterns = [s for s in (line.strip() for line in lines) if s and not s.startswith("#")]
    assert patterns == [f"assets/{p}" for p in UNVERSIONED]


@pytest.mark.parametrize(
    ("rel", "unversioned"),
    [
        ("eval/index.html", True),
        ("checkpoints/sft/runs/sft/events.out.tfevents.1.host", True),
        ("checkpoints/sft/model.safetensors", False),
        ("eval/curves/grpo.png", True),
        ("eval/runs/oracle-test_no/index.html", True),
        ("eval/runs/oracle-test_no/gallery/q1.html", True),
        ("scenes/.gitignore", True),
        ("eval/runs/.gitignore", True),
        ("eval/runs/oracle-test_no/run.json", False),
        ("eval/runs/oracle-test_no/episodes/index.html", False),  # not the page's place
        ("eval/report.md", False),
        ("scenes/block_0/meta.json", False),
    ],
)
def test_unversioned_matches_like_dvcignore(tmp_path, rel, unversioned):
    assert AssetLayout(tmp_path).unversioned(tmp_path / rel) is unversioned


def test_tree_md5_of_a_file_raises(tmp_path):
    (tmp_path / "f").write_bytes(b"x")
    with pytest.raises(NotADirectoryError, match="not a directory"):
        tree_md5(tmp_path / "f")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        content_hash(tmp_path / "missing")


@pytest.mark.skipif(DVC is None, reason="no dvc (scripts/setup.sh installs it in .venv-dvc)")
def test_content_hash_is_the_hash_dvc_records(tmp_path):
    """`dvc add` of a run-like folder (with the page's files and a .gitignore that .dvcignore
    leaves out) and of a file: urbex's hashes are the ones in the .dvc files."""
    assert DVC is not None
    env = dvc_env()
    run = {"cwd": tmp_path, "capture_output": True, "text": True, "check": True, "env": env}
    subprocess.run(["git", "init", "-q"], **run)
    subprocess.run([str(DVC), "init", "-q"], **run)
    (tmp_path / ".dvcignore").write_text((REPO_ROOT / ".dvcignore").read_text())
    layout = AssetLayout(tmp_path / "assets")
    d = layout.run("oracle-test_no")
    (d / "episodes").mkdir(parents=True)
    (d / "gallery").mkdir()
    (d / "run.json").write_text('{"policy": "oracle"}\r\n')  # CRLF: hashed as it is
    (d / "episodes" / "part-0.parquet").write_bytes(bytes(range(256)) * 64)
    (d / "run.lock").write_bytes(b"")
    (d / "index.html").write_text("<html>the page</html>")
    (d / "gallery" / "q1.png").write_bytes(b"\x89PNG")
    (d / ".gitignore").write_text("/x\n")
    layout.report_md.write_text("| run | hit1 |\n")
    subprocess.run([str(DVC), "add", "-q", str(d), str(layout.report_md)], **run)
    recorded = {}
    for path in (d, layout.report_md):
        text = path.with_name(path.name + ".dvc").read_text()
        recorded[path] = next(s.split()[-1] for s in text.splitlines() if "md5:" in s)
    assert content_hash(d, ignore=layout.unversioned) == recorded[d]
    assert recorded[d].endswith(".dir")
    assert (
        content_hash(layout.report_md) == file_md5(layout.report_md) == recorded[layout.report_md]
    )
    # without the ignores the page's files would change the version
    assert content_hash(d) != recorded[d]
