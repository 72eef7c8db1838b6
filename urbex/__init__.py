"""urbex: city-scale 3D visual grounding by active spatial search."""

from urbex.errors import UrbexError
from urbex.registration import register_on_import

__version__ = "0.1.0"
__all__ = ["UrbexError", "__version__"]

register_on_import()
