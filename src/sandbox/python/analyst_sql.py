"""sql() results as pandas DataFrames, whichever kernel carried them (src/sandbox/query.ts has the types).

The host sends columns ({name, type}) and batches of values, column by column. Each type becomes
a dtype that keeps NULL apart from NaN: nullable integers, floats and booleans (pd.NA for NULL),
Decimal objects, datetime64 for dates and timestamps (UTC for those with a time zone), uuid.UUID,
parsed JSON.
"""

import base64
import datetime
import decimal
import json
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


# Raw columns (QueryColumnsBatch in src/sandbox/query.ts): numpy reads each word column whole.
WORDS = {'bool': '>u1', 'i2': '>i2', 'i4': '>i4', 'u4': '>u4', 'i8': '>i8', 'f4': '>f4', 'f8': '>f8',
         'date': '>i4', 'usec': '>i8'}
EPOCH_2000_US = 10957 * 86400 * 10 ** 6  # 2000-01-01, PostgreSQL's epoch, in microseconds since 1970
NS_RANGE_US = (-9223372036854775 + 1, 9223372036854775 - 1)  # datetime64[ns]'s range, in microseconds
PY_RANGE_US = (-62135596800 * 10 ** 6, 253402300800 * 10 ** 6 - 1)  # Python's datetime: years 1 to 9999


def _infinite(name):
    return ValueError('%s is infinity, which pandas has no value for: select it as text (%s::text) '
                      'or leave it out with WHERE isfinite(…)' % (name, name))


def _beyond(name):
    return ValueError('%s holds a date outside years 1 to 9999 (BC, or past 9999), which Python has no '
                      'value for: select it as text (%s::text)' % (name, name))


def _times(values, mask, kind, name, np, pd):
    """Days (date) or microseconds (timestamps) since 2000-01-01 as datetime64[ns], or as Python
    dates and datetimes beyond its range (years 1 to 9999), as the values path makes them."""
    present = values[~mask].astype('int64')
    if present.size:
        infinite = np.iinfo(values.dtype)
        low, high = int(present.min()), int(present.max())
        if high == infinite.max or low == infinite.min:
            raise _infinite(name)
        # Checked before any arithmetic, which could overflow beyond: PostgreSQL goes to 294276 AD.
        if kind == 'date':
            low, high = low * 86400 * 10 ** 6, high * 86400 * 10 ** 6
        if low + EPOCH_2000_US < PY_RANGE_US[0] or high + EPOCH_2000_US > PY_RANGE_US[1]:
            raise _beyond(name)
    scale = 86400 * 10 ** 6 if kind == 'date' else 1
    us = np.where(mask, 0, values.astype('int64') * scale + EPOCH_2000_US)
    if not present.size or (us.min() > NS_RANGE_US[0] and us.max() < NS_RANGE_US[1]):
        stamps = np.where(mask, np.iinfo('int64').min, us * 1000).view('datetime64[ns]')
        index = pd.DatetimeIndex(stamps)
        return (index.tz_localize('UTC') if kind == 'timestamptz' else index).array
    objects = us.astype('datetime64[us]').astype(object)
    if kind == 'date':
        objects = np.fromiter((value.date() for value in objects), dtype=object, count=len(objects))
    elif kind == 'timestamptz':
        utc = datetime.timezone.utc
        objects = np.fromiter((value.replace(tzinfo=utc) for value in objects), dtype=object, count=len(objects))
    objects[mask] = None
    return pd.array(objects, dtype=object)


def _raw_column(wire, rows, spec, np, pd):
    """One column of a QueryColumnsBatch as the values path makes it (column())."""
    kind, layout = spec.get('type', 'other'), wire['layout']
    data = base64.b64decode(wire['data'])
    mask = (np.frombuffer(base64.b64decode(wire['nulls']), dtype=np.uint8) != 0) if wire.get('nulls') \
        else np.zeros(rows, dtype=bool)
    if layout in WORDS:
        values = np.frombuffer(data, dtype=WORDS[layout])
        if layout in ('date', 'usec'):
            return _times(values, mask, kind, spec.get('name', 'a column'), np, pd)
        if layout == 'bool':
            return pd.arrays.BooleanArray(values != 0, mask)
        if layout == 'f4':  # as its shortest text reads, as psycopg2 and the values path give it (1.1, not 1.100000023841858)
            return pd.arrays.FloatingArray(values.astype('float32').astype(str).astype('float64'), mask)
        if layout == 'f8':
            return pd.arrays.FloatingArray(values.astype('float64'), mask)
        return pd.arrays.IntegerArray(values.astype('int64'), mask)
    if layout == 'uuid':
        objects = np.fromiter((uuid.UUID(bytes=data[at:at + 16]) for at in range(0, rows * 16, 16)),
                              dtype=object, count=rows)
    elif layout == 'bytes':
        ends = np.frombuffer(base64.b64decode(wire.get('ends') or ''), dtype='<u4')
        starts = np.concatenate(([0], ends[:-1])) if rows else ends
        objects = np.fromiter((data[start:end] for start, end in zip(starts.tolist(), ends.tolist())),
                              dtype=object, count=rows)
    else:  # text: a NUL after each value
        objects = np.empty(rows, dtype=object)
        objects[:] = data.decode('utf-8').split('\x00')[:rows]
        convert = decimal.Decimal if kind == 'decimal' else json.loads if kind == 'json' else None
        if convert is not None:  # a NULL's text is empty: converted are only the others
            present = ~mask
            objects[present] = np.frompyfunc(convert, 1, 1)(objects[present])
        elif kind != 'text':  # a type cast to its text (time, interval, arrays, …): as the values path reads it
            objects[mask] = None
            return column(objects, kind)
    if mask.any():
        objects[mask] = None
    return pd.array(objects, dtype=object)


class FrameBuilder:
    """Makes each batch's arrays as it arrives, while the host reads the next one, so that the
    DataFrame is ready soon after the last row (rather than after converting them all then)."""

    def __init__(self, columns):
        self.columns = columns
        self.parts = [[] for _ in columns]

    def add(self, values):
        for index, spec in enumerate(self.columns):
            self.parts[index].append(column(values[index], spec.get('type', 'other')))

    def add_raw(self, rows, wires):
        import numpy as np
        import pandas as pd

        for index, (wire, spec) in enumerate(zip(wires, self.columns)):
            self.parts[index].append(_raw_column(wire, rows, spec, np, pd))

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
        elif kind == 'query-rows' and 'columns' in answer:
            builder.add_raw(answer['rows'], answer['columns'])
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
