"""The data behind a matplotlib figure, in the shape E2B's code interpreter gives it (`Result.chart`):
`type` (line, scatter, bar, pie, box_and_whisker, superchart, unknown), `title`, axis labels, units,
ticks and scales, and `elements` with the plotted values.

Faithful or nothing: every element comes from the figure's own artists (a bar's rectangle, a line's
data, a collection's offsets, a wedge's angles, the lines a box plot is drawn with), one element per
artist. Axes whose artists cannot all be read so (an artist of another kind, a bar outside the bar
containers, a line with a gap, more points than a chart carries) get type unknown and no elements,
and the image stands alone. A bar or a box is named by its axis's category at its position, or by a
name set at a tick standing on it (pandas, `tick_label=`, `boxplot(labels=)`), never by tick order;
without one, by its position (a histogram's bin, by its range).

E2B's types and field names (github.com/e2b-dev/code-interpreter, chart_data_extractor, MIT
License, Copyright (c) 2025 FOUNDRYLABS, INC.), without its pydantic models; fields are added, never
changed: bars have `start`, `end` (their extent on the category axis) and `bottom`, bar charts
`orientation`, `x_scale`, `y_scale` and `histogram`, a series drawn as markers alone
`markers_only`, a box with its mean shown `mean`, line, scatter and bar charts the lines drawn
across them (axvline, axhline) as `reference_lines`. Values are plain JSON: finite numbers, strings.
"""

import datetime
import math
import numbers
import re
import sys
from decimal import Decimal, localcontext

UNIT = re.compile(r"\s\((.*?)\)|\[(.*?)\]")
# Past these a figure gets no data rather than part of it (a result of megabytes otherwise).
POINTS_CAP = 10_000
BARS_CAP = 10_000
NO_LINE = ('None', 'none', '', ' ')


class Unreadable(Exception):
    """What some axes show cannot be told faithfully from their artists."""


def dynamic_round(number):
    """E2B's rounding of pie angles: fewer decimals the larger the number (205.714, 36.0), which
    clears the noise of matplotlib's single-precision angles."""
    value = Decimal(str(number))
    with localcontext() as context:
        context.prec = max(1, 8 - value.adjusted())
        return float(+value)


def _text_or_none(text):
    return text if text else None


def _short(value, other=None):
    """A number for a label: 6 significant digits, more where it would read the same as `other`."""
    value += 0.0  # no '-0'
    for digits in range(6, 18):
        text = '%.*g' % (digits, value)
        if other is None or text != '%.*g' % (digits, other):
            return text
    return repr(value)


# ---------------------------------------------------------------- axes


def _converter(axis):
    getter = getattr(axis, 'get_converter', None)
    return getter() if callable(getter) else getattr(axis, 'converter', None)


def _is_categorical(axis):
    from matplotlib.category import StrCategoryConverter

    return isinstance(_converter(axis), StrCategoryConverter)


def _date_reader(axis):
    """A function from the axis's numbers to datetimes when the axis holds dates, else None."""
    import matplotlib.dates

    converter = _converter(axis)
    kinds = tuple(kind for kind in (getattr(matplotlib.dates, name, None)
                                    for name in ('DateConverter', '_SwitchableDateConverter')) if kind)
    if not isinstance(converter, kinds):
        return None
    if type(converter).__name__ == 'PeriodConverter':
        # pandas plots periods at their ordinals (weeks since 1970 for a weekly series, ...)
        freq = getattr(axis.axes, 'freq', None)
        pandas = sys.modules.get('pandas')
        if freq is None or pandas is None:
            raise Unreadable('periods without their frequency')

        def read_period(value):
            whole = math.floor(value)
            start = pandas.Period(ordinal=whole, freq=freq).start_time
            if value == whole:
                return start.to_pydatetime()
            following = pandas.Period(ordinal=whole + 1, freq=freq).start_time
            return (start + (following - start) * (value - whole)).to_pydatetime()

        return read_period

    def read_date(value):
        try:
            return matplotlib.dates.num2date(value)
        except (ValueError, OverflowError) as error:
            raise Unreadable('a date out of range') from error

    return read_date


def _date_text(moment):
    """A date as a label: the day alone at midnight."""
    if moment.time() == datetime.time(0) and not getattr(moment, 'nanosecond', 0):
        return moment.date().isoformat()
    return moment.replace(tzinfo=None).isoformat()


def _names(axis):
    """Positions on the axis that have a name: its categories, or the names set at fixed ticks.
    Ticks that an automatic locator placed name nothing, and neither do labels set without their
    positions (they follow tick order, whatever stands there). Sorted positions and their names."""
    import numpy
    from matplotlib import ticker

    if _is_categorical(axis):
        pairs = [(float(index), str(name)) for name, index in getattr(axis.units, '_mapping', {}).items()]
    else:
        locator, formatter = axis.get_major_locator(), axis.get_major_formatter()
        if type(locator) is not ticker.FixedLocator or not isinstance(formatter, (ticker.FixedFormatter,
                                                                                   ticker.FuncFormatter)):
            return numpy.array([]), []
        pairs = []
        for i, location in enumerate(locator.locs):
            try:
                name = formatter(location, i)
            except Exception:
                return numpy.array([]), []
            if name != '':
                pairs.append((float(location), str(name)))
    pairs.sort(key=lambda pair: pair[0])
    return numpy.array([p for p, _ in pairs], float), [n for _, n in pairs]


def _name_within(names, low, high):
    """The one name at a position within [low, high], or None (no name there, or several)."""
    import numpy

    positions, labels = names
    slack = 1e-9 * (abs(low) + abs(high) + (high - low)) + 1e-300
    first = numpy.searchsorted(positions, low - slack, 'left')
    last = numpy.searchsorted(positions, high + slack, 'right')
    return labels[first] if last - first == 1 else None


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


def _scale(axis, ticks, labels):
    if _date_reader(axis) is not None:
        return 'datetime'
    if axis.get_scale() != 'linear':
        return axis.get_scale()
    if _is_categorical(axis):
        return 'categorical'
    # E2B's rule: ticks at 0, 1, 2 ... named otherwise (pandas plots categories so)
    if ticks and all(tick == i and str(i) != label for i, (tick, label) in enumerate(zip(ticks, labels))):
        return 'categorical'
    return 'linear'


def _label(artist, kind, index):
    """An artist's label, or `kind N` for one matplotlib named privately (_child3: the 4th child)."""
    label = artist.get_label()
    if not label.startswith('_'):
        return label
    number = label[6:] if label.startswith('_child') else ''
    return '%s %s' % (kind, number if number.isdigit() else index)


# ---------------------------------------------------------------- values


def _value(value):
    """One plotted value (as the user gave it) as JSON, or None where nothing is drawn."""
    if isinstance(value, str):
        return value
    pandas = sys.modules.get('pandas')
    if pandas is not None:
        if value is pandas.NaT:
            return None
        if isinstance(value, pandas.Period):
            return value.start_time.isoformat()
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat()
    import numpy

    if isinstance(value, numpy.datetime64):
        return None if numpy.isnat(value) else str(value)
    if isinstance(value, (numbers.Real, Decimal)):
        number = float(value)
        return number if math.isfinite(number) else None
    raise Unreadable('a value of type %s' % type(value).__name__)


def _column(values):
    """Plotted values as JSON values, and which of them are drawn (finite numbers, real dates)."""
    import numpy

    array = numpy.ma.asanyarray(values)
    drawn = ~numpy.ma.getmaskarray(array)
    data = numpy.ma.getdata(array).ravel()
    if data.dtype.kind in 'biuf':
        floats = data.astype(float)
        return floats.tolist(), drawn & numpy.isfinite(floats)
    if data.dtype.kind == 'M':
        seconds = data.astype('datetime64[s]')
        if (data == seconds).all():  # no '.000000000' on every date
            data = seconds
        return numpy.datetime_as_string(data).tolist(), drawn & ~numpy.isnat(data)
    if data.dtype.kind == 'O':
        moments = _moments(data)
        if moments is not None:
            return _column(numpy.ma.array(moments, mask=~drawn))
    if data.dtype.kind in 'OUS':
        out = [_value(value) for value in data.tolist()]
        return out, drawn & numpy.array([value is not None for value in out], bool)
    raise Unreadable('values of dtype %s' % data.dtype)


def _moments(data):
    """An object array of pandas periods (their start times), or of datetimes without a time zone,
    as datetime64 at once, or None; one by one a period costs 50 µs, a Timestamp 3 µs."""
    pandas = sys.modules.get('pandas')
    if pandas is None or not len(data):
        return None
    try:
        if isinstance(data[0], pandas.Period):
            return pandas.PeriodIndex(data).start_time.values
        if isinstance(data[0], datetime.datetime):
            moments = pandas.DatetimeIndex(data)
            return moments.values if moments.tz is None else None
    except (TypeError, ValueError):
        pass  # several frequencies or time zones, or other values among them
    return None


def _line_points(xs, ys):
    """A line's points. Missing values at its ends draw nothing and are left out; one inside is a
    gap that points cannot show."""
    import numpy

    x, x_drawn = _column(xs)
    y, y_drawn = _column(ys)
    if len(x) != len(y):
        raise Unreadable('x and y of different lengths')
    drawn = x_drawn & y_drawn
    if not drawn.all():
        kept = numpy.flatnonzero(drawn)
        if len(kept) == 0:
            return []
        first, last = int(kept[0]), int(kept[-1])
        if last - first + 1 != len(kept):
            raise Unreadable('a line with a gap')
        x, y = x[first:last + 1], y[first:last + 1]
    return [[a, b] for a, b in zip(x, y)]


def _positions(axis, values):
    """Numbers on an axis (as matplotlib holds them) in the user's terms: dates, categories, numbers."""
    read_date = _date_reader(axis)
    if read_date is not None:
        return [read_date(value).isoformat() for value in values]
    if _is_categorical(axis):
        names = {float(index): str(name) for name, index in getattr(axis.units, '_mapping', {}).items()}
        if not all(value in names for value in values):
            raise Unreadable('a point between categories')
        return [names[value] for value in values]
    return values


# ---------------------------------------------------------------- charts


def _point_chart(ax, kind):
    chart = _two_d(ax, kind)
    for axis, name in ((ax.xaxis, 'x'), (ax.yaxis, 'y')):
        locations = axis.get_ticklocs()
        read_date = _date_reader(axis)
        ticks = [read_date(t).isoformat() for t in locations] if read_date else [float(t) for t in locations]
        labels = [label.get_text() for label in axis.get_ticklabels()]
        chart[name + '_ticks'] = ticks
        chart[name + '_tick_labels'] = labels
        chart[name + '_scale'] = _scale(axis, ticks, labels)
    return chart


def line_chart(ax, lines):
    chart = _point_chart(ax, 'line')
    for index, line in enumerate(lines):
        if line.get_transform() is not ax.transData:
            raise Unreadable('a line placed outside the data (axhline, axvline, ...)')
        if line.get_drawstyle() != 'default':
            raise Unreadable('steps, drawn unlike their points')
        xs, ys = line.get_xdata(), line.get_ydata()
        if len(xs) > POINTS_CAP:
            raise Unreadable('more points than a chart carries')
        element = {'label': _label(line, 'Line', index), 'points': _line_points(xs, ys)}
        if line.get_linestyle() in NO_LINE:
            element['markers_only'] = True
        chart['elements'].append(element)
    return chart


def scatter_chart(ax, collections):
    import numpy

    chart = _point_chart(ax, 'scatter')
    for index, collection in enumerate(collections):
        if collection.get_offset_transform() is not ax.transData:
            raise Unreadable('points placed outside the data')
        offsets = numpy.ma.asanyarray(collection.get_offsets())
        if len(offsets) > POINTS_CAP:
            raise Unreadable('more points than a chart carries')
        data = numpy.ma.getdata(offsets).astype(float).reshape(-1, 2)
        # Masked and non-finite points are not drawn.
        drawn = ~numpy.ma.getmaskarray(offsets).reshape(-1, 2).any(axis=1) & numpy.isfinite(data).all(axis=1)
        xs = _positions(ax.xaxis, data[drawn, 0].tolist())
        ys = _positions(ax.yaxis, data[drawn, 1].tolist())
        chart['elements'].append({'label': _label(collection, 'Series', index),
                                  'points': [[x, y] for x, y in zip(xs, ys)]})
    return chart


def _group_name(container, index):
    label = container.get_label()
    if not label.startswith('_'):
        return label
    # hist puts its label= on the first bar, not on the container
    first = container.patches[0].get_label() if container.patches else '_'
    if not first.startswith('_'):
        return first
    number = label[10:] if label.startswith('_container') else ''
    return 'Group %s' % (number if number.isdigit() else index)


def _tiles(low, high):
    """Whether bars tile their axis, each starting where the one before ends (a histogram's bins)."""
    import numpy

    if len(low) < 2:
        return False
    order = numpy.argsort(low, kind='stable')
    slack = 1e-9 * (high.max() - low.min())
    return bool(numpy.all(numpy.abs(high[order][:-1] - low[order][1:]) <= slack))


def bar_chart(ax, patches):
    import numpy
    from matplotlib.container import BarContainer

    # Containers whose bars were all removed stay in ax.containers (seaborn's histplot leaves one).
    containers = [c for c in ax.containers if any(patch.axes is ax for patch in c)]
    if not containers or not all(isinstance(c, BarContainer) for c in containers):
        raise Unreadable('bars outside bar containers')
    bars = [patch for container in containers for patch in container.patches]
    if len(bars) > BARS_CAP:
        raise Unreadable('more bars than a chart carries')
    if len(bars) != len(patches) or {id(p) for p in bars} != {id(p) for p in patches}:
        raise Unreadable('rectangles that are not bars')
    orientations = {container.orientation for container in containers}
    if orientations not in ({'vertical'}, {'horizontal'}):
        raise Unreadable('bars of no single orientation')
    horizontal = orientations == {'horizontal'}
    axis, value_axis = (ax.yaxis, ax.xaxis) if horizontal else (ax.xaxis, ax.yaxis)
    if _date_reader(value_axis) is not None or _is_categorical(value_axis):
        raise Unreadable('bar heights that are not numbers')

    groups = []
    for container in containers:
        geometry = numpy.array([[p.get_x(), p.get_y(), p.get_width(), p.get_height()] for p in container.patches],
                               float).reshape(-1, 4)
        if not numpy.isfinite(geometry).all():
            raise Unreadable('a bar of no height')
        x, y, width, height = geometry.T
        start, size, bottom, value = (y, height, x, width) if horizontal else (x, width, y, height)
        end = start + size
        groups.append((container, numpy.minimum(start, end), numpy.maximum(start, end), bottom, value))

    categorical = _is_categorical(axis)
    histogram = not categorical and all(_tiles(low, high) for _, low, high, _, _ in groups)
    names = _names(axis)
    read_date = _date_reader(axis)
    # Grouped bars share a slot per category (the i-th bar of each group); a name may stand on the
    # slot rather than on each bar.
    slots = None
    if len(groups) > 1 and len({len(low) for _, low, _, _, _ in groups}) == 1:
        slots = (numpy.min([low for _, low, _, _, _ in groups], axis=0),
                 numpy.max([high for _, _, high, _, _ in groups], axis=0))

    def position(value):
        return read_date(value).isoformat() if read_date else value

    def fallback(low, high, last):
        if histogram:
            if read_date:
                return '[%s, %s%s' % (_date_text(read_date(low)), _date_text(read_date(high)), ']' if last else ')')
            return '[%s, %s%s' % (_short(low, high), _short(high, low), ']' if last else ')')
        middle = (low + high) / 2
        return _date_text(read_date(middle)) if read_date else _short(middle)

    chart = _two_d(ax, 'bar')
    if horizontal:
        _swap_axes(chart)
    named = False
    for index, (container, low, high, bottom, value) in enumerate(groups):
        group = _group_name(container, index)
        rightmost = int(numpy.argmax(high)) if len(high) else -1
        for i in range(len(low)):
            label = _name_within(names, low[i], high[i])
            if label is None and slots is not None:
                label = _name_within(names, slots[0][i], slots[1][i])
            named = named or label is not None
            chart['elements'].append({
                'label': label if label is not None else fallback(float(low[i]), float(high[i]), i == rightmost),
                'group': group,
                'value': float(value[i]),
                'start': position(float(low[i])),
                'end': position(float(high[i])),
                'bottom': float(bottom[i]),
            })
    chart['orientation'] = 'horizontal' if horizontal else 'vertical'
    chart['x_scale'] = ('datetime' if read_date else 'categorical' if categorical or named else axis.get_scale())
    chart['y_scale'] = value_axis.get_scale()
    chart['histogram'] = histogram and not named
    return chart


def _box_shapes(ax, artists, vertical):
    """Each artist of a box plot as (points, kind), in the value-up frame: kind is False for a line,
    None for a patch, and the marker for markers without a line (means and fliers)."""
    import numpy
    from matplotlib.lines import Line2D

    shapes = []
    for artist in artists:
        if isinstance(artist, Line2D):
            if artist.get_transform() is not ax.transData:
                raise Unreadable('a line placed outside the data')
            points = numpy.asarray(artist.get_xydata(), float).reshape(-1, 2)
            markers = str(artist.get_marker()) if artist.get_linestyle() in NO_LINE else False
        else:  # a box drawn as a patch (patch_artist=True)
            if artist.get_data_transform() is not ax.transData:
                raise Unreadable('a patch placed outside the data')
            points = numpy.asarray(artist.get_path().vertices, float).reshape(-1, 2)
            markers = None
        if not numpy.isfinite(points).all():
            raise Unreadable('a box plot with missing values')
        shapes.append((points if vertical else points[:, ::-1], markers))
    return shapes


def _parse_boxes(shapes):
    """The boxes of Axes.bxp, from its artists in the order it adds them for each box: the box (a
    closed line, or a patch), the two whiskers (from the quartiles out), the two caps, the median,
    the mean, the fliers; showbox, showcaps, showmeans and showfliers leave some out."""
    count = len(shapes)

    def shape(i):
        return shapes[i] if i < count else (None, None)

    def segment(points, markers):
        return points is not None and markers is False and len(points) == 2

    boxes = []
    i = 0
    while i < count:
        points, markers = shape(i)
        box = None
        if markers is None or (markers is False and len(points) >= 5 and (points[0] == points[-1]).all()):
            box, i = points, i + 1
        (low, low_markers), (high, high_markers) = shape(i), shape(i + 1)
        if not (segment(low, low_markers) and segment(high, high_markers)):
            raise Unreadable('no whiskers')
        at = low[0, 0]
        if not (low[1, 0] == at and high[0, 0] == at and high[1, 0] == at):
            raise Unreadable('whiskers that are not upright')
        q1, whisker_low, q3, whisker_high = low[0, 1], low[1, 1], high[0, 1], high[1, 1]
        left = right = at
        if box is not None:
            left, right = box[:, 0].min(), box[:, 0].max()
            if not (box[:, 1].min() == q1 and box[:, 1].max() == q3 and left <= at <= right):
                raise Unreadable('whiskers that do not leave the box')
        i += 2
        (cap_low, cap_low_markers), (cap_high, cap_high_markers) = shape(i), shape(i + 1)
        if (segment(cap_low, cap_low_markers) and segment(cap_high, cap_high_markers)
                and (cap_low[:, 1] == whisker_low).all() and (cap_high[:, 1] == whisker_high).all()):
            i += 2
        median, median_markers = shape(i)
        if not (segment(median, median_markers) and median[0, 1] == median[1, 1]):
            raise Unreadable('no median')
        element = {'at': at, 'left': left, 'right': right, 'min': float(whisker_low), 'first_quartile': float(q1),
                   'median': float(median[0, 1]), 'third_quartile': float(q3), 'max': float(whisker_high),
                   'marks': [], 'symbols': []}
        i += 1
        mean, mean_markers = shape(i)
        if segment(mean, mean_markers) and mean[0, 1] == mean[1, 1] and (mean[:, 0] == median[:, 0]).all():
            element['mean'] = float(mean[0, 1])  # meanline=True
            i += 1
        while len(element['marks']) < 2:
            marks, marks_markers = shape(i)
            if not (isinstance(marks_markers, str) and (marks[:, 0] == at).all()):
                break
            element['marks'].append([float(v) for v in marks[:, 1]])
            element['symbols'].append(marks_markers)
            i += 1
        boxes.append(element)
    _means_and_fliers(boxes)
    return boxes


def _means_and_fliers(boxes):
    """Which marker lines are means and which fliers. A flier lies outside the whiskers, a mean is
    one point; showfliers gives every box a fliers line, empty or not. One point outside the
    whiskers in every box could be either: told by its marker, where it is matplotlib's own."""
    kinds = {len(box['marks']) for box in boxes}
    if kinds == {2} and all(len(box['marks'][0]) == 1 and 'mean' not in box for box in boxes):
        for box in boxes:
            box['mean'], box['outliers'] = box['marks'][0][0], box['marks'][1]
    elif kinds == {1}:
        def inside(box):
            return [v for v in box['marks'][0] if box['min'] <= v <= box['max']]
        several = any(len(box['marks'][0]) != 1 for box in boxes) or any('mean' in box for box in boxes)
        within = any(inside(box) for box in boxes)
        if not several and not within:
            from matplotlib import rcParams

            symbols = {box['symbols'][0] for box in boxes}
            flier, mean = rcParams['boxplot.flierprops.marker'], rcParams['boxplot.meanprops.marker']
            several, within = flier != mean and symbols == {flier}, flier != mean and symbols == {mean}
        if several and not within:
            for box in boxes:
                box['outliers'] = box['marks'][0]
        elif within and not several:
            for box in boxes:
                box['mean'], box['outliers'] = box['marks'][0][0], []
        else:
            raise Unreadable('markers that are neither means nor fliers')
    elif kinds == {0}:
        for box in boxes:
            box['outliers'] = []
    else:
        raise Unreadable('boxes drawn unlike each other')


def box_chart(ax, artists):
    for vertical in (True, False):
        try:
            boxes = _parse_boxes(_box_shapes(ax, artists, vertical))
            break
        except Unreadable:
            continue
    else:
        raise Unreadable('not a box plot')
    chart = _two_d(ax, 'box_and_whisker')
    if not vertical:
        _swap_axes(chart)
    names = _names(ax.xaxis if vertical else ax.yaxis)
    for box in boxes:
        label = _name_within(names, box['left'], box['right'])
        element = {'label': label if label is not None else _short(box['at'])}
        for key in ('min', 'first_quartile', 'median', 'third_quartile', 'max', 'outliers', 'mean'):
            if key in box:
                element[key] = box[key]
        chart['elements'].append(element)
    return chart


def pie_chart(ax, wedges):
    chart = _base(ax, 'pie')
    for wedge in wedges:
        if wedge.get_data_transform() is not ax.transData:
            raise Unreadable('a wedge placed outside the data')
        angle = abs(dynamic_round(Decimal(float(wedge.theta2)) - Decimal(float(wedge.theta1))))
        chart['elements'].append({'label': wedge.get_label(), 'angle': angle, 'radius': float(wedge.r)})
    return chart


def _reference_lines(ax, artists):
    """Lines across the whole axes at one position (axvline, axhline), apart from the rest."""
    from matplotlib.lines import Line2D

    upright = ax.get_xaxis_transform(which='grid')  # x in data, y from bottom (0) to top (1)
    level = ax.get_yaxis_transform(which='grid')
    rest, references = [], []
    for artist in artists:
        transform = artist.get_transform() if isinstance(artist, Line2D) else None
        if transform is not upright and transform is not level:
            rest.append(artist)
            continue
        vertical = transform is upright
        axis = ax.xaxis if vertical else ax.yaxis
        where, span = (artist.get_xdata(), artist.get_ydata()) if vertical else (artist.get_ydata(), artist.get_xdata())
        where = [float(axis.convert_units(value)) for value in where]
        if len(where) != 2 or where[0] != where[1] or not math.isfinite(where[0]) or sorted(span) != [0, 1]:
            raise Unreadable('a line across part of the axes')
        read_date = _date_reader(axis)
        label = artist.get_label()
        references.append({'orientation': 'vertical' if vertical else 'horizontal',
                           'at': read_date(where[0]).isoformat() if read_date else where[0],
                           'label': None if label.startswith('_') else label})
    return rest, references


def _extractor(artists):
    from matplotlib.collections import PathCollection
    from matplotlib.lines import Line2D
    from matplotlib.patches import PathPatch, Rectangle, Wedge

    def every(kinds):
        return bool(artists) and all(isinstance(artist, kinds) for artist in artists)

    if every(Line2D):
        def lines(ax, artists):
            try:
                return box_chart(ax, artists)
            except Unreadable:
                return line_chart(ax, artists)
        return lines
    if every((PathPatch, Line2D)):
        return box_chart
    if every(PathCollection):
        return scatter_chart
    if every(Wedge):
        return pie_chart
    if every(Rectangle):
        return bar_chart
    return None


def axes_chart(ax):
    """The chart of one axes; type unknown, with no elements, where it cannot be read faithfully."""
    from matplotlib.text import Text

    children = getattr(ax, '_children', None)
    if children is None:  # matplotlib before 3.5
        return _base(ax, 'unknown')
    artists = [artist for artist in children if not isinstance(artist, Text)]
    try:
        artists, references = _reference_lines(ax, artists)
        extractor = _extractor(artists)
        if extractor is not None:
            chart = extractor(ax, artists)
            if references:
                if chart['type'] not in ('line', 'scatter', 'bar'):
                    raise Unreadable('reference lines on a %s' % chart['type'])
                chart['reference_lines'] = references
            return chart
    except Unreadable:
        pass
    return _base(ax, 'unknown')


def figure_chart(figure):
    """The chart of a figure, or None when it has no data (a blank figure)."""
    axes = figure.get_axes()
    if not axes or not any(ax.has_data() for ax in axes):
        return None
    if len(axes) > 1:
        return {'type': 'superchart', 'title': _text_or_none(figure._suptitle.get_text() if figure._suptitle else ''),
                'elements': [axes_chart(ax) for ax in axes]}
    return axes_chart(axes[0])
