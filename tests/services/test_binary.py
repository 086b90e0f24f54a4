"""Binary inputs: data: URIs, base64, URLs through the guarded fetcher, uploads, sniffing."""

import base64
import io
import struct
import threading
import wave
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import quote_from_bytes

import pytest
from flask import request
from werkzeug.datastructures import FileStorage

from services.binary import BinaryInputError, blob_from_upload, decode_binary, sniff_type

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 4  # 0xfb, 0xff: url-safe
MIB = 1024 * 1024


def _zip(entries: list[tuple[str, bytes]]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in entries:
            method = zipfile.ZIP_STORED if name == "mimetype" else zipfile.ZIP_DEFLATED
            archive.writestr(name, data, compress_type=method)
    return buffer.getvalue()


def _wav() -> bytes:
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(8000)
        out.writeframes(b"\x00\x01" * 800)
    return buffer.getvalue()


SAMPLES = {
    "image/png": PNG,
    "image/jpeg": b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01",
    "image/gif": b"GIF89a\x01\x00\x01\x00\x00\x00\x00;",
    "image/webp": b"RIFF\x1a\x00\x00\x00WEBPVP8L\x0d\x00\x00\x00",
    "image/tiff": b"II*\x00\x08\x00\x00\x00",
    "image/bmp": b"BM" + struct.pack("<IHHII", 58, 0, 0, 54, 40) + b"\x00" * 40,
    "application/pdf": b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n",
    "application/epub+zip": _zip(
        [("mimetype", b"application/epub+zip"), ("META-INF/container.xml", b"<container/>")]
    ),
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": _zip(
        [("[Content_Types].xml", b"<Types/>"), ("word/document.xml", b"<w:document/>")]
    ),
    "application/zip": _zip([("notes.txt", b"hello")]),
    "audio/wav": _wav(),
    "audio/mpeg": b"ID3\x04\x00\x00\x00\x00\x00\x00",
    "audio/ogg": b"OggS\x00\x02\x00\x00\x00\x00",
    "audio/flac": b"fLaC\x00\x00\x00\x22",
    "video/webm": b"\x1a\x45\xdf\xa3\x9f\x42\x86\x81\x01\x42\x82\x84webm\x42\x87",
    "video/x-matroska": b"\x1a\x45\xdf\xa3\xa3\x42\x86\x81\x01\x42\x82\x88matroska",
    "video/mp4": b"\x00\x00\x00\x20ftypisom\x00\x00\x02\x00isomiso2mp41",
    "audio/mp4": b"\x00\x00\x00\x20ftypM4A \x00\x00\x00\x00M4A mp42",
}


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


@pytest.mark.parametrize("content_type", sorted(SAMPLES))
def test_magic_bytes_tell_the_type(content_type):
    assert sniff_type(SAMPLES[content_type]) == content_type


@pytest.mark.parametrize(
    "data",
    [b"\xff\xfb\x90\x64\x00", b"\xff\xf3\x84\xc4\x00"],  # MPEG-1 and MPEG-2 layer III frames
    ids=["mpeg1", "mpeg2"],
)
def test_mp3_without_id3_is_told_by_its_frame_header(data):
    assert sniff_type(data) == "audio/mpeg"


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"", None),
        (b"hello world", None),
        (b"\xff\xf1\x50\x80", None),  # AAC (ADTS): layer 00, not MP3
        (b"BMnot-a-bitmap", None),
        (b"PK\x03\x04truncated", "application/zip"),
    ],
)
def test_unknown_bytes_are_not_guessed(data, expected):
    assert sniff_type(data) == expected


# --- the forms of a value ------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        f"data:image/png;base64,{b64(PNG)}",
        f"DATA:image/png;BASE64,{b64(PNG)}",
        f"data:;base64,{b64(PNG)}",
        f"data:application/octet-stream;base64,{b64(PNG)}",
        f"data:image/png,{quote_from_bytes(PNG)}",
        b64(PNG),
        b64(PNG).rstrip("="),
        base64.urlsafe_b64encode(PNG).decode(),
        base64.urlsafe_b64encode(PNG).decode().rstrip("="),
        base64.encodebytes(PNG).decode(),  # wrapped at 76 characters
        f"  {b64(PNG)}\n",
    ],
    ids=[
        "data-uri-base64",
        "data-uri-upper-case",
        "data-uri-no-type",
        "data-uri-generic-type",
        "data-uri-percent-encoded",
        "base64",
        "base64-unpadded",
        "base64-url-safe",
        "base64-url-safe-unpadded",
        "base64-wrapped",
        "base64-surrounded-by-space",
    ],
)
def test_every_form_decodes_to_the_same_png(value):
    blob = decode_binary(value, field="image", max_bytes=MIB, allowed_types=["image/*"])
    assert (blob.data, blob.content_type) == (PNG, "image/png")


def test_a_data_uri_keeps_its_declared_type_and_name():
    blob = decode_binary(
        "data:text/plain;charset=utf-8;name=notes%20v2.txt,Hello%2C%20world",
        field="document",
        max_bytes=100,
        allowed_types=["text/plain", "application/pdf"],
    )
    assert (blob.data, blob.content_type, blob.filename) == (
        b"Hello, world",
        "text/plain",
        "notes v2.txt",
    )


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("not base64!", "This is not base64"),
        ("abc=def", "This is not base64"),
        ("abcde", "truncated"),
        ("====", "This is not base64"),
        ("==", "The file is empty"),
        ("data:image/png;base64,@@@", "This is not base64"),
        ("data:image/png;base64", "no comma"),
        ("", "The value is empty"),
        ("   ", "The value is empty"),
        ("data:image/png;base64,", "The file is empty"),
        (123, "Send a URL, a data: URI or base64"),
        (None, "Send a URL, a data: URI or base64"),
        ({"url": "x"}, "Send a URL, a data: URI or base64"),
        ("ftp://example.com/cat.png", "Only http and https"),
        ("file:///etc/passwd", "Only http and https"),
        ("javascript:alert(1)", "Only http and https"),
    ],
)
def test_malformed_values_are_422_field_errors(value, message):
    with pytest.raises(BinaryInputError) as refused:
        decode_binary(value, field="image", max_bytes=MIB, allowed_types=None)
    assert (refused.value.field, refused.value.status) == ("image", 422)
    assert message in refused.value.message


@pytest.mark.parametrize(
    "value",
    [
        b64(b"\x00" * 1025),
        f"data:image/png;base64,{b64(PNG)}",
        f"data:image/png,{quote_from_bytes(b'x' * 1025)}",
        f"data:image/png,{'%41' * 1100}",
    ],
    ids=["base64", "data-uri-base64", "data-uri-percent", "data-uri-percent-long"],
)
def test_values_past_the_limit_are_413(value):
    with pytest.raises(BinaryInputError) as refused:
        decode_binary(value, field="image", max_bytes=1024, allowed_types=None)
    assert refused.value.status == 413
    assert refused.value.message == "The file is larger than 1 KiB, the most accepted."


def test_a_huge_base64_value_is_refused_without_decoding_it(monkeypatch):
    monkeypatch.setattr(base64, "b64decode", lambda *a, **k: pytest.fail("decoded"))
    with pytest.raises(BinaryInputError) as refused:
        decode_binary("A" * (40 * MIB), field="audio", max_bytes=25 * MIB, allowed_types=None)
    assert refused.value.status == 413
    assert "25 MiB" in refused.value.message


def test_a_value_of_exactly_the_limit_is_accepted():
    blob = decode_binary(b64(PNG), field="image", max_bytes=len(PNG), allowed_types="image/png")
    assert len(blob) == len(PNG)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("data:text/html;base64," + b64(b"<script>"), "This is text/html; send image/*."),
        (b64(SAMPLES["application/pdf"]), "This is application/pdf; send image/*."),
        (b64(b"just some bytes"), "could not be told from its bytes; send image/*."),
    ],
)
def test_types_outside_the_allowed_ones_are_422(value, message):
    with pytest.raises(BinaryInputError) as refused:
        decode_binary(value, field="image", max_bytes=MIB, allowed_types=["image/*"])
    assert refused.value.status == 422
    assert refused.value.message.endswith(message)


@pytest.mark.parametrize(
    ("content_type", "allowed"),
    [
        ("application/epub+zip", ["application/epub+zip", "text/plain"]),
        ("audio/wav", ["audio/*"]),
        ("video/mp4", ["video/*", "audio/*"]),
        ("audio/ogg", "*/*"),
    ],
)
def test_sniffed_types_are_checked_against_the_allowed_ones(content_type, allowed):
    blob = decode_binary(
        b64(SAMPLES[content_type]), field="file", max_bytes=MIB, allowed_types=allowed
    )
    assert blob.content_type == content_type


# --- URLs ----------------------------------------------------------------------------------


class _Files(BaseHTTPRequestHandler):
    files = {
        "/cat": (PNG, "application/octet-stream"),
        "/page.html": (b"<html></html>", "text/html"),
        "/big.png": (PNG * 10, "image/png"),
    }

    def do_GET(self):
        body, content_type = self.files.get(self.path, (b"gone", "text/plain"))
        self.send_response(200 if self.path in self.files else 404)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def files_url(app):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Files)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join(5)


def test_a_url_is_fetched_and_its_generic_type_sniffed(app, files_url):
    app.config["FETCH_ALLOW_PRIVATE"] = True
    blob = decode_binary(f"{files_url}/cat", field="image", max_bytes=MIB, allowed_types="image/*")
    assert (blob.data, blob.content_type, blob.filename) == (PNG, "image/png", "cat")


def test_a_private_url_is_a_422_field_error_without_fetch_allow_private(app, files_url):
    with pytest.raises(BinaryInputError) as refused:
        decode_binary(f"{files_url}/cat", field="image", max_bytes=MIB, allowed_types="image/*")
    assert (refused.value.field, refused.value.status) == ("image", 422)
    assert refused.value.message == (
        "127.0.0.1 is a loopback address; only public addresses can be fetched."
    )


@pytest.mark.parametrize(
    ("path", "status", "message"),
    [
        ("/page.html", 422, "sent text/html; expected image/*"),
        ("/big.png", 413, "larger than 1 KiB"),
        ("/missing", 422, "answered HTTP 404"),
    ],
)
def test_url_refusals_map_to_422_or_413(app, files_url, path, status, message):
    app.config["FETCH_ALLOW_PRIVATE"] = True
    with pytest.raises(BinaryInputError) as refused:
        decode_binary(f"{files_url}{path}", field="image", max_bytes=1024, allowed_types="image/*")
    assert refused.value.status == status
    assert message in refused.value.message


# --- uploads -------------------------------------------------------------------------------


def test_a_multipart_upload_becomes_a_typed_blob(app):
    data = {"image": (io.BytesIO(PNG), "photos/cat.png", "application/octet-stream")}
    with app.test_request_context("/v1/tools/run", method="POST", data=data):
        blob = blob_from_upload(
            request.files.get("image"), field="image", max_bytes=MIB, allowed_types="image/*"
        )
    assert (blob.data, blob.content_type, blob.filename) == (PNG, "image/png", "cat.png")


def test_an_upload_keeps_only_the_base_name_of_a_windows_path():
    upload = FileStorage(io.BytesIO(PNG), filename="C:\\photos\\cat.png")
    assert blob_from_upload(upload, field="image", max_bytes=MIB, allowed_types=None).filename == (
        "cat.png"
    )


def test_an_upload_keeps_its_declared_specific_type():
    upload = FileStorage(io.BytesIO(b"%PDF-1.7"), filename="a.pdf", content_type="application/pdf")
    blob = blob_from_upload(upload, field="document", max_bytes=100, allowed_types=None)
    assert blob.content_type == "application/pdf"


@pytest.mark.parametrize(
    ("upload", "status", "message"),
    [
        (None, 422, "No file was uploaded"),
        (FileStorage(io.BytesIO(b""), filename="empty.png"), 422, "The file is empty"),
        (FileStorage(io.BytesIO(PNG), filename="cat.png"), 413, "larger than 100 bytes"),
        (
            FileStorage(io.BytesIO(b"<svg/>"), filename="x.svg", content_type="text/html"),
            422,
            "This is text/html",
        ),
    ],
    ids=["missing", "empty", "too-large", "wrong-type"],
)
def test_upload_refusals(upload, status, message):
    with pytest.raises(BinaryInputError) as refused:
        blob_from_upload(upload, field="image", max_bytes=100, allowed_types=["image/*"])
    assert (refused.value.field, refused.value.status) == ("image", status)
    assert message in refused.value.message


def test_an_upload_is_read_no_further_than_the_limit():
    stream = io.BytesIO(b"x" * MIB)
    with pytest.raises(BinaryInputError):
        blob_from_upload(
            FileStorage(stream, filename="big"), field="f", max_bytes=100, allowed_types=None
        )
    assert stream.tell() == 101
