"""The construction seam: a World from params, and environments over it."""

from __future__ import annotations

import pytest

from tests.fixtures.city import build_toy_project
from urbex.config import Params
from urbex.env.episode import GroundingEnv
from urbex.env.world import World
from urbex.errors import LandmarkError


@pytest.fixture(scope="module")
def assets(tmp_path_factory):
    return build_toy_project(tmp_path_factory.mktemp("world"))


def test_world_from_params_opens_scenes_and_landmarks(assets):
    w = World.from_params(Params(paths={"assets": assets}))
    assert w.landmarks is not None and w.landmarks.table.height > 0
    env = w.env()
    assert isinstance(env, GroundingEnv)
    assert w.scenes("toy_block_0").scene_id == "toy_block_0"
    assert w.env() is not env  # a new environment each call, over the same scenes


def test_world_env_landmarks_override_and_none(assets):
    w = World.from_params(Params(paths={"assets": assets}))
    assert w.env().landmarks is w.landmarks
    assert w.env(landmarks=None).landmarks is None


def test_world_without_landmarks_plays_without_unless_required(tmp_path, assets):
    params = Params(paths={"assets": tmp_path})  # no landmarks/ there
    assert World.from_params(params, scenes_dir=assets / "scenes").landmarks is None
    with pytest.raises(LandmarkError, match="build them with `urbex landmarks`"):
        World.from_params(params, require_landmarks=True)
