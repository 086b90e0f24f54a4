import json

import yaml
from flask import Response, current_app, request
from flask.views import MethodView
from flask_smorest import Blueprint, current_api

from blueprints.api.docs import PUBLIC
from blueprints.api.openapi.postman import example_folder, openapi_to_postman
from blueprints.api.tools.openapi import DISPATCH_PATH, category_examples

TOOLS_BY_CATEGORY = "Tools by category"
YAML_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

blp = Blueprint("openapi", __name__, url_prefix="/v1", description="Machine-readable descriptions.")


def openapi_document() -> dict:
    return current_api.spec.to_dict()


@blp.route("/openapi.yaml")
class OpenApiYaml(MethodView):
    @blp.doc(
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
        # libyaml's dumper: the pure-Python one takes seconds over hundreds of tool schemas.
        text = yaml.dump(
            openapi_document(), Dumper=YAML_DUMPER, sort_keys=False, allow_unicode=True
        )
        return Response(text, mimetype="application/yaml")


@blp.route("/openapi/postman")
class Postman(MethodView):
    @blp.doc(
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
        base_url = request.host_url.rstrip("/") + "/v1"
        document = openapi_document()
        collection = openapi_to_postman(document, base_url)
        collection["item"].append(
            example_folder(
                document,
                base_url,
                DISPATCH_PATH,
                "post",
                name=TOOLS_BY_CATEGORY,
                description="One example run per tool category, on POST /tools/run. Every "
                "tool's example is in the OpenAPI document (the body's `examples`, by slug).",
                examples=category_examples(current_app.extensions["catalogue"]),
            )
        )
        return Response(
            json.dumps(collection, indent=2),
            mimetype="application/json",
            headers={"Content-Disposition": 'inline; filename="svc-api.postman_collection.json"'},
        )
