"""urbex/Grounding-v0: Gymnasium's own checker, the spaces, seeding, rendering, bad input."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

gymnasium = pytest.importorskip("gymnasium")

import urbex  # noqa: E402,F401  (registers urbex/Grounding-v0)
from tests.fixtures.city import build_eval_project  # noqa: E402
from urbex.config import Params  # noqa: E402
from urbex.errors import AnnotationError, CacheError, ConfigError  # noqa: E402

ENV = {"global_view_size": [64, 48], "zoom_size": [40, 40], "oblique_size": [32, 32]}


@pytest.fixture(scope="module")
def params(tmp_path_factory) -> Params:
    assets = build_eval_project(tmp_path_factory.mktemp("gym"))
    return Params(paths={"assets": assets}, env=ENV)


def _make(params: Params, **kw):
    return gymnasium.make("urbex/Grounding-v0", split="train", params=params, **kw)


def test_grounding_env_passes_gymnasium_s_check_env(params):
    from gymnasium.utils.env_checker import check_env

    env = _make(params, render_mode="rgb_array")
    check_env(env.unwrapped, skip_render_check=False)
    env.close()


def test_grounding_env_observation_is_in_the_declared_spaces(params):
    env = _make(params)
    obs, info = env.reset(seed=3)
    space = env.observation_space
    assert space.contains(obs)
    assert space["image"].shape == (48, 64, 3) and space["image"].dtype == np.uint8
    assert obs["view_id"] == "global" and obs["turn"] == 0 and obs["turns_left"] == 8
    assert obs["image"].any() and "query_id" in info
    obs, reward, terminated, truncated, info = env.step("no tool call here")
    assert space.contains(obs) and isinstance(reward, float)
    assert (terminated, truncated) == (False, False)
    assert obs["turn"] == 1 and obs["turns_left"] == 7
    assert obs["view_id"] == "" and not obs["image"].any()  # an invalid turn makes no view
    assert not info["step"].valid


def test_grounding_env_same_seed_same_query_and_query_id_option(params):
    env = _make(params)
    _, a = env.reset(seed=11)
    _, b = env.reset(seed=11)
    assert a["query_id"] == b["query_id"]
    _, c = env.reset(options={"query_id": a["query_id"]})
    assert c["query_id"] == a["query_id"]
    with pytest.raises(ValueError, match="not a query of 'train'"):
        env.reset(options={"query_id": "no-such-query"})


def test_grounding_env_oracle_episode_renders_the_trajectory_picture(params):
    from urbex.agents.registry import make_policy
    from urbex.env.play import play_episode

    env = _make(params, render_mode="rgb_array")
    env.reset(seed=0)
    inner = env.unwrapped.inner
    query = inner.query
    policy = make_policy("oracle", params, env=inner)
    traj = play_episode(inner, policy, query, seed=0)  # plays the wrapped env to the end
    assert traj.outcome.answered
    picture = env.render()
    assert picture.dtype == np.uint8 and picture.ndim == 3 and picture.shape[2] == 3
    assert picture.shape[0] > 48 and picture.shape[1] > 64


def test_grounding_env_rejects_an_action_that_is_not_a_string(params):
    env = _make(params)
    env.reset(seed=0)
    with pytest.raises(TypeError, match="expected a str"):
        env.step(42)


def test_grounding_env_unknown_split_is_a_one_line_error_listing_the_splits(params):
    with pytest.raises(ConfigError, match="unknown split 'dev'; splits: train, val") as e:
        gymnasium.make("urbex/Grounding-v0", split="dev", params=params)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize(
    ("build", "error", "stage"),
    [
        ("nothing", CacheError, r"stage `cache` is not built; build it with `urbex synth`"),
        ("scenes", AnnotationError, r"stage `splits` is not built; build it with `urbex splits`"),
    ],
)
def test_grounding_env_on_unbuilt_assets_names_the_stage_and_command(
    params, tmp_path, build, error, stage
):
    import shutil

    assets = tmp_path / "assets"
    if build == "scenes":
        shutil.copytree(params.layout.scenes, assets / "scenes")
    with pytest.raises(error, match=stage) as e:
        gymnasium.make("urbex/Grounding-v0", assets=assets, split="val", params=params)
    assert "\n" not in str(e.value)


def test_grounding_env_reads_a_params_file(params, tmp_path):
    p = tmp_path / "params.yaml"
    p.write_text("env:\n  max_turns: 3\n")
    env = gymnasium.make(
        "urbex/Grounding-v0", assets=Path(params.paths.assets), split="train", params=p
    )
    obs, _ = env.reset(seed=0)
    assert obs["turns_left"] == 3
