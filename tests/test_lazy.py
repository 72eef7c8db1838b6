"""Lazy package exports (urbex.lazy) and what the command line imports before it runs a command."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

import urbex
from urbex.lazy import type_checking_imports

PACKAGES = sorted(
    p.parent.name
    for p in Path(urbex.__file__).parent.glob("*/__init__.py")
    if "lazy_exports(" in p.read_text()
)


def _type_checking_imports(package: str) -> dict[str, str]:
    return type_checking_imports(
        (Path(urbex.__file__).parent / package / "__init__.py").read_text()
    )


def test_the_packages_that_load_lazily():
    assert {"agents", "env", "io", "landmarks", "language", "scene", "synth", "train"} <= set(
        PACKAGES
    )


@pytest.mark.parametrize("package", PACKAGES)
def test_every_export_resolves_to_its_submodule_s_object(package):
    pkg = importlib.import_module(f"urbex.{package}")
    declared = _type_checking_imports(package)
    assert set(declared) == set(pkg.__all__), "the TYPE_CHECKING imports and __all__ differ"
    for name, module in declared.items():
        assert getattr(pkg, name) is getattr(importlib.import_module(module), name), name
    assert set(pkg.__all__) <= set(dir(pkg))


def test_a_submodule_is_an_attribute_and_a_typo_an_attribute_error():
    import urbex.scene as scene

    assert scene.raster is importlib.import_module("urbex.scene.raster")
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        _ = scene.no_such_name
    with pytest.raises(ImportError, match="no_such_name"):
        exec("from urbex.env import no_such_name", {})


@pytest.mark.parametrize(
    "line",
    ["import urbex.env.episode", "from urbex.env.episode import GroundingEnv as G",
     "from .episode import GroundingEnv"],
)  # fmt: skip
def test_an_export_line_it_cannot_serve_is_an_error_naming_the_line(line):
    source = f"from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    {line}\n"
    with pytest.raises(ValueError, match="line 4: expected `from <absolute module> import"):
        type_checking_imports(source)


def test_only_the_type_checking_block_is_read():
    source = (
        "from urbex.errors import UrbexError\n"
        "if TYPE_CHECKING:\n    from urbex.env.episode import GroundingEnv, make_global_view\n"
    )
    assert type_checking_imports(source) == {
        "GroundingEnv": "urbex.env.episode",
        "make_global_view": "urbex.env.episode",
    }


def test_an_export_named_like_its_submodule_stays_the_export_after_a_sibling_loads_it():
    """``urbex.language.parse`` holds ``parse``: loading its sibling export first (``urbex parse
    --jsonl`` checks descriptions before it parses them) must not leave the module in its place."""
    code = (
        "from urbex.language import check_description, parse\n"
        "import urbex.language as language\n"
        "assert callable(parse) and language.parse is parse, parse\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(urbex.__file__).parents[1])


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
