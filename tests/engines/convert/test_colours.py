"""The colour engine (convert.colour), run through its catalogue tools."""

import pytest

from engines import EngineError


def test_colour_parsing_of_names_alpha_and_cmyk(run):
    out = run("color-converter", color="RebeccaPurple")
    assert (out["hex"], out["css_names"]) == ("#663399", ["rebeccapurple"])
    assert run("color-converter", color="#f008")["rgb"] == "rgb(255 0 0 / 53.3%)"
    assert run("color-converter", color="cmyk(0%, 100%, 100%, 0%)")["hex"] == "#ff0000"
    with pytest.raises(EngineError, match="is not a colour"):
        run("color-converter", color="blurple")


def test_contrast_extremes_and_translucent_text(run):
    assert run("color-contrast-checker", foreground="black")["ratio"] == 21
    half = run("color-contrast-checker", foreground="rgb(0 0 0 / 0%)")
    assert half["ratio"] == 1 and half["ui_components"] is False
    with pytest.raises(EngineError, match="background must be opaque"):
        run("color-contrast-checker", foreground="black", background="#fff0")


def test_palette_tints_start_at_the_base_and_lighten(run):
    out = run("color-palette-generator", color="#000000", scheme="tints", count=3)
    assert out["colors"] == ["#000000", "#404040", "#808080"]
