"""urbex's Gymnasium environments, registered: ``gymnasium.make("urbex/Grounding-v0", ...)``.

``import urbex`` registers :data:`GROUNDING_ID` with Gymnasium without importing Gymnasium
(about 0.1 s of numpy and Gymnasium that a command line run does not need): when Gymnasium is
already imported the id is registered at once; otherwise a one-shot import hook registers it
right after ``import gymnasium`` finishes. Either way, ``import urbex; import gymnasium;
gymnasium.make("urbex/Grounding-v0", ...)`` works in any order of the two imports, and
:func:`register_envs` may be called by hand (it is idempotent).

The environment class is :class:`urbex.gym.grounding.GroundingGymEnv`; this module (the lowest
layer) names it by its import path only.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # not `typing`'s: importing typing costs ~2 ms of `import urbex`
if TYPE_CHECKING:
    from collections.abc import Sequence
    from importlib.machinery import ModuleSpec
    from types import ModuleType

__all__ = ["GROUNDING_ID", "register_envs", "register_on_import"]

#: The registered id of the grounding environment.
GROUNDING_ID = "urbex/Grounding-v0"
_ENTRY_POINT = "urbex.gym.grounding:GroundingGymEnv"


def register_envs() -> None:
    """Register urbex's environments with Gymnasium (imports it); a no-op when registered."""
    import gymnasium

    if GROUNDING_ID not in gymnasium.registry:
        gymnasium.register(id=GROUNDING_ID, entry_point=_ENTRY_POINT)


class _RegisterAfterImport:
    """A meta path finder (``importlib.abc.MetaPathFinder``'s protocol, not imported: it
    costs ~8 ms) that finds nothing itself: wraps the loader of ``gymnasium`` so that registration runs once
    the package has been executed, then leaves ``sys.meta_path``."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname != "gymnasium":
            return None
        sys.meta_path.remove(self)
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = None if find is None else find(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        run = getattr(spec.loader, "exec_module", None)
        if run is None:
            return spec

        def exec_module(module: ModuleType) -> None:
            run(module)
            register_envs()

        setattr(spec.loader, "exec_module", exec_module)  # noqa: B010 (a method of one loader)
        return spec


def register_on_import() -> None:
    """Register now if Gymnasium is imported, else as soon as it is (what ``import urbex``
    calls)."""
    if "gymnasium" in sys.modules:
        register_envs()
    elif not any(isinstance(f, _RegisterAfterImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _RegisterAfterImport())
