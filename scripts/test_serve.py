#!/usr/bin/env python3
"""test_serve.py — `sdimage serve` against a real origin (make test-serve).

Started by scripts/test-serve.sh with nginx (the origin, serving `sdimage
samples` under /img/) and the fault server on loopback. This starts the
server itself (port 0, a key and salt of its own, 127.0.0.1 allowed as a
source host), signs every URL with its own HMAC (Python's, not ours), and
checks each processing option, the format negotiation, the validators and
every error status; outputs are decoded with `sdimage decode`. Prints one
line per check and `N passed, N failed`.
"""
import base64
import hashlib
import hmac
import math
import os
import random
import re
import signal
import struct
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

SDIMAGE, WORK, ORIGIN, FAULT = sys.argv[1:5]
KEY, SALT = "a1b2c3d4e5f60718293a4b5c6d7e8f90", "0f1e2d3c4b5a6978"
passed = failed = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"ok   {name}")
    else:
        failed += 1
        print(f"FAIL {name} {detail}")


def sign(path, key=KEY, salt=SALT):
    mac = hmac.new(bytes.fromhex(key), bytes.fromhex(salt) + path.encode(), hashlib.sha256).digest()
    return "/" + base64.urlsafe_b64encode(mac).rstrip(b"=").decode() + path


def request(base, method, path, headers=None):
    """(status, headers, body) of any method (urllib follows no HEAD or POST as we need)."""
    import http.client
    u = urllib.parse.urlsplit(base)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=600)
    try:
        c.request(method, path, body=b"" if method == "POST" else None, headers=headers or {})
        r = c.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        c.close()


def get(base, path, headers=None):
    """(status, headers, body) of GET base+path."""
    req = urllib.request.Request(base + path, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status, {k.lower(): v for k, v in r.headers.items()}, r.read()
    except urllib.error.HTTPError as e:
        return e.code, {k.lower(): v for k, v in e.headers.items()}, e.read()


def get_from(client, base, path):
    """(status, headers) of GET base+path sent from the loopback address `client`."""
    import http.client
    host, port = base.split("//")[1].split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=120, source_address=(client, 0))
    try:
        conn.request("GET", path)
        r = conn.getresponse()
        r.read()
        return r.status, {k.lower(): v for k, v in r.getheaders()}
    finally:
        conn.close()


def decode(data, *extra):
    """(width, height, raw premultiplied BGRA) of encoded `data`, by sdimage decode."""
    src, raw = os.path.join(WORK, "out.bin"), os.path.join(WORK, "out.raw")
    open(src, "wb").write(data)
    r = subprocess.run([SDIMAGE, "decode", src, "--raw", raw, *extra], capture_output=True, text=True)
    m = re.search(r"(\d+)x(\d+)", r.stdout + r.stderr)
    if r.returncode != 0 or not m:
        return None
    return int(m.group(1)), int(m.group(2)), open(raw, "rb").read()


def psnr(a, b):
    """PSNR in dB of two equal-size RGB PIL images."""
    from PIL import ImageChops, ImageStat
    mse = sum(v * v for v in ImageStat.Stat(ImageChops.difference(a, b)).rms) / 3
    return 99.0 if mse == 0 else 10 * math.log10(255 * 255 / mse)


def rgb(w, h, raw):
    """A PIL RGB image of premultiplied BGRA bytes of an opaque image."""
    from PIL import Image
    return Image.frombytes("RGBA", (w, h), raw, "raw", "BGRA").convert("RGB")


def bomb_png(path, side=60000):
    """A small PNG that declares side x side pixels (a decompression bomb)."""
    import struct
    import zlib

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff)
    rows = zlib.compress(b"\0" * 4096)
    open(path, "wb").write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", side, side, 8, 6, 0, 0, 0))
                           + chunk(b"IDAT", rows) + chunk(b"IEND", b""))


def sample(prefix):
    return sorted(n for n in os.listdir(os.path.join(WORK, "www", "img")) if n.startswith(prefix))[0]


def start(*args, env_extra=None):
    """An `sdimage serve` on a free loopback port: (process, base URL, first stdout lines)."""
    log = open(os.path.join(WORK, f"serve-{time.monotonic_ns()}.log"), "w")
    # Its default cache folder goes under the suite's work folder: some checks end a server with SIGKILL,
    # which leaves that folder behind, and test-serve.sh removes the work folder at exit.
    tmp = os.path.join(WORK, "tmp")
    os.makedirs(tmp, exist_ok=True)
    proc = subprocess.Popen([SDIMAGE, "serve", "--listen", "127.0.0.1:0", *args], stdout=subprocess.PIPE, stderr=log,
                            text=True, env={**os.environ, "TMPDIR": tmp, **(env_extra or {})})
    line = proc.stdout.readline()
    m = re.search(r"http://127\.0\.0\.1:(\d+)", line)
    return proc, (f"http://127.0.0.1:{m.group(1)}" if m else None), line


def metric(base, name):
    """The summed value of every sample of `name` (with any labels) on /metrics."""
    _, _, body = get(base, "/metrics")
    total = 0.0
    for line in body.decode().splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            total += float(line.rsplit(" ", 1)[1])
    return total


def wait_for(cond, what, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.05)
    print(f"     (gave up waiting for {what})")
    return False


def write_endless_svg():
    """img/endless.svg: a 4000x4000 turbulence of 100,000 octaves, hours of a worker's CPU."""
    open(os.path.join(WORK, "www", "img", "endless.svg"), "w").write(
        "<svg xmlns='http://www.w3.org/2000/svg' width='4000' height='4000'><filter id='f'>"
        "<feTurbulence baseFrequency='0.05' numOctaves='100000'/></filter>"
        "<rect width='4000' height='4000' filter='url(#f)'/></svg>")


def background_get(base, path):
    """GET in a thread; the returned dict gets "result" when it ends."""
    box = {}
    t = threading.Thread(target=lambda: box.__setitem__("result", get(base, path)), daemon=True)
    t.start()
    box["thread"] = t
    return box


def run_limits():
    """A second server with one render at a time, no queue, 1 MiB sources:
    503 when busy, 422 from a hostile origin, graceful drain on SIGTERM; then
    a third with 2 s of source silence allowed: 504 from a stalled origin."""
    photo = sample("photo-")
    # a plain source with a query is percent-encoded (as imgproxy asks): "?" would start the request's own query
    held = lambda gate: sign(f"/rs:fit:64:64/plain/{FAULT}/drip-file%3Fname%3Dimg/{photo}%26gate%3D{gate}@png")
    cache = os.path.join(WORK, "serve-cache-2")
    # sandboxed decoders (the default): a held source holds a fetch's turn, the one there is here
    proc, base, line = start("--key", KEY, "--salt", SALT, "--allow-source-host", "127.0.0.1", "--max-fetches", "1",
                             "--queue-depth", "0", "--max-source-mb", "1",
                             # renders held at a gate wait for as long as the checks before it take
                             "--source-timeout", "600",
                             "--drain-timeout", "600", "--cache-dir", cache, "--max-client-requests", "1")
    if not base:
        check("second server starts", False, line)
        proc.kill()
        return
    restart_lm = None
    try:
        # busy: one source held by the origin, the next request turned away at once
        a = background_get(base, held("busy"))
        wait_for(lambda: metric(base, "sdimage_serve_fetches_in_flight") == 1, "the held fetch")
        # from another client: the render gate turns it away; from the same one: its own limit first
        st, h = get_from("127.0.0.3", base, sign(f"/rs:fit:64:64/plain/{ORIGIN}/img/{photo}@png"))
        check("saturated: 503 with Retry-After", st == 503 and h.get("retry-after") == "1", (st, h))
        st, h = get_from("127.0.0.1", base, sign(f"/rs:fit:64:64/plain/{ORIGIN}/img/{photo}@png"))
        check("--max-client-requests 1: the same client's second request 429 with Retry-After",
              st == 429 and h.get("retry-after") == "1", (st, h))
        urllib.request.urlopen(f"{FAULT}/open?gate=busy", timeout=30).read()
        a["thread"].join(120)
        check("the held render still completes", a.get("result", (0,))[0] == 200, a.get("result", (0,))[0])
        st, h, _ = get(base, sign(f"/rs:fit:64:64/plain/{ORIGIN}/img/{photo}@png"))
        check("after it, the same client is served again", st == 200, st)
        restart_lm = h.get("last-modified")
        # hostile origins, each within its budget
        st, _, body = get(base, sign(f"/rs:fit:64:64/plain/{FAULT}/endless@png"))
        check("endless source: 422 past --max-source-mb", st == 422, (st, body[:200]))
        # metrics: the library's and the server's
        _, h, body = get(base, "/metrics")
        text = body.decode()
        for name in ("sdimage_serve_requests_total{", "sdimage_serve_request_duration_seconds_bucket",
                     "sdimage_serve_renders_refused_total", "sdimage_serve_render_queue_depth",
                     "sdwebimage_downloads_total", "sdwebimage_download_bytes_total", "process_resident_memory_bytes"):
            check(f"/metrics has {name}", name in text, h.get("content-type"))
        check("/metrics counts the 503", 'status="503"' in text, "")
        # drain: SIGTERM while a render is held; new connections refused, the held one finishes, exit 0
        c = background_get(base, held("drain"))
        wait_for(lambda: metric(base, "sdimage_serve_fetches_in_flight") == 1, "the held fetch")
        proc.send_signal(signal.SIGTERM)

        def refused():
            """A connection refused or reset; a slow answer (a starved machine) is not one."""
            try:
                urllib.request.urlopen(base + "/health/live", timeout=30).read()
                return False
            except urllib.error.URLError as e:
                return isinstance(e.reason, ConnectionError)
            except ConnectionError:
                return True
            except OSError:  # a timeout
                return False
        check("draining: new connections refused", wait_for(refused, "the listener to close"))
        urllib.request.urlopen(f"{FAULT}/open?gate=drain", timeout=30).read()
        c["thread"].join(120)
        check("draining: the request in flight completes", c.get("result", (0,))[0] == 200, c.get("result", (0,))[0])
        try:
            rc = proc.wait(120)
        except subprocess.TimeoutExpired:
            rc = "timeout"
        check("drained: exit 0", rc == 0, rc)
    finally:
        for g in ("busy", "drain"):
            try:
                urllib.request.urlopen(f"{FAULT}/open?gate={g}", timeout=30).read()
            except OSError:
                pass
        if proc.poll() is None:
            proc.kill()
    # the results outlive the process: a new one on the same cache directory renders nothing
    proc, base, _ = start("--key", KEY, "--salt", SALT, "--allow-source-host", "127.0.0.1", "--cache-dir", cache)
    try:
        st, _, _ = get(base, held("busy"))
        st2, h2, _ = get(base, sign(f"/rs:fit:64:64/plain/{ORIGIN}/img/{photo}@png"))
        check("restarted: results from the disk cache, the source's Last-Modified kept with them",
              (st, st2) == (200, 200) and metric(base, "sdimage_serve_result_cache_hits_total") == 2
              and metric(base, "sdimage_serve_renders_total") == 0 and restart_lm is not None
              and h2.get("last-modified") == restart_lm, (st, st2, restart_lm, h2.get("last-modified")))
        fill = sign(f"/rs:fill:48:48/plain/{ORIGIN}/img/{photo}@png")
        whole = sign(f"/plain/{ORIGIN}/img/{photo}@png")
        st3, _, _ = get(base, fill)
        st4, _, _ = get(base, whole)
        check("restarted: a fill result and a full-size one rendered",
              (st3, st4) == (200, 200) and metric(base, "sdimage_serve_renders_total") == 2, (st3, st4))
    finally:
        proc.kill()
        proc.wait()
    # the same cache under --shrink-margin 1: every render with a box (fit,
    # fill, crops) shrinks on load, so its results are the margin's; a
    # full-size result (no box) is still a hit
    proc, base, line = start("--key", KEY, "--salt", SALT, "--allow-source-host", "127.0.0.1", "--cache-dir", cache,
                             "--shrink-margin", "1")
    try:
        st, _, _ = get(base, whole) if base else (0, {}, b"")
        hits, renders = (metric(base, "sdimage_serve_result_cache_hits_total"),
                         metric(base, "sdimage_serve_renders_total")) if base else (None, None)
        st2, _, _ = get(base, fill) if base else (0, {}, b"")
        check("--shrink-margin 1 on the same cache: the full-size result a hit, the fill result rendered anew",
              (st, st2, hits, renders) == (200, 200, 1, 0) and metric(base, "sdimage_serve_renders_total") == 1,
              (st, st2, hits, renders, line))
    finally:
        proc.kill()
        proc.wait()
    # a queued render waits at most --queue-timeout for its turn: one render
    # held by the origin (it never ends until the test opens its gate), the
    # next one queued, then 503 with Retry-After naming the wait
    photo_ = sample("photo-")
    gated = sign(f"/rs:fit:64:64/plain/{FAULT}/drip-file%3Fname%3Dimg/{photo_}%26gate%3Dqueue@png")
    proc, base, line = start("--key", KEY, "--salt", SALT, "--allow-source-host", "127.0.0.1", "--max-fetches", "1",
                             "--queue-depth", "4", "--queue-timeout", "1", "--source-timeout", "600")
    try:
        a = background_get(base, gated)
        wait_for(lambda: metric(base, "sdimage_serve_fetches_in_flight") == 1, "the held fetch")
        st, h, body = get(base, sign(f"/rs:fit:48:48/plain/{ORIGIN}/img/{photo_}@png"))
        check("--queue-timeout 1: a queued fetch 503 with Retry-After after its wait",
              st == 503 and h.get("retry-after") == "1" and b"no turn within 1 s" in body, (st, body[:120]))
        urllib.request.urlopen(f"{FAULT}/open?gate=queue", timeout=30).read()
        a["thread"].join(120)
        check("the held render completes", a.get("result", (0,))[0] == 200, a.get("result", (0,))[0])
    finally:
        proc.kill()
        proc.wait()
    # a client that hangs up mid-render ends its render: the decode of an SVG
    # whose filter would cost its worker hours (the budgets here are longer
    # than any test) stops, the render is counted abandoned, the slot is free
    write_endless_svg()
    proc, base, line = start("--key", KEY, "--salt", SALT, "--allow-source-host", "127.0.0.1", "--max-renders", "1",
                             "--decode-cpu-ms", "600000", "--decode-wall-ms", "3600000")
    try:
        import socket
        host, port = base.split("//")[1].split(":")
        c = socket.create_connection((host, int(port)), timeout=120)
        # 4000x4000 of that filter: the worker would be busy for hours
        c.sendall(f"GET {sign(f'/rs:fit:4000:4000/plain/{ORIGIN}/img/endless.svg@png')} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        wait_for(lambda: metric(base, "sdimage_serve_renders_in_flight") == 1, "the endless render")
        c.close()
        wait_for(lambda: metric(base, "sdimage_serve_renders_in_flight") == 0, "the render to end with its client", 600)
        st, _, _ = get(base, sign(f"/rs:fit:32:32/plain/{ORIGIN}/img/{photo_}@png"))
        check("a client gone mid-render: its decode stopped, counted abandoned, the one render slot free again",
              metric(base, "sdimage_serve_renders_abandoned_total") == 1 and st == 200,
              (metric(base, "sdimage_serve_renders_abandoned_total"), st))
    finally:
        proc.kill()
        proc.wait()
    # --allow-source-host takes an address range (CIDR): inside it the
    # origin is reached, outside it refused
    for entry, want in (("127.0.0.0/8", 200), ("10.0.0.0/8", 403)):
        proc, base, line = start("--key", KEY, "--salt", SALT, "--allow-source-host", entry)
        try:
            st, _, _ = get(base, sign(f"/rs:fit:32:32/plain/{ORIGIN}/img/{photo}@png")) if base else (0, {}, b"")
            check(f"--allow-source-host {entry}: {want} for a loopback origin", st == want, (st, line))
        finally:
            proc.kill()
            proc.wait()
    # a stalled origin: 504 once it has sent nothing for --source-timeout (its
    # own server: a short timeout would also end renders the checks above hold);
    # and --shrink-margin 1: the photo shrunk on load to the box, not to twice it
    proc, base, line = start("--key", KEY, "--salt", SALT, "--allow-source-host", "127.0.0.1", "--source-timeout", "2",
                             "--shrink-margin", "1")
    try:
        if not base:
            check("stalled source: 504 after --source-timeout", False, f"the server did not start: {line}")
        else:
            st, _, body = get(base, sign(f"/rs:fit:64:64/plain/{FAULT}/stall@png"))
            check("stalled source: 504 after --source-timeout", st == 504, (st, body[:200]))
            data = open(os.path.join(WORK, "www", "img", photo), "rb").read()
            st, _, body = get(base, sign(f"/rs:fit:40:40/plain/{ORIGIN}/img/{photo}@png"))
            got = decode(body) if st == 200 else None
            one = decode(data, "--max-pixel-size", "40", "--shrink-margin", "1")
            two = decode(data, "--max-pixel-size", "40")
            check("--shrink-margin 1: pixels equal sdimage decode --shrink-margin 1 (and differ from the default 2)",
                  got is not None and got == one and one != two, (st, got and got[:2], one and one[:2]))
    finally:
        proc.kill()
        proc.wait()
    r = subprocess.run([SDIMAGE, "serve", "--listen", "127.0.0.1:0", "--key", KEY, "--salt", SALT, "--shrink-margin", "9"],
                       capture_output=True, text=True, timeout=600)
    check("--shrink-margin 9: refused at start, with the range", r.returncode != 0
          and "--shrink-margin must be in 1...8" in r.stderr + r.stdout, (r.returncode, r.stderr[-300:]))
    # --source-disk-mb 0: sources are not kept (imgproxy's way, thumbor's with
    # its storage off): two results of one source fetch it twice, no file of
    # it on disk, Last-Modified from its response; the default keeps it
    want_lm = get(ORIGIN, f"/img/{photo}")[1].get("last-modified")
    for keep in (False, True):
        folder = os.path.join(WORK, "cache-sources-" + ("kept" if keep else "none"))
        proc, base, line = start("--key", KEY, "--salt", SALT, "--allow-source-host", "127.0.0.1", "--cache-dir", folder,
                                 *([] if keep else ["--source-disk-mb", "0"]))
        try:
            got = [get(base, sign(f"/rs:fit:{s}:{s}/plain/{ORIGIN}/img/{photo}@png")) if base else (0, {}, b"")
                   for s in (30, 31)]
            stored = [os.path.join(d, f) for d, _, fs in os.walk(folder) for f in fs
                      if "results" not in os.path.relpath(d, folder).split(os.sep)]
            ok = [g[0] for g in got] == [200, 200] and all(g[1].get("last-modified") == want_lm for g in got)
            if keep:
                check("default: the source kept on disk (the second result reads it there)", ok and len(stored) > 0,
                      ([g[0] for g in got], stored[:3], line))
            else:
                # the library's download counter moves off the request's path: waited for, never slept on
                fetched = base is not None and wait_for(lambda: metric(base, "sdwebimage_downloads_total") >= 2,
                                                        "two downloads")
                check("--source-disk-mb 0: each render fetches its source, none kept on disk, Last-Modified "
                      "from the response", ok and fetched and not stored and want_lm is not None,
                      ([(g[0], g[1].get("last-modified")) for g in got], want_lm, stored[:3], line))
        finally:
            proc.kill()
            proc.wait()
    # --source-disk-mb 1: the bound holds. Distinct sources rendered one by one,
    # each waited for until its file is on disk (MD5 of its URL, as SDWebImage
    # names it); every write that takes the folder past the bound sweeps it back
    # (the oldest go until half is left), so once the last file is there the
    # sources take at most 1 MiB though more than twice that was written.
    body = open(os.path.join(WORK, "www", "img", photo), "rb").read()
    count = min(100, (5 << 20) // (2 * len(body)) + 1)  # 2.5 MiB in all, or 100 files
    folder = os.path.join(WORK, "cache-sources-bound")
    proc, base, line = start("--key", KEY, "--salt", SALT, "--allow-source-host", "127.0.0.1", "--cache-dir", folder,
                             "--source-disk-mb", "1", "--result-disk-mb", "1")

    def sources_on_disk(results=False):
        return {f: os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(folder) for f in fs
                if ("results" in os.path.relpath(d, folder).split(os.sep)) == results}
    try:
        landed = base is not None
        for i in range(count if landed else 0):
            name = f"bound-{i}.jpg"
            with open(os.path.join(WORK, "www", "img", name), "wb") as f:
                f.write(body)
            url = f"{ORIGIN}/img/{name}"
            st = get(base, sign(f"/rs:fit:32:32/plain/{url}@png"))[0]
            file = hashlib.md5(url.encode()).hexdigest() + ".jpg"
            if st != 200 or not wait_for(lambda: file in sources_on_disk(), f"{name} on disk"):
                landed = False
                break
        total = lambda: sum(sources_on_disk().values())
        check(f"--source-disk-mb 1: {count} sources of {len(body)} bytes written, at most 1 MiB kept",
              landed and wait_for(lambda: 0 < total() <= 1 << 20, "the sweep"), (landed, total(), line))
        # --result-disk-mb 1: large results (each written before it is answered);
        # a sweep starts each time an eighth of the bound was written
        sizes = [len(g[2]) if g[0] == 200 else -1 for g in
                 (get(base, sign(f"/rs:force:600:{600 + i}:1/plain/{ORIGIN}/img/{photo}@png")) if base else (0, {}, b"")
                  for i in range(8))]
        results = lambda: sum(sources_on_disk(results=True).values())
        check(f"--result-disk-mb 1: {sum(sizes)} bytes of results written, at most 1 1/8 MiB kept",
              min(sizes) > 0 and sum(sizes) > 2 << 20 and wait_for(lambda: 0 < results() <= 9 << 17, "the sweep"),
              (sizes, results()))
    finally:
        proc.kill()
        proc.wait()
    r = subprocess.run([SDIMAGE, "serve", "--listen", "127.0.0.1:0", "--key", KEY, "--salt", SALT,
                        "--source-disk-mb", "0", "--redis", "redis://127.0.0.1:1/0"],
                       capture_output=True, text=True, timeout=600)
    check("--source-disk-mb 0 with --redis: refused at start", r.returncode != 0
          and "--source-disk-mb 0 with --redis" in r.stderr + r.stdout, (r.returncode, r.stderr[-300:]))
    # settings: the flag, else SDIMAGE_SERVE_<NAME>, else the --config file
    import json
    cfg = os.path.join(WORK, "serve.json")
    json.dump({"key": KEY, "salt": SALT, "allow-source-host": ["127.0.0.1"], "max-age": 77, "quality": 50}, open(cfg, "w"))
    src = sign(f"/rs:fit:64:64/plain/{ORIGIN}/img/{photo}@jpg")
    for args, env_extra, want in ((["--config", cfg], {}, "77"), (["--config", cfg], {"SDIMAGE_SERVE_MAX_AGE": "88"}, "88"),
                                  (["--config", cfg, "--max-age", "99"], {"SDIMAGE_SERVE_MAX_AGE": "88"}, "99")):
        proc, base, line = start(*args, env_extra=env_extra)
        try:
            st, h, _ = get(base, src) if base else (0, {}, b"")
            check(f"settings {args[2:] or ''} {env_extra or ''}: the file's key signs, max-age {want}",
                  st == 200 and h.get("cache-control") == f"public, max-age={want}", (st, h.get("cache-control"), line))
        finally:
            proc.kill()
            proc.wait()
    proc, base, line = start("--config", os.path.join(WORK, "missing.json"))
    check("a missing --config file: a clear error, exit 2", base is None and proc.wait(60) == 2, line)

    # --dev: no configuration, a printed example URL that works
    tmp = os.path.join(WORK, "dev-tmp")  # where it makes its own cache folder
    os.makedirs(tmp, exist_ok=True)
    proc = subprocess.Popen([SDIMAGE, "serve", "--dev"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            env=dict(os.environ, TMPDIR=tmp))
    own_cache = os.path.join(tmp, f"sdimage-serve-{proc.pid}")
    try:
        lines = [proc.stdout.readline() for _ in range(3)]
        url = next((l.split()[1] for l in lines if l.startswith("open ")), None)
        ok = url is not None and url.startswith("http://127.0.0.1:")
        if ok:
            with urllib.request.urlopen(url, timeout=120) as r:
                ctype, body = r.headers.get("content-type"), r.read()
            d = decode(body)
            ok = ctype == "image/webp" and d is not None and max(d[:2]) == 300
        check("--dev: loopback, a key, an example URL that serves", ok, lines)
        had_cache = os.path.isdir(own_cache)
        # SIGINT (Ctrl-C) drains as SIGTERM does: exit 0
        proc.send_signal(signal.SIGINT)
        try:
            rc = proc.wait(120)
        except subprocess.TimeoutExpired:
            rc = "timeout"
        check("SIGINT: drains and exits 0", rc == 0, rc)
        check("without --cache-dir: a cache folder of its own under $TMPDIR, removed at exit",
              had_cache and not os.path.exists(own_cache), (had_cache, os.listdir(tmp)))
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def run_gate_cancel():
    """A client that hangs up while its render waits for a turn leaves the
    queue at once: its place goes to the next request and it never renders."""
    import socket
    photo = sample("photo-")
    # the held render must outlast any slowness of the machine: no source timeout in reach
    # in process: there a render's turn comes first and its source streams
    # into the decoder (sandboxed, a source is fetched before the turn)
    proc, base, line = start("--key", KEY, "--salt", SALT, "--allow-source-host", "127.0.0.1", "--max-renders", "1",
                             "--queue-depth", "1", "--source-timeout", "600", "--in-process-decoders")
    if not base:
        check("gate server starts", False, line)
        proc.kill()
        return
    try:
        a = background_get(base, sign(f"/rs:fit:64:64/plain/{FAULT}/drip-file%3Fname%3Dimg/{photo}%26gate%3Dqueue@png"))
        wait_for(lambda: metric(base, "sdimage_serve_renders_in_flight") == 1, "the held render")
        host, port = base.split("//")[1].split(":")
        b = socket.create_connection((host, int(port)), timeout=60)
        b.sendall(f"GET {sign(f'/rs:fit:65:65/plain/{ORIGIN}/img/{photo}@png')} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        queued = wait_for(lambda: metric(base, "sdimage_serve_render_queue_depth") == 1, "the second request queued")
        b.close()  # hangs up while it waits
        left = wait_for(lambda: metric(base, "sdimage_serve_render_queue_depth") == 0, "the queue to empty", timeout=60)
        c = background_get(base, sign(f"/rs:fit:66:66/plain/{ORIGIN}/img/{photo}@png"))
        requeued = wait_for(lambda: metric(base, "sdimage_serve_render_queue_depth") == 1 or "result" in c,
                            "the third request queued")
        urllib.request.urlopen(f"{FAULT}/open?gate=queue", timeout=30).read()
        a["thread"].join(120)
        c["thread"].join(120)
        check("a client that hangs up while queued leaves the queue; the next takes its place and is served; "
              "it never renders", queued and left and requeued and a.get("result", (0,))[0] == 200
              and c.get("result", (0,))[0] == 200 and metric(base, "sdimage_serve_renders_total") == 2
              and metric(base, "sdimage_serve_renders_abandoned_total") == 1,
              (queued, left, requeued, a.get("result", (0,))[0], c.get("result", (0,))[0],
               metric(base, "sdimage_serve_renders_total"), metric(base, "sdimage_serve_renders_abandoned_total")))
    finally:
        try:
            urllib.request.urlopen(f"{FAULT}/open?gate=queue", timeout=30).read()
        except OSError:
            pass
        proc.kill()
        proc.wait()


def run_fetch_outside_render():
    """Sandboxed decoders: a source is fetched before its render's turn.
    Three origins that hold their bodies take three fetches' turns and no
    render's: with one render slot, another request is rendered at once
    (its turn never waits: were the slot held, it would get its 503 after
    --queue-timeout), and the held ones render once their origins answer."""
    photo = sample("photo-")
    proc, base, line = start("--key", KEY, "--salt", SALT, "--allow-source-host", "127.0.0.1", "--max-renders", "1",
                             "--max-fetches", "4", "--queue-timeout", "5", "--source-timeout", "600")
    if not base:
        check("fetch-gate server starts", False, line)
        proc.kill()
        return
    gate = f"fetch{os.getpid()}"
    try:
        held = [background_get(base, sign(f"/rs:fit:{60 + i}:{60 + i}/plain/{FAULT}/drip-file%3Fname%3Dimg/{photo}"
                                          f"%26gate%3D{gate}@png")) for i in range(3)]
        fetching = wait_for(lambda: metric(base, "sdimage_serve_fetches_in_flight") == 3, "three held fetches")
        rendering = metric(base, "sdimage_serve_renders_in_flight")
        st, _, body = get(base, sign(f"/rs:fit:48:48/plain/{ORIGIN}/img/{photo}@png"))
        still = metric(base, "sdimage_serve_fetches_in_flight")
        urllib.request.urlopen(f"{FAULT}/open?gate={gate}", timeout=30).read()
        for h in held:
            h["thread"].join(300)
        check("three sources held at their origins hold three fetches, no render: another request renders meanwhile "
              "(one render slot), the held ones after", fetching and rendering == 0 and st == 200 and still == 3
              and all(h.get("result", (0,))[0] == 200 for h in held) and metric(base, "sdimage_serve_renders_total") == 4,
              (fetching, rendering, st, body[:100] if st != 200 else "", still, [h.get("result", (0,))[0] for h in held],
               metric(base, "sdimage_serve_renders_total")))
    finally:
        try:
            urllib.request.urlopen(f"{FAULT}/open?gate={gate}", timeout=30).read()
        except OSError:
            pass
        proc.kill()
        proc.wait()


def run_fetched_bytes_bounded():
    """A fetched source waits for its render's turn holding its fetch's:
    with one render held (an SVG whose filter would take its worker hours)
    and one fetch, the next request fetches and waits for the render, and
    the one after it waits for the fetch — its origin is not asked (its
    bytes would wait in memory) — until the held render's client leaves."""
    import socket
    photo = sample("photo-")
    write_endless_svg()
    proc, base, line = start("--key", KEY, "--salt", SALT, "--allow-source-host", "127.0.0.1", "--max-renders", "1",
                             "--max-fetches", "1", "--queue-depth", "4", "--queue-timeout", "0",
                             "--decode-cpu-ms", "600000", "--decode-wall-ms", "3600000")
    if not base:
        check("bounded-fetch server starts", False, line)
        proc.kill()
        return
    key = f"bounded{os.getpid()}"
    try:
        host, port = base.split("//")[1].split(":")
        a = socket.create_connection((host, int(port)), timeout=120)
        a.sendall(f"GET {sign(f'/rs:fit:4000:4000/plain/{ORIGIN}/img/endless.svg@png')} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        held = wait_for(lambda: metric(base, "sdimage_serve_renders_in_flight") == 1
                        and metric(base, "sdimage_serve_fetches_in_flight") == 0, "the endless render")
        b = background_get(base, sign(f"/rs:fit:64:64/plain/{ORIGIN}/img/{photo}@png"))
        waiting = wait_for(lambda: metric(base, "sdimage_serve_render_queue_depth") == 1
                           and metric(base, "sdimage_serve_fetches_in_flight") == 1, "the second, fetched, waiting")
        c = background_get(base, sign(f"/rs:fit:65:65/plain/{FAULT}/drip-file%3Fname%3Dimg/{photo}%26id%3D{key}@png"))
        queued = wait_for(lambda: metric(base, "sdimage_serve_fetch_queue_depth") == 1, "the third, waiting to fetch")
        asked = int(urllib.request.urlopen(f"{FAULT}/hits?id={key}", timeout=30).read())
        a.close()  # the held render's client leaves: its decode ends, the others go on
        b["thread"].join(300)
        c["thread"].join(300)
        check("a fetched source waits for its render holding its fetch's turn: the next source is not fetched meanwhile "
              "(one fetch, one render)", held and waiting and queued and asked == 0
              and b.get("result", (0,))[0] == 200 and c.get("result", (0,))[0] == 200,
              (held, waiting, queued, asked, b.get("result", (0,))[0], c.get("result", (0,))[0]))
    finally:
        proc.kill()
        proc.wait()


def run_shared_source_cancel():
    """Two requests for one source share its download; the first client
    hangs up mid-fetch: its render ends (abandoned), the download goes on
    for the second, which is served, and the origin is asked once."""
    import socket
    photo = sample("photo-")
    proc, base, line = start("--key", KEY, "--salt", SALT, "--allow-source-host", "127.0.0.1", "--max-renders", "2",
                             "--source-timeout", "600")
    if not base:
        check("shared-source server starts", False, line)
        proc.kill()
        return
    key = f"shared{os.getpid()}"
    try:
        src = f"{FAULT}/drip-file%3Fname%3Dimg/{photo}%26gate%3D{key}%26id%3D{key}"
        host, port = base.split("//")[1].split(":")
        a = socket.create_connection((host, int(port)), timeout=60)
        a.sendall(f"GET {sign(f'/rs:fit:64:64/plain/{src}@png')} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        wait_for(lambda: metric(base, "sdimage_serve_fetches_in_flight") == 1, "the first fetch")
        b = background_get(base, sign(f"/rs:fit:65:65/plain/{src}@png"))
        wait_for(lambda: metric(base, "sdimage_serve_fetches_in_flight") == 2, "the second fetch")
        a.close()  # hangs up while the shared download is held at its last piece
        gone = wait_for(lambda: metric(base, "sdimage_serve_renders_abandoned_total") == 1, "the first render to end")
        urllib.request.urlopen(f"{FAULT}/open?gate={key}", timeout=30).read()
        b["thread"].join(120)
        hits = int(urllib.request.urlopen(f"{FAULT}/hits?id={key}", timeout=30).read())
        check("a client that hangs up ends its own render only: the other request for the same source is served, "
              "the origin asked once", gone and b.get("result", (0,))[0] == 200 and hits == 1,
              (gone, b.get("result", (0,))[0], hits))
    finally:
        try:
            urllib.request.urlopen(f"{FAULT}/open?gate={key}", timeout=30).read()
        except OSError:
            pass
        proc.kill()
        proc.wait()


def run_partial_sources():
    """With decoders in this process (a render plan streams into the
    decoder), a thumbnail of a progressive JPEG ends its source's transfer
    once settled; the source cache keeps the first bytes as what they are: a
    smaller render comes from them, a full-size one fetches only the rest
    (Range + If-Range). The fault server is the origin: it sends the first
    half and holds the rest until its gate opens (so only an early end lets
    the first render complete, whatever the machine's speed), and counts
    requests and bytes."""
    corpus = os.environ.get("SD_CORPUS_DIR", "../shared/corpus")
    os.makedirs(os.path.join(WORK, "www", "trickle"), exist_ok=True)
    key = f"partial{os.getpid()}"
    path = os.path.join(WORK, "www", "trickle", key + ".jpg")
    subprocess.run(f"djpeg {corpus}/exif-orientation/Landscape_1.jpg | cjpeg -quality 85 -grayscale -progressive > {path}",
                   shell=True, check=True)
    size = os.path.getsize(path)
    proc, base, line = start("--key", KEY, "--salt", SALT, "--allow-source-host", "127.0.0.1", "--in-process-decoders")
    if not base:
        check("partial-sources server starts", False, line)
        proc.kill()
        return

    def fault(p):
        return urllib.request.urlopen(f"{FAULT}{p}", timeout=900).read()
    try:
        src = f"{FAULT}/drip-file%3Fname%3Dtrickle/{key}.jpg%26piece%3D4096%26gap%3D0%26mid%3D{key}%26id%3D{key}%26etag%3Dauto%26ranges%3D1"
        st, _, body = get(base, sign(f"/rs:fit:112:112/plain/{src}@png"))
        fault(f"/idle?id={key}")  # the early-ended transfer gone (a starved loop closes it late), then the gate
        fault(f"/open?gate={key}")
        small = decode(body) if st == 200 else None
        first = int(fault(f"/sent?id={key}"))
        st2, _, body2 = get(base, sign(f"/rs:fit:100:100/plain/{src}@png"))
        smaller = decode(body2) if st2 == 200 else None
        hits_after_smaller = int(fault(f"/hits?id={key}"))
        st3, _, body3 = get(base, sign(f"/plain/{src}@png"))
        full = decode(body3) if st3 == 200 else None
        hits, sent = int(fault(f"/hits?id={key}")), int(fault(f"/sent?id={key}"))
        saved = metric(base, "sdwebimage_download_bytes_not_fetched_total")
        check(f"a thumbnail's source transfer ends early ({first} of {size} bytes written), a smaller render comes from "
              f"the stored first bytes, the full size fetches only the rest ({sent - first} more, {hits} requests)",
              small and small[:2] == (112, 75) and smaller and smaller[:2] == (100, 67) and full and full[:2] == (1800, 1200)
              and first <= size // 2 + 2 * 4096 and hits_after_smaller == 1 and hits == 2 and size - first <= sent - first <= size - 4096,
              (st, st2, st3, first, hits_after_smaller, hits, sent))
        check(f"/metrics counts the bytes the early end did not fetch ({saved})", 0 < saved < size, saved)
    finally:
        try:
            fault(f"/open?gate={key}")
        except OSError:
            pass
        proc.kill()
        proc.wait()


def run_fleet():
    """Two servers on one Redis, cold, every result asked of both at once:
    the origin (nginx's log of /fleet/) sees each source once, and the two
    render each result once between them. Then Redis dies: both keep serving."""
    redis = os.environ["SD_TEST_REDIS"]
    files = sorted(os.listdir(os.path.join(WORK, "www", "fleet")))
    log = os.path.join(WORK, "fleet.log")
    servers = []
    try:
        for name in ("a", "b"):
            proc, base, line = start("--key", KEY, "--salt", SALT, "--allow-source-host", "127.0.0.1",
                                     "--redis", redis + "/0", "--cache-dir", os.path.join(WORK, "fleet-" + name),
                                     # a starved machine must not turn a slow owner into a second render
                                     "--fleet-wait", "600", "--fleet-lease-ttl", "600")
            servers.append((proc, base))
            if not base:
                check(f"fleet server {name} starts", False, line)
                return
        paths = [sign(f"/rs:fit:{s}:{s}/plain/{ORIGIN}/fleet/{f}@webp") for f in files for s in (128, 200)]
        jobs = [background_get(base, p) for p in paths for _, base in servers]
        for j in jobs:
            j["thread"].join(300)
        statuses = sorted({j.get("result", (0,))[0] for j in jobs})
        check(f"fleet: {len(jobs)} requests of {len(paths)} results on two servers, all 200", statuses == [200], statuses)
        seen = {}
        for line in open(log).read().splitlines():
            m = re.search(r'"GET (/fleet/[^ ?]+)', line)
            if m:
                seen[m.group(1)] = seen.get(m.group(1), 0) + 1
        check(f"fleet: the origin saw each of {len(files)} sources once", sorted(seen.values()) == [1] * len(files),
              seen)
        renders = sum(metric(base, "sdimage_serve_renders_total") for _, base in servers)
        check(f"fleet: {len(paths)} results rendered once between the two servers", renders == len(paths), renders)
        # every answer, rendered here or shared, carries its source's Last-Modified
        want = {f: get(ORIGIN, f"/fleet/{f}")[1].get("last-modified") for f in files}
        got = [(j["result"][1].get("last-modified"), want[files[i // (2 * len(servers))]])
               for i, j in enumerate(jobs) if "result" in j]
        check("fleet: every answer has its source's Last-Modified", len(got) == len(jobs)
              and all(g == w and w is not None for g, w in got), [g for g in got if g[0] != g[1]][:4])
        # Redis dies while a load runs on both servers (results they hold and
        # new renders): no request fails, before or after, and both go on
        # from their own caches (degraded, still serving)
        killed, stop, outcomes = threading.Event(), threading.Event(), []

        def fleet_load(k, base):
            n = 0
            while not stop.is_set():
                n += 1
                # even: a result this server already has; odd: a new render of a fleet source
                path = paths[(k + n) % len(paths)] if n % 2 == 0 else \
                    sign(f"/rs:fit:{60 + 7 * k + n}:{60 + 7 * k + n}/plain/{ORIGIN}/fleet/{files[(k + n) % len(files)]}@webp")
                after = killed.is_set()
                outcomes.append((k, after, get(base, path)[0]))
        loaders = [threading.Thread(target=fleet_load, args=(k, servers[k % 2][1]), daemon=True) for k in range(4)]
        for t in loaders:
            t.start()
        wait_for(lambda: all(sum(1 for o in outcomes if o[0] == k) >= 3 for k in range(4)), "the load before the kill")
        subprocess.run(["bash", "Tests/Servers/redis.sh", "kill9", os.environ["SD_TEST_REDIS_DIR"]], check=False)
        killed.set()
        wait_for(lambda: all(sum(1 for o in outcomes if o[0] == k and o[1]) >= 4 for k in range(4)),
                 "the load after the kill", timeout=600)
        stop.set()
        for t in loaders:
            t.join(300)
        before = [o[2] for o in outcomes if not o[1]]
        after = [o[2] for o in outcomes if o[1]]
        check(f"Redis killed mid-load: {len(before)} requests before and {len(after)} after, every one 200 "
              "(each load thread served at least 4 after the kill)",
              before and after and set(before + after) == {200}
              and all(sum(1 for o in outcomes if o[0] == k and o[1]) >= 4 for k in range(4)),
              (sorted(set(before)), sorted(set(after)), [sum(1 for o in outcomes if o[0] == k and o[1]) for k in range(4)]))
        for i, (_, base) in enumerate(servers):
            st, _, _ = get(base, sign(f"/rs:fit:77:77/plain/{ORIGIN}/fleet/{files[i]}@webp"))
            rst, _, body = get(base, "/health/ready")
            check(f"Redis killed: server {'ab'[i]} still renders, ready says degraded", st == 200 and rst == 200
                  and b"degraded" in body, (st, rst, body))
    finally:
        for proc, _ in servers:
            proc.kill()
            proc.wait()


def run_cached_source_limits(src):
    """A source read back from the source cache meets the same limits as a
    fetched one: a server restarted with a lower pixel limit on the same
    folder refuses what the first one cached."""
    folder = os.path.join(WORK, "limits-cache")
    p, b, _ = start("--key", KEY, "--salt", SALT, "--allow-source-host", "127.0.0.1", "--cache-dir", folder)
    try:
        st, _, _ = get(b, sign(f"/rs:fit:80:80/plain/{src}@png"))
        check("a source fetched and cached", st == 200, st)
    finally:
        p.terminate()
        p.wait(600)
    p, b, _ = start("--key", KEY, "--salt", SALT, "--allow-source-host", "127.0.0.1", "--cache-dir", folder,
                    env_extra={"IMGPROXY_MAX_SRC_RESOLUTION": "0.01"})
    try:
        st, _, body = get(b, sign(f"/rs:fit:81:81/plain/{src}@png"))
        check("... read back under a 0.01-megapixel limit: refused (4xx)", 400 <= st < 500, (st, body[:100]))
    finally:
        p.terminate()
        p.wait(600)


def run_max_result_dimension(src):
    """--max-result-dimension (and imgproxy's variable): a larger result is a 422 naming the limit."""
    for args, env in ((("--max-result-dimension", "100"), None), ((), {"IMGPROXY_MAX_RESULT_DIMENSION": "100"})):
        p, b, _ = start("--key", KEY, "--salt", SALT, "--allow-source-host", "127.0.0.1", *args, env_extra=env)
        try:
            st_big, _, body = get(b, sign(f"/rs:force:101:50:1/plain/{src}@png"))
            st_ok, _, _ = get(b, sign(f"/rs:force:100:50/plain/{src}@png"))
            how = " ".join(args) or "IMGPROXY_MAX_RESULT_DIMENSION=100"
            check(f"{how}: 101 px wide is 422 naming the limit, 100 px renders",
                  st_big == 422 and b"100 a side" in body and st_ok == 200, (st_big, body[:120], st_ok))
        finally:
            p.terminate()
            p.wait(600)


def run_metrics_listen():
    """--metrics-listen: /metrics on its own address, not beside the images."""
    import socket
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    mport = probe.getsockname()[1]
    probe.close()
    p, b, _ = start("--key", KEY, "--salt", SALT, "--metrics-listen", f"127.0.0.1:{mport}")
    try:
        st, _, _ = get(b, "/metrics")
        check("--metrics-listen: /metrics beside the images is 404", st == 404, st)
        got = None
        for _ in range(6000):  # until it listens, however slow the machine
            try:
                got = get(f"http://127.0.0.1:{mport}", "/metrics")
                break
            except OSError:
                time.sleep(0.1)
        check("... and 200 with the metrics on its own address",
              got is not None and got[0] == 200 and b"process_resident_memory_bytes" in got[2], got and got[0])
    finally:
        p.terminate()
        p.wait(600)
    # --max-connections: past the cap new connections wait in the backlog
    # (the cap holds to within one accept batch: 80 open for a cap of 40,
    # and the 81st is not answered), the metrics address's /health/live
    # answers at the cap, and a waiting one is taken once others close
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    mport = probe.getsockname()[1]
    probe.close()
    p, b, _ = start("--key", KEY, "--salt", SALT, "--metrics-listen", f"127.0.0.1:{mport}", "--max-connections", "40")
    try:
        for _ in range(6000):
            try:
                get(f"http://127.0.0.1:{mport}", "/health/live")
                break
            except OSError:
                time.sleep(0.1)
        host, port = b.split("//")[1].split(":")
        held = [socket.create_connection((host, int(port)), timeout=120) for _ in range(80)]
        for c in held[:3]:  # the first ones are the server's: they answer
            c.sendall(b"GET /health/live HTTP/1.1\r\nHost: x\r\n\r\n")
            c.recv(64)
        extra = socket.create_connection((host, int(port)), timeout=120)
        extra.sendall(b"GET /health/live HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        extra.settimeout(2)
        try:
            early = extra.recv(64)  # a cap that held would never answer this while all 40 are open
        except socket.timeout:
            early = b""
        live = get(f"http://127.0.0.1:{mport}", "/health/live")[0]
        for c in held[:60]:
            c.close()
        extra.settimeout(120)
        late = early or extra.recv(64)
        check(f"--max-connections 40: the 81st waits (answered early: {bool(early)}), /health/live on the metrics "
              f"address {live} at the cap, the 81st answered once others closed",
              not early and live == 200 and late.startswith(b"HTTP/1.1 200"), (early[:20], live, late[:20]))
        for c in held[60:] + [extra]:
            c.close()
    finally:
        p.terminate()
        p.wait(600)


def run_idle_timeout():
    """--idle-timeout: a connection that sends nothing is closed (a slow
    machine only makes that later); one with a request in progress is not."""
    import socket
    p, b, _ = start("--key", KEY, "--salt", SALT, "--idle-timeout", "1")
    try:
        u = urllib.parse.urlsplit(b)
        sock = socket.create_connection((u.hostname, u.port), timeout=600)
        sock.settimeout(600)
        try:
            closed = sock.recv(1) == b""
        except OSError:
            closed = True
        sock.close()
        check("--idle-timeout 1: a connection that sends nothing is closed", closed)
        st, _, _ = get(b, "/health/live")
        check("... and the server answers the next one", st == 200, st)
    finally:
        p.terminate()
        p.wait(600)


def run_imgproxy_env(src):
    """imgproxy's environment read as ours: IMGPROXY_BIND, two key/salt pairs
    (rotation), IMGPROXY_SIGNATURE_SIZE, QUALITY, FORMAT_QUALITY, TTL,
    ALLOWED_SOURCES, MAX_SRC_FILE_SIZE, MAX_SRC_RESOLUTION."""
    key2, salt2 = "aa" * 32, "bb" * 16
    tmp = os.path.join(WORK, "tmp")
    os.makedirs(tmp, exist_ok=True)

    def server(env, *args):
        log = open(os.path.join(WORK, f"serve-env-{time.monotonic_ns()}.log"), "w")
        p = subprocess.Popen([SDIMAGE, "serve", "--allow-source-host", "127.0.0.1", *args], stdout=subprocess.PIPE,
                             stderr=log, text=True, env={**os.environ, "TMPDIR": tmp, **env})
        m = re.search(r"http://127\.0\.0\.1:(\d+)", p.stdout.readline())
        return p, (f"http://127.0.0.1:{m.group(1)}" if m else None)

    def short_sign(path, key, salt, n):
        mac = hmac.new(bytes.fromhex(key), bytes.fromhex(salt) + path.encode(), hashlib.sha256).digest()[:n]
        return "/" + base64.urlsafe_b64encode(mac).rstrip(b"=").decode() + path
    env = {"IMGPROXY_BIND": "127.0.0.1:0", "IMGPROXY_KEY": f"{KEY},{key2}", "IMGPROXY_SALT": f"{SALT},{salt2}",
           "IMGPROXY_QUALITY": "40", "IMGPROXY_FORMAT_QUALITY": "webp=55", "IMGPROXY_TTL": "77",
           "IMGPROXY_ALLOWED_SOURCES": f"{ORIGIN}/img/"}
    p, b = server(env)
    check("IMGPROXY_BIND: listens there", b is not None)
    if b is None:
        p.kill()
        return
    try:
        path = f"/rs:fit:96:96/plain/{src}@jpg"
        st1, h1, body1 = get(b, sign(path))
        st2, _, body2 = get(b, sign(path, key2, salt2))
        st3, _, _ = get(b, sign(path, "cc" * 32, "dd" * 16))
        check("two key/salt pairs: either signs, another does not", (st1, st2, st3) == (200, 200, 403), (st1, st2, st3))
        _, _, q40 = get(b, sign(f"/rs:fit:96:96/q:40/plain/{src}@jpg"))
        check("IMGPROXY_QUALITY=40: JPEG's default", body1 == q40 and body2 == q40, (len(body1), len(q40)))
        _, _, w_default = get(b, sign(f"/rs:fit:96:96/plain/{src}@webp"))
        _, _, w55 = get(b, sign(f"/rs:fit:96:96/q:55/plain/{src}@webp"))
        check("IMGPROXY_FORMAT_QUALITY=webp=55: WebP's default", len(w55) > 0 and w_default == w55, (len(w_default), len(w55)))
        check("IMGPROXY_TTL=77: Cache-Control max-age", h1.get("cache-control") == "public, max-age=77", h1.get("cache-control"))
        st, _, body = get(b, sign(f"/rs:fit:96:96/plain/http://127.0.0.1:9/elsewhere.jpg@jpg"))
        check("IMGPROXY_ALLOWED_SOURCES: another prefix is 404", st == 404 and b"allowed" in body, (st, body[:80]))
    finally:
        p.terminate()
        p.wait(600)
    p, b = server({"IMGPROXY_BIND": "127.0.0.1:0", "IMGPROXY_KEY": KEY, "IMGPROXY_SALT": SALT,
                   "IMGPROXY_SIGNATURE_SIZE": "8", "IMGPROXY_MAX_SRC_FILE_SIZE": "1000"})
    try:
        path = f"/rs:fit:96:96/plain/{src}@jpg"
        st_short, _, _ = get(b, short_sign(path, KEY, SALT, 8)) if b else (0, None, b"")
        st_full, _, _ = get(b, sign(path)) if b else (0, None, b"")
        check("IMGPROXY_SIGNATURE_SIZE=8: the 8-byte signature, not the whole one", st_short != 403 and st_full == 403,
              (st_short, st_full))
        check("IMGPROXY_MAX_SRC_FILE_SIZE=1000: a larger source is refused (4xx)", 400 <= st_short < 500, st_short)
    finally:
        p.terminate()
        p.wait(600)
    p, b = server({"IMGPROXY_BIND": "127.0.0.1:0", "IMGPROXY_KEY": KEY, "IMGPROXY_SALT": SALT,
                   "IMGPROXY_MAX_SRC_RESOLUTION": "0.01"})
    try:
        st, _, body = get(b, sign(f"/rs:fit:96:96/plain/{src}@jpg")) if b else (0, None, b"")
        check("IMGPROXY_MAX_SRC_RESOLUTION=0.01: a larger source is refused (4xx)", 400 <= st < 500, (st, body[:80]))
    finally:
        p.terminate()
        p.wait(600)


def main():
    # the documented example of imgproxy's signing guide (key "secret", salt "hello")
    doc = "/rs:fill:300:400:0/g:sm/aHR0cDovL2V4YW1w/bGUuY29tL2ltYWdl/cy9jdXJpb3NpdHku/anBn.png"
    out = subprocess.run([SDIMAGE, "serve", "--key", "736563726574", "--salt", "68656C6C6F", "--sign", doc],
                         capture_output=True, text=True).stdout.strip()
    check("imgproxy's signing example", out == "/oKfUtW34Dvo2BGQehJFR4Nr0_rIjOtdtzJ3QFsUcXH8" + doc, out)

    log = open(os.path.join(WORK, "serve.log"), "w")
    proc = subprocess.Popen([SDIMAGE, "serve", "--listen", "127.0.0.1:0", "--key", KEY, "--salt", SALT,
                             "--allow-source-host", "127.0.0.1", "--max-age", "3600",
                             "--preset", "thumb=rs:fill:64:48/g:nowe", "--preset", "narrow=w:32",
                             "--source-timeout", "600",  # drain_under_load holds a render for as long as it takes
                             "--cache-dir", os.path.join(WORK, "serve-cache")],
                            stdout=subprocess.PIPE, stderr=log, text=True, env=dict(os.environ, SDIMAGE_LOG_LEVEL="info"))
    line = proc.stdout.readline()
    m = re.search(r"http://127\.0\.0\.1:(\d+)", line)
    if not m:
        check("server starts", False, line)
        proc.kill()
        return
    base = f"http://127.0.0.1:{m.group(1)}"
    try:
        limits = open(f"/proc/{proc.pid}/limits").read()
        nofile = next((l.split()[3:5] for l in limits.splitlines() if l.startswith("Max open files")), None)
        check("RLIMIT_NOFILE raised to its hard limit at start", nofile is not None and nofile[0] == nofile[1], nofile)
        run(base)
        run_imgproxy_env(f"{ORIGIN}/img/{sample('photo-')}")
        run_idle_timeout()
        run_metrics_listen()
        run_max_result_dimension(f"{ORIGIN}/img/{sample('photo-')}")
        run_cached_source_limits(f"{ORIGIN}/img/{sample('photo-')}")
        run_limits()
        run_gate_cancel()
        run_fetch_outside_render()
        run_fetched_bytes_bounded()
        run_shared_source_cancel()
        run_partial_sources()
        run_fleet()
        drain_under_load(proc, base)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)  # graceful: stop accepting, finish, exit 0
        try:
            rc = proc.wait(120)
        except subprocess.TimeoutExpired:
            proc.kill()
            rc = "timeout"
        check("SIGTERM: exits 0", rc == 0, f"exit {rc}")
        log.close()
        text = open(os.path.join(WORK, "serve.log")).read()
        check("access log: the source host, never its path", "source_host=127.0.0.1" in text and "/img/" not in text,
              text[-400:])
        forged = [l for l in text.splitlines() if l.lstrip().startswith("forged")]
        check("no forged log line from an encoded newline anywhere in a request", not forged, forged[:3])


def drain_under_load(proc, base):
    """SIGTERM while renders run: no request the server took is cut.

    Four clients render without pause (a new size each time, so each is a
    render) and one render is held by the origin across the signal. Each
    request ends as served (200, the whole body), not taken (the connection
    refused, or reset before any answer: a connection still in the kernel's
    backlog when the listener closes; the server never read it), or cut
    (any other status, or an answer broken off). None may be cut; the held
    one completes after the signal; every client ends up refused."""
    import http.client
    host, port = base.split("//")[1].split(":")
    photo = sample("photo-")
    outcomes, stop = [], threading.Event()

    def one(path):
        conn = http.client.HTTPConnection(host, int(port), timeout=300)
        try:
            try:
                conn.request("GET", path)
            except ConnectionRefusedError:
                return "refused"
            try:
                r = conn.getresponse()
            except (ConnectionResetError, http.client.RemoteDisconnected, BrokenPipeError):
                return "not taken"
            try:
                body = r.read()
            except (http.client.IncompleteRead, ConnectionError) as e:
                return f"cut: {type(e).__name__}"
            if r.status != 200 or str(len(body)) != r.getheader("content-length"):
                return f"cut: {r.status}, {len(body)} of {r.getheader('content-length')} bytes"
            return "served"
        except OSError as e:
            return f"cut: {type(e).__name__}"
        finally:
            conn.close()

    def client(k):
        n = 0
        while not stop.is_set():
            n += 1
            got = one(sign(f"/rs:fit:{100 + 13 * k + n}:{100 + 13 * k + n}/plain/{ORIGIN}/img/{photo}@webp"))
            outcomes.append((k, got))
            if got == "refused":
                return
    held = {}
    t_held = threading.Thread(target=lambda: held.__setitem__("r", one(sign(
        f"/rs:fit:64:64/plain/{FAULT}/drip-file%3Fname%3Dimg/{photo}%26gate%3Dlast@png"))), daemon=True)
    t_held.start()
    clients = [threading.Thread(target=client, args=(k,), daemon=True) for k in range(4)]
    for t in clients:
        t.start()
    wait_for(lambda: all(sum(1 for o in outcomes if o[0] == k) >= 2 for k in range(4))
             and metric(base, "sdimage_serve_fetches_in_flight") >= 1, "the load and the held fetch")
    proc.send_signal(signal.SIGTERM)
    # the held render ends only once the listener is gone: it spans the whole drain
    wait_for(lambda: all(any(o == (k, "refused") for o in outcomes) for k in range(4)), "every client refused", 600)
    urllib.request.urlopen(f"{FAULT}/open?gate=last", timeout=30).read()
    t_held.join(300)
    stop.set()
    for t in clients:
        t.join(300)
    kinds = {}
    for _, got in outcomes:
        kinds[got] = kinds.get(got, 0) + 1
    check(f"drain under load: no request cut ({kinds}), the held render served after the signal, every client refused",
          not any(k.startswith("cut") for k in kinds) and kinds.get("served", 0) >= 8 and held.get("r") == "served"
          and all(any(o == (k, "refused") for o in outcomes) for k in range(4)), (kinds, held))


def run(base):
    photo, alpha, rotated = sample("photo-"), sample("alpha-"), sample("exif6-")
    src = f"{ORIGIN}/img/{photo}"
    st, _, body = get(base, "/health/live")
    check("/health/live", st == 200, st)
    st, _, body = get(base, "/health")
    check("/health (imgproxy's path): 200", st == 200 and body == b"ok\n", (st, body[:80]))
    # a source host with an encoded CR LF is refused (its access-log line
    # says source_host=-)
    st, _, _ = get(base, sign("/rs:fit:64:64/plain/http://127.0.0.1%0D%0Aforged-log-line%0A.example/x.jpg"))
    check("a source host with an encoded CR LF: refused (4xx)", 400 <= st < 500, st)
    st, _, body = get(base, "/health/ready")
    check("/health/ready", st == 200, st)

    # a vector is drawn at the size asked for, enlarge or not (imgproxy's rule for SVG)
    open(os.path.join(WORK, "www", "img", "halves.svg"), "w").write(
        "<svg xmlns='http://www.w3.org/2000/svg' width='100' height='50'><rect width='50' height='50' fill='#f00'/>"
        "<rect x='50' width='50' height='50' fill='#00f'/></svg>")
    st, _, body = get(base, sign(f"/rs:fit:300:300/plain/{ORIGIN}/img/halves.svg@png"))
    size = struct.unpack(">II", body[16:24]) if st == 200 and body[12:16] == b"IHDR" else None
    check("a 100x50 SVG in fit 300x300 without el: drawn at 300x150", size == (300, 150), (st, size))

    # fit, plain source, PNG: the same pixels as `sdimage decode --max-pixel-size 256`
    st, h, body = get(base, sign(f"/rs:fit:256:256/plain/{src}@png"))
    ref = decode(open(os.path.join(WORK, "www", "img", photo), "rb").read(), "--max-pixel-size", "256")
    got = decode(body) if st == 200 else None
    check("fit 256x256 png: 200, image/png", st == 200 and h.get("content-type") == "image/png", (st, h))
    check("fit: pixels equal sdimage decode --max-pixel-size 256", got is not None and ref is not None and got == ref,
          (got and got[:2], ref and ref[:2]))
    # JPEG: Huffman tables made for the image (optimize coding): the pixels of
    # the same render written by `sdimage decode --out` (the library's default
    # tables) at the same quality, in fewer bytes
    stj, hj, jpeg = get(base, sign(f"/rs:fit:256:256/q:80/plain/{src}@jpg"))
    ref_jpeg = os.path.join(WORK, "ref-q80.jpg")
    subprocess.run([SDIMAGE, "decode", os.path.join(WORK, "www", "img", photo), "--max-pixel-size", "256",
                    "--out", ref_jpeg, "--quality", "80"], capture_output=True)
    plain = open(ref_jpeg, "rb").read() if os.path.exists(ref_jpeg) else b""
    got_j, ref_j = (decode(jpeg) if stj == 200 else None), (decode(plain) if plain else None)
    check("fit jpg q80: the pixels of sdimage decode --out at q80, in fewer bytes (optimized Huffman tables)",
          stj == 200 and got_j is not None and got_j == ref_j and 0 < len(jpeg) < len(plain),
          (stj, len(jpeg), len(plain), got_j and got_j[:2], ref_j and ref_j[:2]))
    # the ETag: the first 128 bits of the body's SHA-256, URL-safe base64 without padding
    want_etag = '"' + base64.urlsafe_b64encode(hashlib.sha256(body).digest()[:16]).rstrip(b"=").decode() + '"'
    check("Content-Length, Cache-Control, strong ETag (the body's SHA-256)", h.get("content-length") == str(len(body))
          and h.get("cache-control") == "public, max-age=3600" and h.get("etag") == want_etag, (h, want_etag))
    # the base64 form of the same request: the same result
    b64 = base64.urlsafe_b64encode(src.encode()).rstrip(b"=").decode()
    b64 = "/".join(b64[i:i + 16] for i in range(0, len(b64), 16))  # split by slashes, as imgproxy allows
    st2, h2, body2 = get(base, sign(f"/rs:fit:256:256/{b64}.png"))
    check("base64 source (split by /): same bytes", st2 == 200 and body2 == body, st2)
    # conditional request
    st3, _, body3 = get(base, sign(f"/rs:fit:256:256/plain/{src}@png"), {"If-None-Match": h.get("etag", "")})
    check("If-None-Match: 304, no body", st3 == 304 and body3 == b"", st3)
    # the source's Last-Modified (nginx's, of the file): on the render and on the hit
    _, oh, _ = get(ORIGIN, f"/img/{photo}")
    lm = oh.get("last-modified")
    check("Last-Modified: the source's, on the render and on the hit", lm is not None
          and h.get("last-modified") == lm and h2.get("last-modified") == lm, (lm, h.get("last-modified"), h2.get("last-modified")))
    path = sign(f"/rs:fit:256:256/plain/{src}@png")
    st4, _, body4 = get(base, path, {"If-Modified-Since": lm or ""})
    st5, _, _ = get(base, path, {"If-Modified-Since": "Thu, 01 Jan 1970 00:00:00 GMT"})
    st6, _, _ = get(base, path, {"If-Modified-Since": lm or "", "If-None-Match": '"another"'})
    check("If-Modified-Since: 304 at the source's date, 200 before it, 200 when If-None-Match differs",
          (st4, body4, st5, st6) == (304, b"", 200, 200), (st4, st5, st6))

    w0, h0 = ref[0], ref[1]  # the fitted size; the source's aspect
    cases = [
        ("fill 200x200 jpg", f"/rs:fill:200:200/plain/{src}@jpg", "image/jpeg", lambda w, h: (w, h) == (200, 200)),
        ("fill with g:no", f"/rs:fill:200:100/g:no/plain/{src}@jpg", "image/jpeg", lambda w, h: (w, h) == (200, 100)),
        ("force 100x50 webp", f"/rs:force:100:50/plain/{src}@webp", "image/webp", lambda w, h: (w, h) == (100, 50)),
        ("w:100 dpr:2 (fit)", f"/w:100/dpr:2/plain/{src}@png", "image/png", lambda w, h: w == 200),
        ("fit without el: never enlarged", f"/rs:fit:5000:5000/plain/{src}@png", "image/png",
         lambda w, h: max(w, h) <= 600),
        ("fit el:1: enlarged", f"/rs:fit:1200:1200:1/plain/{src}@png", "image/png", lambda w, h: max(w, h) == 1200),
        ("fill-down: the box's aspect, not enlarged", f"/rs:fill-down:4000:1000/plain/{src}@png", "image/png",
         lambda w, h: abs(w / h - 4) < 0.05 and w <= 600),
        ("auto: same orientation fills", f"/rs:auto:{300 if w0 >= h0 else 200}:{200 if w0 >= h0 else 300}/plain/{src}@png",
         "image/png", lambda w, h: (w, h) in ((300, 200), (200, 300))),
        ("q:30 smaller than q:95", None, None, None),
    ]
    for name, path, ctype, ok in cases:
        if path is None:
            _, _, lo = get(base, sign(f"/rs:fit:256:256/q:30/plain/{src}@jpg"))
            _, _, hi = get(base, sign(f"/rs:fit:256:256/q:95/plain/{src}@jpg"))
            check(name, 0 < len(lo) < len(hi), (len(lo), len(hi)))
            continue
        st, h, body = get(base, sign(path))
        d = decode(body) if st == 200 else None
        check(name, st == 200 and h.get("content-type") == ctype and d is not None and ok(d[0], d[1]),
              (st, h.get("content-type"), d and d[:2]))

    # fill's pixels against Pillow's Lanczos-3 resize and crop of the same
    # source, for centre and north gravity: each nearer its own crop
    from PIL import Image
    full = decode(open(os.path.join(WORK, "www", "img", photo), "rb").read())
    source = rgb(full[0], full[1], full[2])
    s = max(200 / full[0], 120 / full[1])
    sw, sh = max(200, round(full[0] * s)), max(120, round(full[1] * s))
    scaled = source.resize((sw, sh), Image.LANCZOS)
    ref = {"ce": scaled.crop(((sw - 200) // 2, (sh - 120) // 2, (sw - 200) // 2 + 200, (sh - 120) // 2 + 120)),
           "no": scaled.crop(((sw - 200) // 2, 0, (sw - 200) // 2 + 200, 120))}
    for g in ("ce", "no"):
        st, _, body = get(base, sign(f"/rs:fill:200:120/g:{g}/plain/{src}@png"))
        d = decode(body) if st == 200 else None
        if d is None or d[:2] != (200, 120):
            check(f"fill g:{g} pixels", False, (st, d and d[:2]))
            continue
        got = rgb(200, 120, d[2])
        own, other = psnr(got, ref[g]), psnr(got, ref["no" if g == "ce" else "ce"])
        check(f"fill g:{g}: {own:.1f} dB against Pillow's Lanczos-3 crop (>= 35), nearer than the other gravity's "
              f"({other:.1f})", own >= 35 and own > other + 3)

    # gravity offsets as imgproxy's: 1 or more are CSS pixels (times dpr),
    # below 1 a fraction of the scaled image's side; each render nearest its
    # own crop of Pillow's (and not the crop without the offset)
    bw = max(20, round(full[0] * 120 / full[1]) - 60)  # a box the scaled source overflows sideways by 60
    sw2, sh2 = max(bw, round(full[0] * 120 / full[1])), 120
    scaled2 = source.resize((sw2, sh2), Image.LANCZOS)
    scaled4 = source.resize((sw2 * 2, sh2 * 2), Image.LANCZOS) if sh2 * 2 <= full[1] else None

    def crop_at(img, x, y, w, h):
        x, y = max(0, min(img.size[0] - w, x)), max(0, min(img.size[1] - h, y))
        return img.crop((x, y, x + w, y + h))
    offset_cases = [("g:nowe:0.25:0 (a quarter of the width)", f"/rs:fill:{bw}:120/g:nowe:0.25:0", (bw, 120),
                     crop_at(scaled2, round(0.25 * sw2), 0, bw, 120), crop_at(scaled2, 0, 0, bw, 120)),
                    ("g:nowe:30:0 (pixels)", f"/rs:fill:{bw}:120/g:nowe:30:0", (bw, 120),
                     crop_at(scaled2, 30, 0, bw, 120), crop_at(scaled2, 0, 0, bw, 120))]
    if scaled4 is not None:
        offset_cases.append(("g:nowe:30:0 dpr:2 (60 device pixels)", f"/rs:fill:{bw}:120/dpr:2/g:nowe:30:0",
                             (bw * 2, 240), crop_at(scaled4, 60, 0, bw * 2, 240), crop_at(scaled4, 30, 0, bw * 2, 240)))
    check("the offset cases' source leaves room to move (60 px)", sw2 - bw >= 60, (sw2, bw))
    for name, opts, size, want, other in offset_cases:
        st, _, body = get(base, sign(f"{opts}/plain/{src}@png"))
        d = decode(body) if st == 200 else None
        if d is None or d[:2] != size:
            check(f"{name}: pixels", False, (st, d and d[:2]))
            continue
        got = rgb(size[0], size[1], d[2])
        own, wrong = psnr(got, want), psnr(got, other)
        check(f"{name}: {own:.1f} dB against its crop (>= 33), nearer than {wrong:.1f}", own >= 33 and own > wrong + 3)

    # rot (clockwise), fl (after the rotation), bl (Gaussian sigma, last):
    # each nearest Pillow's own version of it, and not the other way round
    from PIL import ImageFilter
    T = Image.Transpose

    def fitted(img, w, h):
        return img.resize((w, h), Image.LANCZOS)

    def blocks(img, n):
        from PIL import ImageStat
        out = img.copy()
        for y in range(0, img.size[1], n):
            for x in range(0, img.size[0], n):
                box = (x, y, min(img.size[0], x + n), min(img.size[1], y + n))
                out.paste(tuple(round(v) for v in ImageStat.Stat(img.crop(box)).mean), box)
        return out
    effect_cases = [
        ("rot:90 (clockwise)", "/rs:fit:120:120/rot:90", lambda w, h: fitted(source.transpose(T.ROTATE_270), w, h),
         lambda w, h: fitted(source.transpose(T.ROTATE_90), w, h)),
        ("rot:180", "/rs:fit:120:120/rot:180", lambda w, h: fitted(source.transpose(T.ROTATE_180), w, h),
         lambda w, h: fitted(source, w, h)),
        ("fl:1 (left to right)", "/rs:fit:120:120/fl:1", lambda w, h: fitted(source, w, h).transpose(T.FLIP_LEFT_RIGHT),
         lambda w, h: fitted(source, w, h)),
        ("fl:0:1 (top to bottom)", "/rs:fit:120:120/fl:0:1", lambda w, h: fitted(source, w, h).transpose(T.FLIP_TOP_BOTTOM),
         lambda w, h: fitted(source, w, h)),
        ("rot:90/fl:1 (turned, then mirrored)", "/rs:fit:120:120/rot:90/fl:1",
         lambda w, h: fitted(source.transpose(T.ROTATE_270), w, h).transpose(T.FLIP_LEFT_RIGHT),
         lambda w, h: fitted(source.transpose(T.ROTATE_270), w, h)),
        ("bl:2 (Gaussian, sigma 2)", "/rs:fit:120:120/bl:2", lambda w, h: fitted(source, w, h).filter(ImageFilter.GaussianBlur(2)),
         lambda w, h: fitted(source, w, h)),
        ("pix:8 (8-px blocks, each its mean)", "/rs:fit:120:120/pix:8", lambda w, h: blocks(fitted(source, w, h), 8),
         lambda w, h: fitted(source, w, h)),
    ]
    # sharpening shows at edges: stripes, made here
    stripes = Image.new("RGB", (240, 160), (230, 230, 230))
    from PIL import ImageDraw
    draw = ImageDraw.Draw(stripes)
    for x in range(0, 240, 24):
        draw.rectangle((x, 0, x + 11, 159), fill=(20, 40, 60))
    stripes.save(os.path.join(WORK, "www", "img", "stripes.png"))
    st, _, body = get(base, sign(f"/rs:fit:120:120/sh:1.5/plain/{ORIGIN}/img/stripes.png@png"))
    d = decode(body) if st == 200 else None
    if d is None:
        check("sh:1.5: an image", False, st)
    else:
        got, base_img = rgb(d[0], d[1], d[2]), stripes.resize((d[0], d[1]), Image.LANCZOS)
        own = psnr(got, base_img.filter(ImageFilter.UnsharpMask(radius=1.5, percent=100, threshold=0)))
        wrong = psnr(got, base_img)
        check(f"sh:1.5 (unsharp mask, amount 1): {own:.1f} dB against Pillow's (>= 30), nearer than {wrong:.1f}",
              own >= 30 and own > wrong + 3, d[:2])
    for name, opts, want, other in effect_cases:
        st, _, body = get(base, sign(f"{opts}/plain/{src}@png"))
        d = decode(body) if st == 200 else None
        if d is None:
            check(f"{name}: an image", False, st)
            continue
        got = rgb(d[0], d[1], d[2])
        own, wrong = psnr(got, want(d[0], d[1])), psnr(got, other(d[0], d[1]))
        check(f"{name}: {own:.1f} dB against Pillow's (>= 30), nearer than {wrong:.1f}", own >= 30 and own > wrong + 3,
              d[:2])
    # c (crop before resize): absolute with its own gravity (the source's own
    # pixels, exactly), relative at the centre, then fitted
    W, H = full[0], full[1]
    crop_cases = [("c:200:150:nowe:20:10", "/c:200:150:nowe:20:10", lambda w, h: source.crop((20, 10, 220, 160)),
                   lambda w, h: source.crop((0, 0, 200, 150)), (200, 150)),
                  ("c:0.5:0.5 then rs:fit:100:100", "/c:0.5:0.5/rs:fit:100:100",
                   lambda w, h: fitted(source.crop((W // 4, H // 4, W // 4 + round(W / 2), H // 4 + round(H / 2))), w, h),
                   lambda w, h: fitted(source, w, h), None),
                  ("c:0:100:so (all the width, the bottom 100 rows)", "/c:0:100:so",
                   lambda w, h: source.crop((0, H - 100, W, H)), lambda w, h: source.crop((0, (H - 100) // 2, W, (H - 100) // 2 + 100)),
                   (W, 100))]
    for name, opts, want, other, size in crop_cases:
        st, _, body = get(base, sign(f"{opts}/plain/{src}@png"))
        d = decode(body) if st == 200 else None
        if d is None or (size is not None and d[:2] != size):
            check(f"{name}: size", False, (st, d and d[:2], size))
            continue
        got = rgb(d[0], d[1], d[2])
        own, wrong = psnr(got, want(d[0], d[1])), psnr(got, other(d[0], d[1]))
        check(f"{name}: {own:.1f} dB against Pillow's (>= 30), nearer than {wrong:.1f}", own >= 30 and own > wrong + 3, d[:2])
    # the render plan's canvas and scale options, sampled as a client sees
    # them on colour-coded stripes (red, green, blue, yellow, left to right)
    bands = Image.new("RGB", (400, 200))
    for i, c in enumerate(((255, 0, 0), (0, 255, 0), (0, 0, 255), (255, 255, 0))):
        bands.paste(c, (i * 100, 0, i * 100 + 100, 200))
    bands.save(os.path.join(WORK, "www", "img", "bands.png"))
    bsrc = f"{ORIGIN}/img/bands.png"
    RED, GREEN, BLUE, YELLOW, NONE = (255, 0, 0, 255), (0, 255, 0, 255), (0, 0, 255, 255), (255, 255, 0, 255), (0, 0, 0, 0)

    def at(d, x, y):
        """(r, g, b, a) of decoded premultiplied BGRA `d` at (x, y)."""
        i = (y * d[0] + x) * 4
        b, g, r, a = d[2][i:i + 4]
        return r, g, b, a

    def near(p, want):
        return all(abs(a - b) <= 12 for a, b in zip(p, want))
    plan_cases = [  # (options, size, [(x, y, colour)])
        ("rs:fit:200:200/ex:1", (200, 200), [(100, 10, NONE), (10, 100, RED), (190, 100, YELLOW), (100, 190, NONE)]),
        ("rs:fit:200:200/ex:1:no", (200, 200), [(10, 10, RED), (100, 150, NONE)]),
        ("rs:fit:200:200/ex:1:so/bg:ff00ff", (200, 200), [(100, 10, (255, 0, 255, 255)), (190, 190, YELLOW)]),
        ("rs:fit:200:200:0:1:so (rs's extend and its gravity)", (200, 200), [(100, 10, NONE), (10, 190, RED)]),
        ("s:200:200:0:1:no (s's extend)", (200, 200), [(10, 10, RED), (100, 190, NONE)]),
        ("rs:fit:100:100/exar:1", (100, 100), [(50, 5, NONE), (10, 50, RED), (90, 50, YELLOW)]),
        ("rs:fit:300:100/exar:1:ea", (300, 100), [(10, 50, NONE), (290, 50, YELLOW), (110, 50, RED)]),
        ("rs:fit:100:100/pd:10:20", (140, 70), [(5, 35, NONE), (25, 35, RED), (115, 35, YELLOW), (70, 5, NONE)]),
        ("rs:fit:50:50/dpr:2/pd:5/bg:00ff00", (120, 70), [(5, 35, GREEN), (15, 35, RED), (60, 65, GREEN)]),
        ("rs:fit:100:100/mw:200", (200, 100), [(10, 50, RED), (190, 50, YELLOW)]),
        ("rs:fit:100:100/mh:100", (200, 100), [(10, 50, RED)]),
        ("z:0.5", (200, 100), [(10, 50, RED), (190, 50, YELLOW)]),
        ("z:0.5:0.25", (200, 50), [(10, 25, RED)]),
        ("rs:fill:100:100/g:fp:0.9:0.5", (100, 100), [(25, 50, BLUE), (75, 50, YELLOW)]),
        ("rs:fill:100:100/g:fp:0.1:0.5", (100, 100), [(25, 50, RED), (75, 50, GREEN)]),
        ("rs:fill:100:100/g:fp:0.5:0.5", (100, 100), [(25, 50, GREEN), (75, 50, BLUE)]),
        ("c:100:200:fp:0.6:0.5 (a crop by a focus point)", (100, 200), [(20, 100, BLUE), (80, 100, BLUE)]),
        ("rs:fill:100:100/rot:90/g:no (turned: red on top)", (100, 100), [(50, 10, RED), (50, 90, GREEN)]),
        ("rs:fill:100:100/fl:1/g:we (flipped: yellow on the left)", (100, 100), [(10, 50, YELLOW), (90, 50, BLUE)]),
    ]
    for opts, size, samples in plan_cases:
        path = opts.split(" (")[0]
        st, _, body = get(base, sign(f"/{path}/plain/{bsrc}@png"))
        d = decode(body) if st == 200 else None
        bad = [(x, y, at(d, x, y), c) for x, y, c in samples if d is not None and not near(at(d, x, y), c)]
        check(f"{opts}: {size[0]}x{size[1]}, each sample its colour", d is not None and d[:2] == size and not bad,
              (st, d and d[:2], bad[:2]))
    # g:sm keeps what draws the eye: a flat field with a detailed, colourful
    # patch off the middle, which the centre cut misses
    from PIL import ImageDraw, ImageStat
    field = Image.new("RGB", (800, 200), (128, 128, 128))
    pd_ = ImageDraw.Draw(field)
    for y in range(30, 170, 8):
        for x in range(560, 700, 8):
            pd_.rectangle((x, y, x + 3, y + 3), fill=(230, 40, 40) if (x + y) % 16 else (20, 20, 200))
    field.save(os.path.join(WORK, "www", "img", "field.png"))
    spread = {}
    for g in ("ce", "sm"):
        st, _, body = get(base, sign(f"/rs:fill:100:100/g:{g}/plain/{ORIGIN}/img/field.png@png"))
        d = decode(body) if st == 200 else None
        spread[g] = ImageStat.Stat(rgb(d[0], d[1], d[2]).convert("L")).stddev[0] if d and d[:2] == (100, 100) else None
    check(f"g:sm keeps the busy patch the centre cut misses (spread {spread})",
          spread["sm"] is not None and spread["ce"] is not None and spread["sm"] > 5 and spread["ce"] < 1, spread)
    # a hostile SVG (a turbulence filter of 2000 octaves: ~4 CPU-seconds for
    # 200x200) costs its decoder worker's budget (2 CPU-seconds), not the
    # server: two at once end as 422 naming the budget, and /health/live
    # answers again and again while both are still being decoded
    open(os.path.join(WORK, "www", "img", "hostile.svg"), "w").write(
        "<svg xmlns='http://www.w3.org/2000/svg' width='2000' height='2000'><filter id='f'>"
        "<feTurbulence baseFrequency='0.05' numOctaves='2000'/></filter>"
        "<rect width='2000' height='2000' filter='url(#f)'/></svg>")
    hostile = {}

    def hostile_render(i):
        hostile[i] = get(base, sign(f"/rs:fit:200:200/cb:{i}/plain/{ORIGIN}/img/hostile.svg@png"))
    hs = [threading.Thread(target=hostile_render, args=(i,)) for i in range(2)]
    for t in hs:
        t.start()
    wait_for(lambda: metric(base, "sdimage_serve_renders_in_flight") >= 2 or len(hostile) == 2, "two hostile renders")
    polls = []
    while len(polls) < 5 and len(hostile) < 2:
        polls.append((get(base, "/health/live")[0], len(hostile)))
    for t in hs:
        t.join(600)
    answered_during = [st for st, done in polls if st == 200 and done == 0]
    check(f"two hostile SVGs: 422 naming the decode budget ({[hostile[i][0] for i in hostile]}), /health/live answered "
          f"{len(answered_during)} times while both were decoding",
          all(hostile[i][0] == 422 and b"budget" in hostile[i][2] for i in range(2)) and len(answered_during) >= 3,
          ([(hostile[i][0], hostile[i][2][:100]) for i in hostile], polls))
    # 2,000 idle connections (a slowloris' worth) do not take the server:
    # /health/live and a cached result answer while they are all open
    import resource
    import socket
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 2000 + 256
    if hard != resource.RLIM_INFINITY and hard < want:
        check(f"2,000 idle connections: this machine's descriptor limit ({hard}) is below {want}", False, hard)
    else:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want if hard == resource.RLIM_INFINITY else min(hard, 8192), hard))
        host, port = base.split("//")[1].split(":")
        idle, opened = [], 0
        try:
            for _ in range(2000):
                idle.append(socket.create_connection((host, int(port)), timeout=120))
                opened += 1
            cached_png = sign(f"/rs:fit:64:64/plain/{ORIGIN}/img/bands.png@png")
            st1 = get(base, "/health/live")[0]
            st2 = get(base, cached_png)[0]
            # and each was taken by the server, not left in the kernel's
            # backlog: the first, a middle and the last one answer a request
            answered = 0
            for c in (idle[0], idle[1000], idle[-1]):
                try:
                    c.sendall(b"GET /health/live HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                    answered += c.recv(64).startswith(b"HTTP/1.1 200")
                except OSError:
                    pass
        finally:
            for c in idle:
                c.close()
        check(f"{opened} idle connections open: /health/live {st1}, a result {st2}, {answered} of 3 of them answered",
              opened == 2000 and (st1, st2, answered) == (200, 200, 3), (opened, st1, st2, answered))
    for bad in ("g:fp:2:0.5", "ex:x", "z:0", "pd:-1", "mw:x"):
        st, _, body = get(base, sign(f"/{bad}/plain/{bsrc}@png"))
        check(f"{bad}: 400", st == 400, (st, body[:80]))
    # the plan refuses an oversized result before decoding: 422 with the size
    st, _, body = get(base, sign(f"/rs:fit:100:100/pd:9000/plain/{bsrc}@png"))
    check("pd:9000 past the result's side limit: 422 naming the size", st == 422 and b"the result would be" in body,
          (st, body[:120]))
    st, _, body = get(base, sign(f"/rs:fit:120:60/rot:90/plain/{src}@png"))
    d = decode(body) if st == 200 else None
    check("rot:90 fits the turned image in the box", d is not None and d[0] <= 120 and d[1] <= 60
          and (d[0] == 120 or d[1] == 60), d and d[:2])
    for bad in ("rot:45", "bl:-1", "fl:x"):
        st, _, _ = get(base, sign(f"/rs:fit:64:64/{bad}/plain/{src}@png"))
        check(f"{bad}: 400", st == 400, st)

    # EXIF orientation applied (ar on by default): upright, as sdimage decode gives it
    rsrc = f"{ORIGIN}/img/{rotated}"
    st, _, body = get(base, sign(f"/rs:fit:256:256/plain/{rsrc}@png"))
    ref = decode(open(os.path.join(WORK, "www", "img", rotated), "rb").read(), "--max-pixel-size", "256")
    got = decode(body) if st == 200 else None
    check("EXIF-rotated source: upright", got is not None and got[:2] == ref[:2], (got and got[:2], ref[:2]))
    st, _, body = get(base, sign(f"/rs:fit:256:256/ar:0/plain/{rsrc}@png"))
    got = decode(body) if st == 200 else None
    check("ar:0: as stored (sides swapped)", got is not None and got[:2] == (ref[1], ref[0]), (got and got[:2], ref[:2]))

    # bg: what shows through transparent pixels of a JPEG
    asrc = f"{ORIGIN}/img/{alpha}"
    aref = decode(open(os.path.join(WORK, "www", "img", alpha), "rb").read(), "--max-pixel-size", "128")
    clear = next((i for i in range(3, len(aref[2]), 4) if aref[2][i] == 0), None)
    for bg, want in (("FF0000", (255, 0, 0)), ("0:0:255", (0, 0, 255))):
        st, _, body = get(base, sign(f"/rs:fit:128:128/bg:{bg}/plain/{asrc}@jpg"))
        got = decode(body) if st == 200 else None
        px = got and clear is not None and (got[2][clear - 1], got[2][clear - 2], got[2][clear - 3])  # BGRA -> RGB
        check(f"bg:{bg} under a transparent pixel of a JPEG", px and all(abs(a - b) <= 24 for a, b in zip(px, want)),
              (st, px, clear))
    # ... and of every format (imgproxy fills the background), PNG and WebP too: opaque
    for ext in ("png", "webp"):
        st, _, body = get(base, sign(f"/rs:fit:128:128/bg:FF0000/plain/{asrc}@{ext}"))
        got = decode(body) if st == 200 else None
        px = got and clear is not None and (got[2][clear - 1], got[2][clear - 2], got[2][clear - 3], got[2][clear])
        check(f"bg:FF0000 fills a transparent pixel of a {ext.upper()} (opaque red)",
              px and px[3] == 255 and all(abs(a - b) <= 24 for a, b in zip(px[:3], (255, 0, 0))), (st, px))
    st, _, body = get(base, sign(f"/rs:fit:128:128/plain/{asrc}@png"))
    got = decode(body) if st == 200 else None
    check("without bg a PNG keeps its transparency", got is not None and clear is not None and got[2][clear] == 0,
          got and clear is not None and got[2][clear])

    # negotiation: f:auto / no extension
    for accept, want in [("image/avif,image/webp,*/*", "image/avif"), ("image/webp,*/*", "image/webp"),
                         ("*/*", "image/jpeg"), ("image/avif;q=0,image/webp", "image/webp")]:
        st, h, body = get(base, sign(f"/rs:fit:128:128/plain/{src}"), {"Accept": accept})
        check(f"Accept {accept} -> {want}, Vary: Accept", st == 200 and h.get("content-type") == want
              and h.get("vary") == "Accept" and decode(body) is not None, (st, h.get("content-type"), h.get("vary")))
    st, h, _ = get(base, sign(f"/rs:fit:128:128/f:auto/plain/{ORIGIN}/img/{alpha}"), {"Accept": "*/*"})
    check("alpha, neither AVIF nor WebP accepted -> PNG", st == 200 and h.get("content-type") == "image/png", h)
    st, h, _ = get(base, sign(f"/rs:fit:128:128/plain/{src}@webp"), {"Accept": "image/avif"})
    check("an explicit format wins, no Vary", st == 200 and h.get("content-type") == "image/webp" and "vary" not in h, h)

    # no format asked and neither AVIF nor WebP accepted: the source's own
    # (imgproxy's rule), PNG stays PNG and GIF stays GIF; a JPEG stays JPEG
    from PIL import Image as PILImage
    for ext, ctype in (("png", "image/png"), ("gif", "image/gif")):
        name = f"kept-format.{ext}"
        PILImage.open(os.path.join(WORK, "www", "img", photo)).convert("RGB").resize((120, 90)).save(
            os.path.join(WORK, "www", "img", name))
        st, h, body = get(base, sign(f"/rs:fit:64:64/plain/{ORIGIN}/img/{name}"), {"Accept": "image/jpeg,*/*"})
        check(f"an opaque {ext.upper()} source, no format asked, Accept */*: {ctype}",
              st == 200 and h.get("content-type") == ctype and decode(body) is not None, (st, h.get("content-type")))
    # Content-Disposition: inline, the source's file name with the result's extension
    st, h, _ = get(base, sign(f"/rs:fit:64:64/plain/{src}@png"))
    want = f'inline; filename="{os.path.splitext(photo)[0]}.png"'
    check("Content-Disposition: inline, the source's name, the result's extension", h.get("content-disposition") == want,
          (h.get("content-disposition"), want))
    st, h, _ = get(base, sign(f"/rs:fit:64:64/plain/{src}@jpg"))
    check("Content-Disposition of a JPEG result: .jpg", h.get("content-disposition") == f'inline; filename="{os.path.splitext(photo)[0]}.jpg"',
          h.get("content-disposition"))
    # default quality per format, imgproxy's: JPEG 80, WebP 79, AVIF 63 (the
    # encoders are deterministic: the same bytes as asking for it)
    for ext, q in (("jpg", 80), ("webp", 79), ("avif", 63)):
        _, _, plain_q = get(base, sign(f"/rs:fit:96:96/plain/{src}@{ext}"))
        _, _, asked = get(base, sign(f"/rs:fit:96:96/q:{q}/plain/{src}@{ext}"))
        _, _, other_q = get(base, sign(f"/rs:fit:96:96/q:{q + 10}/plain/{src}@{ext}"))
        check(f"{ext}: the default quality is {q}", len(plain_q) > 0 and plain_q == asked and plain_q != other_q,
              (len(plain_q), len(asked), len(other_q)))

    # cb, exp, fn, att, sm, kcr, mb, fq as imgproxy's
    _, _, plain_png = get(base, sign(f"/rs:fit:96:96/plain/{src}@png"))
    st, _, body = get(base, sign(f"/rs:fit:96:96/cb:abc123/plain/{src}@png"))
    check("cb: the same image", st == 200 and body == plain_png, st)
    st, _, _ = get(base, sign(f"/rs:fit:96:96/exp:1000000000/plain/{src}@png"))
    check("exp in the past (2001): 404", st == 404, st)
    st, _, body = get(base, sign(f"/rs:fit:96:96/exp:4000000000/plain/{src}@png"))
    check("exp in the future (2096): the image", st == 200 and body == plain_png, st)
    st, h, _ = get(base, sign(f"/rs:fit:96:96/fn:holiday%20photo/plain/{src}@png"))
    check("fn: the file name given (unsafe characters as _)", h.get("content-disposition") == 'inline; filename="holiday_photo.png"',
          h.get("content-disposition"))
    enc = base64.urlsafe_b64encode('say "hi"'.encode()).rstrip(b"=").decode()
    st, h, _ = get(base, sign(f"/rs:fit:96:96/fn:{enc}:1/att:1/plain/{src}@jpg"))
    check("fn encoded, att:1: attachment, no quote gets through", h.get("content-disposition") == 'attachment; filename="say__hi_.jpg"',
          h.get("content-disposition"))
    st, _, body = get(base, sign(f"/rs:fit:96:96/sm:1/kcr:0/plain/{src}@png"))
    check("sm:1, kcr:0: what results are anyway", st == 200 and body == plain_png, st)
    for opt in ("sm:0", "kcr:1"):
        st, _, body = get(base, sign(f"/rs:fit:96:96/{opt}/plain/{src}@png"))
        check(f"{opt}: 400 with its reason", st == 400 and b"metadata" in body, (st, body[:80]))
    _, _, big = get(base, sign(f"/rs:fit:256:256/q:95/plain/{src}@jpg"))
    st, _, small = get(base, sign(f"/rs:fit:256:256/q:95/mb:{len(big) // 2}/plain/{src}@jpg"))
    check(f"mb:{len(big) // 2}: a JPEG within it ({len(small)} bytes; {len(big)} without)",
          st == 200 and 0 < len(small) <= len(big) // 2 and decode(small) is not None, (st, len(small), len(big)))
    _, _, q50 = get(base, sign(f"/rs:fit:96:96/q:50/plain/{src}@webp"))
    _, _, fq50 = get(base, sign(f"/rs:fit:96:96/fq:webp:50:avif:40/plain/{src}@webp"))
    _, _, jpg_default = get(base, sign(f"/rs:fit:96:96/plain/{src}@jpg"))
    _, _, jpg_fq = get(base, sign(f"/rs:fit:96:96/fq:webp:50/plain/{src}@jpg"))
    check("fq:webp:50: WebP at 50, JPEG at its default", len(q50) > 0 and fq50 == q50 and jpg_fq == jpg_default,
          (len(q50), len(fq50), len(jpg_default), len(jpg_fq)))

    # HEAD is GET without the body; other methods 405; a weak If-None-Match matches
    path = sign(f"/rs:fit:96:96/plain/{src}@png")
    sg, hg, bg = get(base, path)
    sh, hh, bh = request(base, "HEAD", path)
    check("HEAD: the GET's status and headers, no body", (sh, bh) == (200, b"") and hh.get("etag") == hg.get("etag")
          and hh.get("content-type") == "image/png" and hh.get("content-length") == str(len(bg)),
          (sh, len(bh), hh.get("content-length"), len(bg)))
    sh, _, bh = request(base, "HEAD", "/health")
    check("HEAD /health: 200, no body", (sh, bh) == (200, b""), sh)
    sp, hp, _ = request(base, "POST", path)
    check("POST: 405, Allow: GET, HEAD", sp == 405 and hp.get("allow") == "GET, HEAD", (sp, hp.get("allow")))
    sw, _, bw = get(base, path, {"If-None-Match": "W/" + hg.get("etag", "")})
    check("If-None-Match with the weak form of the ETag: 304", (sw, bw) == (304, b""), sw)
    # the origin's Last-Modified: re-sent canonical, or not at all
    for value, want in (("%3Cscript%3Ealert(1)%3C%2Fscript%3E", None),
                        ("Sunday%2C%2006-Nov-94%2008%3A49%3A37%20GMT", "Sun, 06 Nov 1994 08:49:37 GMT"),
                        ("Sun%2C%2006%20Nov%201994%2008%3A49%3A37%20GMT", "Sun, 06 Nov 1994 08:49:37 GMT")):
        st, h, _ = get(base, sign(f"/rs:fit:64:64/plain/{FAULT}/last-modified%3Fvalue%3D{value}@png"))
        check(f"origin Last-Modified {urllib.parse.unquote(value)!r}: sent as {want!r}",
              st == 200 and h.get("last-modified") == want, (st, h.get("last-modified")))
    # fetch failures say their class, not the network's words (no address or port)
    st, _, body = get(base, sign("/rs:fit:64:64/plain/http://127.0.0.1:9/x.jpg@png"))
    check("a source with nothing listening: 502, 'no connection', nothing more",
          st == 502 and body == b"the source could not be fetched (no connection)\n", (st, body[:120]))
    st, _, body = get(base, sign(f"/rs:fit:64:64/plain/{src.replace('127.0.0.1', 'localhost')}@png"))
    check("a refused name: 403, and not what it resolves to", st == 403 and b"127.0.0.1" not in body
          and b"::1" not in body, (st, body[:160]))
    # WebP's side limit is known in advance: 422, not the encoder's 500
    st, _, body = get(base, sign(f"/rs:force:16384:64:1/plain/{src}@webp"))
    check("a 16384-px-wide WebP: 422 naming the limit", st == 422 and b"16383" in body, (st, body[:120]))

    # encoded CR/LF in the source's path and query, and in a header: each
    # request answers, and no line of the log is forged (checked at the end)
    for tail in ("x%0D%0Aforged-path%0A.jpg", "x.jpg%3Fq%3D%0Aforged-query%0D%0A"):
        st, _, _ = get(base, sign(f"/rs:fit:64:64/plain/http://127.0.0.1:9/{tail}@png"))
        check(f"a source with an encoded newline ({tail[:14]}…): answered ({st})", 400 <= st < 600, st)
    st, _, _ = request(base, "GET", sign(f"/rs:fit:64:64/plain/{src}@png"), {"X-Note": "a\tb forged-header"})
    check("a header with a control character: answered", st == 200, st)

    # the options docs/serve.md lists as refused: 400 naming the option
    for opt, name in (("t:10", "t"), ("wm:1", "wm"), ("scp:1", "scp"), ("eth:1", "eth"), ("skp:jpg", "skp"),
                      ("raw:1", "raw"), ("c:10:10:sm", "sm"), ("ex:1:sm", "sm")):
        st, _, body = get(base, sign(f"/{opt}/plain/{src}@png"))
        check(f"{opt}: 400 naming {name}", st == 400 and name.encode() in body, (st, body[:80]))

    # presets: pr:NAME where it stands, later options win; `default` before every URL
    _, _, by_hand = get(base, sign(f"/rs:fill:64:48/g:nowe/plain/{src}@png"))
    st, _, body = get(base, sign(f"/pr:thumb/plain/{src}@png"))
    check("pr:thumb: its options' image", st == 200 and body == by_hand, st)
    st, _, body = get(base, sign(f"/pr:thumb:narrow/plain/{src}@png"))
    d = decode(body) if st == 200 else None
    check("pr:thumb:narrow: the later preset's width wins (32x48)", d is not None and d[:2] == (32, 48), d and d[:2])
    st, _, body = get(base, sign(f"/pr:thumb/w:40/plain/{src}@png"))
    d = decode(body) if st == 200 else None
    check("pr:thumb then w:40: the URL's later option wins", d is not None and d[:2] == (40, 48), d and d[:2])
    st, _, body = get(base, sign(f"/pr:nosuch/plain/{src}@png"))
    check("an unknown preset: 400 naming it", st == 400 and b"nosuch" in body, (st, body[:80]))
    p2, b2, _ = start("--key", KEY, "--salt", SALT, "--allow-source-host", "127.0.0.1", "--preset", "default=q:40")
    try:
        _, _, q40 = get(base, sign(f"/rs:fit:96:96/q:40/plain/{src}@jpg"))
        st, _, body = get(b2, sign(f"/rs:fit:96:96/plain/{src}@jpg")) if b2 else (0, None, b"")
        check("the default preset comes before every URL (q:40)", st == 200 and body == q40, st)
        st, _, body = get(b2, sign(f"/rs:fit:96:96/q:80/plain/{src}@jpg")) if b2 else (0, None, b"")
        _, _, q80 = get(base, sign(f"/rs:fit:96:96/q:80/plain/{src}@jpg"))
        check("... and the URL's own options after it (q:80)", st == 200 and body == q80, st)
    finally:
        p2.terminate()
        p2.wait(60)
    bad = subprocess.run([SDIMAGE, "serve", "--key", KEY, "--salt", SALT, "--preset", "x=rs:nonsense"],
                         capture_output=True, text=True, timeout=600)
    check("a bad preset stops the server from starting, with its reason", bad.returncode != 0 and "nonsense" in bad.stderr,
          (bad.returncode, bad.stderr[-200:]))

    # errors, while a load of ordinary renders runs: none of it may fail
    stop_load = threading.Event()
    load_results = []

    def load():
        n = 0
        while not stop_load.is_set():
            n += 1
            load_results.append(get(base, sign(f"/rs:fit:{40 + n % 150}:{40 + n % 150}/plain/{src}@webp"))[0])
    loaders = [threading.Thread(target=load, daemon=True) for _ in range(3)]
    for t in loaders:
        t.start()
    bomb_png(os.path.join(WORK, "www", "img", "bomb.png"))
    errors = [
        ("decompression bomb (a 60000x60000 PNG)", sign(f"/rs:fit:100:100/plain/{ORIGIN}/img/bomb.png@png"), 422),
        ("redirect loop", sign(f"/rs:fit:100:100/plain/{ORIGIN}/loop@png"), 502),
        ("an enlarged result past the pixel limit", sign(f"/rs:fit:5000:5000:1/dpr:4/plain/{src}@png"), 422),
        ("no signature", "/insecure/rs:fit:100:100/plain/" + src, 403),
        ("wrong signature", "/" + "A" * 43 + "/rs:fit:100:100/plain/" + src, 403),
        ("signature of other options", None, 403),
        ("unknown option", sign(f"/zz:1/plain/{src}@png"), 400),
        ("bad width", sign(f"/w:abc/plain/{src}@png"), 400),
        ("unknown format", sign(f"/rs:fit:100:100/plain/{src}@tiff"), 400),
        ("not base64", sign("/rs:fit:100:100/%%%%.png"), 400),
        ("broken percent-encoding", sign(f"/rs:fit:100:100/plain/{src}%zz@png"), 400),
        ("percent-encoding that is not UTF-8", sign(f"/rs:fit:100:100/plain/{src}%ff@png"), 400),
        ("not http(s)", sign("/rs:fit:100:100/plain/file:///etc/passwd@png"), 400),
        ("source 404", sign(f"/rs:fit:100:100/plain/{ORIGIN}/status/404@png"), 404),
        ("source 500", sign(f"/rs:fit:100:100/plain/{ORIGIN}/status/500@png"), 502),
        ("source not an image", sign(f"/rs:fit:100:100/plain/{FAULT}/html@png"), 422),
        # SSRF: only 127.0.0.1 is allowed; every other loopback name or address is refused
        ("source on 127.0.0.2 refused", sign(f"/rs:fit:100:100/plain/{src.replace('127.0.0.1', '127.0.0.2')}@png"), 403),
        ("source as localhost refused", sign(f"/rs:fit:100:100/plain/{src.replace('127.0.0.1', 'localhost')}@png"), 403),
        ("redirect to 127.0.0.2 refused",
         sign(f"/rs:fit:100:100/plain/{FAULT}/redirect%3Fto%3D{src.replace('127.0.0.1', '127.0.0.2')}@png"), 403),
    ]
    for name, path, want in errors:
        if path is None:  # a valid signature, moved onto another path
            good = sign(f"/rs:fit:100:100/plain/{src}@png")
            path = good.replace("rs:fit:100:100", "rs:fit:900:900")
        st, h, body = get(base, path)
        # a refusal of the source must say so (not be a signature failure in disguise)
        why = "not allowed" if "refused" in name else "signature" if "signature" in name else ""
        check(f"{name}: {want} with a reason", st == want and len(body.strip()) > 0 and why.encode() in body
              and h.get("content-type", "").startswith("text/plain"), (st, body[:200]))
    stop_load.set()
    for t in loaders:
        t.join(300)
    check(f"a load beside the hostile requests: {len(load_results)} renders, all 200",
          len(load_results) > 0 and set(load_results) == {200}, sorted(set(load_results)))
    # after all that, still serving
    st, _, _ = get(base, sign(f"/rs:fit:64:64/plain/{src}@png"))
    check("still serving after the errors", st == 200, st)
    fuzz_urls(base, f"{ORIGIN}/status/404", 600, 45)
    fuzz_urls(base, src, 200, 46)
    fuzz_headers(base, src, 150, 47)


def fuzz_headers(base, src, n, seed):
    """The request headers the server reads, fuzzed on one valid URL:
    Accept (odd types, q-values out of range, NaN, empty items, long lists),
    If-None-Match and If-Modified-Since (garbage, lists, wildcards, dates
    out of range). Each answer is the image (200, an image type) or 304 with
    no body; never an error."""
    rnd = random.Random(seed)
    types = ["image/avif", "image/webp", "image/png", "image/*", "*/*", "IMAGE/WEBP", "image/webp ", "", "text/html",
             "image/", "/", ";", "image/avif;q=0", "image/webp;q=nan", "image/webp;q=-1", "image/webp;q=1e400",
             "image/avif;q=0.001", "image/webp;level=1;q=0.5", "image/webp;q=", "image/webp;;q=1", "q=1"]
    tags = ['"x"', 'W/"x"', "*", "", '"', 'W/', ",", '"a", "b"', "x" * 300, '"\u00e9"']
    dates = ["Thu, 01 Jan 1970 00:00:00 GMT", "Fri, 31 Dec 9999 23:59:59 GMT", "garbage", "", "Mon, 32 Foo 2026 25:61:61 GMT",
             "Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994", "0", "-1"]
    path = sign(f"/rs:fit:48:48/plain/{src}")
    bad = []
    for _ in range(n):
        h = {}
        if rnd.random() < 0.8:
            h["Accept"] = ",".join(rnd.choice(types) for _ in range(rnd.randrange(1, 12)))
        if rnd.random() < 0.3:
            h["If-None-Match"] = rnd.choice(tags)
        if rnd.random() < 0.3:
            h["If-Modified-Since"] = rnd.choice(dates)
        try:
            st, rh, body = get(base, path, h)
        except Exception as e:
            st, rh, body = type(e).__name__, {}, b""
        ok = (st == 200 and rh.get("content-type", "").startswith("image/") and len(body) > 0) or (st == 304 and not body)
        if not ok:
            bad.append((h, st, body[:120]))
    check(f"fuzzed Accept, If-None-Match, If-Modified-Since (seed {seed}, {n}): the image or 304, never an error",
          not bad, bad[:5])


def fuzz_urls(base, src, n, seed):
    """The processing-URL parser fuzzed over HTTP: random option strings
    (names, arguments out of range, NaN and infinities, stray colons and
    escapes) before a plain, a base64 or a junk source, signed so the parser
    runs; and unsigned junk paths. The source host is never mutated (no
    traffic leaves 127.0.0.1). With the origin's 404 as the source nothing
    renders and each answer must be a clear client error (400, 403 where
    the client drops a '#' part or moves a '?' part out of the signed path,
    404, 422) with a reason; with a real image, what parses renders (200,
    an image) and the plan meets every odd value. Never a 5xx or a dropped
    connection; the seed is fixed, so a failure repeats."""
    rnd = random.Random(seed)
    names = ["rs", "resize", "s", "size", "rt", "resizing_type", "w", "width", "h", "height", "dpr", "el",
             "enlarge", "g", "gravity", "q", "quality", "f", "format", "ext", "bg", "background", "ar",
             "auto_rotate", "zz", "", "RS", "w%3A1"]
    atoms = ["", "0", "1", "-1", "2", "65536", "65537", "99999999999999999999", "-0", "1e308", "1e400", "nan",
             "NaN", "inf", "-inf", "0.0001", "8", "8.0001", "0x10", "fit", "fill", "fill-down", "force", "auto",
             "FIT", "ce", "no", "so", "ea", "we", "noea", "sowe", "sm", "t", "true", "false", "f", "yes",
             "ff00ff", "FFFFFF", "zzzzzz", "fff", "255", "256", "-255", "png", "webp", "avif", "jpg", "jpeg",
             "tiff", "%41", "%zz", "%ff", "%C3%A9", "%00", "%2F", "%3A", "%40", "~", "!", "'", "*", ",,",
             "100", "300", "3.5", "0.5"]
    exts = ["png", "webp", "avif", "jpg", "jpeg", "gif", "tiff", "", "PNG", "%70ng", "png@png", "."]
    renders = not src.endswith("/404")

    ints = ["0", "1", "2", "7", "100", "300", "1000", "65536"]
    nums = ["0", "-5", "12.5", "100000", "1e308", "-1e308", "nan", "inf", "-inf"]
    bools = ["0", "1", "t", "f", "true", "false"]
    types = ["fit", "fill", "fill-down", "force", "auto"]
    typed = [
        lambda: f"rs:{rnd.choice(types)}:{rnd.choice(ints)}:{rnd.choice(ints)}:{rnd.choice(bools)}",
        lambda: f"s:{rnd.choice(ints)}:{rnd.choice(ints)}",
        lambda: f"rt:{rnd.choice(types)}",
        lambda: f"w:{rnd.choice(ints)}",
        lambda: f"h:{rnd.choice(ints)}",
        lambda: f"dpr:{rnd.choice(['0.0001', '1', '2.5', '8'])}",
        lambda: f"el:{rnd.choice(bools)}",
        lambda: ":".join(["g", rnd.choice(["ce", "no", "so", "ea", "we", "noea", "nowe", "soea", "sowe"])]
                         + [rnd.choice(nums) for _ in range(rnd.randrange(3))]),
        lambda: f"q:{rnd.randrange(101)}",
        lambda: f"f:{rnd.choice(['png', 'webp', 'avif', 'jpg', 'auto'])}",
        lambda: rnd.choice(["bg:0:0:0", "bg:255:128:7", "bg:ff00ff", "bg:"]),
        lambda: f"ar:{rnd.choice(bools)}",
    ]

    def option():
        if rnd.random() < (0.75 if renders else 0.25):  # well-formed, with edge values: reaches the plan
            return rnd.choice(typed)()
        seg = ":".join([rnd.choice(names)] + [rnd.choice(atoms) for _ in range(rnd.randrange(6))])
        if rnd.random() < 0.15:  # a character dropped or doubled
            i = rnd.randrange(len(seg) + 1)
            seg = seg[:i] + seg[i:i + 1] * rnd.choice([0, 2]) + seg[i + 1:]
        return seg

    def path():
        opts = "".join("/" + option() for _ in range(rnd.randrange(5)))
        kind = rnd.randrange(4)
        if kind == 0:  # a plain source, junk after its path (no dots: the same file; none for a real image)
            junk = "".join(rnd.choice(["", "x", "%41", "%zz", "%ff", "?a=b", "#f", "@", "@@", "/", "%40"])
                           for _ in range(0 if renders else rnd.randrange(4)))
            return f"{opts}/plain/{src}{junk}" + ("@" + rnd.choice(exts) if rnd.random() < 0.8 else "")
        if kind == 1:  # base64, cut into segments at random
            b64 = base64.urlsafe_b64encode(src.encode()).rstrip(b"=").decode()
            if rnd.random() < 0.3:
                i = rnd.randrange(len(b64))
                mutated = b64[:i] + rnd.choice(["", "=", "%", "+", "A", "__"]) + b64[i + 1:]
                # decoded as leniently as any decoder would: a mutation that still
                # reads as a URL must keep its host (no lookup, no traffic but
                # 127.0.0.1); one that names another is not sent
                std = mutated.replace("-", "+").replace("_", "/")
                try:
                    text = base64.b64decode(std + "=" * (-len(std) % 4), validate=False).decode("utf-8", "replace")
                except ValueError:
                    text = ""
                if "://" not in text or text.startswith(ORIGIN + "/"):
                    b64 = mutated
            cuts = sorted(rnd.sample(range(1, len(b64)), rnd.randrange(3)))
            parts = [b64[a:b] for a, b in zip([0] + cuts, cuts + [len(b64)])]
            return f"{opts}/" + "/".join(parts) + ("." + rnd.choice(exts) if rnd.random() < 0.8 else "")
        if kind == 2:  # no source at all, or only "plain"
            return opts + rnd.choice(["", "/", "/plain", "/plain/", "//", "/plain/@png"])
        return opts + "/" + rnd.choice(atoms) + "/" + rnd.choice(atoms)  # junk where the source goes

    answers, bad = {}, []
    for i in range(n):
        p = path()
        signed = i % 6 != 5
        full = sign(p) if signed else "/" + rnd.choice(["insecure", "x", "", "A" * 43, "%zz"]) + p
        try:
            st, h, body = get(base, full)
        except Exception as e:  # a dropped connection or a malformed answer
            st, h, body = f"{type(e).__name__}", {}, b""
        answers[st] = answers.get(st, 0) + 1
        allowed = {400, 403, 404, 422} if signed else {400, 403, 404}
        if st == 200 and renders and signed:
            ok = h.get("content-type", "").startswith("image/") and len(body) > 0
        else:
            ok = st in allowed and body.strip() and h.get("content-type", "").startswith("text/plain")
        if not ok:
            bad.append((full, st, body[:120]))
    check(f"fuzzed processing URLs (seed {seed}, {n}): each a 4xx with a reason{' or a render' if renders else ''} "
          f"({', '.join(f'{k}: {v}' for k, v in sorted(answers.items(), key=str))})", not bad, bad[:5])
    st, _, _ = get(base, "/health/live")
    check("still live after the fuzzed URLs", st == 200, st)


if __name__ == "__main__":
    main()
    print(f"{passed} passed, {failed} failed")
    sys.exit(0 if failed == 0 and passed > 0 else 1)
