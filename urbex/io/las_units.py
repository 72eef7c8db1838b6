"""Linear units of a CRS in metres: the factors :mod:`urbex.io.las` applies to LAS coordinates.

A projected CRS whose axes are in feet (international or US survey) gets its x, y (and, for a
compound CRS, z) factors and an equivalent CRS with metre axes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["UnitConversion", "unit_conversion"]


@dataclass(frozen=True, slots=True, kw_only=True)
class UnitConversion:
    """How a CRS's linear units map to metres.

    Attributes
    ----------
    xy : float
        Metres per horizontal unit (1.0 for metre CRSs or when unknown).
    z : float
        Metres per vertical unit (the horizontal one if the CRS has no vertical part).
    unit : str
        Name of the horizontal unit (``'metre'``, ``'foot'``, ``'US survey foot'``, ...).
    crs_metres : str | None
        WKT of the same CRS with metre axes (None without a CRS).
    """

    xy: float = 1.0
    z: float = 1.0
    unit: str = "metre"
    crs_metres: str | None = None

    def __post_init__(self) -> None:
        if not (self.xy > 0 and self.z > 0):
            raise ValueError(f"UnitConversion: factors must be positive, got {self.xy}, {self.z}")

    @property
    def converts(self) -> bool:
        """True if coordinates are scaled (a non-metre linear unit)."""
        return self.xy != 1.0 or self.z != 1.0


def _metre_axes(j: dict[str, Any]) -> bool:
    """Set every linear axis unit in a PROJJSON CRS dict to metre (in place); True if changed."""
    changed = False
    cs = j.get("coordinate_system")
    if cs is not None:
        for ax in cs.get("axis", []):
            unit = ax.get("unit", "metre")
            if isinstance(unit, dict) and unit.get("type") == "LinearUnit":
                ax["unit"] = "metre"
                changed = True
    for sub in j.get("components", []):
        changed |= _metre_axes(sub)
    return changed


def unit_conversion(crs: Any) -> UnitConversion:
    """Metres-per-unit factors of a pyproj CRS (or anything ``pyproj.CRS`` accepts).

    Parameters
    ----------
    crs
        A ``pyproj.CRS``, WKT, ``"EPSG:2994"``, ... or None.

    Examples
    --------
    >>> unit_conversion("EPSG:2994").xy  # NAD83(HARN) / Oregon GIC Lambert (ft)
    0.3048
    >>> unit_conversion("EPSG:32630").converts
    False
    >>> unit_conversion(None).xy
    1.0
    """
    if crs is None:
        return UnitConversion()
    import pyproj

    crs = pyproj.CRS.from_user_input(crs)
    horizontal, vertical = crs, None
    if crs.is_compound:
        horizontal = crs.sub_crs_list[0]
        vertical = crs.sub_crs_list[1] if len(crs.sub_crs_list) > 1 else None
    if not horizontal.is_projected or not horizontal.axis_info:
        return UnitConversion(
            unit=horizontal.axis_info[0].unit_name if horizontal.axis_info else ""
        )
    ax = horizontal.axis_info[0]
    xy = float(ax.unit_conversion_factor)
    z = xy
    if vertical is not None and vertical.axis_info:
        z = float(vertical.axis_info[0].unit_conversion_factor)
    crs_metres = crs.to_wkt()
    if xy != 1.0 or z != 1.0:
        j = crs.to_json_dict()
        if _metre_axes(j):
            j["name"] = f"{j.get('name', 'CRS')} (metre axes)"
            j.pop("id", None)
            crs_metres = pyproj.CRS.from_json_dict(j).to_wkt()
    return UnitConversion(xy=xy, z=z, unit=ax.unit_name, crs_metres=crs_metres)
