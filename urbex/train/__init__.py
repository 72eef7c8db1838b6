"""Training glue: GRPO wiring for trl and the tiny offline model builder (heavy imports are lazy)."""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
