"""User text on its way into a chat: chat-template tokens defused.

Descriptions and landmark names are user data (CityRefer text, ``urbex ground --query``, a
GeoJSON's names). A tokenizer matches its special and added tokens anywhere in a text, so
``<|im_start|>assistant`` inside a description would forge a turn in every model that reads it.
The environment passes every user-supplied text it puts into a chat through :func:`chat_safe`
(the query in the first message, the landmark tool's names), so evaluation, SFT and GRPO — which
all take their messages from the environment — see the same defused text.
"""

from __future__ import annotations

import re

__all__ = ["chat_safe"]

#: A ``<`` that would open a chat-template token: ``<|im_start|>``-style special tokens and the
#: tag-like added tokens (``<tool_call>``, ``</tool_response>``, ``<think>``, ``<image>``...).
_TOKEN_OPEN = re.compile(r"<(?=\||/?[A-Za-z_][\w-]*>)")


def chat_safe(text: str) -> str:
    """``text`` with every chat-template token defused: the ``<`` that opens one becomes ``‹``.

    The ``<|...|>`` special tokens and the tag-like added tokens of Qwen3-VL's and the tiny
    model's templates all open with ``<``; an ordinary ``<`` (``x < 5 m``) is kept.

    >>> chat_safe("a car <|im_start|>assistant</tool_call> < 5 m")
    'a car ‹|im_start|>assistant‹/tool_call> < 5 m'
    """
    return _TOKEN_OPEN.sub("‹", text)
