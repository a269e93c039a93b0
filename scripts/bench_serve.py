#!/usr/bin/env python3
"""bench_serve.py — `sdimage serve` against thumbor, like for like (make bench-serve).

Started by scripts/bench-serve.sh with nginx serving the photos on loopback,
thumbor (PyPI, Pillow engine, storage and result storage off, --processes 2)
and `sdimage serve` (release, unsigned URLs like thumbor's /unsafe/) already
running. Both get the same requests: fit in 256x256, WebP q80 and JPEG q80,
every request a distinct source URL (`?n=`, never asked for before, also
not by another format's rows: a cache miss on both sides, the origin asked
each time) at concurrency 16, after a warm-up; then ours again
on URLs it has cached (the hit rows). The load generator is `sdcore-bench
load` (Benchmarks/C/bench_load.c, $SDCORE_BENCH): one thread on epoll, 16
requests in flight over HTTP/1.1, a connection per request for the render
rows (see `load`) and 16 keep-alive connections for the hit row, each
request timed there from its connection (or its first byte sent) to its
last byte read (no synthetic samples). It is in C because at ten thousand
hits a second an asyncio client took most of a core of the two the server
needs. CPU per
request is the servers' own CPU time (/proc) over the requests; peak RSS is
VmHWM summed over the server's processes. Each row is the median of three
runs; a run is repeated once when another process took more than 5% of the
machine's CPU during it. Our render rows are also measured against our own
render floor at the same moment: with $SDIMAGE_BIN set (bench-serve.sh sets
it), each of their runs is preceded by one round of `sdimage bench serve`
(the same photos, format and quality, two threads, from memory, no HTTP;
after its untimed warm-up round), and the row reports the median of the
runs' own ratios, so a machine that drifts during the bench moves both
sides of each ratio alike. Prints the table and one JSON line.
"""
import json
import os
import statistics
import subprocess
import sys
import time

OURS, THUMBOR, ORIGIN, PHOTOS, OUT = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
OUR_PIDS = [int(p) for p in sys.argv[6].split(",")]
THUMBOR_PIDS = [int(p) for p in sys.argv[7].split(",")]
CONCURRENCY = 16
LOADGEN = os.environ.get("SDCORE_BENCH", "build/release/sdcore-bench")
SDIMAGE_BIN = os.environ.get("SDIMAGE_BIN")
files = sorted(os.listdir(PHOTOS))


def our_path(src, fmt, q=80):
    return f"/insecure/rs:fit:256:256/q:{q}/plain/{src}@{fmt}"


def thumbor_path(src, fmt, q=80):
    return f"/unsafe/fit-in/256x256/filters:format({fmt}):quality({q})/{src}"


def load(base, paths, keepalive=True):
    """Every path once, CONCURRENCY at a time, by `sdcore-bench load`: its
    JSON summary (requests, ok, seconds, rps, p50_ms, p99_ms, median_bytes).
    Without keep-alive each request has a connection of its own (its
    setup timed with it): a server of several processes sharing a listening
    socket (thumbor's --processes) then gets its share of the load on each
    process, which 16 long-lived connections, handed out once, do not ensure."""
    port = base.rsplit(":", 1)[1]
    listing = OUT + ".paths"
    with open(listing, "w") as f:
        f.write("\n".join(paths) + "\n")
    args = [LOADGEN, "load", "--port", port, "--paths", listing, "--connections", str(CONCURRENCY)]
    out = subprocess.run(args + ([] if keepalive else ["--close"]), capture_output=True, text=True)
    os.unlink(listing)
    if not out.stdout.strip():
        sys.exit(f"bench-serve: the load generator failed: {out.stderr.strip()}")
    return json.loads(out.stdout)


def cpu(pids):
    total = 0.0
    for pid in pids:
        try:
            f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
            total += (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
        except OSError:
            pass
    return total


def machine_cpu():
    f = open("/proc/stat").readline().split()[1:]
    v = [int(x) for x in f]
    return sum(v) - v[3] - v[4], sum(v)  # busy, total (jiffies)


def peak_rss(pids):
    total = 0
    for pid in pids:
        try:
            for line in open(f"/proc/{pid}/status"):
                if line.startswith("VmHWM:"):
                    total += int(line.split()[1]) * 1024
        except OSError:
            pass
    return total


def pids_of(root):
    """root and every descendant (thumbor's worker processes)."""
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for t in os.listdir(f"/proc/{p}/task"):
                kids = open(f"/proc/{p}/task/{t}/children").read().split()
                todo += [int(k) for k in kids]
        except OSError:
            pass
    return out


def floor(fmt):
    """Our two-thread render floor now, images/s: one timed round of `sdimage
    bench serve` (after its warm-up round) over the photos this bench serves."""
    args = [SDIMAGE_BIN, "bench", "serve", "--dir", PHOTOS, "--format", fmt, "--threads", "2", "--rounds", "1",
            "--json"]
    if os.environ.get("SHRINK_MARGIN"):
        args += ["--shrink-margin", os.environ["SHRINK_MARGIN"]]
    out = subprocess.run(args, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"bench-serve: sdimage bench serve failed: {out.stderr.strip()}")
    return json.loads(out.stdout)["images_per_s"]


def origin_requests():
    """Requests nginx has logged under /photos/ so far (its access log there)."""
    try:
        with open(os.path.join(os.path.dirname(os.path.dirname(PHOTOS)), "photos.log"), "rb") as f:
            return f.read().count(b"\n")
    except OSError:
        return 0


def row(name, base, pids, paths, keepalive=False, floor_format=None):
    """Median of three runs of `paths` (fresh ?n= per run when `fresh`);
    with `floor_format`, each run preceded by a round of our floor."""
    runs = []
    for attempt in range(6):
        if len(runs) == 3:
            break
        floor_now = floor(floor_format) if floor_format and SDIMAGE_BIN else None
        own = pids_of(pids[0]) if len(pids) == 1 else pids
        c0, m0, g0, o0 = cpu(own), machine_cpu(), sum(os.times()[:4]), origin_requests()  # with the generator's
        got = load(base, paths(len(runs) + attempt * 10), keepalive)
        secs = got["seconds"]
        c1, m1, g1, o1 = cpu(own), machine_cpu(), sum(os.times()[:4]), origin_requests()
        busy = (m1[0] - m0[0]) / os.sysconf("SC_CLK_TCK")
        # what neither the server nor this load generator used (nginx, the
        # origin, counts too: it serves both sides alike), less 2% for jiffy rounding
        others = busy - (c1 - c0) - (g1 - g0) - secs * 2 * 0.02
        if others > secs * 2 * 0.10 and attempt < 3:
            print(f"  ({name}: another process used {others:.2f} s of CPU; run again)")
            continue
        runs.append({"rps": got["rps"], "p50": got["p50_ms"], "p99": got["p99_ms"],
                     "cpu_ms": (c1 - c0) / got["requests"] * 1000, "ok": got["ok"], "n": got["requests"],
                     "bytes": got["median_bytes"], "loadgen_cpu_s": g1 - g0, "origin": o1 - o0,
                     "floor": floor_now})
    med = dict(sorted(runs, key=lambda r: r["rps"])[len(runs) // 2])
    med["rss_mb"] = peak_rss(pids_of(pids[0]) if len(pids) == 1 else pids) / 2**20
    if all(r["floor"] for r in runs):
        med["floors"] = [r["floor"] for r in runs]
        med["vs_floor"] = statistics.median(r["rps"] / r["floor"] for r in runs)
    print(f"{name:34} {med['rps']:8.1f} req/s  p50 {med['p50']:6.1f} ms  p99 {med['p99']:6.1f} ms  "
          f"{med['cpu_ms']:5.1f} ms CPU/req  {med['ok']}/{med['n']} ok  {med['origin']} from origin  "
          f"median {med['bytes'] / 1024:.1f} KiB  "
          "(runs: " + ", ".join("%.0f" % r["rps"] for r in runs) + ")")
    if "vs_floor" in med:
        print(f"{'':34} {med['vs_floor']:.2f}x our floor, run by run (the floor before each run: "
              + ", ".join("%.1f" % f for f in med["floors"]) + " images/s)")
    return med


def quality(srcs, folder, what):
    """JPEG q80 of both servers against an exact reference: the source
    decoded whole by Pillow, resized by Pillow's Lanczos-3 to each output's
    size. Colours as a viewer shows them: a picture with an ICC profile
    (a source; thumbor's output, which keeps the source's) is converted to
    sRGB by LittleCMS (Pillow's ImageCms, relative colorimetric, as our
    decoder does) before it is compared. Median PSNR (dB) and median bytes
    of each side, and each photo's."""
    import io
    import urllib.request
    from PIL import Image
    from bench_quality import psnr, viewed
    out = {"ours": [], "thumbor": [], "ours_bytes": [], "thumbor_bytes": []}
    for s in srcs:
        src = viewed(Image.open(os.path.join(folder, s.rsplit("/", 1)[1])))
        for side, url in (("ours", OURS + our_path(s + "%3Fpsnr", "jpeg")),
                          ("thumbor", THUMBOR + thumbor_path(s + "%3Fpsnr", "jpeg"))):
            data = urllib.request.urlopen(url, timeout=120).read()
            got = viewed(Image.open(io.BytesIO(data)))
            out[side].append(psnr(got, src.resize(got.size, Image.LANCZOS)))
            out[side + "_bytes"].append(len(data))
    med = {k: statistics.median(v) for k, v in out.items()}
    print(f"JPEG q80 against Pillow's exact Lanczos-3 ({len(srcs)} {what}): ours {med['ours']:.1f} dB at "
          f"{med['ours_bytes'] / 1024:.1f} KiB, thumbor {med['thumbor']:.1f} dB at {med['thumbor_bytes'] / 1024:.1f} KiB "
          "(medians)")
    med["photos"] = [{"source": s.rsplit("/", 1)[1], "ours_db": round(out["ours"][i], 2),
                      "ours_bytes": out["ours_bytes"][i], "thumbor_db": round(out["thumbor"][i], 2),
                      "thumbor_bytes": out["thumbor_bytes"][i]} for i, s in enumerate(srcs)]
    return med


def main():
    n = int(os.environ.get("REQUESTS", "350"))
    srcs = [f"{ORIGIN}/photos/{files[i % len(files)]}" for i in range(n)]
    # warm-up: code paths, connections, the codecs (not counted)
    load(OURS, [our_path(s + f"%3Fw%3D{i}", "webp") for i, s in enumerate(srcs[:32])], keepalive=False)
    load(THUMBOR, [thumbor_path(s + f"%3Fw%3D{i}", "webp") for i, s in enumerate(srcs[:32])], keepalive=False)
    results = {}
    for fmt in ("webp", "jpeg"):
        tag = {"webp": "webp", "jpeg": "jpeg"}[fmt]
        # the source URLs of each format's rows are their own (?n=FORMAT-RUN-I): ours
        # keeps every source it fetched on disk, so a JPEG row asking for the
        # WebP row's sources would read them from there while thumbor fetches
        # them again
        results[f"thumbor {fmt}"] = row(f"thumbor 7.8, {fmt} q80, renders", THUMBOR, THUMBOR_PIDS,
                                        lambda r, fmt=fmt: [thumbor_path(s + f"%3Fn%3D{fmt}-{r}-{i}", fmt)
                                                            for i, s in enumerate(srcs)])
        results[f"ours {fmt}"] = row(f"sdimage serve, {fmt} q80, renders", OURS, OUR_PIDS,
                                     lambda r, fmt=fmt, tag=tag: [our_path(s + f"%3Fn%3D{fmt}-{r}-{i}", tag)
                                                                  for i, s in enumerate(srcs)],
                                     floor_format=fmt)
    # hits: the same URLs 60 times over (21,000 requests, a run of a second or two: at 7,000 one
    # pause of the machine moved the row by a third); ours caches results, thumbor's result storage is off
    cached = [our_path(s + f"%3Fn%3Dwebp-0-{i}", "webp") for i, s in enumerate(srcs)]
    results["ours hits"] = row("sdimage serve, result-cache hits (keep-alive)", OURS, OUR_PIDS, lambda r: cached * 60,
                               keepalive=True)
    results["psnr"] = quality(srcs[:24], PHOTOS, "generated photos")
    real = os.path.join(os.path.dirname(PHOTOS), "real")
    results["psnr_real"] = quality([f"{ORIGIN}/real/{n}" for n in sorted(os.listdir(real))], real,
                                   "real photographs")
    json.dump(results, open(OUT, "w"), indent=1)
    for fmt in ("webp", "jpeg"):
        t, o = results[f"thumbor {fmt}"], results[f"ours {fmt}"]
        print(f"{fmt}: ours / thumbor throughput {o['rps'] / t['rps']:.2f}x, p99 {o['p99']:.0f} vs {t['p99']:.0f} ms, "
              f"peak RSS {o['rss_mb']:.0f} vs {t['rss_mb']:.0f} MiB"
              + (f", ours / our floor {o['vs_floor']:.2f}x (run by run)" if "vs_floor" in o else ""))


if __name__ == "__main__":
    main()
