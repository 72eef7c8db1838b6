"""Data versions: an asset's ``DataVersion`` is the content hash DVC records for its files.

:func:`urbex.versioning.content_hash` (MD5 of a file, DVC's ``<md5>.dir`` tree hash of a
directory, the project's unversioned files left out as ``.dvcignore`` does), so a version shown in
the Dagster UI is the ``md5:`` that ``dvc.lock`` holds for the same path — for an asset that
writes one DVC output (a scene cache is ``cache@<scene>``'s out, an evaluation run an
``evaluate@`` out), or the entry of that file in its output folder's DVC manifest (a cleaned
annotation table inside ``assets/splits``).
"""

from pathlib import Path

import dagster as dg

from urbex.config import Params
from urbex.versioning import content_hash


def data_version(params: Params, path: Path) -> dg.DataVersion:
    """The ``DataVersion`` of ``path`` (a file or directory under ``params``' assets root)."""
    return dg.DataVersion(content_hash(path, ignore=params.layout.unversioned))
