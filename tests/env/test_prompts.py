"""The episode's prompts (urbex.env.prompts)."""

from __future__ import annotations

from urbex.env.prompts import system_prompt


def test_system_prompt_has_paper_parts():
    p = system_prompt()
    for part in (
        "## Tools",
        "## Coordinates",
        "## Actions",
        "<tool_call>",
        "<answer>",
        "0 to 1000",
        "oblique",
    ):
        assert part in p
    assert "<tools>" in system_prompt(include_tool_schemas=True)
