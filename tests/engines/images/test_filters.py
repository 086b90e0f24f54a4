"""images.filter on pictures drawn by the tests."""

import io

import pytest

pytest.importorskip("PIL", reason="the image engines need Pillow")
pytest.importorskip("numpy", reason="the image engines need numpy")
from PIL import Image, ImageDraw, ImageFilter  # noqa: E402

from engines.base import EngineError  # noqa: E402
from engines.blob import Blob  # noqa: E402
from tests.engines.fixtures import image_blob, png_claiming_size, text_image  # noqa: E402
from tests.engines.images.pictures import (  # noqa: E402
    BLUE,
    RED,
    WHITE,
    analyze,
    edit,
    halves,
    opened,
    picture,
)

# --- images.filter -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "direction, left, bottom_left",
    [("horizontal", WHITE, WHITE), ("vertical", RED, BLUE), ("both", WHITE, WHITE)],
)
def test_flip_moves_pixels(direction, left, bottom_left):
    image = picture()
    image.paste(RED, (0, 0, 20, 20))
    image.putpixel((0, 0), BLUE)
    result = opened(edit("flip", image_blob(image), direction=direction)).convert("RGB")
    assert result.getpixel((5, 10)) == left
    assert result.getpixel((0, 19)) == bottom_left
    if direction == "both":
        assert result.getpixel((39, 19)) == BLUE


def test_output_reports_size_format_and_bytes():
    output = edit("invert", halves())
    assert (output["width"], output["height"], output["format"]) == (40, 20, "png")
    assert output["bytes"] == len(output["image"].data)
    assert output["image"].content_type == "image/png"
    assert output["image"].filename == "inverted.png"


def test_the_input_format_is_kept_unless_asked():
    jpeg = image_blob(picture(), "JPEG")
    assert edit("invert", jpeg)["format"] == "jpeg"
    assert edit("invert", jpeg, format="webp")["image"].content_type == "image/webp"


def test_invert_keeps_transparency():
    image = picture(mode="RGBA", colour=(10, 20, 30, 0))
    image.putpixel((1, 1), (10, 20, 30, 255))
    result = opened(edit("invert", image_blob(image)))
    assert result.getpixel((1, 1)) == (245, 235, 225, 255)
    assert result.getpixel((5, 5))[3] == 0


def test_blur_softens_the_edge_between_halves():
    result = opened(edit("blur", halves(), radius=3)).convert("RGB")
    edge = result.getpixel((20, 10))
    assert edge != RED and edge != WHITE
    assert result.getpixel((2, 10)) == RED  # far from the edge


def test_box_blur_differs_from_gaussian():
    gaussian = opened(edit("blur", halves(), radius=3, kind="gaussian")).tobytes()
    box = opened(edit("blur", halves(), radius=3, kind="box")).tobytes()
    assert gaussian != box


def test_sharpen_increases_edge_contrast():
    soft = image_blob(Image.open(io.BytesIO(halves().data)).filter(ImageFilter.GaussianBlur(2)))
    before = analyze("sharpness", soft)["laplacian_variance"]
    after = analyze("sharpness", edit("sharpen", soft, amount=300)["image"])["laplacian_variance"]
    assert after > before * 1.5


def test_adjust_brightness_and_saturation():
    image = image_blob(picture(colour=(100, 50, 50)))
    bright = opened(edit("adjust", image, brightness=2.0)).getpixel((0, 0))
    assert bright == (200, 100, 100)
    gray = opened(edit("adjust", image, saturation=0.0)).convert("RGB").getpixel((0, 0))
    assert gray[0] == gray[1] == gray[2]


def test_adjust_without_a_change_is_refused():
    with pytest.raises(EngineError, match="Every factor is 1"):
        edit("adjust", halves())


def test_auto_contrast_stretches_a_dull_picture():
    image = picture(colour=(100, 100, 100))
    image.paste((150, 150, 150), (0, 0, 20, 20))
    result = opened(edit("auto_contrast", image_blob(image), cutoff=0)).convert("RGB")
    assert result.getpixel((0, 0)) == (255, 255, 255)
    assert result.getpixel((30, 0)) == (0, 0, 0)
    equalized = opened(edit("auto_contrast", image_blob(image), method="equalize"))
    assert equalized.convert("L").getextrema() != (100, 150)


def test_sepia_tints_white_warm_and_strength_blends():
    full = opened(edit("sepia", image_blob(picture(colour=(128, 128, 128))))).getpixel((0, 0))
    assert full[0] > full[1] > full[2]
    half = opened(edit("sepia", image_blob(picture(colour=(128, 128, 128))), strength=0.5))
    assert half.getpixel((0, 0)) != full and half.getpixel((0, 0))[0] < full[0]


def test_duotone_maps_black_and_white_to_the_two_colours():
    image = picture(colour=(0, 0, 0))
    image.paste(WHITE, (20, 0, 40, 20))
    result = opened(
        edit("duotone", image_blob(image), shadow_color="#102030", highlight_color="gold")
    )
    assert result.getpixel((0, 0)) == (16, 32, 48)
    assert result.getpixel((30, 0)) == (255, 215, 0)


def test_an_unknown_colour_is_refused():
    with pytest.raises(EngineError, match="'nope' is not a colour"):
        edit("duotone", halves(), shadow_color="nope")


def test_pixelate_makes_uniform_blocks():
    image = Image.linear_gradient("L").resize((40, 40)).convert("RGB")
    result = opened(edit("pixelate", image_blob(image), block_size=10)).convert("RGB")
    block = {result.getpixel((x, y)) for x in range(10) for y in range(10)}
    assert len(block) == 1
    assert result.getpixel((0, 0)) != result.getpixel((0, 39))


def test_redact_black_box_only_inside_the_region_and_clips_to_the_picture():
    region = {"x": 30, "y": 5, "width": 50, "height": 5}
    result = opened(edit("redact", halves(), regions=[region], style="black_box"))
    result = result.convert("RGB")
    assert result.getpixel((39, 7)) == (0, 0, 0) and result.getpixel((30, 5)) == (0, 0, 0)
    assert result.getpixel((29, 7)) == WHITE and result.getpixel((35, 12)) == WHITE


def test_redact_pixelate_and_blur_change_the_region():
    text = text_image("SECRET", size=(300, 100), font_size=40)
    for style in ("pixelate", "blur"):
        result = opened(
            edit(
                "redact", text, regions=[{"x": 0, "y": 0, "width": 150, "height": 100}], style=style
            )
        )
        original = Image.open(io.BytesIO(text.data)).convert("RGB")
        assert (
            result.convert("RGB").crop((0, 0, 150, 100)).tobytes()
            != original.crop((0, 0, 150, 100)).tobytes()
        )
        assert (
            result.convert("RGB").crop((150, 0, 300, 100)).tobytes()
            == original.crop((150, 0, 300, 100)).tobytes()
        )


@pytest.mark.parametrize(
    "regions, message",
    [([], "at least one region"), ([{"x": 50, "y": 0, "width": 5, "height": 5}], "outside")],
)
def test_redact_refuses_missing_or_outside_regions(regions, message):
    with pytest.raises(EngineError, match=message):
        edit("redact", halves(), regions=regions)


def test_round_corners_make_transparent_corners_and_png():
    output = edit("round_corners", image_blob(picture((60, 40)), "JPEG"), radius=15)
    result = opened(output)
    assert output["format"] == "png" and result.mode == "RGBA"
    assert result.getpixel((0, 0))[3] == 0 and result.getpixel((59, 39))[3] == 0
    assert result.getpixel((30, 20))[3] == 255 and result.getpixel((30, 0))[3] == 255


def test_remove_background_from_the_edges_keeps_enclosed_white():
    image = picture((30, 30))
    ImageDraw.Draw(image).rectangle((5, 5, 24, 24), outline=RED, width=3, fill=WHITE)
    result = opened(edit("remove_background", image_blob(image)))
    assert result.getpixel((0, 0))[3] == 0 and result.getpixel((29, 15))[3] == 0
    assert result.getpixel((6, 6)) == (*RED, 255)
    assert result.getpixel((15, 15)) == (*WHITE, 255)  # enclosed: not background
    everywhere = opened(edit("remove_background", image_blob(image), mode="everywhere"))
    assert everywhere.getpixel((15, 15))[3] == 0


def test_remove_background_reaches_around_corners():
    # A U shape open at the top: the white inside it is connected to the border.
    image = picture((30, 30))
    draw = ImageDraw.Draw(image)
    draw.rectangle((5, 5, 8, 24), fill=RED)
    draw.rectangle((21, 5, 24, 24), fill=RED)
    draw.rectangle((5, 21, 24, 24), fill=RED)
    result = opened(edit("remove_background", image_blob(image)))
    assert result.getpixel((15, 15))[3] == 0 and result.getpixel((6, 6))[3] == 255


def test_remove_background_by_colour_with_tolerance():
    image = picture(colour=(0, 200, 0))
    image.paste((10, 190, 10), (0, 0, 10, 20))
    image.paste(RED, (20, 0, 40, 20))
    strict = opened(edit("remove_background", image_blob(image), color="#00c800", tolerance=5))
    assert strict.getpixel((15, 5))[3] == 0 and strict.getpixel((5, 5))[3] == 255
    loose = opened(edit("remove_background", image_blob(image), color="#00c800", tolerance=20))
    assert loose.getpixel((5, 5))[3] == 0 and loose.getpixel((30, 5))[3] == 255


def test_remove_background_refuses_to_remove_everything():
    with pytest.raises(EngineError, match="Every pixel matches"):
        edit("remove_background", image_blob(picture()))


def test_strip_metadata_removes_exif_and_gps():
    exif = Image.Exif()
    exif[0x010F] = "Canon"
    exif[0x8825] = {1: "N", 2: (48.0, 51.0, 29.5), 3: "E", 4: (2.0, 17.0, 40.2)}
    jpeg = image_blob(picture(), "JPEG", exif=exif.tobytes())
    output = edit("strip_metadata", jpeg)
    assert output["removed"] == ["exif", "gps"] and output["format"] == "jpeg"
    assert len(opened(output).getexif()) == 0
    assert edit("strip_metadata", output["image"])["removed"] == []


def test_strip_metadata_turns_the_picture_upright_first():
    exif = Image.Exif()
    exif[0x0112] = 6  # rotated: shown 90 degrees clockwise
    jpeg = image_blob(picture((40, 20)), "JPEG", exif=exif.tobytes())
    output = edit("strip_metadata", jpeg)
    assert (output["width"], output["height"]) == (20, 40)


def test_colour_vision_simulation_confuses_red_and_green():
    image = picture(colour=(220, 30, 30))
    image.paste((30, 160, 30), (20, 0, 40, 20))
    normal = Image.open(io.BytesIO(image_blob(image).data)).convert("RGB")
    result = opened(edit("simulate_color_vision", image_blob(image), deficiency="protanopia"))
    red, green = result.getpixel((0, 0)), result.getpixel((30, 0))
    assert red[0] - red[2] < normal.getpixel((0, 0))[0] - normal.getpixel((0, 0))[2]
    assert abs(red[0] - green[0]) < 100
    gray = opened(edit("simulate_color_vision", image_blob(image), deficiency="achromatopsia"))
    assert len(set(gray.getpixel((0, 0)))) == 1


def test_pictures_past_the_pixel_limit_are_refused(monkeypatch):
    monkeypatch.setattr("engines.images._io.MAX_PIXELS", 100)
    with pytest.raises(EngineError, match="the most this tool decodes is 100 "):
        edit("invert", halves())


@pytest.mark.parametrize(
    "blob", [Blob(b"not an image", "image/png"), png_claiming_size(40_000, 40_000)]
)
def test_what_is_not_a_readable_picture_is_refused(blob):
    with pytest.raises(EngineError):
        edit("invert", blob)
