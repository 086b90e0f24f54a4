"""images.process (Pillow operations)."""

import pytest

pytest.importorskip("PIL", reason="the image engines need requirements-models.txt")
pytest.importorskip("qrcode", reason="the QR engine needs requirements-models.txt")
from PIL import Image, ImageFilter  # noqa: E402

from engines.base import EngineError  # noqa: E402
from engines.blob import Blob  # noqa: E402
from engines.images.process import ImageProcessEngine  # noqa: E402
from tests.engines.fixtures import image_blob, png_claiming_size, solid_image  # noqa: E402
from tests.engines.images.pictures import decoded  # noqa: E402

process = ImageProcessEngine()


def run(operation: str, image: Blob | None = None, **inputs) -> dict:
    source = solid_image(400, 300) if image is None else image
    return process.run({"image": source, **inputs}, {"operation": operation})


# --- images.process -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("inputs", "size"),
    [
        ({"width": 200}, (200, 150)),
        ({"height": 60}, (80, 60)),
        ({"width": 100, "height": 100}, (100, 75)),
        ({"width": 100, "height": 100, "fit": "cover"}, (100, 100)),
        ({"width": 50, "height": 120, "fit": "stretch"}, (50, 120)),
    ],
)
def test_resize_honours_width_height_and_fit(inputs, size):
    output = run("resize", **inputs)
    assert (output["width"], output["height"]) == size
    assert decoded(output["image"]).size == size


def test_resize_without_a_size_is_refused():
    with pytest.raises(EngineError, match="Give a width, a height or both"):
        run("resize")


def test_resize_past_the_largest_side_is_refused():
    with pytest.raises(EngineError, match="from 1 to 10000"):
        run("resize", width=20_000)


def test_thumbnail_fits_the_longest_side_and_never_enlarges():
    assert (run("thumbnail", size=100)["width"], run("thumbnail", size=100)["height"]) == (100, 75)
    small = run("thumbnail", solid_image(40, 30), size=100)
    assert (small["width"], small["height"]) == (40, 30)


@pytest.mark.parametrize(
    ("fmt", "magic", "content_type"),
    [
        ("jpeg", b"\xff\xd8\xff", "image/jpeg"),
        ("webp", b"RIFF", "image/webp"),
        ("gif", b"GIF8", "image/gif"),
        ("bmp", b"BM", "image/bmp"),
        ("tiff", b"II*\x00", "image/tiff"),
        ("png", b"\x89PNG", "image/png"),
    ],
)
def test_convert_writes_the_requested_format(fmt, magic, content_type):
    output = run("convert", solid_image(64, 48, color=(10, 200, 30, 128), mode="RGBA"), format=fmt)
    assert output["image"].data.startswith(magic)
    assert output["image"].content_type == content_type
    assert output["format"] == fmt
    assert decoded(output["image"]).size == (64, 48)


def test_convert_to_jpeg_paints_transparency_white():
    transparent = solid_image(10, 10, color=(0, 0, 0, 0), mode="RGBA")
    pixel = decoded(run("convert", transparent, format="jpeg")["image"]).getpixel((5, 5))
    assert all(channel >= 250 for channel in pixel)


def test_convert_needs_a_format():
    with pytest.raises(EngineError, match="Give the format"):
        run("convert")


def test_an_operation_keeps_the_source_format_and_names_the_file_after_it():
    output = run("grayscale", solid_image(20, 10, fmt="JPEG"))
    assert output["format"] == "jpeg"
    assert output["image"].filename == "fixture.jpg"
    assert decoded(output["image"]).mode == "L"


def test_rotate_turns_clockwise_and_swaps_the_sides():
    source = Image.new("RGB", (40, 20), "white")
    source.putpixel((0, 0), (255, 0, 0))
    output = run("rotate", image_blob(source), angle=90)
    rotated = decoded(output["image"])
    assert rotated.size == (20, 40)
    assert rotated.getpixel((19, 0)) == (255, 0, 0)


def test_rotate_by_an_odd_angle_expands_the_canvas():
    output = run("rotate", solid_image(100, 100), angle=45)
    assert output["width"] == output["height"] == 142


def test_crop_cuts_the_box():
    source = Image.new("RGB", (100, 100), "white")
    source.putpixel((30, 40), (0, 0, 255))
    output = run("crop", image_blob(source), x=30, y=40, width=20, height=10)
    cropped = decoded(output["image"])
    assert cropped.size == (20, 10)
    assert cropped.getpixel((0, 0)) == (0, 0, 255)


def test_crop_outside_the_image_is_refused():
    with pytest.raises(EngineError, match=r"goes outside the 400x300 image"):
        run("crop", x=350, y=0, width=100, height=10)


def test_compress_lowers_the_byte_count_of_a_photo():

    noisy = Image.effect_noise((300, 300), 60).convert("RGB").filter(ImageFilter.SMOOTH)
    source = image_blob(noisy, "JPEG", quality=95)
    output = run("compress", source, quality=30)
    assert output["format"] == "jpeg"
    assert output["bytes"] == len(output["image"].data) < output["original_bytes"] / 2


def test_compress_turns_an_opaque_png_into_a_palette_png():
    output = run("compress", image_blob(Image.effect_noise((100, 100), 40).convert("RGB")))
    assert output["format"] == "png"
    assert decoded(output["image"]).mode == "P"


def test_exif_orientation_is_applied_before_the_operation():
    exif = Image.Exif()
    exif[0x0112] = 6  # stored sideways: turn 90 degrees clockwise to view
    source = image_blob(Image.new("RGB", (40, 20), "white"), "JPEG", exif=exif)
    output = run("grayscale", source)
    assert (output["width"], output["height"]) == (20, 40)


@pytest.mark.parametrize(
    ("blob", "message"),
    [
        (Blob(b"this is text", "image/png"), "not an image"),
        (Blob(b"", "image/png"), "not an image"),
        (png_claiming_size(50_000, 50_000), "more than"),
        (png_claiming_size(10_000, 10_000), "more than"),
    ],
    ids=["text", "empty", "bomb-past-twice-the-limit", "bomb-past-the-limit"],
)
def test_unreadable_images_and_decompression_bombs_are_refused(blob, message):
    with pytest.raises(EngineError, match=message):
        run("grayscale", blob)


def test_a_truncated_image_is_refused():
    data = solid_image(300, 300, fmt="JPEG").data
    with pytest.raises(EngineError, match="truncated or corrupt"):
        run("grayscale", Blob(data[: len(data) // 3], "image/jpeg"))
