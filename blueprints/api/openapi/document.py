"""Reading the OpenAPI document: local `$ref`s and JSON pointers, an operation's parameters,
its JSON media type, and its security (public or through the API-key header).

Pure functions of the document (no Flask, no I/O), shared by the Postman collection's
modules (`postman.py` and the ones it names).
"""

from __future__ import annotations

from typing import Any

API_KEY_HEADER = "X-SVC-API-Key"


def _resolve(spec: dict, node: Any, _seen: frozenset[str] = frozenset()) -> Any:
    """Follow local `$ref`s (`#/...`) until a node without one; unresolvable gives {}."""
    if not isinstance(node, dict) or "$ref" not in node:
        return node
    ref = node["$ref"]
    if ref in _seen:
        return {}
    target = _pointer(spec, ref)
    return {} if target is None else _resolve(spec, target, _seen | {ref})


def _pointer(spec: dict, ref: Any) -> Any:
    if not isinstance(ref, str) or not ref.startswith("#"):
        return None  # External documents are out of reach of a pure function.
    node: Any = spec
    for escaped in ref[1:].split("/")[1:]:
        token = escaped.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return None
    return node


def _parameters(spec: dict, path_item: dict, operation: dict) -> list[dict]:
    """Path-level parameters overridden by operation-level ones with the same name and place."""
    merged: dict[tuple[str, str], dict] = {}
    for raw in [*path_item.get("parameters", []), *operation.get("parameters", [])]:
        parameter = _resolve(spec, raw)
        if "name" in parameter and "in" in parameter:
            merged[(parameter["in"], parameter["name"])] = parameter
    return list(merged.values())


def _json_media_type(content: dict) -> str | None:
    if "application/json" in content:
        return "application/json"
    return next((media for media in content if media.split(";")[0].endswith("+json")), None)


def _is_public(spec: dict, operation: dict) -> bool:
    security = operation.get("security", spec.get("security"))
    return security == []


def _api_key_header(spec: dict) -> str:
    """The header of the document's first header API-key scheme, else X-SVC-API-Key."""
    schemes = (spec.get("components") or {}).get("securitySchemes") or {}
    for raw_scheme in schemes.values():
        scheme = _resolve(spec, raw_scheme)
        if scheme.get("type") == "apiKey" and scheme.get("in") == "header" and scheme.get("name"):
            return scheme["name"]
    return API_KEY_HEADER
