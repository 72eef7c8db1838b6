"""The synthetic city generator: SensatUrban/CityRefer-like blocks with unique descriptions.

Entry points: :func:`generate_block` (one block in memory), :func:`scene_queries` (its unique
descriptions, worded in paraphrase families with what people do — context objects, the map
frame, counts, shades, hedges, misspelled names — and human-like noise; the families of
:data:`HELD_OUT_FAMILIES` only in held-out scenes) and :func:`generate_dataset` (a data set
written in the CityRefer / LAS / STPLS3D layouts plus ``synth_manifest.json``).
Submodules import lazily where heavy (geopandas, laspy, tqdm are imported inside functions).
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
