"""Params files on disk: YAML reading, ``base:`` overlays, deep merging and key checks.

A params file is a YAML mapping. An **overlay** names its base with a top-level ``base:`` key
(a path relative to the overlay's own folder) and holds only the keys it changes::

    base: params.yaml
    train:
      max_steps: 40

Rules (:func:`read_params_files`):

* mappings merge recursively, the overlay wins; a list or a scalar replaces the base's value;
* a base may itself be an overlay (resolved recursively; a cycle is an error naming the files);
* an overlay may only name keys its base holds (a typo is an error naming the dotted key and the
  nearest key of the base), except inside free-form mappings (``policy.class_sizes``,
  ``train.trl``), whose keys are the fields' own business;
* every file's keys are checked against the schema (``model``): an unknown key is an error naming
  the file, the dotted key and the nearest valid spelling;
* a file is read with limits (:func:`read_yaml_mapping`): a key written twice in one mapping,
  nesting deeper than :data:`MAX_DEPTH` or aliases expanding to more than :data:`MAX_NODES`
  values (an alias bomb) are errors naming the file and the line, raised before anything walks
  the expanded values.

A list of files stacks them: each later file overlays the merged files before it (they are its
base: its own ``base:`` key is not loaded).

This module knows no urbex schema: :mod:`urbex.config` passes its pydantic model.
"""

from __future__ import annotations

import difflib
import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError
from yaml.composer import ComposerError
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode, Node, SequenceNode

from urbex.errors import ConfigError

__all__ = [
    "BASE_KEY",
    "MAX_DEPTH",
    "MAX_NODES",
    "ParamsFiles",
    "deep_merge",
    "describe_errors",
    "nearest",
    "read_params_files",
    "read_yaml_mapping",
    "section_model",
]

#: The top-level key of an overlay that names its base file.
BASE_KEY = "base"

#: The deepest nesting of mappings and lists a params file may hold (ours hold 4 levels).
MAX_DEPTH = 32
#: The most values (keys, values, list items) a params file may expand to, aliases expanded once
#: per use (ours hold a few hundred): 9 levels of 9 aliases would expand to 387 million.
MAX_NODES = 100_000

Key = tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ParamsFiles:
    """The merged mapping of some params files and where each value came from.

    ``data`` holds no ``base`` key; ``origins`` maps each dotted key a file set (as a tuple) to
    that file; ``files`` lists every file read, bases first.
    """

    data: dict[str, Any]
    origins: dict[Key, Path] = field(default_factory=dict)
    files: tuple[Path, ...] = ()

    def origin(self, key: Sequence[str | int]) -> Path | None:
        """The file that set ``key`` (its longest set prefix), or None (a built-in default)."""
        parts = tuple(str(k) for k in key)
        for n in range(len(parts), 0, -1):
            if parts[:n] in self.origins:
                return self.origins[parts[:n]]
        return None


def nearest(name: str, choices: Sequence[str]) -> str | None:
    """The closest spelling of ``name`` among ``choices`` (None when nothing is close).

    >>> nearest("max_stpes", ["max_steps", "seed"])
    'max_steps'
    >>> nearest("zzz", ["max_steps"]) is None
    True
    """
    got = difflib.get_close_matches(name, list(choices), n=1, cutoff=0.6)
    return got[0] if got else None


def _dotted(key: Key) -> str:
    return ".".join(key)


def _suggest(key: Key, choices: Sequence[str]) -> str:
    best = nearest(key[-1], choices)
    return f"; did you mean {_dotted((*key[:-1], best))!r}?" if best else ""


def describe_errors(exc: ValidationError, model: type[BaseModel]) -> str:
    """One line per pydantic error of ``model``: ``section.field: message (got value)``; an
    unknown key (pydantic's ``extra_forbidden``) names the nearest valid spelling."""
    out = []
    for e in exc.errors():
        loc = tuple(str(x) for x in e["loc"])
        if e["type"] != "extra_forbidden":
            out.append(f"{_dotted(loc)}: {e['msg']} (got {e.get('input')!r})")
            continue
        sub: type[BaseModel] | None = model
        for part in loc[:-1]:
            sub = section_model(sub, part) if sub is not None else None
        names = [n for n, f in sub.model_fields.items() if not f.exclude] if sub else []
        out.append(f"unknown key {_dotted(loc)!r}{_suggest(loc, names)}")
    return "; ".join(out)


def _children(node: Node) -> list[Node]:
    if isinstance(node, MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, SequenceNode):
        return list(node.value)
    return []


def _check_expansion(root: Node) -> None:
    """ComposerError when ``root``, every alias expanded, holds more than :data:`MAX_NODES`
    values or nests deeper than :data:`MAX_DEPTH`, or when an alias refers to a value that holds
    it. Each node is visited once (its size and depth remembered), without recursion."""
    memo: dict[int, tuple[int, int]] = {}  # id(node) -> (values, depth) once expanded
    open_: set[int] = set()  # the nodes being expanded: the ancestors of the one on top
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        if done:
            open_.discard(id(node))
            kids = [memo[id(k)] for k in _children(node)]
            size = 1 + sum(n for n, _ in kids)
            depth = 1 + max((d for _, d in kids), default=0)
            if size > MAX_NODES or depth > MAX_DEPTH:
                what = (
                    f"more than {MAX_NODES:,} values" if size > MAX_NODES else
                    f"nesting deeper than {MAX_DEPTH} levels"
                )  # fmt: skip
                raise ComposerError(
                    None,
                    None,
                    f"the aliases expand to {what}; write the values out",
                    node.start_mark,
                )
            memo[id(node)] = (size, depth)
        elif id(node) in open_:
            raise ComposerError(
                None, None, "an alias refers to a value that holds it", node.start_mark
            )
        elif id(node) not in memo:
            open_.add(id(node))
            stack.append((node, True))
            stack.extend((k, False) for k in _children(node) if id(k) not in memo)


class _ParamsLoader(yaml.SafeLoader):
    """PyYAML's safe loader with the limits of a params file: nesting at most :data:`MAX_DEPTH`
    levels (checked while composing, so deep input never reaches Python's recursion limit), at
    most :data:`MAX_NODES` values once aliases are expanded, and no key twice in one mapping
    (PyYAML keeps the last silently: a second ``env:`` block would reset every ``env`` key)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Node | None, index: Any) -> Node:
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise ComposerError(
                    None,
                    None,
                    f"nested deeper than {MAX_DEPTH} levels",
                    self.peek_event().start_mark,
                )
            return super().compose_node(parent, index)  # type: ignore[no-any-return]
        finally:
            self._depth -= 1

    def compose_document(self) -> Node:
        node: Node = super().compose_document()
        _check_expansion(node)
        return node

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        first: dict[Any, Node] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # ``<<: *defaults``: the keys written beside it override it
            key = self.construct_object(key_node, deep=True)
            try:
                seen = first.setdefault(key, key_node)
            except TypeError:
                continue  # an unhashable key: PyYAML's own error names it
            if seen is not key_node:
                raise ConstructorError(
                    None,
                    None,
                    f"duplicate key {key!r} (lines {seen.start_mark.line + 1} and "
                    f"{key_node.start_mark.line + 1}): the second would replace the first's whole "
                    "value; merge them into one",
                    key_node.start_mark,
                )
        return super().construct_mapping(node, deep=deep)  # type: ignore[no-any-return]


def read_yaml_mapping(path: Path) -> dict[str, Any]:
    """One YAML file as a mapping (an empty file is ``{}``).

    Raises
    ------
    ConfigError
        Missing, unreadable, not valid YAML, not a mapping at top level, a key written twice in
        one mapping, nesting deeper than :data:`MAX_DEPTH` or more than :data:`MAX_NODES` values
        once aliases are expanded (names the file and the line).
    """
    if not path.exists():
        raise ConfigError("file not found", path=path)
    try:
        loaded = yaml.load(path.read_text(encoding="utf-8"), Loader=_ParamsLoader)  # a safe loader
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        what = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"not valid YAML{where}: {what}", path=path) from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(
            f"cannot read the params file ({type(exc).__name__}: {exc}); expected a UTF-8 YAML file",
            path=path,
        ) from exc
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise ConfigError(
            f"expected a mapping at top level, got {type(loaded).__name__}", path=path
        )
    return loaded


def deep_merge(base: Mapping[str, Any], overlay: Mapping[str, Any]) -> dict[str, Any]:
    """``overlay`` over ``base``: mappings merge recursively, anything else replaces.

    >>> deep_merge({"a": {"x": 1, "y": [1, 2]}, "b": 0}, {"a": {"y": [3]}})
    {'a': {'x': 1, 'y': [3]}, 'b': 0}
    """
    out = dict(base)
    for k, v in overlay.items():
        old = out.get(k)
        out[k] = deep_merge(old, v) if isinstance(old, Mapping) and isinstance(v, Mapping) else v
    return out


def section_model(model: type[BaseModel], name: str) -> type[BaseModel] | None:
    """The pydantic model of field ``name`` of ``model`` (``X | None`` unwrapped), else None."""
    info = model.model_fields.get(name)
    if info is None:
        return None
    ann = info.annotation
    if isinstance(ann, types.UnionType) or typing.get_origin(ann) is typing.Union:
        args = [a for a in typing.get_args(ann) if a is not type(None)]
        ann = args[0] if len(args) == 1 else None
    return ann if isinstance(ann, type) and issubclass(ann, BaseModel) else None


def _check_schema(
    data: Mapping[str, Any], model: type[BaseModel], path: Path, key: Key = ()
) -> None:
    """ConfigError on the first key of ``data`` that ``model`` does not have (recursively)."""
    valid = [n for n, f in model.model_fields.items() if not f.exclude]
    for k, v in data.items():
        here = (*key, str(k))
        if k not in valid:
            raise ConfigError(f"unknown key {_dotted(here)!r}{_suggest(here, valid)}", path=path)
        sub = section_model(model, k)
        if sub is not None and isinstance(v, Mapping):
            _check_schema(v, sub, path, here)


def _check_overlay(
    base: Mapping[str, Any],
    overlay: Mapping[str, Any],
    model: type[BaseModel] | None,
    path: Path,
    base_name: str,
    key: Key = (),
) -> None:
    """ConfigError on the first key of ``overlay`` that ``base`` lacks (free-form maps exempt)."""
    for k, v in overlay.items():
        here = (*key, str(k))
        if k not in base:
            raise ConfigError(
                f"overlay key {_dotted(here)!r} is not in its base {base_name}"
                f"{_suggest(here, [str(b) for b in base])} (an overlay changes keys its base "
                "holds; add the key to the base first)",
                path=path,
            )
        sub = section_model(model, k) if model is not None else None
        if sub is not None and isinstance(v, Mapping) and isinstance(base[k], Mapping):
            _check_overlay(base[k], v, sub, path, base_name, here)


def _origins(data: Mapping[str, Any], path: Path, key: Key = ()) -> dict[Key, Path]:
    out: dict[Key, Path] = {}
    for k, v in data.items():
        here = (*key, str(k))
        out[here] = path
        if isinstance(v, Mapping):
            out.update(_origins(v, path, here))
    return out


def _stack(
    below: ParamsFiles, path: Path, raw: dict[str, Any], model: type[BaseModel]
) -> ParamsFiles:
    _check_overlay(below.data, raw, model, path, str(below.files[-1]))
    return ParamsFiles(
        data=deep_merge(below.data, raw),
        origins={**below.origins, **_origins(raw, path)},
        files=(*below.files, path),
    )


def _read_one(path: Path, model: type[BaseModel], chain: tuple[Path, ...]) -> ParamsFiles:
    """``path`` with its ``base:`` chain resolved; ``chain`` is the overlays being resolved."""
    resolved = path.resolve()
    if resolved in chain:
        loop = " → ".join(str(p) for p in (*chain, resolved))
        raise ConfigError(f"base: cycle of params files: {loop}", path=path)
    raw = read_yaml_mapping(path)
    base = raw.pop(BASE_KEY, None)
    _check_schema(raw, model, path)
    if base is None:
        return ParamsFiles(data=raw, origins=_origins(raw, path), files=(path,))
    if not isinstance(base, str) or not base.strip():
        raise ConfigError(
            f"base: expected the path of the base params file (relative to this file's folder), "
            f"got {base!r}",
            path=path,
            field=BASE_KEY,
        )
    base_path = path.parent / base
    if not base_path.exists():
        raise ConfigError(
            f"base: {base!r} not found (looked for {base_path.resolve()}; a base path is relative "
            "to the overlay's folder)",
            path=path,
            field=BASE_KEY,
        )
    below = _read_one(base_path, model, (*chain, resolved))
    return _stack(below, path, raw, model)


def read_params_files(paths: Sequence[Path], model: type[BaseModel]) -> ParamsFiles:
    """Read ``paths`` (at least one) and merge them: the first with its ``base:`` chain, each
    later file overlaid on the ones before (its own ``base:`` is not loaded).

    Raises
    ------
    ConfigError
        A file is missing or malformed, a base is missing or part of a cycle, a key is unknown to
        ``model``, or an overlay names a key its base lacks. The message names the file and the
        dotted key, with the nearest valid spelling.
    """
    if not paths:
        raise ValueError("read_params_files: expected at least one path")
    merged = _read_one(paths[0], model, ())
    for p in paths[1:]:
        raw = read_yaml_mapping(p)
        raw.pop(BASE_KEY, None)
        _check_schema(raw, model, p)
        merged = _stack(merged, p, raw, model)
    return merged
