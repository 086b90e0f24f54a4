"""Model-backed tools (engine llm.chat): distinct prompts, and every one run through the API.

The API runs use the embedded default (SQLite, in-process worker) with ``FakeOpenAI`` as the
model provider; a few also run against the real embedded SmolLM2 model.
"""

import dataclasses
import difflib
import importlib.util
import itertools
import re
import time

import pytest
from jsonschema import Draft202012Validator

from catalogue import Tool, load_catalogue
from engines import base
from engines.base import ModelUnfit
from engines.models import breaker, llm, local_llm, provider_transport, providers
from extensions import db
from services import accounts, keys, runs
from tests.helpers import auth, embedded_app_at

MODEL_TOOLS = sorted(tool.slug for tool in load_catalogue() if tool.engine == "llm.chat")
DISPATCH = "/v1/tools/run"
# Prompts this alike (difflib ratio of the normalized system prompt + template) are copies.
NEAR_DUPLICATE = 0.8

needs_local_model = pytest.mark.skipif(
    importlib.util.find_spec("xllamacpp") is None,
    reason="xllamacpp is not installed (pip install -r requirements-models.txt)",
)


def model_tools() -> list[Tool]:
    return [load_catalogue().get(slug) for slug in MODEL_TOOLS]


# --- distinct prompts --------------------------------------------------------------------


def _prompt_words(tool: Tool) -> list[str]:
    """The system prompt and template as lowercase words (case, punctuation, spacing ignored)."""
    return re.findall(r"[a-z0-9]+", f"{tool.params['system']}\n{tool.params['prompt']}".lower())


def near_duplicates(tools: list[Tool]) -> list[str]:
    """Pairs of tools whose prompts are near-copies, or whose interface is the same."""
    prompts = {tool.slug: _prompt_words(tool) for tool in tools}
    found = []
    for one, other in itertools.combinations(tools, 2):
        # Word sequences, without autojunk: common words must count as matches too.
        matcher = difflib.SequenceMatcher(
            None, prompts[one.slug], prompts[other.slug], autojunk=False
        )
        # quick_ratio bounds ratio from above: most pairs are told apart without the full diff.
        if matcher.quick_ratio() >= NEAR_DUPLICATE and matcher.ratio() >= NEAR_DUPLICATE:
            found.append(f"{one.slug} ~ {other.slug}: prompts {matcher.ratio():.2f} alike")
        if set(one.inputs["properties"]) == set(other.inputs["properties"]) and (
            one.output == other.output
        ):
            found.append(f"{one.slug} ~ {other.slug}: same input fields and output schema")
    return found


def _copy(tool: Tool, slug: str, **changes) -> Tool:
    return dataclasses.replace(tool, slug=slug, **changes)


def test_there_are_at_least_forty_model_tools_across_five_categories():
    tools = model_tools()
    assert len(tools) >= 40
    assert {tool.category for tool in tools} >= {
        "text-generation",
        "social-marketing",
        "seo",
        "code-helpers",
        "document-summarizing",
    }


def test_no_two_model_tools_share_or_near_duplicate_a_prompt_or_an_interface():
    assert near_duplicates(model_tools()) == []


def test_the_duplicate_check_catches_a_lightly_edited_copy():
    original = load_catalogue().get("cold-email-writer")
    params = dict(original.params)
    params["system"] = params["system"].replace("replies", "answers").replace("short", "brief")
    copy = _copy(original, "outreach-email-writer", params=params)

    found = near_duplicates([original, copy])

    assert len(found) == 2
    assert found[0].startswith("cold-email-writer ~ outreach-email-writer: prompts 0.9")
    assert found[1].endswith("same input fields and output schema")


def test_the_duplicate_check_catches_a_renamed_tool_with_a_new_prompt_but_the_same_interface():
    original = load_catalogue().get("text-simplifier")
    params = {**original.params, "system": "Completely different words about other matters."}
    assert near_duplicates([original, _copy(original, "plain-english", params=params)]) == [
        "text-simplifier ~ plain-english: same input fields and output schema"
    ]


@pytest.mark.parametrize("slug", MODEL_TOOLS)
def test_the_prompt_uses_every_input_field_and_nothing_else(slug):
    tool = load_catalogue().get(slug)
    assert llm.check_params(tool.params, tool.inputs) == []
    assert set(llm.placeholders(tool.params["prompt"])) == set(tool.inputs["properties"])


@pytest.mark.parametrize("slug", MODEL_TOOLS)
def test_model_tools_are_queued_pro_tools_with_a_text_credit_class(slug):
    tool = load_catalogue().get(slug)
    assert (tool.queue, tool.required_plan) == (True, "pro")
    assert tool.credit_class in {"fast_text", "premium_text"}


# What llm.shape guarantees for text and list answers: non-empty strings, nothing more.
_SHAPED_STRING = {"type": "string", "minLength": 1}


@pytest.mark.parametrize("slug", MODEL_TOOLS)
def test_the_output_schema_fits_the_format(slug):
    tool = load_catalogue().get(slug)
    format = tool.params.get("format", llm.DEFAULT_FORMAT)
    properties = {
        name: {key: value for key, value in spec.items() if key != "description"}
        for name, spec in tool.output["properties"].items()
    }
    assert set(tool.output["required"]) == set(properties)
    if format in ("text", "markdown"):
        assert properties == {"text": _SHAPED_STRING}
    elif format == "list":
        assert properties == {"items": {"type": "array", "minItems": 1, "items": _SHAPED_STRING}}
    else:  # json answers are validated against the whole schema, so it may say more
        assert set(properties) not in ({"text"}, {"items"})


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
    """The embedded default with ``fake_provider`` as the model provider."""
    with embedded_app_at(
        tmp_path_factory.mktemp("provider") / "runs.db",
        AI_BASE_URL=fake_provider.base_url,
        AI_API_KEY="sk-test",
        AI_TIMEOUT_SECONDS=5.0,
    ) as app:
        yield app


@pytest.fixture(scope="module")
def local_app(tmp_path_factory):
    """The embedded default with no provider: the embedded model serves text tools."""
    # A fixed seed: the model's answers, and whether the checks refuse them, are the same
    # on every run of the suite.
    with embedded_app_at(
        tmp_path_factory.mktemp("local") / "runs.db", AI_BASE_URL=None, LOCAL_LLM_SEED=7
    ) as app:
        yield app


_emails = itertools.count(1)


def pro_key(app) -> str:
    with app.app_context():
        account = accounts.create_account(f"model{next(_emails)}@example.com", "pro")
        _key, raw = keys.create_key(account, "model tools")
        db.session.commit()
    return raw


def run_example(app, slug: str, wait: int = 30, key: str | None = None):
    tool = load_catalogue().get(slug)
    return app.test_client().post(
        DISPATCH,
        headers={**auth(key or pro_key(app)), "Prefer": f"wait={wait}"},
        json={"slug": slug, **tool.examples[0]["input"]},
    )


def assert_valid_output(tool: Tool, output: dict) -> None:
    Draft202012Validator(tool.output).validate(output)
    if "text" in output:
        assert output["text"].strip()
    if "items" in output:
        assert all(item.strip() for item in output["items"])


@pytest.mark.parametrize("slug", MODEL_TOOLS)
def test_every_model_tool_runs_through_the_api_on_the_provider(provider_app, fake_provider, slug):
    tool = load_catalogue().get(slug)
    before = len(fake_provider.calls("/v1/chat/completions"))

    response = run_example(provider_app, slug)

    assert response.status_code == 200, response.get_json()
    body = response.get_json()
    assert (body["tool"], body["status"]) == (slug, "succeeded")
    assert_valid_output(tool, body["output"])
    (call,) = fake_provider.calls("/v1/chat/completions")[before:]
    assert call.headers["authorization"] == "Bearer sk-test"
    sent = call.json
    assert sent["messages"][0]["content"].startswith(tool.params["system"].strip())
    assert sent["max_tokens"] == tool.params.get("max_tokens", llm.DEFAULT_MAX_TOKENS)
    if tool.params.get("format") == "json":
        # The tool's output schema reached the provider (Engine.run_tool).
        assert sent["response_format"]["json_schema"]["schema"] == tool.output
    else:
        assert "response_format" not in sent


@pytest.mark.parametrize(
    ("slug", "bad_answer"), [("text-rewriter", "  "), ("headline-generator", '{"headlines": []}')]
)
def test_a_malformed_provider_answer_is_asked_for_again(
    provider_app, fake_provider, slug, bad_answer
):
    tool = load_catalogue().get(slug)
    fake_provider.reply(bad_answer)
    before = len(fake_provider.calls("/v1/chat/completions"))

    response = run_example(provider_app, slug)

    assert response.status_code == 200, response.get_json()
    assert_valid_output(tool, response.get_json()["output"])
    repair = fake_provider.calls("/v1/chat/completions")[before:][1].json["messages"]
    assert [m["role"] for m in repair[-2:]] == ["assistant", "user"]
    assert len(fake_provider.calls("/v1/chat/completions")) - before == 2


def test_a_failing_provider_without_the_embedded_model_answers_503(
    provider_app, fake_provider, monkeypatch
):
    monkeypatch.setattr(local_llm, "unavailable_reason", lambda: "the embedded model is missing")
    fake_provider.fail_next(3, status=500, retry_after="7")
    before = len(fake_provider.calls("/v1/chat/completions"))

    response = run_example(provider_app, "slogan-generator")

    assert response.status_code == 503
    body = response.get_json()
    assert body["code"] == "provider_unavailable"
    assert "No text generation provider could serve" in body["detail"]
    assert "HTTP 500" in body["detail"]
    assert response.headers["Retry-After"] == "7"
    assert len(fake_provider.calls("/v1/chat/completions")) - before == 3


def test_the_run_record_names_the_providers_model(provider_app, fake_provider):
    client = provider_app.test_client()
    raw = pro_key(provider_app)
    example = load_catalogue().get("slogan-generator").examples[0]["input"]
    response = client.post(
        DISPATCH,
        headers={**auth(raw), "Prefer": "respond-async"},
        json={"slug": "slogan-generator", **example},
    )
    record = until_ended(client, raw, response.headers["Location"])

    assert (record["status"], record["model"]) == ("succeeded", "gpt-4o-mini")
    assert record["quality_note"] is None  # a provider's answer


def test_a_tool_with_no_model_records_none(provider_app):
    client = provider_app.test_client()
    raw = pro_key(provider_app)
    response = client.post(
        DISPATCH, headers=auth(raw), json={"slug": "word-counter", "text": "a b"}
    )
    assert response.status_code == 200, response.get_json()
    result = response.get_json()
    assert (result["model"], result["quality_note"]) == (None, None)
    record = client.get(status_url(result["run_id"]), headers=auth(raw)).get_json()
    assert (record["status"], record["model"], record["quality_note"]) == ("succeeded", None, None)


def status_url(run_id: str) -> str:
    return f"/v1/tools/run/{run_id}/status"


def until_ended(client, raw: str, location: str, seconds: float = 60) -> dict:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        record = client.get(location, headers=auth(raw)).get_json()
        if record["status"] in ("succeeded", "failed", "canceled"):
            return record
        time.sleep(0.05)
    raise AssertionError(f"the run at {location} did not end")


def test_an_unfit_embedded_answer_is_refused_with_503_and_gives_the_quota_back(
    local_app, monkeypatch
):
    loop = "Great coffee, great service, great coffee, great service. " * 20
    asked = []

    def looping(messages, **options):
        asked.append(options)
        base.note_model("SmolLM2-test")
        return providers.Completion(loop, "SmolLM2-test", "length", embedded=True)

    monkeypatch.setattr(local_llm, "unavailable_reason", lambda: None)
    monkeypatch.setattr(local_llm, "complete", looping)
    client = local_app.test_client()
    raw = pro_key(local_app)

    response = run_example(local_app, "review-response-writer", key=raw)

    assert response.status_code == 503
    problem = response.get_json()
    assert problem["code"] == "embedded_model_unfit"
    assert problem["type"].endswith("/docs/problems/embedded-model-unfit")
    assert problem["detail"] == ModelUnfit.MESSAGE and "great coffee" not in problem["detail"]
    assert "Retry-After" not in response.headers
    assert [options.get("insist", False) for options in asked] == [False, True]
    record = client.get(status_url(problem["run_id"]), headers=auth(raw)).get_json()
    assert record["status"] == "failed"
    assert record["error"] == {"code": "model_unfit", "message": ModelUnfit.MESSAGE}
    assert record["model"] == "SmolLM2-test"
    who = client.get("/v1/public/whoami", headers=auth(raw)).get_json()
    assert who["usage"]["calls_today"] == 0  # the failed run gave its quota back


BAKERY = (
    "Our small bakery in Leeds now ships sourdough bread nationwide, baked the same morning and "
    "delivered in two days."
)


@pytest.mark.parametrize(
    ("second", "status"),
    [
        # Asked again, it keeps the facts: that answer is the run's.
        (
            "Our little Leeds bakery now sends sourdough across the country, with you in 2 days.",
            200,
        ),
        # It invents again: refused, as the other checks refuse.
        ("A London bakery now ships its bread all over Europe in two days.", 503),
    ],
)
def test_a_rewrite_that_invents_places_is_asked_for_again_then_refused(
    local_app, monkeypatch, second, status
):
    """What users saw on make run: text-rewriter moved the bakery to London and said
    succeeded."""
    embedded = local_llm.model_name()
    answers = iter(
        ["The local bakery in London has transported its products throughout Europe.", second]
    )

    def answering(messages, **options):
        base.note_model(embedded)
        return providers.Completion(next(answers), embedded, "stop", embedded=True)

    monkeypatch.setattr(local_llm, "unavailable_reason", lambda: None)
    monkeypatch.setattr(local_llm, "complete", answering)
    response = local_app.test_client().post(
        DISPATCH,
        headers={**auth(pro_key(local_app)), "Prefer": "wait=30"},
        json={"slug": "text-rewriter", "text": BAKERY, "tone": "formal"},
    )
    assert response.status_code == status, response.get_json()
    if status == 200:
        assert response.get_json()["output"]["text"] == second
        assert response.get_json()["quality_note"] == runs.quality_note(embedded)
    else:
        assert response.get_json()["code"] == "embedded_model_unfit"


def test_an_embedded_answer_says_so_in_the_answer_and_in_the_run_record(local_app, monkeypatch):
    embedded = local_llm.model_name()

    def answering(messages, **options):
        base.note_model(embedded)
        return providers.Completion(
            "Ada Lovelace writes software for schools.", embedded, "stop", embedded=True
        )

    monkeypatch.setattr(local_llm, "unavailable_reason", lambda: None)
    monkeypatch.setattr(local_llm, "complete", answering)
    client = local_app.test_client()
    raw = pro_key(local_app)

    response = run_example(local_app, "bio-writer", key=raw)

    assert response.status_code == 200, response.get_json()
    result = response.get_json()
    note = runs.quality_note(embedded)
    assert note and (result["model"], result["quality_note"]) == (embedded, note)
    record = client.get(status_url(result["run_id"]), headers=auth(raw)).get_json()
    assert (record["status"], record["model"], record["quality_note"]) == (
        "succeeded",
        embedded,
        note,
    )


def test_model_tools_are_best_with_a_provider_when_only_the_embedded_model_serves(
    local_app, provider_app, monkeypatch
):
    monkeypatch.setattr(local_llm, "unavailable_reason", lambda: None)
    slug = "review-response-writer"
    local, served = local_app.test_client(), provider_app.test_client()

    assert local.get(f"/v1/tools/{slug}").get_json()["best_with_provider"] is True
    assert served.get(f"/v1/tools/{slug}").get_json()["best_with_provider"] is False
    assert local.get("/v1/tools/word-counter").get_json()["best_with_provider"] is False
    listed = {tool["slug"]: tool for tool in local.get("/v1/tools").get_json()["tools"]}
    assert listed[slug]["best_with_provider"] and not listed["word-counter"]["best_with_provider"]

    page = local.get(f"/tools/{slug}/").get_data(as_text=True)
    assert "Best with an AI provider" in page and "runs on a small model embedded" in page
    assert "Best with an AI provider" not in served.get(f"/tools/{slug}/").get_data(as_text=True)
    cards = local.get("/tools/?category=text-generation").get_data(as_text=True)
    assert "best with a provider" in cards


# --- the real embedded model -------------------------------------------------------------


@needs_local_model
def test_a_failing_provider_falls_back_to_the_embedded_model(provider_app, fake_provider):
    tool = load_catalogue().get("slogan-generator")
    fake_provider.fail_next(3, status=500)
    before = len(fake_provider.calls("/v1/chat/completions"))

    response = run_example(provider_app, tool.slug, wait=60)

    assert response.status_code == 200, response.get_json()
    assert_valid_output(tool, response.get_json()["output"])
    assert len(fake_provider.calls("/v1/chat/completions")) - before == 3


@needs_local_model
# A text tool and a json one. (review-response-writer was the text one until its answers
# had to keep the review's facts: the embedded model's invent some, and are refused.)
@pytest.mark.parametrize("slug", ["newsletter-intro-writer", "search-intent-classifier"])
def test_the_embedded_model_runs_model_tools_without_a_provider(local_app, slug):
    tool = load_catalogue().get(slug)
    raw = pro_key(local_app)

    response = run_example(local_app, slug, wait=60, key=raw)

    # Its speed is the bench's to measure (bench/engines.py): on a loaded machine the answer
    # can outlast the request's wait, and the run is followed to its end.
    record = response.get_json()
    if response.status_code == 202:
        location = response.headers["Location"]
        record = until_ended(local_app.test_client(), raw, location, seconds=300)
    assert record["status"] == "succeeded", record
    assert_valid_output(tool, record["output"])
    embedded = local_llm.model_name()
    assert (record["model"], record["quality_note"]) == (embedded, runs.quality_note(embedded))
