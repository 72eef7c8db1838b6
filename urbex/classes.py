"""Grounding target classes and their semantic ids per scheme.

The targets are CityRefer's four object classes (``Building``, ``Car``, ``Parking``,
``Ground``). A scene's points carry semantic ids of a class scheme
(:data:`urbex.pointcloud.CLASS_SCHEMES`), and :func:`semantic_ids` says which ids make up each
target class in each scheme (the class-aware answer lift, :mod:`urbex.env.lift`, and the
rankers use it). A description's words for the classes are :mod:`urbex.language.vocabulary`'s.
"""

from __future__ import annotations

__all__ = ["TARGET_CLASSES", "TARGET_SEMANTICS", "semantic_ids"]

#: The target classes, in a fixed order (feature columns use it).
TARGET_CLASSES: tuple[str, ...] = ("Building", "Car", "Ground", "Parking")

#: Target class → semantic ids of its points, per class scheme. A class missing from a scheme
#: has no points of its own there (the lift then falls back to the z-range of every point).
TARGET_SEMANTICS: dict[str, dict[str, tuple[int, ...]]] = {
    "sensaturban": {"Building": (2,), "Car": (9,), "Parking": (5,), "Ground": (0,)},
    "stpls3d": {"Building": (1, 17), "Car": (5, 6), "Parking": (15,), "Ground": (0, 18, 19)},
    "asprs": {"Building": (6,), "Ground": (2,), "Parking": (11,)},
}


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
