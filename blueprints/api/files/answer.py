"""A stored file's answer, as the API's file endpoint and the site's run pages serve it:
its bytes or the range asked for, with the headers that keep it safe to open from this
origin (docs/architecture/files.md)."""

import mimetypes
import unicodedata
from urllib.parse import quote

from flask import Response, request
from werkzeug.datastructures import ContentRange
from werkzeug.exceptions import RequestedRangeNotSatisfiable
from werkzeug.http import parse_range_header

from blueprints.api.problems import Problem
from models import StoredFile
from services import storage

# A file never changes under its id, but its URL is a capability: browsers may keep it,
# shared caches must not.
MAX_AGE = 24 * 60 * 60
# Types a browser may render in place; anything else is offered as a download.
_INLINE = ("image/", "audio/", "video/", "application/pdf", "text/plain")
# Served from our own origin, a file must never run script there (an SVG, an HTML file).
_SANDBOX = (
    "default-src 'none'; img-src 'self'; media-src 'self'; style-src 'unsafe-inline'; sandbox"
)


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
