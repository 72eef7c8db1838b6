"""Typed view of ``params.yaml``.

One :class:`Params` object carries every knob of every stage (the sections of the data stages
are :mod:`urbex.config_data`'s, the environment's :mod:`urbex.config_env`'s). The CLI, DVC stages
and Dagster all build it with :func:`load_params`, from one file, an overlay (``base:``) or a
stack of files (:mod:`urbex.params_files`). Unknown keys are errors (a typo must not be ignored).

Numbers and switches are strict: an int field takes an int (not ``true``, not ``"8"``, not
``8.0``), a float field a finite int or float (not ``true``, not ``"0.1"``, not ``.nan`` or
``.inf``), a bool field ``true`` or ``false`` (not ``1``), a seed an int >= 0. YAML reads ``max_turns: true`` as a bool; coercing it to ``1`` would
silently become a 1-turn budget.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, get_args

from pydantic import Field, ValidationError, field_validator

from urbex.config_data import (
    MAX_DESCRIPTION_CHARS,
    MAX_SYNTH_POINTS,
    AnnotationParams,
    DataParams,
    LandmarkParams,
    PathsParams,
    SceneParams,
    Stpls3dReferParams,
    SynthParams,
)
from urbex.config_env import Bool, EnvParams, Float, Int, MarksParams, Seed, StrictModel
from urbex.config_reader import ReaderParams
from urbex.errors import ConfigError
from urbex.layout import AssetLayout, safe_name
from urbex.params_files import ParamsFiles, describe_errors, read_params_files

__all__ = [
    "MAX_DESCRIPTION_CHARS",
    "MAX_SYNTH_POINTS",
    "POLICY_NAMES",
    "SPLIT_NAMES",
    "AnnotationParams",
    "Benchmark",
    "DataParams",
    "DiagnoseParams",
    "EnvParams",
    "EvalParams",
    "GRPOLossType",
    "LandmarkParams",
    "MarksParams",
    "OpenAIParams",
    "Params",
    "PathsParams",
    "PolicyParams",
    "ReaderParams",
    "RecipeParams",
    "SFTParams",
    "SceneParams",
    "Split",
    "Stpls3dReferParams",
    "SynthParams",
    "TrainParams",
    "VLMParams",
    "env_params",
    "load_params",
]

#: A split of the cleaned queries (``urbex.annotations.splits.SPLITS``; ``--split`` choices).
Split = Literal["train", "val", "test_nd", "test_no", "test"]
#: Benchmarks ``urbex evaluate --benchmark`` plays: the training one and the zero-shot ones.
Benchmark = Literal["cityrefer", "stpls3d_refer"]
#: The loss types trl 1.16's ``GRPOTrainer`` computes (``train.loss_type``). trl types
#: ``GRPOConfig.loss_type`` as a plain ``str`` and would fail only at the first loss, after the
#: model load and a round of rollouts; typed here, a wrong name is refused when params load.
#: tests/train/test_config.py checks this list against the installed trl's documented values.
GRPOLossType = Literal["grpo", "bnpo", "dr_grpo", "dapo", "cispo", "sapo", "luspo", "vespo"]
SPLIT_NAMES: tuple[str, ...] = get_args(Split)
#: The built-in policies (``eval.policy``, ``urbex evaluate --policy``), in the registry's order
#: (:mod:`urbex.agents.registry` holds their factories and refuses to load if the two differ):
#: named here so that the command line knows them without importing every policy.
POLICY_NAMES: tuple[str, ...] = (
    "vlm",
    "openai",
    "workflow",
    "no_tools",
    "landmark_prior",
    "oracle",
    "ranking",
    "ranking_rules",
    "ranking_proposals",
)


class EvalParams(StrictModel):
    """The evaluation runner and report (``urbex.eval``). Times are seconds."""

    policy: str = Field("landmark_prior", description="default policy of `urbex evaluate`")
    benchmark: Benchmark = Field(
        "cityrefer",
        description="whose queries, scene caches and landmarks `urbex evaluate` plays: cityrefer "
        "(trained on) or a zero-shot benchmark (stpls3d_refer: split test, nothing fitted on it)",
    )
    split: Split = Field("test_no", description="default split of `urbex evaluate`")
    limit: Int | None = Field(
        None,
        ge=1,
        le=1_000_000_000,
        description="evaluate a seeded sample of this many queries (at most 1e9; a sample as "
        "large as the split plays all of it)",
    )
    sample_seed: Seed = Field(0, description="seeds the sample drawn when limit is set")
    seed: Seed = Field(0, description="base of the per-episode seeds (policy sampling, env RNG)")
    chunk_size: Int = Field(
        16, ge=1, description="episodes per Parquet shard (the resume granularity)"
    )
    workers: Int = Field(
        2, ge=1, description="processes playing parallel-safe policies (this one included)"
    )
    parallel_min_s: Float = Field(
        2.0,
        ge=0,
        description="worker processes start only when the episodes left after the first chunk "
        "would take this many seconds in one process (a worker takes ~1.5 s to start)",
    )
    episode_timeout_s: Float = Field(600.0, gt=0, description="wall-clock limit of one episode")
    candidate_classes: list[str] | None = Field(
        None,
        description="GT instance classes ranked for Hit@k (null = every instance of the scene)",
    )
    point_metrics: Bool = Field(True, description="compute point precision/recall/F1")
    report_splits: list[Split] = Field(
        ["test_nd", "test_no"], description="column groups of the report"
    )
    report_metrics: list[str] = Field(
        ["n", "hit1", "hit3", "hit5", "iou_bev"],
        description="columns per split in the report (a timing such as latency_s makes "
        "report.md a measurement that changes with every run; the results page shows latency)",
    )
    landmark_perturbation: Literal["none", "noise", "missing", "wrong"] = Field(
        "none",
        description="controlled landmark-availability run (paper D.3): noise = shift every "
        "landmark by landmark_noise_m; missing = drop the landmarks the query mentions; "
        "wrong = swap landmark positions within a scene",
    )
    landmark_noise_m: Float = Field(
        10.0, gt=0, description="length of the seeded 2D offset of the noise perturbation, m"
    )
    landmark_perturbation_seed: Seed = Field(0, description="seeds the noise / wrong perturbation")


class DiagnoseParams(StrictModel):
    """The diagnostic tables of ``urbex diagnose`` (``urbex.report.diagnostics``). Metres."""

    distractor_radius_m: Float = Field(
        50.0, gt=0, description="same-class GT instances within this BEV centre distance count"
    )
    distractor_bins: list[Int] = Field(
        [1, 5, 10], description="lower edges of the distractor-count bins after 0 (0, 1-4, ...)"
    )
    distance_bins_m: list[Float] = Field(
        [50.0, 100.0, 200.0],
        description="edges of the target-to-mentioned-landmark distance bins, m",
    )
    area_ratio_bins: list[Float] = Field(
        [0.25, 0.5, 1.0, 2.0, 4.0, 8.0],
        description="edges of the predicted/target area-ratio histogram (plot)",
    )

    @field_validator("distractor_bins", "distance_bins_m", "area_ratio_bins")
    @classmethod
    def _increasing(cls, v: list[Any]) -> list[Any]:
        if not v or any(b <= a for a, b in itertools.pairwise(v)) or v[0] <= 0:
            raise ValueError(f"expected positive, strictly increasing bin edges, got {v}")
        return v


class PolicyParams(StrictModel):
    """Policies (``urbex.agents``): which model backs ``workflow``/``no_tools``, heuristic knobs."""

    backend: Literal["vlm", "openai"] = Field("vlm", description="model behind workflow / no_tools")
    prior_gap_m: Float = Field(
        4.0, ge=0, description="landmark_prior: gap between landmark and target, m"
    )
    class_sizes: dict[str, tuple[Float, Float]] | None = Field(
        None, description="landmark_prior: [dx, dy] metres per class (null = train-split means)"
    )
    workflow_redirects: Int = Field(
        1, ge=0, description="workflow: re-asks before rejecting a turn"
    )


class VLMParams(StrictModel):
    """The local transformers VLM policy (Qwen3-VL family). Never downloads: local paths only."""

    checkpoint: Path | None = Field(
        None, description="local checkpoint dir (--checkpoint overrides)"
    )
    device: str = Field("cpu", description="torch device: cpu, cuda, cuda:1, ...")
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = "float32"
    max_new_tokens: Int = Field(256, ge=1)
    do_sample: Bool = Field(False, description="false = greedy")
    temperature: Float = Field(0.7, gt=0)
    top_p: Float = Field(0.95, gt=0, le=1)
    batch_size: Int = Field(1, ge=1, description="episodes generated together (lockstep)")
    template_tools: Bool = Field(True, description="pass the tool schemas to the chat template")


class OpenAIParams(StrictModel):
    """An OpenAI-compatible chat endpoint (hosted API or a local vLLM server)."""

    base_url: str = Field("http://127.0.0.1:8000/v1", description="ends before /chat/completions")
    model: str = "Qwen/Qwen3-VL-4B-Instruct"
    api_key_env: str | None = Field(
        "OPENAI_API_KEY", description="NAME of the env var holding the key (read at call time)"
    )
    timeout_s: Float = Field(
        120.0,
        gt=0,
        description="total per request: connect + read + every retry and backoff (the episode's "
        "eval.episode_timeout_s bounds it too)",
    )
    max_retries: Int = Field(4, ge=0, description="retries on 5xx / 429 / timeouts")
    backoff_s: Float = Field(1.0, ge=0, description="first retry delay, doubled each retry")
    max_tokens: Int = Field(1024, ge=1)
    temperature: Float = Field(0.0, ge=0)
    image_format: Literal["png", "jpeg"] = "png"
    concurrency: Int = Field(
        16,
        ge=1,
        description="episodes in flight at once against the endpoint (one thread each; each "
        "episode keeps its own order, seed, retries and deadline); 1 = one at a time",
    )


class TrainParams(StrictModel):
    """GRPO training of a policy (``urbex train``; :mod:`urbex.train.grpo`).

    The grouped fields are the recipe's knobs; :func:`urbex.train.config.make_grpo_config` maps
    them (plus ``env.max_turns``) onto ``trl.GRPOConfig``, and ``trl`` passes any other
    ``GRPOConfig`` field through. trl validates its own fields there (``loss_type``,
    ``lr_scheduler`` and the ``trl`` names are checked against the installed trl, not here, so
    this module does not import trl). The paper trains Qwen3-VL-4B-Instruct for 300 steps with
    at most 8 assistant turns (``env.max_turns``).
    """

    checkpoint: Path | None = Field(
        None, description="LOCAL base model dir (--checkpoint overrides); never downloaded"
    )
    split: Split = Field("train", description="split whose queries are the training prompts")
    run_name: str = Field(
        "grpo",
        description="output: <assets>/checkpoints/<run_name>/",
    )
    max_steps: Int = Field(300, ge=1, description="optimizer steps")
    learning_rate: Float = Field(1e-6, gt=0)
    lr_scheduler: str = Field(
        "linear",
        description="GRPOConfig.lr_scheduler_type (transformers' names: linear, cosine...)",
    )
    num_generations: Int = Field(8, ge=2, description="rollouts per prompt (the GRPO group)")
    per_device_train_batch_size: Int = Field(8, ge=1, description="rollouts per device per step")
    gradient_accumulation_steps: Int = Field(1, ge=1)
    max_completion_length: Int = Field(
        4096, ge=1, description="tokens of a whole episode, tool-image tokens included"
    )
    temperature: Float = Field(1.0, gt=0, description="sampling temperature of the rollouts")
    beta: Float = Field(0.0, ge=0, description="KL coefficient (0 = no reference model)")
    loss_type: GRPOLossType = Field("dapo", description="GRPOConfig.loss_type")
    seed: Seed = Field(0, description="trainer seed; also seeds the query sample when limit is set")
    save_steps: Int = Field(50, ge=1, description="intermediate trainer checkpoint every N steps")
    logging_steps: Int = Field(1, ge=1)
    device: Literal["auto", "cpu", "cuda"] = Field(
        "auto", description="auto = cuda when available; cpu forces use_cpu and fp32"
    )
    bf16: Bool = Field(True, description="bf16 mixed precision (cuda only)")
    gradient_checkpointing: Bool = Field(True, description="activation checkpointing (cuda only)")
    limit: Int | None = Field(None, ge=1, description="train on a seeded sample of queries")
    query_filter: Literal["all", "solvable"] = Field(
        "all",
        description="train on every query, or on those the anchored teacher answers by a shown "
        "mark (a group can succeed; DeepEyes-style selection by difficulty)",
    )
    tool_bonus: Literal["always", "on_hit"] = Field(
        "always",
        description="pay the tools' positive shaping always, or only when the answer hits "
        "(BEV IoU >= 0.5; DeepEyes); penalties are always paid",
    )
    mask_budget: Bool = Field(
        False,
        description="rollouts that run out of turns get no reward and no advantage (Mini-o3's "
        "over-turn masking) instead of the budget's penalty",
    )
    use_vllm: Bool = Field(
        False,
        description="generate rollouts with vLLM in colocate mode (trl use_vllm, vllm_mode "
        "colocate; cuda and the vllm package needed; server mode mishandles tool loops)",
    )
    vllm_gpu_memory_utilization: Float = Field(
        0.3, gt=0, le=1, description="share of each GPU the colocated vLLM engine may take"
    )
    report_to: Literal["tensorboard", "none"] = Field(
        "tensorboard",
        description="training scalars (GRPO through trl, SFT's loop) as TensorBoard events under "
        "the checkpoint's runs/ folder (`tensorboard --logdir assets/checkpoints`), or none",
    )
    trl: dict[str, Any] = Field(
        {}, description="other trl.GRPOConfig fields, passed through (names checked against trl)"
    )

    @field_validator("run_name")
    @classmethod
    def _safe_run_name(cls, v: str) -> str:
        return safe_name(v, what="run_name")  # the rule of run ids (urbex.layout.safe_name)


class SFTParams(StrictModel):
    """SFT warm start on teacher trajectories (``urbex sft``; :mod:`urbex.train.sft`).

    The paper trains no SFT stage; the tiny CPU recipe (``params-cpu.yaml``) does, so that GRPO
    starts from a policy that emits valid actions.
    """

    checkpoint: Path | None = Field(
        None, description="LOCAL base model dir (--checkpoint overrides); never downloaded"
    )
    split: Split = Field("train", description="split whose queries the teacher plays")
    per_query: Int = Field(2, ge=1, description="seeded teacher paths per query")
    mistake_rate: Float = Field(
        0.0,
        ge=0,
        le=1,
        description="share of teacher episodes with one deliberate invalid turn they recover from "
        "(unsupervised; teaches recovery)",
    )
    anchor_rate: Float = Field(
        0.0,
        ge=0,
        le=1,
        description="share of teacher episodes anchored on the landmark_query answer (zoom on the "
        "printed landmark box; every number but the answer is readable in the conversation)",
    )
    rename_rate: Float = Field(
        0.0,
        ge=0,
        le=1,
        description="share of teacher episodes played with the scene's landmarks renamed "
        "(urbex.train.rename: teaches copying the mentioned name, not memorising names)",
    )
    mark_shuffle_rate: Float = Field(
        0.0,
        ge=0,
        le=1,
        description="share of teacher episodes whose numbered marks show shuffled ids (copy the "
        "ids read, do not memorise a scene's; env.marks)",
    )
    recovery_at: Float = Field(
        0.0,
        ge=0,
        lt=1,
        description="after this share of the steps, the student plays the split and each of its "
        "invalid turns is followed by the teacher's recovery (urbex.agents.oracle.RecoveryTeacher); "
        "those episodes join the training set (0 = off)",
    )
    recovery_per_query: Int = Field(2, ge=1, description="student episodes per query (recovery)")
    recovery_max_errors: Int = Field(
        2, ge=1, description="student mistakes played per recovery episode"
    )
    recovery_temperature: Float = Field(
        1.0, ge=0, description="the student's sampling temperature when recovering (0 = greedy)"
    )
    limit: Int | None = Field(None, ge=1, description="a seeded sample of the split's queries")
    run_name: str = Field("sft", description="output: <assets>/checkpoints/<run_name>/")
    steps: Int = Field(200, ge=1, description="optimizer steps")
    batch_size: Int = Field(8, ge=1, description="conversations per step")
    learning_rate: Float = Field(2e-3, gt=0)
    warmup_steps: Int = Field(10, ge=0)
    max_length: Int | None = Field(
        4096, ge=1, description="longest rendered conversation, tokens (image pads included)"
    )
    drills: Int = Field(
        0,
        ge=0,
        description="reading drills added to each step beside the conversations (the reader "
        "stage's text families by reader.mix, look-up listings at the reader.levels entry the "
        "base checkpoint's reader stage reached (its reader.json; else the first) and "
        "reader.spread_from), so that SFT keeps what the reader learned (0 = off)",
    )
    seed: Seed = Field(0, description="teacher paths, example order and torch seed")
    save_steps: Int = Field(
        50,
        ge=1,
        description="resume state (model, optimizer, schedule, RNG, data order) every N steps in "
        "<assets>/checkpoints/.staging-<run_name>/resume/; an interrupted run resumes from it",
    )

    @field_validator("run_name")
    @classmethod
    def _safe_run_name(cls, v: str) -> str:
        return safe_name(v, what="sft.run_name")  # the rule of run ids (urbex.layout.safe_name)


class RecipeParams(StrictModel):
    """What a training run is: the recipe's name and whether it is a smoke run.

    The reader, SFT and GRPO stages record it (with the step counts of every stage behind the
    checkpoint) in their summary JSON; the report and the results page mark rows of a checkpoint
    trained as ``smoke`` (a few steps, to show the stages run: ``make demo``) so that nobody
    reads them as the method's result.
    """

    name: str = Field("custom", description="the recipe's name, recorded with each checkpoint")
    smoke: Bool = Field(
        False,
        description="true: the stages run at smoke length (the report marks the checkpoint's rows)",
    )

    @field_validator("name")
    @classmethod
    def _safe_name(cls, v: str) -> str:
        return safe_name(v, what="recipe.name")


class Params(StrictModel):
    """All parameters. ``base_dir`` is the directory relative paths are resolved against."""

    paths: PathsParams = PathsParams()
    data: DataParams = DataParams()
    synth: SynthParams = SynthParams()
    scene: SceneParams = SceneParams()
    env: EnvParams = EnvParams()
    landmarks: LandmarkParams = LandmarkParams()
    annotations: AnnotationParams = AnnotationParams()
    stpls3d_refer: Stpls3dReferParams = Stpls3dReferParams()
    eval: EvalParams = EvalParams()
    diagnose: DiagnoseParams = DiagnoseParams()
    policy: PolicyParams = PolicyParams()
    vlm: VLMParams = VLMParams()
    openai: OpenAIParams = OpenAIParams()
    train: TrainParams = TrainParams()
    sft: SFTParams = SFTParams()
    reader: ReaderParams = ReaderParams()
    recipe: RecipeParams = RecipeParams()
    base_dir: Path = Field(default=Path("."), exclude=True)

    @field_validator("base_dir")
    @classmethod
    def _abs(cls, v: Path) -> Path:
        return v.resolve()

    @property
    def assets(self) -> Path:
        """Absolute path of the assets root."""
        p = self.paths.assets
        return p if p.is_absolute() else self.base_dir / p

    def portable(self, path: str | Path) -> str:
        """``path`` as recorded in versioned files: relative to :attr:`base_dir` (POSIX) when it
        lies inside the project, so a clone elsewhere writes the same bytes; else absolute.

        >>> p = Params(base_dir=Path("/proj"))
        >>> p.portable("/proj/assets/checkpoints/grpo"), p.portable("/models/qwen")
        ('assets/checkpoints/grpo', '/models/qwen')
        >>> p.portable("assets/checkpoints/sft")  # relative: to base_dir already
        'assets/checkpoints/sft'
        """
        p = Path(path)
        full = p if p.is_absolute() else self.base_dir / p
        try:
            return full.resolve().relative_to(self.base_dir).as_posix()
        except ValueError:
            return str(full)

    @property
    def layout(self) -> AssetLayout:
        """Every published path under :attr:`assets` (:class:`urbex.layout.AssetLayout`)."""
        return AssetLayout(self.assets, benchmark=self.eval.benchmark)

    @property
    def data_root(self) -> Path | None:
        """Absolute path of ``data.root`` (None for synthetic data)."""
        r = self.data.root
        if r is None:
            return None
        return r if r.is_absolute() else self.base_dir / r

    def section_dict(self, name: str) -> dict[str, Any]:
        """One section as a plain JSON-able dict (for cache hashes and metadata)."""
        return getattr(self, name).model_dump(mode="json")

    def with_updates(self, **sections: dict[str, Any]) -> Params:
        """A copy with some section fields replaced, e.g. ``with_updates(scene={"resolution": 0.2})``.

        Raises
        ------
        ConfigError
            A replaced value is out of range or of the wrong type (the message names
            ``section.field``).
        """
        data = self.model_dump(mode="python")
        for key, upd in sections.items():
            data[key] = {**data[key], **upd}
        try:
            return Params(**data, base_dir=self.base_dir)
        except ValidationError as exc:
            raise ConfigError(f"invalid override: {describe_errors(exc, Params)}") from exc


def env_params(params: EnvParams | None) -> EnvParams:
    """The environment's params: ``params`` itself, or the defaults for None. A whole
    :class:`Params` is refused with a pointer to its ``env`` section: the environment reads
    that section alone."""
    if params is None:
        return EnvParams()
    if isinstance(params, EnvParams):
        return params
    hint = " (pass its .env section)" if isinstance(params, Params) else ""
    raise TypeError(f"params: expected EnvParams or None, got {type(params).__name__}{hint}")


def load_params(
    path: str | Path | Sequence[str | Path] | None = None, **overrides: dict[str, Any]
) -> Params:
    """Read ``params.yaml`` (default: ``./params.yaml``; built-in defaults if absent).

    ``path`` may be an overlay (a ``base:`` key) or a list of files, each overlaying the ones
    before (:mod:`urbex.params_files`). Relative paths in the params resolve against the folder
    of the first file named. ``overrides`` replace section fields last.

    Raises
    ------
    ConfigError
        A file is missing or not a YAML mapping, a base is missing or cyclic, a key is unknown
        (the message names the file, the dotted key and the nearest spelling), or a field has the
        wrong type or value (the message names the file that set it).
    """
    if path is None:
        paths = [Path("params.yaml")] if Path("params.yaml").exists() else []
    elif isinstance(path, str | Path):
        paths = [Path(path)]
    else:
        paths = [Path(p) for p in path]
    files = read_params_files(paths, Params) if paths else ParamsFiles(data={})
    raw = files.data
    for key, upd in overrides.items():
        raw[key] = {**(raw.get(key) or {}), **upd}
    try:
        return Params(**raw, base_dir=paths[0].parent if paths else Path("."))
    except ValidationError as exc:
        first = exc.errors()[0]["loc"]
        where = files.origin([str(x) for x in first]) or (paths[-1] if paths else None)
        raise ConfigError(describe_errors(exc, Params), path=where) from exc
