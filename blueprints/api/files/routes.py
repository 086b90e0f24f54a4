import mimetypes
import unicodedata
from urllib.parse import quote

from flask import Response, request
from flask.views import MethodView
from flask_smorest import Blueprint

from blueprints.api.docs import PUBLIC, REQUEST_ID_HEADER, problem_responses
from blueprints.api.problems import Problem
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


@blp.route("/files/<string:file_id>")
class FileById(MethodView):
    @blp.doc(
        security=PUBLIC,
        description="The file id is an unguessable capability token, like a signed URL: "
        "anyone holding the URL may fetch the file, with no API key, so that `<img>`, "
        "`<audio>` and `<video>` tags work. Supports `If-None-Match` (304) and `Range` (206).",
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
            **problem_responses(416),
        },
    )
    def get(self, file_id):
        """Download a generated file (no API key: the id is the capability)."""
        stored = storage.find(file_id)
        if stored is None:
            raise Problem(404, "file_not_found", "There is no file with this id.")
        if stored.sha256 in request.if_none_match:
            return _file_headers(Response(status=304), stored)
        response = Response(storage.read(stored), content_type=stored.content_type)
        _file_headers(response, stored)
        return response.make_conditional(request, accept_ranges=True, complete_length=stored.size)


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
