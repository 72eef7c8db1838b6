"""Env test fixtures (see envfixtures.py)."""

from tests.env.envfixtures import city, env, synth_city  # noqa: F401
