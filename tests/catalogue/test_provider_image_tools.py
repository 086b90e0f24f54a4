"""Image generation and image understanding tools: distinct prompts, and every one run through
the API on the fake provider; without a provider they are unavailable and a run is 503.

The API runs use the embedded default (SQLite, in-process worker) with ``FakeOpenAI`` as the
model provider, as tests/catalogue/test_model_tools.py does for the text tools.
"""

import base64
import dataclasses
import itertools

import pytest
from jsonschema import Draft202012Validator

from catalogue import Tool, load_catalogue
from engines.models import breaker, imagegen, llm, provider_transport, vision
from extensions import db
from services import accounts, keys
from tests.catalogue.test_model_tools import near_duplicates
from tests.helpers import auth, embedded_app_at

DISPATCH = "/v1/tools/run"
GENERATORS = sorted(t.slug for t in load_catalogue() if t.engine == "images.generate")
VISION = sorted(t.slug for t in load_catalogue() if t.engine == "vision.chat")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
NO_PROVIDER = (
    "needs a model provider: set AI_BASE_URL to an OpenAI-compatible API (and AI_API_KEY if it "
    "needs one)."
)


def tool(slug: str) -> Tool:
    return load_catalogue().get(slug)


# --- the catalogue -----------------------------------------------------------------------


def test_there_are_at_least_fifteen_tools_of_each_kind_in_their_categories():
    assert len(GENERATORS) >= 15 and len(VISION) >= 15
    assert {tool(slug).category for slug in GENERATORS} == {"image-generation"}
    assert {tool(slug).category for slug in VISION} == {"image-understanding"}


def _as_prompted(generator: Tool) -> Tool:
    """A generator as near_duplicates reads a model tool: its style and negative prompt stand
    for the system prompt."""
    params = generator.params
    system = f"{params.get('style', '')}\n{params.get('negative', '')}"
    return dataclasses.replace(generator, params={"system": system, "prompt": params["prompt"]})


def test_no_two_tools_share_or_near_duplicate_a_prompt_or_an_interface():
    assert near_duplicates([_as_prompted(tool(slug)) for slug in GENERATORS]) == []
    assert near_duplicates([tool(slug) for slug in VISION]) == []


@pytest.mark.parametrize("slug", GENERATORS)
def test_a_generator_is_a_queued_creator_image_tool_whose_template_uses_its_inputs(slug):
    generator = tool(slug)
    assert (generator.queue, generator.required_plan, generator.credit_class) == (
        True,
        "creator",
        "image",
    )
    assert imagegen.check_params(generator.params, generator.inputs) == []
    template_fields = set(llm.placeholders(generator.params["prompt"]))
    assert template_fields | set(imagegen.ENGINE_FIELDS) >= set(generator.inputs["properties"])
    assert set(generator.inputs["properties"]) >= {"count", "avoid"}
    images = generator.output["properties"]["images"]
    assert images["maxItems"] >= generator.inputs["properties"]["count"]["maximum"]
    assert images["items"]["contentMediaType"] == "image/png"


@pytest.mark.parametrize("slug", GENERATORS)
def test_a_generators_example_shows_the_request_its_inputs_make(slug):
    generator = tool(slug)
    example = generator.examples[0]
    request = imagegen.request_for(generator.with_defaults(example["input"]), generator.params)
    output = example["output"]

    assert (output["prompt"], output["style"], output["negative_prompt"], output["size"]) == (
        request.prompt,
        request.style,
        request.negative_prompt,
        request.size,
    )
    assert len(output["images"]) == request.count


@pytest.mark.parametrize("slug", VISION)
def test_a_vision_tool_is_a_queued_image_tool_whose_template_uses_its_text_inputs(slug):
    reader = tool(slug)
    assert (reader.queue, reader.required_plan, reader.credit_class) == (True, "pro", "image")
    assert vision.check_params(reader.params, reader.inputs) == []
    text_fields = set(reader.inputs["properties"]) - set(reader.params["images"])
    assert set(llm.placeholders(reader.params["prompt"])) == text_fields
    assert reader.primary == reader.params["images"][0]
    for name in reader.params["images"]:
        assert set(reader.inputs["properties"][name]["x-accept"]) <= set(vision.IMAGE_TYPES)


@pytest.mark.parametrize("slug", VISION)
def test_a_vision_tools_output_schema_fits_its_format(slug):
    reader = tool(slug)
    format = reader.params.get("format", llm.DEFAULT_FORMAT)
    if format in ("text", "markdown"):
        assert reader.output["properties"] == {"text": {"type": "string", "minLength": 1}}
    else:
        assert format == "json"
        assert set(reader.output["required"]) == set(reader.output["properties"])


@pytest.mark.parametrize("slug", VISION)
def test_a_vision_tools_example_images_are_tiny_data_uris(slug):
    example = tool(slug).examples[0]["input"]
    for name in tool(slug).params["images"]:
        if name in example:
            assert example[name].startswith("data:image/png;base64,")
            assert len(example[name]) < 400


# --- through the API ---------------------------------------------------------------------


@pytest.fixture(autouse=True)
def no_backoff(monkeypatch):
    monkeypatch.setattr(provider_transport, "_sleep", lambda seconds: None)
    breaker.reset_breakers()
    yield
    breaker.reset_breakers()


@pytest.fixture
def fake_provider_settings():
    """``fake_provider`` wants the key the apps here send."""
    return {"api_key": "sk-test"}


@pytest.fixture(scope="module")
def provider_app(fake_provider, tmp_path_factory):
    with embedded_app_at(
        tmp_path_factory.mktemp("images") / "runs.db",
        AI_BASE_URL=fake_provider.base_url,
        AI_API_KEY="sk-test",
        AI_TIMEOUT_SECONDS=5.0,
    ) as app:
        yield app


@pytest.fixture(scope="module")
def bare_app(tmp_path_factory):
    """No model provider at all."""
    with embedded_app_at(tmp_path_factory.mktemp("bare") / "runs.db", AI_BASE_URL=None) as app:
        yield app


_emails = itertools.count(1)


def creator_key(app, plan: str = "creator") -> str:
    with app.app_context():
        account = accounts.create_account(f"images{next(_emails)}@example.com", plan)
        _key, raw = keys.create_key(account, "image tools")
        db.session.commit()
    return raw


def run_example(app, slug: str, key: str | None = None):
    return app.test_client().post(
        DISPATCH,
        headers={**auth(key or creator_key(app)), "Prefer": "wait=30"},
        json={"slug": slug, **tool(slug).examples[0]["input"]},
    )


def succeeded(response, slug: str) -> dict:
    assert response.status_code == 200, response.get_json()
    body = response.get_json()
    assert (body["tool"], body["status"]) == (slug, "succeeded")
    Draft202012Validator(tool(slug).output).validate(body["output"])
    return body["output"]


def fetch(app, file: dict) -> bytes:
    response = app.test_client().get(file["url"].split("svc.test", 1)[1])
    assert response.status_code == 200
    data = response.get_data()
    response.close()
    assert (response.mimetype, len(data)) == (file["content_type"], file["size"])
    return data


@pytest.mark.parametrize("slug", GENERATORS)
def test_every_generator_runs_through_the_api_and_makes_png_files(
    provider_app, fake_provider, slug
):
    generator = tool(slug)
    inputs = generator.with_defaults(generator.examples[0]["input"])
    before = len(fake_provider.calls("/v1/images/generations"))

    output = succeeded(run_example(provider_app, slug), slug)

    (call,) = fake_provider.calls("/v1/images/generations")[before:]
    assert call.headers["authorization"] == "Bearer sk-test"
    assert (call.json["n"], call.json["size"]) == (inputs["count"], output["size"])
    assert call.json["prompt"].startswith(output["prompt"])
    assert f"Style: {output['style']}." in call.json["prompt"]
    assert call.json["prompt"].endswith(f"Avoid: {output['negative_prompt']}.")
    assert len(output["images"]) == inputs["count"]
    for file in output["images"]:
        assert file["content_type"] == "image/png"
        assert fetch(provider_app, file).startswith(PNG_MAGIC)


@pytest.mark.parametrize("slug", VISION)
def test_every_vision_tool_runs_through_the_api_with_its_images(provider_app, fake_provider, slug):
    reader = tool(slug)
    example = reader.examples[0]["input"]
    before = len(fake_provider.calls("/v1/chat/completions"))

    output = succeeded(run_example(provider_app, slug, creator_key(provider_app, "pro")), slug)

    (call,) = fake_provider.calls("/v1/chat/completions")[before:]
    system, user = call.json["messages"]
    assert system["content"].startswith(reader.params["system"].strip())
    images = [part["image_url"] for part in user["content"] if part["type"] == "image_url"]
    sent = [base64.b64decode(image["url"].partition(",")[2]) for image in images]
    assert sent == [
        base64.b64decode(example[name].partition(",")[2]) for name in reader.params["images"]
    ]
    assert {image["detail"] for image in images} == {reader.params.get("detail", "auto")}
    assert call.json["max_tokens"] == reader.params["max_tokens"]
    if reader.params["format"] == "json":
        assert call.json["response_format"]["json_schema"]["schema"] == reader.output
    else:
        assert output["text"].strip()


def test_the_second_image_of_a_comparison_is_required_at_run_time(provider_app):
    example = tool("image-difference-finder").examples[0]["input"]
    response = provider_app.test_client().post(
        DISPATCH,
        headers={**auth(creator_key(provider_app, "pro")), "Prefer": "wait=30"},
        json={"slug": "image-difference-finder", "before": example["before"]},
    )

    assert response.status_code == 422
    assert response.get_json()["detail"] == (
        "after: send an image (a URL, a data: URI, base64 or a multipart upload)."
    )


def test_a_pro_key_cannot_run_an_image_generator(provider_app):
    response = run_example(provider_app, "logo-concept-generator", creator_key(provider_app, "pro"))

    assert response.status_code == 402
    assert response.get_json()["required_plan"] == "creator"


@pytest.mark.parametrize(
    ("slug", "path", "capability"),
    [
        ("poster-art-generator", "/v1/images/generations", "image generation"),
        ("chart-data-extractor", "/v1/chat/completions", "image understanding"),
    ],
)
def test_a_failing_provider_answers_503(provider_app, fake_provider, slug, path, capability):
    fake_provider.fail_next(3, status=500, retry_after="6")
    before = len(fake_provider.calls(path))

    response = run_example(provider_app, slug)

    assert response.status_code == 503
    body = response.get_json()
    assert body["code"] == "provider_unavailable"
    assert body["detail"].startswith(f"No {capability} provider could serve")
    assert response.headers["Retry-After"] == "6"
    assert len(fake_provider.calls(path)) - before == 3


# --- without a provider ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("slug", "capability"),
    [("avatar-generator", "Image generation"), ("alt-text-writer", "Image understanding")],
)
def test_without_a_provider_a_run_is_503_naming_the_setting(bare_app, slug, capability):
    response = run_example(bare_app, slug)

    assert response.status_code == 503
    body = response.get_json()
    assert body["code"] == "provider_unavailable"
    assert body["detail"] == f"{capability} {NO_PROVIDER}"


@pytest.mark.parametrize(
    ("slug", "capability"),
    [("storyboard-frame-generator", "Image generation"), ("meme-explainer", "Image understanding")],
)
def test_without_a_provider_the_catalogue_shows_the_tool_unavailable(bare_app, slug, capability):
    response = bare_app.test_client().get(f"/v1/tools/{slug}")

    assert response.status_code == 200
    body = response.get_json()
    assert (body["available"], body["unavailable_reason"]) == (False, f"{capability} {NO_PROVIDER}")


def test_without_a_provider_health_reports_every_image_tool(bare_app):
    engines = bare_app.test_client().get("/v1/health").get_json()["checks"]["engines"]

    assert engines["status"] == "degraded"
    assert f"{len(GENERATORS)} tool(s): Image generation {NO_PROVIDER}" in engines["detail"]
    assert f"{len(VISION)} tool(s): Image understanding {NO_PROVIDER}" in engines["detail"]


def test_with_a_provider_the_catalogue_shows_the_tools_available(provider_app):
    response = provider_app.test_client().get("/v1/tools", query_string={"plan": "creator"})

    shown = {t["slug"]: t["available"] for t in response.get_json()["tools"]}
    assert all(shown[slug] for slug in GENERATORS + VISION)
