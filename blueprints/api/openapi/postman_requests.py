"""One operation of the OpenAPI document as a Postman request item: its URL with path and
query parameters, headers, body (JSON or multipart form), auth and saved example responses.

Example values come from `examples.py`; the document is read through `document.py`.
"""

from __future__ import annotations

import copy
import json
import re
from http import HTTPStatus
from typing import Any

from blueprints.api.openapi.document import (
    _api_key_header,
    _is_public,
    _json_media_type,
    _parameters,
    _resolve,
)
from blueprints.api.openapi.examples import (
    _MISSING,
    _explicit_example,
    _request_example,
    example_from_schema,
)

# OpenAPI says header parameters with these names SHALL be ignored; Postman sets them itself.
IGNORED_HEADER_PARAMETERS = frozenset({"accept", "content-type", "authorization"})

PATH_TEMPLATE = re.compile(r"\{([^{}]+)\}")


def _request_item(
    spec: dict,
    path: str,
    path_item: dict,
    method: str,
    operation: dict,
    path_values: dict[str, str] | None = None,
) -> dict:
    """The Postman item for one operation; `path` is already relative to `{{baseUrl}}`;
    `path_values` replace the examples of the path parameters they name."""
    parameters = _parameters(spec, path_item, operation)
    api_key_header = _api_key_header(spec).lower()
    headers = [
        _key_value(spec, p)
        for p in parameters
        if p.get("in") == "header"
        and p["name"].lower() not in IGNORED_HEADER_PARAMETERS
        and p["name"].lower() != api_key_header
    ]
    body, content_type = _request_body(spec, operation)
    if content_type is not None:
        headers.insert(0, {"key": "Content-Type", "value": content_type})

    request: dict[str, Any] = {
        "method": method.upper(),
        "header": headers,
        "url": _url(spec, path, parameters, path_values or {}),
    }
    description = operation.get("description") or ""
    if description:
        request["description"] = description
    if body is not None:
        request["body"] = body
    if _is_public(spec, operation):
        request["auth"] = {"type": "noauth"}

    return {
        "name": operation.get("summary") or f"{method.upper()} {path}",
        "request": request,
        "response": _saved_responses(spec, operation, request),
    }


def _url(spec: dict, path: str, parameters: list[dict], path_values: dict[str, str]) -> dict:
    # A trailing slash stays as an empty last segment, as Postman itself parses `/runs/`.
    segments = path.lstrip("/").split("/") if path.strip("/") else []
    postman_segments = [_postman_segment(segment) for segment in segments]

    path_parameters = {p["name"]: p for p in parameters if p.get("in") == "path"}
    variables = []
    for segment in segments:
        for name in PATH_TEMPLATE.findall(segment):
            parameter = path_parameters.get(name, {"name": name})
            value = path_values.get(name) or _parameter_value(spec, parameter)
            variable = {"key": name, "value": value}
            if parameter.get("description"):
                variable["description"] = parameter["description"]
            variables.append(variable)

    query = []
    for parameter in parameters:
        if parameter.get("in") != "query":
            continue
        value = _parameter_example(spec, parameter)
        # An exploded array parameter (the OpenAPI default) repeats its key once per value.
        values = (value or [None]) if isinstance(value, list) else [value]
        query.extend(_key_value(spec, parameter, one) for one in values)

    raw = "{{baseUrl}}/" + "/".join(postman_segments) if postman_segments else "{{baseUrl}}"
    enabled = [f"{q['key']}={q['value']}" for q in query if not q["disabled"]]
    if enabled:
        raw += "?" + "&".join(enabled)

    url: dict[str, Any] = {"raw": raw, "host": ["{{baseUrl}}"], "path": postman_segments}
    if query:
        url["query"] = query
    if variables:
        url["variable"] = variables
    return url


def _relative_path(path: str, base_path: str) -> str:
    if base_path and (path == base_path or path.startswith(base_path + "/")):
        return path[len(base_path) :] or "/"
    return path


def _postman_segment(segment: str) -> str:
    return PATH_TEMPLATE.sub(r":\1", segment)


def _key_value(spec: dict, parameter: dict, value: Any = _MISSING) -> dict:
    if value is _MISSING:
        value = _parameter_example(spec, parameter)
    entry = {"key": parameter["name"], "value": _as_text(value)}
    if parameter.get("description"):
        entry["description"] = parameter["description"]
    entry["disabled"] = not parameter.get("required", False)
    return entry


def _parameter_value(spec: dict, parameter: dict) -> str:
    value = _parameter_example(spec, parameter)
    if isinstance(value, list):
        return ",".join(_as_text(one) for one in value)
    return _as_text(value)


def _parameter_example(spec: dict, parameter: dict) -> Any:
    value = _explicit_example(spec, parameter)
    if value is _MISSING:
        return example_from_schema(spec, parameter.get("schema", {}))
    return value


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        return str(value)
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def _request_body(spec: dict, operation: dict) -> tuple[dict | None, str | None]:
    """Return (Postman body, Content-Type), both None when the operation takes no body."""
    request_body = _resolve(spec, operation.get("requestBody") or {})
    content = request_body.get("content") or {}
    media_type = _json_media_type(content)
    if media_type is not None:
        example = _request_example(spec, content[media_type])
        raw = "{}" if example is _MISSING else _pretty(example)
        body = {"mode": "raw", "raw": raw, "options": {"raw": {"language": "json"}}}
        return body, media_type
    if "multipart/form-data" in content:
        # Postman sets the multipart boundary itself, so no Content-Type header here.
        return _form_data(spec, content["multipart/form-data"]), None
    return None, None


def _form_data(spec: dict, media: dict) -> dict:
    schema = _resolve(spec, media.get("schema") or {})
    fields = []
    for name, raw_prop in (schema.get("properties") or {}).items():
        prop = _resolve(spec, raw_prop)
        if prop.get("readOnly"):
            continue
        if prop.get("format") == "binary" or prop.get("contentMediaType"):
            fields.append({"key": name, "type": "file", "src": []})
        else:
            value = example_from_schema(spec, prop)
            fields.append({"key": name, "value": _as_text(value), "type": "text"})
    return {"mode": "formdata", "formdata": fields}


def _saved_responses(spec: dict, operation: dict, request: dict) -> list[dict]:
    """One saved response per numeric status code that documents an explicit JSON example."""
    saved = []
    for code, raw_response in (operation.get("responses") or {}).items():
        if not str(code).isdigit():
            continue  # "default" and "4XX" ranges have no single status to show.
        response = _resolve(spec, raw_response)
        content = response.get("content") or {}
        media_type = _json_media_type(content)
        if media_type is None:
            continue
        example = _explicit_example(spec, content[media_type])
        if example is _MISSING:
            continue
        description = (response.get("description") or "").strip()
        description = description.splitlines()[0] if description else ""
        name = f"{code} {description}".strip()
        saved.append(_saved_response(name, request, int(code), example, media_type))
    return saved


def _saved_response(
    name: str, request: dict, status: int, body: Any, media_type: str = "application/json"
) -> dict:
    return {
        "name": name,
        "originalRequest": copy.deepcopy(request),
        "status": _reason_phrase(status),
        "code": status,
        "_postman_previewlanguage": "json",
        "header": [{"key": "Content-Type", "value": media_type}],
        "cookie": [],
        "body": _pretty(body),
    }


def _reason_phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


def _pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)
