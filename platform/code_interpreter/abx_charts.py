"""abx_charts: a matplotlib figure as the structured data E2B's code interpreter puts on a result's
`chart` field (MIME type `e2b/chart`, mapped by server.py).

Written into the code-interpreter-v1 layer next to server.py (platform/template/templates.c) and
imported by abx_formats.py inside each Python kernel. It imports matplotlib only when a figure is
converted, so a kernel that never plots never pays for it.

The JSON shapes are E2B's (e2b_charts, chart_data_extractor/e2b_charts/ charts/base.py,
charts/planar.py, charts/bars.py, charts/pie.py, main.py @ 7df1757; read by the SDKs as
js/src/charts.ts); this is an independent implementation on Debian's matplotlib (3.6):

  every chart   {type, title, elements}; type is one of line, scatter, bar, pie, box_and_whisker,
                superchart, unknown; title is the axes' title, null when empty
  2D charts     (line, scatter, bar, box_and_whisker) add x_label, y_label (null when empty) and
                x_unit, y_unit: the text of the first " (unit)" or "[unit]" in the label, else null
  line/scatter  add x_ticks, y_ticks (numbers; ISO 8601 strings on a date axis), x_tick_labels,
                y_tick_labels (strings) and x_scale, y_scale ("datetime", "categorical", or
                matplotlib's scale name: linear, log, symlog, logit, function, functionlog, asinh);
                elements [{label, points: [[x, y], ...]}], a point's coordinate a number, a string
                (categorical data) or an ISO 8601 string (dates). An unlabelled line is "Line <n>"
  bar           elements [{label, group, value}]: label is the bar's category (its tick label),
                group the container's label ("Group <n>" when unlabelled), value its length.
                Horizontal bars (barh) swap x_label/x_unit with y_label/y_unit, as E2B does, so
                x_* always names the category axis
  pie           elements [{label, angle, radius}]: angle in degrees
  box_and_whisker  elements [{label, min, first_quartile, median, third_quartile, max, outliers}]
                (horizontal boxes swap the labels as bars do)
  superchart    a figure with several axes: {type: "superchart", title: the figure's suptitle
                ("" when none), elements: [one chart per axes]}

A figure without data gives {} (no chart). Kinds are told apart as E2B does, by the artists on the
axes: only lines -> line; boxes (PathPatch) and lines -> box_and_whisker; only point collections
-> scatter; only wedges -> pie; only rectangles -> bar; anything else -> unknown (no elements).
Axis-parallel 2-point lines (axhline, axvline) are not data. Differences from E2B, each where
E2B's heuristics give wrong data: a bar's label is the tick label at its centre (E2B pairs bars
with tick labels by index); bar and box orientation come from matplotlib (the container's
orientation, the tick positions) rather than from equal heights; a categorical scale is
matplotlib's category axis (or ticks 0..n-1 labelled with non-numbers); scatter points on a date
axis are ISO strings; NaN and infinities are null, so the result stays valid JSON.
"""
import datetime
import gc
import math
import numbers
import re

UNIT = re.compile(r"\s\((.*?)\)|\[(.*?)\]")


# --- values ---------------------------------------------------------------------------------
def number(v):
    """A finite float, or None for NaN and infinities (JSON has neither)."""
    f = float(v)
    return f if math.isfinite(f) else None


def rounded(v):
    """`v` without float noise, as E2B rounds box edges and pie angles (utils/rounding.py
    dynamic_round: 8 - e significant digits, e the exponent of the leading digit, at least 1);
    None for NaN and infinities."""
    f = number(v)
    if not f:
        return f
    digits = max(1, 8 - math.floor(math.log10(abs(f))))
    return float("%.*g" % (digits, f))


def value(v):
    """One data coordinate as JSON: a number, a string, an ISO 8601 date, or None."""
    import numpy
    if v is numpy.ma.masked or v is None:
        return None
    if isinstance(v, datetime.date):  # datetime, pandas.Timestamp too
        return v.isoformat()
    if isinstance(v, numpy.datetime64):
        return None if numpy.isnat(v) else str(v.astype("datetime64[s]"))
    if isinstance(v, (str, bytes)):
        return v.decode(errors="replace") if isinstance(v, bytes) else str(v)
    if isinstance(v, numbers.Real):
        return number(v)
    return str(v)


def numeric(data):
    """`data` as a 1-D float array when it is plain numbers (not masked, not dates), else None."""
    import numpy
    if numpy.ma.isMaskedArray(data):
        return None
    try:
        a = numpy.asarray(data)
    except Exception:  # noqa: BLE001 - ragged or odd data: not numeric
        return None
    return a.astype(float) if a.ndim == 1 and a.dtype.kind in "fiub" else None


def points(xs, ys):
    """[[x, y], ...] as JSON values; numeric data in one numpy pass (a million points in well
    under a second on an idle machine)."""
    import numpy
    ax, ay = numeric(xs), numeric(ys)
    if ax is not None and ay is not None and len(ax) == len(ay):
        a = numpy.column_stack((ax, ay))
        if numpy.isfinite(a).all():
            return a.tolist()
        return [[v if math.isfinite(v) else None for v in p] for p in a.tolist()]
    return [[value(x), value(y)] for x, y in zip(xs, ys)]


def text_or_none(s):
    return s if s else None


def unit_of(label):
    if not label:
        return None
    m = UNIT.search(label)
    return (m.group(1) or m.group(2)) if m else None


# --- axes -----------------------------------------------------------------------------------
def converter(axis):
    get = getattr(axis, "get_converter", None)  # matplotlib >= 3.10
    return get() if get else getattr(axis, "converter", None)


def is_date_axis(axis):
    import matplotlib.dates as mdates
    kinds = tuple(getattr(mdates, n) for n in
                  ("DateConverter", "ConciseDateConverter", "_SwitchableDateConverter")
                  if hasattr(mdates, n))
    return isinstance(converter(axis), kinds) or \
        isinstance(axis.get_major_locator(), mdates.DateLocator)


def tick_labels(axis):
    return [t.get_text() for t in axis.get_ticklabels()]


def ticks(axis):
    locs = list(axis.get_majorticklocs())
    if is_date_axis(axis):
        import matplotlib.dates as mdates
        return [mdates.num2date(t).isoformat() for t in locs]
    return [value(t) for t in locs]


def is_number(s):
    try:
        float(s.replace("\u2212", "-"))
        return True
    except ValueError:
        return False


def scale(axis):
    if is_date_axis(axis):
        return "datetime"
    name = axis.get_scale()
    if name != "linear":
        return name
    import matplotlib.category as mcat
    if isinstance(converter(axis), mcat.StrCategoryConverter):
        return "categorical"
    locs, labels = list(axis.get_majorticklocs()), tick_labels(axis)
    if locs and all(float(t) == i for i, t in enumerate(locs)) and len(labels) == len(locs) \
            and all(lab and not is_number(lab) for lab in labels):
        return "categorical"  # ticks 0..n-1 named by words: set_xticks(range(n), names)
    return "linear"


def label_at(axis, pos):
    """The tick label at data position `pos` of `axis` (a bar's or a box's category), else the
    position itself as text."""
    for loc, text in zip(axis.get_majorticklocs(), tick_labels(axis)):
        if math.isclose(float(loc), pos, rel_tol=1e-9, abs_tol=1e-9):
            return text
    if is_date_axis(axis):
        import matplotlib.dates as mdates
        return mdates.num2date(pos).isoformat()
    return "%g" % rounded(pos)


def is_grid_line(line):
    """A 2-point line along an axis (axhline, axvline): a guide, not data."""
    x, y = line.get_xdata(), line.get_ydata()
    if len(x) != 2 or len(y) != 2:
        return False
    return x[0] == x[1] or y[0] == y[1]


def children(ax):
    """The artists plotted on `ax`, in order (matplotlib >= 3.5 keeps them in ax._children)."""
    kids = getattr(ax, "_children", None)
    if kids is None:
        kids = list(ax.lines) + list(ax.patches) + list(ax.collections) + list(ax.images)
    return list(kids)


def kind_of(ax):
    """The chart type of one axes, from the artists on it (module doc)."""
    from matplotlib.collections import PathCollection
    from matplotlib.lines import Line2D
    from matplotlib.patches import PathPatch, Rectangle, Wedge
    from matplotlib.text import Text
    arts = [a for a in children(ax) if not isinstance(a, Text)]
    if all(isinstance(a, Line2D) for a in arts):
        return "line"
    if all(isinstance(a, (PathPatch, Line2D)) for a in arts):
        return "box_and_whisker"
    arts = [a for a in arts if not (isinstance(a, Line2D) and is_grid_line(a))]
    for name, cls in (("scatter", PathCollection), ("pie", Wedge), ("bar", Rectangle)):
        if all(isinstance(a, cls) for a in arts):
            return name
    return "unknown"


# --- charts ---------------------------------------------------------------------------------
def base(ax, kind):
    return {"type": kind, "title": text_or_none(ax.get_title()), "elements": []}


def planar(ax, kind):
    c = base(ax, kind)
    c["x_label"], c["y_label"] = text_or_none(ax.get_xlabel()), text_or_none(ax.get_ylabel())
    c["x_unit"], c["y_unit"] = unit_of(c["x_label"]), unit_of(c["y_label"])
    return c


def swap_axes(c):
    c["x_label"], c["y_label"] = c["y_label"], c["x_label"]
    c["x_unit"], c["y_unit"] = c["y_unit"], c["x_unit"]


def point_chart(ax, kind):
    c = planar(ax, kind)
    for name, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
        c[name + "_ticks"] = ticks(axis)
        c[name + "_tick_labels"] = tick_labels(axis)
        c[name + "_scale"] = scale(axis)
    return c


def line_chart(ax):
    c = point_chart(ax, "line")
    for line in ax.get_lines():
        if is_grid_line(line):
            continue
        label = line.get_label()
        if label.startswith("_child") and label[6:].isdigit():
            label = "Line %s" % label[6:]
        pts = points(line.get_xdata(), line.get_ydata())
        c["elements"].append({"label": label, "points": pts})
    return c


def scatter_chart(ax):
    c = point_chart(ax, "scatter")
    xdate, ydate = is_date_axis(ax.xaxis), is_date_axis(ax.yaxis)

    def coord(v, date):
        if date and v is not None and math.isfinite(float(v)):
            import matplotlib.dates as mdates
            return mdates.num2date(float(v)).isoformat()
        return value(v)

    for coll in ax.collections:
        pts = [[coord(x, xdate), coord(y, ydate)] for x, y in coll.get_offsets()]
        c["elements"].append({"label": coll.get_label(), "points": pts})
    return c


def bar_chart(ax):
    from matplotlib.container import BarContainer
    c = planar(ax, "bar")
    horizontal = False
    for cont in ax.containers:
        if not isinstance(cont, BarContainer):
            continue
        group = cont.get_label()
        if group.startswith("_container") and group[10:].isdigit():
            group = "Group %s" % group[10:]
        rects = list(cont)
        horizontal = getattr(cont, "orientation", None) == "horizontal"
        for r in rects:
            if horizontal:
                pos, length, axis = r.get_y() + r.get_height() / 2, r.get_width(), ax.yaxis
            else:
                pos, length, axis = r.get_x() + r.get_width() / 2, r.get_height(), ax.xaxis
            c["elements"].append({"label": label_at(axis, pos), "group": group,
                                  "value": number(length)})
    if horizontal:
        swap_axes(c)
    return c


def pie_chart(ax):
    c = base(ax, "pie")
    for w in ax.patches:
        angle = rounded(w.theta2 - w.theta1)
        c["elements"].append({"label": w.get_label(),
                              "angle": abs(angle) if angle is not None else None,
                              "radius": rounded(w.r)})
    return c


def centred_on_ticks(axis, centres):
    locs = [float(t) for t in axis.get_majorticklocs()]
    return bool(centres) and all(any(math.isclose(c, t, abs_tol=1e-9) for t in locs) for c in centres)


def box_orientation(ax, boxes):
    """'vertical' (boxes along x, values on y) or 'horizontal'."""
    if centred_on_ticks(ax.xaxis, [(b["p0"] + b["p1"]) / 2 for b in boxes]):
        return "vertical"
    if centred_on_ticks(ax.yaxis, [(b["v0"] + b["v1"]) / 2 for b in boxes]):
        return "horizontal"
    return "vertical"


def box_outlines(ax):
    from matplotlib.patches import PathPatch
    boxes = []
    for p in ax.patches:
        if isinstance(p, PathPatch):
            v = p.get_path().vertices
            xs, ys = [rounded(x) for x in v[:, 0]], [rounded(y) for y in v[:, 1]]
            boxes.append({"p0": min(xs), "p1": max(xs), "v0": min(ys), "v1": max(ys)})
    return boxes


def box_parts(box, lines):
    """min, median, max and outliers of one box from the lines on its axes (whiskers, caps,
    median, fliers), in box coordinates (p along the category axis, v along the values)."""
    q1, q3, width = box["v0"], box["v1"], box["p1"] - box["p0"]
    lo = hi = median = None
    caps, marks = [], []
    for ls, ps, vs in lines:
        if not ps or not all(box["p0"] - 1e-9 <= p <= box["p1"] + 1e-9 for p in ps):
            continue
        if ls in ("None", "none", "", " "):
            marks.extend(vs)  # fliers (and a mean marker, told apart below)
        elif len(ps) == 2 and ps[0] == ps[1]:  # a whisker, along the values
            if max(vs) <= q1:
                lo = min(vs)
            elif min(vs) >= q3:
                hi = max(vs)
        elif len(ps) == 2 and vs[0] == vs[1]:  # a median or a cap, across
            if abs(ps[1] - ps[0]) >= width * 0.999 and q1 <= vs[0] <= q3:
                median = vs[0]
            else:
                caps.append(vs[0])
    lo = lo if lo is not None else min([q1] + [v for v in caps if v <= q1])
    hi = hi if hi is not None else max([q3] + [v for v in caps if v >= q3])
    return lo, median, hi, [v for v in marks if v is not None and (v < lo or v > hi)]


def box_chart(ax):
    c = planar(ax, "box_and_whisker")
    boxes = box_outlines(ax)
    vertical = box_orientation(ax, boxes) == "vertical"
    if not vertical:
        swap_axes(c)
        for b in boxes:
            b["p0"], b["p1"], b["v0"], b["v1"] = b["v0"], b["v1"], b["p0"], b["p1"]
    lines = []
    for line in ax.lines:
        xs = [rounded(x) for x in line.get_xdata()]
        ys = [rounded(y) for y in line.get_ydata()]
        lines.append((line.get_linestyle(), xs, ys) if vertical else (line.get_linestyle(), ys, xs))
    cat_axis = ax.xaxis if vertical else ax.yaxis
    for b in boxes:
        lo, median, hi, outliers = box_parts(b, lines)
        c["elements"].append({"label": label_at(cat_axis, (b["p0"] + b["p1"]) / 2), "min": lo,
                              "first_quartile": b["v0"], "median": median,
                              "third_quartile": b["v1"], "max": hi, "outliers": outliers})
    return c


CHARTS = {"line": line_chart, "scatter": scatter_chart, "bar": bar_chart, "pie": pie_chart,
          "box_and_whisker": box_chart}


def axes_to_dict(ax):
    """One axes as a chart dict (module doc)."""
    kind = kind_of(ax)
    make = CHARTS.get(kind)
    return make(ax) if make else base(ax, kind)


def suptitle(fig):
    get = getattr(fig, "get_suptitle", None)  # matplotlib >= 3.8
    if get:
        return get()
    st = getattr(fig, "_suptitle", None)
    return st.get_text() if st is not None else ""


def figure_to_dict(fig):
    """The `e2b/chart` value of a matplotlib Figure: {} when it has no data, one chart for one
    axes, a superchart for several. Raises what matplotlib raises on a broken figure (the
    formatter in abx_formats.py turns that into {}, as E2B's does)."""
    axes = fig.get_axes()
    if not axes or not any(ax.has_data() for ax in axes):
        return {}
    collecting = gc.isenabled()
    gc.disable()  # millions of small lists: the collector would pass over them again and again
    try:
        if len(axes) == 1:
            return axes_to_dict(axes[0])
        return {"type": "superchart", "title": suptitle(fig),
                "elements": [axes_to_dict(ax) for ax in axes]}
    finally:
        if collecting:
            gc.enable()
