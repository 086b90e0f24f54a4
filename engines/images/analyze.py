"""Measures of a picture answered as JSON (images.analyze): palette, metadata, hashes..."""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from engines.base import ChoiceEngine, EngineError
from engines.images._helpers import (
    SOCIAL_PRESETS,
    _hex,
    _luminance,
    _open,
    _parse_ratio,
    _reduced,
    _rgba,
)
from engines.images._io import _has_alpha, format_of, image_header

if TYPE_CHECKING:
    from PIL import Image


def _palette(image: Image.Image, inputs: dict[str, Any]) -> dict[str, Any]:
    import numpy as np
    from PIL import Image as PILImage

    pixels = np.asarray(_rgba(_reduced(image, 256))).reshape(-1, 4)
    opaque = pixels[pixels[:, 3] >= 128, :3]
    if not len(opaque):
        raise EngineError("The image is fully transparent: there are no colours to extract.")
    strip = PILImage.fromarray(np.ascontiguousarray(opaque.reshape(1, -1, 3)), "RGB")
    quantized = strip.quantize(inputs.get("count", 6), PILImage.Quantize.MEDIANCUT, kmeans=3)
    palette = quantized.getpalette() or []
    counts = sorted(quantized.getcolors() or [], key=lambda pair: (-pair[0], pair[1]))
    colours = []
    for count, index in counts:
        rgb = tuple(palette[index * 3 : index * 3 + 3])
        colours.append(
            {
                "hex": _hex(rgb),
                "rgb": list(rgb),
                "share": round(count / len(opaque), 4),
                "name": _nearest_name(rgb),
            }
        )
    return {"colors": colours, "count": len(colours)}


def _nearest_name(rgb: tuple[int, ...]) -> str:
    """The CSS colour name closest to ``rgb`` (by distance in RGB)."""
    from PIL import ImageColor

    def distance(name: str) -> int:
        other = ImageColor.getrgb(name)
        return sum((a - b) ** 2 for a, b in zip(rgb, other, strict=False))

    return min(sorted(ImageColor.colormap), key=distance)


# EXIF tags read by the metadata reader: (IFD, tag) -> output field.
_EXIF_FIELDS = {
    (None, 0x010F): "camera_make",
    (None, 0x0110): "camera_model",
    (None, 0x0131): "software",
    (None, 0x013B): "artist",
    (None, 0x8298): "copyright",
    (0x8769, 0xA434): "lens",
    (0x8769, 0x9003): "taken_at",
    (0x8769, 0x829A): "exposure_time",
    (0x8769, 0x829D): "f_number",
    (0x8769, 0x8827): "iso",
    (0x8769, 0x920A): "focal_length_mm",
}


def _metadata(image: Image.Image, inputs: dict[str, Any]) -> dict[str, Any]:
    with image_header(inputs["image"]) as raw:
        exif = raw.getexif()
        dpi = raw.info.get("dpi")
        fields = {name: _exif_value(exif, ifd, tag) for (ifd, tag), name in _EXIF_FIELDS.items()}
        return {
            "format": format_of(image),
            "width": image.width,
            "height": image.height,
            "mode": raw.mode,
            "has_alpha": _has_alpha(raw),
            "frames": getattr(raw, "n_frames", 1),
            "dpi": [round(float(v), 2) for v in dpi] if dpi else None,
            "icc_profile": "icc_profile" in raw.info,
            "orientation": exif.get(0x0112),
            **fields,
            "gps": _gps(exif.get_ifd(0x8825)),
            "exif_tags": len(exif) + len(exif.get_ifd(0x8769)) + len(exif.get_ifd(0x8825)),
        }


def _exif_value(exif: Any, ifd: int | None, tag: int) -> Any:
    value = (exif.get_ifd(ifd) if ifd else exif).get(tag)
    if value is None:
        return None
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if isinstance(value, str):
        return value.strip("\x00 ").strip() or None
    if tag == 0x829A:  # exposure time as photographers write it
        seconds = float(value)
        return f"1/{round(1 / seconds)}" if 0 < seconds < 1 else f"{seconds:g}"
    if tag == 0x8827 and isinstance(value, tuple):
        value = value[0]
    number = float(value)
    return int(number) if number.is_integer() else round(number, 2)


def _gps(gps: Any) -> dict[str, float | None] | None:
    """Latitude and longitude in decimal degrees (south and west negative), altitude in m."""
    try:
        latitude = _degrees(gps[2], gps.get(1, "N"), "S")
        longitude = _degrees(gps[4], gps.get(3, "E"), "W")
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        return None
    altitude = gps.get(6)
    if altitude is not None:
        altitude = round(float(altitude) * (-1 if gps.get(5) in (1, b"\x01") else 1), 1)
    return {"latitude": latitude, "longitude": longitude, "altitude_m": altitude}


def _degrees(dms: Any, reference: Any, negative: str) -> float:
    degrees, minutes, seconds = (float(part) for part in dms)
    value = degrees + minutes / 60 + seconds / 3600
    if isinstance(reference, bytes):
        reference = reference.decode("ascii", "replace")
    return round(-value if str(reference).strip().upper() == negative else value, 6)


def _gray_array(image: Image.Image, side: int = 512) -> Any:
    import numpy as np

    gray = _luminance(_reduced(image, side))
    if min(gray.size) < 3:
        raise EngineError("The image is too small to analyse (at least 3x3 pixels).")
    return np.asarray(gray, dtype=np.float32)


def _sharpness(image: Image.Image, inputs: dict[str, Any]) -> dict[str, Any]:
    g = _gray_array(image)
    laplacian = g[1:-1, :-2] + g[1:-1, 2:] + g[:-2, 1:-1] + g[2:, 1:-1] - 4 * g[1:-1, 1:-1]
    variance = float(laplacian.var())
    threshold = inputs.get("threshold", 100)
    verdict = (
        "sharp" if variance >= threshold else "soft" if variance >= threshold / 3 else "blurry"
    )
    return {
        "laplacian_variance": round(variance, 2),
        "verdict": verdict,
        "threshold": threshold,
        # 0 at a flat picture, 100 from ten times the threshold up, on a log scale.
        "score": round(
            min(100.0, 100 * math.log10(1 + variance) / math.log10(1 + 10 * threshold)), 1
        ),
        "analyzed_width": int(g.shape[1]),
        "analyzed_height": int(g.shape[0]),
    }


def _exposure(image: Image.Image, inputs: dict[str, Any]) -> dict[str, Any]:
    import numpy as np

    g = _gray_array(image)
    total = g.size
    mean, spread = float(g.mean()), float(g.std())
    low, median, high = (float(v) for v in np.percentile(g, [1, 50, 99]))
    shadows = float((g <= 4).sum()) / total
    highlights = float((g >= 251).sum()) / total
    notes = []
    if shadows > 0.05:
        notes.append(f"{shadows:.0%} of the picture is pure black: shadow detail is lost.")
    if highlights > 0.05:
        notes.append(f"{highlights:.0%} of the picture is pure white: highlights are blown.")
    if spread < 32:
        notes.append("Little difference between dark and light areas: the picture looks flat.")
    if mean < 70 or shadows > 0.25:
        verdict = "underexposed"
    elif mean > 185 or highlights > 0.25:
        verdict = "overexposed"
    elif spread < 32:
        verdict = "low_contrast"
    else:
        verdict = "well_exposed"
    histogram, _ = np.histogram(g, bins=16, range=(0, 256))
    return {
        "mean_luminance": round(mean, 1),
        "median_luminance": round(median, 1),
        "contrast": round(spread, 1),
        "dynamic_range": [round(low), round(high)],
        "shadows_clipped": round(shadows, 4),
        "highlights_clipped": round(highlights, 4),
        "histogram": [round(int(count) / total, 4) for count in histogram],
        "verdict": verdict,
        "notes": notes,
    }


def _hashes(image: Image.Image) -> dict[str, str]:
    """64-bit average, difference and perceptual (DCT) hashes as 16 hex digits."""
    import numpy as np
    from PIL import Image as PILImage

    gray = _luminance(_reduced(image, 256))
    box = PILImage.Resampling.BOX
    small = np.asarray(gray.resize((8, 8), box), dtype=np.float32)
    wide = np.asarray(gray.resize((9, 8), box), dtype=np.float32)
    big = np.asarray(gray.resize((32, 32), box), dtype=np.float32)
    n = np.arange(32)
    dct = np.cos(np.pi * (2 * n[None, :] + 1) * n[:, None] / 64)  # DCT-II basis, rows by freq
    low = (dct @ big @ dct.T)[:8, :8]
    return {
        "average_hash": _bits_hex(small > small.mean()),
        "difference_hash": _bits_hex(wide[:, 1:] > wide[:, :-1]),
        "perceptual_hash": _bits_hex(low > np.median(low)),
    }


def _bits_hex(bits: Any) -> str:
    value = 0
    for bit in bits.ravel():
        value = value << 1 | int(bit)
    return f"{value:016x}"


def _hash(image: Image.Image, inputs: dict[str, Any]) -> dict[str, Any]:
    return {**_hashes(image), "width": image.width, "height": image.height}


def _compare(image: Image.Image, inputs: dict[str, Any]) -> dict[str, Any]:
    if inputs.get("other") is None:
        raise EngineError("Give the second image to compare with (other).")
    other = _open(inputs["other"], "other image")
    first, second = _hashes(image), _hashes(other)
    distances = {
        name.removesuffix("_hash"): bin(int(first[name], 16) ^ int(second[name], 16)).count("1")
        for name in first
    }
    mean = sum(distances.values()) / len(distances)
    identical = image.size == other.size and _same_pixels(image, other)
    if identical:
        verdict = "identical"
    elif mean <= 6:
        verdict = "near_duplicate"
    elif mean <= 14:
        verdict = "similar"
    else:
        verdict = "different"
    return {
        "verdict": verdict,
        "similarity": round(1 - mean / 64, 4),
        "distances": distances,
        "pixel_identical": identical,
        "first": {**first, "width": image.width, "height": image.height},
        "second": {**second, "width": other.width, "height": other.height},
    }


def _same_pixels(first: Image.Image, second: Image.Image) -> bool:
    """Whether two pictures of one size hold the same RGBA pixels, compared in bands of rows
    (two whole RGBA copies and their bytes would hold 16 bytes per pixel)."""
    for top in range(0, first.height, 256):
        box = (0, top, first.width, min(top + 256, first.height))
        if _rgba(first.crop(box)).tobytes() != _rgba(second.crop(box)).tobytes():
            return False
    return True


def _transparency(image: Image.Image, inputs: dict[str, Any]) -> dict[str, Any]:
    total = image.width * image.height
    if not _has_alpha(image):
        return {
            "has_alpha_channel": False,
            "verdict": "opaque",
            "transparent_share": 0.0,
            "semi_transparent_share": 0.0,
            "opaque_share": 1.0,
            "visible_box": {"x": 0, "y": 0, "width": image.width, "height": image.height},
        }
    alpha = _rgba(image).getchannel("A")
    histogram = alpha.histogram()
    transparent, opaque = histogram[0] / total, histogram[255] / total
    box = alpha.getbbox()
    if transparent == 1:
        verdict = "fully_transparent"
    elif opaque == 1:
        verdict = "opaque"
    else:
        verdict = "has_transparency"
    return {
        "has_alpha_channel": True,
        "verdict": verdict,
        "transparent_share": round(transparent, 4),
        "semi_transparent_share": round(1 - transparent - opaque, 4),
        "opaque_share": round(opaque, 4),
        "visible_box": (
            {"x": box[0], "y": box[1], "width": box[2] - box[0], "height": box[3] - box[1]}
            if box
            else None
        ),
    }


_STANDARD_RATIOS = ("1:1", "5:4", "4:3", "3:2", "16:10", "16:9", "2:1", "21:9", "3:1", "4:1")


def _ratio_text(width: int, height: int) -> tuple[str, str]:
    """The reduced ratio (``1920x1080`` -> 16:9) and the nearest common one, either way up."""
    exact = Fraction(width, height)
    simple = exact if max(exact.numerator, exact.denominator) <= 50 else None
    text = f"{simple.numerator}:{simple.denominator}" if simple else f"{float(exact):.3g}:1"
    candidates = [r if width >= height else ":".join(r.split(":")[::-1]) for r in _STANDARD_RATIOS]
    nearest = min(candidates, key=lambda r: abs(math.log(float(_parse_ratio(r)) / float(exact))))
    return text, nearest


def _print_size(image: Image.Image, inputs: dict[str, Any]) -> dict[str, Any]:
    with image_header(inputs["image"]) as raw:
        stored = raw.info.get("dpi")
    if inputs.get("dpi"):
        dpi, source = float(inputs["dpi"]), "input"
    elif stored and 0 < float(stored[0]) <= 10_000 and round(float(stored[0])) != 72:
        dpi, source = round(float(stored[0]), 1), "file"  # PNG stores dots per metre
    else:
        dpi, source = 300.0, "default"
    ratio, nearest = _ratio_text(image.width, image.height)

    def at(resolution: float) -> dict[str, float]:
        inches = (image.width / resolution, image.height / resolution)
        return {
            "dpi": resolution,
            "width_in": round(inches[0], 2),
            "height_in": round(inches[1], 2),
            "width_cm": round(inches[0] * 2.54, 1),
            "height_cm": round(inches[1] * 2.54, 1),
        }

    return {
        "width": image.width,
        "height": image.height,
        "megapixels": round(image.width * image.height / 1_000_000, 2),
        "aspect_ratio": ratio,
        "aspect_decimal": round(image.width / image.height, 4),
        "nearest_standard_ratio": nearest,
        "dpi": dpi,
        "dpi_source": source,
        "print_size": at(dpi),
        "print_sizes": [at(r) for r in (300.0, 150.0, 72.0)],
    }


def _platform_sizes(image: Image.Image, inputs: dict[str, Any]) -> dict[str, Any]:
    names = inputs.get("presets") or list(SOCIAL_PRESETS)
    tolerance = inputs.get("ratio_tolerance", 0.01)
    width, height = image.size
    results = []
    for name in names:
        target_w, target_h = SOCIAL_PRESETS[name]
        scale = max(target_w / width, target_h / height)
        ratio_off = abs(width / height / (target_w / target_h) - 1)
        if (width, height) == (target_w, target_h):
            status = "exact"
        elif scale > 1:
            status = "too_small"
        elif ratio_off <= tolerance:
            status = "resize"
        else:
            status = "crop"
        kept = (target_w * target_h) / (width * scale * height * scale)
        results.append(
            {
                "preset": name,
                "width": target_w,
                "height": target_h,
                "status": status,
                "crop_loss": round(1 - kept, 4),
                "upscale": round(scale, 3) if scale > 1 else 1.0,
            }
        )
    return {
        "width": width,
        "height": height,
        "aspect_ratio": _ratio_text(width, height)[0],
        "results": results,
        "ready": [r["preset"] for r in results if r["status"] in ("exact", "resize")],
    }


_ANALYSES: dict[str, Callable[[Image.Image, dict[str, Any]], dict[str, Any]]] = {
    "palette": _palette,
    "metadata": _metadata,
    "sharpness": _sharpness,
    "exposure": _exposure,
    "hash": _hash,
    "compare": _compare,
    "transparency": _transparency,
    "print_size": _print_size,
    "platform_sizes": _platform_sizes,
}


class ImageAnalyzeEngine(ChoiceEngine):
    """Measures a picture and answers JSON; the ``operation`` param picks the measure.

    Input ``image`` (Blob), plus per operation: ``count`` (palette: 2-16 colours with their
    share of the opaque pixels and nearest CSS name), ``threshold`` (sharpness: variance of
    the Laplacian at 512 px a side), ``other`` (compare: a second image; average, difference
    and DCT hashes with Hamming distances), ``dpi`` (print_size), ``presets`` and
    ``ratio_tolerance`` (platform_sizes, against ``SOCIAL_PRESETS``). metadata reads format,
    mode, DPI, EXIF camera fields and GPS in decimal degrees; exposure gives luminance
    statistics, clipping and a verdict; transparency the alpha coverage and visible box.
    """

    name = "images.analyze"
    requires = ("PIL", "numpy")
    jobs = _ANALYSES

    def run(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        return _ANALYSES[params["operation"]](_open(inputs["image"]), inputs)
