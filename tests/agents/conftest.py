"""Agent test fixtures: reuse the environment fixtures of tests/env (envfixtures.py)."""

from tests.env.envfixtures import city, synth_city  # noqa: F401
