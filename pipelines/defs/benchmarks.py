"""Zero-shot benchmarks (STPLS3D-Refer, the paper's Table 2): their own caches, landmarks,
queries, and the evaluation of any policy on them (nothing is fitted on a benchmark).

Built by the same library stages as CityRefer's, from ``urbex stpls3d-refer``'s CityRefer-layout
output (:mod:`urbex.benchmarks`); scene caches are partitioned by the benchmark's scenes
(``stpls3d_refer_scenes``, registered by ``benchmark_scenes``).
"""

import dagster as dg
import polars as pl

from pipelines.defs.annotations import stpls3d_refer
from pipelines.defs.evaluation import ranker_model
from pipelines.defs.resources import UrbexParams
from pipelines.defs.versions import data_version
from urbex.agents.registry import POLICY_NAMES
from urbex.benchmarks import ZERO_SHOT, ZERO_SHOT_SPLIT, benchmark_params
from urbex.eval.runner import evaluate
from urbex.eval.runspec import RunSpec
from urbex.stages import (
    benchmark_scene_ids,
    build_benchmark_landmarks,
    build_benchmark_queries,
    build_benchmark_scene,
    refresh,
)

#: The one zero-shot benchmark whose scenes partition ``benchmark_scene_caches``.
BENCHMARK = ZERO_SHOT[0]
BENCHMARK_SCENES = dg.DynamicPartitionsDefinition(name=f"{BENCHMARK}_scenes")
ZERO_SHOT_PARTITIONS = dg.MultiPartitionsDefinition(
    {
        "benchmark": dg.StaticPartitionsDefinition(list(ZERO_SHOT)),
        "policy": dg.StaticPartitionsDefinition(list(POLICY_NAMES)),
    }
)


@dg.asset(deps=[stpls3d_refer], group_name="benchmarks", kinds={"python"})
def benchmark_scenes(
    context: dg.AssetExecutionContext, urbex_params: UrbexParams
) -> dg.MaterializeResult:
    """The benchmark's scene ids as the partitions of ``benchmark_scene_caches``."""
    ids = benchmark_scene_ids(urbex_params.load(), BENCHMARK)
    stale = sorted(set(context.instance.get_dynamic_partitions(BENCHMARK_SCENES.name)) - set(ids))
    for key in stale:
        context.instance.delete_dynamic_partition(BENCHMARK_SCENES.name, key)
    context.instance.add_dynamic_partitions(BENCHMARK_SCENES.name, ids)
    return dg.MaterializeResult(
        metadata={"benchmark": BENCHMARK, "scene_ids": ", ".join(ids), "n_scenes": len(ids)}
    )


@dg.asset(
    partitions_def=BENCHMARK_SCENES,
    deps=[benchmark_scenes],
    group_name="benchmarks",
    kinds={"python"},
)
def benchmark_scene_caches(
    context: dg.AssetExecutionContext, urbex_params: UrbexParams
) -> dg.MaterializeResult:
    """One benchmark scene cache (pseudo-instances as its instance table)."""
    params = urbex_params.load()
    b = build_benchmark_scene(params, BENCHMARK, context.partition_key)
    return dg.MaterializeResult(
        data_version=data_version(params, b.cache_dir),
        metadata={
            "n_points": b.n_points,
            "reused": b.reused,
            "cache_dir": dg.MetadataValue.path(str(b.cache_dir)),
        },
    )


@dg.asset(deps=[benchmark_scene_caches], group_name="benchmarks")
def benchmark_landmark_tables(urbex_params: UrbexParams) -> dg.MaterializeResult:
    """The benchmark's landmark tables (its OSM/GeoJSON landmarks in the scene frame)."""
    params = urbex_params.load()
    paths = build_benchmark_landmarks(params, BENCHMARK)
    return dg.MaterializeResult(
        data_version=data_version(params, benchmark_params(params, BENCHMARK).layout.landmarks),
        metadata={
            "n_scenes": len(paths),
            "n_landmarks": sum(pl.read_parquet(p).height for p in paths),
        },
    )


@dg.asset(deps=[benchmark_landmark_tables], group_name="benchmarks")
def benchmark_queries(urbex_params: UrbexParams) -> dg.MaterializeResult:
    """The benchmark's cleaned queries, all in split ``test``, with ``landmark_free``."""
    params = urbex_params.load()
    path = build_benchmark_queries(params, BENCHMARK)
    q = pl.read_parquet(path)
    return dg.MaterializeResult(
        data_version=data_version(params, path),
        metadata={
            "n_queries": q.height,
            "n_landmark_free": int(q["landmark_free"].sum()),
            "path": dg.MetadataValue.path(str(path)),
        },
    )


@dg.asset(
    partitions_def=ZERO_SHOT_PARTITIONS,
    deps=[benchmark_queries, ranker_model],
    group_name="benchmarks",
)
def zero_shot_evaluation(
    context: dg.AssetExecutionContext, urbex_params: UrbexParams
) -> dg.MaterializeResult:
    """One policy on one zero-shot benchmark (split ``test``), a resumable evaluation run."""
    key = context.partition_key.keys_by_dimension
    params = benchmark_params(urbex_params.load(), key["benchmark"])
    spec = RunSpec.from_params(params, policy=key["policy"], split=ZERO_SHOT_SPLIT)
    r = evaluate(params, spec=spec, progress=False)
    refresh(params)
    m = r.metrics.row(0, named=True) if r.metrics.height else {}
    return dg.MaterializeResult(
        data_version=data_version(params, r.run_dir),  # DVC's evaluate_zero_shot@<policy> out
        metadata={
            "run_id": r.run_id,
            "spec": dg.MetadataValue.json(spec.to_dict()),
            "n": r.n_queries,
            "hit1": float(m.get("hit1") or 0.0),
            "hit3": float(m.get("hit3") or 0.0),
            "iou_bev": float(m.get("iou_bev") or 0.0),
            "run_dir": dg.MetadataValue.path(str(r.run_dir)),
        },
    )
