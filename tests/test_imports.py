"""Importing urbex: each package's exports load on first use (``lazy_loader`` over its
``__init__.pyi``), and what the command line imports before it runs a command."""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

import urbex

ROOT = Path(urbex.__file__).parent
PACKAGES = sorted(p.parent.name for p in ROOT.glob("*/__init__.pyi"))


def _stub(package: str) -> tuple[dict[str, str], list[str]]:
    """``name → absolute module`` of the stub's imports, and its ``__all__``."""
    tree = ast.parse((ROOT / package / "__init__.pyi").read_text())
    where: dict[str, str] = {}
    declared: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            assert node.level == 1 and node.module, "lazy_loader reads `from .<module> import`"
            where |= {a.name: f"urbex.{package}.{node.module}" for a in node.names}
        elif isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "__all__":
            declared = ast.literal_eval(node.value)
    return where, declared


def test_the_packages_that_load_lazily():
    assert PACKAGES == ["agents", "env", "io", "landmarks", "language", "scene", "synth", "train"]


@pytest.mark.parametrize("package", PACKAGES)
def test_every_export_resolves_to_its_submodule_s_object(package):
    pkg = importlib.import_module(f"urbex.{package}")
    where, declared = _stub(package)
    assert sorted(declared) == sorted(where), "the stub's imports and its __all__ differ"
    assert sorted(pkg.__all__) == sorted(declared)
    for name, module in where.items():
        assert getattr(pkg, name) is getattr(importlib.import_module(module), name), name
    assert set(pkg.__all__) <= set(dir(pkg))


def test_a_submodule_imports_by_name_and_a_typo_is_an_attribute_error():
    from urbex.scene import raster

    assert raster is importlib.import_module("urbex.scene.raster")
    with pytest.raises(AttributeError, match="no_such_name"):
        _ = importlib.import_module("urbex.scene").no_such_name
    with pytest.raises(ImportError, match="no_such_name"):
        exec("from urbex.env import no_such_name", {})


def test_an_export_named_like_its_submodule_stays_the_export_after_a_sibling_loads_it():
    """``urbex.language.parse`` holds ``parse``: loading its sibling export first (``urbex parse
    --jsonl`` checks descriptions before it parses them) must not leave the module in its place."""
    code = (
        "from urbex.language import check_description, parse\n"
        "import urbex.language as language\n"
        "assert callable(parse) and language.parse is parse, parse\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT.parent)


HEAVY = (
    "torch",
    "transformers",
    "pandas",
    "duckdb",
    "numba",
    "urbex.agents.vlm",
    "urbex.env.episode",
    "urbex.eval.runner",
    "urbex.synth.dataset",
    "urbex.scene.build",
    "urbex.train.tiny",
)


def _imported_by(statement: str) -> list[str]:
    code = f"{statement}; import json, sys; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    return json.loads(out.stdout)


def test_the_command_line_imports_no_command_before_it_runs_one():
    """``urbex --help`` or a parse error costs the parser and the params model, not the library
    (every subcommand imports its own dependencies when it runs)."""
    mods = set(_imported_by("import urbex.cli"))
    assert not mods & set(HEAVY), sorted(mods & set(HEAVY))


def test_the_warehouse_refresh_imports_neither_the_policies_nor_the_generator():
    """Most commands end with a warehouse refresh; its schemas do not pull in the episode loop,
    the policies, the city generator, the training code or pandas."""
    mods = set(_imported_by("import urbex.report.warehouse"))
    assert "duckdb" in mods
    heavy = set(HEAVY) - {"duckdb", "numba", "urbex.scene.build"}
    assert not mods & heavy, sorted(mods & heavy)
