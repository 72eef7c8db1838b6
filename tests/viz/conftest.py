"""Viz test fixtures: the env tests' toy city (see tests/env/envfixtures.py)."""

from tests.env.envfixtures import city, env  # noqa: F401
