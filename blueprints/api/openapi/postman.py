"""Turn the OpenAPI 3.1 document into an import-ready Postman Collection v2.1.

Pure data in, data out: no Flask, no I/O. The view that serves `/v1/openapi/postman` passes the
document flask-smorest generated and the API's base URL.
"""

from __future__ import annotations

import copy
import json
import re
import uuid
from http import HTTPStatus
from typing import Any, NamedTuple
from urllib.parse import urlsplit

POSTMAN_SCHEMA_URL = "https://schema.getpostman.com/json/collection/v2.1.0/collection.json"
API_KEY_HEADER = "X-SVC-API-Key"
API_KEY_PLACEHOLDER = "svc_your_key_here"

# Path item field order in the OpenAPI specification, so items come out in a stable order.
HTTP_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")

# OpenAPI says header parameters with these names SHALL be ignored; Postman sets them itself.
IGNORED_HEADER_PARAMETERS = frozenset({"accept", "content-type", "authorization"})

# Bounds the synthesised example even for deeply nested schemas without a `$ref` cycle.
MAX_EXAMPLE_DEPTH = 32

STRING_FORMAT_EXAMPLES = {
    "date-time": "2024-01-01T00:00:00Z",
    "date": "2024-01-01",
    "time": "00:00:00Z",
    "duration": "PT1H",
    "uuid": "3fa85f64-5717-4562-b3fc-2c963f66afa6",
    "uri": "https://example.com/",
    "url": "https://example.com/",
    "iri": "https://example.com/",
    "uri-reference": "/path",
    "email": "user@example.com",
    "idn-email": "user@example.com",
    "hostname": "example.com",
    "ipv4": "192.0.2.1",
    "ipv6": "2001:db8::1",
    "byte": "c3RyaW5n",
    "binary": "",
    "password": "********",
}

PATH_TEMPLATE = re.compile(r"\{([^{}]+)\}")

# Distinguishes "no example" from an explicit JSON null.
_MISSING: Any = object()


def openapi_to_postman(spec: dict, base_url: str) -> dict:
    """Return a Postman Collection v2.1 for an OpenAPI 3.1 document.

    Requests are foldered by their first tag (in the order of `spec["tags"]`, then the order
    tags first appear); untagged operations sit at the collection root. Paths that already carry
    the path of `base_url` (flask-smorest documents `/v1/...` while `base_url` ends in `/v1`)
    lose that prefix so it is not doubled. Every request authenticates through the collection's
    API key, except operations whose effective `security` is `[]`, which get `noauth`. The same
    document always gives the same collection.
    """
    base_url = base_url.rstrip("/")
    base_path = urlsplit(base_url).path.rstrip("/")
    info = spec.get("info", {})
    title = info.get("title") or "API"

    collection_info: dict[str, Any] = {
        "_postman_id": str(uuid.uuid5(uuid.NAMESPACE_URL, title)),
        "name": title,
        "description": info.get("description", ""),
        "schema": POSTMAN_SCHEMA_URL,
    }
    if info.get("version"):
        collection_info["version"] = str(info["version"])

    folders: dict[str, list[dict]] = {tag["name"]: [] for tag in spec.get("tags", [])}
    root_items: list[dict] = []
    for path, raw_path_item in spec.get("paths", {}).items():
        path_item = _resolve(spec, raw_path_item)
        relative_path = _relative_path(path, base_path)
        for method in HTTP_METHODS:
            operation = path_item.get(method)
            if operation is None:
                continue
            item = _request_item(spec, relative_path, path_item, method, operation)
            tags = operation.get("tags") or []
            if tags:
                folders.setdefault(tags[0], []).append(item)
            else:
                root_items.append(item)

    tag_descriptions = {tag["name"]: tag.get("description", "") for tag in spec.get("tags", [])}
    items = [
        {"name": name, "description": tag_descriptions.get(name, ""), "item": folder_items}
        for name, folder_items in folders.items()
        if folder_items
    ]
    return {
        "info": collection_info,
        "item": items + root_items,
        "auth": {
            "type": "apikey",
            "apikey": [
                {"key": "key", "value": _api_key_header(spec), "type": "string"},
                {"key": "value", "value": "{{api_key}}", "type": "string"},
                {"key": "in", "value": "header", "type": "string"},
            ],
        },
        "variable": [
            {"key": "baseUrl", "value": base_url, "type": "string"},
            {"key": "api_key", "value": API_KEY_PLACEHOLDER, "type": "string"},
        ],
    }


class SavedExample(NamedTuple):
    """One saved request of an `example_folder`: its name, JSON body and, when given, the
    JSON body of its saved 200 response."""

    name: str
    body: Any
    description: str = ""
    response: Any = None


def example_folder(
    spec: dict,
    base_url: str,
    path: str,
    method: str,
    *,
    name: str,
    description: str,
    examples: list[SavedExample],
) -> dict:
    """A Postman folder of requests to one operation of `spec`, one per example.

    Each request is the operation's own (URL, headers, auth) with the example's name and JSON
    body; an example with a `response` also gets it as a saved 200 response.
    """
    path_item = _resolve(spec, spec["paths"][path])
    relative_path = _relative_path(path, urlsplit(base_url.rstrip("/")).path.rstrip("/"))
    template = _request_item(spec, relative_path, path_item, method, path_item[method])
    items = []
    for example in examples:
        request = copy.deepcopy(template["request"])
        request["body"] = {
            "mode": "raw",
            "raw": _pretty(example.body),
            "options": {"raw": {"language": "json"}},
        }
        if example.description:
            request["description"] = example.description
        saved = []
        if example.response is not None:
            saved.append(_saved_response("200 " + example.name, request, 200, example.response))
        items.append({"name": example.name, "request": request, "response": saved})
    return {"name": name, "description": description, "item": items}


def example_from_schema(spec: dict, schema: Any, *, for_request: bool = True) -> Any:
    """Return an example value for a JSON schema, or None when nothing can be said.

    `$ref`s are resolved against `spec`; a `$ref` already being expanded is left out (an omitted
    property, an empty array), so recursive schemas terminate. Request examples skip `readOnly`
    properties and response examples skip `writeOnly` ones.
    """
    value = _example(spec, schema, for_request, frozenset(), 0)
    return None if value is _MISSING else value


def _request_item(spec: dict, path: str, path_item: dict, method: str, operation: dict) -> dict:
    """The Postman item for one operation; `path` is already relative to `{{baseUrl}}`."""
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
        "url": _url(spec, path, parameters),
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


def _parameters(spec: dict, path_item: dict, operation: dict) -> list[dict]:
    """Path-level parameters overridden by operation-level ones with the same name and place."""
    merged: dict[tuple[str, str], dict] = {}
    for raw in [*path_item.get("parameters", []), *operation.get("parameters", [])]:
        parameter = _resolve(spec, raw)
        if "name" in parameter and "in" in parameter:
            merged[(parameter["in"], parameter["name"])] = parameter
    return list(merged.values())


def _url(spec: dict, path: str, parameters: list[dict]) -> dict:
    # A trailing slash stays as an empty last segment, as Postman itself parses `/runs/`.
    segments = path.lstrip("/").split("/") if path.strip("/") else []
    postman_segments = [_postman_segment(segment) for segment in segments]

    path_parameters = {p["name"]: p for p in parameters if p.get("in") == "path"}
    variables = []
    for segment in segments:
        for name in PATH_TEMPLATE.findall(segment):
            parameter = path_parameters.get(name, {"name": name})
            variable = {"key": name, "value": _parameter_value(spec, parameter)}
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


def _json_media_type(content: dict) -> str | None:
    if "application/json" in content:
        return "application/json"
    return next((media for media in content if media.split(";")[0].endswith("+json")), None)


def _request_example(spec: dict, media: dict) -> Any:
    """Media `example`, else the first of `examples`, else one synthesised from the schema."""
    value = _explicit_example(spec, media)
    if value is _MISSING and "schema" in media:
        return _example(spec, media["schema"], True, frozenset(), 0)
    return value


def _explicit_example(spec: dict, media_or_parameter: dict) -> Any:
    """`example`, else the value of the first of `examples` (Example Objects, maybe `$ref`s)."""
    if "example" in media_or_parameter:
        return media_or_parameter["example"]
    for raw_example in (media_or_parameter.get("examples") or {}).values():
        example = _resolve(spec, raw_example)
        if isinstance(example, dict) and "value" in example:
            return example["value"]
    return _MISSING


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


def _pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


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


def _example(spec: dict, schema: Any, for_request: bool, seen: frozenset[str], depth: int) -> Any:
    if not isinstance(schema, dict) or depth > MAX_EXAMPLE_DEPTH:
        return _MISSING
    stated = _stated_value(schema)
    if stated is not _MISSING:
        return stated

    if "$ref" in schema:
        ref = schema["$ref"]
        target = _pointer(spec, ref)
        if ref in seen or target is None:
            return _MISSING
        return _example(spec, target, for_request, seen | {ref}, depth + 1)

    if isinstance(schema.get("allOf"), list):
        return _all_of_example(spec, schema, for_request, seen, depth)

    for keyword in ("oneOf", "anyOf"):
        branches = schema.get(keyword)
        if isinstance(branches, list) and branches:
            # `anyOf: [{"type": "null"}, X]` spells "X or null"; X is the useful example.
            chosen = next((b for b in branches if not _is_null_schema(b)), branches[0])
            return _example(spec, chosen, for_request, seen, depth + 1)

    schema_type = _schema_type(schema)
    if schema_type == "object":
        return _object_example(spec, schema, for_request, seen, depth)
    if schema_type == "array":
        return _array_example(spec, schema, for_request, seen, depth)
    return _scalar_example(schema, schema_type)


def _stated_value(schema: dict) -> Any:
    """A value the schema names itself: `const`, `example`, `examples`, `default`, `enum`."""
    if "const" in schema:
        return schema["const"]
    if "example" in schema:
        return schema["example"]
    examples = schema.get("examples")
    if isinstance(examples, list) and examples:
        return examples[0]
    if "default" in schema:
        return schema["default"]
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return enum[0]
    return _MISSING


def _scalar_example(schema: dict, schema_type: str | None) -> Any:
    if schema_type == "string":
        return STRING_FORMAT_EXAMPLES.get(schema.get("format", ""), "string")
    if schema_type in ("integer", "number"):
        return _number_example(schema, schema_type)
    if schema_type == "boolean":
        return True
    if schema_type == "null":
        return None
    return _MISSING


def _all_of_example(
    spec: dict, schema: dict, for_request: bool, seen: frozenset[str], depth: int
) -> Any:
    parts = [{k: v for k, v in schema.items() if k != "allOf"}, *schema["allOf"]]
    merged: Any = _MISSING
    for part in parts:
        value = _example(spec, part, for_request, seen, depth + 1)
        if value is _MISSING:
            continue
        if isinstance(value, dict) and isinstance(merged, dict):
            merged = {**merged, **value}
        elif merged is _MISSING:
            merged = value
    return merged


def _object_example(
    spec: dict, schema: dict, for_request: bool, seen: frozenset[str], depth: int
) -> dict:
    skipped = "readOnly" if for_request else "writeOnly"
    result = {}
    for name, prop in (schema.get("properties") or {}).items():
        if isinstance(prop, dict) and prop.get(skipped):
            continue
        value = _example(spec, prop, for_request, seen, depth + 1)
        if value is not _MISSING:
            result[name] = value
    additional = schema.get("additionalProperties")
    if not result and isinstance(additional, dict) and additional:
        value = _example(spec, additional, for_request, seen, depth + 1)
        if value is not _MISSING:
            result["key"] = value
    return result


def _array_example(
    spec: dict, schema: dict, for_request: bool, seen: frozenset[str], depth: int
) -> list:
    if isinstance(schema.get("prefixItems"), list):
        values = [_example(spec, s, for_request, seen, depth + 1) for s in schema["prefixItems"]]
        return [value for value in values if value is not _MISSING]
    value = _example(spec, schema.get("items", {}), for_request, seen, depth + 1)
    return [] if value is _MISSING else [value]


def _number_example(schema: dict, schema_type: str) -> int | float:
    minimum = schema.get("minimum")
    exclusive = schema.get("exclusiveMinimum")
    if isinstance(exclusive, (int, float)) and not isinstance(exclusive, bool):
        minimum = exclusive + 1 if schema_type == "integer" else exclusive + 0.5
    if isinstance(minimum, (int, float)) and not isinstance(minimum, bool):
        return minimum
    return 0


def _schema_type(schema: dict) -> str | None:
    declared = schema.get("type")
    if isinstance(declared, list):
        declared = next((t for t in declared if t != "null"), "null" if declared else None)
    if declared is not None:
        return declared
    if "properties" in schema or "additionalProperties" in schema:
        return "object"
    if "items" in schema or "prefixItems" in schema:
        return "array"
    return None


def _is_null_schema(schema: Any) -> bool:
    return isinstance(schema, dict) and schema.get("type") == "null" and len(schema) == 1
