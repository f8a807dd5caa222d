"""A DataFrame or Series as JSON-safe columns: the `analyst/data` form of a result. Shared by the
kernels of every engine (the local kernel imports it; the Jupyter engine sends it to its kernels),
so `Result.data` is the same wherever the code ran."""

import json

DATA_ROWS_CAP = 10_000


def json_safe_columns(frame):
    """A DataFrame as {column: [values]}: dates as ISO strings, NaN as null, the index kept when it
    carries labels. At most DATA_ROWS_CAP rows."""
    import pandas as pd

    if isinstance(frame, pd.Series):
        frame = frame.to_frame(name=frame.name if frame.name is not None else 'value')
    frame = frame.head(DATA_ROWS_CAP)
    if not isinstance(frame.index, pd.RangeIndex) or frame.index.name is not None:
        names = [n if n is not None else ('index' if frame.index.nlevels == 1 else 'level_%d' % i)
                 for i, n in enumerate(frame.index.names)]
        frame = frame.copy()
        frame.index = frame.index.set_names(names)
        frame = frame.reset_index()
    columns = [' / '.join(map(str, c)) if isinstance(c, tuple) else str(c) for c in frame.columns]
    split = json.loads(frame.to_json(orient='split', date_format='iso', default_handler=str, index=False))
    data = {}
    for position, name in enumerate(columns):
        key = name
        while key in data:
            key += '_'
        data[key] = [row[position] for row in split['data']]
    return data
