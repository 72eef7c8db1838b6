"""Assets by stage. Each resolves its inputs, calls one ``urbex`` function, returns metadata."""

import dagster as dg

from pipelines.defs.partitions import SCENES
from pipelines.defs.resources import UrbexParams
from pipelines.defs.versions import data_version
from urbex.stages import build_scene, refresh, stage_raw
from urbex.viz.thumbnails import thumbnail_markdown


@dg.asset(group_name="raw", kinds={"python"})
def raw_dataset(
    context: dg.AssetExecutionContext, urbex_params: UrbexParams
) -> dg.MaterializeResult:
    """The raw data set: the synthetic city (default) or a registered CityRefer/STPLS3D/LAS root."""
    params = urbex_params.load()
    ds = stage_raw(params, progress=False)
    # the partitions are exactly the data set's scenes: drop those a params change removed
    stale = sorted(set(context.instance.get_dynamic_partitions(SCENES.name)) - set(ds.scene_ids))
    for key in stale:
        context.instance.delete_dynamic_partition(SCENES.name, key)
    context.instance.add_dynamic_partitions(SCENES.name, list(ds.scene_ids))
    # generated: the data set itself (DVC's raw out); registered: the registration record
    # (an external root of real scans is not hashed on every run)
    versioned = ds.root if ds.generated else params.layout.raw_registered
    return dg.MaterializeResult(
        data_version=data_version(params, versioned),
        metadata={
            "root": dg.MetadataValue.path(str(ds.root)),
            "source": ds.source,
            "n_scenes": len(ds.scene_ids),
            "scene_ids": ", ".join(ds.scene_ids),
            "dropped_partitions": ", ".join(stale),
            "generated": ds.generated,
        },
    )


@dg.asset(partitions_def=SCENES, deps=[raw_dataset], group_name="scenes", kinds={"python"})
def scene_caches(
    context: dg.AssetExecutionContext, urbex_params: UrbexParams
) -> dg.MaterializeResult:
    """One scene cache: cell-sorted points, full-resolution BEV rasters, global view, instances.

    Refreshes the warehouse once (its ``scenes`` / ``instances`` tables see the new cache).
    """
    params = urbex_params.load()
    b = build_scene(params, context.partition_key)
    refresh(params)
    return dg.MaterializeResult(
        data_version=data_version(params, b.cache_dir),
        metadata={
            "n_points": b.n_points,
            "build_seconds": round(b.build_seconds, 3),
            "reused": b.reused,
            "bev_size": f"{b.meta['bev_width']}×{b.meta['bev_height']} px",
            "cache_dir": dg.MetadataValue.path(str(b.cache_dir)),
            "preview": dg.MetadataValue.md(
                thumbnail_markdown(params.layout.global_view(context.partition_key))
            ),
        },
    )
