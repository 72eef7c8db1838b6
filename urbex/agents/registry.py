"""Policies by name: ``make_policy(name, params, ...)`` and what each needs (:class:`PolicyInfo`).

Names: ``vlm``, ``openai``, ``workflow``, ``no_tools``, ``landmark_prior``,
``oracle``, ``ranking``, ``ranking_rules``, ``ranking_proposals``. ``workflow`` and ``no_tools`` wrap the model named by
``params.policy.backend`` (``vlm`` or ``openai``). ``oracle``, ``landmark_prior`` and the rankers
are bound to the environment they play in (pass ``env``); the model policies ignore it.
``ranking`` (trained, :mod:`urbex.agents.ranker`) and ``ranking_rules`` (hand rules,
:mod:`urbex.agents.ranking`) are the With-GT candidate-ranking baselines: their factory hands
them the scene's GT instance table (from the env's scene caches) as the candidate set, never the
query's target; ``ranking_proposals`` (Without-GT, :mod:`urbex.agents.proposals`) ranks
instance proposals clustered from the scene's points instead. ``landmark_prior`` takes the class size priors as an explicit input
(``make_policy(..., class_sizes=...)``, read once by the caller with
:func:`urbex.annotations.class_sizes.read_class_sizes`); the only files a factory reads are
fitted weights (a checkpoint, the ranker's ``models/ranker-v1.json``).

Extension point: :func:`register_policy` adds a name (tests use it to inject failing policies).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from urbex.config import POLICY_NAMES as BUILTIN_POLICY_NAMES
from urbex.tool_vocabulary import ToolName

if TYPE_CHECKING:
    from urbex.config import OpenAIParams, Params, PolicyParams, VLMParams
    from urbex.config_env import EnvParams
    from urbex.env.episode import GroundingEnv
    from urbex.env.policy import Policy
    from urbex.layout import AssetLayout

__all__ = [
    "POLICY_NAMES",
    "Backend",
    "PolicyFactory",
    "PolicyInfo",
    "PolicyMaker",
    "PolicySettings",
    "build_policy",
    "make_policy",
    "policies",
    "policy_class_sizes",
    "policy_info",
    "register_policy",
]

#: A model backend (``policy.backend``): the local VLM (a checkpoint) or an OpenAI-compatible
#: server. Each is also the name of the policy that plays the model alone.
Backend = Literal["vlm", "openai"]


@dataclass(frozen=True, slots=True, kw_only=True)
class PolicySettings:
    """What a policy factory may read: the ``policy``, ``env``, ``vlm`` and ``openai``
    sections, the candidate classes of the rankers (``eval.candidate_classes``), the layout (the
    ranker's weights) and the folder relative checkpoint paths resolve against."""

    policy: PolicyParams
    env: EnvParams
    vlm: VLMParams
    openai: OpenAIParams
    candidate_classes: list[str] | None
    layout: AssetLayout
    base_dir: Path

    @classmethod
    def of(cls, params: Params) -> PolicySettings:
        """The settings held by ``params``."""
        return cls(
            policy=params.policy,
            env=params.env,
            vlm=params.vlm,
            openai=params.openai,
            candidate_classes=params.eval.candidate_classes,
            layout=params.layout,
            base_dir=params.base_dir,
        )


class PolicyFactory(Protocol):
    """Builds a policy: ``factory(settings, *, env, checkpoint) -> Policy``."""

    def __call__(
        self, settings: PolicySettings, /, *, env: GroundingEnv | None, checkpoint: Path | None
    ) -> Policy: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class PolicyInfo:
    """What a policy needs and how it may be run: the runner, the command line, the report and
    the Dagster assets read these instead of testing the policy's name.

    Attributes
    ----------
    name : str
    factory : PolicyFactory
    parallel : bool
        Cheap to build per process and free of shared state: the runner may run scenes in a
        process pool. False for model policies (one model, sequential or batched).
    needs_env : bool
        Bound to the environment (``make_policy(..., env=...)`` is required).
    uses_class_sizes : bool
        Its factory takes ``class_sizes=`` (``{class: (dx_m, dy_m)}``); the runner reads them
        and puts them in the run fingerprint.
    model : {"vlm", "openai", "configured"} or None
        The model it plays through: the local VLM (a checkpoint), an OpenAI-compatible server,
        or whichever of the two ``policy.backend`` names (``configured``: the wrappers that
        impose or remove tools); None for the model-free policies.
    scores_with_ranker : bool
        Scores candidates with the fitted ranker (``layout.ranker_model``): the run fingerprint
        holds a hash of its weights.
    candidates : {"instances", "proposals"} or None
        Where a candidate-ranking policy takes its candidates from: the scene's ground-truth
        instance table (With-GT) or instance proposals clustered from its points (Without-GT,
        whose recall the diagnostics measure); None for the others.
    needs_ground_truth : bool
        Reads the query's target (``urbex ground`` needs ``--object-id`` for it).
    fixed_workflow : bool
        Imposes the paper's fixed tool sequence on its model (the fixed row of Table 9, paired
        with the free run of the same backend).
    """

    name: str
    factory: PolicyFactory
    parallel: bool
    needs_env: bool
    uses_class_sizes: bool = False
    model: Literal["vlm", "openai", "configured"] | None = None
    scores_with_ranker: bool = False
    candidates: Literal["instances", "proposals"] | None = None
    needs_ground_truth: bool = False
    fixed_workflow: bool = False

    @property
    def model_backed(self) -> bool:
        """Plays through a model (a local checkpoint or an endpoint): its evaluation is GPU work
        (the Dagster ``model_evaluation`` asset, pool ``gpu``)."""
        return self.model is not None

    def backend(self, configured: Backend) -> Backend | None:
        """The model backend it plays through when ``policy.backend`` is ``configured``; None for
        a model-free policy.

        >>> policy_info("workflow").backend("openai"), policy_info("vlm").backend("openai")
        ('openai', 'vlm')
        """
        return configured if self.model == "configured" else self.model

    def takes_checkpoint(self, configured: Backend) -> bool:
        """Plays a local checkpoint (the ``vlm`` section) when ``policy.backend`` is
        ``configured``."""
        return self.backend(configured) == "vlm"

    def needs_server(self, configured: Backend) -> bool:
        """Plays through an OpenAI-compatible server (the ``openai`` section) when
        ``policy.backend`` is ``configured``."""
        return self.backend(configured) == "openai"


def _oracle(s: PolicySettings, *, env: GroundingEnv | None, checkpoint: Path | None) -> Policy:

    from urbex.agents.oracle import OraclePolicy

    assert env is not None
    return OraclePolicy(env)


def _landmark_prior(
    s: PolicySettings,
    *,
    env: GroundingEnv | None,
    checkpoint: Path | None,
    class_sizes: Mapping[str, tuple[float, float]] | None = None,
) -> Policy:

    from urbex.agents.heuristics import LandmarkPriorPolicy

    assert env is not None
    sizes = s.policy.class_sizes or class_sizes  # None: CityRefer's means
    return LandmarkPriorPolicy(env, class_sizes=sizes, gap_m=s.policy.prior_gap_m)


def _ranking(s: PolicySettings, *, env: GroundingEnv | None, checkpoint: Path | None) -> Policy:

    from urbex.agents.ranker import RankerModel, RankerPolicy

    assert env is not None
    provider = env.scene_provider
    return RankerPolicy(
        env,
        model=RankerModel.load(s.layout.ranker_model),
        instances=lambda scene_id: provider(scene_id).instances,
        candidate_classes=s.candidate_classes,
    )


def _ranking_proposals(
    s: PolicySettings, *, env: GroundingEnv | None, checkpoint: Path | None
) -> Policy:

    from urbex.agents.proposals import ProposalRankerPolicy
    from urbex.agents.ranker import RankerModel

    assert env is not None
    return ProposalRankerPolicy(
        env,
        model=RankerModel.load(s.layout.ranker_model),
        scenes=env.scene_provider,
        candidate_classes=s.candidate_classes,
    )


def _ranking_rules(
    s: PolicySettings, *, env: GroundingEnv | None, checkpoint: Path | None
) -> Policy:

    from urbex.agents.ranking import RankingPolicy

    assert env is not None
    provider = env.scene_provider
    return RankingPolicy(
        env,
        instances=lambda scene_id: provider(scene_id).instances,
        candidate_classes=s.candidate_classes,
    )


def _model(
    s: PolicySettings, checkpoint: Path | None, backend: Backend, tool_names: tuple[str, ...] | None
) -> Policy:
    """The model policy of ``backend``: the OpenAI-compatible server of ``s.openai`` (shown the
    numbered marks when ``env.marks`` is on), or the local checkpoint (``checkpoint``, else
    ``vlm.checkpoint``, relative to ``s.base_dir``) with the settings of ``s.vlm``."""
    if backend == "openai":
        from urbex.agents.openai_api import OpenAIPolicy

        return OpenAIPolicy.from_params(s.openai, marks=s.env.marks.enabled, tool_names=tool_names)

    from urbex.agents.checkpoints import resolve_checkpoint
    from urbex.agents.vlm import VLMPolicy

    ckpt = resolve_checkpoint(
        s.base_dir,
        checkpoint if checkpoint is not None else s.vlm.checkpoint,
        field="vlm.checkpoint",
    )
    return VLMPolicy.from_params(s.vlm, checkpoint=ckpt, tool_names=tool_names)


def _offered(env: EnvParams) -> tuple[str, ...]:
    """``env.tools``: the schemas a model policy passes to its chat template / API."""
    return tuple(env.tools)


def _vlm(s: PolicySettings, *, env: GroundingEnv | None, checkpoint: Path | None) -> Policy:
    return _model(s, checkpoint, "vlm", _offered(s.env))


def _openai(s: PolicySettings, *, env: GroundingEnv | None, checkpoint: Path | None) -> Policy:
    return _model(s, checkpoint, "openai", _offered(s.env))


def _workflow(s: PolicySettings, *, env: GroundingEnv | None, checkpoint: Path | None) -> Policy:

    from urbex.agents.workflow import PAPER_WORKFLOW, WorkflowPolicy

    inner = _model(s, checkpoint, s.policy.backend, _offered(s.env))
    steps = tuple(t for t in PAPER_WORKFLOW if t == ToolName.ANSWER or t in s.env.tools)
    return WorkflowPolicy(
        inner,
        steps=steps,
        max_turns=s.env.max_turns,
        redirects=s.policy.workflow_redirects,
        marks=s.env.marks.enabled,
    )


def _no_tools(s: PolicySettings, *, env: GroundingEnv | None, checkpoint: Path | None) -> Policy:

    from urbex.agents.heuristics import no_tools_policy

    inner = _model(s, checkpoint, s.policy.backend, ())
    return no_tools_policy(inner, max_turns=s.env.max_turns, redirects=s.policy.workflow_redirects)


_REGISTRY: dict[str, PolicyInfo] = {
    i.name: i
    for i in (
        PolicyInfo(name="vlm", factory=_vlm, parallel=False, needs_env=False, model="vlm"),
        PolicyInfo(name="openai", factory=_openai, parallel=False, needs_env=False, model="openai"),
        PolicyInfo(
            name="workflow",
            factory=_workflow,
            parallel=False,
            needs_env=False,
            model="configured",
            fixed_workflow=True,
        ),
        PolicyInfo(
            name="no_tools", factory=_no_tools, parallel=False, needs_env=False, model="configured"
        ),
        PolicyInfo(
            name="landmark_prior",
            factory=_landmark_prior,
            parallel=True,
            needs_env=True,
            uses_class_sizes=True,
        ),
        PolicyInfo(
            name="oracle", factory=_oracle, parallel=True, needs_env=True, needs_ground_truth=True
        ),
        PolicyInfo(
            name="ranking",
            factory=_ranking,
            parallel=True,
            needs_env=True,
            scores_with_ranker=True,
            candidates="instances",
        ),
        PolicyInfo(
            name="ranking_rules",
            factory=_ranking_rules,
            parallel=True,
            needs_env=True,
            candidates="instances",
        ),
        PolicyInfo(
            name="ranking_proposals",
            factory=_ranking_proposals,
            parallel=True,
            needs_env=True,
            scores_with_ranker=True,
            candidates="proposals",
        ),
    )
}

#: The built-in policy names (:data:`urbex.config.POLICY_NAMES`, which the command line reads).
POLICY_NAMES: tuple[str, ...] = tuple(_REGISTRY)
if POLICY_NAMES != BUILTIN_POLICY_NAMES:  # pragma: no cover  # a policy added in one place only
    raise RuntimeError(
        f"urbex.config.POLICY_NAMES {BUILTIN_POLICY_NAMES} != the registry's {POLICY_NAMES}"
    )


def register_policy(
    name: str,
    factory: PolicyFactory | Callable[..., Policy],
    *,
    parallel: bool = False,
    needs_env: bool = False,
    uses_class_sizes: bool = False,
    model: Literal["vlm", "openai", "configured"] | None = None,
    replace: bool = False,
) -> None:
    """Add a policy name (process-local: pool workers started by *spawn* do not see it).

    The flags are those of :class:`PolicyInfo`; with ``uses_class_sizes`` the factory is called
    with ``class_sizes=``.
    """
    if name in _REGISTRY and not replace:
        raise ValueError(f"policy {name!r} is already registered; pass replace=True to override")
    _REGISTRY[name] = PolicyInfo(
        name=name,
        factory=factory,  # type: ignore[arg-type]
        parallel=parallel,
        needs_env=needs_env,
        uses_class_sizes=uses_class_sizes,
        model=model,
    )


def policy_info(name: str) -> PolicyInfo:
    """The :class:`PolicyInfo` of ``name``.

    Raises
    ------
    ValueError
        Unknown name (the message lists the known ones).
    """
    if name not in _REGISTRY:
        raise ValueError(f"policy: expected one of {sorted(_REGISTRY)}, got {name!r}")
    return _REGISTRY[name]


def policies(where: Callable[[PolicyInfo], bool]) -> tuple[str, ...]:
    """The registered names whose :class:`PolicyInfo` satisfies ``where``, in registration order.

    >>> policies(lambda i: i.candidates == "proposals")
    ('ranking_proposals',)
    """
    return tuple(n for n, i in _REGISTRY.items() if where(i))


def policy_class_sizes(
    name: str, policy: PolicyParams, lay: AssetLayout
) -> dict[str, tuple[float, float]] | None:
    """The class size priors ``name`` takes (``class_sizes=`` of :func:`make_policy`), read
    once from the splits stage's file under ``lay``; None when it takes none or
    ``policy.class_sizes`` overrides them (the override is in the params)."""
    if not policy_info(name).uses_class_sizes or policy.class_sizes:
        return None

    from urbex.annotations.class_sizes import read_class_sizes

    return read_class_sizes(lay.root)


def make_policy(
    name: str,
    params: Params,
    *,
    env: GroundingEnv | None = None,
    checkpoint: str | Path | None = None,
    class_sizes: Mapping[str, tuple[float, float]] | None = None,
    **_: Any,
) -> Policy:
    """Build the policy ``name`` from ``params``.

    Parameters
    ----------
    name
        One of :data:`POLICY_NAMES` (or a registered name).
    params
        All parameters (``policy``, ``vlm``, ``openai``, ``env`` sections).
    env
        The environment, required by ``oracle``, ``landmark_prior`` and ``ranking``.
    checkpoint
        Local checkpoint directory for ``vlm`` (and ``workflow``/``no_tools`` on the vlm
        backend); overrides ``params.vlm.checkpoint``.
    class_sizes
        ``{class: (dx_m, dy_m)}`` box-size priors, world metres, for the policies that use them
        (``landmark_prior``): the train split's means from
        :func:`urbex.annotations.class_sizes.read_class_sizes`. ``params.policy.class_sizes``
        overrides them; None (and no override): CityRefer's means.

    Raises
    ------
    ValueError
        Unknown name, or ``env`` missing for an environment-bound policy.
    urbex.errors.PolicyError
        The model backend cannot be set up (no checkpoint, unreadable checkpoint).
    """
    ckpt = None if checkpoint is None else Path(checkpoint)
    maker = PolicyMaker(
        name=name, settings=PolicySettings.of(params), checkpoint=ckpt, class_sizes=class_sizes
    )
    return maker(env)


@dataclass(frozen=True, slots=True, kw_only=True)
class PolicyMaker:
    """How a run's players build its policy (``maker(env)``: :func:`build_policy` with these
    arguments): one value a worker process can receive and call in its own environment.

    Attributes
    ----------
    name : str
        The policy's name.
    settings : PolicySettings
        What its factory reads.
    checkpoint : Path or None
        The local checkpoint, for a policy that takes one (relative: against
        ``settings.base_dir``).
    class_sizes : mapping or None
        ``{class: (dx_m, dy_m)}`` for a policy that takes them.
    """

    name: str
    settings: PolicySettings
    checkpoint: Path | None = None
    class_sizes: Mapping[str, tuple[float, float]] | None = None

    def __call__(self, env: GroundingEnv | None) -> Policy:
        """The policy, bound to ``env`` where it needs one."""
        return build_policy(
            self.name,
            self.settings,
            env=env,
            checkpoint=self.checkpoint,
            class_sizes=self.class_sizes,
        )


def build_policy(
    name: str,
    settings: PolicySettings,
    *,
    env: GroundingEnv | None = None,
    checkpoint: str | Path | None = None,
    class_sizes: Mapping[str, tuple[float, float]] | None = None,
) -> Policy:
    """:func:`make_policy` from the sections a factory reads (:class:`PolicySettings`) rather
    than the whole params: what the evaluation's players call. Same arguments and errors."""
    info = policy_info(name)
    if info.needs_env and env is None:
        raise ValueError(f"policy {name!r} is bound to an environment: pass env=GroundingEnv(...)")
    ckpt = None if checkpoint is None else Path(checkpoint)
    inputs: dict[str, Any] = {"class_sizes": class_sizes} if info.uses_class_sizes else {}
    return info.factory(settings, env=env, checkpoint=ckpt, **inputs)
