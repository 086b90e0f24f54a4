import json

import yaml
from flask import Response, request
from flask.views import MethodView
from flask_smorest import Blueprint, current_api

from blueprints.api.docs import PUBLIC
from blueprints.api.openapi.postman import openapi_to_postman

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
        text = yaml.safe_dump(openapi_document(), sort_keys=False, allow_unicode=True)
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
        collection = openapi_to_postman(openapi_document(), base_url)
        return Response(
            json.dumps(collection, indent=2),
            mimetype="application/json",
            headers={"Content-Disposition": 'inline; filename="svc-api.postman_collection.json"'},
        )
