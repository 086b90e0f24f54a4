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

This module makes the collection (its folders, links, auth and variables, the `LiveRun`) and
the example folders; one request is `postman_requests.py`, its test script
`postman_scripts.py`, example values `examples.py`, and the reading of the document
`document.py`.
"""

from __future__ import annotations

import copy
import re
import uuid
from typing import Any, NamedTuple
from urllib.parse import urlsplit

from blueprints.api.docs import SavedExample
from blueprints.api.openapi.document import _api_key_header, _parameters, _resolve
from blueprints.api.openapi.examples import example_from_schema
from blueprints.api.openapi.postman_requests import (
    PATH_TEMPLATE,
    _parameter_value,
    _pretty,
    _relative_path,
    _request_item,
    _saved_response,
)
from blueprints.api.openapi.postman_scripts import _Capture, _test_event, test_script

__all__ = [
    "PLAN_VARIABLE",
    "POSTMAN_SCHEMA_URL",
    "LiveRun",
    "SavedExample",
    "example_folder",
    "example_from_schema",
    "openapi_to_postman",
    "operation_id",
    "test_script",
]

POSTMAN_SCHEMA_URL = "https://schema.getpostman.com/json/collection/v2.1.0/collection.json"
API_KEY_PLACEHOLDER = "svc_your_key_here"

# Path item field order in the OpenAPI specification, so items come out in a stable order.
HTTP_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")

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
