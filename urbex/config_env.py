"""Typed params of the environment (``env:`` in ``params.yaml``) and the strict field types
every params section uses (:mod:`urbex.config` assembles them into :class:`~urbex.config.Params`).

Numbers and switches are strict: an int field takes an int (not ``true``, not ``"8"``, not
``8.0``), a float field a finite int or float (not ``true``, not ``"0.1"``, not ``.nan`` or
``.inf``), a bool field ``true`` or ``false`` (not ``1``), a seed an int >= 0.
"""

from __future__ import annotations

from typing import Annotated, Literal, get_args

from pydantic import AllowInfNan, BaseModel, ConfigDict, Field, Strict, field_validator

from urbex.tool_vocabulary import EnvTool

__all__ = ["Bool", "EnvParams", "Float", "Int", "MarksParams", "Seed", "StrictModel"]


#: An int field: a bool, a float or a numeric string is an error (never coerced).
Int = Annotated[int, Strict()]
#: A float field: an int is accepted (YAML ``density: 20``), a bool, a string, ``.nan`` or
#: ``.inf`` is an error (an infinite weight or bin edge would reach every summary as Infinity).
Float = Annotated[float, Strict(), AllowInfNan(False)]
#: A seed: an int >= 0 (numpy's generators refuse a negative one, after the run has started).
Seed = Annotated[int, Strict(), Field(ge=0)]
#: A bool field: ``true``/``false`` only (``1`` or ``"yes"`` in quotes is an error).
Bool = Annotated[bool, Strict()]


class StrictModel(BaseModel):
    """A params section: unknown keys are errors, values are frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class MarksParams(StrictModel):
    """Numbered marks over the scene's instance proposals (Set-of-Mark prompting; off by
    default, so the paper's protocol stays the default).

    When ``enabled``, every view the agent receives carries the proposals under it as numbered
    marks (:mod:`urbex.env.marks`): drawn on the image where legible, listed in the tool text
    (id, class, box in the view's 0–1000 frame); an answer may name a shown mark
    (``{"mark": 7}``), whose boxes and points are the proposal's own. ``landmark_query`` then
    also prints each match's surroundings box (its footprint grown by ``context_m``), a region a
    ``zoom_in`` can copy.
    """

    enabled: Bool = Field(False, description="number the scene's proposals on every view")
    describe: Literal["none", "class", "attributes"] = Field(
        "class",
        description="what the tool text says of each mark besides its id and box: nothing, its "
        "class, or its class and short attribute words (colour, size, height)",
    )
    layout: Literal["by_class", "id_last"] = Field(
        "by_class",
        description="the tool text's listing: one line per class, each mark's id first "
        "(`car: 9 red [x1, y1, x2, y2]; ...`), or one line per mark with its id last "
        "(`[x1, y1, x2, y2] red car = 9`: the id follows what describes it, where a copy head "
        "finds it)",
    )
    remind: Bool | Literal["listings"] = Field(
        False,
        description="every tool text ends by repeating the query (`Query: ...`), so the "
        "description stands right before the answer, as in a look-up drill; `listings`: only "
        "the texts that list marks (a zoom's, an oblique view's), so a `landmark_query` text "
        "ends on the boxes the next `zoom_in` copies",
    )
    numbering: Literal["scene", "episode"] = Field(
        "scene",
        description="the ids the agent sees: each proposal's own id (stable per scene, up to the "
        "scene's proposal count), or 1, 2, 3 ... in the order the episode first shows the marks "
        "(small whatever the city's size; a mark keeps its number for the whole episode)",
    )
    relate: Bool = Field(
        False,
        description="each listed mark also says where it lies from the landmarks this "
        "episode's landmark_query calls found (the best match of the last two): `west of "
        '"Clare Park"`, and `next to "Clare Park"` within 6 m — the relation a description '
        "states, in words a small student can match",
    )
    context_m: Float = Field(
        40.0, ge=0, description="landmark_query's surroundings box: footprint grown by this, m"
    )
    max_listed: Int = Field(
        12, ge=1, description="marks of each class listed per view at most (nearest its centre)"
    )
    min_label_px: Int = Field(
        12, ge=1, description="a mark is drawn with its number when its box is this wide, px"
    )


class EnvParams(StrictModel):
    """The interactive grounding environment (``urbex.env``): budget, image sizes, rewards.

    Image sizes are ``[width, height]`` pixels and FIXED per view kind (trl/vLLM need stable
    image sizes). Distances are world metres; reward weights are dimensionless.
    """

    max_turns: Int = Field(8, ge=1, description="assistant-turn budget T_max")
    global_view_size: tuple[Int, Int] = Field(
        (768, 768), description="[w, h] px of the global view"
    )
    zoom_size: tuple[Int, Int] = Field((512, 512), description="[w, h] px of a zoom view")
    oblique_size: tuple[Int, Int] = Field((512, 512), description="[w, h] px of an oblique view")
    oblique_elevation_deg: Float = Field(45.0, gt=0, le=90, description="default oblique elevation")
    min_zoom_extent_m: Float = Field(4.0, gt=0, description="smallest zoom window side, metres")
    landmark_limit: Int = Field(3, ge=1, description="landmark matches returned per query")
    lambda_iou: Float = Field(1.0, ge=0, description="terminal IoU weight")
    lambda_dist: Float = Field(0.5, ge=0, description="terminal exp(-d/tau) weight")
    tau_m: Float = Field(20.0, gt=0, description="distance scale tau, metres")
    lambda_step: Float = Field(0.1, ge=0, description="terminal step-cost weight (x T/T_max)")
    zoom_shaping_scale: Float = Field(0.05, ge=0, description="zoom shaping per tau of progress")
    zoom_shaping_cap: Float = Field(0.1, ge=0, description="|zoom shaping| cap per call")
    oblique_shaping_scale: Float = Field(0.1, ge=0, description="oblique shaping x overlap ratio")
    oblique_shaping_cap: Float = Field(0.1, ge=0, description="oblique shaping cap per call")
    invalid_penalty: Float = Field(0.1, ge=0, description="subtracted per invalid action")
    tools: list[EnvTool] = Field(
        list(get_args(EnvTool)),
        description="the tools offered to the agent (tool ablation; [] = none): schemas, "
        "system prompt, validator and trl environment; a call to another tool is invalid",
    )
    answer_lift: Literal["zrange", "semantic"] = Field(
        "semantic",
        description="answer BEV box → 3D box + point mask: the target class's points under the "
        "footprint (semantic) or every point under it (zrange); urbex.env.lift",
    )
    answer_lift_margin_m: Float = Field(
        0.25, ge=0, description="semantic lift: class points gathered this far past the footprint"
    )
    marks: MarksParams = MarksParams()
    answer_snap: Literal["none", "proposal"] = Field(
        "none",
        description="a box answer is replaced by the best-overlapping proposal of the class the "
        "description names when their BEV IoU reaches snap_min_iou (none: boxes stand)",
    )
    snap_min_iou: Float = Field(
        0.3, ge=0, le=1, description="answer_snap: smallest BEV IoU of box and proposal"
    )

    @field_validator("tools")
    @classmethod
    def _unique_tools(cls, v: list[str]) -> list[str]:
        if len(set(v)) != len(v):
            raise ValueError(f"expected each tool at most once, got {v}")
        return v

    @field_validator("global_view_size", "zoom_size", "oblique_size")
    @classmethod
    def _size(cls, v: tuple[int, int]) -> tuple[int, int]:
        if not (16 <= v[0] <= 8192 and 16 <= v[1] <= 8192):
            raise ValueError(f"expected [width, height] in 16..8192 px, got {list(v)}")
        return v
