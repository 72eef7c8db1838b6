"""Training glue: GRPO wiring for trl and the tiny offline model builder (heavy imports are lazy)."""

from typing import TYPE_CHECKING

from urbex.lazy import lazy_exports

if TYPE_CHECKING:
    from urbex.train.tiny import make_tiny_model

__all__ = ["make_tiny_model"]

__getattr__, __dir__ = lazy_exports(__name__, __file__)
