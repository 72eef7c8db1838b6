"""GRPO training: the ``grpo_checkpoint`` asset (``<assets>/checkpoints/<train.run_name>``).

Not part of any job or schedule and never run by the demo: materialize it on purpose (it needs
a LOCAL base checkpoint in ``train.checkpoint`` and, for a real model, a GPU).
"""

import dagster as dg

from pipelines.defs.annotations import landmark_tables, splits
from pipelines.defs.executors import GPU_OP_TAGS, GPU_POOL
from pipelines.defs.resources import UrbexParams
from urbex.train.grpo import train


@dg.asset(deps=[splits, landmark_tables], group_name="training", pool=GPU_POOL, op_tags=GPU_OP_TAGS)
def grpo_checkpoint(urbex_params: UrbexParams) -> dg.MaterializeResult:
    """A GRPO-trained policy checkpoint (model + processor, ``train_log.parquet``, ``train.json``)."""
    r = train(urbex_params.load(), progress=False)
    return dg.MaterializeResult(
        metadata={
            "run_name": r.run_name,
            "base_checkpoint": dg.MetadataValue.path(str(r.base_checkpoint)),
            "steps": r.steps,
            "n_queries": r.n_queries,
            "wall_s": r.wall_s,
            "final_reward_mean": r.reward_mean[-1][1] if r.reward_mean else None,
            "tool_calls": r.tool_calls,
            "checkpoint_dir": dg.MetadataValue.path(str(r.checkpoint_dir)),
        }
    )
