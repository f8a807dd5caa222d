"""sql() results as pandas DataFrames, whichever kernel carried them (src/sandbox/query.ts has the types).

The host sends columns ({name, type}) and batches of values, column by column. Each type becomes
a dtype that keeps NULL apart from NaN: nullable integers, floats and booleans (pd.NA for NULL),
Decimal objects, datetime64 for dates and timestamps (UTC for those with a time zone), uuid.UUID,
parsed JSON.
"""

import base64
import datetime
import decimal
import uuid

FLOAT_WORDS = {'NaN': float('nan'), 'Infinity': float('inf'), '-Infinity': float('-inf')}


def _floats(values, np, pd):
    mask = np.fromiter((value is None for value in values), dtype=bool, count=len(values))
    data = np.fromiter(
        (0.0 if value is None else FLOAT_WORDS[value] if isinstance(value, str) else value for value in values),
        dtype='float64',
        count=len(values),
    )
    return pd.arrays.FloatingArray(data, mask)


def _ints(values, np, pd):
    numbers = [None if value is None else int(value) for value in values]
    if all(value is None or -(2**63) <= value < 2**63 for value in numbers):
        return pd.array(numbers, dtype='Int64')
    return pd.array(numbers, dtype=object)  # beyond int64: Python ints


def _objects(values, convert, pd):
    return pd.array([None if value is None else convert(value) for value in values], dtype=object)


def _datetimes(values, pd, utc):
    try:
        return pd.to_datetime(pd.Series(values, dtype=object), utc=utc).array
    except (ValueError, OverflowError):
        # Out of datetime64's range (year 1, 9999): Python datetimes, as the source had them.
        parse = datetime.date.fromisoformat if not utc and all(v is None or len(v) == 10 for v in values) \
            else datetime.datetime.fromisoformat
        return _objects(values, parse, pd)


def column(values, kind):
    """One column's values (a list, None for NULL) as a pandas array of its type."""
    import numpy as np
    import pandas as pd

    if kind == 'int':
        return _ints(values, np, pd)
    if kind == 'float':
        return _floats(values, np, pd)
    if kind == 'bool':
        return pd.array(values, dtype='boolean')
    if kind == 'decimal':
        return _objects(values, decimal.Decimal, pd)
    if kind in ('date', 'timestamp'):
        return _datetimes(values, pd, utc=False)
    if kind == 'timestamptz':
        return _datetimes(values, pd, utc=True)
    if kind == 'time':
        return _objects(values, datetime.time.fromisoformat, pd)
    if kind == 'interval':
        return pd.to_timedelta(pd.Series(values, dtype=object), unit='s' if any(isinstance(v, (int, float)) for v in values) else None).array
    if kind == 'uuid':
        return _objects(values, uuid.UUID, pd)
    if kind == 'bytes':
        return _objects(values, base64.b64decode, pd)
    if kind == 'json':
        return pd.array(values, dtype=object)
    return _objects(values, str, pd)


def frame(columns, batches):
    """The DataFrame of a query: `columns` [{name, type}], `batches` [[values of column 0, …], …]."""
    import pandas as pd

    arrays = []
    for index, spec in enumerate(columns):
        values = [value for batch in batches for value in batch[index]]
        arrays.append(column(values, spec.get('type', 'other')))
    # Built by position: a query may name two columns alike (SELECT a, a).
    result = pd.DataFrame({index: array for index, array in enumerate(arrays)})
    if not arrays:
        result = pd.DataFrame(index=pd.RangeIndex(0))
    result.columns = [spec['name'] for spec in columns]
    return result
