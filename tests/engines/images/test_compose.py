"""images.compose (and its placeholder and swatch drawings) on pictures drawn by the tests."""

import io
from pathlib import Path

import pytest

pytest.importorskip("PIL", reason="the image engines need Pillow")
pytest.importorskip("numpy", reason="the image engines need numpy")
from PIL import Image  # noqa: E402

from engines.base import EngineError  # noqa: E402
from engines.images import placeholders  # noqa: E402
from tests.engines.fixtures import image_blob  # noqa: E402
from tests.engines.images.pictures import (  # noqa: E402
    BLUE,
    RED,
    WHITE,
    compose,
    halves,
    opened,
    picture,
)

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


def _colours(output: dict) -> set[tuple[int, int, int]]:
    return {colour for _, colour in opened(output).convert("RGB").getcolors(100_000)}


@pytest.mark.skipif(
    not Path(placeholders._EMOJI_FONT_FILE).is_file(), reason="no colour emoji font here"
)
def test_placeholder_draws_emoji_in_their_own_colours():
    grey = {"background": "#cccccc", "text_color": "#555555"}
    output = compose("placeholder", size="300x100", label="Hi 👋", **grey)
    # The waving hand is yellow; the box a missing glyph leaves would be the text's grey.
    assert any(r > 200 and g > 150 and b < 100 for r, g, b in _colours(output))


def test_placeholder_refuses_emoji_where_no_emoji_font_is(monkeypatch):
    monkeypatch.setattr(placeholders, "_EMOJI_FONT_FILE", "/nonexistent/NotoColorEmoji.ttf")
    with pytest.raises(EngineError, match="^Emoji cannot be drawn on this deployment") as caught:
        compose("placeholder", size="300x100", label="Hi 👋👋")
    assert caught.value.message.endswith("leave 👋 out of the label.")
    assert (85, 85, 85) in _colours(
        compose("placeholder", size="300x100", label="Hi", text_color="#555555")
    )


def test_placeholder_refuses_a_character_its_font_lacks():
    with pytest.raises(EngineError, match=r"^The label font has no glyph for ꦲ \(U\+A9B2\)"):
        compose("placeholder", size="300x100", label="ꦲ 1")


def test_placeholder_label_is_one_line():
    lines = opened(compose("placeholder", size="300x100", label="one\ntwo", format="png"))
    spaced = opened(compose("placeholder", size="300x100", label="one two", format="png"))
    assert lines.tobytes() == spaced.tobytes()


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
