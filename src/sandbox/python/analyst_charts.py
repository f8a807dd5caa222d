"""The data behind a matplotlib figure, in the shape E2B's code interpreter gives it (`Result.chart`):
`type` (line, scatter, bar, pie, box_and_whisker, superchart, unknown), `title`, axis labels, units,
ticks and scales, and `elements` with the plotted values.

Ported from E2B's chart_data_extractor (e2b_charts, MIT License, Copyright (c) 2025 FOUNDRYLABS,
INC.; github.com/e2b-dev/code-interpreter), without its pydantic models, so that code written for
E2B's charts reads the same fields here. Values are plain JSON: numbers, strings, lists, None.
"""

import datetime
import re
from decimal import Decimal, localcontext

UNIT = re.compile(r"\s\((.*?)\)|\[(.*?)\]")
# Points kept per series: a figure of a million points would otherwise make a result of megabytes.
POINTS_CAP = 10_000


def dynamic_round(number):
    """About 8 significant digits, as E2B rounds box and pie values."""
    value = Decimal(str(number))
    with localcontext() as context:
        context.prec = max(1, 8 - value.adjusted())
        return float(+value)


def _number(value):
    """numpy scalars and dates as JSON values."""
    import numpy

    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat()
    if isinstance(value, numpy.datetime64):
        return str(value.astype('datetime64[s]'))
    if isinstance(value, (numpy.integer, numpy.floating)):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value)
    return str(value)


def _text_or_none(text):
    return text if text else None


def is_grid_line(line):
    x, y = line.get_xdata(), line.get_ydata()
    if len(x) != 2 or len(y) != 2:
        return False
    return x[0] == x[1] or y[0] == y[1]


def _converter(axis):
    getter = getattr(axis, 'get_converter', None)
    return getter() if callable(getter) else getattr(axis, 'converter', None)


def _is_date_converter(converter):
    import matplotlib.dates

    kinds = tuple(
        kind
        for kind in (getattr(matplotlib.dates, name, None) for name in ('_SwitchableDateConverter', 'DateConverter',
                                                                         'ConciseDateConverter'))
        if kind is not None
    )
    return bool(kinds) and isinstance(converter, kinds)


def _base(ax, kind):
    return {'type': kind, 'title': _text_or_none(ax.get_title()), 'elements': []}


def _two_d(ax, kind):
    chart = _base(ax, kind)
    chart['x_label'] = _text_or_none(ax.get_xlabel())
    chart['y_label'] = _text_or_none(ax.get_ylabel())
    for axis in ('x', 'y'):
        label = chart[axis + '_label']
        match = UNIT.search(label) if label else None
        chart[axis + '_unit'] = (match.group(1) or match.group(2)) if match else None
    return chart


def _swap_axes(chart):
    chart['x_label'], chart['y_label'] = chart['y_label'], chart['x_label']
    chart['x_unit'], chart['y_unit'] = chart['y_unit'], chart['x_unit']


def _ticks(converter, ticks):
    import matplotlib.dates

    if _is_date_converter(converter):
        return [matplotlib.dates.num2date(tick).isoformat() for tick in ticks]
    if len(ticks) and isinstance(ticks[0], (int, float)) or hasattr(ticks, 'dtype'):
        return [float(tick) for tick in ticks]
    return list(ticks)


def _scale(converter, scale, ticks, labels):
    if _is_date_converter(converter):
        return 'datetime'
    if scale != 'linear':
        return scale
    for i, (tick, label) in enumerate(zip(ticks, labels)):
        if isinstance(tick, (int, float)) and tick == i and str(i) != label:
            continue
        return 'linear'
    return 'categorical'


def _point_chart(ax, kind):
    chart = _two_d(ax, kind)
    for axis, name in ((ax.xaxis, 'x'), (ax.yaxis, 'y')):
        converter = _converter(axis)
        labels = [label.get_text() for label in axis.get_ticklabels()]
        ticks = _ticks(converter, axis.get_ticklocs())
        chart[name + '_ticks'] = ticks
        chart[name + '_tick_labels'] = labels
        chart[name + '_scale'] = _scale(converter, axis.get_scale(), ticks, labels)
    return chart


def line_chart(ax):
    chart = _point_chart(ax, 'line')
    for line in ax.get_lines():
        if is_grid_line(line):
            continue
        label = line.get_label()
        if label.startswith('_child'):
            label = 'Line %d' % int(label[6:])
        points = [[_number(x), _number(y)] for x, y in zip(line.get_xdata()[:POINTS_CAP], line.get_ydata()[:POINTS_CAP])]
        chart['elements'].append({'label': label, 'points': points})
    return chart


def scatter_chart(ax):
    chart = _point_chart(ax, 'scatter')
    for collection in ax.collections:
        points = [[_number(x), _number(y)] for x, y in collection.get_offsets()[:POINTS_CAP]]
        chart['elements'].append({'label': collection.get_label(), 'points': points})
    return chart


def bar_chart(ax):
    chart = _two_d(ax, 'bar')
    for container in ax.containers:
        group = container.get_label()
        if group.startswith('_container'):
            group = 'Group %d' % int(group[10:])
        heights = [rect.get_height() for rect in container]
        if all(height == heights[0] for height in heights):
            # horizontal bars (barh): the values are the widths, the labels on the y axis
            _swap_axes(chart)
            labels = [label.get_text() for label in ax.get_yticklabels()]
            values = [rect.get_width() for rect in container]
        else:
            labels = [label.get_text() for label in ax.get_xticklabels()]
            values = heights
        for label, value in zip(labels, values):
            chart['elements'].append({'label': label, 'group': group, 'value': float(value)})
    return chart


def box_chart(ax):
    chart = _two_d(ax, 'box_and_whisker')
    labels = [item.get_text() for item in ax.get_xticklabels()]
    boxes = []
    for label, box in zip(labels, ax.patches):
        vertices = box.get_path().vertices
        xs = [dynamic_round(x) for x in vertices[:, 0]]
        ys = [dynamic_round(y) for y in vertices[:, 1]]
        boxes.append({'x': min(xs), 'y': min(ys), 'label': label, 'width': max(xs) - min(xs),
                      'height': max(ys) - min(ys), 'outliers': []})
    vertical = bool(boxes) and all(box['height'] == boxes[0]['height'] for box in boxes)
    if vertical:
        _swap_axes(chart)
        for box in boxes:
            box['x'], box['y'] = box['y'], box['x']
            box['width'], box['height'] = box['height'], box['width']
    for line in ax.lines:
        xs = [dynamic_round(x) for x in line.get_xdata()]
        ys = [dynamic_round(y) for y in line.get_ydata()]
        if vertical:
            xs, ys = ys, xs
        if len(xs) == 1:
            owner = next((b for b in boxes if b['x'] <= xs[0] <= b['x'] + b['width']), None)
            if owner is None:
                continue
            owner['outliers'].append(ys[0])
        if len(ys) != 2:
            continue
        owner = next((b for b in boxes if b['x'] <= xs[0] <= xs[1] <= b['x'] + b['width']), None)
        if owner is None:
            continue
        if ys[0] == ys[1] and owner['y'] <= ys[0] <= owner['y'] + owner['height']:
            owner['median'] = ys[0]
            continue
        low, high = min(ys), max(ys)
        if high == owner['y']:
            owner['whisker_lower'] = low
        elif low == owner['y'] + owner['height']:
            owner['whisker_upper'] = high
    chart['elements'] = [
        {'label': box['label'], 'min': box.get('whisker_lower'), 'first_quartile': box['y'],
         'median': box.get('median'), 'third_quartile': box['y'] + box['height'],
         'max': box.get('whisker_upper'), 'outliers': box['outliers']}
        for box in boxes
    ]
    return chart


def pie_chart(ax):
    chart = _base(ax, 'pie')
    for wedge in ax.patches:
        angle = abs(dynamic_round(Decimal(float(wedge.theta2)) - Decimal(float(wedge.theta1))))
        chart['elements'].append({'label': wedge.get_label(), 'angle': angle, 'radius': float(wedge.r)})
    return chart


def chart_type(ax):
    from matplotlib.collections import PathCollection
    from matplotlib.lines import Line2D
    from matplotlib.patches import PathPatch, Rectangle, Wedge
    from matplotlib.text import Text

    children = getattr(ax, '_children', None)
    objects = [o for o in (children if children is not None else ax.get_children()) if not isinstance(o, Text)]
    if all(isinstance(o, Line2D) for o in objects):
        return 'line'
    if all(isinstance(o, (PathPatch, Line2D)) for o in objects):
        return 'box_and_whisker'
    objects = [o for o in objects if not (isinstance(o, Line2D) and is_grid_line(o))]
    if all(isinstance(o, PathCollection) for o in objects):
        return 'scatter'
    if all(isinstance(o, Wedge) for o in objects):
        return 'pie'
    if all(isinstance(o, Rectangle) for o in objects):
        return 'bar'
    return 'unknown'


EXTRACTORS = {'line': line_chart, 'scatter': scatter_chart, 'bar': bar_chart, 'pie': pie_chart,
              'box_and_whisker': box_chart}


def axes_chart(ax):
    kind = chart_type(ax)
    extractor = EXTRACTORS.get(kind)
    return extractor(ax) if extractor else _base(ax, kind)


def figure_chart(figure):
    """The chart of a figure, or None when it has no data (a blank figure)."""
    axes = figure.get_axes()
    if not axes or not any(ax.has_data() for ax in axes):
        return None
    if len(axes) > 1:
        return {'type': 'superchart', 'title': _text_or_none(figure._suptitle.get_text() if figure._suptitle else ''),
                'elements': [axes_chart(ax) for ax in axes]}
    return axes_chart(axes[0])
