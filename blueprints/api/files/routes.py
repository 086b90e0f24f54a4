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

from flask.views import MethodView
from flask_smorest import Blueprint

from blueprints.api.docs import API_KEY_SECURITY, PUBLIC, REQUEST_ID_HEADER, problem_responses
from blueprints.api.files.answer import file_response
from blueprints.api.pipeline import authenticate
from blueprints.api.problems import Problem
from extensions import db
from models import StoredFile
from services import storage

blp = Blueprint(
    "files", __name__, url_prefix="/v1", description="Generated files: images, audio, video."
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


def _not_found() -> Problem:
    return Problem(404, "file_not_found", "There is no file with this id.")


def _find(file_id: str) -> StoredFile:
    stored = storage.find(file_id)
    if stored is None:
        raise _not_found()
    return stored
