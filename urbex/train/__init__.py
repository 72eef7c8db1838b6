"""Training glue: GRPO wiring for trl and the tiny offline model builder (heavy imports are lazy)."""

from urbex.train.tiny import make_tiny_model

__all__ = ["make_tiny_model"]
