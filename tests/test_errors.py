"""The exception hierarchy: one root, messages prefixed with the file and field they are about."""

from __future__ import annotations

from pathlib import Path

import pytest

from urbex import errors
from urbex.errors import (
    CacheError,
    EmptyRegionError,
    PolicyError,
    PolicyTimeoutError,
    StaleCacheError,
    UrbexError,
)


@pytest.mark.parametrize("name", errors.__all__)
def test_every_exported_error_is_an_urbex_error(name):
    cls = getattr(errors, name)
    assert issubclass(cls, UrbexError) and issubclass(cls, Exception)
    assert cls.__doc__, f"{name} has no docstring"


@pytest.mark.parametrize(
    ("child", "parent"),
    [
        (StaleCacheError, CacheError),
        (EmptyRegionError, CacheError),
        (PolicyTimeoutError, PolicyError),
    ],
)
def test_specific_errors_are_caught_by_their_family(child, parent):
    with pytest.raises(parent):
        raise child("boom")


def test_message_is_prefixed_with_path_then_field(tmp_path):
    err = UrbexError("expected 3 columns, got 2", path=tmp_path / "a.ply", field="x")
    assert str(err) == f"{tmp_path / 'a.ply'}: field 'x': expected 3 columns, got 2"
    assert err.path == tmp_path / "a.ply" and isinstance(err.path, Path)
    assert err.field == "x"


def test_message_without_path_or_field_is_unchanged():
    err = CacheError("missing meta.json")
    assert str(err) == "missing meta.json"
    assert err.path is None and err.field is None


def test_path_given_as_string_becomes_a_path():
    err = UrbexError("bad", path="scenes/x/meta.json")
    assert err.path == Path("scenes/x/meta.json")
    assert str(err) == "scenes/x/meta.json: bad"
