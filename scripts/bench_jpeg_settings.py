#!/usr/bin/env python3
"""bench_jpeg_settings.py SDIMAGE DIR — which JPEG settings buy PSNR on real photos.

Run at the end of `make bench-serve` by build/bench-venv's Python (Pillow,
whose libjpeg-turbo writes the same bytes as our encoder at the same
settings: the first row checks that against `sdimage decode --out`). For
each photo in DIR: our 256-px thumbnail's pixels (`sdimage decode
--max-pixel-size 256`, the decode `sdimage serve` does for fit-in 256x256;
the last row with `--shrink-margin 1`), encoded by Pillow at each setting; PSNR against Pillow's Lanczos-3 of the
whole source, colours through each picture's ICC profile to sRGB as in
bench_serve.py's quality rows. Prints median PSNR and median and total
bytes per setting, and the same for thumbor 7.8's JPEG (its Pillow engine's
steps: draft to the box, Lanczos, q80 optimized progressive 4:2:0, the
source's profile kept).
"""
import io
import os
import statistics
import subprocess
import sys
import tempfile

from PIL import Image, ImageChops

from bench_quality import psnr, viewed

SDIMAGE, DIR = sys.argv[1], sys.argv[2]


def jpeg(im, **kw):
    b = io.BytesIO()
    im.save(b, "JPEG", **kw)
    return b.getvalue()


SETTINGS = [("4:2:0 q80 optimized (ours)", dict(quality=80, optimize=True))]
SETTINGS += [(f"4:2:0 q{q} optimized", dict(quality=q, optimize=True)) for q in (84, 90)]
SETTINGS += [(f"4:4:4 q{q} optimized", dict(quality=q, optimize=True, subsampling=0)) for q in (65, 70, 75, 80, 90)]
MARGIN1 = "margin 1: 4:2:0 q80 optimized"


def main():
    rows = {name: [] for name, _ in [("thumbor 7.8 (its Pillow steps)", None)] + SETTINGS + [(MARGIN1, None)]}
    same = True
    with tempfile.TemporaryDirectory() as tmp:
        for n in sorted(os.listdir(DIR)):
            raw = open(os.path.join(DIR, n), "rb").read()
            src = viewed(Image.open(io.BytesIO(raw)))
            png, ours = os.path.join(tmp, "t.png"), os.path.join(tmp, "t.jpg")
            subprocess.run([SDIMAGE, "decode", "--max-pixel-size", "256", "--png", png, os.path.join(DIR, n)],
                           check=True, capture_output=True)
            subprocess.run([SDIMAGE, "decode", "--max-pixel-size", "256", "--out", ours, "--quality", "80",
                            os.path.join(DIR, n)], check=True, capture_output=True)
            px = Image.open(png).convert("RGB")
            png1 = os.path.join(tmp, "t1.png")
            subprocess.run([SDIMAGE, "decode", "--max-pixel-size", "256", "--shrink-margin", "1", "--png", png1,
                            os.path.join(DIR, n)], check=True, capture_output=True)
            px1 = Image.open(png1).convert("RGB")
            im = Image.open(io.BytesIO(raw))
            icc = im.info.get("icc_profile")
            w, h = im.size
            s = min(256 / w, 256 / h)
            size = (max(1, round(w * s)), max(1, round(h * s)))
            im.draft(None, size)
            im = im.convert("RGB").resize(size, Image.LANCZOS)
            outs = [("thumbor 7.8 (its Pillow steps)", jpeg(im, quality=80, optimize=True, progressive=True,
                                                            icc_profile=icc))]
            outs += [(name, jpeg(px, **kw)) for name, kw in SETTINGS]
            outs.append((MARGIN1, jpeg(px1, quality=80, optimize=True)))
            for name, data in outs:
                got = viewed(Image.open(io.BytesIO(data)))
                rows[name].append((psnr(got, src.resize(got.size, Image.LANCZOS)), len(data)))
            # sdimage's own encoder at q80 (libjpeg's default tables: `sdimage decode --out`
            # does not optimize) against Pillow's at the same settings: the same pixels out
            mine = Image.open(ours).convert("RGB")
            theirs = Image.open(io.BytesIO(jpeg(px, quality=80))).convert("RGB")
            same = same and ImageChops.difference(mine, theirs).getbbox() is None
    count = len(next(iter(rows.values())))
    print(f"JPEG settings on our thumbnails' pixels, {count} real photographs (medians; total bytes):")
    for name, v in rows.items():
        print(f"  {name:32} {statistics.median(p for p, _ in v):5.1f} dB  {statistics.median(b for _, b in v) / 1024:5.1f} KiB"
              f"  {sum(b for _, b in v) / 1024:6.1f} KiB")
    print("  Pillow's encoder and `sdimage decode --out` at q80: " + ("the same pixels" if same else "DIFFERENT pixels"))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
