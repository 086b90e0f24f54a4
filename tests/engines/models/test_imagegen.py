"""The images.generate engine: the prompt, size and count bounds, the provider call."""

import pytest
from jsonschema import Draft202012Validator

from config import Config
from engines.base import EngineError, ProviderUnavailable
from engines.blob import Blob
from engines.models import imagegen
from tests.helpers import bare_app

PARAMS = {
    "prompt": "A sticker of {subject}, {mood}.",
    "style": "bold vector ",
    "negative": "text, watermark",
    "size": "1024x1024",
    "count": 2,
}
INPUTS = {"subject": "a fox", "mood": "sleepy"}
ENGINE = imagegen.ImageGenerateEngine()


pytestmark = pytest.mark.usefixtures("no_provider_waits")


def params_errors(params):
    return [e.message for e in Draft202012Validator(ENGINE.params_schema).iter_errors(params)]


# --- params and the request --------------------------------------------------------------


def test_params_schema_accepts_the_documented_params_and_nothing_else():
    assert params_errors(PARAMS) == []
    assert params_errors({"prompt": "A fox."}) == []
    assert params_errors({**PARAMS, "model": "dall-e-3"}) != []


@pytest.mark.parametrize(
    "change",
    [{"size": "1024"}, {"size": "1024x1024px"}, {"count": 0}, {"count": 5},
     {"prompt": "{subject.__class__}"}, {"prompt": ""}],
)  # fmt: skip
def test_params_schema_refuses_bad_sizes_counts_and_templates(change):
    assert params_errors({**PARAMS, **change}) != []


def test_the_request_renders_the_template_and_takes_the_params_defaults():
    request = imagegen.request_for(INPUTS, PARAMS)

    assert request == imagegen.ImageRequest(
        prompt="A sticker of a fox, sleepy.",
        style="bold vector",
        negative_prompt="text, watermark",
        size="1024x1024",
        count=2,
    )


def test_inputs_override_size_and_count_and_add_to_the_negative_prompt():
    inputs = {**INPUTS, "size": "1536x1024", "count": 4, "avoid": " cars "}

    request = imagegen.request_for(inputs, PARAMS)

    assert (request.size, request.count) == ("1536x1024", 4)
    assert request.negative_prompt == "text, watermark, cars"


def test_without_params_defaults_one_square_image_is_asked_for():
    request = imagegen.request_for({}, {"prompt": "A fox."})
    assert (request.size, request.count, request.style, request.negative_prompt) == (
        "1024x1024",
        1,
        "",
        "",
    )


def test_a_placeholder_value_is_inserted_once_as_literal_text():
    request = imagegen.request_for({"subject": "{mood}", "mood": "x"}, PARAMS)
    assert request.prompt == "A sticker of {mood}, x."


@pytest.mark.parametrize(
    ("size", "message"),
    [
        ("1024", "Size '1024' is not WIDTHxHEIGHT in pixels, such as 1024x1024."),
        ("big", "Size 'big' is not WIDTHxHEIGHT in pixels, such as 1024x1024."),
        ("100x1024", "Size 100x1024 is out of range: each side must be 256 to 4096 pixels."),
        ("1024x5000", "Size 1024x5000 is out of range: each side must be 256 to 4096 pixels."),
    ],
)
def test_a_size_out_of_bounds_is_an_engine_error(size, message):
    with pytest.raises(EngineError) as caught:
        imagegen.request_for({**INPUTS, "size": size}, PARAMS)
    assert caught.value.message == message


@pytest.mark.parametrize("count", [0, 5, -1, True, "2", 1.5])
def test_a_count_out_of_bounds_is_an_engine_error(count):
    with pytest.raises(EngineError, match="Count must be a whole number from 1 to 4"):
        imagegen.request_for({**INPUTS, "count": count}, PARAMS)


def test_a_prompt_longer_than_image_models_take_is_an_engine_error():
    with pytest.raises(EngineError) as caught:
        imagegen.request_for({"subject": "fox " * 1000, "mood": "sleepy"}, PARAMS)
    assert caught.value.message == (
        "The prompt is 4,022 characters, over the 4,000 image models take: shorten the text inputs."
    )


# --- check_params ------------------------------------------------------------------------


def inputs_schema(**properties):
    return {"type": "object", "properties": {"subject": {}, "mood": {}, **properties}}


def test_check_params_accepts_bounded_engine_fields():
    schema = inputs_schema(
        size={"type": "string", "enum": ["1024x1024", "1536x1024"], "default": "1024x1024"},
        count={"type": "integer", "minimum": 1, "maximum": 4, "default": 2},
        avoid={"type": "string", "maxLength": 300, "default": ""},
    )
    assert imagegen.check_params(PARAMS, schema) == []


def test_check_params_reports_each_problem():
    schema = inputs_schema(
        size={"type": "string", "enum": ["huge"], "default": "1536x1024"},
        count={"type": "integer", "minimum": 0, "maximum": 10, "default": 1},
    )
    params = {**PARAMS, "prompt": "A sticker of {subject}, {mood}, {size}, {colour}."}

    assert imagegen.check_params(params, schema) == [
        "prompt placeholder {colour} is not an input field.",
        "prompt placeholder {size} is an engine field, not a template field.",
        "input size must be an enum of WIDTHxHEIGHT sizes.",
        "input size's default must be the params' size.",
        "input count must be an integer with a minimum of at least 1.",
        "input count must have a maximum of at most 4.",
        "input count's default must be the params' count.",
    ]


# --- the provider ------------------------------------------------------------------------


def test_generate_asks_the_provider_and_answers_the_images_and_the_request(ai_app, fake_provider):
    output = ENGINE.run({**INPUTS, "avoid": "cars"}, PARAMS)

    (call,) = fake_provider.calls("/v1/images/generations")
    assert call.json == {
        "model": Config.AI_MODEL_IMAGE,
        "prompt": "A sticker of a fox, sleepy.\n\nStyle: bold vector.\n\nAvoid: text, watermark, "
        "cars.",
        "n": 2,
        "size": "1024x1024",
    }
    assert [type(image) for image in output["images"]] == [Blob, Blob]
    assert all(image.data.startswith(b"\x89PNG\r\n\x1a\n") for image in output["images"])
    assert [image.filename for image in output["images"]] == ["image-1.png", "image-2.png"]
    assert output["images"][0].data != output["images"][1].data
    assert {key: value for key, value in output.items() if key != "images"} == {
        "prompt": "A sticker of a fox, sleepy.",
        "style": "bold vector",
        "negative_prompt": "text, watermark, cars",
        "size": "1024x1024",
    }


def test_no_style_or_negative_prompt_sends_the_prompt_alone(ai_app, fake_provider):
    ENGINE.run(INPUTS, {"prompt": PARAMS["prompt"]})
    assert (
        fake_provider.calls("/v1/images/generations")[0].json["prompt"]
        == "A sticker of a fox, sleepy."
    )


def test_a_failing_provider_is_provider_unavailable(ai_app, fake_provider):
    fake_provider.fail_next(3, status=503, retry_after="4")

    with pytest.raises(ProviderUnavailable) as caught:
        ENGINE.run(INPUTS, PARAMS)

    assert caught.value.message.startswith("No image generation provider could serve")
    assert caught.value.retry_after == 4
    assert len(fake_provider.calls("/v1/images/generations")) == 3


def test_without_a_provider_the_engine_is_unavailable_and_says_which_setting_to_set():
    with bare_app(None).app_context():
        reason = ENGINE.unavailable_reason()
        available = ENGINE.available()
        with pytest.raises(ProviderUnavailable) as caught:
            ENGINE.run(INPUTS, PARAMS)

    assert reason == (
        "Image generation needs a model provider: set AI_BASE_URL to an OpenAI-compatible API "
        "(and AI_API_KEY if it needs one)."
    )
    assert caught.value.message == reason
    assert available is False


def test_with_a_provider_the_engine_is_available(ai_app):
    assert ENGINE.unavailable_reason() is None
