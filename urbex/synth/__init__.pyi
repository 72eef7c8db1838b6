"""The exports of :mod:`urbex.synth`: type checkers read them here, and ``lazy_loader`` loads each
from its submodule on first use."""

from .block import Block, Landmark, ObjectTable, generate_block
from .dataset import generate_dataset
from .expressions import Expression, satisfying
from .manifest import Defect, SceneEntry, SynthManifest, read_manifest
from .phrasing import FAMILIES, HELD_OUT_FAMILIES, HELD_OUT_FAMILY, PHENOMENA, Phrasing, describe
from .plan import Road
from .queries import Query, scene_queries

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
