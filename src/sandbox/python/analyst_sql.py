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

# Speed: a million rows must arrive faster than pandas.read_sql reads them (bench/sources.mjs).
# numpy builds typed arrays from lists in C; np.fromiter builds object arrays without numpy's
# search for nested sequences, which np.array and pd.array make element by element (50× slower
# on Decimals, and wrong on JSON lists). Values are walked in Python only where NULLs are.


def _mask(values, np):
    return np.fromiter((value is None for value in values), dtype=bool, count=len(values))


def _floats(values, np, pd):
    # 'NaN', 'Infinity' and '-Infinity' (JSON has no such numbers) convert as float() reads them.
    if values.count(None) == 0:
        return pd.arrays.FloatingArray(np.array(values, dtype='float64'), np.zeros(len(values), dtype=bool))
    data = np.array([0.0 if value is None else value for value in values], dtype='float64')
    return pd.arrays.FloatingArray(data, _mask(values, np))


def _ints(values, np, pd):
    # Beyond 2^53 a value comes as its decimal string, which numpy parses exactly.
    try:
        if values.count(None) == 0:
            return pd.arrays.IntegerArray(np.array(values, dtype='int64'), np.zeros(len(values), dtype=bool))
        data = np.array([0 if value is None else value for value in values], dtype='int64')
        return pd.arrays.IntegerArray(data, _mask(values, np))
    except OverflowError:  # beyond int64: Python ints
        return _objects(values, int, np, pd)


def _objects(values, convert, np, pd):
    if convert is None:
        array = np.fromiter(values, dtype=object, count=len(values))
    else:
        array = np.fromiter(
            (None if value is None else convert(value) for value in values), dtype=object, count=len(values))
    return pd.array(array, dtype=object)


def _datetimes(values, np, pd, utc):
    try:
        return pd.to_datetime(pd.Series(np.fromiter(values, dtype=object, count=len(values))), utc=utc).array
    except (ValueError, OverflowError):
        # Out of datetime64's range (year 1, 9999): Python datetimes, as the source had them.
        parse = datetime.date.fromisoformat if not utc and all(v is None or len(v) == 10 for v in values) \
            else datetime.datetime.fromisoformat
        return _objects(values, parse, np, pd)


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
        return _objects(values, decimal.Decimal, np, pd)
    if kind in ('date', 'timestamp'):
        return _datetimes(values, np, pd, utc=False)
    if kind == 'timestamptz':
        return _datetimes(values, np, pd, utc=True)
    if kind == 'time':
        return _objects(values, datetime.time.fromisoformat, np, pd)
    if kind == 'interval':
        return pd.to_timedelta(pd.Series(values, dtype=object), unit='s' if any(isinstance(v, (int, float)) for v in values) else None).array
    if kind == 'uuid':
        return _objects(values, uuid.UUID, np, pd)
    if kind == 'bytes':
        return _objects(values, base64.b64decode, np, pd)
    if kind in ('json', 'text'):
        return _objects(values, None, np, pd)
    return _objects(values, str, np, pd)


def _joined(parts, np, pd):
    """One column from its batches' arrays: joined as they are when all have one type, else as
    Python objects (a batch beyond int64 or datetime64's range made objects)."""
    if len(parts) == 1:
        return parts[0]
    if all(type(part) is type(parts[0]) and part.dtype == parts[0].dtype for part in parts):
        return type(parts[0])._concat_same_type(parts)
    values = np.concatenate([np.asarray(part, dtype=object) for part in parts])
    return pd.array(np.fromiter((None if v is pd.NA else v for v in values), dtype=object, count=len(values)), dtype=object)


class FrameBuilder:
    """Makes each batch's arrays as it arrives, while the host reads the next one, so that the
    DataFrame is ready soon after the last row (rather than after converting them all then)."""

    def __init__(self, columns):
        self.columns = columns
        self.parts = [[] for _ in columns]

    def add(self, values):
        for index, spec in enumerate(self.columns):
            self.parts[index].append(column(values[index], spec.get('type', 'other')))

    def frame(self):
        import numpy as np
        import pandas as pd

        # Built by position: a query may name two columns alike (SELECT a, a).
        if not self.columns:
            return pd.DataFrame(index=pd.RangeIndex(0))
        arrays = [_joined(parts, np, pd) if parts else column([], spec.get('type', 'other'))
                  for parts, spec in zip(self.parts, self.columns)]
        result = pd.DataFrame({index: array for index, array in enumerate(arrays)})
        result.columns = [spec['name'] for spec in self.columns]
        return result


def frame(columns, batches):
    """The DataFrame of a query: `columns` [{name, type}], `batches` [[values of column 0, …], …]."""
    builder = FrameBuilder(columns)
    for values in batches:
        builder.add(values)
    return builder.frame()


def question(query, source, params):
    """sql()'s question to the host, its arguments checked first (a wrong one says what to pass)."""
    if not isinstance(query, str):
        raise TypeError('sql() takes the query as a string, not %s' % type(query).__name__)
    if source is not None and not isinstance(source, str):
        raise TypeError('source is the name of a data source, a string')
    if params is not None and not isinstance(params, (list, tuple, dict)):
        raise TypeError('params is a list (for $1, ?) or a dict (for :name)')
    return {'type': 'query', 'query': query, 'source': source,
            'params': list(params) if isinstance(params, tuple) else params}


class QueryError(Exception):
    """A query the host refused or its source failed: the message says why and what to do."""


class TableDescription(str):
    """describe_table()'s text, shown as text (not a quoted string) when it ends a cell."""

    def __repr__(self):
        return str(self)


def description(answer):
    """describe_table()'s result from the host's answer ({text} or {error})."""
    if answer.get('error'):
        raise QueryError(answer['error'])
    return TableDescription(answer.get('text') or '')


def answered(answers):
    """The DataFrame from the host's answers (query-columns, query-rows…, query-end), each batch's
    arrays made as it arrives; a query-error raises QueryError (or KeyboardInterrupt) instead.
    A cut at a cap is said on stderr."""
    import sys

    builder = FrameBuilder([])
    for answer in answers:
        kind = answer['type']
        if kind == 'query-columns':
            builder = FrameBuilder(answer['columns'])
        elif kind == 'query-rows':
            builder.add(answer['values'])
        elif kind == 'query-end':
            if answer.get('truncated'):
                print('[sql] %s' % answer['truncated'], file=sys.stderr)
            break
        elif kind == 'query-error':
            if answer.get('name') == 'KeyboardInterrupt':
                raise KeyboardInterrupt
            raise QueryError(answer.get('message'))
    return builder.frame()
