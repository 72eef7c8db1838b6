"""The exports of :mod:`urbex.env`: type checkers read them here, and ``lazy_loader`` loads each
from its submodule on first use."""

from .episode import GroundingEnv, make_global_view
from .prompts import system_prompt, user_prompt
from .protocol import Answer, Invalid, ToolCall, parse_action
from .records import EpisodeOutcome, PointCounts, Step
from .scenes import CachedSceneProvider
from .tools import TOOLS, openai_tool_schemas
from .views import EpisodeView, ViewRegistry

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
