"""The model provider's other operations: images, transcription, speech and embeddings.

Each is one POST through the transport (``provider_transport``) and its answer read into
the engines' types: images and speech as ``Blob``s (an image answered as a URL is
downloaded, never with our credentials), a transcription as text, language, duration and
segments, embeddings as one vector per text.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

import requests

from engines.base import ProviderUnavailable
from engines.blob import Blob
from engines.models._http import read_limited, session
from engines.models.provider_transport import Transport

# Downloaded images, and speech.
MAX_DOWNLOAD_BYTES = 25 * 1024 * 1024

_AUDIO_EXTENSIONS = {
    "audio/mpeg": "mp3",
    "audio/mp3": "mp3",
    "audio/wav": "wav",
    "audio/x-wav": "wav",
    "audio/wave": "wav",
    "audio/ogg": "ogg",
    "audio/opus": "ogg",
    "audio/webm": "webm",
    "audio/flac": "flac",
    "audio/x-flac": "flac",
    "audio/mp4": "m4a",
    "audio/m4a": "m4a",
    "audio/x-m4a": "m4a",
    "audio/aac": "aac",
    "video/mp4": "mp4",
    "video/webm": "webm",
}

_SPEECH_TYPES = {
    "mp3": "audio/mpeg",
    "opus": "audio/ogg",
    "aac": "audio/aac",
    "flac": "audio/flac",
    "wav": "audio/wav",
    "pcm": "audio/pcm",
}


class CapabilityCalls(Transport):
    """The image, audio and embedding operations of ``engines.models.providers.Provider``."""

    def generate_images(
        self,
        prompt: str,
        *,
        n: int,
        size: str,
        style: str | None = None,
        negative_prompt: str | None = None,
    ) -> list[Blob]:
        """POST /images/generations; returns ``n`` images (base64 answers or downloaded URLs).

        The style and the negative prompt are written into the prompt: providers disagree on
        (or lack) fields for them, and a free-form style such as "watercolor" is only
        understood in the prompt anyway.
        """
        text = prompt.strip()
        if style:
            text += f"\n\nStyle: {style.strip()}."
        if negative_prompt:
            text += f"\n\nAvoid: {negative_prompt.strip()}."
        body = {"model": self.models["images"], "prompt": text, "n": n, "size": size}
        data = self._post("images", "/images/generations", json_body=body).json()
        items = data.get("data") if isinstance(data, dict) else None
        if not isinstance(items, list) or not items:
            raise ProviderUnavailable("The model provider's image answer holds no image.")
        images = []
        for index, item in enumerate(items, start=1):
            if isinstance(item, dict) and isinstance(item.get("b64_json"), str):
                try:
                    raw = base64.b64decode(item["b64_json"], validate=True)
                except (binascii.Error, ValueError):
                    raise ProviderUnavailable(
                        "The model provider sent an image that is not valid base64."
                    ) from None
                content_type = _image_type(raw, None)
            elif isinstance(item, dict) and isinstance(item.get("url"), str):
                raw, declared = self._download(item["url"])
                content_type = _image_type(raw, declared)
            else:
                raise ProviderUnavailable("The model provider's image answer holds no image.")
            if not raw:
                raise ProviderUnavailable("The model provider sent an empty image.")
            extension = content_type.split("/")[-1].replace("jpeg", "jpg")
            images.append(Blob(raw, content_type, f"image-{index}.{extension}"))
        return images

    def transcribe(self, audio: Blob, *, language: str | None = None) -> dict[str, Any]:
        """POST /audio/transcriptions (multipart, verbose_json).

        Returns ``{"text", "language", "duration", "segments"}``: ``language`` is what the
        provider reports (OpenAI gives a name such as "english") or the one asked for, or None;
        ``duration`` in seconds or None; ``segments`` a list of ``{"start", "end", "text"}``,
        empty when the provider gives none.
        """
        # Whisper servers tell the format by the file name's extension.
        content_type = audio.content_type.split(";")[0].strip().lower()
        extension = _AUDIO_EXTENSIONS.get(content_type, "bin")
        form = {"model": self.models["transcribe"], "response_format": "verbose_json"}
        if language:
            form["language"] = language
        files = {"file": (audio.filename or f"audio.{extension}", audio.data, audio.content_type)}
        data = self._post("transcribe", "/audio/transcriptions", form=form, files=files).json()
        if not isinstance(data, dict) or not isinstance(data.get("text"), str):
            raise ProviderUnavailable("The model provider's transcription holds no text.")
        segments = []
        for segment in data.get("segments") or []:
            if isinstance(segment, dict) and isinstance(segment.get("text"), str):
                segments.append(
                    {
                        "start": float(segment.get("start") or 0.0),
                        "end": float(segment.get("end") or 0.0),
                        "text": segment["text"].strip(),
                    }
                )
        duration = data.get("duration")
        return {
            "text": data["text"].strip(),
            "language": data.get("language") or language or None,
            "duration": float(duration) if isinstance(duration, int | float) else None,
            "segments": segments,
        }

    def speak(self, text: str, *, voice: str, format: str, speed: float) -> Blob:
        """POST /audio/speech; returns the audio in ``format`` (mp3, opus, aac, flac, wav, pcm)."""
        body = {
            "model": self.models["speech"],
            "input": text,
            "voice": voice,
            "response_format": format,
            "speed": speed,
        }
        answer = self._post("speech", "/audio/speech", json_body=body, limit=MAX_DOWNLOAD_BYTES)
        if not answer.body:
            raise ProviderUnavailable("The model provider sent empty audio.")
        declared = answer.content_type
        if not declared.startswith("audio/"):
            declared = _SPEECH_TYPES.get(format, "application/octet-stream")
        return Blob(answer.body, declared, f"speech.{format}")

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """POST /embeddings; one vector per text, in order."""
        if not texts:
            return []
        body = {"model": self.models["embed"], "input": list(texts)}
        data = self._post("embed", "/embeddings", json_body=body).json()
        items = data.get("data") if isinstance(data, dict) else None
        try:
            ordered = sorted(items, key=lambda item: item.get("index", 0))
            vectors = [[float(x) for x in item["embedding"]] for item in ordered]
        except (AttributeError, KeyError, TypeError, ValueError):
            raise ProviderUnavailable(
                "The model provider's embeddings answer is malformed."
            ) from None
        if len(vectors) != len(texts):
            raise ProviderUnavailable(
                f"The model provider sent {len(vectors)} embeddings for {len(texts)} texts."
            )
        return vectors

    def _download(self, url: str) -> tuple[bytes, str | None]:
        """Fetch an image the provider answered with as a URL (never with our credentials)."""
        if urlsplit(url).scheme not in ("http", "https"):
            raise ProviderUnavailable("The model provider sent an image URL that is not HTTP.")
        try:
            with session().get(url, timeout=self._timeouts(), stream=True) as response:
                if response.status_code != 200:
                    raise ProviderUnavailable(
                        f"The model provider's image could not be downloaded "
                        f"(HTTP {response.status_code})."
                    )
                declared = response.headers.get("Content-Type", "").split(";")[0].strip()
                return read_limited(response, MAX_DOWNLOAD_BYTES, "image"), declared or None
        except requests.RequestException as error:
            raise ProviderUnavailable(
                f"The model provider's image could not be downloaded ({type(error).__name__})."
            ) from None


_IMAGE_SIGNATURES = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


def _image_type(data: bytes, declared: str | None) -> str:
    """The image's type from its first bytes (base64 answers declare none)."""
    for signature, content_type in _IMAGE_SIGNATURES:
        if data.startswith(signature):
            return content_type
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    if declared and declared.startswith("image/"):
        return declared
    raise ProviderUnavailable("The model provider sent an image in an unknown format.")
