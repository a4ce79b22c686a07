#!/usr/bin/env python3
"""The code-interpreter-v1 template's result formats on the host, without a sandbox: abx_charts
(a matplotlib figure as the `chart` field) for each chart type E2B extracts, and abx_formats (the
IPython formatters: DataFrame `data`, list/dict `json`, chart, PIL save displayed) on an IPython
shell. The figures and the fields checked follow E2B's own tests of its extractor and of the
code-interpreter SDK (chart_data_extractor/tests/charts/*.py, js/tests/charts/*.test.ts,
js/tests/data.test.ts, js/tests/images/bar.test.ts @ 7df1757, e2b-dev/code-interpreter), plus
the cases where this implementation differs from E2B's heuristics (platform/code_interpreter/
abx_charts.py module doc).

Runs on Debian's python3 (python3-matplotlib, python3-pandas, python3-pil, python3-ipykernel from
scripts/deps.sh): when the interpreter that started it lacks matplotlib it re-runs itself with
/usr/bin/python3. Exit 0 all passed, 1 a case failed, 77 skipped (no interpreter with them).
"""
import datetime
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CI_DIR = os.path.join(HERE, "..", "..", "platform", "code_interpreter")

try:
    import matplotlib
    import pandas  # noqa: F401 - the DataFrame cases need it
    import PIL  # noqa: F401
except ImportError as e:
    if sys.executable != "/usr/bin/python3" and os.path.exists("/usr/bin/python3"):
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    print("SKIP: %s (scripts/deps.sh installs python3-matplotlib, python3-pandas, python3-pil)" % e)
    sys.exit(77)

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, CI_DIR)
import abx_charts  # noqa: E402

FAILED = []
CASES = []


def case(fn):
    CASES.append(fn)
    return fn


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


def chart(fig):
    """The figure's chart, through JSON as the server sends it (strict: no NaN)."""
    d = abx_charts.figure_to_dict(fig)
    plt.close(fig)
    return json.loads(json.dumps(d, allow_nan=False))


def fields(c, *names):
    return {n: c.get(n) for n in names}


POINT_KEYS = {"type", "title", "elements", "x_label", "y_label", "x_unit", "y_unit", "x_ticks",
              "x_tick_labels", "x_scale", "y_ticks", "y_tick_labels", "y_scale"}
PLANAR_KEYS = {"type", "title", "elements", "x_label", "y_label", "x_unit", "y_unit"}


@case
def line():
    dates = [datetime.date(2023, 9, 1) + datetime.timedelta(seconds=i) for i in range(100)]
    x = np.linspace(0, 2 * np.pi, 100)
    fig = plt.figure(figsize=(10, 6))
    plt.plot(dates, np.sin(x), label="sin(x)")
    plt.plot(dates, np.cos(x), label="cos(x)")
    plt.xlabel("Time (s)")
    plt.ylabel("Amplitude (Hz)")
    plt.title("Plot of sin(x) and cos(x)")
    c = chart(fig)
    check(set(c) == POINT_KEYS, "keys %r" % sorted(c))
    check(fields(c, "type", "title", "x_label", "y_label", "x_unit", "y_unit", "x_scale", "y_scale")
          == {"type": "line", "title": "Plot of sin(x) and cos(x)", "x_label": "Time (s)",
              "y_label": "Amplitude (Hz)", "x_unit": "s", "y_unit": "Hz", "x_scale": "datetime",
              "y_scale": "linear"}, "fields %r" % c)
    check(all(isinstance(t, str) for t in c["x_ticks"]) and c["x_ticks"], "x_ticks %r" % c["x_ticks"])
    datetime.datetime.fromisoformat(c["x_ticks"][0])
    check(all(isinstance(t, float) for t in c["y_ticks"]), "y_ticks %r" % c["y_ticks"])
    check(all(isinstance(t, str) for t in c["x_tick_labels"] + c["y_tick_labels"]), "tick labels")
    check(len(c["y_tick_labels"]) == len(c["y_ticks"]), "one label per tick")
    check([e["label"] for e in c["elements"]] == ["sin(x)", "cos(x)"], "labels")
    for e in c["elements"]:
        check(set(e) == {"label", "points"} and len(e["points"]) == 100, "element %r" % e.keys())
        check(all(isinstance(p[0], str) and isinstance(p[1], float) for p in e["points"]), "points")
    check(c["elements"][0]["points"][0] == ["2023-09-01", 0.0], "first point %r" % c["elements"][0]["points"][0])


@case
def line_unlabelled_with_guides_and_nan():
    fig = plt.figure()
    plt.plot([1, 2, 3], [4, float("nan"), 6])
    plt.axhline(5)  # a guide line, not data
    c = chart(fig)
    check(c["type"] == "line" and len(c["elements"]) == 1, "one line %r" % c["elements"])
    check(c["elements"][0] == {"label": "Line 0", "points": [[1.0, 4.0], [2.0, None], [3.0, 6.0]]},
          "unlabelled line, NaN as null %r" % c["elements"])
    check(c["title"] is None and c["x_label"] is None and c["x_unit"] is None, "empty texts are null")


@case
def log_scale():
    x = np.linspace(0, 100, 100)
    fig = plt.figure()
    plt.plot(x, np.exp(x), label="y = e^x")
    plt.yscale("log")
    plt.xlabel("X-axis")
    plt.ylabel("Y-axis (log scale)")
    plt.legend()
    plt.grid(True)
    c = chart(fig)
    check(fields(c, "type", "x_scale", "y_scale", "x_unit", "y_unit") ==
          {"type": "line", "x_scale": "linear", "y_scale": "log", "x_unit": None,
           "y_unit": "log scale"}, "fields %r" % c)
    check(all(isinstance(t, float) for t in c["x_ticks"] + c["y_ticks"]), "numeric ticks")
    check(len(c["elements"]) == 1 and len(c["elements"][0]["points"]) == 100, "grid is not data")


@case
def categorical_scale():
    fig = plt.figure()
    plt.plot([1, 2, 3, 4, 5], ["A", "B", "C", "D", "E"])
    c = chart(fig)
    check((c["x_scale"], c["y_scale"]) == ("linear", "categorical"), "scales %r" % c)
    check(c["y_tick_labels"] == ["A", "B", "C", "D", "E"], "labels %r" % c["y_tick_labels"])
    check(c["elements"][0]["points"][0] == [1.0, "A"], "string coordinate %r" % c["elements"][0])
    fig = plt.figure()
    plt.plot(range(3), [1, 5, 2])
    plt.xticks(range(3), ["Mon", "Tue", "Wed"])  # E2B's rule: ticks 0..n-1 named by words
    check(chart(fig)["x_scale"] == "categorical", "named ticks 0..n-1 are categorical")


@case
def scatter():
    rng = np.random.default_rng(1)
    fig = plt.figure()
    plt.xlabel("A")
    plt.ylabel("B")
    plt.scatter(rng.random(5), rng.random(5), c="blue", label="Dataset 1")
    plt.scatter(rng.random(10), rng.random(10), c="red", label="Dataset 2")
    c = chart(fig)
    check(set(c) == POINT_KEYS and c["type"] == "scatter" and c["title"] is None, "chart %r" % c)
    check((c["x_label"], c["y_label"], c["x_scale"], c["y_scale"]) == ("A", "B", "linear", "linear"),
          "labels and scales")
    check([(e["label"], len(e["points"])) for e in c["elements"]] ==
          [("Dataset 1", 5), ("Dataset 2", 10)], "elements %r" % c["elements"])
    check(all(isinstance(v, float) for e in c["elements"] for p in e["points"] for v in p), "points")


@case
def bar():
    fig = plt.figure(figsize=(10, 6))
    plt.bar(["Author A", "Author B", "Author C", "Author D"], [100, 200, 300, 400],
            label="Books Sold", color="blue")
    plt.xlabel("Authors")
    plt.ylabel("Number of Books Sold")
    plt.title("Book Sales by Authors")
    c = chart(fig)
    check(set(c) == PLANAR_KEYS, "keys %r" % sorted(c))
    check(fields(c, "type", "title", "x_label", "y_label", "x_unit", "y_unit") ==
          {"type": "bar", "title": "Book Sales by Authors", "x_label": "Authors",
           "y_label": "Number of Books Sold", "x_unit": None, "y_unit": None}, "fields %r" % c)
    check(c["elements"] == [{"label": "Author %s" % a, "group": "Books Sold", "value": v}
                            for a, v in zip("ABCD", (100, 200, 300, 400))], "bars %r" % c["elements"])


@case
def bar_horizontal_groups_and_numeric_positions():
    fig = plt.figure()
    plt.barh(["a", "b"], [3, 3])  # equal lengths: E2B's heuristic needs unequal heights
    plt.barh(["a", "b"], [1, 2], left=[3, 3], label="more")
    plt.xlabel("Count [items]")
    plt.ylabel("Name")
    c = chart(fig)
    check((c["x_label"], c["y_label"], c["x_unit"], c["y_unit"]) == ("Name", "Count [items]", None, "items"),
          "barh swaps the axes: x names the categories %r" % c)
    check(c["elements"] == [{"label": "a", "group": "Group 0", "value": 3.0},
                            {"label": "b", "group": "Group 0", "value": 3.0},
                            {"label": "a", "group": "more", "value": 1.0},
                            {"label": "b", "group": "more", "value": 2.0}], "bars %r" % c["elements"])
    fig = plt.figure()
    plt.bar([1, 2, 3], [5, 6, 7])  # ticks at 0.5 steps: labels come from the bar positions
    check([e["label"] for e in chart(fig)["elements"]] == ["1.0", "2.0", "3.0"], "numeric positions")


@case
def pie():
    fig, ax = plt.subplots(figsize=(8, 8))
    plt.xlabel("x")
    plt.ylabel("y")
    ax.pie([90, 10], labels=["No", "No, in blue"], autopct="%1.1f%%", startangle=90,
           colors=plt.cm.Pastel1.colors[:2])
    ax.axis("equal")
    plt.title("Will I wake up early tomorrow?")
    c = chart(fig)
    check(set(c) == {"type", "title", "elements"}, "keys %r" % sorted(c))
    check(c == {"type": "pie", "title": "Will I wake up early tomorrow?",
                "elements": [{"label": "No", "angle": 324.0, "radius": 1.0},
                             {"label": "No, in blue", "angle": 36.0, "radius": 1.0}]}, "pie %r" % c)


BOX_DATA = {"Class A": [85, 90, 78, 92, 88], "Class B": [95, 89, 76, 91, 84, 87],
            "Class C": [75, 82, 88, 79, 86]}
BOX_WANT = [("Class A", 78, 85, 88, 90, 92, []), ("Class B", 84, 84.75, 88, 90.5, 95, [76]),
            ("Class C", 75, 79, 82, 86, 88, [])]


def box_elements(c):
    return [(e["label"], e["min"], e["first_quartile"], e["median"], e["third_quartile"], e["max"],
             e["outliers"]) for e in c["elements"]]


@case
def box_and_whisker():
    fig, ax = plt.subplots(figsize=(10, 6))
    ax.set_title("Exam Scores Distribution")
    ax.set_xlabel("Class")
    ax.set_ylabel("Score")
    ax.boxplot(BOX_DATA.values(), labels=BOX_DATA.keys(), patch_artist=True)
    c = chart(fig)
    check(set(c) == PLANAR_KEYS, "keys %r" % sorted(c))
    check(fields(c, "type", "title", "x_label", "y_label", "x_unit", "y_unit") ==
          {"type": "box_and_whisker", "title": "Exam Scores Distribution", "x_label": "Class",
           "y_label": "Score", "x_unit": None, "y_unit": None}, "fields %r" % c)
    check(set(c["elements"][0]) == {"label", "min", "first_quartile", "median", "third_quartile",
                                    "max", "outliers"}, "element keys %r" % c["elements"][0])
    check(box_elements(c) == BOX_WANT, "boxes %r" % box_elements(c))


@case
def box_horizontal_with_means():
    fig, ax = plt.subplots()
    ax.boxplot(BOX_DATA.values(), labels=BOX_DATA.keys(), patch_artist=True, vert=False,
               showmeans=True)
    ax.set_xlabel("Score (points)")
    c = chart(fig)
    check(box_elements(c) == BOX_WANT, "boxes %r" % box_elements(c))
    check((c["x_label"], c["y_label"], c["y_unit"]) == (None, "Score (points)", "points"),
          "horizontal boxes swap the axes %r" % c)


@case
def superchart():
    fig, axs = plt.subplots(1, 2, figsize=(10, 8))
    fig.suptitle("Multiple Charts Example", fontsize=16)
    x = np.linspace(0, 10, 100)
    axs[0].plot(x, np.sin(x), "r")
    axs[0].set_title("Sine Wave")
    axs[0].grid(True)
    axs[1].scatter(np.arange(5.0), np.arange(5.0), c="blue", label="Dataset 1")
    axs[1].set_xlabel("X")
    axs[1].set_ylabel("Y")
    axs[1].set_title("Scatter Plot")
    c = chart(fig)
    check(set(c) == {"type", "title", "elements"} and c["type"] == "superchart" and
          c["title"] == "Multiple Charts Example", "superchart %r" % fields(c, "type", "title"))
    a, b = c["elements"]
    check((a["type"], a["title"], a["x_label"], a["y_label"], len(a["elements"]),
           len(a["elements"][0]["points"])) == ("line", "Sine Wave", None, None, 1, 100), "first %r" % a)
    check((b["type"], b["title"], b["x_label"], b["y_label"], len(b["elements"]),
           len(b["elements"][0]["points"])) == ("scatter", "Scatter Plot", "X", "Y", 1, 5), "second")
    fig, axs = plt.subplots(2)
    axs[0].bar(["a"], [1])
    axs[1].pie([1, 1])
    c = chart(fig)
    check(c["title"] == "" and [e["type"] for e in c["elements"]] == ["bar", "pie"],
          "no suptitle is an empty title, as E2B's %r" % fields(c, "title"))


@case
def unknown_and_blank():
    fig, ax = plt.subplots()
    ax.add_artist(plt.Circle((0, 0), 1, color="blue", fill=False))
    ax.add_artist(plt.Circle((0, 0), 2, color="red", fill=False))
    ax.grid(True)
    plt.title("Two Concentric Circles")
    check(chart(fig) == {"type": "unknown", "title": "Two Concentric Circles", "elements": []},
          "unknown chart")
    fig, _ = plt.subplots()
    check(chart(fig) == {}, "a blank figure has no chart")
    check(chart(plt.figure()) == {}, "a figure without axes has no chart")


# --- the IPython formatters (abx_formats) -----------------------------------------------------
def shell():
    """An IPython shell with abx_formats installed and its displays captured."""
    from IPython.core.interactiveshell import InteractiveShell
    import abx_formats
    ip = InteractiveShell.instance()
    abx_formats.install(ip)
    shown = []
    ip.display_pub.publish = lambda data, metadata=None, **kw: shown.append(data)
    return ip, shown


@case
def formats_dataframe_data():
    import pandas as pd
    ip, _ = shell()
    df = pd.DataFrame({"a": [1, 2, 3], "when": pd.to_datetime(["2024-01-01", None, "2024-01-03"]),
                       "f": [1.5, float("nan"), 2.0]})
    data, _md = ip.display_formatter.format(df)
    check({"e2b/data", "text/html", "text/plain"} <= set(data), "mime types %r" % sorted(data))
    check(data["e2b/data"] == {"a": [1, 2, 3], "when": ["2024-01-01T00:00:00", None,
                                                        "2024-01-03T00:00:00"], "f": [1.5, None, 2.0]},
          "data %r" % data["e2b/data"])
    check("e2b/data" not in ip.display_formatter.format(42)[0], "only DataFrames have data")


@case
def formats_json_and_chart():
    ip, _ = shell()
    data, md = ip.display_formatter.format({"a": np.int64(3), 1: np.array([1.5, np.nan])})
    check(data.get("application/json") == {"a": 3, "1": [1.5, None]} and
          md.get("application/json") == {"expanded": True}, "json %r %r" % (data, md))
    data, _ = ip.display_formatter.format([object()])
    check("application/json" not in data and "text/plain" in data, "no JSON form: no json")
    fig = plt.figure()
    plt.plot([1, 2])
    data, _ = ip.display_formatter.format(fig)
    check(data.get("e2b/chart", {}).get("type") == "line", "a figure's chart %r" % data.get("e2b/chart"))
    check(ip.display_formatter.format(plt.figure())[0].get("e2b/chart") == {}, "blank figure: {}")
    plt.close("all")


@case
def formats_pil_save_displays():
    import tempfile
    from PIL import Image
    ip, shown = shell()
    img = Image.new("RGBA", (16, 16), (255, 0, 0, 255))
    with tempfile.TemporaryDirectory() as d:
        img.save(os.path.join(d, "a.png"))
        check(os.path.getsize(os.path.join(d, "a.png")) > 0, "the file is saved")
        check(len(shown) == 1 and "image/png" in shown[0], "displayed once on save %r" % shown)
        with open(os.path.join(d, "b.png"), "wb") as f:
            img.save(f, "PNG")  # a file object, not a path: not displayed, as E2B's
        check(len(shown) == 1, "a file object is not displayed")
    import subprocess
    spawned, popen = [], subprocess.Popen
    subprocess.Popen = lambda *a, **k: spawned.append(a)  # xdg-open & co. must not run
    try:
        img.show()
    finally:
        subprocess.Popen = popen
    check(len(shown) == 2 and "image/png" in shown[1] and not spawned,
          "show() is one display through IPython, no viewer program: %d shown, ran %r"
          % (len(shown), spawned))


def main():
    for fn in CASES:
        try:
            fn()
            print("PASS %s" % fn.__name__)
        except Exception as e:  # noqa: BLE001 - report every case
            FAILED.append(fn.__name__)
            print("FAIL %s: %s: %s" % (fn.__name__, type(e).__name__, e))
    print("%d passed, %d failed" % (len(CASES) - len(FAILED), len(FAILED)))
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
