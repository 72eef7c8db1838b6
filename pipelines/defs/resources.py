"""Resources: the test seam. ``UrbexParams`` points every asset at one ``params.yaml``."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from urbex.config import Params, load_params

#: ``params.yaml`` at the repository root (the same file the DVC stages read).
DEFAULT_PARAMS = Path(__file__).resolve().parents[2] / "params.yaml"


class UrbexParams(dg.ConfigurableResource):
    """Which ``params.yaml`` the assets read. Tests point it at a temporary project."""

    params_path: str = str(DEFAULT_PARAMS)

    def load(self) -> Params:
        return load_params(self.params_path)


RESOURCES = {"urbex_params": UrbexParams()}
