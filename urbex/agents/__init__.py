"""Policies that act in the grounding environment (``urbex.env``).

Every policy implements :class:`~urbex.env.policy.Policy` (most by subclassing
:class:`~urbex.env.policy.PolicyBase`): ``act(messages, images) -> str``, one assistant turn of
raw text, plus the episode hooks the loop (:func:`urbex.env.play.play_episode`) calls.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
