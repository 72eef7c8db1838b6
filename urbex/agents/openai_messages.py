"""The episode's conversation as OpenAI chat messages, and an OpenAI reply as protocol text.

The two directions of :class:`urbex.agents.openai_api.OpenAIPolicy` (its module docstring
describes the mapping): :func:`to_openai_messages` (images as base64 data URLs, one
``<tool_call>`` answered by a ``tool`` message as a ``tool_calls`` entry) and
:func:`from_openai_message` (a function call back to ``<tool_call>`` / ``<answer>`` text).
Pure: no I/O, no HTTP.
"""

from __future__ import annotations

import base64
import io
import json
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from urbex.tool_vocabulary import ToolName

if TYPE_CHECKING:
    from PIL import Image

__all__ = ["from_openai_message", "image_data_url", "to_openai_messages"]

_TOOL_CALL_RE = re.compile(r"<tool_call>(.*?)</tool_call>", re.S)


def image_data_url(image: Image.Image, *, fmt: str = "png") -> str:
    """A ``data:image/...;base64,...`` URL of a PIL image (RGB)."""
    buf = io.BytesIO()
    im = image.convert("RGB") if image.mode != "RGB" else image
    if fmt == "jpeg":
        im.save(buf, format="JPEG", quality=90)
    elif fmt == "png":
        im.save(buf, format="PNG", compress_level=1)
    else:
        raise ValueError(f"fmt: expected 'png' or 'jpeg', got {fmt!r}")
    return f"data:image/{fmt};base64,{base64.b64encode(buf.getvalue()).decode('ascii')}"


def _single_tool_call(text: str) -> tuple[str, dict[str, Any], str] | None:
    """``(name, arguments, text outside the tag)`` when ``text`` holds exactly one parseable call."""
    found = _TOOL_CALL_RE.findall(text)
    if len(found) != 1 or "<answer>" in text:
        return None
    try:
        obj = json.loads(found[0])
    except ValueError:
        return None
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
        return None
    args = obj.get("arguments", {})
    if not isinstance(args, dict):
        return None
    outside = _TOOL_CALL_RE.sub("", text).strip()
    return obj["name"], args, outside


def to_openai_messages(
    messages: list[dict[str, Any]],
    images: list[Image.Image],
    *,
    image_format: str = "png",
    data_url: Callable[[Image.Image], str] | None = None,
) -> list[dict[str, Any]]:
    """Convert the episode conversation to OpenAI chat messages (see the module docstring).

    Parameters
    ----------
    messages
        ``{"role", "content": str | [{"type": "image"} | {"type": "text", "text": ...}]}``.
    images
        PIL images in the order of the ``{"type": "image"}`` placeholders.
    image_format
        ``png`` or ``jpeg`` (of :func:`image_data_url`).
    data_url
        Encodes one image (default :func:`image_data_url` in ``image_format``); the policy
        passes a cached one, since every turn resends the whole conversation.

    Raises
    ------
    ValueError
        The placeholders and ``images`` disagree in number.
    """
    n_placeholders = sum(
        1
        for m in messages
        if isinstance(m.get("content"), list)
        for part in m["content"]
        if isinstance(part, dict) and part.get("type") == "image"
    )
    if n_placeholders != len(images):
        raise ValueError(
            f"images: the messages hold {n_placeholders} image placeholders, got {len(images)} images"
        )
    it = iter(images)
    encode = data_url or (lambda im: image_data_url(im, fmt=image_format))
    out: list[dict[str, Any]] = []
    pending_call: str | None = None  # id of a tool call still waiting for its response
    n_calls = 0
    for i, m in enumerate(messages):
        role = m["role"]
        text = _text_of(m)
        imgs = [encode(next(it)) for p in _parts(m) if _is_image(p)]
        if role == "assistant":
            call = _single_tool_call(text)
            # a tool call is sent as ``tool_calls`` only when its ``tool`` response follows;
            # otherwise (e.g. the workflow wrapper re-asking) as text: the API rejects a
            # ``tool_calls`` message that no ``tool`` message answers (HTTP 400)
            nxt = messages[i + 1] if i + 1 < len(messages) else None
            answered = nxt is not None and nxt.get("role") == "tool"
            if call is not None and answered:
                n_calls += 1
                pending_call = f"call_{n_calls}"
                name, args, outside = call
                out.append(
                    {
                        "role": "assistant",
                        "content": outside or None,
                        "tool_calls": [
                            {
                                "id": pending_call,
                                "type": "function",
                                "function": {"name": name, "arguments": json.dumps(args)},
                            }
                        ],
                    }
                )
            else:
                pending_call = None
                out.append({"role": "assistant", "content": text})
            continue
        if role == "tool" and pending_call is not None:
            out.append({"role": "tool", "tool_call_id": pending_call, "content": text})
            if imgs:
                out.append(
                    {
                        "role": "user",
                        "content": [
                            {"type": "text", "text": "The image(s) returned by the tool call:"},
                            *({"type": "image_url", "image_url": {"url": u}} for u in imgs),
                        ],
                    }
                )
            pending_call = None
            continue
        pending_call = None
        if role == "tool":  # the answer to a turn that called no tool: no call id to attach to
            role = "user"
        if imgs:
            blocks: list[dict[str, Any]] = [
                {"type": "image_url", "image_url": {"url": u}} for u in imgs
            ]
            if text:
                blocks.append({"type": "text", "text": text})
            out.append({"role": role, "content": blocks})
        else:
            out.append({"role": role, "content": text})
    return out


def _is_image(part: Any) -> bool:
    return isinstance(part, dict) and part.get("type") == "image"


def _parts(message: dict[str, Any]) -> list[Any]:
    content = message.get("content")
    return [content] if isinstance(content, str) else list(content or [])


def _text_of(message: dict[str, Any]) -> str:
    return "".join(
        p if isinstance(p, str) else p.get("text", "") for p in _parts(message) if not _is_image(p)
    )


def from_openai_message(message: dict[str, Any]) -> str:
    """The environment's text protocol for an OpenAI reply message.

    >>> from_openai_message({"content": None, "tool_calls": [{"function": {
    ...     "name": "zoom_in", "arguments": '{"view_id": "global", "bbox_2d": [1, 2, 3, 4]}'}}]})
    '<tool_call>{"name": "zoom_in", "arguments": {"view_id": "global", "bbox_2d": [1, 2, 3, 4]}}</tool_call>'
    >>> from_openai_message({"content": "<answer>{}</answer>"})
    '<answer>{}</answer>'

    The text is UTF-8: a lone surrogate the server sent (``"\\ud800"`` in its JSON) is written
    back as its escape, so the turn can be recorded and an action holding one is invalid.
    """
    text = message.get("content") or ""
    if isinstance(text, list):  # some servers return content parts
        text = "".join(p.get("text", "") for p in text if isinstance(p, dict))
    actions = []
    for call in message.get("tool_calls") or []:
        fn = call.get("function") or {}
        name = fn.get("name")
        raw = fn.get("arguments")
        try:
            args = json.loads(raw) if isinstance(raw, str) else (raw or {})
        except (ValueError, RecursionError):  # not JSON, or nested past json's recursion
            args = raw  # the environment reports the malformed arguments to the agent
        try:
            if name == ToolName.ANSWER and isinstance(args, dict):
                actions.append(f"<answer>{json.dumps(args)}</answer>")
            else:
                actions.append(
                    f"<tool_call>{json.dumps({'name': name, 'arguments': args})}</tool_call>"
                )
        except (ValueError, TypeError, RecursionError):  # parsed arguments nested too deeply
            bad = {
                "name": name if isinstance(name, str) else None,
                "arguments": "(arguments nested too deeply to write)",
            }
            actions.append(f"<tool_call>{json.dumps(bad)}</tool_call>")
    return _LONE_SURROGATE.sub(_escape, "\n".join(s for s in (text.strip(), *actions) if s))


#: A lone surrogate: what JSON's ``"\ud800"`` decodes to, a character no UTF-8 file can hold.
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _escape(m: re.Match[str]) -> str:
    """A lone surrogate as its JSON escape (ASCII): recordable, and inside an action's JSON the
    environment reads it back and rejects the action (:func:`urbex.env.protocol.parse_action`)."""
    return f"\\u{ord(m.group()):04x}"
