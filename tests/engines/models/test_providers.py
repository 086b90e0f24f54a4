"""The OpenAI-compatible adapter against a fake server speaking the real wire protocol."""

import io
import json
import logging
import socket
import time
import wave

import pytest

from engines.base import EngineError, ProviderUnavailable
from engines.blob import Blob
from engines.models import breaker, provider_capabilities, provider_transport, providers
from engines.models.breaker import CircuitBreaker
from tests.fakes import openai_server
from tests.helpers import bare_app

API_KEY = "sk-test-4f9d2c7a1b8e6f3d"
MODELS = {"chat-model", "image-model", "stt-model", "tts-model", "embed-model"}
HELLO = [{"role": "user", "content": "Say hello."}]


@pytest.fixture
def fake_provider_settings():
    """``fake_provider`` wants the key and knows these models only."""
    return {"api_key": API_KEY, "models": MODELS}


def make_app(base_url, **overrides):
    """A bare app naming the key and the models ``fake_provider`` knows (see above)."""
    settings = {
        "AI_API_KEY": API_KEY,
        "AI_MODEL_CHAT": "chat-model",
        "AI_MODEL_IMAGE": "image-model",
        "AI_MODEL_TRANSCRIBE": "stt-model",
        "AI_MODEL_SPEECH": "tts-model",
        "AI_MODEL_EMBED": "embed-model",
    }
    return bare_app(base_url, **{**settings, **overrides})


@pytest.fixture
def ai_app(fake_provider):
    app = make_app(fake_provider.base_url)
    with app.app_context():
        yield app


@pytest.fixture(autouse=True)
def delays(monkeypatch):
    """Backoff and Retry-After waits are recorded instead of slept."""
    slept = []
    monkeypatch.setattr(provider_transport, "_sleep", slept.append)
    breaker.reset_breakers()
    yield slept
    breaker.reset_breakers()


@pytest.fixture
def logs(caplog, monkeypatch):
    """The adapter's log records from DEBUG up (Alembic's fileConfig disables old loggers)."""
    monkeypatch.setattr(logging.getLogger("engines.models.providers"), "disabled", False)
    caplog.set_level(logging.DEBUG, logger="engines.models.providers")
    return caplog


def chat(**options):
    return providers.chat(HELLO, temperature=0.2, max_tokens=50, **options)


# --- wire format -------------------------------------------------------------------------


def test_chat_posts_the_openai_request_and_returns_the_first_choice(ai_app, fake_provider):
    answer = chat()

    (request,) = fake_provider.calls("/v1/chat/completions")
    assert request.headers["authorization"] == f"Bearer {API_KEY}"
    assert request.headers["content-type"] == "application/json"
    assert request.json == {
        "model": "chat-model",
        "messages": HELLO,
        "temperature": 0.2,
        "max_tokens": 50,
    }
    assert answer.startswith("Deterministic answer ") and answer.endswith(" to: Say hello.")
    assert chat() == answer  # deterministic


def test_chat_passes_the_response_format(ai_app, fake_provider):
    answer = chat(response_format={"type": "json_object"})

    assert fake_provider.calls("/v1/chat/completions")[0].json["response_format"] == {
        "type": "json_object"
    }
    assert set(json.loads(answer)) == {"answer", "digest"}


def test_a_provider_without_a_key_gets_no_authorization_header(fake_provider):
    fake_provider.api_key = None  # a provider that wants none
    with make_app(fake_provider.base_url, AI_API_KEY=None).app_context():
        chat()
        assert "authorization" not in fake_provider.requests[0].headers


def test_images_decode_base64_answers_with_style_and_negative_prompt_in_the_prompt(
    ai_app, fake_provider
):
    images = providers.generate_images(
        "A lighthouse at dusk", n=2, size="64x32", style="watercolor", negative_prompt="people"
    )

    (request,) = fake_provider.calls("/v1/images/generations")
    assert request.json == {
        "model": "image-model",
        "prompt": "A lighthouse at dusk\n\nStyle: watercolor.\n\nAvoid: people.",
        "n": 2,
        "size": "64x32",
    }
    assert [(i.content_type, i.filename) for i in images] == [
        ("image/png", "image-1.png"),
        ("image/png", "image-2.png"),
    ]
    assert images[0].data.startswith(b"\x89PNG\r\n\x1a\n") and images[0].data != images[1].data
    assert images[0].data[16:24] == (64).to_bytes(4, "big") + (32).to_bytes(4, "big")


def test_image_url_answers_are_downloaded_without_our_credentials(ai_app, fake_provider):
    fake_provider.image_answer = "url"

    (image,) = providers.generate_images("A red kite", n=1, size="16x16")

    (download,) = [r for r in fake_provider.requests if r.method == "GET"]
    assert download.path.startswith("/files/") and download.path.endswith(".png")
    assert "authorization" not in download.headers
    assert image.content_type == "image/png"
    assert image.data == fake_provider.files[download.path.removeprefix("/files/")]


def test_an_image_download_over_the_size_limit_is_refused(ai_app, fake_provider, monkeypatch):
    fake_provider.image_answer = "url"
    monkeypatch.setattr(provider_capabilities, "MAX_DOWNLOAD_BYTES", 50)

    with pytest.raises(ProviderUnavailable, match="over 50 bytes"):
        providers.generate_images("A red kite", n=1, size="64x64")


def test_transcription_sends_multipart_and_reads_verbose_json(ai_app, fake_provider):
    audio = Blob(b"RIFF" + b"\x00" * 63996, "audio/wav", "meeting.wav")

    result = providers.transcribe(audio, language="en")

    (request,) = fake_provider.calls("/v1/audio/transcriptions")
    assert request.headers["content-type"].startswith("multipart/form-data; boundary=")
    assert request.form == {
        "model": "stt-model",
        "response_format": "verbose_json",
        "language": "en",
    }
    assert request.files == {"file": ("meeting.wav", "audio/wav", audio.data)}
    key = result["text"].split()[1]
    assert result == {
        "text": f"Transcript {key} of meeting.wav.",
        "language": "en",
        "duration": 2.0,
        "segments": [
            {"start": 0.0, "end": 1.0, "text": f"Transcript {key}"},
            {"start": 1.0, "end": 2.0, "text": "of meeting.wav."},
        ],
    }


def test_transcription_names_an_unnamed_upload_by_its_type(ai_app, fake_provider):
    providers.transcribe(Blob(b"ID3" + b"\x00" * 100, "audio/mpeg"))

    assert fake_provider.calls("/v1/audio/transcriptions")[0].files["file"][0] == "audio.mp3"
    assert "language" not in fake_provider.calls("/v1/audio/transcriptions")[0].form


def test_speech_posts_the_options_and_returns_the_audio(ai_app, fake_provider):
    blob = providers.speak("Hello there, listener.", voice="alloy", format="wav", speed=1.5)

    (request,) = fake_provider.calls("/v1/audio/speech")
    assert request.json == {
        "model": "tts-model",
        "input": "Hello there, listener.",
        "voice": "alloy",
        "response_format": "wav",
        "speed": 1.5,
    }
    assert (blob.content_type, blob.filename) == ("audio/wav", "speech.wav")
    with wave.open(io.BytesIO(blob.data)) as audio:
        assert audio.getnframes() == 12800  # 3 words * 0.4 s / 1.5 at 16 kHz


def test_embeddings_come_back_in_input_order(ai_app, fake_provider):
    vectors = providers.embed(["alpha", "beta", "gamma"])

    assert fake_provider.calls("/v1/embeddings")[0].json == {
        "model": "embed-model",
        "input": ["alpha", "beta", "gamma"],
    }
    assert vectors == [providers.embed([text])[0] for text in ("alpha", "beta", "gamma")]
    assert len(set(map(tuple, vectors))) == 3
    assert all(abs(sum(v * v for v in vector) - 1) < 1e-4 for vector in vectors)


def test_embedding_nothing_calls_nothing(ai_app, fake_provider):
    assert providers.embed([]) == []
    assert fake_provider.requests == []


# --- retries -----------------------------------------------------------------------------


def test_5xx_is_retried_with_exponential_backoff_then_succeeds(ai_app, fake_provider, delays):
    fake_provider.fail_next(2, status=502)

    assert chat().startswith("Deterministic answer")

    assert len(fake_provider.calls("/v1/chat/completions")) == 3
    assert len(delays) == 2
    assert 0.25 <= delays[0] <= 0.5 and 0.5 <= delays[1] <= 1.0


def test_retry_after_is_honoured_on_429(ai_app, fake_provider, delays):
    fake_provider.fail_next(1, status=429, retry_after="2")

    chat()

    assert delays == [2.0]
    assert len(fake_provider.calls("/v1/chat/completions")) == 2


def test_a_retry_after_beyond_the_cap_ends_the_call_and_is_passed_on(ai_app, fake_provider, delays):
    fake_provider.fail_next(1, status=503, retry_after="120")

    with pytest.raises(ProviderUnavailable) as caught:
        chat()

    assert caught.value.retry_after == 120
    assert delays == []
    assert len(fake_provider.calls("/v1/chat/completions")) == 1


def test_a_hang_past_the_read_timeout_is_retried(fake_provider):
    fake_provider.hang_next(1, seconds=5)
    started = time.monotonic()
    with make_app(fake_provider.base_url, AI_TIMEOUT_SECONDS=0.3).app_context():
        assert chat().startswith("Deterministic answer")
    assert time.monotonic() - started < 2
    assert len(fake_provider.calls("/v1/chat/completions")) == 2


def test_when_every_attempt_fails_the_call_is_provider_unavailable(ai_app, fake_provider):
    fake_provider.fail_next(3, status=503)

    with pytest.raises(ProviderUnavailable) as caught:
        chat()

    assert caught.value.message == (
        f"The model provider at {fake_provider.base_url} did not answer /chat/completions after 3 "
        "attempts (last problem: HTTP 503)."
    )
    assert caught.value.retry_after == 30
    assert len(fake_provider.calls("/v1/chat/completions")) == 3


def test_an_unreachable_provider_is_provider_unavailable():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # nothing listens there once closed
    with (
        make_app(f"http://127.0.0.1:{port}/v1").app_context(),
        pytest.raises(
            ProviderUnavailable, match=r"after 3 attempts \(last problem: cannot connect"
        ),
    ):
        chat()


# --- circuit breaker ---------------------------------------------------------------------


@pytest.fixture
def clock(monkeypatch):
    now = [1000.0]
    monkeypatch.setattr(breaker, "_now", lambda: now[0])
    return now


def test_the_breaker_opens_after_five_failures_then_lets_one_probe_through(
    ai_app, fake_provider, clock
):
    fake_provider.fail_next(5, status=500)
    with pytest.raises(ProviderUnavailable):
        chat()  # attempts 1-3 fail
    with pytest.raises(ProviderUnavailable):
        chat()  # attempts 4-5 fail, the breaker opens, no third attempt
    assert len(fake_provider.calls("/v1/chat/completions")) == 5
    assert breaker.breaker_for(fake_provider.base_url).state == "open"

    with pytest.raises(ProviderUnavailable, match="calls are paused") as caught:
        chat()
    assert len(fake_provider.calls("/v1/chat/completions")) == 5  # refused without calling
    assert caught.value.retry_after == 30

    clock[0] += 30
    assert breaker.breaker_for(fake_provider.base_url).state == "half-open"
    assert chat().startswith("Deterministic answer")
    assert breaker.breaker_for(fake_provider.base_url).state == "closed"
    assert len(fake_provider.calls("/v1/chat/completions")) == 6


def test_a_half_open_breaker_admits_a_single_probe(clock):
    breaker = CircuitBreaker(threshold=2, open_seconds=30)
    breaker.failed()
    assert breaker.allow() is True
    breaker.failed()
    assert (breaker.state, breaker.allow(), breaker.retry_after()) == ("open", False, 30)

    clock[0] += 30
    assert breaker.allow() is True
    assert breaker.allow() is False  # a second caller while the probe is out
    breaker.succeeded()
    assert (breaker.state, breaker.allow()) == ("closed", True)


def test_a_failed_probe_opens_the_breaker_again(clock):
    breaker = CircuitBreaker(threshold=1, open_seconds=30)
    breaker.failed()
    clock[0] += 31
    assert breaker.allow() is True

    breaker.failed()

    assert (breaker.state, breaker.allow(), breaker.retry_after()) == ("open", False, 30)


def test_each_base_url_has_its_own_breaker():
    assert breaker.breaker_for("http://a/v1") is breaker.breaker_for("http://a/v1/")
    assert breaker.breaker_for("http://a/v1") is not breaker.breaker_for("http://b/v1")


# --- refusals ----------------------------------------------------------------------------


def test_a_wrong_key_names_the_setting_and_never_the_key(fake_provider, logs):
    wrong = "sk-wrong-9a8b7c6d5e4f3a2b"
    with (
        make_app(fake_provider.base_url, AI_API_KEY=wrong).app_context(),
        pytest.raises(ProviderUnavailable) as caught,
    ):
        chat()

    assert caught.value.message == (
        f"The model provider at {fake_provider.base_url} refused our credentials (HTTP 401): "
        "check AI_API_KEY."
    )
    assert len(fake_provider.requests) == 1  # not retried
    assert logs.records
    for text in (caught.value.message, logs.text):
        assert wrong not in text and wrong[-4:] not in text and API_KEY not in text


@pytest.mark.parametrize(
    ("setting", "call"),
    [
        ("AI_MODEL_CHAT", lambda: chat()),
        ("AI_MODEL_IMAGE", lambda: providers.generate_images("x", n=1, size="8x8")),
        ("AI_MODEL_TRANSCRIBE", lambda: providers.transcribe(Blob(b"x", "audio/wav"))),
        ("AI_MODEL_SPEECH", lambda: providers.speak("x", voice="a", format="mp3", speed=1.0)),
        ("AI_MODEL_EMBED", lambda: providers.embed(["x"])),
    ],
)
def test_an_unknown_model_names_its_setting(fake_provider, setting, call):
    with (
        make_app(fake_provider.base_url, **{setting: "no-such-model"}).app_context(),
        pytest.raises(ProviderUnavailable) as caught,
    ):
        call()
    assert f"for model 'no-such-model': set {setting} to a model it serves" in caught.value.message
    assert len(fake_provider.requests) == 1


@pytest.mark.parametrize("status", [400, 413, 422])
def test_input_refusals_are_engine_errors_with_the_provider_message(ai_app, fake_provider, status):
    fake_provider.fail_next(1, status=status)

    with pytest.raises(EngineError) as caught:
        chat()

    assert caught.value.message == (
        f"The model provider refused the request: Simulated HTTP {status}."
    )
    assert len(fake_provider.requests) == 1


def test_a_missing_base_url_names_the_setting():
    with make_app(None).app_context(), pytest.raises(ProviderUnavailable) as caught:
        chat()
    assert "set AI_BASE_URL" in caught.value.message
    assert providers.configured() is False


def test_a_chat_answer_without_choices_is_provider_unavailable(ai_app, fake_provider):
    fake_provider.fail_next(1, status=200)  # a 200 whose body is an error object

    with pytest.raises(ProviderUnavailable, match="chat answer has no choices"):
        chat()


def test_an_image_in_an_unknown_format_is_provider_unavailable(ai_app, monkeypatch):
    monkeypatch.setattr(openai_server, "make_png", lambda *args: b"not an image")

    with pytest.raises(ProviderUnavailable, match="image in an unknown format"):
        providers.generate_images("x", n=1, size="8x8")


def test_redacted_urls_hide_credentials_and_queries():
    assert (
        providers.redact_url("https://user:pw@api.example.com:8443/v1/?key=secret#x")
        == "https://api.example.com:8443/v1"
    )


def test_prompts_and_keys_stay_out_of_the_logs(ai_app, fake_provider, logs):
    fake_provider.fail_next(1, status=500)

    chat()

    assert [r.levelname for r in logs.records] == ["WARNING", "INFO"]
    assert "Say hello" not in logs.text and API_KEY not in logs.text


# --- streamed completions (a queued run's followers) -----------------------------------------


def test_streamed_gives_each_piece_as_it_comes_and_answers_the_whole(
    ai_app, fake_provider, monkeypatch
):
    monkeypatch.setattr(provider_transport, "_sleep", lambda seconds: None)
    fake_provider.reply("One two three.")
    fake_provider.fail_next(1, status=503)  # before the first piece: asked again, as every call is
    pieces = []
    answer = providers.streamed(HELLO, temperature=0.2, max_tokens=50, on_text=pieces.append)
    assert pieces == ["One ", "two ", "three."]
    assert (answer.text, answer.model) == ("One two three.", "chat-model")
    calls = fake_provider.calls("/v1/chat/completions")
    assert len(calls) == 2 and all(call.json["stream"] is True for call in calls)


def test_streamed_refusals_are_mapped_as_chat_maps_them(fake_provider):
    app = make_app(fake_provider.base_url, AI_API_KEY="sk-wrong-key-123456")
    with app.app_context(), pytest.raises(ProviderUnavailable) as refused:
        providers.streamed(HELLO, temperature=0.2, max_tokens=50, on_text=print)
    assert "AI_API_KEY" in str(refused.value) and "sk-wrong" not in str(refused.value)


# --- streamed chat (the site assistant) ------------------------------------------------------


def test_chat_stream_yields_the_answer_as_it_arrives(ai_app, fake_provider):
    fake_provider.reply("One two three.")
    pieces = list(providers.chat_stream(HELLO, temperature=0.2, max_tokens=50))
    assert pieces == ["One ", "two ", "three."]
    sent = fake_provider.calls("/v1/chat/completions")[0]
    assert sent.json["stream"] is True and sent.json["model"] == "chat-model"
    assert sent.headers["authorization"] == f"Bearer {API_KEY}"


def test_chat_stream_is_tried_once_and_a_5xx_is_provider_unavailable(ai_app, fake_provider):
    fake_provider.fail_next(1, status=502)
    with pytest.raises(ProviderUnavailable) as failed:
        list(providers.chat_stream(HELLO, temperature=0.2, max_tokens=50))
    assert len(fake_provider.calls("/v1/chat/completions")) == 1
    assert API_KEY not in str(failed.value)


def test_chat_stream_refusals_are_mapped_as_chat_maps_them(fake_provider):
    app = make_app(fake_provider.base_url, AI_API_KEY="sk-wrong-key-123456")
    with app.app_context(), pytest.raises(ProviderUnavailable) as refused:
        list(providers.chat_stream(HELLO, temperature=0.2, max_tokens=50))
    assert "AI_API_KEY" in str(refused.value) and "sk-wrong" not in str(refused.value)
