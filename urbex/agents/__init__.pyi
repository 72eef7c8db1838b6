"""The exports of :mod:`urbex.agents`: type checkers read them here, and ``lazy_loader`` loads each
from its submodule on first use."""

from .heuristics import LandmarkPriorPolicy
from .openai_api import OpenAIPolicy
from .oracle import OraclePolicy
from .registry import POLICY_NAMES, make_policy, policy_info, register_policy
from .vlm import VLMPolicy
from .workflow import WorkflowPolicy

__all__ = [
    "POLICY_NAMES",
    "LandmarkPriorPolicy",
    "OpenAIPolicy",
    "OraclePolicy",
    "VLMPolicy",
    "WorkflowPolicy",
    "make_policy",
    "policy_info",
    "register_policy",
]
