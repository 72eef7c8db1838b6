"""Eval test fixtures: reuse the environment fixtures of tests/env (envfixtures.py)."""

from tests.env.envfixtures import city, env  # noqa: F401
