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

Then the quantization tables other encoders offer (libjpeg-turbo's cjpeg
-quant-table, mozjpeg's and libvips' quant_table, imgproxy's
IMGPROXY_JPEG_QUANT_TABLE): per photo, each table's PSNR at thumbor's file
size, interpolated along its quality curve (q30..q98, 4:2:0, optimized),
minus thumbor's PSNR; the median over the photos. Annex K is the standard
table (ours, thumbor's); mozjpeg's default is ImageMagick's; the flat table
minimises the squared error per bit (PSNR's own measure) and spends bits
on high frequencies the eye weighs less.
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

# base tables (natural order), luminance and chrominance, as libjpeg-turbo's
# cjpeg and mozjpeg's jcparam.c list them; scaled by quality as libjpeg does
TABLES = {
    "Annex K (libjpeg's)": (
        [16, 11, 10, 16, 24, 40, 51, 61, 12, 12, 14, 19, 26, 58, 60, 55, 14, 13, 16, 24, 40, 57, 69, 56, 14, 17, 22, 29,
         51, 87, 80, 62, 18, 22, 37, 56, 68, 109, 103, 77, 24, 35, 55, 64, 81, 104, 113, 92, 49, 64, 78, 87, 103, 121,
         120, 101, 72, 92, 95, 98, 112, 100, 103, 99],
        [17, 18, 24, 47, 99, 99, 99, 99, 18, 21, 26, 66, 99, 99, 99, 99, 24, 26, 56, 99, 99, 99, 99, 99, 47, 66, 99, 99,
         99, 99, 99, 99] + [99] * 32),
    "flat": ([16] * 64, [16] * 64),
    "ImageMagick's (mozjpeg's default)": (
        [16, 16, 16, 18, 25, 37, 56, 85, 16, 17, 20, 27, 34, 40, 53, 75, 16, 20, 24, 31, 43, 62, 91, 135, 18, 27, 31, 40,
         53, 74, 106, 156, 25, 34, 43, 53, 69, 94, 131, 189, 37, 40, 62, 74, 94, 124, 169, 238, 56, 53, 91, 106, 131, 169,
         226, 311, 85, 75, 135, 156, 189, 238, 311, 418],) * 2,
}


def scaled(table, q):
    f = 5000 // q if q < 50 else 200 - 2 * q
    return [min(255, max(1, (v * f + 50) // 100)) for v in table]


def at_size(curve, size):
    """PSNR at `size` bytes along `curve` [(bytes, psnr)], or None outside it."""
    curve = sorted(curve)
    for (s0, p0), (s1, p1) in zip(curve, curve[1:]):
        if s0 <= size <= s1:
            return p0 + (p1 - p0) * (size - s0) / max(1, s1 - s0)
    return None


def main():
    rows = {name: [] for name, _ in [("thumbor 7.8 (its Pillow steps)", None)] + SETTINGS + [(MARGIN1, None)]}
    gains = {name: [] for name in TABLES}
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
            ref = src.resize(px.size, Image.LANCZOS)
            # the tables as scaled here are libjpeg's own at the same quality
            k = TABLES["Annex K (libjpeg's)"]
            same = same and jpeg(px, quality=80, optimize=True) == jpeg(
                px, qtables=[scaled(k[0], 80), scaled(k[1], 80)], optimize=True, subsampling=2)
            thumbor_psnr, thumbor_size = rows["thumbor 7.8 (its Pillow steps)"][-1]
            for name, (luma, chroma) in TABLES.items():
                curve = []
                for q in range(30, 99, 4):
                    data = jpeg(px, qtables=[scaled(luma, q), scaled(chroma, q)], optimize=True, subsampling=2)
                    curve.append((len(data), psnr(viewed(Image.open(io.BytesIO(data))), ref)))
                got = at_size(curve, thumbor_size)
                if got is not None:
                    gains[name].append(got - thumbor_psnr)
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
    print("Quantization tables, 4:2:0 optimized, PSNR at thumbor's size minus thumbor's (median over the photos; range):")
    for name, g in gains.items():
        print(f"  {name:34} {statistics.median(g):+5.2f} dB  ({min(g):+.1f} .. {max(g):+.1f}; {len(g)} photos)")
    print("  Pillow's encoder and `sdimage decode --out` at q80, and the Annex K table scaled here and "
          "Pillow's quality=80: " + ("the same" if same else "DIFFERENT"))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
