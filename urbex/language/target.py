"""A description's target class: the class nouns people write for the four target classes.

:func:`class_of_text` reads the earliest class noun of a description, with the place names it
mentions masked first (:func:`urbex.landmarks.names.mask_names`). The classes themselves and
their semantic ids are :mod:`urbex.classes`'.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from urbex.landmarks.names import mask_names

__all__ = ["CLASS_WORDS", "class_of_text"]

#: Class nouns (lower-case text) → target class, longest alternatives first at one position.
CLASS_WORDS: tuple[tuple[str, str], ...] = (
    ("parking lot", "Parking"), ("car park", "Parking"), ("parking area", "Parking"),
    ("parking", "Parking"), ("open green space", "Ground"), ("green field", "Ground"),
    ("grass field", "Ground"), ("playing field", "Ground"), ("automobile", "Car"),
    ("vehicle", "Car"), ("truck", "Car"), ("van", "Car"), ("cars", "Car"), ("car", "Car"),
    ("building", "Building"), ("house", "Building"), ("structure", "Building"),
    ("hall", "Building"), ("tower", "Building"), ("church", "Building"), ("ground", "Ground"),
    ("field", "Ground"), ("park", "Ground"), ("green", "Ground"), ("lawn", "Ground"),
)  # fmt: skip
# A noun's plural counts too ("the largest of the buildings"); the group holds the singular.
_CLASS_RE = re.compile(r"\b(" + "|".join(re.escape(w) for w, _ in CLASS_WORDS) + r")s?\b")
_CLASS_OF = dict(CLASS_WORDS)


def class_of_text(text: str, *, names: Sequence[str] = ()) -> str | None:
    """The target class of a description: its earliest class noun, or None without one.

    A bare ``green`` counts only when no other class noun follows (``the green car`` → Car,
    ``the green next to X`` → Ground). ``names``: the place names the description mentions
    (e.g. :meth:`urbex.landmarks.LandmarkIndex.mentions`); their words are not the
    description's class nouns (:func:`~urbex.landmarks.names.mask_names`), so a landmark named
    before the target ("Next to Northfield Park, the tallest house") does not decide it.

    >>> class_of_text("The red car parked north of Merton Hall")
    'Car'
    >>> class_of_text("the car park next to the building")
    'Parking'
    >>> class_of_text("the green car"), class_of_text("the green by the road")
    ('Car', 'Ground')
    >>> class_of_text("the smallest of the buildings")
    'Building'
    >>> t = "Next to Northfield Park, the tallest house."
    >>> class_of_text(t), class_of_text(t, names=["Northfield Park"])
    ('Ground', 'Building')
    >>> class_of_text("something tall") is None
    True
    """
    if names:
        text = mask_names(text, names)
    ms = [m.group(1) for m in _CLASS_RE.finditer(text.lower())]
    if len(ms) > 1 and ms[0] == "green":
        ms = ms[1:]
    return _CLASS_OF[ms[0]] if ms else None
