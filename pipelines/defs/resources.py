"""Resources: the test seam. ``UrbexParams`` points the assets at a params file and its overlays.

``urbex_params`` (``params.yaml``) drives the data and heuristic stages; ``training_params``
(``params.yaml`` overlaid with ``params-cpu.yaml``, the tiny CPU recipe, by default) drives
training and the evaluation of checkpoints (the views a policy was trained with are the views it
is evaluated with). Both name the same ``paths``/``data``. Which files they read is resource
config (``params_path``, ``overlays``), set in Dagster's launchpad or a run config, never an
environment variable.
"""

from __future__ import annotations

from pathlib import Path

import dagster as dg
from pydantic import Field

from urbex.config import Params, load_params
from urbex.errors import ConfigError

#: The repository root (``params.yaml``, ``params-cpu.yaml``: the files the DVC stages read).
REPO = Path(__file__).resolve().parents[2]
#: ``params.yaml`` at the repository root.
DEFAULT_PARAMS = REPO / "params.yaml"
#: The training recipe's overlay of :data:`DEFAULT_PARAMS`: the tiny CPU recipe.
DEFAULT_TRAINING_OVERLAY = REPO / "params-cpu.yaml"


class ParamsFailure(dg.Failure, ConfigError):
    """A params file is invalid: the :class:`~urbex.errors.ConfigError` (what a caller outside
    Dagster catches) as a ``dg.Failure``, so the step fails with urbex's one-line message (the
    file and the key) as its failure, not with a traceback through the asset's code."""

    def __init__(self, error: ConfigError) -> None:
        super().__init__(description=str(error), allow_retries=False)
        self.path, self.field = error.path, error.field


class UrbexParams(dg.ConfigurableResource):
    """Which params files the assets read: ``params_path``, then each of ``overlays`` over it
    (later files win; :func:`urbex.config.load_params`). Tests point it at a temporary project."""

    params_path: str = str(DEFAULT_PARAMS)
    overlays: list[str] = Field(
        default_factory=list, description="params files overlaid on params_path, in order"
    )

    def load(self) -> Params:
        """The params of :attr:`params_path` and :attr:`overlays`.

        Raises
        ------
        ParamsFailure
            A file is missing or invalid (a ConfigError and a ``dg.Failure``; the message names
            the file and the key).
        """
        try:
            return load_params([self.params_path, *self.overlays])
        except ConfigError as exc:
            raise ParamsFailure(exc) from None


RESOURCES = {
    "urbex_params": UrbexParams(),
    "training_params": UrbexParams(overlays=[str(DEFAULT_TRAINING_OVERLAY)]),
}
