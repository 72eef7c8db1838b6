"""Annotation cleaning, splits, data-quality suites and the STPLS3D-Refer construction.

Submodules are imported lazily by their users (``urbex.annotations.clean``, ``.splits``,
``.quality``, ``.stpls3d_refer``, ``.stages``); importing this package is cheap.
"""

__all__: list[str] = []
