"""The one point-cloud record every reader returns and every writer takes.

Frames
------
``xyz`` is in **world metres** relative to ``offset``: the absolute world coordinate of point
``i`` is ``xyz[i] + offset``. Readers put a large georeferenced origin into ``offset`` so that
``xyz`` can stay float32 without losing millimetres. z is up.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
from numpy.typing import NDArray

__all__ = ["CLASS_SCHEMES", "PointCloud"]

#: Semantic class names per scheme (id → name). ``asprs`` lists the common ASPRS codes.
CLASS_SCHEMES: dict[str, dict[int, str]] = {
    "sensaturban": {
        0: "Ground",
        1: "High Vegetation",
        2: "Buildings",
        3: "Walls",
        4: "Bridge",
        5: "Parking",
        6: "Rail",
        7: "Traffic Roads",
        8: "Street Furniture",
        9: "Cars",
        10: "Footpath",
        11: "Bikes",
        12: "Water",
    },
    "stpls3d": {
        0: "Ground",
        1: "Building",
        2: "LowVegetation",
        3: "MediumVegetation",
        4: "HighVegetation",
        5: "Vehicle",
        6: "Truck",
        7: "Aircraft",
        8: "MilitaryVehicle",
        9: "Bike",
        10: "Motorcycle",
        11: "LightPole",
        12: "StreetSign",
        13: "Clutter",
        14: "Fence",
        15: "Road",
        17: "Windows",
        18: "Dirt",
        19: "Grass",
    },
    "asprs": {
        0: "Never classified",
        1: "Unclassified",
        2: "Ground",
        3: "Low Vegetation",
        4: "Medium Vegetation",
        5: "High Vegetation",
        6: "Building",
        7: "Low Point",
        9: "Water",
        10: "Rail",
        11: "Road Surface",
        13: "Wire Guard",
        14: "Wire Conductor",
        15: "Transmission Tower",
        17: "Bridge Deck",
        18: "High Noise",
    },
}


def _as_array(name: str, value: object, dtype: type, ndim: int, n: int | None) -> NDArray:
    arr = np.asarray(value)
    if arr.ndim != ndim:
        raise ValueError(f"PointCloud.{name}: expected {ndim}-D array, got shape {arr.shape}")
    if n is not None and arr.shape[0] != n:
        raise ValueError(
            f"PointCloud.{name}: expected {n} rows (one per point), got {arr.shape[0]}"
        )
    if arr.dtype != dtype:
        raise ValueError(f"PointCloud.{name}: expected dtype {np.dtype(dtype)}, got {arr.dtype}")
    return arr


@dataclass(frozen=True, slots=True, kw_only=True)
class PointCloud:
    """A point cloud from any source (SensatUrban, STPLS3D, LAS/LAZ, synthetic).

    Attributes
    ----------
    xyz : ndarray, shape (N, 3), float32 or float64
        World metres relative to ``offset``; z up.
    offset : ndarray, shape (3,), float64
        World-metre origin added to ``xyz`` to get absolute coordinates.
    rgb : ndarray, shape (N, 3), uint8, or None
        Point colours.
    semantic : ndarray, shape (N,), int32, or None
        Semantic class id in ``class_scheme``.
    instance : ndarray, shape (N,), int32, or None
        Instance (segment) id; -1 means "no instance".
    class_scheme : str
        Key of :data:`CLASS_SCHEMES` that ``semantic`` ids refer to.
    crs : str or None
        The CRS of ``xyz + offset`` as WKT (or an authority string), None if unknown.
    source : str
        Where it came from (a path or ``"synthetic"``), for error messages and metadata.
    """

    xyz: NDArray
    offset: NDArray = field(default_factory=lambda: np.zeros(3, np.float64))
    rgb: NDArray | None = None
    semantic: NDArray | None = None
    instance: NDArray | None = None
    class_scheme: str = "sensaturban"
    crs: str | None = None
    source: str = ""

    def __post_init__(self) -> None:
        xyz = np.asarray(self.xyz)
        if xyz.ndim != 2 or xyz.shape[1] != 3:
            raise ValueError(f"PointCloud.xyz: expected shape (N, 3), got {xyz.shape}")
        if xyz.dtype not in (np.float32, np.float64):
            raise ValueError(f"PointCloud.xyz: expected float32 or float64, got {xyz.dtype}")
        n = xyz.shape[0]
        offset = np.asarray(self.offset, dtype=np.float64)
        if offset.shape != (3,):
            raise ValueError(f"PointCloud.offset: expected shape (3,), got {offset.shape}")
        object.__setattr__(self, "offset", offset)
        if self.rgb is not None:
            rgb = _as_array("rgb", self.rgb, np.uint8, 2, n)
            if rgb.shape[1] != 3:
                raise ValueError(f"PointCloud.rgb: expected shape (N, 3), got {rgb.shape}")
        if self.semantic is not None:
            _as_array("semantic", self.semantic, np.int32, 1, n)
        if self.instance is not None:
            _as_array("instance", self.instance, np.int32, 1, n)
        if self.class_scheme not in CLASS_SCHEMES:
            raise ValueError(
                f"PointCloud.class_scheme: expected one of {sorted(CLASS_SCHEMES)}, "
                f"got {self.class_scheme!r}"
            )

    def __len__(self) -> int:
        return int(self.xyz.shape[0])

    @property
    def n_points(self) -> int:
        """Number of points."""
        return int(self.xyz.shape[0])

    def world_xyz(self) -> NDArray[np.float64]:
        """Absolute world coordinates, shape (N, 3), float64, metres."""
        return self.xyz.astype(np.float64) + self.offset

    def select(self, mask_or_index: NDArray) -> PointCloud:
        """A new cloud with the points picked by a boolean mask or an index array."""
        pick = np.asarray(mask_or_index)
        return replace(
            self,
            xyz=self.xyz[pick],
            rgb=None if self.rgb is None else self.rgb[pick],
            semantic=None if self.semantic is None else self.semantic[pick],
            instance=None if self.instance is None else self.instance[pick],
        )

    def class_names(self) -> dict[int, str]:
        """Semantic id → name for this cloud's ``class_scheme``."""
        return CLASS_SCHEMES[self.class_scheme]
