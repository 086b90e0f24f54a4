"""Speech to text: word error rate of the transcription tool (``audio-transcriber``: Whisper
tiny.en through faster-whisper) on original sentences of 3 to 30 words, each spoken on its own
by the local voices (the text-to-speech engine: Piper's en_US-joe-medium, and eSpeak NG's
American English, robotic and harder to follow). The word error rate is the Levenshtein
distance between the word lists over the reference's length, pooled over the sentences, with
case and punctuation left out and numerals spelled out (Whisper writes "40" for "forty").
The real-time factor is processing seconds over audio seconds (lower is faster).

Baseline: the same model and the same decoded audio given to faster-whisper's
``transcribe`` with its defaults: beam search of five, temperature fallback, each window
conditioned on the text before it, language left to the model (tiny.en knows only English).
The tool decodes greedily (a beam of one) with no conditioning, which is the product's
choice for speed.
"""

from __future__ import annotations

import re
import time
from typing import Any

from bench.quality import Figure, error_rate, run_engine

BASELINE = "faster-whisper defaults (beam 5), same model"
VOICES = (("Piper", "en_US-joe-medium"), ("eSpeak NG", "espeak:gmw/en-US"))
SENTENCES = (
    "See you soon.",
    "Could you send me the slides from the workshop?",
    "Please remember to water the plants on the balcony before you leave for the airport.",
    "The meeting has moved to Thursday afternoon because half the team is traveling.",
    "Turn left at the bakery, walk past the old church, and the museum is on your right.",
    "Our train was forty minutes late, so we missed the start of the concert.",
    "She planted tomatoes, beans and a row of sunflowers along the garden fence.",
    "The printer upstairs keeps jamming whenever someone prints on both sides of the page.",
    "If the weather stays dry, the market will open at eight tomorrow morning.",
    "Thank you for calling; all of our advisors are busy at the moment.",
    "He fixed the squeaky door with a few drops of oil and a lot of patience.",
    "The recipe needs two cups of flour, one egg and a pinch of salt.",
    "Children under twelve travel free with a paying adult.",
    "When the storm finally passed, the neighbors came out to clear the branches from the "
    "road, and by the evening the buses were running again as if nothing had happened.",
    "Save your work often, because the battery drains faster than the little icon suggests.",
)

_ONES = (
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
    "nineteen",
)  # fmt: skip
_TENS = ("", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")


def spelled(number: int) -> str:
    """A whole number below a million in English words: 45 -> "forty five"."""
    if number < 20:
        return _ONES[number]
    if number < 100:
        tens, ones = divmod(number, 10)
        return _TENS[tens] + (f" {_ONES[ones]}" if ones else "")
    size, name = (1000, "thousand") if number >= 1000 else (100, "hundred")
    high, rest = divmod(number, size)
    return f"{spelled(high)} {name}" + (f" {spelled(rest)}" if rest else "")


def words(text: str) -> list[str]:
    """The words of ``text`` for scoring: lower case, no punctuation (hyphens split words,
    apostrophes go), whole numbers below a million spelled out."""
    text = re.sub(r"(?<=\d),(?=\d{3}\b)", "", text.lower())  # 1,204 -> 1204
    found = []
    for token in re.findall(r"[a-z0-9']+", text.replace("-", " ")):
        token = token.replace("'", "")
        if token.isdigit() and int(token) < 1_000_000:
            found.extend(spelled(int(token)).split())
        elif token:
            found.append(token)
    return found


def word_error_rate(pairs: list[tuple[str, str]]) -> float:
    """The pooled word error rate of (reference, transcript) pairs, both normalised."""
    return error_rate((words(reference), words(heard)) for reference, heard in pairs)


def _voices_here() -> tuple[list[tuple[str, str]], list[str]]:
    from engines.audio import synthesis

    available = {voice["id"] for voice in synthesis.voices()}
    here = [(label, voice) for label, voice in VOICES if voice in available]
    missing = [f"{label} voice skipped: not installed" for label, voice in VOICES
               if voice not in available]  # fmt: skip
    return here, missing


def _spoken(voice: str) -> list[tuple[str, Any, float]]:
    """Each sentence spoken by ``voice``: (sentence, WAV Blob, seconds of audio)."""
    from engines import get_engine

    speak = get_engine("speech.synthesize")
    spoken = []
    for sentence in SENTENCES:
        output = speak.run({"text": sentence, "voice": voice, "format": "wav"}, {})
        spoken.append((sentence, output["audio"], output["duration_s"]))
    return spoken


def _engine(audio: Any) -> str:
    return run_engine("audio-transcriber", {"audio": audio})["text"]


def _baseline(audio: Any) -> str:
    from engines.audio import transcription

    pieces, _info = transcription._whisper().transcribe(transcription.decode_audio(audio))
    return " ".join(piece.text.strip() for piece in pieces)


def _transcribed(transcribe: Any, spoken: list[tuple[str, Any, float]]) -> tuple[float, float]:
    """(word error rate, real-time factor) of ``transcribe`` over the spoken sentences."""
    pairs, busy = [], 0.0
    for sentence, audio, _seconds in spoken:
        started = time.perf_counter()
        heard = transcribe(audio)
        busy += time.perf_counter() - started
        pairs.append((sentence, heard))
    return word_error_rate(pairs), busy / sum(seconds for _, _, seconds in spoken)


def measure() -> list[Figure]:
    here, missing = _voices_here()
    if not here:
        raise RuntimeError("; ".join(missing))
    figures = []
    for label, voice in here:
        spoken = _spoken(voice)
        for transcribe in (_engine, _baseline):  # loads the model, warms up, untimed
            transcribe(spoken[0][1])
        engine_wer, engine_rtf = _transcribed(_engine, spoken)
        baseline_wer, baseline_rtf = _transcribed(_baseline, spoken)
        audio_s = sum(seconds for _, _, seconds in spoken)
        detail = "; ".join(
            [f"{audio_s:.0f} s of audio, {sum(len(words(s)) for s in SENTENCES)} words",
             f"real-time factor {engine_rtf:.2f} vs {baseline_rtf:.2f}", *missing]
        )  # fmt: skip
        figures.append(
            Figure("speech", f"word error rate ({label} voice)", engine_wer, baseline_wer,
                   BASELINE, len(spoken), higher_is_better=False, detail=detail)
        )  # fmt: skip
    return figures
