"""abx_formats: the result formats E2B's code interpreter adds to IPython, installed in each Python
kernel of the code-interpreter-v1 template by startup.py.

E2B's template (template/startup_scripts/0002_data.py and 0003_images.py @ 7df1757, e2b-dev/
code-interpreter) registers, and this module reproduces on Debian's IPython:
  e2b/data          a pandas DataFrame as {column: [values...]} (DataFrame.to_dict(orient="list"),
                    Timestamps as ISO 8601 strings): the result's `data` field
  e2b/chart         a matplotlib Figure as abx_charts.figure_to_dict gives it ({} when the
                    extraction fails, as E2B's formatter answers): the result's `chart` field
  application/json  a list or dict result as JSON with numpy values made plain (E2B uses orjson's
                    OPT_SERIALIZE_NUMPY | OPT_NON_STR_KEYS), metadata {"expanded": true}: `json`
  PIL               Image.save(<a str path>, ...) also displays the image (a png result), and
                    PIL's external viewers do nothing (no display in a sandbox), so Image.show()
                    falls through to IPython's display (once: the file show() saves is not shown)
server.py maps those MIME types onto the result's fields (its MIME table). Objects of other types
keep IPython's own behaviour (a `_repr_e2b_data_`/`_repr_e2b_chart_` method still works). A
formatter never raises into IPython: a failure gives no such field (the chart: {}), never an
error line. Differences from E2B: NaN and NaT in a DataFrame are null (E2B passes NaN through
Jupyter's serializer); the JSON formatter is the standard library's (Debian 12 has no orjson).
"""
import datetime
import enum
import functools
import math
import sys
import threading
import uuid

from IPython.core.formatters import BaseFormatter, JSONFormatter
from traitlets import ObjectName, Unicode

import abx_charts  # imported now: startup.py's directory is on sys.path only while it runs


def plain_cell(v):
    """One DataFrame cell as JSON: Timestamps as ISO strings (E2B), NaN/NaT as null."""
    pandas = sys.modules.get("pandas")
    if pandas is not None and v is pandas.NaT:
        return None
    if isinstance(v, datetime.date):
        return v.isoformat()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


class DataFormatter(BaseFormatter):
    """e2b/data: a pandas DataFrame as {column: [values]}."""
    format_type = Unicode("e2b/data")
    print_method = ObjectName("_repr_e2b_data_")
    _return_type = (dict, str)

    def __call__(self, obj):
        pandas = sys.modules.get("pandas")  # a DataFrame exists only once pandas is imported
        try:
            if pandas is not None and isinstance(obj, pandas.DataFrame):
                return {k if isinstance(k, str) else str(k): [plain_cell(v) for v in col]
                        for k, col in obj.to_dict(orient="list").items()}
            return BaseFormatter.__call__(self, obj)
        except Exception:  # noqa: BLE001 - a formatter must not break the display
            return None


class ChartFormatter(BaseFormatter):
    """e2b/chart: a matplotlib Figure as structured data (abx_charts)."""
    format_type = Unicode("e2b/chart")
    print_method = ObjectName("_repr_e2b_chart_")
    _return_type = (dict, str)

    def __call__(self, obj):
        try:
            if "matplotlib" in sys.modules:
                from matplotlib.figure import Figure
                if isinstance(obj, Figure):
                    try:
                        return abx_charts.figure_to_dict(obj)
                    except Exception:  # noqa: BLE001 - E2B answers {} too
                        return {}
            return BaseFormatter.__call__(self, obj)
        except Exception:  # noqa: BLE001
            return None


def plain_json(v, depth=0):
    """`v` as plain JSON values (numpy arrays and scalars, dates, UUIDs, enums converted; keys made
    strings); TypeError when something has no JSON form, ValueError when nested too deep."""
    if depth > 254:  # orjson's limit; also stops a self-containing list
        raise ValueError("nested too deep")
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, int):
        return int(v)
    if isinstance(v, float):
        return v if math.isfinite(v) else None  # orjson writes NaN as null
    if isinstance(v, dict):
        return {json_key(k): plain_json(x, depth + 1) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [plain_json(x, depth + 1) for x in v]
    if isinstance(v, (datetime.date, datetime.time)):
        return v.isoformat()
    if isinstance(v, uuid.UUID):
        return str(v)
    if isinstance(v, enum.Enum):
        return plain_json(v.value, depth + 1)
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        if isinstance(v, numpy.ndarray):
            return plain_json(v.tolist(), depth + 1)
        if isinstance(v, numpy.generic):
            return plain_json(v.item(), depth + 1)
    raise TypeError("no JSON form for %s" % type(v).__name__)


def json_key(k):
    if isinstance(k, str):
        return k
    if isinstance(k, bool) or k is None:
        return {True: "true", False: "false", None: "null"}[k]
    if isinstance(k, (int, float, uuid.UUID)):
        return str(k)
    if isinstance(k, (datetime.date, datetime.time)):
        return k.isoformat()
    if isinstance(k, enum.Enum):
        return json_key(k.value)
    raise TypeError("no JSON key form for %s" % type(k).__name__)


class ListDictJSONFormatter(JSONFormatter):
    """application/json: also for plain lists and dicts, as E2B's E2BJSONFormatter."""

    def __call__(self, obj):
        if isinstance(obj, (list, dict)):
            try:
                return plain_json(obj), {"expanded": True}
            except (TypeError, ValueError, RecursionError):
                pass
        try:
            return JSONFormatter.__call__(self, obj)
        except Exception:  # noqa: BLE001
            return None


def subclasses(cls):
    out = [cls]
    for sub in cls.__subclasses__():
        out.extend(subclasses(sub))
    return out


def patch_pil(display):
    """Image.save to a path (a str, as E2B checks) also displays the image. PIL's external viewers
    (xdg-open, display, eog, ... on Debian each UnixViewer subclass has its own show_file) answer
    0, "not shown", so Image.show() reaches PIL's IPython viewer and displays the image once (the
    temporary file show() saves is not displayed). No PIL: nothing to do."""
    try:
        from PIL import Image, ImageShow
    except ImportError:
        return
    if getattr(Image.Image.save, "_abx_displays", False):
        return
    for cls in subclasses(ImageShow.UnixViewer):
        cls.show_file = lambda self, *args, **kwargs: 0
    showing = threading.local()
    original_show, original_save = ImageShow.show, Image.Image.save

    @functools.wraps(original_show)
    def show(*args, **kwargs):
        showing.on = True
        try:
            return original_show(*args, **kwargs)
        finally:
            showing.on = False

    @functools.wraps(original_save)
    def save(self, fp, format=None, **params):  # noqa: A002 - PIL's own parameter name
        if isinstance(fp, str) and not getattr(showing, "on", False):
            display(self)
        return original_save(self, fp, format, **params)

    save._abx_displays = True
    ImageShow.show, Image.Image.save = show, save


def install(ip):
    """Registers the formatters on IPython shell `ip` and patches PIL (module doc)."""
    fmt = ip.display_formatter
    fmt.formatters["e2b/data"] = DataFormatter(parent=fmt)
    fmt.formatters["e2b/chart"] = ChartFormatter(parent=fmt)
    fmt.formatters["application/json"] = ListDictJSONFormatter(parent=fmt)
    from IPython.display import display
    patch_pil(display)
