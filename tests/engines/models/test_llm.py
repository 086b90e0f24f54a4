"""The llm.chat engine, the provider chain and the embedded model."""

import importlib.util

import pytest
from jsonschema import Draft202012Validator

from catalogue import load_catalogue
from engines import base
from engines.base import EngineError, ModelUnfit, ProviderUnavailable
from engines.models import breaker, chain, checks, llm, local_llm, provider_transport, providers
from tests.helpers import bare_app

PARAMS = {
    "system": "You write product taglines.",
    "prompt": "Write a tagline for {product}, aimed at {audience}.",
}
INPUTS = {"product": "a solar lantern", "audience": "campers"}


@pytest.fixture(autouse=True)
def no_waiting(monkeypatch):
    monkeypatch.setattr(provider_transport, "_sleep", lambda seconds: None)
    breaker.reset_breakers()
    yield
    breaker.reset_breakers()


@pytest.fixture
def no_local_model(monkeypatch):
    monkeypatch.setattr(local_llm, "unavailable_reason", lambda: "the embedded model is missing")


@pytest.fixture
def ai_app(ai_app, no_local_model):
    """The provider only (tests/engines/conftest.py's ``ai_app`` without the embedded model):
    tests here see exactly what reached the wire."""
    return ai_app


@pytest.fixture
def local_answers(monkeypatch):
    """A stand-in embedded model: records its calls and answers "local answer", or each of
    the answers appended to ``calls.answers`` in turn."""
    calls = LocalCalls()

    def answer(messages, **options):
        calls.append((messages, options))
        text = calls.answers.pop(0) if calls.answers else "local answer"
        base.note_model("test")
        return providers.Completion(text, "test", "stop", embedded=True)

    monkeypatch.setattr(local_llm, "unavailable_reason", lambda: None)
    monkeypatch.setattr(local_llm, "name", lambda: "the embedded model (test.gguf)")
    monkeypatch.setattr(local_llm, "complete", answer)
    return calls


class LocalCalls(list):
    def __init__(self):
        super().__init__()
        self.answers: list[str] = []


def run(**params):
    return llm.LlmChatEngine().run(dict(INPUTS), {**PARAMS, **params})


def sent_messages(fake_provider, index=0):
    return fake_provider.calls("/v1/chat/completions")[index].json["messages"]


# --- params and the template -------------------------------------------------------------


def params_errors(params):
    validator = Draft202012Validator(llm.LlmChatEngine.params_schema)
    return [error.message for error in validator.iter_errors(params)]


def test_params_schema_accepts_every_documented_param():
    params = {**PARAMS, "format": "json", "temperature": 0.2, "max_tokens": 300}
    assert params_errors(params) == []


def test_params_schema_describes_exactly_the_six_params():
    schema = llm.LlmChatEngine.params_schema
    assert set(schema["properties"]) == {
        "system", "prompt", "format", "temperature", "max_tokens", "checks"
    }  # fmt: skip
    assert schema["required"] == ["system", "prompt"]
    assert schema["properties"]["format"] == {
        "enum": ["text", "markdown", "json", "list"],
        "default": "text",
    }
    assert params_errors({**PARAMS, "model": "x"}) != []


@pytest.mark.parametrize(
    "prompt",
    ["Use {product.__class__}", "Use {product[0]}", "Use {product!r}", "Use {product:>9}",
     "Use {0}", "Use {}", "Unbalanced {product", "Unbalanced product}"],
)  # fmt: skip
def test_params_schema_refuses_placeholders_other_than_plain_names(prompt):
    assert params_errors({**PARAMS, "prompt": prompt}) != []


def test_params_schema_allows_literal_braces_when_doubled():
    assert params_errors({**PARAMS, "prompt": 'Reply like {{"a": 1}} about {product}.'}) == []


def test_check_params_reports_placeholders_that_are_not_inputs():
    inputs = {"type": "object", "properties": {"product": {}, "audience": {}}}
    assert llm.check_params(PARAMS, inputs) == []
    assert llm.check_params({**PARAMS, "prompt": "{product} {colour} {colour}"}, inputs) == [
        "prompt placeholder {colour} is not an input field."
    ]


def test_every_catalogue_tool_on_llm_chat_names_only_its_inputs():
    problems = {
        tool.slug: llm.check_params(tool.params, tool.inputs)
        for tool in load_catalogue()
        if tool.engine == "llm.chat"
    }
    assert {slug: found for slug, found in problems.items() if found} == {}


def test_render_inserts_values_once_and_literally():
    template = "Summarise {text} for {reader}. Braces: {{x}}."
    values = {"text": "{__class__} and {reader} and {{", "reader": "kids"}

    assert llm.render(template, values) == (
        "Summarise {__class__} and {reader} and {{ for kids. Braces: {x}."
    )


def test_render_writes_lists_booleans_and_numbers_as_text():
    assert llm.render("{a}|{b}|{c}|{d}", {"a": ["x", "y"], "b": True, "c": 3, "d": None}) == (
        "x, y|yes|3|"
    )


def test_render_refuses_a_name_that_is_not_an_input():
    with pytest.raises(ValueError, match=r"\{__class__\}, which is not an input"):
        llm.render("{__class__}", {"text": "x"})


def test_a_template_injection_attempt_in_an_input_reaches_the_model_as_text(ai_app, fake_provider):
    inputs = {"product": "{__class__.__init__.__globals__}", "audience": "{audience}"}

    llm.LlmChatEngine().run(inputs, PARAMS)

    assert sent_messages(fake_provider)[1]["content"] == (
        "Write a tagline for {__class__.__init__.__globals__}, aimed at {audience}."
    )


# --- what reaches the model --------------------------------------------------------------


def test_the_request_carries_the_system_prompt_format_instruction_and_defaults(
    ai_app, fake_provider
):
    run()

    (request,) = fake_provider.calls("/v1/chat/completions")
    assert request.json["messages"] == [
        {
            "role": "system",
            "content": "You write product taglines.\n\n"
            "Answer in plain text, without Markdown formatting.",
        },
        {"role": "user", "content": "Write a tagline for a solar lantern, aimed at campers."},
    ]
    assert (request.json["temperature"], request.json["max_tokens"]) == (0.7, 800)
    assert "response_format" not in request.json


def test_params_set_temperature_and_max_tokens(ai_app, fake_provider):
    run(temperature=0.1, max_tokens=64)

    request = fake_provider.calls("/v1/chat/completions")[0].json
    assert (request["temperature"], request["max_tokens"]) == (0.1, 64)


# --- output formats ----------------------------------------------------------------------


def test_text_format_returns_the_stripped_answer(ai_app, fake_provider):
    fake_provider.reply("  Light that follows the sun.\n")
    assert run() == {"text": "Light that follows the sun."}


def test_markdown_format_unwraps_a_fenced_answer(ai_app, fake_provider):
    fake_provider.reply("```markdown\n# Title\n\n- point\n```")
    assert run(format="markdown") == {"text": "# Title\n\n- point"}
    assert sent_messages(fake_provider)[0]["content"].endswith("Format the answer in Markdown.")


def test_list_format_parses_bullets_and_numbers_and_drops_the_preamble(ai_app, fake_provider):
    fake_provider.reply(
        "Here are some ideas:\n\n1. Sun by day\n2) Glow by night\n- Pack light\n* Go far\n"
    )
    assert run(format="list") == {"items": ["Sun by day", "Glow by night", "Pack light", "Go far"]}


def test_list_format_without_bullets_takes_each_line(ai_app, fake_provider):
    fake_provider.reply("Sun by day\n\nGlow by night")
    assert run(format="list") == {"items": ["Sun by day", "Glow by night"]}


def test_json_format_asks_for_an_object_and_extracts_it_from_prose(ai_app, fake_provider):
    fake_provider.reply('Sure! ```json\n{"tagline": "Glow {on}", "nested": {"n": 1}}\n``` Enjoy.')

    assert run(format="json") == {"tagline": "Glow {on}", "nested": {"n": 1}}
    assert fake_provider.calls("/v1/chat/completions")[0].json["response_format"] == {
        "type": "json_object"
    }


def test_json_format_with_the_fake_servers_own_json_mode(ai_app, fake_provider):
    output = run(format="json")
    assert set(output) == {"answer", "digest"}


def test_json_format_repairs_a_malformed_answer_once(ai_app, fake_provider):
    fake_provider.reply('{"tagline": "unterminated', '{"tagline": "Glow on"}')

    assert run(format="json") == {"tagline": "Glow on"}

    repair = sent_messages(fake_provider, 1)
    assert repair[2] == {"role": "assistant", "content": '{"tagline": "unterminated'}
    assert repair[3]["role"] == "user" and "not a valid JSON object" in repair[3]["content"]
    assert fake_provider.calls("/v1/chat/completions")[1].json["temperature"] == 0.2


def test_json_format_gives_up_after_one_repair(ai_app, fake_provider):
    fake_provider.reply("no json here", "still [none]")

    with pytest.raises(ProviderUnavailable) as caught:
        run(format="json")

    assert caught.value.message == "the model returned malformed output"
    assert len(fake_provider.calls("/v1/chat/completions")) == 2


def test_json_output_schema_is_sent_and_enforced(ai_app, fake_provider):
    schema = {
        "type": "object",
        "additionalProperties": False,
        "required": ["tagline", "score"],
        "properties": {"tagline": {"type": "string"}, "score": {"type": "integer", "maximum": 10}},
    }
    fake_provider.reply('{"tagline": "x", "score": 99}')  # violates the schema: repaired

    output = llm.generate(INPUTS, {**PARAMS, "format": "json"}, output_schema=schema)

    Draft202012Validator(schema).validate(output)
    first, second = fake_provider.calls("/v1/chat/completions")
    assert first.json["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "output", "schema": schema},
    }
    assert (
        "matching the schema (score: 99 is greater than the maximum of 10)"
        in (second.json["messages"][3]["content"])
    )


def test_an_empty_answer_is_asked_again(ai_app, fake_provider):
    fake_provider.reply("   ", "Second try.")
    assert run() == {"text": "Second try."}


# --- the chain ---------------------------------------------------------------------------


def test_the_chain_falls_back_to_the_local_model_when_the_provider_is_down(
    fake_provider, local_answers
):
    fake_provider.fail_next(3, status=503)
    with bare_app(fake_provider.base_url).app_context():
        assert run() == {"text": "local answer"}
    assert len(fake_provider.calls("/v1/chat/completions")) == 3
    ((messages, options),) = local_answers
    assert messages[1]["content"] == "Write a tagline for a solar lantern, aimed at campers."
    assert options == {
        "temperature": 0.7,
        "max_tokens": 800,
        "response_format": None,
        "on_text": None,  # nobody follows this run
    }


def test_on_the_io_worker_a_failing_provider_fails_the_run_instead(
    fake_provider, local_answers, monkeypatch
):
    """The I/O worker turns the embedded fallback off: the model would compute in one of its
    greenlets and hold every other run of the process."""
    monkeypatch.setattr(chain, "embedded_fallback", False)
    fake_provider.fail_next(3, status=503)
    with bare_app(fake_provider.base_url).app_context(), pytest.raises(ProviderUnavailable):
        run()
    assert local_answers == []


def test_the_provider_comes_first_when_it_answers(fake_provider, local_answers):
    with bare_app(fake_provider.base_url).app_context():
        assert run()["text"].startswith("Deterministic answer")
    assert local_answers == []


def test_without_a_provider_the_local_model_serves(local_answers):
    with bare_app(None).app_context():
        assert run() == {"text": "local answer"}
        assert llm.LlmChatEngine().unavailable_reason() is None


def test_when_every_link_fails_the_error_names_what_was_tried(
    fake_provider, monkeypatch, local_answers
):
    def broken(messages, **options):
        raise ProviderUnavailable("The embedded text model failed: out of memory.", retry_after=5)

    monkeypatch.setattr(local_llm, "complete", broken)
    fake_provider.fail_next(3, status=503)
    with (
        bare_app(fake_provider.base_url).app_context(),
        pytest.raises(ProviderUnavailable) as caught,
    ):
        run()

    url = fake_provider.base_url
    assert caught.value.message == (
        f"No text generation provider could serve (tried the model provider at {url}, then the "
        f"embedded model (test.gguf)). The model provider at {url} did not "
        "answer /chat/completions after 3 attempts (last problem: HTTP 503). "
        "The embedded text model failed: out of memory."
    )
    assert caught.value.retry_after == 5


def test_an_input_refusal_does_not_fall_back(fake_provider, local_answers):
    fake_provider.fail_next(1, status=400)
    with bare_app(fake_provider.base_url).app_context(), pytest.raises(EngineError):
        run()
    assert local_answers == []


def test_chat_with_images_skips_the_local_model(fake_provider, local_answers):
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    messages = [{"role": "user", "content": [{"type": "text", "text": "Describe."}, image]}]
    fake_provider.fail_next(3, status=503)
    with (
        bare_app(fake_provider.base_url).app_context(),
        pytest.raises(ProviderUnavailable) as caught,
    ):
        chain.reply(messages, temperature=0, max_tokens=10)
    assert caught.value.message.startswith("No image understanding provider could serve")
    assert local_answers == []


@pytest.mark.parametrize(
    ("capability", "call"),
    [
        (chain.IMAGES, lambda: chain.generate_images("x", n=1, size="8x8")),
        (chain.SPEECH, lambda: chain.speak("x", voice="alloy", format="mp3", speed=1.0)),
        (chain.EMBEDDINGS, lambda: chain.embed(["x"])),
    ],
)
def test_provider_only_capabilities_name_the_setting_when_nothing_is_configured(
    capability, call, local_answers
):
    expected = (
        f"{capability[0].upper()}{capability[1:]} needs a model provider: set AI_BASE_URL to an "
        "OpenAI-compatible API (and AI_API_KEY if it needs one)."
    )
    with bare_app(None).app_context():
        assert chain.unavailable_reason(capability) == expected
        with pytest.raises(ProviderUnavailable) as caught:
            call()
    assert caught.value.message == expected


def test_with_no_provider_and_no_local_model_text_names_both_remedies(no_local_model):
    with bare_app(None).app_context():
        reason = llm.LlmChatEngine().unavailable_reason()
        with pytest.raises(ProviderUnavailable) as caught:
            run()
    assert reason == caught.value.message
    assert "set AI_BASE_URL" in reason and "requirements-models.txt" in reason


def test_the_engine_is_available_with_a_provider_alone(fake_provider, no_local_model):
    with bare_app(fake_provider.base_url).app_context():
        assert llm.LlmChatEngine().unavailable_reason() is None


# --- the embedded model ------------------------------------------------------------------


def test_a_missing_gguf_setting_is_reported():
    with bare_app(None, LOCAL_LLM_GGUF="/nonexistent/model.gguf").app_context():
        reason = local_llm.unavailable_reason()
    if importlib.util.find_spec("xllamacpp") is None:
        assert "xllamacpp" in reason
    else:
        assert reason == "LOCAL_LLM_GGUF names a file that does not exist (/nonexistent/model.gguf)"


needs_local_model = pytest.mark.skipif(
    importlib.util.find_spec("xllamacpp") is None,
    reason="xllamacpp is not installed (pip install -r requirements-models.txt)",
)


@needs_local_model
def test_the_embedded_smollm2_model_answers_for_real():
    with bare_app(None).app_context():
        assert local_llm.gguf_path().endswith("SmolLM2-135M-Instruct.Q4_1.gguf")
        assert local_llm.unavailable_reason() is None

        output = llm.LlmChatEngine().run(
            dict(INPUTS), {**PARAMS, "format": "list", "temperature": 0, "max_tokens": 32}
        )

        assert output["items"] and all(item.strip() for item in output["items"])
        with pytest.raises(EngineError, match=r"too long for the embedded model \(\d+ tokens"):
            local_llm.complete(
                [{"role": "user", "content": "word " * 3000}], temperature=0, max_tokens=5
            )
        assert local_llm.load() is local_llm.load()  # loaded once, shared


@needs_local_model
def test_a_fixed_seed_gives_the_same_answer_to_the_same_input():
    ask = [{"role": "user", "content": "Write two sentences about a cat."}]

    def answers(seed):
        with bare_app(None, LOCAL_LLM_SEED=seed).app_context():
            return {local_llm.complete(ask, temperature=0.9, max_tokens=30).text for _ in range(3)}

    assert len(answers(7)) == 1
    assert len(answers(None)) > 1  # drawn afresh each time (three the same: about never)


# --- checks, loops and the embedded model ------------------------------------------------

LOOP = "Light that follows the sun, all day long and into the night. " * 4
CODE_PARAMS = {
    "system": "You add docstrings.",
    "prompt": "{code}",
    "checks": {"changes": {"input": "code", "output": ["text"]}},
}
CODE = {"code": "def area(w, h):\n    return w * h"}


def test_an_embedded_answer_that_loops_is_asked_again_insisting(local_answers):
    local_answers.answers += [LOOP, "Light that follows the sun."]
    with bare_app(None).app_context():
        assert run() == {"text": "Light that follows the sun."}

    (first, options), (again, insisting) = local_answers
    assert again == first  # asked afresh, without the failed answer
    assert "insist" not in options and insisting["insist"] is True


def test_an_embedded_answer_that_fails_twice_is_refused(local_answers):
    local_answers.answers += [LOOP, LOOP]
    with bare_app(None).app_context(), pytest.raises(ModelUnfit) as caught:
        run()

    assert len(local_answers) == 2
    assert "AI_BASE_URL" in caught.value.message and "Light" not in caught.value.message


def test_an_embedded_answer_handing_the_input_back_is_refused(local_answers):
    local_answers.answers += [CODE["code"], CODE["code"] + "\n"]
    with bare_app(None).app_context(), pytest.raises(ModelUnfit):
        llm.LlmChatEngine().run(dict(CODE), CODE_PARAMS)


def test_a_providers_answer_is_held_to_its_format_alone(ai_app, fake_provider):
    fake_provider.reply(CODE["code"], LOOP)

    assert llm.LlmChatEngine().run(dict(CODE), CODE_PARAMS) == {"text": CODE["code"]}
    assert run() == {"text": LOOP.strip()}
    assert len(fake_provider.calls("/v1/chat/completions")) == 2


LIST_SCHEMA = {
    "type": "object",
    "required": ["items"],
    "properties": {"items": {"type": "array", "minItems": 1, "items": {"type": "string"}}},
}


def test_a_list_tool_holds_the_embedded_model_to_its_schema(local_answers):
    local_answers.answers.append('{"items": ["Sun by day", " Glow by night "]}')
    with bare_app(None).app_context():
        output = llm.generate(INPUTS, {**PARAMS, "format": "list"}, output_schema=LIST_SCHEMA)

    assert output == {"items": ["Sun by day", "Glow by night"]}
    ((_, options),) = local_answers
    assert options["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "output", "schema": LIST_SCHEMA},
    }


def test_a_list_tool_on_the_provider_gets_plain_lines(ai_app, fake_provider):
    fake_provider.reply("- Sun by day\n- Glow by night")
    output = llm.generate(INPUTS, {**PARAMS, "format": "list"}, output_schema=LIST_SCHEMA)
    assert output == {"items": ["Sun by day", "Glow by night"]}
    assert "response_format" not in fake_provider.calls("/v1/chat/completions")[0].json


def test_the_model_that_answered_is_noted(fake_provider, local_answers):
    with bare_app(fake_provider.base_url).app_context(), base.models_noted() as names:
        run()
    assert names == ["gpt-4o-mini"]

    fake_provider.fail_next(3, status=503)
    with bare_app(fake_provider.base_url).app_context(), base.models_noted() as names:
        run()
    assert names == ["test"]


def test_a_provider_only_capability_notes_its_configured_model(ai_app, fake_provider):
    with base.models_noted() as names:
        chain.generate_images("a red square", n=1, size="256x256")
        chain.embed(["a"])
    assert names == ["gpt-image-1", "text-embedding-3-small"]


# --- the embedded model's sampling, with a stand-in llama.cpp server ---------------------

MESSAGES = [{"role": "user", "content": "Write a tagline."}]


class FakeServer:
    """Streams ``chunks`` as llama.cpp's server does, and records the requests."""

    def __init__(self, chunks):
        self.chunks = chunks
        self.requests = []
        self.sent = 0

    def handle_chat_completions(self, request, callback):
        self.requests.append(request)
        for text in self.chunks:
            self.sent += 1
            if callback({"choices": [{"delta": {"content": text}, "finish_reason": None}]}):
                return
        callback({"choices": [{"delta": {}, "finish_reason": "stop"}], "usage": {}})


@pytest.fixture
def fake_server(monkeypatch):
    server = FakeServer(["Sun ", "by ", "day."])
    monkeypatch.setattr(local_llm, "load", lambda: server)
    monkeypatch.setattr(local_llm, "gguf_path", lambda: "/models/Tiny-1M.Q4.gguf")
    return server


def test_the_embedded_model_is_sampled_against_repetition(fake_server):
    with base.models_noted() as names:
        answer = local_llm.complete(MESSAGES, temperature=0.7, max_tokens=50)
        local_llm.complete(MESSAGES, temperature=0.7, max_tokens=50, insist=True)

    assert answer == providers.Completion("Sun by day.", "Tiny-1M.Q4", "stop", embedded=True)
    assert names == ["Tiny-1M.Q4"]
    first, insisting = fake_server.requests
    assert first.items() >= {**local_llm.SAMPLING, "temperature": 0.7}.items()
    assert insisting.items() >= {**local_llm.INSISTING, "temperature": 0.3}.items()
    assert insisting["repeat_penalty"] > first["repeat_penalty"]


def test_the_embedded_model_is_stopped_in_a_loop(fake_server):
    fake_server.chunks = [word + " " for word in ("Intro." + " the sun goes round" * 200).split()]

    answer = local_llm.complete(MESSAGES, temperature=0.7, max_tokens=2000)

    assert answer.finish_reason == "loop" and answer.truncated
    assert fake_server.sent < 100  # of 801 chunks
    assert checks.looping(answer.text)
