#!/usr/bin/env python3
"""gallery_check.py — drive a desktop gallery in a real X server and check
what it shows, screenshot by screenshot.

The gallery writes, after every painted frame, where each visible cell is
(window coordinates) and which URL it shows (--layout). At the start and
after each synthetic scroll (xdotool wheel events) this waits until every
visible cell has its image, takes a screenshot of the X screen (ImageMagick
`import`), and compares each fully visible cell with the image its URL
names, decoded by `sdimage decode --frames --max-pixel-size CELL --raw` (the
same thumbnail, premultiplied, every frame of an animation) and composited
over the gallery's background. A cell passes when its size matches and the
mean difference from one of its frames is under 2/255 per channel while the
best *other* image in view differs by more (the comparison can tell images
apart). With --expect-playing, animated cells are screenshotted again 0.3 s
later and at least one must show another of its frames.

Every cell reports the size of the bitmap decoded for it: none may hold
more than 1.5 times the pixels of its cell (the cells decode at their own
size). A URL of the fault server's /drip-file with a `gate=` is held back
until the check opens the gate: with --expect-indicator the first
screenshot is taken while it is held, and its cell must show a turning
indicator (light pixels in its centre that change from one screenshot to
the next). Prints `N passed, N failed`; leaves the screenshots in --out.
"""
import argparse
import os
import subprocess
import sys
import time
import urllib.parse
import urllib.request

from PIL import Image, ImageChops, ImageStat

BG = (0x20, 0x30, 0x40)


FAILURES = []


def fail(msg):
    """Print a failure, marked FAIL (gallery-check.sh repeats those lines last);
    kept, so that a failed run always says at least once why."""
    FAILURES.append(msg)
    print(f"gallery-check: FAIL {msg}")


def read_layout(path):
    try:
        lines = open(path).read().splitlines()
    except OSError:
        return None
    if not lines or not lines[0].startswith("viewport"):
        return None
    v = lines[0].split()
    view = tuple(int(x) for x in v[1:5])
    cells = []
    for line in lines[1:]:
        # cell INDEX X Y W H LOADED DECODED_W DECODED_H SCALE BOX_X BOX_Y BOX_W BOX_H URL
        p = line.split(" ", 14)
        if len(p) == 15 and p[0] == "cell":
            cells.append({"index": int(p[1]), "rect": tuple(int(x) for x in p[2:6]), "loaded": p[6] == "1",
                          "decoded": (int(p[7]), int(p[8])), "scale": int(p[9]),
                          "box": tuple(int(x) for x in p[10:14]), "url": p[14]})
    return {"view": view, "cells": cells, "failures": int(v[6]) if len(v) > 6 else 0}


def inside(rect, view):
    """Whether a cell's picture is wholly in view. One of no size is not: GTK's
    grid can report a row it has just created at the bottom edge with its
    pictures unallocated (0x0) while the screen shows them cut by the edge
    (a CI run at 3b99139 checked four such cells as if whole, and failed)."""
    x, y, w, h = rect
    vx, vy, vw, vh = view
    return w > 0 and h > 0 and x >= vx and y >= vy and x + w <= vx + vw and y + h <= vy + vh


def held(url):
    """A URL the fault server holds back until its gate is opened."""
    return "/drip-file?" in url and "gate=" in url


def open_gates(urls, since=None):
    """Let every held URL in `urls` finish (GET /open?gate=NAME on its server).
    `since`: when the gallery started (the time held is printed)."""
    if urls and since is not None:
        print(f"gallery-check: gates opened {time.time() - since:.1f} s after the gallery started")
    for u in {u for u in urls if held(u)}:
        parts = urllib.parse.urlsplit(u)
        gate = urllib.parse.parse_qs(parts.query)["gate"][0]
        try:
            urllib.request.urlopen(f"{parts.scheme}://{parts.netloc}/open?gate={gate}", timeout=30).read()
        except OSError as e:
            print(f"gallery-check: could not open gate {gate}: {e}")


def layout_key(lay):
    """Which cells a layout shows, and where."""
    return sorted((c["index"], c["rect"]) for c in lay["cells"]) if lay else None


def first_visible(lay):
    visible = [c["index"] for c in lay["cells"] if inside(c["rect"], lay["view"])]
    return min(visible) if visible else -1


def wait_settled(path, timeout, waiting=frozenset(), away_from=None):
    """The layout once every visible cell is loaded (but those whose URL is
    in `waiting`, which must be in view and not loaded) and it stayed so for 0.5 s.
    After a scroll, `away_from` is the first visible cell before it: a layout
    still showing it first is not settled (the gallery may not have had the
    CPU to take the scroll in yet; on a starved machine that is seconds)."""
    deadline = time.time() + timeout
    last, since = None, None
    while time.time() < deadline:
        lay = read_layout(path)
        if lay and lay["cells"] and all(c["loaded"] != (c["url"] in waiting) for c in lay["cells"]) \
                and waiting <= {c["url"] for c in lay["cells"]} \
                and (away_from is None or first_visible(lay) != away_from):
            key = layout_key(lay)
            if key != last:
                last, since = key, time.time()
            elif time.time() - since >= 0.5:
                return lay
        else:
            last = None
        time.sleep(0.05)
    return read_layout(path)


class Expected:
    def __init__(self, sdimage, www, cell, tmp):
        self.sdimage, self.www, self.cell, self.tmp, self.cache = sdimage, www, cell, tmp, {}

    def get(self, url):
        """Every frame of the image `url` names (one for a still image), as
        the gallery should show it: the same thumbnail, over the background.
        A URL under /missing/ fails to load: the SDL gallery's failure image
        (a 96x96 red square for a 128 px cell)."""
        if url in self.cache:
            return self.cache[url]
        if "/missing/" in url:
            side = max(1, self.cell * 3 // 4)
            self.cache[url] = [Image.new("RGB", (side, side), (0xC0, 0x30, 0x30))]
            return self.cache[url]
        name = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)["name"][0] if held(url) else url
        src = os.path.join(self.www, name.rsplit("/", 1)[1])
        raw = os.path.join(self.tmp, "expected.raw")
        r = subprocess.run([self.sdimage, "decode", src, "--frames", "--max-pixel-size", str(self.cell), "--raw", raw],
                           capture_output=True, text=True)
        sizes = [tuple(int(x) for x in line.split()[2].split("x")) for line in r.stderr.splitlines()
                 if line.startswith("frame ")]
        data, off, frames = open(raw, "rb").read(), 0, []
        for w, h in sizes:
            prem = Image.frombytes("RGBA", (w, h), data[off:off + w * h * 4], "raw", "BGRA")  # premultiplied
            off += w * h * 4
            r_, g_, b_, a_ = prem.split()
            inv = a_.point(lambda v: 255 - v)
            bg = Image.new("RGB", (w, h), BG)
            under = ImageChops.multiply(bg, Image.merge("RGB", (inv, inv, inv)))  # bg * (255 - a) / 255
            frames.append(ImageChops.add(Image.merge("RGB", (r_, g_, b_)), under))
        self.cache[url] = frames
        return frames


def best(crop, frames):
    """(difference, frame index) of the frame `crop` is closest to."""
    return min((diff(crop, f), i) for i, f in enumerate(frames))


def diff(a, b):
    if a.size != b.size:
        return 255.0
    return sum(ImageStat.Stat(ImageChops.difference(a, b)).mean) / 3


def light(img):
    """How many pixels of `img` are light (an indicator on the dark cells)."""
    return sum(1 for p in img.getdata() if min(p) >= 0xA0)


def indicator_shown(a, env, lay, url):
    """The cell of the held `url`: light pixels in its centre (the indicator;
    the placeholder and the background are dark) that change between two
    screenshots (it turns). Up to 40 tries 0.25 s apart."""
    c = next(c for c in lay["cells"] if c["url"] == url)
    bx, by, bw, bh = c["box"]
    centre = (bx + bw // 2 - 20, by + bh // 2 - 20, bx + bw // 2 + 20, by + bh // 2 + 20)
    first = None
    for i in range(40):
        png = os.path.join(a.out, f"{a.name}-indicator{'' if first is None else '-b'}.png")
        subprocess.run(["import", "-display", a.display, "-window", "root", png], check=True, env=env)
        crop = Image.open(png).convert("RGB").crop(centre)
        n = light(crop)
        if first is None:
            if n >= 10:
                first = crop
                continue
        elif n >= 10 and diff(crop, first) > 0.5:
            print(f"gallery-check: {a.name}: cell {c['index']} (held back): an indicator, {n} light pixels, turning")
            return True
        time.sleep(0.25)
    fail(f"{a.name}: cell {c['index']} (held back): no turning indicator "
         f"({'none light' if first is None else 'it did not move'})")
    return False


def stop(proc):
    """End the gallery: SIGTERM, then SIGKILL after 10 s."""
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


def cpu_seconds(pid):
    """User + system CPU time of `pid` so far (/proc/PID/stat)."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def idle_cpu(a, env, exp):
    """The gallery on the still images of its list only: once every visible
    cell is shown and nothing moves, its CPU time over 5 s must stay within
    1% of a core. Returns the failures (0 or 1)."""
    args = list(a.gallery)
    src = args[args.index("--list") + 1]
    urls = [u for u in open(src).read().split() if "/missing/" not in u and len(exp.get(u)) == 1]
    still_list = os.path.join(a.out, a.name + "-stills.txt")
    open(still_list, "w").write("\n".join(urls) + "\n")
    args[args.index("--list") + 1] = still_list
    layout = os.path.join(a.out, a.name + "-idle-layout.txt")
    if os.path.exists(layout):
        os.remove(layout)
    proc = subprocess.Popen(args + ["--layout", layout], env=env)
    try:
        lay = wait_settled(layout, a.timeout)
        if lay is None or not lay["cells"] or not all(c["loaded"] for c in lay["cells"]):
            fail(f"{a.name}: idle: the still images did not all show")
            return 1
        time.sleep(1.0)  # the last fade ends
        before = cpu_seconds(proc.pid)
        time.sleep(5.0)
        used = cpu_seconds(proc.pid) - before
        print(f"gallery-check: {a.name}: idle with {len(lay['cells'])} still cells: {used * 1000:.0f} ms of CPU in 5 s "
              f"({used / 5 * 100:.2f}% of a core; limit 1%)")
        if used > 0.05:
            fail(f"{a.name}: idle: {used * 1000:.0f} ms of CPU in 5 s, limit 50")
            return 1
        return 0
    finally:
        stop(proc)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--www", required=True)
    ap.add_argument("--sdimage", required=True)
    ap.add_argument("--display", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--name", default="gtk")
    ap.add_argument("--cell", type=int, default=128)
    ap.add_argument("--scrolls", type=int, default=4)
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--expect-playing", action="store_true",
                    help="animations must play: an animated cell shows another frame a moment later")
    ap.add_argument("--expect-indicator", action="store_true",
                    help="a held-back URL's cell must show a turning indicator in the first screenshot")
    ap.add_argument("--idle-cpu", action="store_true",
                    help="then run the gallery on the still images alone: once they are shown, it may use at most "
                         "1%% of a core over 5 s (CPU time, which a loaded machine does not inflate)")
    ap.add_argument("gallery", nargs=argparse.REMAINDER, help="-- the gallery's command line (without --layout)")
    a = ap.parse_args()
    a.gallery = [x for x in a.gallery if x != "--"] if a.gallery and a.gallery[0] == "--" else a.gallery
    if not a.gallery:
        ap.error("the gallery's command line is missing")
    os.makedirs(a.out, exist_ok=True)
    env = dict(os.environ, DISPLAY=a.display, GDK_BACKEND="x11", GSK_RENDERER="cairo", NO_AT_BRIDGE="1",
               GTK_A11Y="none", SDL_VIDEODRIVER="x11")
    layout = os.path.join(a.out, a.name + "-layout.txt")
    if os.path.exists(layout):
        os.remove(layout)
    started = time.time()
    proc = subprocess.Popen(a.gallery + ["--layout", layout], env=env)
    exp = Expected(a.sdimage, a.www, a.cell, a.out)
    # URLs under /missing/ are expected to fail, and to show the failure image
    listed = open(a.gallery[a.gallery.index("--list") + 1]).read().split()
    expected_failures = sum("/missing/" in u for u in listed)
    passed = failed = 0
    first_seen = []
    seen_animated = playing = 0
    most = 0.0  # the largest decoded pixels / cell pixels seen
    holding = frozenset(u for u in listed if held(u))
    try:
        if holding and a.expect_indicator:
            lay = wait_settled(layout, a.timeout, waiting=holding)
            if not lay or not lay["cells"]:
                fail(f"{a.name}: no layout after {a.timeout} s (the held-back cell)")
                failed += 1
            elif not holding <= {c["url"] for c in lay["cells"]}:
                fail(f"{a.name}: the held-back cell is not in view")
                failed += 1
            elif all(indicator_shown(a, env, lay, u) for u in holding):
                passed += 1
            else:
                failed += 1
        open_gates(holding, started)
        before = None  # the first visible cell before the last scroll
        for shot in range(a.scrolls + 1):
            png = os.path.join(a.out, f"{a.name}-{shot}.png")
            for _ in range(5):  # a screenshot of a layout that did not change while it was taken
                lay = wait_settled(layout, a.timeout, away_from=before)
                if lay is None or not lay["cells"]:
                    break
                subprocess.run(["import", "-display", a.display, "-window", "root", png], check=True, env=env)
                if layout_key(read_layout(layout)) == layout_key(lay):
                    break
                print(f"gallery-check: {a.name} shot {shot}: the layout changed during the screenshot; again")
            if lay is None or not lay["cells"]:
                fail(f"{a.name}: no layout after {a.timeout} s")
                failed += 1
                break
            screen = Image.open(png).convert("RGB")
            visible = [c for c in lay["cells"] if inside(c["rect"], lay["view"])]
            first_seen.append(first_visible(lay))
            crops = {}
            for c in visible:
                x, y, w, h = c["rect"]
                crops[c["index"]] = screen.crop((x, y, x + w, y + h))
            animated = {}
            for c in visible:
                crop = crops[c["index"]]
                frames = exp.get(c["url"])
                d, frame = best(crop, frames)
                others = [best(crop, exp.get(o["url"]))[0] for o in visible if o["url"] != c["url"]]
                nearest_other = min(others) if others else 255.0
                ok = c["loaded"] and d < 2.0 and nearest_other > d + 2.0
                if "/missing/" not in c["url"]:  # decoded at the cell's size, not the image's
                    dw, dh = c["decoded"]
                    _, _, bw, bh = c["box"]
                    ratio = dw * dh / max(1, bw * bh * c["scale"] ** 2)
                    most = max(most, ratio)
                    if dw * dh == 0 or ratio > 1.5:
                        ok = False
                        fail(f"{a.name} shot {shot} cell {c['index']}: decoded {dw}x{dh} for a "
                              f"{bw}x{bh} cell (scale {c['scale']}): {ratio:.2f} of its pixels, limit 1.5")
                if ok:
                    passed += 1
                    if len(frames) > 1:
                        animated[c["index"]] = (c, frame)
                else:
                    failed += 1
                    fail(f"{a.name} shot {shot} cell {c['index']} {c['url']}: loaded {c['loaded']}, "
                         f"diff {d:.2f}, nearest other image {nearest_other:.2f}, size {crop.size}")
            if animated:  # a moment later: does an animation show another frame (and still its own)?
                time.sleep(0.3)
                png2 = os.path.join(a.out, f"{a.name}-{shot}b.png")
                subprocess.run(["import", "-display", a.display, "-window", "root", png2], check=True, env=env)
                later = Image.open(png2).convert("RGB")
                for index, (c, frame) in animated.items():
                    x, y, w, h = c["rect"]
                    d, frame2 = best(later.crop((x, y, x + w, y + h)), exp.get(c["url"]))
                    seen_animated += 1
                    if d < 2.0 and frame2 != frame:
                        playing += 1
                    print(f"gallery-check: {a.name} shot {shot} animated cell {index}: frame {frame}, "
                          f"0.3 s later frame {frame2} (diff {d:.2f})")
            if lay["failures"] > expected_failures:
                fail(f"{a.name}: {lay['failures']} images failed to load ({expected_failures} expected)")
                failed += lay["failures"] - expected_failures
            if shot < a.scrolls:
                before = first_seen[-1]
                vx, vy, vw, vh = lay["view"]
                subprocess.run(["xdotool", "mousemove", str(vx + vw // 2), str(vy + vh // 2),
                                "click", "--repeat", "6", "--delay", "40", "5"], check=True, env=env)
        if a.expect_playing and seen_animated and not playing:
            fail(f"{a.name}: {seen_animated} animated cells checked, none seen playing")
            failed += 1
        if a.expect_playing and not seen_animated:
            fail(f"{a.name}: no animated cell was in view")
            failed += 1
        moved = all(b > a_ for a_, b in zip(first_seen, first_seen[1:]))
        if not moved:
            fail(f"{a.name}: scrolling did not move on: first visible cells {first_seen}")
            failed += 1
    finally:
        open_gates(holding)
        stop(proc)
    print(f"gallery-check: {a.name}: largest decoded bitmap {most:.2f} of its cell's pixels (limit 1.5)")
    if a.idle_cpu:
        failed += idle_cpu(a, env, exp)
    print(f"gallery-check: {a.name}: first visible cell per screenshot {first_seen}")
    print(f"{passed} passed, {failed} failed")
    if (failed or not passed) and not FAILURES:
        fail(f"{a.name}: {passed} checks passed, {failed} failed")
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
