"""The synthetic city generator: SensatUrban/CityRefer-like blocks with unique descriptions.

Entry points: :func:`generate_block` (one block in memory) and :func:`generate_dataset`
(a data set written in the CityRefer / LAS / STPLS3D layouts plus ``synth_manifest.json``).
Submodules import lazily where heavy (geopandas, laspy, tqdm are imported inside functions).
"""

from urbex.synth.block import Block, Landmark, ObjectTable, generate_block
from urbex.synth.dataset import Defect, SceneEntry, SynthManifest, generate_dataset, read_manifest
from urbex.synth.expressions import Expression, Query, describe, satisfying, scene_queries
from urbex.synth.layout import Road

__all__ = [
    "Block",
    "Defect",
    "Expression",
    "Landmark",
    "ObjectTable",
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
