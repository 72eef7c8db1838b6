"""The synthetic city generator: SensatUrban/CityRefer-like blocks with unique descriptions.

Entry points: :func:`generate_block` (one block in memory), :func:`scene_queries` (its unique
descriptions, worded in paraphrase families with what people do — context objects, the map
frame, counts, shades, hedges, misspelled names — and human-like noise; the families of
:data:`HELD_OUT_FAMILIES` only in held-out scenes) and :func:`generate_dataset` (a data set
written in the CityRefer / LAS / STPLS3D layouts plus ``synth_manifest.json``).
Submodules import lazily where heavy (geopandas, laspy, tqdm are imported inside functions).
"""

from typing import TYPE_CHECKING

from urbex.lazy import lazy_exports

if TYPE_CHECKING:
    from urbex.synth.block import Block, Landmark, ObjectTable, generate_block
    from urbex.synth.dataset import generate_dataset
    from urbex.synth.expressions import Expression, satisfying
    from urbex.synth.manifest import Defect, SceneEntry, SynthManifest, read_manifest
    from urbex.synth.phrasing import (
        FAMILIES,
        HELD_OUT_FAMILIES,
        HELD_OUT_FAMILY,
        PHENOMENA,
        Phrasing,
        describe,
    )
    from urbex.synth.plan import Road
    from urbex.synth.queries import Query, scene_queries

__all__ = [
    "FAMILIES",
    "HELD_OUT_FAMILIES",
    "HELD_OUT_FAMILY",
    "PHENOMENA",
    "Block",
    "Defect",
    "Expression",
    "Landmark",
    "ObjectTable",
    "Phrasing",
    "Query",
    "Road",
    "SceneEntry",
    "SynthManifest",
    "describe",
    "generate_block",
    "generate_dataset",
    "read_manifest",
    "satisfying",
    "scene_queries",
]

__getattr__, __dir__ = lazy_exports(__name__, __file__)
