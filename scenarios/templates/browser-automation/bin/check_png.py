"""check_png.py FILE.png W H X,Y=RRGGBB ...: checks a PNG (Python 3 standard library only).

Prints one JSON line {ok, width, height, pixels: {"X,Y": "rrggbb"}, problems: [...]} and exits 0
when the file is a PNG of W x H whose pixel at each X,Y is RRGGBB within 8 per channel (Chromium
may dither or colour-manage), 1 otherwise. Decodes 8-bit RGB/RGBA, non-interlaced (what Chromium
writes), all five filter types.
"""
import json
import struct
import sys
import zlib


def decode(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG (bad signature)")
    pos, chunks = 8, {}
    idat = b""
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IDAT":
            idat += body
        else:
            chunks.setdefault(kind, body)
        pos += 12 + n
    w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", chunks[b"IHDR"])
    if depth != 8 or ctype not in (2, 6) or interlace:
        raise ValueError(f"unsupported PNG: depth {depth}, colour type {ctype}, interlace {interlace}")
    bpp = 3 if ctype == 2 else 4
    raw = zlib.decompress(idat)
    stride = w * bpp
    rows, prev = [], bytearray(stride)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        prev = line
    return w, h, bpp, rows


def main():
    path, want_w, want_h = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    problems, pixels = [], {}
    try:
        w, h, bpp, rows = decode(path)
    except (OSError, ValueError, KeyError, zlib.error) as e:
        print(json.dumps({"ok": False, "problems": [str(e)]}))
        return 1
    if (w, h) != (want_w, want_h):
        problems.append(f"size {w}x{h}, expected {want_w}x{want_h}")
    for spec in sys.argv[4:]:
        xy, rgb = spec.split("=")
        x, y = (int(v) for v in xy.split(","))
        if x >= w or y >= h:
            problems.append(f"pixel {xy} is outside {w}x{h}")
            continue
        got = bytes(rows[y][x * bpp:x * bpp + 3])
        pixels[xy] = got.hex()
        want = bytes.fromhex(rgb)
        if any(abs(g - e) > 8 for g, e in zip(got, want)):
            problems.append(f"pixel {xy} is {got.hex()}, expected {rgb}")
    print(json.dumps({"ok": not problems, "width": w, "height": h, "pixels": pixels,
                      "problems": problems}))
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main())
