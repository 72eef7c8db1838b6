"""Readers and writers for every data source urbex consumes.

Point clouds (PLY, STPLS3D text, LAS/LAZ) come back as :class:`urbex.pointcloud.PointCloud` in
world metres; CityRefer annotation files as frozen records; landmark GeoJSON as a
GeoDataFrame. :func:`read_scene` / :func:`list_scenes` sit on top of them all.
Writers are atomic (temporary file + ``os.replace``).
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
