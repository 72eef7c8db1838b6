"""``urbex parse``: how urbex reads a description (for users asking why a baseline missed).

    urbex parse "the gray car in the parking lot of Tesco" --landmark Tesco
    urbex parse "TEXT" --scene synthville_block_0 --json
    urbex parse --jsonl requests.jsonl        # {"description": ..., "landmarks": [...]} per line

Prints :func:`urbex.language.parse`'s reading: as aligned text, or (``--json``, ``--jsonl``) as
one JSON object per description with exactly the keys of
:meth:`urbex.language.Parse.to_json`.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from urbex.config import Params
from urbex.errors import AnnotationError, ConfigError, DescriptionError

if TYPE_CHECKING:
    from urbex.language import Parse

__all__ = ["add_parse_command", "cmd_parse", "format_parse", "read_requests"]


def add_parse_command(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Register ``urbex parse`` on the command line's subparsers."""
    p = sub.add_parser(
        "parse", help="how urbex reads a description (class, colours, ordinal, landmarks)",
        parents=[common],
    )  # fmt: skip
    p.add_argument("text", nargs="?", help="the description (or --jsonl FILE)")
    p.add_argument(
        "--landmark", action="append", default=[], metavar="NAME",
        help="a landmark name the description may mention (repeat)",
    )  # fmt: skip
    p.add_argument("--scene", help="take the landmark names of this scene's built landmark table")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument(
        "--jsonl", type=Path, metavar="FILE",
        help='parse every line {"description": ..., "landmarks": [...]}; one JSON object per line',
    )  # fmt: skip
    p.set_defaults(func=cmd_parse)


def read_requests(path: Path) -> list[tuple[str, list[str]]]:
    """The ``(description, landmark names)`` of every non-blank line of a JSONL file.

    Raises
    ------
    AnnotationError
        A line is not a JSON object with a string ``description`` and a list of strings
        ``landmarks`` (optional), nests deeper than Python's parser goes, or holds a description
        :func:`urbex.language.check_description` refuses (too long); the message names the file
        and the line number.
    """
    from urbex.language import check_description

    out: list[tuple[str, list[str]]] = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise AnnotationError(f"not UTF-8 text ({exc.reason})", path=path) from exc
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise AnnotationError(f"line {n}: not JSON ({exc.msg})", path=path) from exc
        except RecursionError:  # json's parser recurses once per level of nesting
            raise AnnotationError(
                f"line {n}: nested too deeply to read (an object or list inside thousands of "
                'others); expected {"description": "<text>", "landmarks": ["<name>", ...]}',
                path=path,
            ) from None
        names = obj.get("landmarks", []) if isinstance(obj, dict) else None
        if (
            not isinstance(obj, dict)
            or not isinstance(obj.get("description"), str)
            or not isinstance(names, list)
            or not all(isinstance(x, str) for x in names)
        ):
            raise AnnotationError(
                f'line {n}: expected {{"description": "<text>", "landmarks": ["<name>", ...]}}, '
                f"got {line.strip()[:80]!r}",
                path=path,
            )
        try:
            check_description(obj["description"], what=f"line {n}")
        except DescriptionError as exc:
            raise AnnotationError(str(exc), path=path) from None
        out.append((obj["description"], names))
    return out


def format_parse(p: Parse) -> str:
    """A parse as aligned lines of text (what ``urbex parse`` prints without ``--json``).

    >>> from urbex.language import parse
    >>> print(format_parse(parse("the second red car from the east end of Mill Lane", ["Mill Lane"])))
    target class    Car
    colours         red
    sizes           -
    shape           -
    counts          -
    ordinal         2 from east
    mentions        Mill Lane: at_end_of ("from the east end of")
    """
    o = p.ordinal
    mentions = [f'{m.name}: {m.relation} ("{m.text}")' for m in p.mentions] or ["-"]
    rows = [
        ("target class", p.target_class or "-"),
        ("colours", ", ".join(p.target_colours) or "-"),
        ("sizes", ", ".join(p.sizes) or "-"),
        ("shape", p.shape or "-"),
        ("counts", ", ".join(f"{c.n} {c.noun}" for c in p.counts) or "-"),
        ("ordinal", "-" if o is None else f"{o.k} from {o.from_ or '(not said)'}"),
        ("mentions", mentions[0]),
        *(("", m) for m in mentions[1:]),
    ]
    return "\n".join(f"{k:<15} {v}".rstrip() for k, v in rows)


def _names(args: argparse.Namespace, params: Params) -> list[str]:
    from urbex.landmarks import landmark_index

    names = list(args.landmark)
    if args.scene:
        index = landmark_index(params.layout, params.landmarks)
        if index is None or args.scene not in index.scene_ids:
            raise ConfigError(
                f"--scene {args.scene!r}: no landmark table for it under "
                f"{params.layout.landmarks}; build it with `urbex landmarks`"
            )
        names += index.names(args.scene)
    return names


def cmd_parse(args: argparse.Namespace, params: Params) -> int:
    """``urbex parse``: print the parse of one description, or of every line of a JSONL file."""
    from urbex.language import parse

    if (args.text is None) == (args.jsonl is None):
        raise ConfigError('give a description ("TEXT") or --jsonl FILE, not both or neither')
    names = _names(args, params)
    threshold = params.landmarks.mention_threshold
    if args.jsonl is not None:
        requests = read_requests(args.jsonl)
        for text, own in requests:
            print(json.dumps(parse(text, [*own, *names], threshold=threshold).to_json()))
        return 0
    p = parse(args.text, names, threshold=threshold)
    print(json.dumps(p.to_json()) if args.json else format_parse(p))
    return 0
