"""Sampling a plan into points: density, materials, instances, reproducibility."""

from __future__ import annotations

import numpy as np
import pytest

from urbex.synth.plan import plan_city
from urbex.synth.sampling import KIND_NAMES, KIND_TO_SEMANTIC, sample_plan


@pytest.fixture(scope="module")
def plan():
    return plan_city(np.random.default_rng(0), 60.0)


def test_sample_plan_same_rng_same_points(plan):
    a = sample_plan(np.random.default_rng(1), plan, 2.0)
    b = sample_plan(np.random.default_rng(1), plan, 2.0)
    np.testing.assert_array_equal(a.xyz, b.xyz)
    np.testing.assert_array_equal(a.instance, b.instance)
    c = sample_plan(np.random.default_rng(2), plan, 2.0)
    assert not np.array_equal(a.xyz[:100], c.xyz[:100])


def test_sample_plan_arrays_are_aligned_and_typed(plan):
    s = sample_plan(np.random.default_rng(1), plan, 2.0)
    n = len(s.xyz)
    assert s.xyz.dtype == np.float32 and s.xyz.shape == (n, 3)
    assert s.rgb.dtype == np.uint8 and s.rgb.shape == (n, 3)
    assert s.kind.dtype == np.uint8 and s.kind.shape == (n,) and s.kind.max() < len(KIND_NAMES)
    assert s.instance.dtype == np.int32 and s.instance.shape == (n,)


def test_sample_plan_density_sets_the_ground_point_count(plan):
    lo = sample_plan(np.random.default_rng(1), plan, 1.0)
    hi = sample_plan(np.random.default_rng(1), plan, 4.0)
    assert len(lo.xyz) >= 60.0 * 60.0 * 1.0 * 0.9  # at least the horizontal surface
    assert 3.0 < len(hi.xyz) / len(lo.xyz) < 5.0


def test_sample_plan_points_lie_in_the_block_and_cover_every_instance(plan):
    s = sample_plan(np.random.default_rng(1), plan, 2.0)
    assert s.xyz[:, 0].min() >= -0.5 and s.xyz[:, 0].max() <= 60.5
    assert s.xyz[:, 1].min() >= -0.5 and s.xyz[:, 1].max() <= 60.5
    ids = set(np.unique(s.instance).tolist()) - {-1}
    assert ids == set(range(plan.n_instances))
    cars = s.instance[np.isin(s.instance, plan.car_instance)]
    kinds = {KIND_NAMES[k] for k in np.unique(s.kind[np.isin(s.instance, cars)])}
    assert kinds <= {"car", "car glass"} and "car" in kinds


@pytest.mark.parametrize("scheme", sorted(KIND_TO_SEMANTIC))
def test_every_kind_has_a_semantic_id(scheme):
    assert KIND_TO_SEMANTIC[scheme].shape == (len(KIND_NAMES),)
    assert KIND_TO_SEMANTIC[scheme].dtype == np.int32


@pytest.mark.parametrize("density", [0.0, -1.0])
def test_sample_plan_non_positive_density_raises(plan, density):
    with pytest.raises(ValueError, match="density: expected > 0"):
        sample_plan(np.random.default_rng(0), plan, density)
