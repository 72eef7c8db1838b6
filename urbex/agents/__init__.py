"""Policies that act in the grounding environment (``urbex.env``).

Every policy implements :class:`~urbex.agents.base.Policy`: ``act(messages, images) -> str``,
one assistant turn of raw text.
"""

from urbex.agents.base import Policy, rollout
from urbex.agents.oracle import OraclePolicy

__all__ = ["OraclePolicy", "Policy", "rollout"]
