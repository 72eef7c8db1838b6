"""The interactive grounding environment: views, tools, action protocol, episodes, rewards.

Heavy dependencies (scene caches, trl, PIL) are imported lazily inside functions.
"""

from typing import TYPE_CHECKING

from urbex.lazy import lazy_exports

if TYPE_CHECKING:
    from urbex.env.episode import GroundingEnv, make_global_view
    from urbex.env.prompts import system_prompt, user_prompt
    from urbex.env.protocol import Answer, Invalid, ToolCall, parse_action
    from urbex.env.records import EpisodeOutcome, PointCounts, Step
    from urbex.env.scenes import CachedSceneProvider
    from urbex.env.tools import TOOLS, openai_tool_schemas
    from urbex.env.views import EpisodeView, ViewRegistry

__all__ = [
    "TOOLS",
    "Answer",
    "CachedSceneProvider",
    "EpisodeOutcome",
    "EpisodeView",
    "GroundingEnv",
    "Invalid",
    "PointCounts",
    "Step",
    "ToolCall",
    "ViewRegistry",
    "make_global_view",
    "openai_tool_schemas",
    "parse_action",
    "system_prompt",
    "user_prompt",
]

__getattr__, __dir__ = lazy_exports(__name__, __file__)
