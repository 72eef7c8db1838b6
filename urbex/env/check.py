"""``check_env``: a conformance check of a grounding environment (Gymnasium's habit).

It drives the environment through its life cycle — signatures, ``reset``, tool steps, an
invalid step, the turn budget (→ ``truncated``), an answer (→ ``terminated``), stepping after
the end (→ ``RuntimeError``), and determinism under a fixed seed — and raises
:class:`EnvCheckError` naming the first broken rule, expected vs actual.
"""

from __future__ import annotations

import inspect
import json
import math
from typing import Any

import numpy as np

from urbex.env.records import EpisodeOutcome
from urbex.tool_vocabulary import ToolName

__all__ = ["EnvCheckError", "check_env"]


class EnvCheckError(AssertionError):
    """The environment breaks the contract (message: rule, expected, actual)."""


def _require(cond: bool, msg: str) -> None:
    if not cond:
        raise EnvCheckError(msg)


def _check_obs(
    obs: Any, where: str, *, n_images: int | None = None, size: tuple[int, int] | None = None
) -> None:
    from PIL import Image

    _require(
        isinstance(obs, dict), f"{where}: observation must be a dict, got {type(obs).__name__}"
    )
    _require(
        set(obs) == {"text", "images", "view_ids"},
        f"{where}: observation keys must be text/images/view_ids, got {sorted(obs)}",
    )
    _require(
        isinstance(obs["text"], str) and bool(obs["text"]),
        f"{where}: observation text must be a non-empty str",
    )
    _require(
        isinstance(obs["images"], list) and isinstance(obs["view_ids"], list),
        f"{where}: images/view_ids must be lists",
    )
    _require(
        len(obs["images"]) == len(obs["view_ids"]),
        f"{where}: one view id per image expected, got {len(obs['images'])} images, {len(obs['view_ids'])} ids",
    )
    if n_images is not None:
        _require(
            len(obs["images"]) == n_images,
            f"{where}: expected {n_images} image(s), got {len(obs['images'])}",
        )
    for im in obs["images"]:
        _require(
            isinstance(im, Image.Image) and im.mode == "RGB",
            f"{where}: images must be RGB PIL images, got {im!r}",
        )
        if size is not None:
            _require(
                im.size == tuple(size), f"{where}: image size must be {tuple(size)}, got {im.size}"
            )


def _check_step(out: Any, where: str) -> tuple[dict, float, bool, bool, dict]:
    _require(
        isinstance(out, tuple) and len(out) == 5,
        f"{where}: step must return (obs, reward, terminated, truncated, info), got {type(out).__name__} of length {len(out) if isinstance(out, tuple) else '?'}",
    )
    obs, reward, term, trunc, info = out
    _require(
        isinstance(reward, float) and math.isfinite(reward),
        f"{where}: reward must be a finite float, got {reward!r}",
    )
    _require(
        isinstance(term, bool) and isinstance(trunc, bool),
        f"{where}: terminated/truncated must be bools, got {term!r}, {trunc!r}",
    )
    _require(not (term and trunc), f"{where}: terminated and truncated cannot both be True")
    _require(isinstance(info, dict), f"{where}: info must be a dict, got {type(info).__name__}")
    return obs, reward, term, trunc, info


def _call(name: str, **arguments: Any) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


def check_env(env: Any, query: Any, *, seed: int = 0) -> dict[str, Any]:
    """Run the conformance checks on ``env`` (a :class:`~urbex.env.episode.GroundingEnv`).

    Parameters
    ----------
    env
        The environment; its budget must allow at least 3 turns.
    query
        A :class:`~urbex.query.Query` of a scene the env can open.
    seed
        Seed used for the determinism check.

    Returns
    -------
    dict
        What was checked (``{"checks": [...names...]}``), for test reports.

    Raises
    ------
    EnvCheckError
        The first rule the environment breaks.
    """
    done: list[str] = []
    p = env.params
    _require(p.max_turns >= 3, f"check_env needs max_turns >= 3, got {p.max_turns}")

    sig = inspect.signature(env.reset)
    for name in ("query", "seed", "options"):
        _require(
            name in sig.parameters and sig.parameters[name].kind is inspect.Parameter.KEYWORD_ONLY,
            f"reset: {name!r} must be keyword-only, got {sig}",
        )
    ssig = inspect.signature(env.step)
    _require(
        len(ssig.parameters) == 1, f"step: must take exactly one argument (model_text), got {ssig}"
    )
    done.append("signatures")

    obs, info = env.reset(query=query, seed=seed)
    _check_obs(obs, "reset", n_images=1, size=p.global_view_size)
    _require(
        obs["view_ids"] == ["global"], f"reset: view_ids must be ['global'], got {obs['view_ids']}"
    )
    _require(isinstance(info, dict), f"reset: info must be a dict, got {type(info).__name__}")
    done.append("reset")

    out = _check_step(
        env.step(_call(ToolName.ZOOM_IN, view_id="global", bbox_2d=[250, 250, 750, 750])),
        ToolName.ZOOM_IN,
    )
    _check_obs(out[0], ToolName.ZOOM_IN, n_images=1, size=p.zoom_size)
    _require(
        not out[2] and not out[3], "zoom_in: a tool call must not end the episode before the budget"
    )
    zid = out[0]["view_ids"][0]
    out = _check_step(
        env.step(
            _call(ToolName.OBLIQUE_RENDER, view_id=zid, bbox_2d=[0, 0, 1000, 1000], azimuth_deg=90)
        ),
        ToolName.OBLIQUE_RENDER,
    )
    if out[0]["images"]:
        _check_obs(out[0], ToolName.OBLIQUE_RENDER, n_images=1, size=p.oblique_size)
    done.append("tools")

    env.reset(query=query, seed=seed)
    last: tuple[dict, float, bool, bool, dict] | None = None
    for t in range(1, p.max_turns + 1):
        last = _check_step(env.step("not an action"), f"invalid step {t}")
        _check_obs(last[0], f"invalid step {t}", n_images=0)
        _require(last[1] < 0, f"invalid step {t}: reward must be negative (penalty), got {last[1]}")
        _require(not last[2], f"invalid step {t}: terminated must be False without an answer")
        _require(
            last[3] == (t == p.max_turns),
            f"invalid step {t}: truncated must be {t == p.max_turns}, got {last[3]}",
        )
    assert last is not None

    ended = last[4].get("outcome")
    _require(
        isinstance(ended, EpisodeOutcome) and ended.stop_reason == "budget",
        f"truncation: info['outcome'] must be an EpisodeOutcome with stop_reason 'budget', got "
        f"{ended!r}",
    )
    done.append("budget_truncates")

    try:
        env.step("<answer>{}</answer>")
    except RuntimeError:
        pass
    else:
        raise EnvCheckError("step after the episode ended must raise RuntimeError (caller misuse)")
    done.append("step_after_done_raises")

    env.reset(query=query, seed=seed)
    out = _check_step(
        env.step('<answer>{"view_id": "global", "bbox_2d": [0, 0, 1000, 1000]}</answer>'),
        ToolName.ANSWER,
    )
    _require(
        out[2] and not out[3],
        f"answer: must terminate (terminated=True, truncated=False), got {out[2]}, {out[3]}",
    )
    ans = out[4].get("outcome")
    _require(
        isinstance(ans, EpisodeOutcome) and ans.answered,
        f"answer: info['outcome'] must be an answered EpisodeOutcome, got {ans!r}",
    )
    assert isinstance(ans, EpisodeOutcome)
    _require(
        ans.pred_box_2d_m is not None
        and ans.pred_box_3d_m is not None
        and bool(np.all(np.isfinite(ans.pred_box_3d_m))),
        f"answer: the outcome must hold finite world boxes, got {ans.pred_box_2d_m!r}, "
        f"{ans.pred_box_3d_m!r}",
    )
    _require(
        math.isclose(out[1], ans.reward_terminal + out[4]["step"].reward_shaping),
        f"answer: the step reward must be its shaping plus the terminal reward, got {out[1]}",
    )
    done.append("answer_terminates")

    def trace() -> tuple[list[float], list[np.ndarray]]:
        o, _ = env.reset(query=query, seed=seed)
        imgs = [np.asarray(o["images"][0])]
        rs = []
        for text in (
            _call(ToolName.ZOOM_IN, view_id="global", bbox_2d=[100, 100, 600, 600]),
            "junk",
            '<answer>{"view_id": "zoom_1", "bbox_2d": [10, 10, 990, 990]}</answer>',
        ):
            o, r, *_ = env.step(text)
            rs.append(r)
            imgs += [np.asarray(i) for i in o["images"]]
        return rs, imgs

    r1, i1 = trace()
    r2, i2 = trace()
    _require(
        r1 == r2, f"determinism: same seed and actions must give the same rewards, got {r1} vs {r2}"
    )
    _require(
        len(i1) == len(i2) and all(np.array_equal(a, b) for a, b in zip(i1, i2)),
        "determinism: images differ between identical episodes",
    )
    done.append("determinism")
    return {"checks": done}
