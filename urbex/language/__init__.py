"""Reading descriptions: what people write about the target (its class) and its context.

Above :mod:`urbex.landmarks` (place names are masked before a description's own words are
read), below everything that reads a description (the lift, the rankers, the baselines).
"""

from urbex.language.target import class_of_text

__all__ = ["class_of_text"]
