"""Partitions: one per scene, added by the ``raw_dataset`` asset when it lists the scenes."""

import dagster as dg

SCENES = dg.DynamicPartitionsDefinition(name="scenes")
