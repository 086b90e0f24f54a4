"""Turn the OpenAPI 3.1 document into an import-ready Postman Collection v2.1 that tests itself.

Pure data in, data out: no Flask, no I/O. The view that serves `/v1/openapi/postman` passes the
document flask-smorest generated, the API's base URL and a `LiveRun`: the few values a run
against a live deployment needs that the document cannot say (a real slug, a workflow the
plan can run), keyed by parameter name and operationId.

Every request carries a test script made from its operation's documented responses: the status
is one of them, and the answer has that response's media type and required keys (a problem's
`code` one the description names). The document's `links` carry ids from an answer to the
requests that follow it (a run's `run_id` to its status and cancel) through collection
variables, and a link's target comes after its sources in its folder.
"""

from __future__ import annotations

import copy
import json
import re
import uuid
from http import HTTPStatus
from typing import Any, NamedTuple
from urllib.parse import urlsplit

from blueprints.api.docs import SavedExample

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
PROBLEM_MEDIA_TYPE = "application/problem+json"

# Distinguishes "no example" from an explicit JSON null.
_MISSING: Any = object()

# The codes a response's description names, as `[plan_required]` or `[tool_not_found, ...]`.
PROBLEM_CODES = re.compile(r"\[([a-z_]+(?:, [a-z_]+)*)\]")
# The only runtime expression the collection can follow: a JSON pointer into the answer.
BODY_POINTER = re.compile(r"^\$response\.body#(/.*)?$")
# Set by the `LiveRun.captures` of whoami; a 402 must name a plan other than the key's.
PLAN_VARIABLE = "plan"


class LiveRun(NamedTuple):
    """What a run of the collection against a live deployment needs beyond the document.

    `parameters`: path parameter values by name (a real slug). `bodies`: JSON bodies by
    operationId, in place of the document's example. `captures`: by operationId, collection
    variables set from its success answer (variable name to JSON pointer). `variables`: more
    collection variables, with their default values (a runner may override them).
    """

    parameters: dict[str, str] = {}
    bodies: dict[str, Any] = {}
    captures: dict[str, dict[str, str]] = {}
    variables: dict[str, str] = {}


class _Operation(NamedTuple):
    id: str
    path: str  # relative to `{{baseUrl}}`
    method: str
    path_item: dict
    operation: dict


def openapi_to_postman(spec: dict, base_url: str, live: LiveRun | None = None) -> dict:
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

    live = live or LiveRun()
    operations = _operations(spec, base_path)
    _check_live_run(live, operations)
    filled, captured = _links(spec, operations)
    captured = {
        op_id: [*captures, *_live_captures(spec, operations[op_id], live)]
        for op_id, captures in captured.items()
    }

    folders: dict[str, list[dict]] = {tag["name"]: [] for tag in spec.get("tags", [])}
    root_items: list[dict] = []
    # Link targets after every other request, so that their sources have run (stable order).
    for op in sorted(operations.values(), key=lambda op: op.id in filled):
        item = _live_item(spec, op, live, filled.get(op.id, {}), captured[op.id])
        tags = op.operation.get("tags") or []
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
    variables = {
        "baseUrl": base_url,
        "api_key": API_KEY_PLACEHOLDER,
        **{name: "" for name in _captured_variables(captured)},
        **{variable: value for fills in filled.values() for variable, value in fills.values()},
        **live.variables,
    }
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
            {"key": name, "value": value, "type": "string"} for name, value in variables.items()
        ],
    }


def operation_id(method: str, path: str, operation: dict) -> str:
    """The operation's `operationId`, else one made of its method and path (`get_tools_slug`),
    which `LiveRun` keys and link targets can use until the document names it."""
    if operation.get("operationId"):
        return operation["operationId"]
    words = re.findall(r"[A-Za-z0-9]+", path)
    return "_".join([method, *words])


class _Capture(NamedTuple):
    status: str | None  # None: any documented success (2xx)
    variable: str
    pointer: str  # JSON pointer into the answer's body


def _operations(spec: dict, base_path: str) -> dict[str, _Operation]:
    """Every operation of the document by operationId, in document order."""
    operations = {}
    for path, raw_path_item in spec.get("paths", {}).items():
        path_item = _resolve(spec, raw_path_item)
        for method in HTTP_METHODS:
            operation = path_item.get(method)
            if operation is not None:
                op_id = operation_id(method, path, operation)
                relative_path = _relative_path(path, base_path)
                operations[op_id] = _Operation(op_id, relative_path, method, path_item, operation)
    return operations


def _check_live_run(live: LiveRun, operations: dict[str, _Operation]) -> None:
    """A `LiveRun` naming an operation the document does not have has drifted from it."""
    unknown = sorted((set(live.bodies) | set(live.captures)) - set(operations))
    if unknown:
        raise ValueError(f"No operation has the operationId {', '.join(unknown)}.")


def _links(
    spec: dict, operations: dict[str, _Operation]
) -> tuple[dict[str, dict[str, tuple[str, str]]], dict[str, list[_Capture]]]:
    """What the document's `links` carry: by target operationId, each path parameter a link
    fills and its collection variable (with a default value); by source operationId, the
    variables its answers set. A link's variable is named after its target and parameter, so
    every source of one target sets the same variable (the last answer wins)."""
    filled: dict[str, dict[str, tuple[str, str]]] = {}
    captured: dict[str, list[_Capture]] = {op_id: [] for op_id in operations}
    for source in operations.values():
        for status, raw_response in (source.operation.get("responses") or {}).items():
            for raw_link in (_resolve(spec, raw_response).get("links") or {}).values():
                link = _resolve(spec, raw_link)
                target = operations.get(link.get("operationId"))
                if target is None:
                    continue
                parameters = _parameters(spec, target.path_item, target.operation)
                in_path = {p["name"]: p for p in parameters if p.get("in") == "path"}
                for name, expression in (link.get("parameters") or {}).items():
                    match = BODY_POINTER.match(expression) if isinstance(expression, str) else None
                    if name not in in_path or match is None:
                        continue
                    variable = f"{target.id}_{name}"
                    default = _parameter_value(spec, in_path[name])
                    filled.setdefault(target.id, {})[name] = (variable, default)
                    capture = _Capture(str(status), variable, match.group(1) or "")
                    if capture not in captured[source.id]:
                        captured[source.id].append(capture)
    return filled, captured


def _live_captures(spec: dict, op: _Operation, live: LiveRun) -> list[_Capture]:
    return [
        _Capture(None, variable, pointer)
        for variable, pointer in live.captures.get(op.id, {}).items()
    ]


def _captured_variables(captured: dict[str, list[_Capture]]) -> list[str]:
    return sorted({capture.variable for captures in captured.values() for capture in captures})


def _live_item(
    spec: dict,
    op: _Operation,
    live: LiveRun,
    filled: dict[str, tuple[str, str]],
    captures: list[_Capture],
) -> dict:
    """The operation's request, with real path values, the `LiveRun` body and a test script."""
    path_values = {
        p["name"]: live.parameters[p["name"]]
        for p in _parameters(spec, op.path_item, op.operation)
        if p.get("in") == "path" and p["name"] in live.parameters
    }
    path_values |= {name: "{{" + variable + "}}" for name, (variable, _) in filled.items()}
    item = _request_item(spec, op.path, op.path_item, op.method, op.operation, path_values)
    if op.id in live.bodies and item["request"].get("body", {}).get("mode") == "raw":
        item["request"]["body"]["raw"] = _pretty(live.bodies[op.id])
    # A path parameter with no real value names nothing: the answer is the documented 404.
    unknown_resource = any(name not in path_values for name in PATH_TEMPLATE.findall(op.path))
    script = test_script(
        spec, op.operation, captures, unknown_resource=unknown_resource, linked=bool(filled)
    )
    item["event"] = _test_event(script)
    return item


def _test_event(lines: list[str]) -> list[dict]:
    return [{"listen": "test", "script": {"type": "text/javascript", "exec": lines}}]


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

    Each request is the operation's own (URL, headers, auth, test script) with the example's
    name and JSON body; an example with a `response` also gets it as a saved 200 response.
    """
    path_item = _resolve(spec, spec["paths"][path])
    operation = path_item[method]
    relative_path = _relative_path(path, urlsplit(base_url.rstrip("/")).path.rstrip("/"))
    template = _request_item(spec, relative_path, path_item, method, operation)
    _, captured = _links(spec, _operations(spec, urlsplit(base_url).path.rstrip("/")))
    captures = captured[operation_id(method, path, operation)]
    event = _test_event(test_script(spec, operation, captures))
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
        items.append({"name": example.name, "request": request, "response": saved, "event": event})
    return {"name": name, "description": description, "item": items}


def example_from_schema(spec: dict, schema: Any, *, for_request: bool = True) -> Any:
    """Return an example value for a JSON schema, or None when nothing can be said.

    `$ref`s are resolved against `spec`; a `$ref` already being expanded is left out (an omitted
    property, an empty array), so recursive schemas terminate. Request examples skip `readOnly`
    properties and response examples skip `writeOnly` ones.
    """
    value = _example(spec, schema, for_request, frozenset(), 0)
    return None if value is _MISSING else value


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


def test_script(
    spec: dict,
    operation: dict,
    captures: list[_Capture] = (),
    *,
    unknown_resource: bool = False,
    linked: bool = False,
) -> list[str]:
    """The lines of a Postman test script for one request to `operation`.

    The answers it accepts are the documented ones the request can get: a success (2xx); a
    402 naming a plan other than the key's (collection variable `plan`); a 409 on a resource
    an earlier answer named (`linked`: a run may have ended before it is canceled); only the
    404 when a path parameter has no real value (`unknown_resource`). Each is checked for its
    media type and its schema's required keys, a problem for its `status` and for a `code` its
    description names. `captures` set collection variables from the answer.
    """
    documented = {
        str(status): _resolve(spec, response)
        for status, response in (operation.get("responses") or {}).items()
        if str(status).isdigit()
    }
    if unknown_resource and "404" in documented:
        statuses = ["404"]
    else:
        statuses = [status for status in documented if status.startswith("2")]
        if linked and "409" in documented:
            statuses.append("409")
    if "402" in documented:
        statuses.append("402")
    answers = {status: _answer(spec, documented[status]) for status in sorted(statuses)}
    lines = [
        "// Generated from the OpenAPI document: the answers this request may get.",
        f"const answers = {json.dumps(answers, sort_keys=True)};",
        _CHECKS,
    ]
    if captures:
        lines.append(f"const captures = {json.dumps([c._asdict() for c in captures])};")
        lines.append(_CAPTURE)
    return "\n".join(lines).splitlines()


def _answer(spec: dict, response: dict) -> dict:
    """What a test checks in one documented answer: media type, required keys, codes."""
    content = response.get("content") or {}
    media = _json_media_type(content)
    if media is None:
        media = next((media for media in content if media != "*/*"), None)
        return {"media": media, "json": False, "required": [], "codes": []}
    required = _required_keys(spec, content[media].get("schema") or {}, frozenset())
    codes = []
    if media == PROBLEM_MEDIA_TYPE:
        for names in PROBLEM_CODES.findall(response.get("description") or ""):
            codes.extend(names.split(", "))
    return {"media": media, "json": True, "required": required, "codes": codes}


def _required_keys(spec: dict, schema: Any, seen: frozenset[str]) -> list[str]:
    """The `required` of a schema and of every part of its `allOf`, through `$ref`s."""
    if not isinstance(schema, dict):
        return []
    if "$ref" in schema:
        ref = schema["$ref"]
        target = _pointer(spec, ref)
        return [] if ref in seen or target is None else _required_keys(spec, target, seen | {ref})
    keys = list(schema.get("required") or [])
    for part in schema.get("allOf") or []:
        keys.extend(_required_keys(spec, part, seen))
    return sorted(set(keys))


_CHECKS = """\
const status = String(pm.response.code);
const answer = answers[status];
pm.test("status is " + Object.keys(answers).join(" or "), function () {
    pm.expect(answers, status + " " + pm.response.text().slice(0, 500)).to.have.property(status);
});
if (answer && answer.media) {
    pm.test("Content-Type is " + answer.media, function () {
        pm.expect(pm.response.headers.get("Content-Type") || "").to.include(answer.media);
    });
}
if (answer && answer.json) {
    pm.test("the answer has " + (answer.required.join(", ") || "a JSON object"), function () {
        const body = pm.response.json();
        pm.expect(body).to.be.an("object");
        answer.required.forEach(function (key) {
            pm.expect(body).to.have.property(key);
        });
        if (answer.media === "application/problem+json") {
            pm.expect(body.status).to.equal(pm.response.code);
        }
        if (answer.codes.length) {
            pm.expect(answer.codes).to.include(body.code);
        }
    });
}
if (answer && status === "402") {
    pm.test("402 names a plan the key does not have, and where to buy it", function () {
        const body = pm.response.json();
        pm.expect(body.required_plan).to.be.a("string");
        pm.expect(body.required_plan).to.not.equal(pm.collectionVariables.get("plan"));
        pm.expect(body.upgrade_url).to.be.a("string");
    });
}"""

# Sets collection variables from a success answer (OpenAPI links, LiveRun captures).
_CAPTURE = """\
captures.forEach(function (capture) {
    const wanted = capture.status === null ? status.startsWith("2") : status === capture.status;
    if (!answer || !wanted) {
        return;
    }
    const value = capture.pointer.split("/").slice(1).reduce(function (node, token) {
        const key = token.replace(/~1/g, "/").replace(/~0/g, "~");
        return node === undefined || node === null ? undefined : node[key];
    }, pm.response.json());
    if (value !== undefined && value !== null) {
        pm.collectionVariables.set(capture.variable, String(value));
    }
});"""


def _parameters(spec: dict, path_item: dict, operation: dict) -> list[dict]:
    """Path-level parameters overridden by operation-level ones with the same name and place."""
    merged: dict[tuple[str, str], dict] = {}
    for raw in [*path_item.get("parameters", []), *operation.get("parameters", [])]:
        parameter = _resolve(spec, raw)
        if "name" in parameter and "in" in parameter:
            merged[(parameter["in"], parameter["name"])] = parameter
    return list(merged.values())


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
