"""Policies that act in the grounding environment (``urbex.env``).

Every policy implements :class:`~urbex.env.policy.Policy` (most by subclassing
:class:`~urbex.env.policy.PolicyBase`): ``act(messages, images) -> str``, one assistant turn of
raw text, plus the episode hooks the loop (:func:`urbex.env.play.play_episode`) calls.
"""

from typing import TYPE_CHECKING

from urbex.lazy import lazy_exports

if TYPE_CHECKING:
    from urbex.agents.heuristics import LandmarkPriorPolicy
    from urbex.agents.openai_api import OpenAIPolicy
    from urbex.agents.oracle import OraclePolicy
    from urbex.agents.registry import POLICY_NAMES, make_policy, policy_info, register_policy
    from urbex.agents.vlm import VLMPolicy
    from urbex.agents.workflow import WorkflowPolicy
    from urbex.env.policy import Policy, PolicyBase

__all__ = [
    "POLICY_NAMES",
    "LandmarkPriorPolicy",
    "OpenAIPolicy",
    "OraclePolicy",
    "Policy",
    "PolicyBase",
    "VLMPolicy",
    "WorkflowPolicy",
    "make_policy",
    "policy_info",
    "register_policy",
]

__getattr__, __dir__ = lazy_exports(__name__, __file__)
