"""Landmark tables and landmark-name lookup.

A *landmark* is a named place of a scene: an instance whose box3d entry carries an OSM name
(its footprint is the convex hull of its own points) or a feature of an OSM-style GeoJSON file
registered into the scene frame. One table per scene, one row per landmark:

========== ============== ==========================================================
column     dtype          meaning
========== ============== ==========================================================
scene_id   str
landmark_id str           ``<scene>:box3d:<object_id>`` or ``<scene>:geojson:<n>``
name       str            as written in the source
name_norm  str            :func:`normalize_name` of ``name``
aliases    list[str]      other names (OSM ``alt_name``/``short_name``/...)
kind       str            one of :data:`LANDMARK_KINDS`
footprint_wkt str         polygon / line / point, **world metres** (scene frame, offset removed)
x, y       float64        world centroid, metres (a line's midpoint)
source     str            ``box3d`` or ``geojson``
object_id  str            the instance's object_id (``""`` for GeoJSON rows)
fp_x_min_m float64        footprint bounds, **world metres** (also ``fp_y_min_m``,
                          ``fp_x_max_m``, ``fp_y_max_m``); null without a footprint
========== ============== ==========================================================

Footprints are validated and their bounds stored when a table is built or read
(:func:`with_footprint_bounds`; a bad footprint is a :class:`~urbex.errors.LandmarkError`
naming the scene and landmark); consumers read them with :func:`footprint_bounds`.

:class:`LandmarkIndex` answers ``lookup(name)`` by exact, normalised and fuzzy matching and never
returns a wrong landmark silently: a weak or ambiguous match comes back ``found=False`` with the
closest names. ``mentions(description, scene_id)`` lists the landmark names a text refers to.

Submodules: :mod:`~urbex.landmarks.names` (normalisation, kinds), :mod:`~urbex.landmarks.table`
(building/registering/reading tables), :mod:`~urbex.landmarks.lookup` (:class:`LandmarkIndex`).
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
