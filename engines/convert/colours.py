"""Colours (convert.colour): colour notations, WCAG contrast and palettes."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from engines.base import ChoiceEngine, EngineError

# The CSS named colours (CSS Color Module Level 4): name -> hex digits.
_CSS_COLOURS: dict[str, str] = json.loads(
    Path(__file__).with_name("colours.json").read_text(encoding="utf-8")
)
_HEX_RE = re.compile(r"#?([0-9a-f]{3,4}|[0-9a-f]{6}|[0-9a-f]{8})")
_FUNCTION_RE = re.compile(r"(rgba?|hsla?|hsv|hsb|cmyk)\(([^()]*)\)")

Rgba = tuple[float, float, float, float]


def _channel(text: str, scale: float, what: str) -> float:
    """A number or percentage, percentages read against ``scale``."""
    try:
        if text.endswith("%"):
            return float(text[:-1]) * scale / 100
        return float(text.removesuffix("deg"))
    except ValueError:
        raise EngineError(f"'{text}' is not a number in the {what} colour.") from None


def _parse_colour(text: str) -> Rgba:
    """A CSS-style colour as (r, g, b) in 0-255 and alpha in 0-1."""
    import colorsys

    value = text.strip().lower().replace(" ", "") if "(" not in text else text.strip().lower()
    if value in _CSS_COLOURS:
        value = "#" + _CSS_COLOURS[value]
    match = _HEX_RE.fullmatch(value)
    if match:
        digits = match[1]
        if len(digits) <= 4:
            digits = "".join(ch * 2 for ch in digits)
        channels = [int(digits[i : i + 2], 16) for i in range(0, len(digits), 2)]
        alpha = channels[3] / 255 if len(channels) == 4 else 1.0
        return float(channels[0]), float(channels[1]), float(channels[2]), alpha
    match = _FUNCTION_RE.fullmatch(value)
    if not match:
        raise EngineError(
            f"'{text.strip()}' is not a colour: use #1e90ff, rgb(30 144 255), "
            "hsl(210 100% 56%), hsv(210, 88%, 100%), cmyk(88%, 44%, 0%, 0%) or a CSS name."
        )
    kind, args = match[1], [a for a in re.split(r"[\s,/]+", match[2].strip()) if a]
    expected = 4 if kind == "cmyk" else 3
    if len(args) not in (expected, expected + 1):
        raise EngineError(f"{kind}() takes {expected} values (and optionally an alpha).")
    alpha = 1.0
    if len(args) == expected + 1:
        alpha = _channel(args.pop(), 1, kind)
    if kind.startswith("rgb"):
        r, g, b = (_channel(a, 255, kind) for a in args)
    elif kind == "cmyk":
        c, m, y, k = (_channel(a, 1, kind) for a in args)
        r, g, b = (255 * (1 - part) * (1 - k) for part in (c, m, y))
    else:
        hue = _channel(args[0], 360, kind) % 360 / 360
        first, second = (_channel(a, 1, kind) for a in args[1:])
        if kind.startswith("hsl"):
            red, green, blue = colorsys.hls_to_rgb(hue, second, first)
        else:
            red, green, blue = colorsys.hsv_to_rgb(hue, first, second)
        r, g, b = red * 255, green * 255, blue * 255
    if not all(0 <= channel <= 255.0001 for channel in (r, g, b)) or not 0 <= alpha <= 1:
        raise EngineError(f"'{text.strip()}' has a value out of range.")
    return r, g, b, alpha


def _hex(colour: Rgba) -> str:
    r, g, b, alpha = colour
    text = "#" + "".join(f"{round(c):02x}" for c in (r, g, b))
    return text if alpha >= 1 else text + f"{round(alpha * 255):02x}"


def _fmt(value: float) -> str:
    return f"{value:.1f}".removesuffix(".0")


def _colour_formats(colour: Rgba) -> dict[str, Any]:
    import colorsys

    r, g, b, alpha = (round(colour[0]), round(colour[1]), round(colour[2]), colour[3])
    h, lightness, s = colorsys.rgb_to_hls(r / 255, g / 255, b / 255)
    _, sv, v = colorsys.rgb_to_hsv(r / 255, g / 255, b / 255)
    k = 1 - max(r, g, b) / 255
    cmyk = [0.0, 0.0, 0.0] if k == 1 else [(1 - c / 255 - k) / (1 - k) for c in (r, g, b)]
    suffix = "" if alpha >= 1 else f" / {_fmt(alpha * 100)}%"
    hexa = _hex((r, g, b, alpha))
    names = [name for name, code in _CSS_COLOURS.items() if f"#{code}" == hexa]
    return {
        "hex": hexa,
        "rgb": f"rgb({r} {g} {b}{suffix})",
        "hsl": f"hsl({_fmt(h * 360)} {_fmt(s * 100)}% {_fmt(lightness * 100)}%{suffix})",
        "hsv": f"hsv({_fmt(h * 360)} {_fmt(sv * 100)}% {_fmt(v * 100)}%)",
        "cmyk": "cmyk(" + ", ".join(f"{_fmt(p * 100)}%" for p in [*cmyk, k]) + ")",
        "red": r,
        "green": g,
        "blue": b,
        "alpha": round(alpha, 3),
        "css_names": names,
    }


def _colour_convert(inputs: dict[str, Any]) -> dict[str, Any]:
    return _colour_formats(_parse_colour(inputs["color"]))


def _luminance(colour: Rgba) -> float:
    def linear(channel: float) -> float:
        c = channel / 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b, _ = colour
    return 0.2126 * linear(r) + 0.7152 * linear(g) + 0.0722 * linear(b)


def _contrast(inputs: dict[str, Any]) -> dict[str, Any]:
    background = _parse_colour(inputs["background"])
    if background[3] < 1:
        raise EngineError("The background must be opaque (no alpha below 1).")
    foreground = _parse_colour(inputs["foreground"])
    alpha = foreground[3]
    # A translucent text colour is seen blended over the background.
    blended = tuple(
        f * alpha + b * (1 - alpha) for f, b in zip(foreground[:3], background[:3], strict=True)
    )
    fg, bg = _luminance((*blended, 1.0)), _luminance(background)
    ratio = (max(fg, bg) + 0.05) / (min(fg, bg) + 0.05)
    # WCAG compares the unrounded ratio: 4.499 fails AA even though it displays as 4.5.
    return {
        "ratio": math.floor(ratio * 100) / 100,
        "aa_normal_text": ratio >= 4.5,
        "aa_large_text": ratio >= 3,
        "aaa_normal_text": ratio >= 7,
        "aaa_large_text": ratio >= 4.5,
        "ui_components": ratio >= 3,
        "foreground_luminance": round(fg, 4),
        "background_luminance": round(bg, 4),
    }


_HARMONIES = {"complementary": (0, 180), "analogous": (-30, 0, 30), "triadic": (0, 120, 240),
              "split-complementary": (0, 150, 210), "tetradic": (0, 90, 180, 270)}  # fmt: skip


def _palette(inputs: dict[str, Any]) -> dict[str, Any]:
    import colorsys

    base = _parse_colour(inputs["color"])
    rgb = [channel / 255 for channel in base[:3]]
    h, lightness, s = colorsys.rgb_to_hls(*rgb)
    scheme, count = inputs["scheme"], inputs["count"]
    if scheme in _HARMONIES:
        shifts = _HARMONIES[scheme]
        colours = [colorsys.hls_to_rgb((h + shift / 360) % 1, lightness, s) for shift in shifts]
    elif scheme == "tints":  # towards white
        colours = [tuple(c + (1 - c) * i / (count + 1) for c in rgb) for i in range(count)]
    elif scheme == "shades":  # towards black
        colours = [tuple(c * (1 - i / (count + 1)) for c in rgb) for i in range(count)]
    else:  # monochromatic: the hue at evenly spaced lightness
        colours = [colorsys.hls_to_rgb(h, (i + 1) / (count + 1), s) for i in range(count)]
    return {
        "base": _hex((*base[:3], 1.0)),
        "scheme": scheme,
        "colors": [_hex((r * 255, g * 255, b * 255, 1.0)) for r, g, b in colours],
    }


class ColourEngine(ChoiceEngine):
    """Colour notations, WCAG contrast and palettes."""

    name = "convert.colour"
    jobs = {
        "convert": _colour_convert,
        "contrast": _contrast,
        "palette": _palette,
    }
