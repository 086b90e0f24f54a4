"""The test script every request of the Postman collection carries.

Made from the operation's documented responses: the status is one of them, and the answer has
that response's media type and required keys (a problem's `code` one the description names).
`captures` set collection variables from an answer (the document's `links`, `LiveRun`).
"""

from __future__ import annotations

import json
import re
from typing import Any, NamedTuple

from blueprints.api.openapi.document import _json_media_type, _pointer, _resolve

PROBLEM_MEDIA_TYPE = "application/problem+json"
# The codes a response's description names, as `[plan_required]` or `[tool_not_found, ...]`.
PROBLEM_CODES = re.compile(r"\[([a-z_]+(?:, [a-z_]+)*)\]")


class _Capture(NamedTuple):
    status: str | None  # None: any documented success (2xx)
    variable: str
    pointer: str  # JSON pointer into the answer's body


def _test_event(lines: list[str]) -> list[dict]:
    return [{"listen": "test", "script": {"type": "text/javascript", "exec": lines}}]


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
