"""The exports of :mod:`urbex.train`: type checkers read them here, and ``lazy_loader`` loads each
from its submodule on first use."""

from .tiny import make_tiny_model

__all__ = [
    "make_tiny_model",
]
