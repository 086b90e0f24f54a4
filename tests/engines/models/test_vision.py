"""The vision.chat engine: image parts, messages, formats, and the provider-only chain."""

import base64
import json

import pytest
from jsonschema import Draft202012Validator

from config import Config
from engines.base import EngineError, ProviderUnavailable
from engines.blob import Blob
from engines.models import llm, local_llm, providers, vision
from tests.fakes.openai_server import make_png
from tests.helpers import bare_app

PNG = make_png(4, 3, b"\x10\x20\x30")
JPEG = b"\xff\xd8\xff\xe0" + b"jpeg bytes"
PARAMS = {
    "images": ["photo"],
    "system": "You describe photos for a museum catalogue.",
    "prompt": "Audience: {audience}",
}
INPUTS = {"photo": Blob(PNG, "image/png", "photo.png"), "audience": "children"}
ENGINE = vision.VisionChatEngine()
SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["caption", "objects"],
    "properties": {
        "caption": {"type": "string", "minLength": 1},
        "objects": {"type": "array", "items": {"type": "string"}},
    },
}


pytestmark = pytest.mark.usefixtures("no_provider_waits")


def sent(fake_provider, index=0):
    return fake_provider.calls("/v1/chat/completions")[index].json


def data_uri(data: bytes, content_type: str = "image/png") -> str:
    return f"data:{content_type};base64," + base64.b64encode(data).decode()


# --- params ------------------------------------------------------------------------------


def params_errors(params):
    return [e.message for e in Draft202012Validator(ENGINE.params_schema).iter_errors(params)]


def test_params_schema_is_llm_chats_plus_the_images_and_their_detail():
    schema = ENGINE.params_schema
    assert set(schema["properties"]) == {
        *llm.LlmChatEngine.params_schema["properties"],
        "images",
        "detail",
    }
    assert schema["required"] == ["system", "prompt", "images"]
    assert params_errors({**PARAMS, "format": "json", "detail": "high", "max_tokens": 900}) == []
    # Building it left llm.chat's own schema alone.
    assert "images" not in llm.LlmChatEngine.params_schema["properties"]


@pytest.mark.parametrize(
    "change",
    [{"images": []}, {"images": ["a", "a"]}, {"images": ["a b"]}, {"detail": "ultra"},
     {"format": "html"}, {"prompt": "{audience!r}"}],
)  # fmt: skip
def test_params_schema_refuses_bad_params(change):
    assert params_errors({**PARAMS, **change}) != []


def test_params_schema_requires_images():
    params = {key: value for key, value in PARAMS.items() if key != "images"}
    assert params_errors(params) == ["'images' is a required property"]


def test_check_params_wants_every_image_input_listed_and_none_in_the_template():
    inputs = {"properties": {"photo": {"contentMediaType": "image/*"}, "audience": {}}}
    assert vision.check_params(PARAMS, inputs) == []
    assert vision.check_params({**PARAMS, "images": []}, inputs) == [
        "images must list every image input."
    ]
    assert vision.check_params({**PARAMS, "prompt": "{audience} {photo} {age}"}, inputs) == [
        "prompt placeholder {age} is not an input field.",
        "prompt placeholder {photo} is an image; images are sent as image parts.",
    ]


# --- image parts and the user message ----------------------------------------------------


def test_an_image_part_carries_the_bytes_as_a_data_uri_with_the_detail():
    part = vision.image_part(Blob(JPEG, "Image/JPEG; q=1"), "photo", "high")
    assert part == {
        "type": "image_url",
        "image_url": {"url": data_uri(JPEG, "image/jpeg"), "detail": "high"},
    }


@pytest.mark.parametrize(
    ("blob", "message"),
    [
        (Blob(b"BM....", "image/bmp"), "photo: image/bmp cannot be read by the vision model; "
         "send a PNG, JPEG, WebP or GIF image."),
        (Blob(b"%PDF-1.7", "application/pdf"), "photo: application/pdf cannot be read by the "
         "vision model; send a PNG, JPEG, WebP or GIF image."),
        (Blob(b"", "image/png"), "photo: the image is empty."),
    ],
)  # fmt: skip
def test_an_image_the_model_cannot_read_is_an_engine_error(blob, message):
    with pytest.raises(EngineError) as caught:
        vision.image_part(blob, "photo")
    assert caught.value.message == message


def test_an_image_over_the_models_limit_is_an_engine_error(monkeypatch):
    monkeypatch.setattr(vision, "MAX_IMAGE_BYTES", 10)
    with pytest.raises(EngineError, match=r"photo: the image is 11 bytes, over the vision"):
        vision.image_part(Blob(b"\x89PNG" + b"x" * 7, "image/png"), "photo")


def test_the_user_message_is_the_prompt_then_the_image():
    assert vision.user_content(INPUTS, PARAMS) == [
        {"type": "text", "text": "Audience: children"},
        {"type": "image_url", "image_url": {"url": data_uri(PNG), "detail": "auto"}},
    ]


def test_several_images_are_sent_in_order_each_named():
    inputs = {"before": Blob(PNG, "image/png"), "after_shot": Blob(JPEG, "image/jpeg")}
    params = {**PARAMS, "images": ["before", "after_shot"], "prompt": "Compare.", "detail": "low"}

    content = vision.user_content(inputs, params)

    assert [part.get("text") or part["image_url"]["url"][:15] for part in content] == [
        "Compare.",
        "Image 1: before",
        "data:image/png;",
        "Image 2: after shot",
        "data:image/jpeg",
    ]
    assert {part["image_url"]["detail"] for part in content if part["type"] == "image_url"} == {
        "low"
    }


@pytest.mark.parametrize("value", [None, "https://example.com/a.png"])
def test_a_missing_image_is_an_engine_error_naming_the_field(value):
    with pytest.raises(EngineError) as caught:
        vision.user_content({**INPUTS, "photo": value}, PARAMS)
    assert caught.value.message == (
        "photo: send an image (a URL, a data: URI, base64 or a multipart upload)."
    )


# --- through the provider ----------------------------------------------------------------


def test_a_text_answer_is_shaped_and_the_provider_sees_system_prompt_and_image(
    ai_app, fake_provider
):
    output = ENGINE.run(dict(INPUTS), PARAMS)

    assert output["text"].startswith("Deterministic answer ")
    body = sent(fake_provider)
    assert body["messages"] == [
        {
            "role": "system",
            "content": "You describe photos for a museum catalogue.\n\n"
            "Answer in plain text, without Markdown formatting.",
        },
        {"role": "user", "content": vision.user_content(INPUTS, PARAMS)},
    ]
    assert body["model"] == Config.AI_MODEL_CHAT
    assert "response_format" not in body


def test_a_json_tool_holds_the_model_to_its_output_schema(ai_app, fake_provider):
    params = {**PARAMS, "format": "json", "temperature": 0.0, "max_tokens": 300}

    output = vision.generate(dict(INPUTS), params, output_schema=SCHEMA)

    Draft202012Validator(SCHEMA).validate(output)
    body = sent(fake_provider)
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "output", "schema": SCHEMA},
    }
    assert (body["temperature"], body["max_tokens"]) == (0.0, 300)


def test_an_answer_off_the_schema_is_asked_for_again_with_the_images(ai_app, fake_provider):
    fake_provider.reply('{"caption": ""}', json.dumps({"caption": "A jug.", "objects": ["jug"]}))
    params = {**PARAMS, "format": "json"}

    output = vision.generate(dict(INPUTS), params, output_schema=SCHEMA)

    assert output == {"caption": "A jug.", "objects": ["jug"]}
    repair = sent(fake_provider, 1)["messages"]
    assert [m["role"] for m in repair] == ["system", "user", "assistant", "user"]
    assert repair[1]["content"][1]["type"] == "image_url"
    assert "matching the schema" in repair[3]["content"]


def test_two_malformed_answers_are_provider_unavailable(ai_app, fake_provider):
    fake_provider.reply("no json here", "still none")
    with pytest.raises(ProviderUnavailable, match=llm.MALFORMED):
        vision.generate(dict(INPUTS), {**PARAMS, "format": "json"}, output_schema=SCHEMA)


def test_a_list_answer_is_split_into_items(ai_app, fake_provider):
    fake_provider.reply("- a jug\n- a bowl")
    assert ENGINE.run(dict(INPUTS), {**PARAMS, "format": "list"}) == {"items": ["a jug", "a bowl"]}


def test_a_failing_provider_is_provider_unavailable_for_image_understanding(ai_app, fake_provider):
    fake_provider.fail_next(3, status=500)
    with pytest.raises(ProviderUnavailable, match="No image understanding provider could serve"):
        ENGINE.run(dict(INPUTS), PARAMS)


def test_without_a_provider_images_never_go_to_the_embedded_model(monkeypatch):
    monkeypatch.setattr(local_llm, "unavailable_reason", lambda: None)
    monkeypatch.setattr(local_llm, "complete", lambda *a, **k: pytest.fail("sent locally"))

    with bare_app(None).app_context():
        reason = ENGINE.unavailable_reason()
        with pytest.raises(ProviderUnavailable) as caught:
            ENGINE.run(dict(INPUTS), PARAMS)

    assert reason == (
        "Image understanding needs a model provider: set AI_BASE_URL to an OpenAI-compatible "
        "API (and AI_API_KEY if it needs one)."
    )
    assert caught.value.message == reason


def test_the_fake_provider_refuses_an_image_part_that_is_not_an_image(ai_app, fake_provider):
    # The fake checks image parts as OpenAI does, so the API tests would catch a wrong part.
    bad = [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x.png"}}]}]
    with pytest.raises(EngineError, match="Invalid image_url"):
        providers.chat(bad, temperature=0, max_tokens=5)
