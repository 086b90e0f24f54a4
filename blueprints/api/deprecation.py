"""Deprecated endpoints, as the changelog (``services/changelog.py``) declares them.

An entry of kind ``deprecated`` drives each endpoint it names:

- until its sunset, every answer of that endpoint (whatever its status) carries
  ``Deprecation: @<unix time of the entry's date, 00:00 UTC>`` (RFC 9745),
  ``Sunset: <IMF-fixdate of the sunset, 00:00 UTC>`` (RFC 8594) and
  ``Link: <{base}/api/changelog/#<entry>>; rel="deprecation"`` (added to a Link the answer
  already has);
- from its sunset (``services.clock.now()``), the endpoint answers 410 ``endpoint_sunset``
  naming the replacement, before the view, so nothing runs and no key is needed;
- its OpenAPI operation is ``deprecated: true``, its description giving the sunset date and
  the replacement.

An endpoint is matched on the request's method and the OpenAPI template of the Flask rule it
matched (the matching rule is in ``services/changelog.py``). The rule table is built once,
from the URL map, on the first request; a request then costs one dict lookup on the matched
rule. An app whose changelog deprecates nothing registers no hook at all.
"""

import logging

from apispec import BasePlugin
from flask import current_app, request
from flask_smorest.spec.plugins import FlaskPlugin

from blueprints.api.docs import problem_responses
from blueprints.api.problems import Problem
from services import changelog, clock, urls
from services.changelog import Deprecation

log = logging.getLogger(__name__)

_BY_RULE = "deprecations_by_rule"

# Documented on every response of a deprecated operation.
DEPRECATION_HEADERS = {
    "Deprecation": {
        "description": "RFC 9745: when the endpoint was deprecated, as `@<Unix time>`.",
        "schema": {"type": "string", "example": "@1799971200"},
    },
    "Sunset": {
        "description": "RFC 8594: when it stops working (410 from then on), an HTTP date.",
        "schema": {"type": "string", "example": "Thu, 15 Jul 2027 00:00:00 GMT"},
    },
    "Link": {
        "description": 'The changelog entry of the deprecation, with `rel="deprecation"`.',
        "schema": {"type": "string"},
    },
}


def register(app, api) -> None:
    """Drive the endpoints the app's changelog deprecates. Call before the API's blueprints
    are registered (the OpenAPI plugin marks operations as they are added)."""
    deprecations = changelog.of_app(app).deprecations
    if not deprecations:
        return
    api.spec.plugins.append(DeprecationPlugin(deprecations))
    app.extensions[_BY_RULE] = None  # built from the URL map on the first request
    app.before_request(_refuse_after_sunset)
    app.after_request(_deprecation_headers)


def endpoint_of(method: str, rule: str) -> str:
    """``"GET /v1/tools/{slug}"`` for ``("GET", "/v1/tools/<slug:slug>")``."""
    return f"{method} {FlaskPlugin.flaskpath2openapi(rule)}"


def rule_table(app, deprecations: dict[str, Deprecation]) -> dict[tuple[str, str], Deprecation]:
    """``(method, Flask rule)`` -> its deprecation, for every route a deprecation names."""
    table = {}
    for rule in app.url_map.iter_rules():
        for method in rule.methods or ():
            found = deprecations.get(endpoint_of(method, rule.rule))
            if found is None and method == "HEAD":
                found = deprecations.get(endpoint_of("GET", rule.rule))
            if found is not None:
                table[(method, rule.rule)] = found
    named = {endpoint.endpoint for endpoint in table.values()}
    for endpoint in sorted(set(deprecations) - named):
        log.warning("the changelog deprecates %s, which is no route of this app", endpoint)
    return table


def _table() -> dict[tuple[str, str], Deprecation]:
    app = current_app._get_current_object()
    table = app.extensions[_BY_RULE]
    if table is None:
        table = app.extensions[_BY_RULE] = rule_table(app, changelog.current().deprecations)
    return table


def _lookup() -> Deprecation | None:
    this_request = request._get_current_object()
    rule = this_request.url_rule
    if rule is None:
        return None
    return _table().get((this_request.method, rule.rule))


def _refuse_after_sunset():
    found = _lookup()
    if found is None or clock.now() < found.sunset_at:
        return
    raise Problem(
        410,
        "endpoint_sunset",
        f"{found.endpoint} was deprecated on {found.deprecated_at.date().isoformat()} and "
        f"stopped working on {found.sunset_at.date().isoformat()}. Use {found.replacement} "
        "instead.",
        replacement=found.replacement,
        sunset=found.sunset_at.date().isoformat(),
        changelog=_link_target(found),
    )


def _deprecation_headers(response):
    found = _lookup()
    if found is None:
        return response
    headers = response.headers
    headers["Deprecation"] = found.deprecation_header
    headers["Sunset"] = found.sunset_header
    link = f'<{_link_target(found)}>; rel="deprecation"'
    existing = headers.getlist("Link")
    headers["Link"] = ", ".join([*existing, link])
    return response


def _link_target(found: Deprecation) -> str:
    return urls.absolute(found.entry.url_path)


class DeprecationPlugin(BasePlugin):
    """An apispec plugin: deprecated operations are marked as flask-smorest adds them."""

    def __init__(self, deprecations: dict[str, Deprecation]):
        self.deprecations = deprecations

    def operation_helper(self, path=None, operations=None, **kwargs) -> None:
        for method, operation in (operations or {}).items():
            found = self.deprecations.get(f"{method.upper()} {path}")
            if found is None or not isinstance(operation, dict):
                continue
            sunset = found.sunset_at.date().isoformat()
            operation["deprecated"] = True
            notice = (
                f"**Deprecated** since {found.deprecated_at.date().isoformat()}: from its sunset "
                f"on {sunset} this operation answers 410 `endpoint_sunset`. Use "
                f"`{found.replacement}` instead (changelog: {found.entry.url_path})."
            )
            description = operation.get("description")
            operation["description"] = f"{description}\n\n{notice}" if description else notice
            responses = operation.setdefault("responses", {})
            gone = problem_responses(410)["410"]
            gone["description"] = (
                f"The sunset ({sunset}) has passed; `replacement` names {found.replacement} "
                "[endpoint_sunset]."
            )
            responses.setdefault("410", gone)
            for response in responses.values():
                if isinstance(response, dict):
                    response.setdefault("headers", {}).update(DEPRECATION_HEADERS)
