"""A run named by its fields: :class:`RunSpec` (policy, split, checkpoint, perturbation, sample).

An evaluation run is identified by a frozen record, not by a string. The run directory name
(:attr:`RunSpec.run_id`), the report's row label (:attr:`RunSpec.method`) and the
landmark-perturbation tag are *derived* from it and never parsed back: the report groups rows
by the spec, and diagnostics pair a perturbed run with its clean twin by comparing
``spec.clean()`` with the other runs' specs (:func:`clean_twins`).

Where a spec lives:

* ``<assets>/eval/runs/<run_id>/run.json``, the run's :class:`~urbex.eval.rundir.RunRecord`
  (:mod:`urbex.eval.rundir`), once, under ``"spec"`` (:meth:`RunSpec.to_dict`).
  A ``run.json`` of an older schema is refused, naming the command that plays the run again;
* ``metrics.parquet`` (and so the warehouse's ``metrics`` view) as the columns of
  :data:`SPEC_COLUMNS` (:meth:`RunSpec.columns`, read back by :meth:`RunSpec.from_columns`);
  the warehouse's ``runs`` view derives the same columns from ``run.json``'s ``"spec"``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from urbex.agents.registry import policy_info
from urbex.config import EnvParams
from urbex.eval.perturb import LandmarkPerturbation
from urbex.layout import safe_part
from urbex.tool_vocabulary import ENV_TOOLS, ToolName

if TYPE_CHECKING:
    from urbex.config import Params

__all__ = [
    "ALL_TOOLS",
    "DEFAULT_BENCHMARK",
    "SPEC_COLUMNS",
    "RunSpec",
    "Sample",
    "clean_twins",
]

#: The spec's columns in ``metrics.parquet`` / the warehouse (name, DuckDB type).
#: ``landmark_perturbation`` is the tag (``none``, ``noise10``, ``missing``, ``wrong``).
SPEC_COLUMNS: tuple[tuple[str, str], ...] = (
    ("policy", "VARCHAR"),
    ("split", "VARCHAR"),
    ("checkpoint", "VARCHAR"),
    ("landmark_perturbation", "VARCHAR"),
    ("landmark_perturbation_mode", "VARCHAR"),
    ("landmark_noise_m", "DOUBLE"),
    ("landmark_perturbation_seed", "BIGINT"),
    ("sample_limit", "BIGINT"),
    ("sample_seed", "BIGINT"),
    ("repeat_seed", "BIGINT"),
    ("tools", "VARCHAR"),
    ("benchmark", "VARCHAR"),
    ("marks", "BOOLEAN"),
    ("answer_snap", "VARCHAR"),
)

#: The benchmark a spec plays unless it names another (its run ids carry no benchmark tag).
DEFAULT_BENCHMARK = "cityrefer"

#: Every tool, in order (``env.tools`` default), as the plain strings run.json and the params
#: hold; a spec's ``tools`` is None when all are offered.
ALL_TOOLS: tuple[str, ...] = tuple(map(str, ENV_TOOLS))
#: Short tool names in run ids (``-tools_lm+zoom``).
_TOOL_TAGS: dict[str, str] = {
    ToolName.LANDMARK_QUERY: "lm",
    ToolName.ZOOM_IN: "zoom",
    ToolName.OBLIQUE_RENDER: "obl",
}


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _name_part(s: str) -> str:
    """A path's last component, safe in a directory name (other characters become ``_``)."""
    return safe_part(Path(s).name)


@dataclass(frozen=True, slots=True, kw_only=True)
class Sample:
    """A seeded sample of ``limit`` queries of the split (``urbex evaluate --limit``).

    ``seed`` is ``eval.sample_seed``; ``None`` only for a run that predates specs (its
    ``run.json`` did not record the seed).
    """

    limit: int
    seed: int | None = None

    def __post_init__(self) -> None:
        if not _is_int(self.limit) or self.limit < 1:
            raise ValueError(f"sample limit: expected an int >= 1, got {self.limit!r}")
        if self.seed is not None and not _is_int(self.seed):
            raise ValueError(f"sample seed: expected an int or None, got {self.seed!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class RunSpec:
    """What an evaluation run is: its fields, from which its id and report label derive.

    Attributes
    ----------
    policy
        A policy name (:data:`urbex.agents.registry.POLICY_NAMES`).
    split
        ``train``, ``val``, ``test_nd`` or ``test_no``.
    checkpoint
        The local model directory (as given), or None.
    perturbation
        The landmark map (:class:`LandmarkPerturbation`; ``none`` when clean).
    sample
        A seeded sample of the split, or None for the whole split. Not part of the run id
        (a larger limit extends the same run: the samples are nested).
    repeat_seed
        For repeated decoding of the same episodes (recorded; adds ``-rep<seed>`` to the id).
    tools
        The tools offered (``env.tools``, the tool ablation) in :data:`ALL_TOOLS` order, or
        None when every tool is offered; adds ``-tools_<lm+zoom+obl>`` (``-tools_none``).
    benchmark
        Whose queries, scene caches and landmarks are played (``eval.benchmark``):
        ``cityrefer`` (the default; no tag, so its run ids never change) or a zero-shot one,
        whose name goes before the split (``oracle-stpls3d_refer-test``). Not in
        :attr:`method`: a policy is one method on every benchmark.
    marks
        Numbered marks on (``env.marks.enabled``); adds ``-marks``.
    answer_snap
        ``env.answer_snap``: ``none`` or ``proposal`` (adds ``-snap``).

    Examples
    --------
    >>> s = RunSpec(policy="oracle", split="test_no",
    ...             perturbation=LandmarkPerturbation(mode="noise", noise_m=10.0, seed=0))
    >>> s.run_id, s.method, s.perturbation_tag, s.clean().run_id
    ('oracle-test_no-lm_noise10', 'oracle-lm_noise10', 'noise10', 'oracle-test_no')
    >>> RunSpec(policy="vlm", split="test_no", checkpoint="/ck/step 300").run_id
    'vlm-test_no-step_300'
    >>> RunSpec(policy="vlm", split="test_no", tools=("landmark_query",)).run_id
    'vlm-test_no-tools_lm'
    >>> RunSpec(policy="vlm", split="test_no", tools=()).method
    'vlm-tools_none'
    >>> z = RunSpec(policy="oracle", split="test", benchmark="stpls3d_refer")
    >>> z.run_id, z.method
    ('oracle-stpls3d_refer-test', 'oracle')
    >>> RunSpec(policy="vlm", split="val", checkpoint="grpo", marks=True).run_id
    'vlm-val-grpo-marks'
    """

    policy: str
    split: str
    checkpoint: str | None = None
    perturbation: LandmarkPerturbation = field(default_factory=LandmarkPerturbation)
    sample: Sample | None = None
    repeat_seed: int | None = None
    tools: tuple[str, ...] | None = None
    benchmark: str = DEFAULT_BENCHMARK
    marks: bool = False
    answer_snap: str = "none"

    def __post_init__(self) -> None:
        for name in ("policy", "split", "benchmark"):
            v = getattr(self, name)
            if not isinstance(v, str) or not v or "/" in v or "\\" in v:
                raise ValueError(f"run spec {name}: expected a non-empty name, got {v!r}")
        if isinstance(self.checkpoint, Path):
            object.__setattr__(self, "checkpoint", str(self.checkpoint))
        if self.checkpoint is not None and (
            not isinstance(self.checkpoint, str) or not self.checkpoint
        ):
            raise ValueError(
                f"run spec checkpoint: expected a path or None, got {self.checkpoint!r}"
            )
        if not isinstance(self.perturbation, LandmarkPerturbation):
            raise TypeError(
                "run spec perturbation: expected a LandmarkPerturbation, got "
                f"{type(self.perturbation).__name__}"
            )
        if self.sample is not None and not isinstance(self.sample, Sample):
            raise TypeError(
                f"run spec sample: expected a Sample or None, got {type(self.sample).__name__}"
            )
        if self.repeat_seed is not None and not _is_int(self.repeat_seed):
            raise ValueError(
                f"run spec repeat_seed: expected an int or None, got {self.repeat_seed!r}"
            )
        if self.tools is not None:
            tools = tuple(self.tools)
            if not all(isinstance(t, str) for t in tools) or not set(tools) <= set(ALL_TOOLS):
                raise ValueError(
                    f"run spec tools: expected a subset of {list(ALL_TOOLS)} or None, "
                    f"got {self.tools!r}"
                )
            norm = tuple(t for t in ALL_TOOLS if t in tools)
            object.__setattr__(self, "tools", None if norm == ALL_TOOLS else norm)
        if not isinstance(self.marks, bool) or self.answer_snap not in ("none", "proposal"):
            raise ValueError(
                "run spec marks/answer_snap: expected a bool and 'none' or 'proposal', got "
                f"{self.marks!r}, {self.answer_snap!r}"
            )

    # -- construction -----------------------------------------------------------------------

    @classmethod
    def from_params(
        cls,
        params: Params,
        *,
        policy: str,
        split: str,
        checkpoint: Path | str | None = None,
        limit: int | None = None,
    ) -> RunSpec:
        """The run ``urbex evaluate`` plays for these flags under ``params``.

        ``limit`` defaults to ``params.eval.limit``; the perturbation and the sample seed come
        from ``params.eval``. A checkpoint inside the project is recorded relative to the params
        file's folder (:meth:`urbex.config.Params.portable`, which is what relative checkpoint
        paths are resolved against), so the run's files do not depend on where the project is.
        """
        lim = limit if limit is not None else params.eval.limit
        return cls(
            policy=policy,
            split=split,
            checkpoint=None if checkpoint is None else params.portable(checkpoint),
            perturbation=LandmarkPerturbation.from_eval(params.eval),
            sample=None if lim is None else Sample(limit=lim, seed=params.eval.sample_seed),
            tools=tuple(params.env.tools),
            benchmark=params.eval.benchmark,
            marks=params.env.marks.enabled,
            answer_snap=params.env.answer_snap,
        )

    # -- derived names ----------------------------------------------------------------------

    @property
    def perturbation_tag(self) -> str:
        """``none`` or the perturbation's tag (``noise10``, ``missing``, ``wrong``)."""
        return self.perturbation.tag

    def _suffix(self) -> str:
        s = ""
        if self.checkpoint is not None:
            s += "-" + _name_part(self.checkpoint)
        if self.perturbation.mode != "none":
            s += f"-lm_{self.perturbation.tag}"
        if self.tools is not None:
            s += "-tools_" + ("+".join(_TOOL_TAGS[t] for t in self.tools) or "none")
        s += ("-marks" if self.marks else "") + ("-snap" if self.answer_snap != "none" else "")
        if self.repeat_seed is not None:
            s += f"-rep{self.repeat_seed}"
        return s

    def play_params(self, params: Params) -> Params:
        """``params`` as this run plays them: its landmark perturbation, sample, repeat seed,
        tools and benchmark written into ``params.eval`` / ``params.env`` (the one direction:
        the spec names the run, params carry it to the player and the policy). A repeat
        (``repeat_seed``) of a policy that plays the local model samples (``vlm.do_sample``):
        repeats of greedy decoding would agree.

        Raises
        ------
        ValueError
            ``sample.seed`` is None (a spec read from a run that predates recorded seeds).
        """
        if self.sample is not None and self.sample.seed is None:
            raise ValueError("run spec: sample.seed is None; give the sample's seed")
        p = self.perturbation
        upd: dict[str, Any] = {"landmark_perturbation": p.mode, "limit": None}
        if self.benchmark != params.eval.benchmark:  # its queries, caches, landmarks (the layout)
            upd["benchmark"] = self.benchmark
        if p.noise_m is not None:
            upd["landmark_noise_m"] = p.noise_m
        if p.seed is not None:
            upd["landmark_perturbation_seed"] = p.seed
        if self.sample is not None:
            upd.update(limit=self.sample.limit, sample_seed=self.sample.seed)
        if self.repeat_seed is not None:  # a repeat (urbex.eval.repeats): its own episode seeds
            upd["seed"] = self.repeat_seed
        env = self._env_updates(params.env)
        local_model = policy_info(self.policy).takes_checkpoint(params.policy.backend)
        # repeats of greedy decoding would agree: a repeat of the local model samples
        vlm = {"do_sample": True} if self.repeat_seed is not None and local_model else {}
        return params.with_updates(eval=upd, env=env, vlm=vlm)

    def _env_updates(self, env: EnvParams) -> dict[str, Any]:
        upd: dict[str, Any] = {"answer_snap": self.answer_snap}
        if self.tools is not None or tuple(env.tools) != ALL_TOOLS:
            upd["tools"] = list(self.tools or ALL_TOOLS)
        if self.marks != env.marks.enabled:
            upd["marks"] = {"enabled": self.marks}
        return upd

    def play_env(self, env: EnvParams) -> EnvParams:
        """The ``env`` section as this run plays it (its tools, numbered marks and answer
        snapping; :meth:`play_params` for the whole params)."""
        return EnvParams.model_validate({**env.model_dump(), **self._env_updates(env)})

    @property
    def run_id(self) -> str:
        """The default run directory name: ``<policy>-<split>`` (+ ``-<checkpoint dir name>``,
        + ``-lm_<tag>``, + ``-tools_<...>``, + ``-rep<seed>``). The sample is not in it. Never
        parse it back."""
        if self.benchmark != DEFAULT_BENCHMARK:
            return f"{self.policy}-{self.benchmark}-{self.split}{self._suffix()}"
        return f"{self.policy}-{self.split}{self._suffix()}"

    @property
    def method(self) -> str:
        """The report's row label: the run id without the split (one row spans the splits)."""
        return f"{self.policy}{self._suffix()}"

    def clean(self) -> RunSpec:
        """The same run without landmark perturbation (its clean twin)."""
        return replace(self, perturbation=LandmarkPerturbation())

    def evaluate_command(self, run_id: str | None = None) -> str:
        """The ``urbex evaluate`` command line that plays this run into ``run_id`` (default
        :attr:`run_id`), with ``--restart-stale``: what rebuilds a run directory. The fields
        without a flag (the perturbation's parameters, the sample seed, the repeat seed, numbered
        marks, the answer snap) come from the params, as they did when it was played.

        >>> RunSpec(policy="vlm", split="val", checkpoint="ck/a b").evaluate_command()
        "urbex evaluate --policy vlm --split val --checkpoint 'ck/a b' --run-id vlm-val-a_b --restart-stale"
        >>> RunSpec(policy="oracle", split="test", benchmark="stpls3d_refer", tools=(),
        ...         sample=Sample(limit=5, seed=0)).evaluate_command("z")
        'urbex evaluate --policy oracle --benchmark stpls3d_refer --split test --limit 5 --tools none --run-id z --restart-stale'
        """
        import shlex

        args = ["urbex", "evaluate", "--policy", self.policy]
        if self.benchmark != DEFAULT_BENCHMARK:
            args += ["--benchmark", self.benchmark]
        args += ["--split", self.split]
        if self.checkpoint is not None:
            args += ["--checkpoint", self.checkpoint]
        if self.sample is not None:
            args += ["--limit", str(self.sample.limit)]
        if self.perturbation.mode != "none":
            args += ["--landmark-perturbation", self.perturbation.mode]
        if self.tools is not None:
            args += ["--tools", ",".join(self.tools) or "none"]
        args += ["--run-id", run_id or self.run_id, "--restart-stale"]
        return shlex.join(args)

    # -- serialisation ----------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (``run.json["spec"]``); :meth:`from_dict` reads it back."""
        p = self.perturbation
        return {
            "policy": self.policy,
            "split": self.split,
            "checkpoint": self.checkpoint,
            "perturbation": {"mode": p.mode, "noise_m": p.noise_m, "seed": p.seed},
            "sample": None
            if self.sample is None
            else {"limit": self.sample.limit, "seed": self.sample.seed},
            "repeat_seed": self.repeat_seed,
            "tools": None if self.tools is None else list(self.tools),
            "benchmark": self.benchmark,
            "marks": self.marks,
            "answer_snap": self.answer_snap,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RunSpec:
        """Inverse of :meth:`to_dict`.

        Raises
        ------
        ValueError
            Unknown or missing keys, or invalid values.
        """
        keys = {"policy", "split", "checkpoint", "perturbation", "sample", "repeat_seed"}
        optional = {"tools", "benchmark", "marks", "answer_snap"}  # absent from older specs
        if not keys <= set(d) <= keys | optional:
            raise ValueError(
                f"run spec: expected keys {sorted(keys | optional)}, got {sorted(d)} "
                f"(missing {sorted(keys - set(d))}, unknown {sorted(set(d) - keys - optional)})"
            )
        p, s = d["perturbation"], d["sample"]
        return cls(
            policy=d["policy"],
            split=d["split"],
            checkpoint=d["checkpoint"],
            perturbation=LandmarkPerturbation(
                mode=p["mode"], noise_m=p.get("noise_m"), seed=p.get("seed")
            ),
            sample=None if s is None else Sample(limit=s["limit"], seed=s.get("seed")),
            repeat_seed=d["repeat_seed"],
            tools=None if d.get("tools") is None else tuple(d["tools"]),
            benchmark=d.get("benchmark") or DEFAULT_BENCHMARK,
            marks=bool(d.get("marks", False)),
            answer_snap=d.get("answer_snap") or "none",
        )

    def columns(self) -> dict[str, Any]:
        """The spec as the flat columns of :data:`SPEC_COLUMNS` (metrics rows, warehouse)."""
        p, s = self.perturbation, self.sample
        return {
            "policy": self.policy,
            "split": self.split,
            "checkpoint": self.checkpoint,
            "landmark_perturbation": p.tag,
            "landmark_perturbation_mode": p.mode,
            "landmark_noise_m": p.noise_m,
            "landmark_perturbation_seed": p.seed,
            "sample_limit": None if s is None else s.limit,
            "sample_seed": None if s is None else s.seed,
            "repeat_seed": self.repeat_seed,
            "tools": "all" if self.tools is None else ",".join(self.tools),
            "benchmark": self.benchmark,
            "marks": self.marks,
            "answer_snap": self.answer_snap,
        }

    @classmethod
    def from_columns(cls, row: Mapping[str, Any]) -> RunSpec | None:
        """The spec of a metrics row (:meth:`columns`), or None when the row has none
        (``metrics.parquet`` written before specs: no ``landmark_perturbation_mode``)."""
        if row.get("landmark_perturbation_mode") is None:
            return None

        def opt_int(k: str) -> int | None:
            v = row.get(k)
            return None if v is None else int(v)

        noise = row.get("landmark_noise_m")
        lim = opt_int("sample_limit")
        return cls(
            policy=row["policy"],
            split=row["split"],
            checkpoint=row.get("checkpoint"),
            perturbation=LandmarkPerturbation(
                mode=row["landmark_perturbation_mode"],
                noise_m=None if noise is None else float(noise),
                seed=opt_int("landmark_perturbation_seed"),
            ),
            sample=None if lim is None else Sample(limit=lim, seed=opt_int("sample_seed")),
            repeat_seed=opt_int("repeat_seed"),
            tools=_tools_of_column(row.get("tools")),
            benchmark=row.get("benchmark") or DEFAULT_BENCHMARK,
            marks=bool(row.get("marks") or False),
            answer_snap=row.get("answer_snap") or "none",
        )


# ---------------------------------------------------------------------------------------------
# reading specs; pairing runs
# ---------------------------------------------------------------------------------------------


def _tools_of_column(v: Any) -> tuple[str, ...] | None:
    """The ``tools`` column (``all``, ``""`` = none, or comma-joined names) as a spec field."""
    if v is None or v == "all":
        return None
    return tuple(t for t in str(v).split(",") if t)


def clean_twins(specs: Mapping[str, RunSpec | None]) -> dict[str, str]:
    """For each perturbed run, the clean run it is compared with: ``{run_id: clean_run_id}``.

    The twin is a run whose spec equals ``spec.clean()``; when several do, the one under the
    default id (``spec.clean().run_id``), else the smallest run id. Runs without a twin (or
    without a spec) are absent.

    >>> noisy = RunSpec(policy="o", split="s", perturbation=LandmarkPerturbation(mode="wrong", seed=0))
    >>> clean_twins({"mine": noisy.clean(), "o-s": noisy.clean(), "n": noisy, "x": None})
    {'n': 'o-s'}
    """
    by_spec: dict[RunSpec, list[str]] = {}
    for rid, s in specs.items():
        if s is not None and s.perturbation.mode == "none":
            by_spec.setdefault(s, []).append(rid)
    out: dict[str, str] = {}
    for rid, s in specs.items():
        if s is None or s.perturbation.mode == "none":
            continue
        twin = s.clean()
        cands = by_spec.get(twin, [])
        if cands:
            out[rid] = twin.run_id if twin.run_id in cands else min(cands)
    return out
