"""The trajectory: one played episode, as :func:`urbex.env.play.play_episode` records it.

A :class:`Trajectory` holds the query, every step (:class:`urbex.env.records.Step`), the outcome
(:class:`urbex.env.records.EpisodeOutcome`), the views the agent saw and the conversation the
policy was shown. Everything downstream is a projection of it: the evaluation's Parquet rows
(:mod:`urbex.eval.episodes`), ``urbex ground``'s files, trajectory pictures and SFT data.

Frames: as in :mod:`urbex.env.records` (``*_m`` world metres, ``*_view`` view units 0–1000).
Times are seconds of *warm online* latency (scene preparation excluded).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from urbex.tool_vocabulary import ENV_TOOLS

if TYPE_CHECKING:
    from PIL import Image

    from urbex.env.records import EpisodeOutcome, Step
    from urbex.env.views import EpisodeView
    from urbex.query import Query

__all__ = ["TOOL_NAMES", "Trajectory", "invalid_turns", "tool_counts"]

#: The tools counted per episode (``n_<tool>``), as plain strings: the names of record columns.
TOOL_NAMES: tuple[str, ...] = tuple(map(str, ENV_TOOLS))


def tool_counts(steps: Iterable[Step], *, valid_only: bool = True) -> dict[str, int]:
    """``n_<tool>``: the calls of each tool of :data:`TOOL_NAMES` among an episode's steps.

    The one count of tool calls: the evaluation's ``n_<tool>`` columns count the valid calls
    (``valid_only``, the default); the training log's ``calls_<tool>`` every call the
    environment recorded, valid or not (``valid_only=False``; an invalid turn counts for the
    tool it tried to call, when it named one).

    >>> from urbex.env.records import Step
    >>> def step(turn, tool, valid):
    ...     return Step(turn=turn, tool=tool, arguments={}, valid=valid, error=None,
    ...                 reward_shaping=0.0, reward_terminal=0.0, env_s=0.0)
    >>> from urbex.tool_vocabulary import ToolName as T
    >>> steps = [step(1, T.ZOOM_IN, True), step(2, T.ZOOM_IN, False), step(3, None, False),
    ...          step(4, T.ANSWER, True)]
    >>> tool_counts(steps)
    {'n_landmark_query': 0, 'n_zoom_in': 1, 'n_oblique_render': 0}
    >>> tool_counts(steps, valid_only=False)["n_zoom_in"]
    2
    """
    tools = [s.tool for s in steps if s.valid or not valid_only]
    return {f"n_{t}": tools.count(t) for t in TOOL_NAMES}


def invalid_turns(steps: Iterable[Step]) -> int:
    """The turns the environment rejected (an invalid final turn included)."""
    return sum(1 for s in steps if not s.valid)


@dataclass(frozen=True, slots=True, kw_only=True)
class Trajectory:
    """One played episode.

    Attributes
    ----------
    query : Query
    seed : int
        The episode seed (environment RNG and the policy's ``begin_episode``).
    steps : tuple of Step
        Every assistant turn, in order.
    outcome : EpisodeOutcome
        How it ended (``stop_reason``), the answer (view box, world boxes), rewards.
    views : tuple of EpisodeView
        Every view of the episode (``global`` first), in creation order.
    messages : tuple of dict
        The conversation as the policy saw it, ending with its last turn (system prompt, the
        query with the global view, then assistant turns and the environment's ``tool`` turns;
        see :func:`urbex.env.play.tool_message`).
    images : tuple of PIL.Image.Image
        The images of ``messages``, in placeholder order.
    reset_s : float
        Environment seconds of the reset (global view, prompt).
    latency_s : float
        Wall time of the episode: reset, every policy call and environment step.
    """

    query: Query
    seed: int
    steps: tuple[Step, ...]
    outcome: EpisodeOutcome
    views: tuple[EpisodeView, ...] = field(repr=False)
    messages: tuple[dict[str, Any], ...] = field(repr=False)
    images: tuple[Image.Image, ...] = field(repr=False)
    reset_s: float
    latency_s: float

    def __post_init__(self) -> None:
        if [s.turn for s in self.steps] != list(range(1, len(self.steps) + 1)):
            raise ValueError(
                f"Trajectory.steps: expected turns 1..{len(self.steps)} in order, got "
                f"{[s.turn for s in self.steps]}"
            )

    @property
    def env_s(self) -> float:
        """Environment seconds: reset plus every step."""
        return self.reset_s + sum(s.env_s for s in self.steps)

    @property
    def policy_s(self) -> float:
        """Policy seconds: every model call."""
        return sum(s.policy_s for s in self.steps)

    @property
    def n_invalid(self) -> int:
        """Invalid turns (:func:`invalid_turns`)."""
        return invalid_turns(self.steps)

    def tool_counts(self, *, valid_only: bool = True) -> dict[str, int]:
        """``n_<tool>`` counts of the tool calls (:func:`tool_counts`; the valid ones by
        default)."""
        return tool_counts(self.steps, valid_only=valid_only)

    def view(self, view_id: str) -> EpisodeView:
        """The view ``view_id`` (``KeyError`` naming the known ids otherwise)."""
        for v in self.views:
            if v.view_id == view_id:
                return v
        raise KeyError(
            f"view {view_id!r} not in this trajectory; views: {[v.view_id for v in self.views]}"
        )
