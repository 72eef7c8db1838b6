"""The per-scene marks cache (:mod:`urbex.env.scene_marks`)."""

from __future__ import annotations

from urbex.config import EnvParams
from urbex.config_env import MarksParams
from urbex.env.scene_marks import MARK_CACHE, SceneMarksCache
from urbex.env.views import make_global_view


def test_a_scenes_marks_are_computed_once_and_the_oldest_are_dropped(city):
    cache, index, _ = city
    params = MarksParams(enabled=True, describe="attributes")
    sizes = EnvParams(global_view_size=(64, 64))
    glob = make_global_view(cache, sizes)
    kept = SceneMarksCache()
    first = kept.get(cache.scene_id, cache, glob, landmarks=index, params=params)
    assert kept.get(cache.scene_id, cache, glob, landmarks=index, params=params) is first
    props, words, _, marked, numbered = first
    assert props is cache.proposals and words and marked.marks and numbered == {}
    others = [make_global_view(cache, sizes) for _ in range(MARK_CACHE)]
    for g in others:  # eight newer global views push the first out
        kept.get(cache.scene_id, cache, g, landmarks=index, params=params)
    assert kept.get(cache.scene_id, cache, glob, landmarks=index, params=params) is not first
