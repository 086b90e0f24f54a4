"""The engines behind the Creator and Business endpoints: images, voice, video, audiobooks."""

import io
import wave

import pytest

from engines import get_engine
from engines.base import EngineError, ModelUnfit, ProviderUnavailable
from engines.blob import Blob
from engines.models import breaker, productions, provider_transport, providers
from tests.engines.fixtures import epub_document, solid_image, wav_seconds
from tests.helpers import bare_app


@pytest.fixture(autouse=True)
def no_backoff(monkeypatch):
    monkeypatch.setattr(provider_transport, "_sleep", lambda seconds: None)


@pytest.fixture
def provider(fake_provider):
    """An app context whose settings name ``fake_provider`` as the model provider; yields it."""
    breaker.reset_breakers()
    with bare_app(fake_provider.base_url, AI_TIMEOUT_SECONDS=5.0).app_context():
        yield fake_provider
    breaker.reset_breakers()


@pytest.fixture
def no_provider():
    with bare_app(None).app_context():
        yield


# --- voices and speech --------------------------------------------------------------------


def test_local_voices_come_first_with_the_piper_voice_as_default(no_provider):
    voices = productions.voices()
    assert voices[0] == {
        "id": "en_US-joe-medium",
        "name": "Joe (US English)",
        "language": "en-US",
        "engine": "piper",
    }
    assert any(voice["engine"] == "espeak-ng" and voice["language"] == "fr-fr" for voice in voices)
    assert not any(voice["engine"] == "provider" for voice in voices)


def test_provider_voices_are_listed_when_a_provider_is_configured(provider):
    listed = [voice for voice in productions.voices() if voice["engine"] == "provider"]
    assert [voice["id"] for voice in listed] == [
        "provider:" + name for name in productions.PROVIDER_VOICES
    ]
    assert {voice["language"] for voice in listed} == {"mul"}


def test_the_local_voice_speaks_mp3(no_provider):
    output = get_engine("productions.voice").run(
        {"text": "Hello there, listener.", "voice": None, "format": "mp3", "speed": 1.0}, {}
    )
    assert output["engine"] == "piper" and output["voice"] == "en_US-joe-medium"
    assert output["audio"].content_type == "audio/mpeg"
    assert output["audio"].data[:3] == b"ID3" or output["audio"].data[0] == 0xFF
    assert 0.5 < output["duration_s"] < 5


def test_a_language_code_picks_an_espeak_voice(no_provider):
    spoken = productions.speak("Bonjour à tous.", voice="fr", fmt="wav", speed=1.0)
    assert spoken.engine == "espeak-ng" and spoken.voice.startswith("espeak:")
    assert wav_seconds(spoken.audio) == pytest.approx(spoken.duration_s, abs=0.02)


def test_a_provider_voice_speaks_through_the_provider_in_pieces(provider):
    text = " ".join(["This sentence is read by the provider."] * 120)  # about 4,700 chars
    spoken = productions.speak(text, voice="provider:nova", fmt="wav", speed=1.0)
    calls = provider.calls("/v1/audio/speech")
    assert len(calls) == 2
    assert all(len(call.json["input"]) <= 4000 for call in calls)
    assert {call.json["voice"] for call in calls} == {"nova"}
    assert {call.json["response_format"] for call in calls} == {"wav"}
    # The fake speaks 0.4 s per word: the pieces are joined into one WAV.
    assert spoken.duration_s == pytest.approx(len(text.split()) * 0.4, abs=0.1)
    assert wav_seconds(spoken.audio) == pytest.approx(spoken.duration_s, abs=0.01)
    assert (spoken.voice, spoken.engine) == ("provider:nova", "provider")


def test_provider_speech_is_encoded_locally_to_the_asked_format(provider):
    spoken = productions.speak("Short and sweet.", voice="provider:alloy", fmt="ogg", speed=1.0)
    assert spoken.audio.content_type == "audio/ogg" and spoken.audio.data[:4] == b"OggS"


def test_an_unknown_provider_voice_is_an_input_error(provider):
    with pytest.raises(EngineError, match="Unknown voice provider:robot"):
        productions.speak("Hi.", voice="provider:robot", fmt="wav", speed=1.0)


def test_a_provider_voice_without_a_provider_names_the_setting(no_provider):
    with pytest.raises(ProviderUnavailable, match="AI_BASE_URL"):
        productions.speak("Hi.", voice="provider:alloy", fmt="wav", speed=1.0)


def test_provider_speech_that_is_not_wav_is_a_provider_failure():
    with pytest.raises(ProviderUnavailable, match="not a WAV"):
        productions._joined_wav([Blob(b"ID3 not a wav at all", "audio/wav")])


def test_long_text_is_cut_between_sentences():
    text = "One two three. " * 10 + "x" * 50
    pieces = productions._chunks(text, 40)
    assert all(len(piece) <= 40 for piece in pieces)
    assert pieces[0] == "One two three. One two three."
    assert pieces[-2:] == ["x" * 40, "x" * 10]  # a word longer than a piece is cut
    assert " ".join(pieces[:-2]).split() == text.split()[:-1]


# --- images -------------------------------------------------------------------------------


def _images_inputs(**changes):
    return {
        "prompt": "A red kite over green hills",
        "size": "256x256",
        "count": 3,
        "style": "watercolor",
        "negative_prompt": "clouds",
        **changes,
    }


def test_images_come_from_the_provider_and_are_billed_per_image(provider):
    engine = get_engine("productions.images")
    output = engine.run(_images_inputs(), {})
    assert len(output["images"]) == 3 and output["size"] == "256x256"
    assert all(image.data.startswith(b"\x89PNG") for image in output["images"])
    (call,) = provider.calls("/v1/images/generations")
    assert call.json["n"] == 3
    assert "watercolor" in call.json["prompt"] and "clouds" in call.json["prompt"]
    assert engine.billed_units(output) == 3


def test_images_without_a_provider_are_unavailable_naming_the_setting(no_provider):
    reason = get_engine("productions.images").unavailable_reason()
    assert "AI_BASE_URL" in reason


def test_a_blank_prompt_is_an_input_error(provider):
    with pytest.raises(EngineError, match="prompt is empty"):
        get_engine("productions.images").run(_images_inputs(prompt="  \n "), {})


# --- narrated video -----------------------------------------------------------------------


def test_a_script_is_split_into_scenes_by_paragraph_and_length():
    script = "First scene here.\n\nSecond one. " + "Long sentence goes on. " * 20
    scenes = productions.split_scenes(script)
    assert scenes[0] == "First scene here."
    assert len(scenes) == 3
    assert all(len(scene) <= productions.SCENE_CHARS for scene in scenes)


def test_a_script_with_too_many_scenes_is_refused():
    with pytest.raises(EngineError, match="at most 3"):
        productions.split_scenes("a.\n\nb.\n\nc.\n\nd.", most=3)


def test_the_text_models_labels_and_markup_are_removed_from_a_script(monkeypatch):
    answer = (
        "**Scene 1:** Sleep matters more than you think.\n\n"
        "Narrator: Keep a *regular* bedtime.\n\n# \n\nScene 3 - Put the phone away."
    )
    _answers(monkeypatch, answer)
    script = productions.write_script("better sleep", 3)
    assert script == (
        "Sleep matters more than you think.\n\nKeep a regular bedtime.\n\n"
        "Scene 3 - Put the phone away."
    )


def _answers(monkeypatch, *texts, embedded=False):
    """The text model answers ``texts`` in turn (the last one again when asked more)."""
    asked = []

    def reply(messages, **options):
        asked.append(messages)
        text = texts[min(len(asked), len(texts)) - 1]
        return providers.Completion(text, "test-model", "stop", embedded=embedded)

    monkeypatch.setattr(productions.llm.chain, "reply", reply)
    monkeypatch.setattr(productions.llm.chain, "insist_embedded", reply)
    return asked


def test_a_script_with_no_words_is_a_provider_failure(monkeypatch):
    _answers(monkeypatch, "**\n\n#")
    with pytest.raises(ProviderUnavailable, match="no usable script"):
        productions.write_script("anything", 3)


def test_an_embedded_script_that_loops_is_asked_again_then_refused(monkeypatch):
    loop = "Sleep is good for you and sleep is good for you. " * 12
    asked = _answers(monkeypatch, loop, "Sleep matters.\n\nKeep a regular bedtime.", embedded=True)
    assert productions.write_script("better sleep", 2) == (
        "Sleep matters.\n\nKeep a regular bedtime."
    )
    assert len(asked) == 2
    _answers(monkeypatch, loop, embedded=True)
    with pytest.raises(ModelUnfit):
        productions.write_script("better sleep", 2)


def _video_inputs(**changes):
    return {
        "script": "Tiny first scene.\n\nAnd a second.",
        "scene_count": 5,
        "voice": None,
        "aspect_ratio": "1:1",
        "resolution": "240p",
        "images": [],
        **changes,
    }


def test_more_images_than_scenes_is_an_input_error(no_provider):
    picture = solid_image(8, 8)
    with pytest.raises(EngineError, match="3 images were sent for 2 scenes"):
        get_engine("productions.video").run(_video_inputs(images=[picture] * 3), {})


def test_a_narrated_video_with_a_supplied_picture_and_a_title_card(no_provider):
    output = get_engine("productions.video").run(
        _video_inputs(images=[solid_image(64, 48, "orange")]), {}
    )
    video = output["video"]
    assert video.content_type == "video/mp4" and video.data[4:8] == b"ftyp"
    assert (output["width"], output["height"]) == (240, 240)
    assert [scene["visual"] for scene in output["scenes"]] == ["supplied", "title_card"]
    assert [scene["text"] for scene in output["scenes"]] == ["Tiny first scene.", "And a second."]
    assert output["scenes"][-1]["end"] == output["duration_s"] > 1
    assert output["voice"] == "en_US-joe-medium"


def test_a_topic_is_scripted_by_the_text_model_and_illustrated_by_the_provider(provider):
    provider.reply("The sea is vast.\n\nLighthouses guide ships home.")
    output = get_engine("productions.video").run(
        {**_video_inputs(script=None, topic="lighthouses"), "script": None}, {}
    )
    assert output["script"] == "The sea is vast.\n\nLighthouses guide ships home."
    assert [scene["visual"] for scene in output["scenes"]] == ["generated", "generated"]
    calls = provider.calls("/v1/images/generations")
    assert len(calls) == 2 and calls[0].json["size"] == "1024x1024"
    assert "lighthouses" in calls[0].json["prompt"]


def test_a_scene_whose_picture_fails_gets_a_title_card(provider):
    provider.fail_next(20, status=503)
    output = get_engine("productions.video").run(_video_inputs(), {})
    assert [scene["visual"] for scene in output["scenes"]] == ["title_card", "title_card"]


# --- audiobooks ---------------------------------------------------------------------------


def test_chapters_come_from_markdown_headings():
    title, chapters = productions.book_chapters(
        {"text": "# One\n\nFirst words.\n\n# Two\n\nSecond words.", "book": None, "title": None}
    )
    assert title is None
    assert chapters == [
        {"title": "One", "text": "First words."},
        {"title": "Two", "text": "Second words."},
    ]


def test_chapter_lines_in_plain_text_mark_chapters():
    text = "Chapter 1\nIt began.\n\nChapter 2\nIt ended."
    _title, chapters = productions.book_chapters({"text": text, "title": "Tale"})
    assert [chapter["title"] for chapter in chapters] == ["Chapter 1", "Chapter 2"]


def test_a_text_without_chapters_is_one_chapter_named_by_the_title():
    title, chapters = productions.book_chapters({"text": "Just a few words.", "title": "Note"})
    assert title == "Note"
    assert chapters == [{"title": "Note", "text": "Just a few words."}]


def test_an_epub_gives_its_chapters_and_title():
    book = epub_document([("Dawn", "The keeper woke."), ("Dusk", "The lamp was lit.")])
    title, chapters = productions.book_chapters({"book": book, "title": None})
    assert title == "A Test Book"
    assert [(c["title"], c["text"]) for c in chapters] == [
        ("Dawn", "The keeper woke."),
        ("Dusk", "The lamp was lit."),
    ]


def test_a_book_past_the_limit_is_refused():
    text = "word " * (productions.MAX_BOOK_CHARS // 5 + 10)
    with pytest.raises(EngineError, match="at most 100,000"):
        productions.book_chapters({"text": text, "title": None})


def test_a_book_with_no_words_is_refused():
    with pytest.raises(EngineError, match="no text to read"):
        productions.book_chapters({"text": "# Empty\n\n# Also empty\n", "title": None})


def test_an_audiobook_reads_each_chapter_and_is_billed_per_chapter(no_provider):
    engine = get_engine("productions.audiobook")
    output = engine.run(
        {
            "text": "# One\n\nHello.\n\n# Two\n\nGoodbye.",
            "title": "Two words",
            "voice": None,
            "format": "wav",
            "speed": 1.5,
        },
        {},
    )
    assert output["title"] == "Two words" and output["format"] == "wav"
    first, second = output["chapters"]
    assert (first["index"], first["title"], first["characters"]) == (1, "One", 6)
    assert second["audio"].filename == "chapter-02.wav"
    with wave.open(io.BytesIO(second["audio"].data)) as audio:
        assert audio.getnframes() / audio.getframerate() == pytest.approx(
            second["duration_s"], abs=0.01
        )
    assert output["duration_s"] == pytest.approx(first["duration_s"] + second["duration_s"])
    assert engine.billed_units(output) == 2


def test_other_engines_are_billed_once():
    assert get_engine("productions.video").billed_units({"video": None}) == 1
    assert get_engine("speech.synthesize").billed_units({}) == 1
