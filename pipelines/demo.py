"""``make demo``: materialize the whole graph on the synthetic default, partition by partition.

Runs in-process against the Dagster instance in ``$DAGSTER_HOME`` (``make`` sets it to
``.dagster_home``), so the runs show up in ``make ui`` afterwards.
"""

from __future__ import annotations

import sys

import dagster as dg

from pipelines.definitions import defs
from pipelines.defs.partitions import SCENES


def main() -> int:
    instance = dg.DagsterInstance.get()
    graph = defs.resolve_asset_graph()
    assets = list(defs.assets or [])
    checks = list(defs.asset_checks or [])
    resources = defs.resources or {}

    def run(selection: list[str], partition_key: str | None = None) -> None:
        keys = {dg.AssetKey(s) for s in selection}
        picked = [a for a in assets if isinstance(a, dg.AssetsDefinition) and keys & set(a.keys)]
        picked_checks = [c for c in checks if keys & {k.asset_key for k in c.check_keys}]
        label = f"{','.join(selection)}" + (f" [{partition_key}]" if partition_key else "")
        print(f"▶ materializing {label}", flush=True)
        result = dg.materialize(
            [*picked, *picked_checks],
            instance=instance,
            resources=resources,
            partition_key=partition_key,
            selection=selection,
        )
        if not result.success:
            raise SystemExit(f"demo: {label} failed")

    del graph
    run(["raw_dataset"])
    for key in instance.get_dynamic_partitions(SCENES.name):
        run(["scene_caches"], key)
    print(
        'demo: done. Query the warehouse: .venv/bin/python -c "import duckdb; '
        "print(duckdb.connect('assets/warehouse.duckdb', read_only=True)"
        ".sql('select * from scenes'))\""
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
