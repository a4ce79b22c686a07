#!/usr/bin/env python3
"""`abxlua accept desktop` (issue 15 part 8) on the local provider: a full run (template base with
--upload-script) exits 0 and writes report.json and screenshot.png; the report has every check
passed, the wrong VNC password and the missing traffic token refused among them, and no password,
token, sandbox id or endpoint; the PNG is decoded here (signature, IHDR, IDAT inflated with zlib,
the rows unfiltered: RFC 2083 / PNG spec section 9) and the window the script opened is in it in
its colour, the root around it in the root's; nothing of the run is left. Then the refusals (exit
4, the message naming the input, no output dir made): an existing output dir, an unknown
template, an unknown option. With PROVIDER (e.g. local-tls: the WebSocket over HTTPS through
`serve --tls`) only the full run, on that provider. Usage: test_desktop.py ABXLUA [PROVIDER]"""
import json, os, re, struct, subprocess, sys, tempfile, zlib
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import abxtest
from abxtest import check, finish

abxtest.needs_platform()
abx = os.path.abspath(sys.argv[1])
PROVIDER = sys.argv[2] if len(sys.argv) > 2 else "local"
root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
# scenarios/templates/desktop/bin/start.sh: the window's and the root's colours
WINDOW_RGB, ROOT_RGB = bytes.fromhex("e04010"), bytes.fromhex("2050a0")
CHECKS = ["template", "sandbox created", "desktop started", "window mapped", "VNC through the ingress",
          "the window's pixels", "screenshot.png written", "a wrong VNC password is refused",
          "no traffic token is refused by the edge"]


# timeout guards a hang only: the TLS run under ASan beside a busy suite took over 120 s (issue 22)
def accept(*args, env=None, timeout=480):
    e = dict(os.environ, NO_COLOR="1")
    for k in ("ABX_PROVIDER", "ABX_CONFIG", "E2E_RUN_ID"):
        e.pop(k, None)
    e.update(env or {})
    p = subprocess.run([abx, "accept", "desktop", *args], cwd=root, env=e, capture_output=True,
                       text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def png_decode(data):
    """(width, height, RGB bytes) of an 8-bit RGB, non-interlaced PNG; raises on anything else.
    Chunks: length, type, data, CRC-32 over type+data (PNG spec sections 5.3, 11.2.2)."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("no PNG signature")
    pos, chunks = 8, []
    while pos < len(data):
        n, = struct.unpack(">I", data[pos:pos + 4])
        typ, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        crc, = struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])
        if zlib.crc32(typ + body) != crc:
            raise ValueError("bad CRC in chunk %r" % typ)
        chunks.append((typ, body))
        pos += 12 + n
    if chunks[0][0] != b"IHDR" or chunks[-1][0] != b"IEND":
        raise ValueError("IHDR first and IEND last: %s" % [c[0] for c in chunks])
    w, h, depth, ctype, comp, filt, inter = struct.unpack(">IIBBBBB", chunks[0][1])
    if (depth, ctype, comp, filt, inter) != (8, 2, 0, 0, 0):
        raise ValueError("not 8-bit RGB non-interlaced: %s" % ((depth, ctype, comp, filt, inter),))
    raw = zlib.decompress(b"".join(b for t, b in chunks if t == b"IDAT"))
    stride, bpp = w * 3, 3
    if len(raw) != h * (stride + 1):
        raise ValueError("IDAT inflates to %d bytes, want %d" % (len(raw), h * (stride + 1)))
    out, prev = bytearray(), bytearray(stride)
    for y in range(h):
        ft = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if ft == 1:
                line[i] = (line[i] + a) & 255
            elif ft == 2:
                line[i] = (line[i] + b) & 255
            elif ft == 3:
                line[i] = (line[i] + ((a + b) >> 1)) & 255
            elif ft == 4:
                line[i] = (line[i] + paeth(a, b, c)) & 255
            elif ft != 0:
                raise ValueError("filter type %d in row %d" % (ft, y))
        out += line
        prev = line
    return w, h, bytes(out)


def rect_pixels(rgb, w, x, y, rw, rh):
    """The set of distinct pixels in the rectangle"""
    seen = set()
    for yy in range(y, y + rh):
        row = rgb[(yy * w + x) * 3:(yy * w + x + rw) * 3]
        seen.update(row[i:i + 3] for i in range(0, len(row), 3))
    return seen


tmp = tempfile.mkdtemp()
out_dir = os.path.join(tmp, "out")

# 1. a full local run
code, out, err = accept("--provider", PROVIDER, "--template", "base", "--upload-script",
                        "--output-dir", out_dir, env={"TMPDIR": tmp})
print(err)
check(code == 0, "a full local run exits 0 (got %d)" % code)
report = os.path.join(out_dir, "report.json")
check(os.path.exists(report), "report.json is written")
check(sorted(os.listdir(out_dir)) == ["report.json", "screenshot.png"] if os.path.isdir(out_dir)
      else False, "the output dir holds report.json and screenshot.png")
rep = json.load(open(report)) if os.path.exists(report) else {}
checks = rep.get("checks", [])
names = [c.get("name", "") for c in checks]
check(len(names) == len(CHECKS) and all(n.startswith(want) for n, want in zip(names, CHECKS)),
      "the report has every check in order: %s" % names)
check(all(c.get("ok") is True for c in checks),
      "every check passed: %s" % [(c["name"], c.get("error")) for c in checks if not c.get("ok")])
byname = {c["name"].split(" (")[0]: c for c in checks}
wrong = next((c for c in checks if c["name"].startswith("a wrong VNC password")), {})
check(wrong.get("ok") and wrong.get("detail", {}).get("refused") == "SecurityResult failed",
      "the report shows the wrong password refused by RFB's SecurityResult: %s" % wrong.get("detail"))
notok = next((c for c in checks if c["name"].startswith("no traffic token")), {})
check(notok.get("ok") and notok.get("detail", {}).get("status") == 403,
      "the report shows the upgrade without the traffic token refused with 403: %s" % notok.get("detail"))
check(rep.get("passed") is True and rep.get("failures") == [] and rep.get("kind") == "desktop"
      and rep.get("template") == "base" and rep.get("provider") == PROVIDER,
      "the report's passed, failures, kind, template and provider")
cl = rep.get("cleanup", {})
check(cl.get("sandboxes_killed") == 1 and cl.get("sandboxes_left") == 0 and cl.get("errors") == [],
      "cleanup killed the one sandbox and none is left by tag: %s" % cl)
text = open(report).read() if os.path.exists(report) else ""
# docs/PLATFORM.md: a local sandbox id is `i` + 20 characters of [a-z0-9]
check(re.search(r"\bi[a-z0-9]{20}\b", text) is None, "no sandbox id in the report")
check(re.search(r"desk-[0-9a-f]{8}", text) is None, "no run id in the report")
check(re.search(r"e2b_[0-9a-f]{8,}", text) is None and "127.0.0.1" not in text,
      "no API key or endpoint in the report")
check(not re.search(r"(?i)password\"\s*:\s*\"", text), "no password field in the report")

# the PNG, decoded here
png = os.path.join(out_dir, "screenshot.png")
data = open(png, "rb").read() if os.path.exists(png) else b""
vnc = next((c.get("detail", {}) for c in checks if c["name"].startswith("VNC through")), {})
pix = next((c.get("detail", {}) for c in checks if c["name"].startswith("the window's pixels")), {})
try:
    w, h, rgb = png_decode(data)
    decoded = True
except (ValueError, zlib.error, struct.error, IndexError) as e:
    print("PNG: %s" % e)
    w = h = 0
    rgb, decoded = b"", False
check(decoded, "screenshot.png has the PNG signature, valid chunks, and inflates to 8-bit RGB rows")
check(decoded and (w, h) == (vnc.get("width"), vnc.get("height")) and w > 0,
      "IHDR's size is the framebuffer's: %sx%s vs %s" % (w, h, vnc))
win = pix.get("window") or {}
if decoded and win:
    x, y, ww, wh = win["x"], win["y"], win["w"], win["h"]
    check(0 <= x and 0 <= y and x + ww <= w and y + wh <= h and ww > 8 and wh > 8,
          "the window (%s) is on the screen" % win)
    inner = rect_pixels(rgb, w, x + 2, y + 2, ww - 4, wh - 4)
    check(inner == {WINDOW_RGB}, "every pixel of the window in the PNG is e04010: %s"
          % sorted(p.hex() for p in inner)[:5])
    patch = rect_pixels(rgb, w, 8, 8, 48, 40)
    check(patch == {ROOT_RGB}, "the root patch in the PNG is 2050a0: %s" % sorted(p.hex() for p in patch)[:5])
    # the window is not everything: just outside its frame the screen has other pixels
    outside = rect_pixels(rgb, w, max(0, x - 12), y + 4, 4, 8)
    check(WINDOW_RGB not in outside, "left of the window the window's colour stops")
else:
    check(False, "the report gives the window's geometry: %s" % pix)
abxtest.nothing_left(tmp, "the full run")
if PROVIDER != "local":
    finish()

# 2. refusals: exit 4, the message naming the input, nothing made
code, out, err = accept("--template", "base", "--upload-script", "--output-dir", out_dir)
check(code == 4 and out_dir in err and "exists" in err,
      "an existing output dir is refused, named (exit %d): %s" % (code, err.strip()[-200:]))
check(sorted(os.listdir(out_dir)) == ["report.json", "screenshot.png"],
      "the existing output dir is left as it was")
new = os.path.join(tmp, "new")
code, out, err = accept("--template", "no-such-template-x", "--output-dir", new, env={"TMPDIR": tmp})
check(code == 4 and 'unknown template "no-such-template-x"' in err,
      "an unknown template is refused, named (exit %d): %s" % (code, err.strip()[-200:]))
check(not os.path.exists(new), "no output dir is left after an unknown template")
code, out, err = accept("--template", "base", "--output-dir", new, "--no-such-option")
check(code == 4 and "'--no-such-option'" in err,
      "an unknown option is refused, named (exit %d): %s" % (code, err.strip()[-200:]))
code, out, err = accept("--template", "base", "--output-dir", new, "--provider", "nosuch")
check(code == 4 and '"nosuch"' in err and "local" in err,
      "an unknown provider is refused naming the configured ones (exit %d)" % code)
code, out, err = accept("--template", "base", "--output-dir", os.path.join(tmp, "nodir", "x"))
check(code == 4 and "nodir" in err and "not a directory" in err,
      "an output dir whose parent is missing is refused (exit %d): %s" % (code, err.strip()[-200:]))
code, out, err = accept("--output-dir", new)
check(code == 4 and "--template" in err, "a missing --template is refused (exit %d)" % code)
check(not os.path.exists(new), "no refusal made the output dir")
abxtest.nothing_left(tmp, "the refusals")
finish()
