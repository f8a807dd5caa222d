"""A DataFrame or Series as JSON-safe columns: the `analyst/data` form of a result. Shared by the
kernels of every engine (the local kernel imports it; the Jupyter engine sends it to its kernels),
so `Result.data` is the same wherever the code ran."""

import json

DATA_ROWS_CAP = 10_000


def with_index_columns(frame):
    """The frame with its labelled index levels as columns. An unnamed integer index is dropped: a
    plain 0, 1, 2…, or the row numbers a filter kept, which are positions rather than labels."""
    import pandas as pd

    index = frame.index
    if index.nlevels == 1 and index.name is None and (
            isinstance(index, pd.RangeIndex) or pd.api.types.is_integer_dtype(index.dtype)):
        return frame
    names = [n if n is not None else ('index' if frame.index.nlevels == 1 else 'level_%d' % i)
             for i, n in enumerate(frame.index.names)]
    frame = frame.copy()
    frame.index = frame.index.set_names(names)
    return frame.reset_index()


def column_names(frame):
    """Column labels as text: a tuple (several header levels) joined with ' / '."""
    return [' / '.join(map(str, c)) if isinstance(c, tuple) else str(c) for c in frame.columns]


def json_safe_columns(frame):
    """A DataFrame as {column: [values]}: dates as ISO strings, NaN as null, the index kept when it
    carries labels. At most DATA_ROWS_CAP rows."""
    import pandas as pd

    if isinstance(frame, pd.Series):
        frame = frame.to_frame(name=frame.name if frame.name is not None else 'value')
    frame = with_index_columns(frame.head(DATA_ROWS_CAP))
    columns = column_names(frame)
    split = json.loads(frame.to_json(orient='split', date_format='iso', default_handler=str, index=False))
    data = {}
    for position, name in enumerate(columns):
        key = name
        while key in data:
            key += '_'
        data[key] = [row[position] for row in split['data']]
    return data


# ---------------------------------------------------------------- frames kept for paging
# A DataFrame result is kept whole, by an id, for the life of the kernel: the host pages, sorts,
# filters and downloads it here (frame_request), so a grid of ten million rows sends the browser
# only the rows it shows. A kernel that restarts (or replays) keeps new ids: an old id is gone.

FRAMES = {}
_FRAME_IDS = iter(range(1, 1 << 62))
# Named at the first frame, not at import: kernels forked from one preloaded process share what
# was made at import, and an id must never name another kernel's frame.
_KERNEL = []
FRAMES_KEPT = 200


def keep_frame(obj):
    """Keeps a DataFrame (or Series) result; returns its handle {id, rows, columns}."""
    import pandas as pd

    frame = obj.to_frame(name=obj.name if obj.name is not None else 'value') if isinstance(obj, pd.Series) else obj
    if not _KERNEL:
        import os

        _KERNEL.append(os.urandom(6).hex())
    frame_id = '%s-%d' % (_KERNEL[0], next(_FRAME_IDS))
    FRAMES[frame_id] = {'frame': frame, 'flat': None}
    while len(FRAMES) > FRAMES_KEPT:
        FRAMES.pop(next(iter(FRAMES)))
    return {'id': frame_id, 'rows': int(len(frame)), 'columns': int(frame.shape[1])}


class FrameRequestError(Exception):
    """A request the caller got wrong (a column that is not there, a filter that does not parse)."""


def _flat(kept):
    """The frame as the grid shows it: labelled index levels as columns, column names as strings."""
    if kept['flat'] is None:
        frame = with_index_columns(kept['frame'])
        names = column_names(frame)
        if list(frame.columns) != names:
            frame = frame.copy(deep=False)
            frame.columns = names
        kept['flat'] = frame
    return kept['flat']


def _select(frame, request):
    """The rows a request keeps, in its order: filter (a pandas query), search, then sort."""
    expression = (request.get('filter') or '').strip()
    if expression:
        try:
            frame = frame.query(expression)
        except Exception as error:
            raise FrameRequestError('The filter %r does not work: %s: %s' % (expression, type(error).__name__, error))
    search = (request.get('search') or '').strip()
    if search:
        import numpy as np

        hit = np.zeros(len(frame), dtype=bool)
        for name in frame.columns:
            hit |= frame[name].astype(str).str.contains(search, case=False, regex=False).to_numpy()
        frame = frame[hit]
    sort = (request.get('sort') or '').strip()
    if sort:
        descending = sort.startswith('-')
        column = sort[1:] if descending else sort
        if column not in frame.columns:
            raise FrameRequestError('There is no column %r to sort by; the columns are %s'
                                    % (column, ', '.join(map(repr, frame.columns))))
        frame = frame.sort_values(column, ascending=not descending, kind='stable')
    return frame


def _selected(kept, request):
    """_select, remembered for the last selection of each frame: a download asks for its rows part
    by part, and the pages of one sort come one after another."""
    key = tuple((request.get(name) or '').strip() for name in ('filter', 'search', 'sort'))
    last = kept.get('selected')
    if last is not None and last[0] == key:
        return last[1]
    frame = _select(_flat(kept), request)
    kept['selected'] = (key, frame)
    return frame


PART_ROWS_CAP = 200_000
# An Excel sheet's rows (1,048,576), less the header's.
XLSX_ROWS = 1_048_575


def _kinds(frame):
    """Each column's kind for a typed file (Parquet): int, float, bool, datetime or string."""
    import pandas as pd

    kinds = {}
    for name in frame.columns:
        dtype = frame[name].dtype
        if pd.api.types.is_bool_dtype(dtype):
            kinds[name] = 'bool'
        elif pd.api.types.is_integer_dtype(dtype):
            kinds[name] = 'int'
        elif pd.api.types.is_float_dtype(dtype):
            kinds[name] = 'float'
        elif pd.api.types.is_datetime64_any_dtype(dtype):
            kinds[name] = 'datetime'
        else:
            kinds[name] = 'string'
    return kinds


def _part(frame, kind, request):
    """Rows offset… of the selection, for a download sent as it is made: CSV text (the header with
    the first part), or typed columns (dates as epoch milliseconds, other objects as text)."""
    import pandas as pd

    offset = max(0, int(request.get('offset') or 0))
    limit = min(PART_ROWS_CAP, max(1, int(request.get('limit') or 50_000)))
    part = frame.iloc[offset:offset + limit]
    answer = {'rows': int(len(frame)), 'offset': offset, 'count': int(len(part))}
    if kind == 'csv-part':
        answer['text'] = part.to_csv(header=offset == 0, index=False)
        return answer
    kinds = _kinds(frame)
    data = {}
    for name in part.columns:
        column = part[name]
        if kinds[name] == 'datetime':
            stamps = pd.to_datetime(column)
            if getattr(stamps.dt, 'tz', None) is not None:
                stamps = stamps.dt.tz_convert('UTC').dt.tz_localize(None)
            values = stamps.to_numpy(dtype='datetime64[ms]').astype('int64').tolist()
            data[name] = [None if missing else value for value, missing in zip(values, stamps.isna().tolist())]
        elif kinds[name] == 'string':
            data[name] = [None if value is None or value != value else str(value) for value in column.tolist()]
        else:
            data[name] = [None if missing else value
                          for value, missing in zip(column.tolist(), column.isna().tolist())]
    answer.update(kinds=kinds, data=data)
    return answer


def print_file_part(path, offset, size):
    """Bytes offset… of a file the host asked the kernel to write (an XLSX download), in base64."""
    import base64
    import sys

    if not path.startswith('/tmp/analyst-table-'):
        raise ValueError('not a table download')
    with open(path, 'rb') as file:
        file.seek(offset)
        chunk = file.read(size)
    sys.stdout.write(FRAME_MARK + json.dumps({'data': base64.b64encode(chunk).decode('ascii'),
                                              'end': len(chunk) < size}) + '\n')


def _stats(frame):
    """Per column: its type, nulls, and a small histogram (numbers) or the top values (the rest)."""
    import numpy as np
    import pandas as pd

    stats = {}
    for name in frame.columns:
        column = frame[name]
        entry = {'type': str(column.dtype), 'nulls': int(column.isna().sum())}
        values = column.dropna()
        if pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column) and len(values):
            counts, edges = np.histogram(values.astype(float), bins=10)
            entry.update(min=float(values.min()), max=float(values.max()), mean=float(values.mean()),
                         histogram={'counts': counts.tolist(), 'edges': edges.tolist()})
        else:
            top = values.astype(str).value_counts().head(5)
            entry.update(unique=int(values.nunique()), top=[[str(k), int(v)] for k, v in top.items()])
        stats[name] = entry
    return stats


def frame_request(request):
    """Answers the host about a kept frame; returns JSON-safe data or {'error', 'message'}.

    kind 'rows': {rows (after filter and search), offset, data: {column: values}}
    kind 'stats': {rows, columns: {name: stats}}
    kind 'csv' / 'xlsx': writes the selected rows to request['path'], returns {rows, path}
    """
    kept = FRAMES.get(request.get('id'))
    if kept is None:
        return {'error': 'gone', 'message': 'This table is no longer in the kernel (it restarted since)'}
    try:
        frame = _selected(kept, request)
        kind = request.get('kind', 'rows')
        if kind == 'stats':
            return {'rows': int(len(frame)), 'columns': _stats(frame)}
        if kind in ('csv-part', 'columns-part'):
            return _part(frame, kind, request)
        if kind in ('csv', 'xlsx'):
            if kind == 'csv':
                frame.to_csv(request['path'], index=False)
            else:
                if len(frame) > XLSX_ROWS:
                    raise FrameRequestError(
                        'An XLSX sheet holds at most %s rows under its header, and this table has %s: '
                        'filter it, or download it as CSV or Parquet' % (format(XLSX_ROWS, ','), format(len(frame), ',')))
                frame.to_excel(request['path'], index=False)
            return {'rows': int(len(frame)), 'path': request['path']}
        offset = max(0, int(request.get('offset') or 0))
        limit = min(1000, max(1, int(request.get('limit') or 50)))
        page = frame.iloc[offset:offset + limit]
        split = json.loads(page.to_json(orient='split', date_format='iso', default_handler=str, index=False))
        data = {name: [row[i] for row in split['data']] for i, name in enumerate(frame.columns)}
        return {'rows': int(len(frame)), 'offset': offset, 'data': data}
    except FrameRequestError as error:
        return {'error': 'bad-request', 'message': str(error)}


def print_frame_request(text):
    """frame_request for a host that runs it as a cell: the request as JSON, the answer on stdout."""
    import sys

    answer = finite(frame_request(json.loads(text)))
    sys.stdout.write(FRAME_MARK + json.dumps(answer, default=str, allow_nan=False) + '\n')


FRAME_MARK = '\x1eanalyst-frame '


def finite(value):
    """NaN and infinities, which JSON has no words for, as None: the host drops a line it cannot parse."""
    if isinstance(value, float):
        return value if value == value and value not in (float('inf'), float('-inf')) else None
    if isinstance(value, dict):
        return {key: finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(item) for item in value]
    return value


def variables(namespace):
    """The kernel's variables as a person would list them: name, type, and for frames and arrays
    their shape and memory. Modules, functions, classes and names that start with _ are left out."""
    import types

    listed = []
    for name, value in list(namespace.items()):
        if name.startswith('_') or isinstance(value, (types.ModuleType, types.FunctionType, type)):
            continue
        if name in ('In', 'Out', 'exit', 'quit', 'get_ipython', 'sql', 'describe_table'):
            continue
        entry = {'name': name, 'type': type(value).__name__}
        shape = getattr(value, 'shape', None)
        if isinstance(shape, tuple):
            entry['shape'] = [int(n) for n in shape]
        try:
            if hasattr(value, 'memory_usage') and callable(value.memory_usage):
                usage = value.memory_usage(index=True)
                entry['bytes'] = int(usage.sum() if hasattr(usage, 'sum') else usage)
            elif hasattr(value, 'nbytes'):
                entry['bytes'] = int(value.nbytes)
        except Exception:
            pass
        if 'shape' not in entry and isinstance(value, (list, dict, set, tuple, str)):
            entry['length'] = len(value)
        listed.append(entry)
    return sorted(listed, key=lambda entry: entry['name'])


def print_variables(namespace=None):
    """variables() for a host that runs it as a cell, on stdout: of the kernel's default context
    (the host asks from a context of its own, so that asking is no cell of the session's)."""
    import sys

    if namespace is None:
        kernel = sys.modules.get('analyst_kernel')
        default = getattr(kernel, 'contexts', {}).get('default') if kernel else None
        namespace = default.namespace if default is not None else sys.modules['__main__'].__dict__
    sys.stdout.write(FRAME_MARK + json.dumps(finite({'variables': variables(namespace)}), default=str) + '\n')
