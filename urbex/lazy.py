"""Lazy package exports (PEP 562): a package re-exports its submodules' names without importing them.

``from urbex.env import GroundingEnv`` keeps working, but ``import urbex.train.logs`` no longer
imports every submodule of :mod:`urbex.env` and :mod:`urbex.train` on the way (the package's
``__init__`` ran them all: a command that only refreshes the warehouse imported the policies,
the synthetic-city generator and pandas, ~1.2 s of a 1.5 s start-up). A package's
``__init__`` names its exports twice, once under ``TYPE_CHECKING`` (for type checkers and
readers) and once in the map handed to :func:`lazy_exports`; ``tests/test_lazy.py`` checks that
the two agree for every package that uses it.

    from typing import TYPE_CHECKING

    from urbex.lazy import lazy_exports

    if TYPE_CHECKING:
        from urbex.env.episode import GroundingEnv

    __all__ = ["GroundingEnv"]
    __getattr__, __dir__ = lazy_exports(__name__, {"urbex.env.episode": ("GroundingEnv",)})
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, exports: Mapping[str, Sequence[str]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of a package whose names load on first use.

    Parameters
    ----------
    package
        The package's ``__name__``.
    exports
        Submodule (absolute name) → the names the package re-exports from it.

    Returns
    -------
    (__getattr__, __dir__)
        ``__getattr__(name)`` imports the submodule that holds ``name``, caches the value in the
        package's namespace (the next access is a plain attribute) and returns it; a name that is
        no export but a submodule of the package is imported as such (``pkg.submodule`` worked
        when ``__init__`` imported everything); anything else is an ``AttributeError``.
    """
    where = {name: module for module, names in exports.items() for name in names}
    pkg = importlib.import_module(package)

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is not None:
            value = getattr(importlib.import_module(module), name)
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
