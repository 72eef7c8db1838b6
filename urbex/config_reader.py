"""The reader stage's params (``reader`` section; ``urbex train-reader``).

The reader stage pretrains a small student from random weights on generated reading drills
(:mod:`urbex.train.drills`) in the exact text formats the environment prints, before SFT: many
answers per sequence, listings from short to full length, the next length once held-out
accuracy reaches ``advance_at``.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator, model_validator

from urbex.config_env import Float, Int, StrictModel
from urbex.layout import safe_name

__all__ = ["DRILL_FAMILIES", "DrillFamily", "LookupAsks", "ReaderParams"]

#: The drill families (:mod:`urbex.train.drills`), in the order they are reported.
DRILL_FAMILIES: tuple[str, ...] = ("mark_lookup", "name_copy", "box_copy", "whole_turn")
DrillFamily = Literal["mark_lookup", "name_copy", "box_copy", "whole_turn"]
#: Which marks a look-up drill asks about (:func:`urbex.train.drills.mark_lookup_drill`):
#: each listed mark once in a random order, or each look-up's mark drawn anew.
LookupAsks = Literal["each_mark_once", "independent"]


class ReaderParams(StrictModel):
    """Reading drills before SFT (:mod:`urbex.train.reader`).

    ``levels`` is the curriculum: marks per listing of the mark look-up drills, from short to
    full (the last level is the listing as the environment prints it, every class's marks up to
    ``env.marks.max_listed``). Training moves to the next level when the held-out mark look-up
    accuracy at the current one reaches ``advance_at`` (measured every ``eval_every`` steps).
    With ``spread_from`` every look-up listing has a random size between ``spread_from`` and the
    current level, so one step mixes short and long listings (the gate is scored at the level).
    """

    checkpoint: Path | None = Field(
        None, description="LOCAL base model dir (--checkpoint overrides); never downloaded"
    )
    run_name: str = Field("reader", description="output: <assets>/checkpoints/<run_name>/")
    steps: Int = Field(2000, ge=1, description="optimizer steps")
    max_steps: Int | None = Field(
        None,
        ge=1,
        description="go on past `steps` while the full-length gate is shut (the look-up at "
        "the last level below `advance_at`), up to this many steps in all; None: `steps` "
        "exactly (the look-up's take-off varies from ~1,800 to >6,000 steps by seed)",
    )
    batch_size: Int = Field(16, ge=1, description="drills per step")
    learning_rate: Float = Field(2e-3, gt=0)
    warmup_steps: Int = Field(100, ge=0)
    levels: list[Int] = Field(
        [2, 4, 8, 16, 32],
        description="marks per listing of the mark look-up drills, short to full (increasing)",
    )
    advance_at: Float = Field(
        0.9, gt=0, le=1, description="held-out accuracy at a level that moves to the next one"
    )
    spread_from: Int | None = Field(
        None,
        ge=1,
        description="look-up listings of a random size from this many marks up to the current "
        "level (None: every listing at the level's size); the gate is still scored at the level",
    )
    answers_per_drill: Int = Field(
        8, ge=1, description="answers per drill sequence (look-ups per listing, copies per text)"
    )
    asks: LookupAsks = Field(
        "each_mark_once",
        description="look-ups of a listing: each mark once, in a random order (the last answer "
        "is then the mark not yet asked about), or each look-up's mark drawn anew",
    )
    mix: dict[DrillFamily, Float] = Field(
        {"mark_lookup": 0.55, "name_copy": 0.15, "box_copy": 0.15, "whole_turn": 0.15},
        description="share of the steps' drills of each family (every family > 0)",
    )
    synthetic_rate: Float = Field(
        0.5,
        ge=0,
        le=1,
        description="share of look-up / copy drills built from random listings and names rather "
        "than the train split's scenes",
    )
    rename_rate: Float = Field(
        0.5, ge=0, le=1, description="share of name-copy drills with the name replaced by another"
    )
    fresh_names: Float = Field(
        0.0,
        ge=0,
        le=1,
        description="share of those new names drawn from the synthetic city's name generator "
        "(names no train scene need hold) rather than from the train split's landmarks",
    )
    query_first: Float = Field(
        0.0,
        ge=0,
        le=1,
        description="share of look-up listings asked in an episode's order: the description "
        "before the listing, one answer per listing (else the listing first, then its look-ups)",
    )
    per_query: Int = Field(1, ge=1, description="teacher paths per train query (drill sources)")
    held_out: Int = Field(64, ge=8, description="held-out drills per family, per evaluation")
    eval_every: Int = Field(100, ge=1, description="held-out accuracy every N steps")
    max_length: Int = Field(2048, ge=64, description="longest drill sequence, tokens")
    seed: Int = Field(0, description="drills, order and torch seed")
    save_steps: Int = Field(
        200,
        ge=1,
        description="resume state every N steps in <assets>/checkpoints/.staging-<run_name>/; "
        "an interrupted run resumes from it",
    )

    @field_validator("run_name")
    @classmethod
    def _safe_run_name(cls, v: str) -> str:
        return safe_name(v, what="reader.run_name")

    @field_validator("levels")
    @classmethod
    def _increasing(cls, v: list[int]) -> list[int]:
        if not v or v[0] < 1:
            raise ValueError("expected at least one level, each >= 1 mark")
        if any(b <= a for a, b in itertools.pairwise(v)):
            raise ValueError(
                f"expected increasing marks per listing (short to full length), got {v}"
            )
        return v

    @model_validator(mode="after")
    def _spread_below_levels(self) -> ReaderParams:
        if self.spread_from is not None and self.spread_from > self.levels[0]:
            raise ValueError(
                f"reader.spread_from: expected at most the first level ({self.levels[0]} marks), "
                f"got {self.spread_from}"
            )
        return self

    @model_validator(mode="after")
    def _max_after_steps(self) -> ReaderParams:
        if self.max_steps is not None and self.max_steps < self.steps:
            raise ValueError(
                f"reader.max_steps: expected at least reader.steps ({self.steps}), "
                f"got {self.max_steps}"
            )
        return self

    @model_validator(mode="after")
    def _every_family(self) -> ReaderParams:
        missing = [f for f in DRILL_FAMILIES if self.mix.get(f, 0.0) <= 0]  # type: ignore[call-overload]
        if missing:
            raise ValueError(
                f"reader.mix: every drill family needs a share > 0; missing or zero: "
                f"{', '.join(missing)}"
            )
        return self
