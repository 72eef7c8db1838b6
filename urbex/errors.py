"""The urbex exception hierarchy.

Every error urbex raises on *bad input* is an :class:`UrbexError`; its message names the
file, field or argument, what was expected and what was found. Caller misuse (wrong argument
types to a Python function) raises the usual ``ValueError`` / ``TypeError`` instead.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = [
    "AnnotationError",
    "CacheError",
    "ConfigError",
    "DataQualityError",
    "DescriptionError",
    "DuplicateEpisodesError",
    "EmptyRegionError",
    "LandmarkError",
    "OutputExistsError",
    "PointCloudFormatError",
    "PolicyError",
    "PolicyTimeoutError",
    "RunLockedError",
    "StaleCacheError",
    "ToolCallError",
    "UrbexError",
    "WarehouseError",
]


class UrbexError(Exception):
    """Root of every urbex error.

    Parameters
    ----------
    message
        What was wrong, what was expected, and how to fix it.
    path
        The file the error is about, if any; prefixed to the message.
    field
        The field/property/column the error is about, if any.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | os.PathLike[str] | None = None,
        field: str | None = None,
    ):
        self.path = None if path is None else Path(path)
        self.field = field
        prefix = ""
        if self.path is not None:
            prefix += f"{self.path}: "
        if field is not None:
            prefix += f"field {field!r}: "
        super().__init__(prefix + message)


class PointCloudFormatError(UrbexError):
    """A point-cloud file (PLY, STPLS3D txt, LAS/LAZ) is malformed or truncated."""


class AnnotationError(UrbexError):
    """An annotation file (CityRefer JSON, box3d, segs, false_segments CSV) is malformed."""


class LandmarkError(UrbexError):
    """A landmark file (GeoJSON/OSM) is malformed or cannot be registered to the scene."""


class DescriptionError(UrbexError):
    """A description (the free text a query asks to ground) cannot be read: longer than
    :data:`urbex.config_data.MAX_DESCRIPTION_CHARS` characters, or not UTF-8 text (a lone surrogate,
    as Python decodes bytes that are not UTF-8 on the command line). The message names where
    the text came from (``--query``, a line of a file)."""


class ConfigError(UrbexError):
    """``params.yaml`` (or a CLI argument derived from it) is invalid."""


class CacheError(UrbexError):
    """A scene cache is missing, incomplete or corrupt."""


class StaleCacheError(CacheError):
    """A scene cache exists but was built from other inputs or params; rebuild it."""


class EmptyRegionError(CacheError):
    """A view or render was requested over a region of the scene that holds no points.

    The message is written for the agent ("no points under that box; pick a region with
    content"); the environment turns it into a tool error.
    """


class DataQualityError(UrbexError):
    """A data-quality suite (great-expectations) failed; the data was not published."""


class ToolCallError(UrbexError):
    """A tool call from the agent is invalid.

    The environment catches this and turns it into an error text for the agent; it never
    escapes an episode.
    """


class PolicyError(UrbexError):
    """A policy backend failed: a model endpoint kept failing or refused the request, or a local
    checkpoint is missing or unreadable. The message names the endpoint/checkpoint and the status,
    never a credential."""


class RunLockedError(UrbexError):
    """An evaluation run directory is being written by another live process (one writer per
    run); the message names the holder's pid, host and start time."""


class DuplicateEpisodesError(UrbexError):
    """An evaluation run holds several episodes of one query (e.g. two writers played it); its
    rows would count twice in every table."""


class PolicyTimeoutError(PolicyError):
    """A policy could not reply before the episode's deadline (``eval.episode_timeout_s``).

    Raised by a policy that waits on something (a model server) instead of waiting past the
    ``deadline`` given to :meth:`~urbex.env.policy.Policy.begin_episode`. The episode loop
    (:func:`urbex.env.play.play_episode`) catches exactly this error and ends the episode
    unanswered with ``stop_reason == "timeout"``; it never fails a run.
    """


class OutputExistsError(UrbexError):
    """A command would overwrite files that are already there (a user's data set or checkpoint);
    the message names what exists and the ``--force`` that allows it."""


class WarehouseError(UrbexError):
    """The DuckDB warehouse file cannot be written (a read-only folder, a full disk)."""
