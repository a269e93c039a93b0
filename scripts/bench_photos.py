#!/usr/bin/env python3
"""bench_photos.py DIR — real photographs for `make bench-serve`'s quality row.

The generated photos of the throughput rows (`sdimage samples`) are smooth:
on them every encoder setting lands within a fraction of a dB. This writes
real photographs into DIR as JPEGs: the colour and texture photos that
scikit-image ships in its wheel (PyPI, downloaded once into DIR/.wheel; the
wheel's PNGs are written as JPEG q95 4:2:0 by Pillow, its JPEGs copied as
they are, an Adobe RGB profile included). Run by build/bench-venv's Python
(Pillow). The corpus' exif-orientation photos are added by bench-serve.sh.
"""
import io
import os
import subprocess
import sys
import zipfile

from PIL import Image

WHEEL = "scikit-image==0.26.0"
PHOTOS = ["astronaut.png", "brick.png", "chelsea.png", "coffee.png", "grass.png", "gravel.png", "ihc.png",
          "motorcycle_left.png", "motorcycle_right.png", "hubble_deep_field.jpg", "retina.jpg", "rocket.jpg"]


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    if all(os.path.exists(os.path.join(out, p.rsplit(".", 1)[0] + ".jpg")) for p in PHOTOS):
        return
    cache = os.path.join(out, ".wheel")
    wheels = [f for f in os.listdir(cache) if f.endswith(".whl")] if os.path.isdir(cache) else []
    if not wheels:
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", cache, WHEEL], check=True)
        wheels = [f for f in os.listdir(cache) if f.endswith(".whl")]
    with zipfile.ZipFile(os.path.join(cache, wheels[0])) as z:
        for p in PHOTOS:
            data = z.read("skimage/data/" + p)
            name = os.path.join(out, p.rsplit(".", 1)[0] + ".jpg")
            if p.endswith(".jpg"):
                open(name, "wb").write(data)
            else:
                Image.open(io.BytesIO(data)).convert("RGB").save(name, quality=95)


if __name__ == "__main__":
    main()
