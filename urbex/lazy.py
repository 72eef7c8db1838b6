"""Lazy package exports (PEP 562): a package re-exports its submodules' names without importing them.

``from urbex.env import GroundingEnv`` keeps working, but ``import urbex.train.logs`` no longer
imports every submodule of :mod:`urbex.env` and :mod:`urbex.train` on the way (each package's
``__init__`` used to import them all: a command that only refreshed the warehouse imported the
policies, the synthetic-city generator and pandas, ~1.2 s of a 1.5 s start-up). A package names
its exports once, as imports under ``TYPE_CHECKING`` (what type checkers and readers see);
:func:`lazy_exports` reads those lines from the package's source and serves them at run time,
as ``lazy_loader`` does with stub files:

    from typing import TYPE_CHECKING

    from urbex.lazy import lazy_exports

    if TYPE_CHECKING:
        from urbex.env.episode import GroundingEnv

    __all__ = ["GroundingEnv"]
    __getattr__, __dir__ = lazy_exports(__name__, __file__)
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["lazy_exports", "type_checking_imports"]


def type_checking_imports(source: str) -> dict[str, str]:
    """``name → absolute module`` of the ``from M import name`` lines under a top-level
    ``if TYPE_CHECKING:`` of ``source`` (a package's ``__init__``).

    Raises
    ------
    ValueError
        A line there that is not ``from <absolute module> import <names>`` without ``as``.
    """
    out: dict[str, str] = {}
    for node in ast.parse(source).body:
        if not (isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING"):
            continue
        for imp in node.body:
            if not (
                isinstance(imp, ast.ImportFrom)
                and imp.module
                and imp.level == 0
                and all(a.asname is None for a in imp.names)
            ):
                raise ValueError(
                    f"line {imp.lineno}: expected `from <absolute module> import <names>` "
                    "under TYPE_CHECKING"
                )
            out.update({a.name: imp.module for a in imp.names})
    return out


def lazy_exports(
    package: str, init_file: str
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of a package whose exports load on first use.

    Parameters
    ----------
    package
        The package's ``__name__``.
    init_file
        Its ``__file__``: the ``TYPE_CHECKING`` imports there are its exports
        (:func:`type_checking_imports`).

    Returns
    -------
    (__getattr__, __dir__)
        ``__getattr__(name)`` imports the submodule that holds ``name``, caches the value in the
        package's namespace (the next access is a plain attribute) and returns it (an export
        named like its submodule, ``parse`` of ``urbex.language.parse``, stays the export); a name that is
        no export but a submodule of the package is imported as such (``pkg.submodule`` worked
        when ``__init__`` imported everything); anything else is an ``AttributeError``.
    """
    where = type_checking_imports(Path(init_file).read_text(encoding="utf-8"))
    pkg = importlib.import_module(package)

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is not None:
            mod = importlib.import_module(module)
            value = getattr(mod, name)
            # importing ``pkg.parse`` binds ``pkg.parse`` to the submodule; when the submodule
            # exports a name of its own name (``urbex.language.parse.parse``), that export wins
            own = module.rpartition(".")[2]
            if name != own and where.get(own) == module:
                setattr(pkg, own, getattr(mod, own))
        elif not name.startswith("__"):
            try:
                value = importlib.import_module(f"{package}.{name}")
            except ModuleNotFoundError as e:
                if e.name != f"{package}.{name}":
                    raise  # the submodule exists but one of its imports is missing
                raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        setattr(pkg, name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(pkg), *where})

    return __getattr__, __dir__
