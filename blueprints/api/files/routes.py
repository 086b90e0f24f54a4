"""Generated files: served from this service whichever backend keeps their bytes.

With a bucket, the bytes are streamed through the app rather than answered with a redirect to
a presigned bucket URL: the file keeps one URL on this service that never expires (an
``<img>`` tag or a stored link keeps working), the same headers (ETag, caching,
``Content-Disposition``, the sandboxing CSP and ``nosniff``, which a bucket would not send on
our behalf) and the same access rules; the bucket stays private and needs no CORS or public
access settings on any provider; 304s, HEAD and unsatisfiable ranges are answered from the
row without touching the bucket, and a range asks the bucket for that range only. The cost is
that the bytes cross the web process, which the sizes here (tens of MiB) allow.
"""

import mimetypes
import unicodedata
from urllib.parse import quote

from flask import Response, request
from flask.views import MethodView
from flask_smorest import Blueprint
from werkzeug.datastructures import ContentRange
from werkzeug.exceptions import RequestedRangeNotSatisfiable
from werkzeug.http import parse_range_header

from blueprints.api.docs import API_KEY_SECURITY, PUBLIC, REQUEST_ID_HEADER, problem_responses
from blueprints.api.pipeline import authenticate
from blueprints.api.problems import Problem
from extensions import db
from models import StoredFile
from services import storage

blp = Blueprint(
    "files", __name__, url_prefix="/v1", description="Generated files: images, audio, video."
)

# A file never changes under its id, but its URL is a capability: browsers may keep it,
# shared caches must not.
MAX_AGE = 24 * 60 * 60
# Types a browser may render in place; anything else is offered as a download.
_INLINE = ("image/", "audio/", "video/", "application/pdf", "text/plain")
# Served from our own origin, a file must never run script there (an SVG, an HTML file).
_SANDBOX = (
    "default-src 'none'; img-src 'self'; media-src 'self'; style-src 'unsafe-inline'; sandbox"
)

_FILE_HEADERS = {
    "ETag": {"description": "The file's SHA-256 (hex), quoted.", "schema": {"type": "string"}},
    "Cache-Control": {"schema": {"type": "string"}},
    "Content-Disposition": {"schema": {"type": "string"}},
    "Accept-Ranges": {"schema": {"type": "string"}},
    **REQUEST_ID_HEADER,
}
_BINARY = {"*/*": {"schema": {"type": "string", "format": "binary"}}}
_NOT_FOUND = problem_responses(404)
_NOT_FOUND["404"]["description"] = "No file has this id [file_not_found]."
_GONE = problem_responses(410)
_GONE["410"]["description"] = "The file's bytes are no longer in the store [file_gone]."


@blp.route("/files/<string:file_id>")
class FileById(MethodView):
    @blp.doc(
        operationId="getFile",
        security=PUBLIC,
        description="The file id is an unguessable capability token, like a signed URL: "
        "anyone holding the URL may fetch the file, with no API key, so that `<img>`, "
        "`<audio>` and `<video>` tags work. Supports `If-None-Match` (304) and `Range` (206). "
        "Wherever the bytes are kept (the database or a bucket), they are served from here.",
        responses={
            "200": {
                "description": "The file's bytes, with its stored content type.",
                "headers": _FILE_HEADERS,
                "content": _BINARY,
            },
            "206": {
                "description": "The requested byte range.",
                "headers": _FILE_HEADERS,
                "content": _BINARY,
            },
            "304": {"description": "Not modified (the `If-None-Match` ETag matches)."},
            **_NOT_FOUND,
            **_GONE,
            **problem_responses(416, 503),
        },
    )
    def get(self, file_id):
        """Download a generated file (no API key: the id is the capability)."""
        stored = _find(file_id)
        if stored.account_id is None:
            # An anonymous visitor's file: the site serves it to that visitor alone.
            raise _not_found()
        return file_response(stored)

    @blp.response(204)
    @blp.doc(
        operationId="deleteFile",
        security=API_KEY_SECURITY,
        responses={**problem_responses(401, 429, 503), **_NOT_FOUND},
    )
    def delete(self, file_id):
        """Delete a file of your account; its URL answers 404 from then on."""
        key = authenticate()
        stored = _find(file_id)
        if stored.account_id != key.account_id:
            raise _not_found()  # another account's file: never reveal that it exists
        storage.delete(stored)
        db.session.commit()


def file_response(stored: StoredFile) -> Response:
    """A stored file's answer: its bytes or the byte range asked for (206), 304 for a
    matching ETag, with its content type and the headers that keep it safe to open. The
    site serves its visitors' files with it too (blueprints/site/runs.py)."""
    if stored.sha256 in request.if_none_match:
        return _file_headers(Response(status=304), stored)
    span = _requested_range(stored)
    start, stop = span or (0, stored.size)
    try:
        body = () if request.method == "HEAD" else storage.stream(stored, start, stop)
    except storage.FileGone:
        raise Problem(
            410,
            "file_gone",
            "This file's bytes are no longer stored; run the tool again to make it anew.",
        ) from None
    response = Response(body, status=206 if span else 200, content_type=stored.content_type)
    response.content_length = stop - start
    response.accept_ranges = "bytes"
    if span:
        response.content_range = ContentRange("bytes", start, stop, stored.size)
    return _file_headers(response, stored)


def _not_found() -> Problem:
    return Problem(404, "file_not_found", "There is no file with this id.")


def _find(file_id: str) -> StoredFile:
    stored = storage.find(file_id)
    if stored is None:
        raise _not_found()
    return stored


def _requested_range(stored: StoredFile) -> tuple[int, int] | None:
    """The byte span ``[start, stop)`` a ``Range`` header asks for, or None for the whole file
    (no range, an empty file, or an ``If-Range`` naming another version). A malformed or
    unsatisfiable range is a 416, as werkzeug's ``make_conditional`` answers it."""
    if "Range" not in request.headers or stored.size == 0:
        return None
    if "If-Range" in request.headers and request.if_range.etag != stored.sha256:
        return None
    requested = parse_range_header(request.headers["Range"])
    span = requested.range_for_length(stored.size) if requested else None
    if span is None:
        raise RequestedRangeNotSatisfiable(length=stored.size)
    return span


def _file_headers(response: Response, stored: StoredFile) -> Response:
    response.set_etag(stored.sha256)
    response.cache_control.private = True
    response.cache_control.max_age = MAX_AGE
    response.cache_control.immutable = True
    disposition = "inline" if stored.content_type.startswith(_INLINE) else "attachment"
    response.headers.set("Content-Disposition", disposition, **_filename(stored))
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Content-Security-Policy"] = _SANDBOX
    return response


def _filename(stored: StoredFile) -> dict:
    name = stored.filename
    if not name:
        extension = mimetypes.guess_extension(stored.content_type.split(";")[0]) or ""
        name = stored.id + extension
    try:
        name.encode("ascii")
    except UnicodeEncodeError:
        simple = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
        return {"filename": simple or stored.id, "filename*": f"UTF-8''{quote(name, safe='')}"}
    return {"filename": name}
