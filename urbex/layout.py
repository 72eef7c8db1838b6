"""The asset layout: every path published under ``paths.assets``, named in one place.

Stages, the runner, policies, the trainer and both front doors (the CLI, the Dagster assets)
ask an :class:`AssetLayout` for a path instead of joining strings, so a file moves in one line
and the warehouse's globs are the same paths with :data:`urbex.atomic.PUBLIC` (``[!.]*``, any
name but a hidden staging one) for a name. No published name starts with ``.``::

    <assets>/
        raw/synthetic/                  the generated data set (data.source = synthetic)
        raw/registered.json             a registered data root (other sources)
        scenes/<scene_id>/              a scene cache: meta.json, instances.parquet,
                                        scene.parquet (the warehouse row), global_view.png, ...
        landmarks/<scene_id>.parquet    a scene's landmark table
        splits/                         clean_queries.parquet, annotation_drops.parquet,
                                        queries.parquet, split_counts.csv, class_sizes.json
        quality/<suite>.json            great-expectations reports
        checkpoints/<name>/             trained policies
        models/ranker-v1.json           the trained With-GT ranker (urbex fit-ranker)
        eval/runs/<run_id>/             one evaluation run (run.json, episodes/, steps/,
                                        metrics.parquet)
        eval/summaries/<run_id>.json    its headline metrics (DVC metrics: ``dvc exp show``)
        eval/diagnostics/               diagnostic tables and plots
        eval/report.md, eval/report.csv the comparison table
        eval/index.html                 the static results page (+ eval/runs/<run_id>/index.html)
        ground/                         ``urbex ground`` outputs
        stpls3d_refer/                  STPLS3D-Refer in the CityRefer layout
        benchmarks/<name>/              a zero-shot benchmark's own scenes/, landmarks/,
                                        splits/ and quality/ (same names as above)
        warehouse.duckdb                DuckDB views over the Parquet files above

>>> from pathlib import Path
>>> lay = AssetLayout(Path("/data/assets"))
>>> lay.instances("block_0").as_posix()
'/data/assets/scenes/block_0/instances.parquet'
>>> lay.run("oracle-test_no").as_posix()
'/data/assets/eval/runs/oracle-test_no'
>>> AssetLayout.relative().run_metrics("[!.]*").as_posix()  # a glob under the assets root
'eval/runs/[!.]*/metrics.parquet'
>>> b = AssetLayout(Path("/data/assets"), benchmark="stpls3d_refer")  # a zero-shot benchmark
>>> b.instances("SYNTHUSC").as_posix(), b.queries.as_posix()
('/data/assets/benchmarks/stpls3d_refer/scenes/SYNTHUSC/instances.parquet', '/data/assets/benchmarks/stpls3d_refer/splits/queries.parquet')
>>> b.run("oracle-stpls3d_refer-test").as_posix(), b.class_sizes.as_posix()  # shared
('/data/assets/eval/runs/oracle-stpls3d_refer-test', '/data/assets/splits/class_sizes.json')
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "DEFAULT_BENCHMARK",
    "GLOBAL_VIEW_FILE",
    "GRPO_SUMMARY_FILE",
    "GRPO_TRAINER_LOG_FILE",
    "INSTANCES_FILE",
    "META_FILE",
    "PROPOSALS_FILE",
    "RANKER_VERSION",
    "READER_CURVES_FILE",
    "RUN_TIMES_FILE",
    "SAFE_NAME_MAX",
    "SCENE_ROW_FILE",
    "SFT_LOG_FILE",
    "SFT_SUMMARY_FILE",
    "TIMINGS_DIR",
    "TRAINING_LOG_FILE",
    "TRAIN_CURVES_FILE",
    "UNVERSIONED",
    "AssetLayout",
    "plain_name",
    "safe_name",
    "safe_part",
]

#: The folder beside a versioned output that holds what depends on the machine and the moment
#: rather than on the inputs and params: seconds (build, fit, latency, training step), timestamps,
#: absolute paths. It is not versioned (:data:`UNVERSIONED`), so an output rebuilt from the same
#: inputs hashes the same; the warehouse joins the timings back (``latency_s`` of ``episodes``).
TIMINGS_DIR = "timings"

#: A run's start and last update (ISO-8601 UTC), in its unversioned timings folder: a run.json
#: holding them would differ between two runs of the same inputs.
RUN_TIMES_FILE = "run.json"

#: Files under the assets root that are *not* versioned data, as gitignore-style patterns relative
#: to the root (``*`` within one name, ``**`` any number of folders, a trailing ``/`` a folder and
#: everything under it): the results page (rewritten from the runs by every ``urbex report``),
#: the ``.gitignore`` files DVC writes beside the outputs it tracks (git bookkeeping: a pulled
#: checkout has none), every :data:`TIMINGS_DIR` folder and a checkpoint's TensorBoard events
#: (``runs/``: wall times, a host name). ``.dvcignore`` lists the same patterns
#: under ``assets/`` (tests/test_versioning.py), so DVC's directory hashes and
#: :func:`urbex.versioning.content_hash` leave out the same files.
UNVERSIONED = (
    "eval/index.html",
    "eval/curves/",
    "eval/runs/*/index.html",
    "eval/runs/*/gallery/",
    "**/.gitignore",
    f"**/{TIMINGS_DIR}/",
    "checkpoints/*/runs/",
)

#: The benchmark the pipeline trains and tests on; its data sit at the top of the assets root.
DEFAULT_BENCHMARK = "cityrefer"

#: Files of a scene cache directory (the builder writes them into a staging directory first).
META_FILE = "meta.json"
INSTANCES_FILE = "instances.parquet"
PROPOSALS_FILE = "proposals.parquet"
SCENE_ROW_FILE = "scene.parquet"
GLOBAL_VIEW_FILE = "global_view.png"
#: Files of a trained checkpoint directory, beside the model and its processor.
SFT_SUMMARY_FILE = "sft.json"
READER_SUMMARY_FILE = "reader.json"
SFT_LOG_FILE = "sft_log.parquet"
GRPO_SUMMARY_FILE = "train.json"
GRPO_TRAINER_LOG_FILE = "train_log.parquet"
TRAINING_LOG_FILE = "training_log.parquet"
READER_CURVES_FILE = "reader_curves.png"
TRAIN_CURVES_FILE = "train_curves.png"
#: Format version of the trained ranker's JSON (:class:`urbex.agents.ranker.RankerModel`); its
#: file name carries it.
RANKER_VERSION = 1


def plain_name(name: str, *, what: str) -> str:
    """``name`` if it is usable as one path component, else a ``ValueError`` naming ``what``.

    >>> plain_name("oracle-test_no", what="run_id")
    'oracle-test_no'
    >>> plain_name("../x", what="run_id")
    Traceback (most recent call last):
    ...
    ValueError: run_id: expected a plain name (no path separators), got '../x'
    >>> plain_name(".hidden", what="run_id")
    Traceback (most recent call last):
    ...
    ValueError: run_id: expected a name that does not start with '.' (reserved for staging), got '.hidden'
    """
    if (
        not isinstance(name, str)
        or not name
        or any(c in name for c in "/\\")
        or name in (".", "..")
    ):
        raise ValueError(f"{what}: expected a plain name (no path separators), got {name!r}")
    if name.startswith("."):
        # urbex.atomic's staging names start with "."; every reader and warehouse glob skips them
        raise ValueError(
            f"{what}: expected a name that does not start with '.' (reserved for staging), "
            f"got {name!r}"
        )
    return name


#: The longest safe name: run ids get suffixes (``-tools_lm+zoom``, ``-rep3``) and the file
#: system allows 255 bytes per component.
SAFE_NAME_MAX = 128


def _safe_char(c: str) -> bool:
    return c.isalnum() or c in "-_."


def safe_part(text: str) -> str:
    """``text`` (NFC) with every character :func:`safe_name` refuses replaced by ``_``.

    >>> safe_part("Qwen3-VL 8B/ü")
    'Qwen3-VL_8B_ü'
    """
    nfc = unicodedata.normalize("NFC", text)
    return "".join(
        c if _safe_char(c) and unicodedata.normalize("NFKC", c) == c else "_" for c in nfc
    )


def safe_name(name: str, *, what: str) -> str:
    """``name`` (composed, NFC) if it is a safe name, else a ``ValueError`` naming ``what``.

    The one rule for names urbex derives or lets the user choose (run ids, checkpoint names,
    ``train.run_name``): letters, digits (``str.isalnum``), ``-``, ``_`` and ``.``, starting
    with a letter or a digit, at most :data:`SAFE_NAME_MAX` characters, so never empty, ``.``,
    ``..``, a hidden name or one that reads as a flag. The name is composed first (``ü`` typed
    decomposed is the same name as ``ü``), and compatibility forms are refused (full-width
    digits, ligatures, superscripts: names that look like another name but are other bytes).
    Derived run ids (:attr:`urbex.eval.runspec.RunSpec.run_id`) keep to it: other characters of
    a checkpoint name become ``_`` (:func:`safe_part`). Scene ids, found in a data set, only need
    :func:`plain_name`.

    >>> safe_name("oracle-test_no.v2", what="run_id")
    'oracle-test_no.v2'
    >>> safe_name("..", what="--run-id")
    Traceback (most recent call last):
    ...
    ValueError: --run-id: expected a safe name (letters, digits, '-', '_', '.', ...), got '..'
    """
    if not isinstance(name, str):
        raise ValueError(f"{what}: expected a safe name (a string), got {name!r}")
    if len(name) > SAFE_NAME_MAX:
        raise ValueError(
            f"{what}: a name of at most {SAFE_NAME_MAX} characters, got {len(name)} "
            f"({name[:40]!r}...)"
        )
    nfc = unicodedata.normalize("NFC", name)
    if unicodedata.normalize("NFKC", nfc) != nfc:
        raise ValueError(
            f"{what}: {name!r} holds compatibility characters (full-width or styled letters and "
            f"digits); write it as {unicodedata.normalize('NFKC', nfc)!r}"
        )
    if not (nfc[:1].isalnum() and all(_safe_char(c) for c in nfc)):
        raise ValueError(
            f"{what}: expected a safe name (letters, digits, '-', '_', '.', starting with a "
            f"letter or digit; not empty, '.' or '..'), got {name!r}"
        )
    return nfc


@dataclass(frozen=True, slots=True)
class AssetLayout:
    """The published paths under one assets root.

    Parameters
    ----------
    root
        The assets root (``params.assets``, absolute in practice). :meth:`relative` gives the
        layout relative to the root (``Path(".")``), whose paths are the warehouse's globs when
        a name is ``"*"``.

    benchmark
        Whose data the scene, landmark, split and quality paths are: ``cityrefer`` (the
        default, at the top of the root) or a zero-shot benchmark (under
        ``benchmarks/<name>/``, same names). Runs, checkpoints, models, the report and the
        train split's ``class_sizes.json`` are shared (nothing is fitted on a benchmark).

    Every ``name`` argument (scene id, run id, checkpoint name, quality suite) must be one plain
    path component; anything else raises ``ValueError``. Run ids and checkpoint names must
    moreover follow :func:`safe_name` (in the :meth:`relative` layout, ``"*"`` too: a glob).
    """

    root: Path
    benchmark: str = DEFAULT_BENCHMARK

    def __post_init__(self) -> None:
        object.__setattr__(self, "root", Path(self.root))
        safe_name(self.benchmark, what="benchmark")

    @property
    def benchmarks(self) -> Path:
        """``benchmarks/``: the zero-shot benchmarks' own data."""
        return self.root / "benchmarks"

    @property
    def data(self) -> Path:
        """Where this layout's benchmark data sit: the root, or ``benchmarks/<name>``."""
        if self.benchmark == DEFAULT_BENCHMARK:
            return self.root
        return self.benchmarks / self.benchmark

    @classmethod
    def relative(cls) -> AssetLayout:
        """The layout relative to the assets root (paths like ``scenes/*/scene.parquet``)."""
        return cls(Path())

    def unversioned(self, path: Path) -> bool:
        """True for a path under the root that :data:`UNVERSIONED` leaves out of versioned data.

        >>> lay = AssetLayout(Path("/a"))
        >>> lay.unversioned(Path("/a/eval/runs/oracle-test_no/gallery/q1.png"))
        True
        >>> lay.unversioned(Path("/a/scenes/.gitignore")), lay.unversioned(Path("/a/eval/report.md"))
        (True, False)
        >>> lay.unversioned(Path("/elsewhere/index.html"))  # not under the root: versioned
        False
        """
        from fnmatch import fnmatchcase

        try:
            parts = Path(path).relative_to(self.root).parts
        except ValueError:
            return False

        def match(segs: tuple[str, ...], names: tuple[str, ...]) -> bool:
            if not segs:
                return not names
            if segs[0] == "**":
                return any(match(segs[1:], names[i:]) for i in range(len(names) + 1))
            return bool(names) and fnmatchcase(names[0], segs[0]) and match(segs[1:], names[1:])

        for pattern in UNVERSIONED:
            folder = pattern.endswith("/")
            segs = tuple(pattern.rstrip("/").split("/"))
            # a pattern names a path or a folder above it (a folder's files go with it)
            stops = range(1, len(parts)) if folder else range(1, len(parts) + 1)
            if any(match(segs, parts[:k]) for k in stops):
                return True
        return False

    def _safe(self, name: str, *, what: str) -> str:
        """:func:`safe_name`, or a glob (``*``, :data:`urbex.atomic.PUBLIC`) in the relative
        layout (the warehouse's globs)."""
        if name in ("*", "[!.]*") and self.root == Path():
            return name
        return safe_name(name, what=what)

    # ---------------------------------------------------------------- raw data
    @property
    def raw(self) -> Path:
        """``raw/``: the raw data set (generated or registered)."""
        return self.root / "raw"

    @property
    def raw_synthetic(self) -> Path:
        """``raw/synthetic``: the generated synthetic data set (CityRefer layout + copies)."""
        return self.raw / "synthetic"

    @property
    def raw_registered(self) -> Path:
        """``raw/registered.json``: which external data root was registered."""
        return self.raw / "registered.json"

    # ---------------------------------------------------------------- scene caches
    @property
    def scenes(self) -> Path:
        """``scenes/``: one cache directory per scene."""
        return self.data / "scenes"

    def scene(self, scene_id: str) -> Path:
        """``scenes/<scene_id>``: a scene cache directory."""
        return self.scenes / plain_name(scene_id, what="scene_id")

    def scene_meta(self, scene_id: str) -> Path:
        """``scenes/<scene_id>/meta.json``: the cache's metadata (bounds, BEV size, hashes)."""
        return self.scene(scene_id) / META_FILE

    def instances(self, scene_id: str) -> Path:
        """``scenes/<scene_id>/instances.parquet``: the GT instance table."""
        return self.scene(scene_id) / INSTANCES_FILE

    def scene_row(self, scene_id: str) -> Path:
        """``scenes/<scene_id>/scene.parquet``: the warehouse ``scenes`` row."""
        return self.scene(scene_id) / SCENE_ROW_FILE

    def global_view(self, scene_id: str) -> Path:
        """``scenes/<scene_id>/global_view.png``: the downsampled global BEV view."""
        return self.scene(scene_id) / GLOBAL_VIEW_FILE

    # ---------------------------------------------------------------- landmarks
    @property
    def landmarks(self) -> Path:
        """``landmarks/``: one landmark table per scene."""
        return self.data / "landmarks"

    def landmark_table(self, scene_id: str) -> Path:
        """``landmarks/<scene_id>.parquet``."""
        return self.landmarks / f"{plain_name(scene_id, what='scene_id')}.parquet"

    # ---------------------------------------------------------------- annotations
    @property
    def splits(self) -> Path:
        """``splits/``: cleaned annotations and the split queries."""
        return self.data / "splits"

    @property
    def clean_queries(self) -> Path:
        """``splits/clean_queries.parquet``: annotations after cleaning, before splitting."""
        return self.splits / "clean_queries.parquet"

    @property
    def annotation_drops(self) -> Path:
        """``splits/annotation_drops.parquet``: the annotations cleaning dropped, with reasons."""
        return self.splits / "annotation_drops.parquet"

    @property
    def queries(self) -> Path:
        """``splits/queries.parquet``: the cleaned queries with their ``split``."""
        return self.splits / "queries.parquet"

    @property
    def split_counts(self) -> Path:
        """``splits/split_counts.csv``: queries per split."""
        return self.splits / "split_counts.csv"

    @property
    def class_sizes(self) -> Path:
        """``splits/class_sizes.json``: per-class size priors computed by the splits stage
        (of the training benchmark: shared by every benchmark's layout)."""
        return self.root / "splits" / "class_sizes.json"  # urbex.annotations.class_sizes

    @property
    def quality(self) -> Path:
        """``quality/``: great-expectations reports, one per suite."""
        return self.data / "quality"

    def quality_report(self, suite: str) -> Path:
        """``quality/<suite>.json``."""
        return self.quality / f"{plain_name(suite, what='suite')}.json"

    @property
    def stpls3d_refer(self) -> Path:
        """``stpls3d_refer/``: STPLS3D-Refer in the CityRefer layout (+ ``summary.json``)."""
        return self.root / "stpls3d_refer"

    # ---------------------------------------------------------------- training
    @property
    def models(self) -> Path:
        """``models/``: fitted non-neural models (the trained ranker)."""
        return self.root / "models"

    @property
    def ranker_model(self) -> Path:
        """``models/ranker-v<N>.json``: the trained With-GT ranker (``urbex fit-ranker``);
        ``N`` is its format version (:data:`RANKER_VERSION`)."""
        return self.models / f"ranker-v{RANKER_VERSION}.json"

    @property
    def checkpoints(self) -> Path:
        """``checkpoints/``: trained policy checkpoints."""
        return self.root / "checkpoints"

    def checkpoint(self, name: str) -> Path:
        """``checkpoints/<name>``: one trained checkpoint (model, processor, train log)."""
        return self.checkpoints / self._safe(name, what="checkpoint name")

    def checkpoint_staging(self, name: str) -> Path:
        """``checkpoints/.staging-<name>``: where checkpoint ``name`` is trained and assembled
        before it is renamed into place (:func:`urbex.train.publish.publish_checkpoint`); a
        crashed GRPO run resumes from the trainer checkpoints left in it."""
        return self.checkpoints / f".staging-{self._safe(name, what='checkpoint name')}"

    def training_log(self, name: str) -> Path:
        """``checkpoints/<name>/training_log.parquet``: one row per GRPO step (warehouse
        ``training_log``; :mod:`urbex.train.logs`)."""
        return self.checkpoint(name) / TRAINING_LOG_FILE

    def reader_curves(self, name: str) -> Path:
        """``checkpoints/<name>/reader_curves.png``: a reader stage's held-out drill accuracy."""
        return self.checkpoint(name) / READER_CURVES_FILE

    def train_curves(self, name: str) -> Path:
        """``checkpoints/<name>/train_curves.png``: reward, IoU and tool calls per step."""
        return self.checkpoint(name) / TRAIN_CURVES_FILE

    # ---------------------------------------------------------------- evaluation
    @property
    def eval(self) -> Path:
        """``eval/``: runs, diagnostics and the report."""
        return self.root / "eval"

    @property
    def runs(self) -> Path:
        """``eval/runs/``: one directory per evaluation run."""
        return self.eval / "runs"

    def run(self, run_id: str) -> Path:
        """``eval/runs/<run_id>`` (``run_id`` must be a :func:`safe_name`)."""
        return self.runs / self._safe(run_id, what="run_id")

    def run_json(self, run_id: str) -> Path:
        """``eval/runs/<run_id>/run.json``: what was run and its status."""
        return self.run(run_id) / "run.json"

    def run_episodes(self, run_id: str) -> Path:
        """``eval/runs/<run_id>/episodes``: the run's episodes shards."""
        return self.run(run_id) / "episodes"

    def run_steps(self, run_id: str) -> Path:
        """``eval/runs/<run_id>/steps``: the run's steps shards."""
        return self.run(run_id) / "steps"

    def run_metrics(self, run_id: str) -> Path:
        """``eval/runs/<run_id>/metrics.parquet``: the run's aggregate metrics."""
        return self.run(run_id) / "metrics.parquet"

    def run_summary(self, run_id: str) -> Path:
        """``eval/summaries/<run_id>.json``: the run's headline metrics, flat (DVC's metrics file
        of its evaluation stage; beside the run directory, which is that stage's output)."""
        return self.eval / "summaries" / f"{self._safe(run_id, what='run_id')}.json"

    @property
    def diagnostics(self) -> Path:
        """``eval/diagnostics/``: diagnostic tables (Parquet), ``diagnostics.md`` and plots."""
        return self.eval / "diagnostics"

    def diagnostic_table(self, name: str) -> Path:
        """``eval/diagnostics/<name>.parquet``."""
        return self.diagnostics / f"{plain_name(name, what='diagnostic table')}.parquet"

    @property
    def report_md(self) -> Path:
        """``eval/report.md``: the comparison table (Markdown)."""
        return self.eval / "report.md"

    @property
    def report_csv(self) -> Path:
        """``eval/report.csv``: the comparison table (CSV)."""
        return self.eval / "report.csv"

    @property
    def results_page(self) -> Path:
        """``eval/index.html``: the static results page (:mod:`urbex.report.page`)."""
        return self.eval / "index.html"

    @property
    def ground(self) -> Path:
        """``ground/``: default parent of ``urbex ground`` output directories."""
        return self.root / "ground"

    @property
    def warehouse(self) -> Path:
        """``warehouse.duckdb``: the DuckDB views over the Parquet files."""
        return self.root / "warehouse.duckdb"
