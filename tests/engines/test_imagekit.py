"""images.filter, images.compose and images.analyze on pictures drawn by the tests."""

import io

import pytest

pytest.importorskip("PIL", reason="the image engines need Pillow")
pytest.importorskip("numpy", reason="the image engines need numpy")

from PIL import Image, ImageDraw, ImageFilter  # noqa: E402

from engines.base import EngineError  # noqa: E402
from engines.blob import Blob  # noqa: E402
from engines.imagekit import (  # noqa: E402
    ImageAnalyzeEngine,
    ImageComposeEngine,
    ImageFilterEngine,
)
from tests.engines.fixtures import image_blob, png_claiming_size, text_image  # noqa: E402

filters, composer, analyzer = ImageFilterEngine(), ImageComposeEngine(), ImageAnalyzeEngine()
RED, WHITE, BLUE = (200, 40, 40), (255, 255, 255), (0, 0, 255)


def picture(size=(40, 20), colour=WHITE, mode="RGB") -> Image.Image:
    return Image.new(mode, size, colour)


def halves(size=(40, 20)) -> Blob:
    """Red on the left half, white on the right."""
    image = picture(size)
    image.paste(RED, (0, 0, size[0] // 2, size[1]))
    return image_blob(image)


def opened(output: dict) -> Image.Image:
    image = Image.open(io.BytesIO(output["image"].data))
    image.load()
    return image


def edit(operation: str, image: Blob, **inputs) -> dict:
    return filters.run({"image": image, **inputs}, {"operation": operation})


def compose(operation: str, **inputs) -> dict:
    return composer.run(inputs, {"operation": operation})


def analyze(operation: str, image: Blob, **inputs) -> dict:
    return analyzer.run({"image": image, **inputs}, {"operation": operation})


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
    monkeypatch.setattr("engines.imagekit.MAX_PIXELS", 100)
    with pytest.raises(EngineError, match="up to 0 megapixels|resize it first"):
        edit("invert", halves())


@pytest.mark.parametrize(
    "blob", [Blob(b"not an image", "image/png"), png_claiming_size(40_000, 40_000)]
)
def test_what_is_not_a_readable_picture_is_refused(blob):
    with pytest.raises(EngineError):
        edit("invert", blob)


# --- images.compose ----------------------------------------------------------------------


def test_border_adds_even_coloured_edges():
    output = compose("border", image=halves(), border_width=5, color="navy")
    result = opened(output).convert("RGB")
    assert (output["width"], output["height"]) == (50, 30)
    assert result.getpixel((0, 0)) == (0, 0, 128) and result.getpixel((6, 6)) == RED


def test_letterbox_pads_to_the_ratio_and_centres():
    output = compose("letterbox", image=halves(), aspect_ratio="1:1", color="black")
    result = opened(output).convert("RGB")
    assert (output["width"], output["height"]) == (40, 40)
    assert result.getpixel((0, 0)) == (0, 0, 0) and result.getpixel((5, 20)) == RED
    tall = compose("letterbox", image=halves(), aspect_ratio="4:1")
    assert (tall["width"], tall["height"]) == (80, 20)


@pytest.mark.parametrize("ratio", ["16-9", "0:5", "1:20"])
def test_letterbox_refuses_a_bad_ratio(ratio):
    with pytest.raises(EngineError, match="aspect ratio"):
        compose("letterbox", image=halves(), aspect_ratio=ratio)


def test_social_preset_cover_and_contain():
    cover = compose("social", image=halves(), preset="youtube-thumbnail")
    assert (cover["width"], cover["height"]) == (1280, 720)
    contain = compose(
        "social", image=halves(), preset="instagram-story", fit="contain", background="#000000"
    )
    result = opened(contain).convert("RGB")
    assert result.size == (1080, 1920)
    assert result.getpixel((540, 5)) == (0, 0, 0) and result.getpixel((100, 960)) == RED


def test_collage_places_pictures_in_a_grid():
    images = {
        "image": image_blob(picture(colour=RED)),
        "image_2": image_blob(picture(colour=BLUE)),
        "image_3": image_blob(picture(colour=(0, 128, 0))),
    }
    output = compose("collage", **images, cell_size=50, gap=10, background="black")
    result = opened(output).convert("RGB")
    assert (output["width"], output["height"]) == (130, 130)  # 2 columns, 2 rows
    assert result.getpixel((35, 35)) == RED and result.getpixel((95, 35)) == BLUE
    assert result.getpixel((35, 95)) == (0, 128, 0) and result.getpixel((95, 95)) == (0, 0, 0)
    row = compose("collage", **images, columns=3, cell_size=50, gap=0)
    assert (row["width"], row["height"]) == (150, 50)
    capped = compose("collage", **images, columns=9, cell_size=50, gap=0)
    assert (capped["width"], capped["height"]) == (150, 50)


def test_collage_needs_two_pictures():
    with pytest.raises(EngineError, match="at least two pictures"):
        compose("collage", image=halves())


def test_logo_is_scaled_placed_and_made_translucent():
    logo = image_blob(picture((10, 10), colour=BLUE))
    output = compose(
        "logo",
        image=image_blob(picture((100, 50))),
        overlay=logo,
        scale=0.2,
        opacity=0.5,
        margin=0,
        position="bottom-right",
    )
    result = opened(output).convert("RGB")
    assert result.getpixel((90, 40)) == (127, 127, 255)  # half blue over white
    assert result.getpixel((79, 40)) == WHITE and result.getpixel((90, 29)) == WHITE


def test_logo_is_required():
    with pytest.raises(EngineError, match="overlay"):
        compose("logo", image=halves())


def test_text_watermark_draws_in_the_chosen_corner():
    base = image_blob(picture((200, 100), colour=(0, 0, 0)))
    output = compose("text_watermark", image=base, text="ACME", position="top-left", opacity=1)
    result = opened(output).convert("L")
    top_left = result.crop((0, 0, 100, 50)).getextrema()
    bottom_right = result.crop((100, 50, 200, 100)).getextrema()
    assert top_left[1] > 200 and bottom_right == (0, 0)


def test_tiled_text_watermark_covers_the_picture():
    base = image_blob(picture((300, 300), colour=(0, 0, 0)))
    result = opened(compose("text_watermark", image=base, text="DRAFT", position="tiled"))
    quarters = [(0, 0), (150, 0), (0, 150), (150, 150)]
    assert all(
        result.convert("L").crop((x, y, x + 150, y + 150)).getextrema()[1] > 40 for x, y in quarters
    )


def test_text_watermark_needs_text():
    with pytest.raises(EngineError, match="watermark text"):
        compose("text_watermark", image=halves(), text="  ")


def test_meme_writes_white_captions_top_and_bottom():
    base = image_blob(picture((300, 300), colour=(40, 40, 40)))
    result = opened(compose("meme", image=base, top_text="top", bottom_text="bottom"))
    gray = result.convert("L")
    assert gray.crop((0, 0, 300, 60)).getextrema()[1] == 255
    assert gray.crop((0, 240, 300, 300)).getextrema()[1] == 255
    assert gray.crop((0, 120, 300, 180)).getextrema() == (40, 40)


def test_meme_needs_a_caption():
    with pytest.raises(EngineError, match="top text, a bottom text"):
        compose("meme", image=halves())


def test_favicons_make_an_ico_and_three_pngs():
    output = compose("favicons", image=halves(), fit="contain")
    ico = Image.open(io.BytesIO(output["favicon_ico"].data))
    assert ico.format == "ICO" and ico.info["sizes"] == {(16, 16), (32, 32), (48, 48)}
    assert output["favicon_ico"].content_type == "image/x-icon"
    sizes = [
        Image.open(io.BytesIO(output[key].data)).size
        for key in ("apple_touch_icon", "icon_192", "icon_512")
    ]
    assert sizes == [(180, 180), (192, 192), (512, 512)]
    icon = Image.open(io.BytesIO(output["icon_512"].data))
    assert icon.getpixel((0, 0))[3] == 0  # contain pads with transparency
    assert [icon["sizes"] for icon in output["manifest_icons"]] == ["192x192", "512x512"]
    flat = compose("favicons", image=halves(), background="white")
    assert Image.open(io.BytesIO(flat["icon_512"].data)).getpixel((0, 0)) == (255, 255, 255, 255)


def test_placeholder_has_the_size_colour_and_a_label():
    output = compose("placeholder", size="300x100", background="#ff0000", text_color="#0000ff")
    result = opened(output).convert("RGB")
    assert result.size == (300, 100) and result.getpixel((2, 2)) == (255, 0, 0)
    assert (0, 0, 255) in {colour for _, colour in result.getcolors(10_000)}
    blank = opened(compose("placeholder", size="30 x 20", label="", format="jpeg"))
    assert blank.format == "JPEG" and blank.size == (30, 20)


@pytest.mark.parametrize("size", ["300", "0x10", "5000x10"])
def test_placeholder_refuses_a_bad_size(size):
    with pytest.raises(EngineError):
        compose("placeholder", size=size)


def test_swatch_draws_each_colour_with_a_readable_label():
    output = compose("swatch", colors=["#000000", "white", "#2a9d8f"], swatch_size=40)
    result = opened(output).convert("RGB")
    assert (output["width"], output["height"]) == (120, 40)
    assert output["colors"] == ["#000000", "#ffffff", "#2a9d8f"]
    assert result.getpixel((1, 1)) == (0, 0, 0) and result.getpixel((41, 1)) == WHITE
    assert WHITE in {c for _, c in result.crop((0, 0, 40, 40)).getcolors(2000)}
    grid = compose("swatch", colors=["red"] * 6, swatch_size=40, layout="grid", labels=False)
    assert (grid["width"], grid["height"]) == (160, 80)


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
