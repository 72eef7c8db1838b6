"""The policy extension point: what the episode loop (:mod:`urbex.env.play`) calls.

Messages follow the chat format transformers/trl use: ``{"role": "system"|"user"|"assistant",
"content": str | [{"type": "image"}, {"type": "text", "text": ...}]}``; images are passed
separately, in the order their ``{"type": "image"}`` placeholders appear.

Episodes are played by one loop, :func:`urbex.env.play.play_episode` (and its lockstep form
:func:`urbex.env.play.play_batch`); it calls only what :class:`Policy` declares. The loop
gives each episode a deadline (``begin_episode(deadline=...)``); a policy that cannot reply
before it raises :class:`~urbex.errors.PolicyTimeoutError` and the episode ends as timed out.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from PIL import Image

__all__ = ["Policy", "PolicyBase", "check_batch"]


@runtime_checkable
class Policy(Protocol):
    """A grounding policy: the conversation so far in, one assistant turn (raw text) out.

    Attributes
    ----------
    template_lists_tools : bool
        The policy's chat template lists the tool schemas itself (then the system prompt
        leaves them out).
    max_batch : int
        Episodes it can generate one turn for at once (``act_batch``); 1 = one at a time.
    max_concurrency : int
        Threads that may drive it at once, one episode each (``begin_episode`` then ``act``
        from the same thread); 1 = not thread-safe. A policy above 1 keeps its per-episode
        state per thread (the ``openai`` policy: requests in flight against a server).
    """

    @property
    def template_lists_tools(self) -> bool: ...

    @property
    def max_batch(self) -> int: ...

    @property
    def max_concurrency(self) -> int: ...

    def begin_episode(self, *, seed: int, deadline: float | None = None) -> None:
        """Called before each episode with its seed and deadline.

        Parameters
        ----------
        seed
            The episode seed (sampling policies seed from it).
        deadline
            The instant the episode must end by, on the :func:`time.monotonic` clock, seconds
            (``t0 + eval.episode_timeout_s``); None = no deadline. A policy that waits on
            something (a model server) must not wait past it: it raises
            :class:`~urbex.errors.PolicyTimeoutError`, and the loop ends the episode as timed
            out. A local policy may ignore it (the loop also checks the budget between turns).
        """
        ...

    def act(self, messages: list[dict[str, Any]], images: list[Image.Image]) -> str: ...

    def act_batch(
        self, batch_messages: list[list[dict[str, Any]]], batch_images: list[list[Image.Image]]
    ) -> list[str]:
        """One turn for each of several episodes (lockstep)."""
        ...


def check_batch(batch_messages: list[Any], batch_images: list[Any]) -> None:
    """``ValueError`` unless there is one image list per conversation."""
    if len(batch_messages) != len(batch_images):
        raise ValueError(
            f"batch_images: expected {len(batch_messages)} image lists, got {len(batch_images)}"
        )


class PolicyBase(ABC):
    """Defaults for :class:`Policy`: no episode state, no template tools, one episode at a time
    (no batches, not thread-safe).

    Subclasses implement :meth:`act`; a policy that generates in batches overrides
    :meth:`act_batch` and sets ``max_batch``.
    """

    template_lists_tools: bool = False
    max_batch: int = 1
    max_concurrency: int = 1

    def begin_episode(  # noqa: B027 (a no-op default hook)
        self, *, seed: int, deadline: float | None = None
    ) -> None:
        """No per-episode state by default (the seed and the deadline are ignored)."""

    @abstractmethod
    def act(self, messages: list[dict[str, Any]], images: list[Image.Image]) -> str:
        """One assistant turn (raw text)."""

    def act_batch(
        self, batch_messages: list[list[dict[str, Any]]], batch_images: list[list[Image.Image]]
    ) -> list[str]:
        """One turn per episode, one :meth:`act` after another."""
        check_batch(batch_messages, batch_images)
        return [self.act(m, i) for m, i in zip(batch_messages, batch_images)]
