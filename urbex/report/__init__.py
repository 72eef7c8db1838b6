"""What a person reads: the DuckDB warehouse and its schemas, the comparison and paper tables,
the diagnostics and their plots, the static results page.

Above evaluation and training (:mod:`urbex.eval`, :mod:`urbex.train`): it reads their files and
never plays an episode itself, except the results page's replay of a stored trajectory.
"""

__all__: list[str] = []
