"""Grounding target classes: their words in descriptions, and their semantic ids per scheme.

The targets are CityRefer's four object classes (``Building``, ``Car``, ``Parking``,
``Ground``). A description names its target's class with a noun (:func:`class_of_text`); a
scene's points carry semantic ids of a class scheme (:data:`urbex.pointcloud.CLASS_SCHEMES`),
and :func:`semantic_ids` says which ids make up each target class in each scheme. Both are
used by the class-aware answer lift (:mod:`urbex.env.lift`) and by the rankers.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["TARGET_CLASSES", "TARGET_SEMANTICS", "class_of_text", "semantic_ids"]

#: The target classes, in a fixed order (feature columns use it).
TARGET_CLASSES: tuple[str, ...] = ("Building", "Car", "Ground", "Parking")

# Class nouns (lower-case text), longest alternatives first at one position.
_CLASS_WORDS: tuple[tuple[str, str], ...] = (
    ("parking lot", "Parking"), ("car park", "Parking"), ("parking area", "Parking"),
    ("parking", "Parking"), ("open green space", "Ground"), ("green field", "Ground"),
    ("grass field", "Ground"), ("playing field", "Ground"), ("automobile", "Car"),
    ("vehicle", "Car"), ("truck", "Car"), ("van", "Car"), ("cars", "Car"), ("car", "Car"),
    ("building", "Building"), ("house", "Building"), ("structure", "Building"),
    ("hall", "Building"), ("tower", "Building"), ("church", "Building"), ("ground", "Ground"),
    ("field", "Ground"), ("park", "Ground"), ("green", "Ground"), ("lawn", "Ground"),
)  # fmt: skip
# A noun's plural counts too ("the largest of the buildings"); the group holds the singular.
_CLASS_RE = re.compile(r"\b(" + "|".join(re.escape(w) for w, _ in _CLASS_WORDS) + r")s?\b")
_CLASS_OF = dict(_CLASS_WORDS)

#: Target class → semantic ids of its points, per class scheme. A class missing from a scheme
#: has no points of its own there (the lift then falls back to the z-range of every point).
TARGET_SEMANTICS: dict[str, dict[str, tuple[int, ...]]] = {
    "sensaturban": {"Building": (2,), "Car": (9,), "Parking": (5,), "Ground": (0,)},
    "stpls3d": {"Building": (1, 17), "Car": (5, 6), "Parking": (15,), "Ground": (0, 18, 19)},
    "asprs": {"Building": (6,), "Ground": (2,), "Parking": (11,)},
}


def class_of_text(text: str, *, names: Sequence[str] = ()) -> str | None:
    """The target class of a description: its earliest class noun, or None without one.

    A bare ``green`` counts only when no other class noun follows (``the green car`` → Car,
    ``the green next to X`` → Ground). ``names``: the place names the description mentions
    (e.g. :meth:`urbex.landmarks.LandmarkIndex.mentions`); their words are not the
    description's class nouns (:func:`urbex.landmarks.names.mask_names`), so a landmark named
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
        from urbex.landmarks.names import mask_names

        text = mask_names(text, names)
    ms = [m.group(1) for m in _CLASS_RE.finditer(text.lower())]
    if len(ms) > 1 and ms[0] == "green":
        ms = ms[1:]
    return _CLASS_OF[ms[0]] if ms else None


def semantic_ids(class_name: str, class_scheme: str) -> tuple[int, ...]:
    """Semantic ids (in ``class_scheme``) of the points of target class ``class_name``.

    ``()`` when the scheme has no such class.

    >>> semantic_ids("Car", "sensaturban"), semantic_ids("Car", "asprs")
    ((9,), ())
    >>> semantic_ids("Car", "nonsense")
    Traceback (most recent call last):
    ...
    ValueError: class_scheme: expected one of ['asprs', 'sensaturban', 'stpls3d'], got 'nonsense'
    """
    if class_scheme not in TARGET_SEMANTICS:
        raise ValueError(
            f"class_scheme: expected one of {sorted(TARGET_SEMANTICS)}, got {class_scheme!r}"
        )
    return TARGET_SEMANTICS[class_scheme].get(class_name, ())
