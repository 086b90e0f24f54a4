"""JSON-RPC 2.0 as MCP's streamable HTTP transport carries it, for a stateless server: one
message per POST (batches were removed in protocol 2025-06-18), its envelope checked with
the official SDK's types (``mcp_types``), answered as JSON or, for a request that asked for
progress, as server-sent events ending with the response.

The answers are built as bytes (orjson): the envelope around a result is the same for every
request, and the default tool list is built once (``toolset``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson
from flask import Response
from mcp_types import jsonrpc
from pydantic import ValidationError

# What this server speaks: the revision a client asks for when it is one of these, else the
# latest. Older revisions are accepted in the MCP-Protocol-Version header (their messages
# are the same for what this server does); an unknown one is refused, as the transport says.
SUPPORTED_VERSIONS = ("2025-06-18", "2025-11-25")
LATEST_VERSION = "2025-11-25"
ACCEPTED_VERSIONS = ("2024-11-05", "2025-03-26", *SUPPORTED_VERSIONS)

PARSE_ERROR = jsonrpc.PARSE_ERROR
INVALID_REQUEST = jsonrpc.INVALID_REQUEST
METHOD_NOT_FOUND = jsonrpc.METHOD_NOT_FOUND
INVALID_PARAMS = jsonrpc.INVALID_PARAMS
INTERNAL_ERROR = jsonrpc.INTERNAL_ERROR
# Ours, in the implementation-defined band (-32000 and -32001 are the SDK's own).
UNAUTHORIZED = -32011
FORBIDDEN = -32013
UNAVAILABLE = -32015


class RpcError(Exception):
    """A JSON-RPC error answer: ``code``, ``message`` and ``data``, at HTTP ``status`` (200
    for an error of a request the transport carried well; 4xx and 5xx for the transport's
    own refusals)."""

    def __init__(
        self,
        code: int,
        message: str,
        *,
        data: Any = None,
        status: int = 200,
        headers: dict | None = None,
    ):
        super().__init__(message)
        self.code, self.message, self.data = code, message, data
        self.status, self.headers = status, headers or {}


@dataclass(frozen=True)
class Message:
    """One message a client sent: a request (``id`` set) or a notification or response
    (``id`` None, answered 202 with no body)."""

    id: str | int | None
    method: str | None
    params: dict

    @property
    def is_request(self) -> bool:
        return self.id is not None and self.method is not None

    @property
    def progress_token(self) -> str | int | None:
        """The token the client asked progress notifications under, if any."""
        meta = self.params.get("_meta")
        token = meta.get("progressToken") if isinstance(meta, dict) else None
        return token if isinstance(token, str | int) and not isinstance(token, bool) else None


def parse(body: bytes) -> Message:
    """The message in a POST's body: -32700 for a body that is not JSON, -32600 for one that
    is not a single JSON-RPC message (both at HTTP 400, with a null id)."""
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        raise RpcError(PARSE_ERROR, "Parse error: the body is not JSON.", status=400) from None
    if isinstance(value, list):
        raise RpcError(
            INVALID_REQUEST,
            "Invalid request: send one JSON-RPC message per POST (batches are not supported).",
            status=400,
        )
    try:
        message = jsonrpc.jsonrpc_message_adapter.validate_python(value)
    except ValidationError:
        raise RpcError(
            INVALID_REQUEST,
            'Invalid request: not a JSON-RPC 2.0 message ({"jsonrpc": "2.0", "id", "method", '
            '"params"}).',
            status=400,
        ) from None
    if isinstance(message, jsonrpc.JSONRPCRequest):
        return Message(message.id, message.method, message.params or {})
    method = getattr(message, "method", None)
    return Message(None, method, getattr(message, "params", None) or {})


def check_version(header: str | None) -> None:
    """400 for an ``MCP-Protocol-Version`` this server does not speak (none: the transport's
    default revision, which is answered as any other)."""
    if header is not None and header not in ACCEPTED_VERSIONS:
        raise RpcError(
            INVALID_REQUEST,
            f"Unsupported protocol version {header!r}: this server speaks "
            f"{', '.join(SUPPORTED_VERSIONS)}.",
            data={"supported": list(SUPPORTED_VERSIONS)},
            status=400,
        )


def negotiated(requested: Any) -> str:
    """The revision ``initialize`` answers: the client's when this server speaks it."""
    return requested if requested in SUPPORTED_VERSIONS else LATEST_VERSION


def result_bytes(request_id: str | int, result: dict | bytes) -> bytes:
    """A response's JSON: ``result`` given as a dict, or as its JSON already made."""
    encoded = result if isinstance(result, bytes) else orjson.dumps(result)
    return b'{"jsonrpc":"2.0","id":' + orjson.dumps(request_id) + b',"result":' + encoded + b"}"


def error_bytes(request_id: str | int | None, error: RpcError) -> bytes:
    body: dict = {"code": error.code, "message": error.message}
    if error.data is not None:
        body["data"] = error.data
    return orjson.dumps({"jsonrpc": "2.0", "id": request_id, "error": body})


def notification_bytes(method: str, params: dict) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "method": method, "params": params})


def json_response(body: bytes, status: int = 200, headers: dict | None = None) -> Response:
    response = Response(body, status=status, mimetype="application/json")
    for name, value in (headers or {}).items():
        response.headers[name] = str(value)
    return response


def error_response(request_id: str | int | None, error: RpcError) -> Response:
    return json_response(error_bytes(request_id, error), error.status, error.headers)


def sse_frame(message: bytes) -> str:
    """One message as a server-sent event. No ``id:``: a stateless server cannot resume a
    stream, and a client that saw ids would try."""
    return "event: message\ndata: " + message.decode() + "\n\n"
