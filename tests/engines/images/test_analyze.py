"""images.analyze on pictures drawn by the tests."""

import io

import pytest

pytest.importorskip("PIL", reason="the image engines need Pillow")
pytest.importorskip("numpy", reason="the image engines need numpy")
from PIL import Image, ImageDraw, ImageFilter  # noqa: E402

from engines.base import EngineError  # noqa: E402
from tests.engines.fixtures import image_blob, text_image  # noqa: E402
from tests.engines.images.pictures import (  # noqa: E402
    BLUE,
    RED,
    WHITE,
    analyze,
    halves,
    picture,
)

# --- images.analyze ----------------------------------------------------------------------


def test_palette_finds_colours_and_their_shares():
    image = picture((40, 20), colour=BLUE)
    image.paste(RED, (0, 0, 30, 20))
    output = analyze("palette", image_blob(image), count=4)
    assert [(c["hex"], c["share"]) for c in output["colors"]] == [
        ("#c82828", 0.75),
        ("#0000ff", 0.25),
    ]
    assert output["colors"][1]["name"] == "blue" and output["count"] == 2


def test_palette_ignores_transparent_pixels_and_refuses_an_empty_picture():
    image = picture(mode="RGBA", colour=(0, 0, 0, 0))
    image.paste((*RED, 255), (0, 0, 10, 10))
    assert analyze("palette", image_blob(image))["colors"][0]["share"] == 1.0
    with pytest.raises(EngineError, match="fully transparent"):
        analyze("palette", image_blob(picture(mode="RGBA", colour=(0, 0, 0, 0))))


def test_metadata_reads_camera_fields_and_gps_in_decimal_degrees():
    exif = Image.Exif()
    exif[0x010F], exif[0x0110] = "Canon", "EOS R6"
    exif[0x8769] = {0x9003: "2026:03:14 09:30:12", 0x829A: 0.004, 0x829D: 2.8, 0x8827: 200}
    exif[0x8825] = {1: "S", 2: (33.0, 51.0, 36.0), 3: "W", 4: (70.0, 30.0, 0.0), 6: 12.5}
    jpeg = image_blob(picture(), "JPEG", exif=exif.tobytes(), dpi=(300, 300))
    output = analyze("metadata", jpeg)
    assert (output["camera_make"], output["camera_model"]) == ("Canon", "EOS R6")
    assert output["taken_at"] == "2026:03:14 09:30:12" and output["exposure_time"] == "1/250"
    assert (output["f_number"], output["iso"]) == (2.8, 200)
    assert output["gps"] == {"latitude": -33.86, "longitude": -70.5, "altitude_m": 12.5}
    assert output["dpi"] == [300.0, 300.0] and output["format"] == "jpeg"


def test_metadata_of_a_plain_png_is_mostly_empty():
    output = analyze("metadata", image_blob(picture(mode="RGBA")))
    assert output["has_alpha"] is True and output["gps"] is None and output["exif_tags"] == 0
    assert (output["width"], output["height"], output["frames"]) == (40, 20, 1)


def test_sharpness_tells_sharp_from_blurry():
    text = text_image("Sharp words 123", size=(600, 150), font_size=50)
    blurred = image_blob(Image.open(io.BytesIO(text.data)).filter(ImageFilter.GaussianBlur(6)))
    assert analyze("sharpness", text)["verdict"] == "sharp"
    output = analyze("sharpness", blurred)
    assert output["verdict"] == "blurry" and output["score"] < 50


def test_sharpness_refuses_a_tiny_picture():
    with pytest.raises(EngineError, match="too small"):
        analyze("sharpness", image_blob(picture((2, 2))))


@pytest.mark.parametrize(
    "colour, verdict",
    [((10, 10, 10), "underexposed"), ((250, 250, 250), "overexposed"), ((128, 128, 128), None)],
)
def test_exposure_verdicts(colour, verdict):
    output = analyze("exposure", image_blob(picture(colour=colour)))
    if verdict:
        assert output["verdict"] == verdict
    else:  # a flat mid-gray
        assert output["verdict"] == "low_contrast" and output["contrast"] == 0
    assert sum(output["histogram"]) == pytest.approx(1, abs=0.001)


def test_exposure_counts_clipped_pixels():
    image = picture(colour=(128, 128, 128))
    image.paste((0, 0, 0), (0, 0, 10, 20))
    image.paste(WHITE, (30, 0, 40, 20))
    output = analyze("exposure", image_blob(image))
    assert (output["shadows_clipped"], output["highlights_clipped"]) == (0.25, 0.25)
    assert output["verdict"] == "well_exposed" and len(output["notes"]) == 2


def test_hash_is_stable_under_resizing():
    photo = Image.linear_gradient("L").resize((200, 100)).convert("RGB")
    ImageDraw.Draw(photo).ellipse((20, 20, 80, 80), fill=RED)
    big = analyze("hash", image_blob(photo))
    small = analyze("hash", image_blob(photo.resize((100, 50))))
    assert big["difference_hash"] == small["difference_hash"]
    assert all(len(big[key]) == 16 for key in ("average_hash", "perceptual_hash"))


def test_compare_verdicts():
    photo = Image.linear_gradient("L").resize((200, 100)).convert("RGB")
    ImageDraw.Draw(photo).ellipse((20, 20, 80, 80), fill=RED)
    blob = image_blob(photo)
    same = analyze("compare", blob, other=blob)
    assert same["verdict"] == "identical" and same["similarity"] == 1.0
    copy = image_blob(photo.resize((120, 60)), "JPEG", quality=60)
    assert analyze("compare", blob, other=copy)["verdict"] == "near_duplicate"
    other = analyze("compare", blob, other=image_blob(photo.transpose(Image.Transpose.ROTATE_180)))
    assert other["verdict"] == "different" and other["pixel_identical"] is False


def test_compare_needs_the_second_picture():
    with pytest.raises(EngineError, match="second image"):
        analyze("compare", halves())


def test_transparency_shares_and_visible_box():
    image = picture((40, 20), mode="RGBA", colour=(0, 0, 0, 0))
    image.paste((255, 0, 0, 255), (10, 5, 20, 15))
    image.paste((255, 0, 0, 128), (20, 5, 30, 15))
    output = analyze("transparency", image_blob(image))
    assert output["verdict"] == "has_transparency"
    assert (output["opaque_share"], output["semi_transparent_share"]) == (0.125, 0.125)
    assert output["visible_box"] == {"x": 10, "y": 5, "width": 20, "height": 10}
    assert analyze("transparency", halves())["verdict"] == "opaque"
    empty = analyze("transparency", image_blob(picture(mode="RGBA", colour=(0, 0, 0, 0))))
    assert empty["verdict"] == "fully_transparent" and empty["visible_box"] is None


def test_print_size_uses_the_given_or_stored_dpi():
    image = image_blob(picture((1500, 1000)), "PNG", dpi=(100, 100))
    stored = analyze("print_size", image)
    assert (stored["dpi"], stored["dpi_source"]) == (100.0, "file")
    assert stored["print_size"]["width_in"] == 15.0 and stored["print_size"]["height_cm"] == 25.4
    assert (stored["aspect_ratio"], stored["nearest_standard_ratio"]) == ("3:2", "3:2")
    given = analyze("print_size", image, dpi=300)
    assert given["dpi_source"] == "input" and given["print_size"]["width_in"] == 5.0
    assert [size["dpi"] for size in given["print_sizes"]] == [300.0, 150.0, 72.0]


def test_print_size_names_the_nearest_ratio_either_way_up():
    output = analyze("print_size", image_blob(picture((1080, 1920))))
    assert (output["aspect_ratio"], output["nearest_standard_ratio"]) == ("9:16", "9:16")
    assert output["dpi_source"] == "default" and output["megapixels"] == 2.07


def test_platform_sizes_statuses():
    output = analyze(
        "platform_sizes",
        image_blob(picture((1600, 900))),
        presets=["x-post", "youtube-thumbnail", "linkedin-banner", "youtube-banner"],
    )
    statuses = {r["preset"]: r["status"] for r in output["results"]}
    assert statuses == {
        "x-post": "exact",
        "youtube-thumbnail": "resize",
        "linkedin-banner": "crop",
        "youtube-banner": "too_small",
    }
    banner = next(r for r in output["results"] if r["preset"] == "linkedin-banner")
    assert (banner["crop_loss"], banner["upscale"]) == (0.5556, 1.0)
    assert output["ready"] == ["x-post", "youtube-thumbnail"]
    assert len(analyze("platform_sizes", halves())["results"]) == 15
