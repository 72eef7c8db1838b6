"""Resources: the test seam. ``UrbexParams`` points the assets at a params file.

``urbex_params`` (``params.yaml``) drives the data and heuristic stages; ``training_params``
(``params-cpu.yaml``, the tiny CPU recipe, or ``$URBEX_TRAINING_PARAMS``) drives training and
the evaluation of checkpoints (the views a policy was trained with are the views it is
evaluated with). Both name the same ``paths``/``data``.
"""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg

from urbex.config import Params, load_params

#: ``params.yaml`` at the repository root (the same file the DVC stages read).
DEFAULT_PARAMS = Path(__file__).resolve().parents[2] / "params.yaml"
#: The training recipe: ``$URBEX_TRAINING_PARAMS``, else the tiny CPU recipe ``params-cpu.yaml``.
DEFAULT_TRAINING_PARAMS = Path(
    os.environ.get("URBEX_TRAINING_PARAMS")
    or Path(__file__).resolve().parents[2] / "params-cpu.yaml"
)


class UrbexParams(dg.ConfigurableResource):
    """Which ``params.yaml`` the assets read. Tests point it at a temporary project."""

    params_path: str = str(DEFAULT_PARAMS)

    def load(self) -> Params:
        return load_params(self.params_path)


RESOURCES = {
    "urbex_params": UrbexParams(),
    "training_params": UrbexParams(params_path=str(DEFAULT_TRAINING_PARAMS)),
}
