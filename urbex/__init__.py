"""urbex: city-scale 3D visual grounding by active spatial search."""

from urbex.errors import UrbexError

__version__ = "0.1.0"
__all__ = ["UrbexError", "__version__"]
