#!/usr/bin/env python3
"""Streamed files cost bounded engine memory: writes a 256 MiB file of random bytes, runs
tests/kinds/stream_case.lua against the local platform (upload from an open file, read back into
another and through on_chunk) and checks the copy is identical and the engine's own peak RSS
(VmHWM of the abxlua run process, printed by the case) stayed under ABX_STREAM_RSS_LIMIT_MB
(default 96 MiB, well under the file's size). Needs root and bubblewrap, like tests/platform
(exit 77 = skipped). Usage: test_stream_rss.py ABXLUA"""
import hashlib, os, re, shutil, subprocess, sys, tempfile
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from abxtest import check, finish, needs_platform
here = os.path.dirname(os.path.abspath(__file__))
root = os.path.abspath(os.path.join(here, "..", ".."))
abx = os.path.abspath(sys.argv[1])
SIZE = 256 * 1024 * 1024
LIMIT_MB = float(os.environ.get("ABX_STREAM_RSS_LIMIT_MB", "96"))
needs_platform()

tmp = tempfile.mkdtemp(prefix="abx-stream-")
try:
    src, dst = os.path.join(tmp, "src.bin"), os.path.join(tmp, "dst.bin")
    h = hashlib.sha256()
    with open(src, "wb") as f:
        for _ in range(SIZE // (1 << 20)):
            block = os.urandom(1 << 20)
            h.update(block)
            f.write(block)
    sha = h.hexdigest()
    env = dict(os.environ, ABX_STREAM_SRC=src, ABX_STREAM_DST=dst, ABX_STREAM_SHA=sha, NO_COLOR="1")
    p = subprocess.run([abx, "run", "tests/kinds/stream_case.lua", "-j", "1"], cwd=root, env=env,
                       capture_output=True, text=True, timeout=900)
    out = p.stdout + p.stderr
    print(out)
    check(p.returncode == 0 and re.search(r"^1 passed, 0 failed", out, re.M) is not None,
          "the streamed upload and reads passed (exit %d)" % p.returncode)
    m = re.search(r"peak_rss_kb=(\d+)", out)
    peak = int(m.group(1)) / 1024 if m else None
    check(peak is not None and peak < LIMIT_MB,
          "engine peak RSS %.1f MiB < %.0f MiB for a %d MiB file" % (peak or -1, LIMIT_MB, SIZE >> 20))
    same = os.path.exists(dst) and os.path.getsize(dst) == SIZE
    if same:
        d = hashlib.sha256()
        with open(dst, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                d.update(block)
        same = d.hexdigest() == sha
    check(same, "the file read back into `to` is the uploaded one")
finally:
    shutil.rmtree(tmp, ignore_errors=True)
finish()
