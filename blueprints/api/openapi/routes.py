import json
import re

import yaml
from flask import Response, current_app
from flask.views import MethodView
from flask_smorest import Blueprint, current_api

from blueprints.api.docs import PUBLIC
from blueprints.api.openapi.postman import (
    PLAN_VARIABLE,
    LiveRun,
    example_folder,
    openapi_to_postman,
)
from blueprints.api.tools.openapi import DISPATCH_PATH, category_examples, dispatch_example
from catalogue import TOOL_PLANS, Catalogue, WorkflowCatalogue
from services import urls

TOOLS_BY_CATEGORY = "Tools by category"
# The webhook the collection saves unless the runner sets `webhook_url` (to its own receiver).
WEBHOOK_EXAMPLE_URL = "https://example.com/hooks/svc"


class OpenApiDumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):
    """libyaml's emitter (the pure-Python one takes seconds over hundreds of tool schemas) with
    a resolver that also knows what YAML 1.2 parsers (js-yaml in Swagger UI and Redocly,
    ruamel.yaml) and the whole YAML 1.1 spec read as something other than a string, so such
    strings are quoted and every parser reads the JSON document back."""


# Added after PyYAML's YAML 1.1 resolvers, which still decide for ints, floats and booleans.
_NOT_A_STRING = {
    # YAML 1.1 booleans PyYAML leaves out.
    "tag:yaml.org,2002:bool": (r"^(?:y|Y|n|N)$", "yYnN"),
    # YAML 1.2 core (and js-yaml, ruamel.yaml) numbers: leading zeros ("004817"), 0o/0b/0x,
    # exponents without a dot or a sign ("1e5"), a signed leading dot, `_` separators.
    "tag:yaml.org,2002:float": (
        r"""^[-+]?(?:0[oObBxX][0-9a-fA-F_]+
        |[0-9_]+(?:\.[0-9_]*)?(?:[eE][-+]?[0-9_]+)?
        |\.[0-9_]+(?:[eE][-+]?[0-9_]+)?)$""",
        "-+0123456789.",
    ),
}
for _tag, (_pattern, _first) in _NOT_A_STRING.items():
    OpenApiDumper.add_implicit_resolver(_tag, re.compile(_pattern, re.X), list(_first))

# Line breaks in YAML 1.1 but not in 1.2: only escapes (`\N`, `\L`, `\P`) read alike.
_NEL_LS_PS = re.compile("[\x85\u2028\u2029]")


def _represent_str(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    style = '"' if _NEL_LS_PS.search(data) else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


OpenApiDumper.add_representer(str, _represent_str)


def to_yaml(document: dict) -> str:
    """`document` as YAML that YAML 1.1 and 1.2 parsers both read back exactly."""
    return yaml.dump(document, Dumper=OpenApiDumper, sort_keys=False, allow_unicode=True)


blp = Blueprint("openapi", __name__, url_prefix="/v1", description="Machine-readable descriptions.")


def openapi_document() -> dict:
    return current_api.spec.to_dict()


@blp.route("/openapi.yaml")
class OpenApiYaml(MethodView):
    @blp.doc(
        operationId="getOpenApiYaml",
        security=PUBLIC,
        responses={
            "200": {
                "description": "The OpenAPI 3.1 document as YAML (the same as openapi.json).",
                "content": {"application/yaml": {"schema": {"type": "object"}}},
            }
        },
    )
    def get(self):
        """The OpenAPI document as YAML."""
        return Response(to_yaml(openapi_document()), mimetype="application/yaml")


@blp.route("/openapi/postman")
class Postman(MethodView):
    @blp.doc(
        operationId="getPostmanCollection",
        security=PUBLIC,
        responses={
            "200": {
                "description": "A Postman v2.1 collection generated from the OpenAPI document.",
                "content": {"application/json": {"schema": {"type": "object"}}},
            }
        },
    )
    def get(self):
        """An import-ready Postman v2.1 collection, with an `api_key` variable."""
        base_url = urls.absolute("/v1")
        document = openapi_document()
        catalogue = current_app.extensions["catalogue"]
        live = live_run(catalogue, current_app.extensions["workflows"])
        collection = openapi_to_postman(document, base_url, live)
        collection["item"].append(
            example_folder(
                document,
                base_url,
                DISPATCH_PATH,
                "post",
                name=TOOLS_BY_CATEGORY,
                description="One example run per tool category, on POST /tools/run. Every "
                "tool's example is in the OpenAPI document (the body's `examples`, by slug).",
                examples=category_examples(catalogue, runnable=lambda tool: tool.available),
            )
        )
        return Response(
            json.dumps(collection, indent=2),
            mimetype="application/json",
            headers={"Content-Disposition": 'inline; filename="svc-api.postman_collection.json"'},
        )


def live_run(catalogue: Catalogue, workflows: WorkflowCatalogue) -> LiveRun:
    """The values that make the collection's requests pass on this deployment with a key of
    the first plan that runs tools (Pro): a tool of that plan that runs inline (a real slug,
    quick), the shortest workflow that plan can run here, whoami's plan (a 402 must name
    another), and a webhook URL a runner can point at its own receiver. Keyed by operationId:
    a renamed operation fails the collection's build, not silently its run."""
    plan = TOOL_PLANS[0]
    tool = next(
        tool
        for tool in sorted(catalogue, key=lambda tool: tool.slug)
        if tool.required_plan == plan and not tool.queue and tool.available
    )
    workflow = min(
        (
            workflow
            for workflow in workflows
            if workflow.required_plan == plan
            and all(catalogue.get(step.tool).available for step in workflow.steps)
        ),
        key=lambda workflow: (len(workflow.steps), workflow.id),
    )
    return LiveRun(
        parameters={"slug": tool.slug, "workflow_id": workflow.id},
        bodies={
            "runToolBySlug": {"input": tool.examples[0]["input"][tool.primary]},
            "runTool": dispatch_example(tool),
            "startWorkflow": {"workflow_id": workflow.id, "input": workflow.example},
            "setWebhook": {"url": "{{webhook_url}}"},
        },
        captures={"whoami": {PLAN_VARIABLE: "/plan/name"}},
        variables={"webhook_url": WEBHOOK_EXAMPLE_URL},
    )
