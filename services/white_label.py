"""An agency's brand (docs/architecture/agency.md): reading, checking and
saving it, for the API (``/v1/white-label``) and the settings page alike, and the ``Brand``
that templates show on the agency's shared run pages and widgets.

Nothing the agency sends reaches a page as it was sent. The name is text (escaped where it
is shown); the colours are ``#rrggbb`` and become CSS variables in a stylesheet served by us
(``/brand/<primary>-<accent>.css``: the URL names only the colours, so it tells nothing of
the account and cannot be used to list accounts); the logo is decoded by Pillow and encoded
again (no metadata, at most 512 x 512 pixels) and served from ``/brand/logo/<sha256>``, the
hash of the re-encoded bytes; the support URL is an https URL.
"""

from __future__ import annotations

import hashlib
import io
import re
import unicodedata
import warnings
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from flask import current_app, url_for
from PIL import Image, ImageOps, UnidentifiedImageError

from engines.blob import Blob
from extensions import db
from models import Account, WhiteLabel
from services.binary import BinaryInputError, blob_from_upload, decode_binary
from services.plans import get_plan
from services.urls import absolute_url_for

REQUIRED_PLAN = "agency"
MAX_NAME = 80
MAX_URL = 2048
MAX_LOGO_BYTES = 512 * 1024
# The logo is shrunk to fit this square (it is shown at header height, at most 2x).
LOGO_BOX = (512, 512)
# More pixels than this is refused before anything is decoded: a few KB of PNG can declare
# a 50,000 x 50,000 image (a decompression bomb) that would take gigabytes to decode.
MAX_LOGO_PIXELS = 4096 * 4096
# WCAG 2 AA for normal text.
MIN_CONTRAST = 4.5
# The text drawn on a brand colour: whichever of these reads better on it.
WHITE = "#ffffff"
NEAR_BLACK = "#111111"

LOGO_FORMATS = {"PNG": "image/png", "JPEG": "image/jpeg", "WEBP": "image/webp"}
FIELDS = (
    "brand_name",
    "logo",
    "primary_color",
    "accent_color",
    "support_url",
    "hide_powered_by",
)
_COLOR = re.compile(r"#[0-9a-fA-F]{6}")
_SVG = re.compile(
    rb"^\s*(?:<\?xml[^>]*>\s*)?(?:<!--.*?-->\s*)*(?:<!DOCTYPE\s+svg|<svg)", re.I | re.S
)


class BrandRefused(Exception):
    """Values of the brand were refused: ``errors`` holds messages per field (a 422)."""

    def __init__(self, errors: dict[str, list[str]]):
        super().__init__("; ".join(f"{name}: {' '.join(msgs)}" for name, msgs in errors.items()))
        self.errors = errors


@dataclass(frozen=True)
class Logo:
    """A logo as re-encoded here: the only bytes of a logo ever stored or served."""

    data: bytes
    content_type: str
    sha256: str
    width: int
    height: int


@dataclass(frozen=True)
class Brand:
    """What a page shows of an agency's brand. Templates escape ``name`` like any text."""

    name: str | None
    primary_color: str | None
    accent_color: str | None
    stylesheet_url: str | None
    logo_url: str | None
    support_url: str | None
    hide_powered_by: bool


# --------------------------------------------------------------------------- reading


def settings_of(account_id: int) -> WhiteLabel | None:
    return db.session.get(WhiteLabel, account_id)


def describe(account_id: int) -> dict[str, Any]:
    """The brand as the API answers it (every field; null where unset)."""
    row = settings_of(account_id)
    if row is None:
        return {
            "brand_name": None,
            "logo_url": None,
            "primary_color": None,
            "accent_color": None,
            "support_url": None,
            "hide_powered_by": False,
            "stylesheet_url": None,
            "updated_at": None,
        }
    return {
        "brand_name": row.brand_name,
        "logo_url": logo_url(row.logo_sha256, external=True),
        "primary_color": row.primary_color,
        "accent_color": row.accent_color,
        "support_url": row.support_url,
        "hide_powered_by": row.hide_powered_by,
        "stylesheet_url": stylesheet_url(row.primary_color, row.accent_color, external=True),
        "updated_at": row.updated_at,
    }


def brand_for(account_id: int | None) -> Brand | None:
    """The brand to show on a page of ``account_id``'s (a shared run, a widget), or None: the
    account is not on the agency plan (any more), or has set nothing."""
    if account_id is None:
        return None
    account = db.session.get(Account, account_id)
    if account is None or not on_agency_plan(account):
        return None
    row = settings_of(account_id)
    if row is None:
        return None
    brand = Brand(
        name=row.brand_name,
        primary_color=row.primary_color,
        accent_color=row.accent_color,
        stylesheet_url=stylesheet_url(row.primary_color, row.accent_color),
        logo_url=logo_url(row.logo_sha256),
        support_url=row.support_url,
        hide_powered_by=row.hide_powered_by,
    )
    shown = (brand.name, brand.stylesheet_url, brand.logo_url, brand.support_url)
    return brand if any(shown) or brand.hide_powered_by else None


def on_agency_plan(account: Account) -> bool:
    """Whether ``account``'s plan includes the white-label brand."""
    return get_plan(account.plan_name).includes(REQUIRED_PLAN)


def stylesheet_url(primary: str | None, accent: str | None, *, external=False) -> str | None:
    if not primary and not accent:
        return None
    name = f"{_hex(primary)}-{_hex(accent)}"
    build = absolute_url_for if external else url_for
    return build("site.brand_stylesheet", colors=name)


def logo_url(sha256: str | None, *, external=False) -> str | None:
    if not sha256:
        return None
    build = absolute_url_for if external else url_for
    return build("site.brand_logo", sha256=sha256)


def _hex(color: str | None) -> str:
    return color[1:] if color else "none"


def find_logo(sha256: str) -> tuple[bytes, str] | None:
    """A stored logo's bytes and type by the hash of those bytes (any account's: the same
    bytes are the same logo)."""
    row = db.session.execute(
        db.select(WhiteLabel.logo, WhiteLabel.logo_content_type)
        .where(WhiteLabel.logo_sha256 == sha256, WhiteLabel.logo.is_not(None))
        .limit(1)
    ).first()
    return (row.logo, row.logo_content_type) if row is not None else None


def stylesheet(colors: str) -> str | None:
    """The CSS of ``/brand/<primary>-<accent>.css`` (each a 6-digit hex or ``none``), or None
    for any other name. Only CSS custom properties and rules made here: the colours are
    checked hex digits, so nothing sent by anyone is copied into it. Where they apply is
    static/css/brand.css."""
    primary, dash, accent = colors.partition("-")
    if not dash:
        return None
    values = {}
    for role, value in (("primary", primary), ("accent", accent)):
        if value == "none":
            continue
        if not re.fullmatch(r"[0-9a-f]{6}", value):
            return None
        color = f"#{value}"
        values[role] = (color, text_color(color))
    if not values:
        return None
    lines = [":root {"]
    for role, (color, text) in values.items():
        lines.append(f"  --brand-{role}: {color};")
        lines.append(f"  --brand-{role}-text: {text};")
    lines.append("}")
    if "accent" in values:
        # Buttons on the brand's pages (a shared run's body.branded, a widget's body.embed,
        # the settings page's preview) in the accent, with its text colour. Links keep the
        # site's colour: the contrast checked is text on the brand colours, not those
        # colours on the page.
        color, text = values["accent"]
        away = "#000000" if text == WHITE else "#ffffff"  # hovering only adds contrast
        lines += [
            ".branded, body.embed {",
            f"  --pico-primary-background: {color};",
            f"  --pico-primary-border: {color};",
            f"  --pico-primary-hover-background: color-mix(in srgb, {color} 85%, {away});",
            f"  --pico-primary-hover-border: color-mix(in srgb, {color} 85%, {away});",
            f"  --pico-primary-inverse: {text};",
            "}",
        ]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- checking


def luminance(color: str) -> float:
    """WCAG 2 relative luminance of ``#rrggbb``."""

    def channel(hex_pair: str) -> float:
        value = int(hex_pair, 16) / 255
        return value / 12.92 if value <= 0.04045 else ((value + 0.055) / 1.055) ** 2.4

    red, green, blue = (channel(color[i : i + 2]) for i in (1, 3, 5))
    return 0.2126 * red + 0.7152 * green + 0.0722 * blue


def contrast(one: str, other: str) -> float:
    """WCAG 2 contrast ratio of two ``#rrggbb`` colours (1 to 21)."""
    lighter, darker = sorted((luminance(one), luminance(other)), reverse=True)
    return (lighter + 0.05) / (darker + 0.05)


def text_color(background: str) -> str:
    """The text colour drawn on ``background``: white or near-black, the better of the two."""
    return max((WHITE, NEAR_BLACK), key=lambda text: contrast(text, background))


def check_color(value: Any, field: str) -> str | None:
    """``#rrggbb`` (lowercased) or None (unset); text on it must reach 4.5:1."""
    if value is None:
        return None
    if not isinstance(value, str) or not _COLOR.fullmatch(value):
        raise BrandRefused({field: ["Give a colour as #rrggbb (six hex digits), e.g. #1d4ed8."]})
    color = value.lower()
    text = text_color(color)
    ratio = contrast(text, color)
    if ratio < MIN_CONTRAST:
        text_name = "white" if text == WHITE else f"near-black {NEAR_BLACK}"
        raise BrandRefused(
            {
                field: [
                    f"Text on {color} would have a contrast ratio of {_ratio(ratio)}:1 at best "
                    f"({text_name}); at least {MIN_CONTRAST}:1 is needed (WCAG AA). Choose a "
                    "darker or a lighter colour."
                ]
            }
        )
    return color


def _ratio(ratio: float) -> str:
    """A ratio to two decimals, never rounded up to the threshold it missed."""
    return f"{int(ratio * 100) / 100:.2f}"


def check_name(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise BrandRefused({"brand_name": ["Give the brand name as text."]})
    if len(value) > MAX_NAME:
        raise BrandRefused({"brand_name": [f"At most {MAX_NAME} characters ({len(value)} given)."]})
    name = value.strip()
    if any(unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp") for char in name):
        raise BrandRefused(
            {"brand_name": ["The brand name may not hold control or invisible format characters."]}
        )
    return name or None


def check_support_url(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise BrandRefused({"support_url": ["Give the support URL as text."]})
    url = value
    if len(url) > MAX_URL:
        raise BrandRefused({"support_url": [f"At most {MAX_URL} characters."]})
    schemes = ("https", "http") if _development() else ("https",)
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (raises ValueError for a port that is not one)
    except ValueError:
        parts = None
    if (
        parts is None
        or parts.scheme.lower() not in schemes
        or not parts.hostname
        or parts.username is not None
        or any(char.isspace() or not char.isprintable() for char in url)
    ):
        wanted = "an https:// URL" if schemes == ("https",) else "an http(s):// URL"
        raise BrandRefused(
            {"support_url": [f"Give {wanted} of your support page, e.g. https://example.com/help."]}
        )
    return url


def _development() -> bool:
    return current_app.config.get("ENV_NAME") == "development"


def check_hide_powered_by(value: Any) -> bool:
    if not isinstance(value, bool):
        raise BrandRefused({"hide_powered_by": ["Give true or false."]})
    return value


def logo_from_value(value: Any) -> Logo | None:
    """The JSON ``logo``: a ``data:`` URI (or base64) of a PNG, JPEG or WebP, re-encoded;
    None (JSON null) removes the logo."""
    if value is None:
        return None
    if isinstance(value, str) and value.strip().lower().startswith(("http:", "https:")):
        raise BrandRefused(
            {"logo": ["Send the logo itself (a data: URI or an upload), not a URL to it."]}
        )
    try:
        blob = decode_binary(value, field="logo", max_bytes=MAX_LOGO_BYTES, allowed_types=None)
    except BinaryInputError as refused:
        raise BrandRefused({"logo": [_binary_message(refused)]}) from None
    return reencode_logo(blob)


def logo_from_upload(upload) -> Logo:
    """A multipart upload of the logo, re-encoded."""
    try:
        blob = blob_from_upload(upload, field="logo", max_bytes=MAX_LOGO_BYTES, allowed_types=None)
    except BinaryInputError as refused:
        raise BrandRefused({"logo": [_binary_message(refused)]}) from None
    return reencode_logo(blob)


def _binary_message(refused: BinaryInputError) -> str:
    if refused.status == 413:
        return f"The logo is larger than {MAX_LOGO_BYTES // 1024} KB, the most accepted."
    return refused.message


def reencode_logo(blob: Blob) -> Logo:
    """The logo decoded by Pillow and encoded again in its own format (PNG, JPEG or WebP):
    no metadata (EXIF, ICC, text chunks), one frame, fitted into 512 x 512 pixels. An SVG, a
    file that is not one of those images whatever its name or type says, one declaring more
    than ``MAX_LOGO_PIXELS`` or a damaged one is refused."""
    if len(blob.data) > MAX_LOGO_BYTES:
        raise BrandRefused(
            {"logo": [f"The logo is larger than {MAX_LOGO_BYTES // 1024} KB, the most accepted."]}
        )
    if _looks_like_svg(blob):
        raise BrandRefused(
            {"logo": ["SVG logos are refused (an SVG can carry script); send a PNG, JPEG or WebP."]}
        )
    not_an_image = BrandRefused(
        {"logo": ["This file is not a PNG, JPEG or WebP image (whatever its name says)."]}
    )
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(blob.data), formats=list(LOGO_FORMATS))
            width, height = image.size
            if width * height > MAX_LOGO_PIXELS:
                raise BrandRefused(
                    {
                        "logo": [
                            f"The image declares {width} x {height} pixels; at most "
                            f"{MAX_LOGO_PIXELS // 1_000_000} million pixels are accepted."
                        ]
                    }
                )
            image_format = image.format
            image.seek(0)
            image.load()
            image = ImageOps.exif_transpose(image)
    except BrandRefused:
        raise
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        raise BrandRefused(
            {"logo": ["The image declares far too many pixels to be decoded safely."]}
        ) from None
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError, EOFError):
        raise not_an_image from None
    return _encode(image, image_format)


def _looks_like_svg(blob: Blob) -> bool:
    declared = (blob.content_type or "").lower()
    named = (blob.filename or "").lower().endswith((".svg", ".svgz"))
    return declared.startswith("image/svg") or named or bool(_SVG.match(blob.data[:1024]))


def _encode(image: Image.Image, image_format: str) -> Logo:
    has_alpha = image.mode in ("RGBA", "LA", "PA") or "transparency" in image.info
    mode = "RGBA" if has_alpha and image_format != "JPEG" else "RGB"
    image = image.convert(mode)
    image.thumbnail(LOGO_BOX, Image.Resampling.LANCZOS)
    # A new image holds the pixels alone: nothing of the upload's ``info`` (EXIF, ICC
    # profile, text chunks, comments) can ride along into the encoder.
    clean = Image.frombytes(mode, image.size, image.tobytes())
    out = io.BytesIO()
    if image_format == "JPEG":
        clean.save(out, "JPEG", quality=90, optimize=True)
    elif image_format == "WEBP":
        clean.save(out, "WEBP", quality=90)
    else:
        clean.save(out, "PNG", optimize=True)
    data = out.getvalue()
    return Logo(
        data=data,
        content_type=LOGO_FORMATS[image_format],
        sha256=hashlib.sha256(data).hexdigest(),
        width=clean.width,
        height=clean.height,
    )


# --------------------------------------------------------------------------- saving


def save(account_id: int, changes: dict[str, Any], *, logo_upload=None) -> WhiteLabel:
    """Apply ``changes`` (fields of ``FIELDS``; a field left out stays as it is) and a logo
    upload, if any, to the account's brand; adds and flushes, never commits.

    Every field is checked before anything changes; BrandRefused holds the messages of
    every refused field.
    """
    errors: dict[str, list[str]] = {}
    checked: dict[str, Any] = {}
    unknown = sorted(set(changes) - set(FIELDS))
    for name in unknown:
        errors[name] = ["Unknown field."]
    checks = {
        "brand_name": check_name,
        "primary_color": lambda value: check_color(value, "primary_color"),
        "accent_color": lambda value: check_color(value, "accent_color"),
        "support_url": check_support_url,
        "hide_powered_by": check_hide_powered_by,
        "logo": logo_from_value,
    }
    for name, check in checks.items():
        if name not in changes:
            continue
        try:
            checked[name] = check(changes[name])
        except BrandRefused as refused:
            errors.update(refused.errors)
    if logo_upload is not None:
        if "logo" in changes:
            errors["logo"] = ["Send the logo either as an upload or in the JSON, not both."]
        else:
            try:
                checked["logo"] = logo_from_upload(logo_upload)
            except BrandRefused as refused:
                errors.update(refused.errors)
    if errors:
        raise BrandRefused(errors)
    row = settings_of(account_id)
    if row is None:
        row = WhiteLabel(account_id=account_id, hide_powered_by=False)
        db.session.add(row)
    for name, value in checked.items():
        if name == "logo":
            row.logo = value.data if value else None
            row.logo_content_type = value.content_type if value else None
            row.logo_sha256 = value.sha256 if value else None
        else:
            setattr(row, name, value)
    db.session.flush()
    return row
