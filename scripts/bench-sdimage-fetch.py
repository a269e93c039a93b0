#!/usr/bin/python3
"""make bench-fetch-cli: `sdimage fetch` measured from outside, as a user runs it.

A few hundred generated photo JPEGs served by nginx on loopback (the bench
server of `sdcore-bench fetch`); each mode is a separate `sdimage fetch`
process, timed from outside (start to exit, so process start-up, the disk
writes the cold run waits for and tear-down are in it) with its peak RSS
from wait4. Rounds interleave the modes, so drift hits all alike:

  no cache     --no-cache, concurrency 6 (the baseline)
  cold         an empty cache folder of its own, concurrency 6
  warm         the same folder again: every image from disk
  no cache 32  --no-cache, concurrency 32, against one thread decoding the
               same files with TurboJPEG (`sdcore-bench decode --corpus
               DIR --baseline-only`: tjDecompress2 into one reused,
               pre-faulted buffer, best of three per file), and against
               two threads doing the same from memory (`--threads 2`: each
               its own buffer, pre-faulted before timing and kept across
               rounds, best of three rounds) — the floor on two cores with
               no network and no library

Every run starts with no dirty pages (an untimed sync before it): a cold
run's own write() calls are in its time, but the kernel's writeback of them
comes later and would otherwise land in whichever run came next.

Cache folders live under $SD_BENCH_DIR (default $TMPDIR or /tmp) and are
removed only at the end: on ext4 without a journal, creating files right
after deleting many is slow (the allocator skips recently freed inodes),
which a real cold start does not pay.
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SDIMAGE = os.environ.get("SDIMAGE", os.path.join(ROOT, ".build/release/sdimage"))
SDCORE_BENCH = os.environ.get("SDCORE_BENCH", os.path.join(ROOT, "build/release/sdcore-bench"))
COUNT = int(os.environ.get("COUNT", "400"))
ROUNDS = int(os.environ.get("ROUNDS", "3"))


def start_server(work):
    handshake = os.path.join(work, "server")
    proc = subprocess.Popen([SDCORE_BENCH, "fetch", "--count", str(COUNT), "--only", "serve",
                             "--keep-server", handshake], stdout=subprocess.DEVNULL)
    for _ in range(600):
        if os.path.exists(handshake) and os.path.getsize(handshake) > 0:
            base, n = open(handshake).read().split()
            return proc, handshake, base, int(n)
        if proc.poll() is not None:
            sys.exit("bench-sdimage-fetch: the bench server did not start")
        time.sleep(0.1)
    sys.exit("bench-sdimage-fetch: the bench server did not answer")


def nginx_cpu_seconds(base):
    """CPU seconds (user + system) used so far by the nginx serving `base`
    (master and workers: servers.sh starts it detached, so it is found by
    the folder its command line names, whose env file gives its URL)."""
    procs = {}
    for d in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{d}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{d}/cmdline", "rb") as f:
                cmd = f.read().decode(errors="replace").replace("\0", " ")
        except OSError:
            continue
        procs[int(d)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"), cmd)
    masters = set()
    for pid, (_, _, cmd) in procs.items():
        words = cmd.split()
        if cmd.startswith("nginx: master") and "-p" in words:
            try:
                with open(os.path.join(words[words.index("-p") + 1], "env")) as f:
                    if f"SD_TEST_HTTP={base}\n" in f.read():
                        masters.add(pid)
            except (OSError, IndexError):
                pass
    return sum(cpu for pid, (ppid, cpu, _) in procs.items() if pid in masters or ppid in masters)


def run(args):
    """One sdimage fetch process: (seconds from start to exit, peak RSS MB, summary)."""
    os.sync()  # untimed: the last cold run's writeback is not charged to this one
    t0 = time.monotonic()
    proc = subprocess.Popen([SDIMAGE, "fetch", "--json"] + args, stdout=subprocess.PIPE)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.monotonic() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"bench-sdimage-fetch: sdimage fetch {' '.join(args)} failed")
    return seconds, usage.ru_maxrss / 1024, json.loads(out)


def main():
    for tool in (SDIMAGE, SDCORE_BENCH):
        if not os.access(tool, os.X_OK):
            sys.exit(f"bench-sdimage-fetch: {tool} is missing (make build-c; swift build -c release --product sdimage)")
    parent = os.environ.get("SD_BENCH_DIR", tempfile.gettempdir())
    work = tempfile.mkdtemp(prefix="sdimage-bench-fetch-", dir=parent)
    server = None
    try:
        server, handshake, base, n = start_server(work)
        urls = [f"{base}/img/p{i:03d}.jpg" for i in range(n)]
        listing = os.path.join(work, "urls.txt")
        with open(listing, "w") as f:
            f.write("\n".join(urls) + "\n")
        files = os.path.join(work, "files")
        os.mkdir(files)
        for i, url in enumerate(urls):  # the same bytes, for the decode baseline
            with urllib.request.urlopen(url) as r, open(os.path.join(files, f"p{i:03d}.jpg"), "wb") as f:
                f.write(r.read())
        megabytes = sum(os.path.getsize(os.path.join(files, x)) for x in os.listdir(files)) / 1e6

        nginx_cpu = []
        modes = {"no cache": [], "cold": [], "warm": [], "no cache, 32 in flight": []}
        for r in range(ROUNDS):
            cache = os.path.join(work, f"cache-{r}")
            common = ["--list", listing, "--concurrency", "6"]
            modes["no cache"].append(run(common + ["--no-cache"]))
            modes["cold"].append(run(common + ["--cache-dir", cache]))
            modes["warm"].append(run(common + ["--cache-dir", cache]))
            before = nginx_cpu_seconds(base)
            modes["no cache, 32 in flight"].append(run(["--list", listing, "--concurrency", "32", "--no-cache"]))
            nginx_cpu.append(nginx_cpu_seconds(base) - before)
        expect = {"no cache": "network", "cold": "network", "warm": "disk", "no cache, 32 in flight": "network"}
        for name, samples in modes.items():
            for _, _, s in samples:
                if s["ok"] != n or s[expect[name]] != n:
                    sys.exit(f"bench-sdimage-fetch: {name}: {s['ok']} of {n} loaded, {s[expect[name]]} from {expect[name]}")

        decode = json.loads(subprocess.run([SDCORE_BENCH, "decode", "--corpus", files, "--baseline-only", "--quick"],
                                           capture_output=True, check=True, text=True).stdout)
        tj_seconds = decode["seconds"]
        floor = json.loads(subprocess.run([SDCORE_BENCH, "decode", "--corpus", files, "--baseline-only", "--threads", "2"],
                                          capture_output=True, check=True, text=True).stdout)
        floor_seconds = floor["seconds"]

        def ips(samples):
            return statistics.median(n / s for s, _, _ in samples)

        base_ips = ips(modes["no cache"])
        print(f"sdimage fetch, {n} photo JPEGs ({megabytes:.0f} MB) from nginx on loopback, "
              f"median of {ROUNDS} runs each (interleaved), each run a process timed start to exit")
        print(f"cache folders under {parent}\n")
        print(f"{'':30} {'images/s':>9} {'vs no cache':>12} {'peak RSS MB':>12}")
        for name in ("no cache", "cold", "warm"):
            s = modes[name]
            print(f"{name + ', 6 in flight':30} {ips(s):9.0f} {ips(s) / base_ips:12.3f} "
                  f"{statistics.median(m for _, m, _ in s):12.0f}")
        c32 = modes["no cache, 32 in flight"]
        c32_seconds = statistics.median(s for s, _, _ in c32)
        print(f"\nno cache, 32 in flight: {c32_seconds:.3f} s ({n / c32_seconds:.0f} images/s, peak RSS "
              f"{statistics.median(m for _, m, _ in c32):.0f} MB; nginx meanwhile used "
              f"{statistics.median(nginx_cpu):.2f} s of CPU)")
        print(f"one thread decoding the same files with tjDecompress2 (reused pre-faulted buffer): "
              f"{tj_seconds:.3f} s")
        print(f"two threads decoding them from memory with tjDecompress2 (each its own reused pre-faulted buffer): "
              f"{floor_seconds:.3f} s, {floor_seconds / tj_seconds:.3f} of one thread (the two-core floor)")
        print(f"ratio (fetch + decode on every core / one-thread decode): {c32_seconds / tj_seconds:.3f}   "
              f"target <= 0.55 (two cores: 0.5)")
        print(f"fetch + decode on every core / two threads only decoding: {c32_seconds / floor_seconds:.3f} "
              f"(what the network, nginx and the whole library add: {c32_seconds - floor_seconds:.3f} s)")
        if os.environ.get("JSON"):
            print(json.dumps({"images": n, "no_cache_ips": base_ips, "cold_ips": ips(modes["cold"]),
                              "warm_ips": ips(modes["warm"]), "c32_seconds": c32_seconds,
                              "turbojpeg_seconds": tj_seconds, "turbojpeg_two_threads_seconds": floor_seconds}))
    finally:
        if server:
            open(handshake + ".stop", "w").close()
            server.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
