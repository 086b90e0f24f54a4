"""The agency's brand: every bad value refused with a field message (or shown inert), the
logo re-encoded, the contrast rule, and what pages get (services/white_label.py)."""

from __future__ import annotations

import base64
import io
import struct
import zlib

import pytest
from flask import render_template
from PIL import Image, PngImagePlugin

from extensions import db
from models import WhiteLabel
from services import accounts, white_label
from services.white_label import Brand, BrandRefused

# --------------------------------------------------------------------------- images


def png_bytes(size=(64, 32), color=(200, 40, 40, 255), text: dict | None = None) -> bytes:
    image = Image.new("RGBA", size, color)
    info = PngImagePlugin.PngInfo()
    for key, value in (text or {}).items():
        info.add_text(key, value)
    out = io.BytesIO()
    image.save(out, "PNG", pnginfo=info)
    return out.getvalue()


def jpeg_with_exif(size=(80, 60)) -> bytes:
    image = Image.new("RGB", size, (30, 90, 200))
    exif = Image.Exif()
    exif[0x013B] = "Jane Doe, 12 Secret Lane"  # Artist
    exif[0x010F] = "PhoneMaker"  # Make
    out = io.BytesIO()
    image.save(out, "JPEG", exif=exif.tobytes(), quality=95)
    return out.getvalue()


def webp_bytes(size=(40, 40)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, (10, 120, 60)).save(out, "WEBP")
    return out.getvalue()


def png_declaring(width: int, height: int) -> bytes:
    """A tiny PNG whose header declares ``width`` x ``height`` pixels (a decompression bomb:
    the few bytes of its data would inflate to width * height bytes)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data))
            + kind
            + data
            + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
        )

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    data = zlib.compress(b"\x00" * 1024)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", data) + chunk(b"IEND", b"")
    )


def data_uri(data: bytes, content_type: str = "image/png") -> str:
    return f"data:{content_type};base64,{base64.b64encode(data).decode()}"


SVG = (
    b'<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'
)


def refused(call, *args) -> dict[str, list[str]]:
    with pytest.raises(BrandRefused) as caught:
        call(*args)
    return caught.value.errors


@pytest.fixture
def agency(app):
    account = accounts.create_account("brand-owner@example.com", "agency")
    db.session.commit()
    return account


# --------------------------------------------------------------------------- the logo


def test_a_good_png_is_re_encoded_without_its_metadata():
    sent = png_bytes(text={"Author": "Jane Doe", "Comment": "internal build 7"})
    logo = white_label.logo_from_value(data_uri(sent))
    assert logo.content_type == "image/png"
    assert logo.data != sent
    kept = Image.open(io.BytesIO(logo.data))
    assert kept.format == "PNG" and kept.size == (64, 32)
    assert "Author" not in kept.info and "Comment" not in kept.info
    assert b"Jane Doe" not in logo.data


def test_a_jpeg_loses_its_exif_and_stays_a_jpeg():
    sent = jpeg_with_exif()
    assert b"Secret Lane" in sent
    logo = white_label.logo_from_value(data_uri(sent, "image/jpeg"))
    assert logo.content_type == "image/jpeg"
    assert b"Secret Lane" not in logo.data and b"PhoneMaker" not in logo.data
    assert "exif" not in Image.open(io.BytesIO(logo.data)).info


def test_a_webp_stays_a_webp():
    logo = white_label.logo_from_value(data_uri(webp_bytes(), "image/webp"))
    assert logo.content_type == "image/webp"
    assert Image.open(io.BytesIO(logo.data)).format == "WEBP"


def test_a_large_logo_is_fitted_into_512_pixels():
    logo = white_label.logo_from_value(data_uri(png_bytes(size=(2000, 1000))))
    assert (logo.width, logo.height) == (512, 256)


def test_an_svg_logo_is_refused():
    errors = refused(white_label.logo_from_value, data_uri(SVG, "image/svg+xml"))
    assert "SVG logos are refused" in errors["logo"][0]
    # The same bytes sent as a PNG are refused too.
    errors = refused(white_label.logo_from_value, data_uri(SVG, "image/png"))
    assert "SVG logos are refused" in errors["logo"][0]


def test_a_fake_image_is_refused():
    upload = _upload(b"this is text, not a picture", "logo.png", "image/png")
    errors = refused(white_label.logo_from_upload, upload)
    assert errors == {
        "logo": ["This file is not a PNG, JPEG or WebP image (whatever its name says)."]
    }


def test_a_gif_is_refused_as_not_one_of_the_formats():
    out = io.BytesIO()
    Image.new("RGB", (10, 10)).save(out, "GIF")
    errors = refused(white_label.logo_from_value, data_uri(out.getvalue(), "image/png"))
    assert "not a PNG, JPEG or WebP" in errors["logo"][0]


def test_an_oversized_logo_is_refused():
    big = png_bytes() + b"\x00" * (white_label.MAX_LOGO_BYTES + 1)
    errors = refused(white_label.logo_from_value, data_uri(big))
    assert errors == {"logo": ["The logo is larger than 512 KB, the most accepted."]}
    errors = refused(white_label.logo_from_upload, _upload(big, "big.png", "image/png"))
    assert errors == {"logo": ["The logo is larger than 512 KB, the most accepted."]}


def test_a_decompression_bomb_is_refused_before_decoding():
    bomb = png_declaring(50_000, 50_000)
    assert len(bomb) < 200
    errors = refused(white_label.logo_from_value, data_uri(bomb))
    assert "too many pixels" in errors["logo"][0]
    # Under Pillow's own alarm, over ours: 25 million pixels.
    errors = refused(white_label.logo_from_value, data_uri(png_declaring(5000, 5000)))
    assert errors["logo"] == [
        "The image declares 5000 x 5000 pixels; at most 16 million pixels are accepted."
    ]


def test_a_truncated_image_is_refused():
    errors = refused(white_label.logo_from_value, data_uri(png_bytes()[:60]))
    assert "not a PNG, JPEG or WebP" in errors["logo"][0]


def test_a_logo_url_is_refused():
    errors = refused(white_label.logo_from_value, "https://example.com/logo.png")
    assert "not a URL" in errors["logo"][0]


def _upload(data: bytes, filename: str, content_type: str):
    from werkzeug.datastructures import FileStorage

    return FileStorage(io.BytesIO(data), filename=filename, content_type=content_type)


# --------------------------------------------------------------------------- colours


@pytest.mark.parametrize("value", ["red;}body{", "red", "#12345", "#1234567", "#gggggg",
                                   "#1d4ed8\n", " #1d4ed8", "#1d4ed8;}", 1193176, ""])  # fmt: skip
def test_a_colour_that_is_not_rrggbb_is_refused(value):
    errors = refused(white_label.check_color, value, "primary_color")
    assert errors == {"primary_color": ["Give a colour as #rrggbb (six hex digits), e.g. #1d4ed8."]}


def test_a_colour_is_lowercased():
    assert white_label.check_color("#1D4ED8", "accent_color") == "#1d4ed8"


def test_low_contrast_is_refused_with_the_ratio():
    errors = refused(white_label.check_color, "#777777", "accent_color")
    (message,) = errors["accent_color"]
    assert message.startswith("Text on #777777 would have a contrast ratio of 4.47:1 at best")
    assert "at least 4.5:1 is needed" in message


@pytest.mark.parametrize(
    ("background", "text"),
    [
        ("#1d4ed8", "#ffffff"),
        ("#fde047", "#111111"),
        ("#000000", "#ffffff"),
        ("#ffffff", "#111111"),
    ],
)
def test_the_text_colour_is_the_more_readable_one(background, text):
    assert white_label.text_color(background) == text
    assert white_label.contrast(text, background) >= 4.5


def test_contrast_follows_wcag():
    assert white_label.contrast("#000000", "#ffffff") == pytest.approx(21)
    assert white_label.contrast("#777777", "#ffffff") == pytest.approx(4.48, abs=0.01)


def test_the_stylesheet_holds_only_checked_colours():
    css = white_label.stylesheet("1d4ed8-none")
    assert "--brand-primary: #1d4ed8;" in css and "--brand-primary-text: #ffffff;" in css
    assert "--brand-accent" not in css
    for name in ("red;}body{-none", "1D4ED8-none", "1d4ed8", "none-none", "1d4ed8-zzzzzz"):
        assert white_label.stylesheet(name) is None


# --------------------------------------------------------------------------- text fields


def test_a_script_in_the_brand_name_is_kept_as_text_and_shown_inert(app):
    name = '<script>alert("x")</script>'
    assert white_label.check_name(name) == name
    brand = Brand(name, None, None, None, "/brand/logo/" + "a" * 64, None, False)
    with app.test_request_context():
        html = render_template("site/_brand_header.html", brand=brand)
    assert "<script>" not in html
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in html


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("x" * 81, "At most 80 characters (81 given)."),
        ("Acme\x00", "The brand name may not hold control or invisible format characters."),
        ("Acme\u202eemca", "The brand name may not hold control or invisible format characters."),
        ("Line\nbreak", "The brand name may not hold control or invisible format characters."),
        (42, "Give the brand name as text."),
    ],
)
def test_a_bad_brand_name_is_refused(value, message):
    assert refused(white_label.check_name, value) == {"brand_name": [message]}


def test_the_brand_name_is_trimmed_and_empty_means_none():
    assert white_label.check_name("  Acme  ") == "Acme"
    assert white_label.check_name("   ") is None


@pytest.mark.parametrize(
    "value",
    ["javascript:alert(1)", "data:text/html,hi", "http://example.com/help", "ftp://example.com",
     "https://", "https://user:pw@example.com/", "https://exa mple.com", "//example.com/help",
     "https://example.com:99999/", "https://example.com/\u0000", "", 7],
)  # fmt: skip
def test_a_support_url_that_is_not_https_is_refused(app, value):
    errors = refused(white_label.check_support_url, value)
    assert list(errors) == ["support_url"]


def test_a_support_url_longer_than_2048_is_refused(app):
    errors = refused(white_label.check_support_url, "https://example.com/" + "a" * 2048)
    assert errors == {"support_url": ["At most 2048 characters."]}


def test_http_support_urls_are_allowed_in_development(app):
    app.config["ENV_NAME"] = "development"
    assert white_label.check_support_url("http://localhost:5000/help")


# --------------------------------------------------------------------------- saving


def test_save_checks_every_field_before_changing_anything(agency):
    white_label.save(agency.id, {"brand_name": "Acme", "primary_color": "#1d4ed8"})
    db.session.commit()
    errors = refused(
        white_label.save,
        agency.id,
        {"brand_name": "New", "primary_color": "red;}body{", "accent_color": "#777777",
         "logo": data_uri(SVG), "support_url": "javascript:alert(1)", "hide_powered_by": "yes",
         "colour": "#000000"},
    )  # fmt: skip
    assert set(errors) == {
        "primary_color", "accent_color", "logo", "support_url", "hide_powered_by", "colour",
    }  # fmt: skip
    db.session.rollback()
    row = db.session.get(WhiteLabel, agency.id)
    assert (row.brand_name, row.primary_color) == ("Acme", "#1d4ed8")


def test_save_stores_the_re_encoded_logo_and_null_removes_it(agency):
    sent = png_bytes(text={"Author": "Jane"})
    row = white_label.save(agency.id, {"logo": data_uri(sent)})
    db.session.commit()
    assert row.logo != sent and row.logo_content_type == "image/png"
    assert white_label.find_logo(row.logo_sha256) == (row.logo, "image/png")
    white_label.save(agency.id, {"logo": None})
    db.session.commit()
    assert (row.logo, row.logo_sha256, row.logo_content_type) == (None, None, None)


def test_a_brand_applies_only_on_the_agency_plan(agency):
    white_label.save(agency.id, {"brand_name": "Acme", "accent_color": "#b45309"})
    db.session.commit()
    with white_label_urls():
        brand = white_label.brand_for(agency.id)
    assert brand.name == "Acme"
    assert brand.stylesheet_url == "/brand/none-b45309.css"
    agency.plan_name = "business"
    db.session.commit()
    db.session.expire_all()
    with white_label_urls():
        assert white_label.brand_for(agency.id) is None


def white_label_urls():
    from flask import current_app

    return current_app.test_request_context()
