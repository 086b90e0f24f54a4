"""Binary values that pass between the API and the engines.

A tool's binary input field (an image, audio, a document) reaches its engine as a ``Blob``,
already fetched or decoded by the API (from a URL, a ``data:`` URI, base64 or an upload). An
engine returns a ``Blob`` for a binary output field; the API stores it and answers with a URL
on this service instead of the bytes.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class Blob:
    data: bytes
    content_type: str
    filename: str | None = None

    def __len__(self) -> int:
        return len(self.data)

    def __repr__(self) -> str:
        return f"Blob({self.content_type}, {len(self.data)} bytes, {self.filename!r})"
