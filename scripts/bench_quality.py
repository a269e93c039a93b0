"""bench_quality.py — how the serve benchmarks compare a thumbnail with its reference.

Imported by bench_serve.py (Debian's Pillow) and bench_jpeg_settings.py
(build/bench-venv's): colours as a viewer shows them, and PSNR in RGB.
"""
import io
import math

from PIL import ImageChops, ImageCms, ImageStat

_SRGB = ImageCms.createProfile("sRGB")


def viewed(im):
    """`im` in RGB as a viewer shows it: a picture with an ICC profile is
    converted to sRGB by LittleCMS (relative colorimetric, as our decoder
    does); one without is taken as sRGB."""
    icc, rgb = im.info.get("icc_profile"), im.convert("RGB")
    if not icc:
        return rgb
    return ImageCms.profileToProfile(rgb, ImageCms.ImageCmsProfile(io.BytesIO(icc)), _SRGB,
                                     renderingIntent=ImageCms.Intent.RELATIVE_COLORIMETRIC, outputMode="RGB")


def psnr(a, b):
    """PSNR in dB of two RGB images of one size (99 when equal)."""
    mse = sum(v * v for v in ImageStat.Stat(ImageChops.difference(a, b)).rms) / 3
    return 99.0 if mse == 0 else 10 * math.log10(255 * 255 / mse)
