"""Trajectory pictures of stored episodes, for the results page (:mod:`urbex.report.page`).

Pictures are drawn by the same code as ``urbex ground``
(:func:`urbex.viz.trajectory.trajectory_picture`) by **replaying the episode from the run's
stored steps**, not by playing it again: no policy or model is loaded. The scenes and the
landmark index come from the construction seam, :class:`urbex.env.world.World`, as for every
other episode consumer. The global view is rebuilt once per scene
(:class:`urbex.env.views.GlobalViews`: what the agent saw), each zoom view with the scene
cache's ``bev_window`` over the step's stored world region (``region_*_m``) at
``params.env.zoom_size`` (the pixels the agent saw), the target from the scene's instance table
and the prediction from the episode row. Oblique renders are not stored and not re-rendered
(that is the expensive part): their region is drawn on the map and their thumbnail is a grey
placeholder saying so.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl
from PIL import Image, ImageDraw

from urbex.atomic import atomic_path
from urbex.env.records import Step
from urbex.env.tools import mark_view
from urbex.env.views import EpisodeView, GlobalViews
from urbex.env.world import World
from urbex.eval.ground import landmark_hits
from urbex.query import Query
from urbex.tool_vocabulary import ToolName
from urbex.viz.trajectory import trajectory_picture

if TYPE_CHECKING:
    from urbex.config_data import LandmarkParams
    from urbex.config_env import EnvParams
    from urbex.layout import AssetLayout

__all__ = ["PALETTE_COLORS", "PANEL_PX", "THUMB_PX", "Replayer", "oblique_placeholder"]

#: Side of the global panel and of each view thumbnail in gallery pictures (picture pixels;
#: 448 is the narrowest panel whose legend fits its two lines).
PANEL_PX, THUMB_PX = 448, 160
#: Colours of a gallery picture's palette (a palette PNG is ~4x smaller than RGB).
PALETTE_COLORS = 128


class Replayer:
    """Draws trajectory pictures from stored episode and step rows (see the module docstring).

    Parameters
    ----------
    layout
        Where the scene caches and landmark tables are.
    env_params
        The run's environment parameters (with ``marks`` on, the pictures show the run's
        numbered marks).
    landmark_params
        The landmark index's matching thresholds. The scenes and landmarks are
        ``World.open(layout, env_params, landmark_params)``'s, two scene caches open at once.
    """

    def __init__(
        self, layout: AssetLayout, env_params: EnvParams, landmark_params: LandmarkParams
    ) -> None:
        self.layout = layout
        self.env_params = env_params
        self.landmark_params = landmark_params
        self.world = World.open(layout, env_params, landmark_params, max_open_scenes=2)
        # a run's pictures share a few scenes: each scene's global view is built once
        self.global_views = GlobalViews(env_params, maxsize=4)

    def draw(
        self, ep: dict[str, Any], steps: pl.DataFrame, text: str, out: Path
    ) -> tuple[bool, str]:
        """Draw the picture of episode row ``ep`` (its ``steps`` rows, turn order) to the PNG
        ``out``; ``(True, "")``, or ``(False, reason)`` when the scene cache is missing."""
        scene_id = str(ep["scene_id"])
        if not self.layout.scene_meta(scene_id).is_file():
            return False, f"no scene cache for {scene_id} (run urbex cache)"
        scene = self.world.scenes(scene_id)
        marks = None
        if self.env_params.marks.enabled:  # the run's marks, as its views showed them
            env = self.world.env()
            q = Query(query_id=str(ep["query_id"]), scene_id=scene_id, description=text or "-")
            env.reset(query=q)
            views, marks = [env.views["global"]], env.marks
        else:
            views = [self.global_views(scene_id, scene)]
        recs: list[Step] = []
        w, h = self.env_params.zoom_size
        for s in steps.iter_rows(named=True) if steps.height else ():
            region = [s.get(f"region_{a}_m") for a in ("x_min", "y_min", "x_max", "y_max")]
            view = None
            if s["valid"] and s["view_id"] and None not in region:
                box = np.asarray(region, dtype=np.float64)
                if s["tool"] == ToolName.ZOOM_IN:
                    bev = scene.bev_window(box, out_size=(w, h))
                    view = EpisodeView(
                        view_id=s["view_id"], kind="zoom",
                        image=Image.fromarray(np.asarray(bev.image)), world_box=box,
                        transform=bev.transform, turn=int(s["turn"]),
                    )  # fmt: skip
                    view = view if marks is None else mark_view(view, marks)
                elif s["tool"] == ToolName.OBLIQUE_RENDER:
                    view = EpisodeView(
                        view_id=s["view_id"], kind="oblique", image=oblique_placeholder(),
                        world_box=box, transform=None, turn=int(s["turn"]),
                    )  # fmt: skip
            if view is not None:
                views.append(view)
            try:
                args = json.loads(s["arguments"]) if s["arguments"] else {}
            except json.JSONDecodeError:
                args = {"raw": s["arguments"]}
            recs.append(
                Step(
                    turn=int(s["turn"]), tool=s["tool"],
                    arguments=args if isinstance(args, dict) else {"raw": str(args)},
                    valid=bool(s["valid"]), error=s["error"], view=view,
                    reward_shaping=float(s["reward"]), reward_terminal=0.0,
                    env_s=float(s["env_s"]), policy_s=float(s["policy_s"]),
                )
            )  # fmt: skip
        inst = scene.instances.filter(pl.col("object_id") == str(ep["object_id"]))
        target = None
        if inst.height:
            r = inst.row(0, named=True)
            target = [r["x_min"], r["y_min"], r["x_max"], r["y_max"]]
        pred = None
        if ep["valid_answer"] and ep["pred_x_min"] is not None:
            pred = [ep["pred_x_min"], ep["pred_y_min"], ep["pred_x_max"], ep["pred_y_max"]]
        img = trajectory_picture(
            scene, recs, views, query_text=text, pred_box_2d=pred, target_box_2d=target,
            landmarks=landmark_hits(self.world.landmarks, scene_id, recs),
            answer_mark=ep.get("answer_mark") if marks is None else marks.label(ep.get("answer_mark")),
            subtitle=f"policy {ep['policy']}  |  object {ep['object_id']}",
            panel_px=PANEL_PX, thumb_px=THUMB_PX,
        )  # fmt: skip
        small = img.quantize(colors=PALETTE_COLORS, method=Image.Quantize.FASTOCTREE)
        with atomic_path(out) as tmp:
            small.save(tmp, format="PNG")
        return True, ""


def oblique_placeholder() -> Image.Image:
    """A grey 128×128 RGB square saying the oblique render is not stored."""
    img = Image.new("RGB", (128, 128), (90, 90, 96))
    ImageDraw.Draw(img).text((8, 56), "oblique render\nnot stored", fill=(230, 230, 230))
    return img
