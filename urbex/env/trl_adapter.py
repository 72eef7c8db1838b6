"""The grounding environment as a trl ``GRPOTrainer(environment_factory=...)`` class.

trl 1.16 (``trainer/grpo_trainer.py``) creates one instance per rollout with a zero-argument
factory, calls ``reset(**row)`` with every dataset column, exposes every other public function
of the class as a tool (schema from type hints + Google docstring via transformers'
``get_json_schema``), feeds a tool's return value back as the tool message (a list of content
blocks may carry images), and calls ``get_reward()`` once per finished rollout as an extra
reward source. The final answer is the last assistant message (no tool call): it is scored by
:func:`answer_reward`, passed in ``reward_funcs``. Per rollout::

    get_reward()  = Σ rewards of the tool turns (zoom/oblique shaping, invalid penalties)
    answer_reward = reward of the final turn (terminal reward; + invalid penalty if it is not a
                    valid answer)

so their sum is :attr:`GroundingEnv.episode_return`. Every tool call counts as one turn; set
``max_tool_calling_iterations = params.env.max_turns - 1``.

Build the dataset with :func:`grpo_rows` (conversational ``prompt`` + ``image`` = global view +
the query fields ``reset`` needs; never apply the chat template beforehand).
"""

from __future__ import annotations

import copy
import functools
import inspect
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from urbex.config import EnvParams, env_params
from urbex.env.episode import GroundingEnv, make_global_view
from urbex.env.prompts import system_prompt, user_prompt
from urbex.env.protocol import (
    Invalid,
    ToolCall,
    parse_action,
    validate_tool_call,
)
from urbex.env.scenes import SceneProvider
from urbex.env.tools import TOOLS
from urbex.query import Query
from urbex.tool_vocabulary import ENV_TOOLS, ToolName

__all__ = [
    "EpisodeObserver",
    "RolloutRules",
    "answer_reward",
    "grpo_rows",
    "make_environment_class",
    "template_tool_schemas",
]

_OVER = "Error: the episode is over (turn budget used up); no more tool calls are accepted."


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content if isinstance(b, dict))
    return ""


def _final_text(completion: Any) -> str:
    """The last assistant message's text of a trl completion (list of messages or str)."""
    if isinstance(completion, str):
        return completion
    for msg in reversed(list(completion or [])):
        if isinstance(msg, dict) and msg.get("role") == "assistant":
            return _content_text(msg.get("content"))
    return ""


class EpisodeObserver(Protocol):
    """Hooks on every rollout environment of a class (:func:`make_environment_class`): what a
    trainer counts, times and logs, without subclassing the environment."""

    def on_reset(self) -> None:
        """A rollout started (``reset``)."""
        ...

    def on_end(self, env: GroundingEnv, env_s: float) -> None:
        """The final message was scored; ``env_s``: the rollout's seconds in the environment
        (reset, tool calls, the answer). The episode's records (``env.steps``, ``env.outcome``)
        hold everything it did: its tool calls are counted from them
        (:func:`urbex.env.trajectory.tool_counts`)."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class RolloutRules:
    """How a rollout is paid in GRPO (``train.tool_bonus``, ``train.mask_budget``).

    Attributes
    ----------
    tool_bonus : {"always", "on_hit"}
        ``on_hit``: the tools' positive shaping (zoom progress, oblique overlap) counts only
        when the final answer hits (BEV IoU ≥ ``hit_iou``; DeepEyes pays its tool bonus only
        for right answers); negative shaping and invalid penalties always count.
    mask_budget : bool
        A rollout that ran out of turns is unscorable (every reward source returns None: trl
        leaves it out of its group's baseline and gives it no advantage; Mini-o3's over-turn
        masking) instead of paying the budget's penalty.
    hit_iou : float
        The BEV IoU of a hit.
    """

    tool_bonus: Literal["always", "on_hit"] = "always"
    mask_budget: bool = False
    hit_iou: float = 0.5

    def __post_init__(self) -> None:
        if self.tool_bonus not in ("always", "on_hit"):
            raise ValueError(f"tool_bonus: expected 'always' or 'on_hit', got {self.tool_bonus!r}")


class _Base:
    """Shared machinery; the public tool methods are added by :func:`make_environment_class`."""

    _params: EnvParams
    _scene_provider: SceneProvider
    _landmarks: Any
    _observer: EpisodeObserver | None = None
    _rules: RolloutRules = RolloutRules()

    def __init__(self) -> None:
        self._env = GroundingEnv(self._params, self._scene_provider, self._landmarks)
        self._tool_reward = 0.0
        self._tool_bonus = 0.0  # the positive part of _tool_reward
        self._env_s = 0.0

    def _reset(self, row: dict[str, Any]) -> None:
        if self._observer is not None:
            self._observer.on_reset()
        t0 = time.perf_counter()
        self._env.reset(query=Query.from_row(row))
        self._tool_reward = self._tool_bonus = 0.0
        self._env_s = time.perf_counter() - t0

    @property
    def env(self) -> GroundingEnv:
        """The wrapped :class:`GroundingEnv` (its log, views and final info)."""
        return self._env

    def _run(self, name: str, arguments: dict[str, Any]) -> str | list[dict[str, Any]]:
        t0 = time.perf_counter()
        try:
            return self._step_tool(name, arguments)
        finally:
            self._env_s += time.perf_counter() - t0

    def _step_tool(self, name: str, arguments: dict[str, Any]) -> str | list[dict[str, Any]]:
        env = self._env
        if env.done:
            return _OVER
        action = validate_tool_call(
            name,
            arguments,
            known_views=env.views.ids,
            oblique_views=env.views.oblique_ids,
            default_elevation_deg=self._params.oblique_elevation_deg,
            offered=self._params.tools,
        )
        obs, reward, _, _, _ = env.step_action(action)
        self._tool_reward += reward
        self._tool_bonus += max(reward, 0.0)
        if not obs["images"]:
            return obs["text"]
        return [
            *({"type": "image", "image": im} for im in obs["images"]),
            {"type": "text", "text": obs["text"]},
        ]

    def _masked(self) -> bool:
        """The rollout is unscorable (``mask_budget`` and it ran out of turns)."""
        o = self._env.outcome
        return self._rules.mask_budget and o is not None and o.stop_reason == "budget"

    def _tool_reward_paid(self) -> float | None:
        """The tool turns' reward as :class:`RolloutRules` pay it (None: masked)."""
        if self._masked():
            return None
        o = self._env.outcome
        hit = o is not None and o.iou_bev >= self._rules.hit_iou
        if self._rules.tool_bonus == "on_hit" and not hit:
            return float(self._tool_reward - self._tool_bonus)
        return float(self._tool_reward)

    def _finish(self, text: str) -> float:
        """Score the final assistant message; returns the reward of that last turn."""
        t0 = time.perf_counter()
        reward = self._score_final(text)
        self._env_s += time.perf_counter() - t0
        if self._observer is not None:
            self._observer.on_end(self._env, self._env_s)
        return reward

    def _score_final(self, text: str) -> float:
        env = self._env
        if env.done:
            return 0.0
        action = parse_action(
            text,
            known_views=env.views.ids,
            oblique_views=env.views.oblique_ids,
            default_elevation_deg=self._params.oblique_elevation_deg,
            marks_shown=env.marks_shown,
        )
        if isinstance(action, ToolCall):
            action = Invalid(
                reason="the last message must be an <answer>, not a tool call", tool=action.name
            )
        _, reward, _, _, _ = env.step_action(action)
        if not env.done:
            reward += env.end_without_answer()
        return float(reward)


def make_environment_class(
    params: EnvParams | None,
    scene_provider: SceneProvider,
    landmark_index: Any = None,
    *,
    observer: EpisodeObserver | None = None,
    rules: RolloutRules | None = None,
) -> type:
    """A class for ``GRPOTrainer(environment_factory=Cls)`` bound to these scenes and params.

    Parameters
    ----------
    params
        ``params.env`` (budget, fixed image sizes, reward weights).
    scene_provider
        ``scene_id → SceneCache``; shared by every instance (keep it an LRU of opened caches).
    landmark_index
        ``urbex.landmarks.LandmarkIndex`` (or None).
    observer
        Told of every rollout's reset and end (:class:`EpisodeObserver`).
    rules
        How rollouts are paid (:class:`RolloutRules`; default: every reward, always).

    Returns
    -------
    type
        Public methods: ``reset(**row)``, the tools offered (``env.tools``, of
        ``landmark_query``, ``zoom_in``, ``oblique_render``), and ``get_reward()``; ``.env`` is
        the wrapped episode.
    """
    p = env_params(params)
    default_el = float(p.oblique_elevation_deg)

    class UrbexGroundingEnv(_Base):
        _params = p
        _scene_provider = staticmethod(scene_provider)  # type: ignore[assignment]
        _landmarks = landmark_index
        _observer = observer
        _rules = rules or RolloutRules()

        def reset(self, **row: Any) -> str | None:
            """Start an episode from a dataset row (query fields; see :class:`Query`)."""
            self._reset(row)
            return None

        def landmark_query(self, name: str, view_id: str) -> str:
            """(schema docstring set from the tool's :data:`TOOLS` entry below)"""
            out = self._run(ToolName.LANDMARK_QUERY, {"name": name, "view_id": view_id})
            return out if isinstance(out, str) else _content_text(out)

        def zoom_in(self, view_id: str, bbox_2d: list[int]) -> str | list[dict]:
            """(schema docstring set from the tool's :data:`TOOLS` entry below)"""
            return self._run(ToolName.ZOOM_IN, {"view_id": view_id, "bbox_2d": bbox_2d})

        def oblique_render(
            self,
            view_id: str,
            bbox_2d: list[int],
            azimuth_deg: float,
            elevation_deg: float = default_el,
        ) -> str | list[dict]:
            """(schema docstring set from the tool's :data:`TOOLS` entry below)"""
            return self._run(
                ToolName.OBLIQUE_RENDER,
                {
                    "view_id": view_id,
                    "bbox_2d": bbox_2d,
                    "azimuth_deg": azimuth_deg,
                    "elevation_deg": elevation_deg,
                },
            )

        def get_reward(self) -> float | None:
            """Summed reward of this rollout's tool turns (shaping and invalid penalties), as
            the rollout rules pay it (None: an unscorable rollout)."""
            return self._tool_reward_paid()

    # One definition per tool: trl reads each method's schema from its docstring, so the
    # docstrings are generated from the same arguments model the OpenAI schemas come from.
    for tool in map(str, ENV_TOOLS):  # plain strings: attribute names of the class
        if tool in p.tools:
            getattr(UrbexGroundingEnv, tool).__doc__ = TOOLS[tool].google_docstring()
            setattr(UrbexGroundingEnv, tool, _lenient(tool, getattr(UrbexGroundingEnv, tool)))
        else:  # env.tools: trl offers the public methods, so a tool not offered has none
            delattr(UrbexGroundingEnv, tool)
    return UrbexGroundingEnv


def _lenient(name: str, method: Any) -> Any:
    """``method`` (its signature, type hints and docstring: what trl renders as the schema) as a
    tool that accepts any arguments and lets the environment judge them.

    trl calls ``tool(**arguments)`` with whatever the model wrote; a missing or unknown argument
    would raise ``TypeError`` inside trl, which answers ``{'error': ...}`` without the episode
    ever seeing the turn — a free invalid call during training that costs a turn and a penalty
    at evaluation. Here every call reaches :func:`validate_tool_call`, as in the episode loop.
    """
    params = [p for p in inspect.signature(method).parameters if p != "self"]

    @functools.wraps(method)
    def tool(self: _Base, *args: Any, **kwargs: Any) -> Any:
        arguments = {**dict(zip(params, args, strict=False)), **kwargs}
        out = self._run(name, arguments)
        if name == ToolName.LANDMARK_QUERY and not isinstance(out, str):
            return _content_text(out)
        return out

    return tool


def answer_reward(
    completions: list[Any], environments: Sequence[Any] | None = None, **kwargs: Any
) -> list[float | None]:
    """trl reward function: score each rollout's final ``<answer>`` in its environment.

    Returns the reward of the final turn: the terminal reward
    ``λ_iou·IoU + λ_dist·exp(−d/τ) − λ_step·T/T_max`` (see :mod:`urbex.env.rewards`), plus the
    invalid penalty when the last message is not a valid answer. ``None`` for rollouts whose
    environment is not ours (mixed-environment training), and for rollouts the environment's
    :class:`RolloutRules` mask (``mask_budget``: out of turns).

    Examples
    --------
    >>> answer_reward(["<answer>{}</answer>"], environments=[object()])
    [None]
    """
    if environments is None:
        raise ValueError(
            "answer_reward: needs environments=[...] (pass environment_factory to GRPOTrainer)"
        )
    out: list[float | None] = []
    for comp, env in zip(completions, environments, strict=True):
        if not isinstance(env, _Base):
            out.append(None)
            continue
        reward = env._finish(_final_text(comp))
        out.append(None if env._masked() else reward)
    return out


def grpo_rows(
    queries: Iterable[Query],
    scene_provider: SceneProvider,
    params: EnvParams | None = None,
) -> list[dict[str, Any]]:
    """Dataset rows for trl: conversational ``prompt``, ``image`` (the global view, PIL, fixed
    size) and the query fields (``query_id``, ``scene_id``, ``object_id``, ``description``,
    ``target_box_2d``, ``target_box_3d`` world metres, ``class_name``) for ``reset``.

    The system prompt omits the tool schemas: trl's Qwen3-VL chat template lists them.
    """
    p = env_params(params)
    sys = system_prompt(p)
    rows = []
    cache: dict[str, Any] = {}
    env = GroundingEnv(p, scene_provider) if p.marks.enabled else None
    for q in queries:
        if q.scene_id not in cache and env is not None:  # the global view with its marks
            env.reset(query=q)
            cache[q.scene_id] = env.views["global"].image
        elif q.scene_id not in cache:
            cache[q.scene_id] = make_global_view(scene_provider(q.scene_id), p).image
        rows.append(
            {
                "prompt": [
                    {"role": "system", "content": sys},
                    {"role": "user", "content": user_prompt(q.description, max_turns=p.max_turns)},
                ],
                "image": cache[q.scene_id],
                **q.to_row(),
            }
        )
    return rows


@functools.cache
def _trl_schemas() -> tuple[dict[str, Any], ...]:
    from transformers.utils import get_json_schema

    cls = make_environment_class(None, _no_scene)
    # trl 1.16 lists an environment's tools as inspect.getmembers does (sorted by name) and
    # renders each bound method through transformers' get_json_schema
    return tuple(
        get_json_schema(getattr(cls, name))
        for name, _ in inspect.getmembers(cls, predicate=inspect.isfunction)
        if not name.startswith("_") and name not in ("reset", "get_reward")
    )


def _no_scene(scene_id: str) -> Any:
    raise LookupError(scene_id)


def template_tool_schemas(tool_names: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """The tool schemas exactly as trl's ``GRPOTrainer`` renders them into the chat template.

    trl derives an environment's tool schemas from its methods (``get_json_schema``: the
    signature and the Google docstring generated from :data:`urbex.env.tools.TOOLS`), in name
    order. The ``vlm`` policy, the SFT data and the tokenizer corpus render with these, so a
    model sees the same system prompt at evaluation, in SFT and in GRPO (tested against trl's
    own token rows in ``tests/env/test_trl_adapter.py``). :func:`urbex.env.tools.openai_tool_schemas`
    (richer: ranges, item counts) stays the schema sent to OpenAI-compatible servers.

    Parameters
    ----------
    tool_names
        Keep only these tools (default: all).

    Examples
    --------
    >>> [s["function"]["name"] for s in template_tool_schemas()]
    ['landmark_query', 'oblique_render', 'zoom_in']
    """
    keep = None if tool_names is None else set(tool_names)
    return [
        copy.deepcopy(s) for s in _trl_schemas() if keep is None or s["function"]["name"] in keep
    ]
