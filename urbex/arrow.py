"""Arrow tables from Python or NumPy columns, and read from Parquet, without importing pandas.

pyarrow's ``pa.array``, ``Table.from_pydict`` and ``Table.from_pylist`` import pandas on their
first call whenever it is installed (to test whether a value is a pandas object): 0.4–0.5 s
of a command's start, in every ``urbex cache`` and ``urbex evaluate`` (their first Parquet
file) and in every evaluation worker process, though none of them uses pandas. Here the
columns go through polars, which hands them to Arrow over the C data interface, and are cast
to the schema they are written with: the same table, and the same Parquet bytes, as
``pa.Table.from_pydict(columns, schema=schema)`` (tests/test_arrow.py). Likewise
``pq.read_table`` goes through ``pyarrow.dataset``, which imports pandas: :func:`read_parquet`
reads one file with ``pq.ParquetFile``, which does not.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["read_parquet", "row_table", "table"]


def table(columns: Mapping[str, Any], schema: pa.Schema) -> pa.Table:
    """A table of ``schema`` from ``columns`` (name → list or 1-D array; None is null).

    Raises
    ------
    ValueError
        The column names are not the schema's, or the columns differ in length.
    TypeError
        A value does not fit its column's type (a string in a number column, ...).
    """
    import polars as pl

    if set(columns) != set(schema.names):
        raise ValueError(
            f"arrow.table: columns {sorted(columns)} are not the schema's {sorted(schema.names)}"
        )
    lengths = {name: len(columns[name]) for name in schema.names}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"arrow.table: columns of different lengths {lengths}")
    types = {f.name: _polars_type(f.type) for f in schema}
    try:
        frame = pl.DataFrame({name: columns[name] for name in schema.names}, schema=types)
    except (pl.exceptions.PolarsError, OverflowError, TypeError) as exc:
        raise TypeError(f"arrow.table: a value does not fit its column's type: {exc}") from exc
    return frame.to_arrow().cast(schema)


@functools.cache
def _polars_types() -> dict[pa.DataType, Any]:
    """Primitive Arrow type → polars type (``schema.empty_table()`` would import pandas)."""
    import polars as pl
    import pyarrow as pa

    return {
        pa.bool_(): pl.Boolean, pa.string(): pl.String, pa.large_string(): pl.String,
        pa.null(): pl.Null, pa.float32(): pl.Float32, pa.float64(): pl.Float64,
        pa.int8(): pl.Int8, pa.int16(): pl.Int16, pa.int32(): pl.Int32, pa.int64(): pl.Int64,
        pa.uint8(): pl.UInt8, pa.uint16(): pl.UInt16, pa.uint32(): pl.UInt32,
        pa.uint64(): pl.UInt64,
    }  # fmt: skip


def _polars_type(dtype: pa.DataType) -> Any:
    """The polars type of a primitive Arrow type."""
    simple = _polars_types()
    if dtype not in simple:
        raise TypeError(f"arrow.table: column type {dtype} is not supported (primitive types only)")
    return simple[dtype]


def row_table(row: Mapping[str, Any]) -> pa.Table:
    """A one-row table of ``row``'s scalars, typed as ``pa.Table.from_pylist([row])`` types
    them: bool, int64, float64, string, and null for None.

    Raises
    ------
    TypeError
        A value is not a bool, int, float, str or None.
    """
    import pyarrow as pa

    kinds = ((bool, pa.bool_()), (int, pa.int64()), (float, pa.float64()), (str, pa.string()))
    fields = []
    for name, value in row.items():
        if value is None:
            fields.append(pa.field(name, pa.null()))
            continue
        for kind, dtype in kinds:  # bool before int: a bool is an int
            if isinstance(value, kind):
                fields.append(pa.field(name, dtype))
                break
        else:
            raise TypeError(
                f"arrow.row_table: {name!r} is a {type(value).__name__}; expected bool, int, "
                "float, str or None"
            )
    return table({name: [value] for name, value in row.items()}, pa.schema(fields))


def read_parquet(path: str | os.PathLike[str], columns: Sequence[str] | None = None) -> pa.Table:
    """One Parquet file's table (``columns``: only these), as ``pq.read_table(path)`` reads it.

    Raises what pyarrow raises for a missing or corrupt file (``OSError``, ``ArrowInvalid``).
    """
    import pyarrow.parquet as pq

    with pq.ParquetFile(path) as pf:
        return pf.read(columns=list(columns) if columns is not None else None)
