"""A deterministic OpenAI-compatible server for tests, speaking HTTP on 127.0.0.1.

``FakeOpenAI`` runs a ``ThreadingHTTPServer`` in a thread (use it as a context manager) and
answers the five endpoints the provider adapter calls, under ``/v1``:

- ``POST /v1/chat/completions``: the answer holds a hash of the messages in a fixed sentence
  (with ``"stream": true``, as server-sent ``chat.completion.chunk`` events, a word each);
  with ``response_format`` ``json_object`` a JSON object, with a JSON schema (``json_schema``,
  or a ``schema`` beside ``json_object``) an object valid against it; ``reply(...)`` scripts
  the next answers instead. ``image_url`` parts are checked as OpenAI checks them (an http(s)
  URL or a base64 ``data:`` URI of a PNG, JPEG, GIF or WebP image; ``detail`` auto, low or
  high), or 400.
- ``POST /v1/images/generations``: ``n`` PNG images of the requested size (at most 1024 pixels
  a side) in a colour taken from the prompt, as ``b64_json`` or, when ``image_answer = "url"``,
  as URLs served by ``GET /files/<name>``.
- ``POST /v1/audio/transcriptions``: multipart; ``json``, ``verbose_json`` or ``text``.
- ``POST /v1/audio/speech``: a WAV of silence (its length follows the text) for ``wav``, silent
  MPEG frames for ``mp3``, hash bytes for other formats.
- ``POST /v1/embeddings``: unit vectors of ``EMBEDDING_SIZE`` floats from each text's hash.

Every request is recorded (``requests``). With ``api_key`` set, a request without
``Authorization: Bearer <api_key>`` gets OpenAI's 401 (whose message quotes part of the key
sent, as OpenAI's does); with ``models`` set, an unknown model gets 404 ``model_not_found``.
``fail_next(n, status=..., retry_after=...)`` and ``hang_next(n, seconds)`` make the next
``n`` calls fail or stall. ``latency`` (seconds, 0 by default) delays every API answer, as a
real model's generation time does; ``in_flight`` and ``peak_in_flight`` count the API calls
being answered at once (now, and the most since the start or ``reset_peak()``).

A streamed chat completion is written at once by default. With ``stream_pieces`` set, its
content is cut into that many pieces (its words shared evenly among them, or its characters
when it has fewer words than pieces) written spread evenly over ``stream_seconds``: the
first right after the headers, the last ``stream_seconds`` later, as a model writes.
``first_piece_times`` holds, per streamed call, its request and the ``time.time()`` at which
its first content piece was written.

``reset(**settings)`` makes a running server as a new one (the calls it holds let go, all
of the above forgotten), then sets the attributes given: the tests share one server per
process, ``fake_provider`` in the root ``conftest.py``, reset before and after each test.
"""

from __future__ import annotations

import base64
import contextlib
import email.parser
import email.policy
import hashlib
import io
import json
import re
import struct
import threading
import time
import wave
import zlib
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

EMBEDDING_SIZE = 8
MAX_IMAGE_SIDE = 1024


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


@dataclass
class Recorded:
    """One request as the server received it."""

    method: str
    path: str
    headers: dict[str, str]  # lower-case names
    body: bytes
    json: Any = None
    form: dict[str, str] = field(default_factory=dict)
    files: dict[str, tuple[str | None, str, bytes]] = field(default_factory=dict)


@dataclass
class _Failure:
    status: int | None  # None: hang
    retry_after: str | None = None
    seconds: float = 0.0


class FakeOpenAI:
    """The server; ``base_url`` is what ``AI_BASE_URL`` should be set to."""

    def __init__(
        self, *, api_key: str | None = None, models: set[str] | None = None, port: int = 0
    ) -> None:
        self.port = port  # 0: any free port
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.in_flight = 0
        self._busy = 0  # requests being handled, held ones (hang_next, latency) included
        self._as_new()
        self.api_key = api_key
        self.models = models

    def _as_new(self) -> None:
        """What a test may change, as a new server has it."""
        self.api_key: str | None = None
        self.models: set[str] | None = None
        self.image_answer = "b64_json"
        self.requests: list[Recorded] = []
        self.files: dict[str, bytes] = {}
        self._replies: list[str] = []
        self._failures: list[_Failure] = []
        self.latency = 0.0
        self.peak_in_flight = self.in_flight
        self.stream_pieces: int | None = None  # None: a streamed answer is written at once
        self.stream_seconds = 0.0
        self.first_piece_times: list[tuple[Recorded, float]] = []

    # --- life cycle ----------------------------------------------------------------------

    def __enter__(self) -> FakeOpenAI:
        handler = type("Handler", (_Handler,), {"fake": self})
        self._server = _Server(("127.0.0.1", self.port), handler)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._closing.set()
        assert self._server is not None and self._thread is not None
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def reset(self, **settings: Any) -> None:
        """Make a running server as a new one, for the next test (the root conftest.py's
        ``fake_provider`` stays up for the whole session): the calls it still holds
        (``hang_next``, ``latency``, a paced stream) are let go and awaited (up to 10 s), then
        what it recorded and was told is forgotten (requests, files, scripted replies and
        failures, latency, streaming, ``api_key`` and ``models``, the in-flight peak).
        ``settings`` then set its attributes, as ``reset(api_key="sk-test", models={...})``."""
        held, self._closing = self._closing, threading.Event()
        held.set()
        deadline = time.monotonic() + 10
        while self._busy and time.monotonic() < deadline:
            time.sleep(0.01)
        with self._lock:
            self._as_new()
        for name, value in settings.items():
            if name.startswith("_") or not hasattr(self, name):
                raise TypeError(f"FakeOpenAI has no setting {name!r}")
            setattr(self, name, value)

    @property
    def origin(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def base_url(self) -> str:
        return self.origin + "/v1"

    # --- test controls -------------------------------------------------------------------

    def fail_next(self, count: int, *, status: int = 500, retry_after: str | None = None) -> None:
        """Answer the next ``count`` API calls with ``status`` (and ``Retry-After``)."""
        with self._lock:
            self._failures += [_Failure(status, retry_after) for _ in range(count)]

    def hang_next(self, count: int, seconds: float) -> None:
        """Stall the next ``count`` API calls for ``seconds`` before answering normally."""
        with self._lock:
            self._failures += [_Failure(None, seconds=seconds) for _ in range(count)]

    def reply(self, *answers: str) -> None:
        """The next chat completions answer these texts, in order."""
        with self._lock:
            self._replies += answers

    def reset_peak(self) -> None:
        with self._lock:
            self.peak_in_flight = self.in_flight

    def calls(self, path: str) -> list[Recorded]:
        """The recorded requests to ``path`` (such as "/v1/chat/completions")."""
        with self._lock:
            return [r for r in self.requests if r.path == path]

    # --- used by the handler -------------------------------------------------------------

    def _record(self, recorded: Recorded) -> _Failure | None:
        with self._lock:
            self.requests.append(recorded)
            return self._failures.pop(0) if self._failures else None

    def _held(self, change: int) -> None:
        with self._lock:
            self._busy += change

    def _entered(self, change: int) -> None:
        with self._lock:
            self.in_flight += change
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)

    def _record_get(self, recorded: Recorded) -> None:
        with self._lock:
            self.requests.append(recorded)

    def _next_reply(self) -> str | None:
        with self._lock:
            return self._replies.pop(0) if self._replies else None

    def _first_piece_written(self, recorded: Recorded, when: float) -> None:
        with self._lock:
            self.first_piece_times.append((recorded, when))


class _ApiError(Exception):
    def __init__(self, status: int, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code


class _Server(ThreadingHTTPServer):
    # Hundreds of clients connect at once under load (bench/provider_load.py): the default
    # backlog of 5 dropped their connections, which then retried a second later.
    request_queue_size = 1024


class _Handler(BaseHTTPRequestHandler):
    fake: FakeOpenAI
    protocol_version = "HTTP/1.1"  # keep-alive, as real servers do
    timeout = 10  # an idle kept-alive connection's thread ends after this
    # Headers and body in one segment: two small writes meet the client's delayed ACK (40 ms).
    wbufsize = -1
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        pass

    # A client that hung up mid-answer (a run canceled while its answer streams) is no
    # error of the fake's: http.server would print a traceback as it flushes and closes.
    def handle(self) -> None:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            super().handle()

    def finish(self) -> None:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            super().finish()

    def do_GET(self) -> None:
        headers = {name.lower(): value for name, value in self.headers.items()}
        self.fake._record_get(Recorded(method="GET", path=self.path, headers=headers, body=b""))
        name = self.path.removeprefix("/files/")
        data = self.fake.files.get(name) if self.path.startswith("/files/") else None
        if data is None:
            self._send(404, b'{"error": {"message": "Not found"}}', "application/json")
        else:
            self._send(200, data, "image/png")

    def do_POST(self) -> None:
        self.fake._held(1)
        try:
            self._post()
        finally:
            self.fake._held(-1)

    def _post(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        recorded = Recorded(
            method="POST",
            path=self.path,
            headers={name.lower(): value for name, value in self.headers.items()},
            body=body,
        )
        content_type = self.headers.get("Content-Type", "")
        try:
            if content_type.startswith("application/json"):
                recorded.json = json.loads(body)
            elif content_type.startswith("multipart/form-data"):
                recorded.form, recorded.files = _parse_multipart(content_type, body)
        except ValueError:
            self.fake._record(recorded)
            self._error(_ApiError(400, "We could not parse the JSON body of your request."))
            return
        failure = self.fake._record(recorded)
        if failure is not None:
            if failure.status is None:
                self.fake._closing.wait(failure.seconds)
            else:
                headers = {"Retry-After": failure.retry_after} if failure.retry_after else {}
                self._error(_ApiError(failure.status, f"Simulated HTTP {failure.status}."), headers)
                return
        routes = {
            "/v1/chat/completions": self._chat,
            "/v1/images/generations": self._images,
            "/v1/audio/transcriptions": self._transcriptions,
            "/v1/audio/speech": self._speech,
            "/v1/embeddings": self._embeddings,
        }
        route = routes.get(self.path)
        self.fake._entered(1)
        try:
            if self.fake.latency:
                self.fake._closing.wait(self.fake.latency)
            if route is None:
                raise _ApiError(404, f"Invalid URL (POST {self.path})", "not_found")
            self._authorize()
            route(recorded)
        except _ApiError as error:
            self._error(error)
        except (KeyError, TypeError, AttributeError) as error:
            self._error(_ApiError(400, f"Invalid request: {error!r}"))
        finally:
            self.fake._entered(-1)

    # --- plumbing ------------------------------------------------------------------------

    def _send(
        self, status: int, body: bytes, content_type: str, headers: dict[str, str] | None = None
    ) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a hang past its timeout)

    def _json(self, data: Any) -> None:
        self._send(200, json.dumps(data).encode(), "application/json")

    def _error(self, error: _ApiError, headers: dict[str, str] | None = None) -> None:
        payload = {
            "error": {
                "message": error.message,
                "type": "invalid_request_error" if error.status < 500 else "server_error",
                "param": None,
                "code": error.code,
            }
        }
        self._send(error.status, json.dumps(payload).encode(), "application/json", headers)

    def _authorize(self) -> None:
        expected = self.fake.api_key
        if expected is None:
            return
        sent = self.headers.get("Authorization", "")
        if sent != f"Bearer {expected}":
            token = sent.removeprefix("Bearer ")
            shown = f"{token[:3]}*****{token[-4:]}" if len(token) > 8 else token
            raise _ApiError(
                401,
                f"Incorrect API key provided: {shown}. You can find your API key at "
                "https://platform.openai.com/account/api-keys.",
                "invalid_api_key",
            )

    def _model(self, value: Any) -> str:
        if not isinstance(value, str) or not value:
            raise _ApiError(400, "you must provide a model parameter")
        if self.fake.models is not None and value not in self.fake.models:
            raise _ApiError(
                404,
                f"The model `{value}` does not exist or you do not have access to it.",
                "model_not_found",
            )
        return value

    # --- endpoints -----------------------------------------------------------------------

    def _chat(self, request: Recorded) -> None:
        body = request.json
        model = self._model(body.get("model"))
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise _ApiError(400, "'messages' must be a non-empty array.")
        for message in messages:
            _check_image_parts(message.get("content"))
        texts = [_content_text(m.get("content")) for m in messages]
        key = digest("\n".join(texts))
        scripted = self.fake._next_reply()
        if scripted is not None:
            content = scripted
        else:
            schema = _schema_hint(body.get("response_format"))
            fmt = (body.get("response_format") or {}).get("type")
            if schema is not None:
                content = json.dumps(sample(schema, key))
            elif fmt == "json_object":
                content = json.dumps({"answer": f"Answer {key}.", "digest": key})
            else:
                last = texts[-1].strip().splitlines()[0][:60] if texts[-1].strip() else ""
                content = f"Deterministic answer {key} to: {last}"
        max_tokens = body.get("max_tokens")
        words = content.split(" ")
        finish = "stop"
        if isinstance(max_tokens, int) and len(words) > max_tokens:
            content, finish = " ".join(words[:max_tokens]), "length"
        if body.get("stream") is True:
            self._stream_chat(key, model, content, finish, request)
            return
        self._json(
            {
                "id": f"chatcmpl-{key}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": content},
                        "finish_reason": finish,
                    }
                ],
                "usage": {
                    "prompt_tokens": sum(len(t.split()) for t in texts),
                    "completion_tokens": len(content.split()),
                    "total_tokens": sum(len(t.split()) for t in texts) + len(content.split()),
                },
            }
        )

    def _stream_chat(
        self, key: str, model: str, content: str, finish: str, request: Recorded | None = None
    ) -> None:
        """The completion as OpenAI streams it: server-sent ``chat.completion.chunk``
        events, a word (with its space) each, then ``[DONE]``; chunked transfer encoding.
        With ``stream_pieces`` set, that many pieces spread over ``stream_seconds``."""
        paced = self.fake.stream_pieces
        pieces = _cut(content, paced) if paced else re.findall(r"\S+\s*|\s+", content) or [""]
        interval = self.fake.stream_seconds / (len(pieces) - 1) if len(pieces) > 1 else 0.0

        def event(delta: dict, reason: str | None = None) -> bytes:
            chunk = {
                "id": f"chatcmpl-{key}",
                "object": "chat.completion.chunk",
                "created": int(time.time()),
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": reason}],
            }
            return f"data: {json.dumps(chunk)}\n\n".encode()

        def write(data: bytes) -> None:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

        try:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            write(event({"role": "assistant", "content": ""}))
            started = time.monotonic()
            for index, piece in enumerate(pieces):
                if paced and index:
                    wait = started + index * interval - time.monotonic()
                    if wait > 0 and self.fake._closing.wait(wait):
                        return  # shutting down
                write(event({"content": piece}))
                if index == 0 and request is not None:
                    self.fake._first_piece_written(request, time.time())
            for data in (event({}, finish), b"data: [DONE]\n\n"):
                write(data)
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _images(self, request: Recorded) -> None:
        body = request.json
        self._model(body.get("model"))
        prompt = body.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            raise _ApiError(400, "'prompt' is required.")
        n = body.get("n", 1)
        if not isinstance(n, int) or not 1 <= n <= 10:
            raise _ApiError(400, "'n' must be between 1 and 10.")
        match = re.fullmatch(r"(\d+)x(\d+)", str(body.get("size", "1024x1024")))
        if not match:
            raise _ApiError(400, f"Invalid size {body.get('size')!r}.")
        width, height = (min(int(v), MAX_IMAGE_SIDE) for v in match.groups())
        answer_as = body.get("response_format") or self.fake.image_answer
        data = []
        for index in range(n):
            key = digest(f"{prompt}#{index}")
            png = make_png(width, height, bytes.fromhex(key[:6]))
            if answer_as == "url":
                name = f"{key}.png"
                self.fake.files[name] = png
                data.append({"url": f"{self.fake.origin}/files/{name}", "revised_prompt": prompt})
            else:
                data.append({"b64_json": base64.b64encode(png).decode(), "revised_prompt": prompt})
        self._json({"created": int(time.time()), "data": data})

    def _transcriptions(self, request: Recorded) -> None:
        self._model(request.form.get("model"))
        if "file" not in request.files:
            raise _ApiError(400, "'file' is required.")
        filename, _type, audio = request.files["file"]
        key = digest(hashlib.sha256(audio).hexdigest())
        text = f"Transcript {key} of {filename or 'audio'}."
        duration = round(max(len(audio), 1) / 32000, 3)  # 16 kHz 16-bit mono
        response_format = request.form.get("response_format", "json")
        if response_format == "text":
            self._send(200, text.encode(), "text/plain; charset=utf-8")
            return
        if response_format != "verbose_json":
            self._json({"text": text})
            return
        middle = round(duration / 2, 3)
        self._json(
            {
                "task": "transcribe",
                "language": request.form.get("language") or "english",
                "duration": duration,
                "text": text,
                "segments": [
                    {"id": 0, "start": 0.0, "end": middle, "text": f" Transcript {key}"},
                    {"id": 1, "start": middle, "end": duration, "text": f" of {filename}."},
                ],
            }
        )

    def _speech(self, request: Recorded) -> None:
        body = request.json
        self._model(body.get("model"))
        text = body.get("input")
        if not isinstance(text, str) or not text.strip():
            raise _ApiError(400, "'input' is required.")
        if not isinstance(body.get("voice"), str):
            raise _ApiError(400, "'voice' is required.")
        speed = body.get("speed", 1.0)
        if not isinstance(speed, int | float) or not 0.25 <= speed <= 4.0:
            raise _ApiError(400, "'speed' must be between 0.25 and 4.0.")
        fmt = body.get("response_format", "mp3")
        seconds = max(0.2, len(text.split()) * 0.4 / speed)
        if fmt == "wav":
            self._send(200, make_wav(seconds), "audio/wav")
        elif fmt == "mp3":
            self._send(200, make_mp3(seconds), "audio/mpeg")
        elif fmt in ("opus", "aac", "flac", "pcm"):
            self._send(200, hashlib.sha256(text.encode()).digest() * 64, f"audio/{fmt}")
        else:
            raise _ApiError(400, f"Unsupported response_format {fmt!r}.")

    def _embeddings(self, request: Recorded) -> None:
        body = request.json
        model = self._model(body.get("model"))
        texts = body.get("input")
        if isinstance(texts, str):
            texts = [texts]
        if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
            raise _ApiError(400, "'input' must be a string or an array of strings.")
        # Answered in reverse order, as the API allows: clients must sort by index.
        data = [
            {"object": "embedding", "index": index, "embedding": embedding(text)}
            for index, text in reversed(list(enumerate(texts)))
        ]
        tokens = sum(len(t.split()) for t in texts)
        self._json(
            {
                "object": "list",
                "data": data,
                "model": model,
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            }
        )


# --- deterministic content ---------------------------------------------------------------


def _cut(content: str, count: int) -> list[str]:
    """``content`` in ``count`` pieces: its words (each with its spaces) shared evenly, or
    its characters when it has fewer words than that (a piece may then be empty)."""
    units = re.findall(r"\S+\s*|\s+", content)
    if len(units) < count:
        units = list(content)
    bounds = [i * len(units) // count for i in range(count + 1)]
    return ["".join(units[start:end]) for start, end in zip(bounds, bounds[1:], strict=False)]


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: text, image_url
        return " ".join(
            part.get("text", "") if part.get("type") == "text" else f"[{part.get('type')}]"
            for part in content
            if isinstance(part, dict)
        )
    return ""


_IMAGE_URL = re.compile(r"^(?:https?://|data:image/(?:png|jpeg|gif|webp);base64,)")


def _check_image_parts(content: Any) -> None:
    if not isinstance(content, list):
        return
    for part in content:
        if not isinstance(part, dict) or part.get("type") != "image_url":
            continue
        image = part.get("image_url")
        url = image.get("url") if isinstance(image, dict) else None
        if not isinstance(url, str) or not _IMAGE_URL.match(url):
            raise _ApiError(
                400,
                "Invalid image_url: send an http(s) URL or a base64 data: URI of a PNG, JPEG, "
                "GIF or WebP image.",
                "invalid_image_url",
            )
        if image.get("detail", "auto") not in ("auto", "low", "high"):
            raise _ApiError(400, f"Invalid 'detail': {image.get('detail')!r}.", "invalid_value")
        if url.startswith("data:"):
            try:
                base64.b64decode(url.partition(",")[2], validate=True)
            except ValueError:
                raise _ApiError(400, "Invalid image data (not base64).", "invalid_image") from None


def _schema_hint(response_format: Any) -> dict[str, Any] | None:
    if not isinstance(response_format, dict):
        return None
    if response_format.get("type") == "json_schema":
        hint = response_format.get("json_schema") or {}
        return hint.get("schema") if isinstance(hint, dict) else None
    if response_format.get("type") == "json_object" and isinstance(
        response_format.get("schema"), dict
    ):
        return response_format["schema"]
    return None


def sample(schema: dict[str, Any], key: str, name: str = "value") -> Any:
    """A value valid against ``schema`` (the common keywords), derived from ``key``."""
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    for combinator in ("anyOf", "oneOf"):
        if schema.get(combinator):
            return sample(schema[combinator][0], key, name)
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        properties = schema.get("properties", {})
        return {prop: sample(sub, key, prop) for prop, sub in properties.items()}
    if kind == "array":
        items = schema.get("items", {"type": "string"})
        count = max(schema.get("minItems", 0), min(3, schema.get("maxItems", 3)))
        return [sample(items, f"{key}{index}", name) for index in range(count)]
    if kind == "string":
        formats = {
            "uri": f"https://example.com/{key}",
            "email": f"{key}@example.com",
            "date": "2026-01-01",
            "date-time": "2026-01-01T00:00:00Z",
        }
        text = formats.get(schema.get("format", ""), f"{name.replace('_', ' ')} {key}")
        text = text.ljust(schema.get("minLength", 0), "x")
        return text[: schema["maxLength"]] if "maxLength" in schema else text
    if kind in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum", 0) + 1)
        high = schema.get("maximum", low + 100)
        value = low + int(key[:4], 16) % (int(high - low) + 1)
        return int(value) if kind == "integer" else float(value)
    if kind == "boolean":
        return int(key[0], 16) % 2 == 0
    return None


def embedding(text: str) -> list[float]:
    raw = hashlib.sha256(text.encode("utf-8")).digest()
    values = [b / 127.5 - 1 for b in raw[:EMBEDDING_SIZE]]
    norm = sum(v * v for v in values) ** 0.5 or 1.0
    return [round(v / norm, 6) for v in values]


def make_png(width: int, height: int, rgb: bytes) -> bytes:
    """A valid PNG of one colour."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    rows = (b"\x00" + rgb * width) * height
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows, 6))
        + chunk(b"IEND", b"")
    )


def make_wav(seconds: float, rate: int = 16000) -> bytes:
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(b"\x00\x00" * int(rate * seconds))
    return buffer.getvalue()


def make_mp3(seconds: float) -> bytes:
    """Silent MPEG-1 Layer III frames (128 kbit/s, 44.1 kHz): 417 bytes per 26 ms."""
    frame = b"\xff\xfb\x90\x64" + b"\x00" * 413
    return frame * max(1, round(seconds / 0.026))


def _parse_multipart(content_type: str, body: bytes) -> tuple[dict, dict]:
    parser = email.parser.BytesParser(policy=email.policy.HTTP)
    message = parser.parsebytes(f"Content-Type: {content_type}\r\n\r\n".encode() + body)
    if not message.is_multipart():
        raise ValueError("not multipart")
    form: dict[str, str] = {}
    files: dict[str, tuple[str | None, str, bytes]] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True) or b""
        filename = part.get_filename()
        if filename is not None:
            files[name] = (filename, part.get_content_type(), payload)
        else:
            form[name] = payload.decode("utf-8")
    return form, files
