import copy
import json
import uuid

import pytest
from jsonschema import Draft7Validator

from blueprints.api.openapi.postman import (
    POSTMAN_SCHEMA_URL,
    LiveRun,
    SavedExample,
    example_folder,
    example_from_schema,
    openapi_to_postman,
    operation_id,
)
from blueprints.api.tools.openapi import category_examples
from catalogue import load_catalogue

BASE_URL = "http://localhost:5000/v1"

# The parts of the Postman Collection v2.1.0 JSON schema that an importer relies on.
POSTMAN_V21_SUBSET = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "required": ["info", "item"],
    "properties": {
        "info": {
            "type": "object",
            "required": ["name", "schema"],
            "properties": {
                "_postman_id": {"type": "string"},
                "name": {"type": "string"},
                "description": {"type": "string"},
                "schema": {"const": POSTMAN_SCHEMA_URL},
                "version": {"type": "string"},
            },
        },
        "item": {"type": "array", "items": {"$ref": "#/definitions/entry"}},
        "auth": {"$ref": "#/definitions/auth"},
        "variable": {"type": "array", "items": {"$ref": "#/definitions/variable"}},
    },
    "definitions": {
        "entry": {"oneOf": [{"$ref": "#/definitions/folder"}, {"$ref": "#/definitions/item"}]},
        "folder": {
            "type": "object",
            "required": ["name", "item"],
            "not": {"required": ["request"]},
            "properties": {
                "name": {"type": "string"},
                "description": {"type": "string"},
                "item": {"type": "array", "items": {"$ref": "#/definitions/entry"}},
            },
        },
        "item": {
            "type": "object",
            "required": ["name", "request"],
            "not": {"required": ["item"]},
            "properties": {
                "name": {"type": "string"},
                "request": {"$ref": "#/definitions/request"},
                "response": {"type": "array", "items": {"$ref": "#/definitions/response"}},
                "event": {"type": "array", "items": {"$ref": "#/definitions/event"}},
            },
        },
        "event": {
            "type": "object",
            "required": ["listen", "script"],
            "properties": {
                "listen": {"enum": ["test", "prerequest"]},
                "script": {
                    "type": "object",
                    "required": ["exec"],
                    "properties": {
                        "type": {"const": "text/javascript"},
                        "exec": {"type": "array", "items": {"type": "string"}},
                    },
                },
            },
        },
        "request": {
            "type": "object",
            "required": ["method", "url"],
            "properties": {
                "method": {"enum": ["GET", "PUT", "POST", "PATCH", "DELETE", "HEAD", "OPTIONS"]},
                "header": {"type": "array", "items": {"$ref": "#/definitions/header"}},
                "url": {"$ref": "#/definitions/url"},
                "description": {"type": "string"},
                "auth": {"$ref": "#/definitions/auth"},
                "body": {
                    "type": "object",
                    "required": ["mode"],
                    "properties": {
                        "mode": {"enum": ["raw", "urlencoded", "formdata", "file", "graphql"]},
                        "raw": {"type": "string"},
                    },
                },
            },
        },
        "url": {
            "type": "object",
            "required": ["raw", "host", "path"],
            "properties": {
                "raw": {"type": "string"},
                "host": {"type": "array", "items": {"type": "string"}},
                "path": {"type": "array", "items": {"type": "string"}},
                "query": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["key", "value"],
                        "properties": {
                            "key": {"type": "string"},
                            "value": {"type": "string"},
                            "disabled": {"type": "boolean"},
                        },
                    },
                },
                "variable": {"type": "array", "items": {"$ref": "#/definitions/variable"}},
            },
        },
        "header": {
            "type": "object",
            "required": ["key", "value"],
            "properties": {
                "key": {"type": "string"},
                "value": {"type": "string"},
                "disabled": {"type": "boolean"},
            },
        },
        "variable": {
            "type": "object",
            "required": ["key"],
            "properties": {
                "key": {"type": "string"},
                "value": {"type": "string"},
                "type": {"enum": ["string", "boolean", "any", "number"]},
            },
        },
        "auth": {
            "type": "object",
            "required": ["type"],
            "properties": {
                "type": {"enum": ["apikey", "bearer", "basic", "noauth"]},
                "apikey": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["key"],
                        "properties": {"key": {"type": "string"}, "type": {"type": "string"}},
                    },
                },
            },
        },
        "response": {
            "type": "object",
            "required": ["name", "code", "status", "body"],
            "properties": {
                "name": {"type": "string"},
                "code": {"type": "integer"},
                "status": {"type": "string"},
                "body": {"type": "string"},
                "header": {"type": "array", "items": {"$ref": "#/definitions/header"}},
            },
        },
    },
}


def make_spec(paths, schemas=None, **extra):
    spec = {
        "openapi": "3.1.0",
        "info": {"title": "SVC API", "version": "v1", "description": "Tools over HTTP."},
        "paths": paths,
        "components": {
            "schemas": schemas or {},
            "securitySchemes": {
                "ApiKey": {"type": "apiKey", "in": "header", "name": "X-SVC-API-Key"}
            },
        },
        "security": [{"ApiKey": []}],
    }
    spec.update(extra)
    return spec


def json_body(media):
    return {"requestBody": {"required": True, "content": {"application/json": media}}}


def only_request(collection):
    """The request of a collection built from a spec with one operation."""
    (entry,) = collection["item"]
    if "item" in entry:
        (entry,) = entry["item"]
    return entry["request"]


def request_for(operation, path="/v1/things", method="post", **spec_extra):
    spec = make_spec({path: {method: operation}}, **spec_extra)
    return only_request(openapi_to_postman(spec, BASE_URL))


def body_of(operation, **spec_extra):
    return json.loads(request_for(operation, **spec_extra)["body"]["raw"])


FULL_SPEC = make_spec(
    tags=[
        {"name": "tools", "description": "Run tools."},
        {"name": "runs", "description": "Follow runs."},
        {"name": "unused"},
    ],
    schemas={
        "RunRequest": {
            "type": "object",
            "properties": {
                "slug": {"type": "string", "example": "word-count"},
                "input": {"$ref": "#/components/schemas/Input"},
            },
        },
        "Input": {"type": "object", "properties": {"text": {"type": "string"}}},
        "Run": {"type": "object", "properties": {"id": {"type": "string", "format": "uuid"}}},
    },
    paths={
        "/v1/health": {
            "get": {"tags": ["health"], "summary": "Health", "security": [], "responses": {}}
        },
        "/v1/runs/{run_id}": {
            "parameters": [
                {"in": "path", "name": "run_id", "required": True, "schema": {"type": "string"}}
            ],
            "get": {
                "tags": ["runs"],
                "summary": "Get a run",
                "responses": {
                    "200": {
                        "description": "OK",
                        "content": {
                            "application/json": {
                                "schema": {"$ref": "#/components/schemas/Run"},
                                "example": {"id": "r1"},
                            }
                        },
                    }
                },
            },
        },
        "/v1/tools/run": {
            "post": {
                "tags": ["tools", "runs"],
                "summary": "Run a tool",
                "parameters": [
                    {"in": "query", "name": "wait", "schema": {"type": "boolean"}},
                ],
                **json_body({"schema": {"$ref": "#/components/schemas/RunRequest"}}),
                "responses": {"200": {"description": "OK"}},
            }
        },
        "/v1/whoami": {"get": {"summary": "Who am I", "responses": {}}},
    },
)


def test_collection_validates_against_postman_v21_structure():
    collection = openapi_to_postman(FULL_SPEC, BASE_URL)

    errors = list(Draft7Validator(POSTMAN_V21_SUBSET).iter_errors(collection))

    assert errors == []


def test_subset_schema_rejects_an_item_without_request():
    # Guards the structural test above against a schema that accepts anything.
    broken = {"info": {"name": "x", "schema": POSTMAN_SCHEMA_URL}, "item": [{"name": "x"}]}

    assert list(Draft7Validator(POSTMAN_V21_SUBSET).iter_errors(broken)) != []


def test_info_comes_from_the_spec_with_a_uuid5_of_the_title():
    info = openapi_to_postman(FULL_SPEC, BASE_URL)["info"]

    assert info == {
        "_postman_id": str(uuid.uuid5(uuid.NAMESPACE_URL, "SVC API")),
        "name": "SVC API",
        "description": "Tools over HTTP.",
        "schema": "https://schema.getpostman.com/json/collection/v2.1.0/collection.json",
        "version": "v1",
    }


def test_variables_hold_base_url_without_trailing_slash_and_key_placeholder():
    collection = openapi_to_postman(FULL_SPEC, BASE_URL + "/")

    assert collection["variable"] == [
        {"key": "baseUrl", "value": "http://localhost:5000/v1", "type": "string"},
        {"key": "api_key", "value": "svc_your_key_here", "type": "string"},
    ]


def test_collection_authenticates_with_the_api_key_header():
    auth = openapi_to_postman(FULL_SPEC, BASE_URL)["auth"]

    assert auth["type"] == "apikey"
    assert {entry["key"]: entry["value"] for entry in auth["apikey"]} == {
        "key": "X-SVC-API-Key",
        "value": "{{api_key}}",
        "in": "header",
    }


def test_public_operation_gets_noauth():
    assert request_for({"security": [], "responses": {}}, method="get")["auth"] == {
        "type": "noauth"
    }


@pytest.mark.parametrize(
    ("operation_security", "document_security"),
    [(None, [{"ApiKey": []}]), ([{"ApiKey": []}], []), (None, None)],
)
def test_protected_operation_inherits_the_collection_auth(operation_security, document_security):
    operation = {"responses": {}}
    if operation_security is not None:
        operation["security"] = operation_security
    spec = make_spec({"/v1/me": {"get": operation}})
    if document_security is None:
        del spec["security"]
    else:
        spec["security"] = document_security

    assert "auth" not in only_request(openapi_to_postman(spec, BASE_URL))


def test_document_wide_empty_security_makes_operations_public():
    assert request_for({"responses": {}}, method="get", security=[])["auth"] == {"type": "noauth"}


def test_folders_follow_the_spec_tag_order_then_first_seen_tags():
    collection = openapi_to_postman(FULL_SPEC, BASE_URL)

    folders = [entry for entry in collection["item"] if "item" in entry]

    assert [(f["name"], f["description"]) for f in folders] == [
        ("tools", "Run tools."),
        ("runs", "Follow runs."),
        ("health", ""),
    ]


def test_operation_is_filed_under_its_first_tag_only():
    collection = openapi_to_postman(FULL_SPEC, BASE_URL)
    folders = {entry["name"]: entry for entry in collection["item"] if "item" in entry}

    assert [item["name"] for item in folders["tools"]["item"]] == ["Run a tool"]
    assert [item["name"] for item in folders["runs"]["item"]] == ["Get a run"]


def test_untagged_operations_sit_at_the_collection_root_after_folders():
    collection = openapi_to_postman(FULL_SPEC, BASE_URL)

    assert collection["item"][-1]["name"] == "Who am I"
    assert "request" in collection["item"][-1]


def test_path_item_may_be_a_ref_to_components_path_items():
    components = {
        "pathItems": {"Ping": {"get": {"summary": "Ping", "responses": {}}}},
        "schemas": {},
        "securitySchemes": {},
    }
    spec = make_spec({"/v1/ping": {"$ref": "#/components/pathItems/Ping"}}, components=components)

    (item,) = openapi_to_postman(spec, BASE_URL)["item"]

    assert (item["name"], item["request"]["url"]["raw"]) == ("Ping", "{{baseUrl}}/ping")


def test_item_name_falls_back_to_method_and_path():
    spec = make_spec({"/v1/things/{id}": {"delete": {"responses": {}}}})

    (item,) = openapi_to_postman(spec, BASE_URL)["item"]

    assert item["name"] == "DELETE /things/{id}"


def test_path_parameters_become_colon_segments_with_variables():
    spec = make_spec(
        {
            "/v1/tools/{slug}/runs/{run_id}": {
                "parameters": [
                    {
                        "in": "path",
                        "name": "run_id",
                        "required": True,
                        "schema": {"type": "string", "format": "uuid"},
                    }
                ],
                "get": {
                    "parameters": [
                        {
                            "in": "path",
                            "name": "slug",
                            "required": True,
                            "description": "Tool slug.",
                            "example": "word-count",
                            "schema": {"type": "string"},
                        }
                    ],
                    "responses": {},
                },
            }
        }
    )

    url = only_request(openapi_to_postman(spec, BASE_URL))["url"]

    assert url["raw"] == "{{baseUrl}}/tools/:slug/runs/:run_id"
    assert url["host"] == ["{{baseUrl}}"]
    assert url["path"] == ["tools", ":slug", "runs", ":run_id"]
    assert url["variable"] == [
        {"key": "slug", "value": "word-count", "description": "Tool slug."},
        {"key": "run_id", "value": "3fa85f64-5717-4562-b3fc-2c963f66afa6"},
    ]


def test_operation_parameter_overrides_path_level_parameter_of_same_name():
    path_item = {
        "parameters": [{"in": "path", "name": "id", "required": True, "example": "path-level"}],
        "get": {
            "parameters": [{"in": "path", "name": "id", "required": True, "example": "op-level"}],
            "responses": {},
        },
    }

    url = only_request(openapi_to_postman(make_spec({"/v1/x/{id}": path_item}), BASE_URL))["url"]

    assert [v["value"] for v in url["variable"]] == ["op-level"]


@pytest.mark.parametrize(
    ("base_url", "expected_path"),
    [
        ("http://localhost:5000/v1", ["runs", ""]),
        ("http://localhost:5000", ["v1", "runs", ""]),
    ],
)
def test_base_url_path_is_not_doubled_and_trailing_slash_is_kept(base_url, expected_path):
    spec = make_spec({"/v1/runs/": {"get": {"responses": {}}}})

    url = only_request(openapi_to_postman(spec, base_url))["url"]

    assert url["path"] == expected_path
    assert url["raw"] == "{{baseUrl}}/" + "/".join(expected_path)


def test_query_parameters_are_listed_and_optional_ones_disabled():
    operation = {
        "parameters": [
            {"in": "query", "name": "q", "required": True, "schema": {"type": "string"}},
            {"in": "query", "name": "page", "schema": {"type": "integer", "default": 1}},
            {"in": "query", "name": "status", "schema": {"enum": ["queued", "done"]}},
        ],
        "responses": {},
    }

    url = request_for(operation, method="get")["url"]

    assert url["query"] == [
        {"key": "q", "value": "string", "disabled": False},
        {"key": "page", "value": "1", "disabled": True},
        {"key": "status", "value": "queued", "disabled": True},
    ]
    assert url["raw"] == "{{baseUrl}}/things?q=string"


def test_array_query_parameter_repeats_its_key():
    operation = {
        "parameters": [
            {
                "in": "query",
                "name": "tag",
                "required": True,
                "example": ["a", "b"],
                "schema": {"type": "array", "items": {"type": "string"}},
            }
        ],
        "responses": {},
    }

    url = request_for(operation, method="get")["url"]

    assert [(q["key"], q["value"]) for q in url["query"]] == [("tag", "a"), ("tag", "b")]
    assert url["raw"] == "{{baseUrl}}/things?tag=a&tag=b"


def test_header_parameters_carry_their_example_or_default():
    operation = {
        "parameters": [
            {
                "in": "header",
                "name": "Idempotency-Key",
                "description": "Retry safely.",
                "example": "abc-123",
                "schema": {"type": "string"},
            },
            {
                "in": "header",
                "name": "X-Trace",
                "required": True,
                "schema": {"type": "string", "default": "on"},
            },
        ],
        "responses": {},
    }

    headers = request_for(operation, method="get")["header"]

    assert headers == [
        {
            "key": "Idempotency-Key",
            "value": "abc-123",
            "description": "Retry safely.",
            "disabled": True,
        },
        {"key": "X-Trace", "value": "on", "disabled": False},
    ]


@pytest.mark.parametrize("name", ["Accept", "content-type", "Authorization", "X-SVC-API-Key"])
def test_header_parameters_set_by_postman_or_the_auth_are_left_out(name):
    operation = {"parameters": [{"in": "header", "name": name, "example": "x"}], "responses": {}}

    assert request_for(operation, method="get")["header"] == []


def test_json_body_is_pretty_raw_json_with_content_type():
    request = request_for({**json_body({"example": {"slug": "word-count"}}), "responses": {}})

    assert request["header"] == [{"key": "Content-Type", "value": "application/json"}]
    assert request["body"] == {
        "mode": "raw",
        "raw": '{\n  "slug": "word-count"\n}',
        "options": {"raw": {"language": "json"}},
    }


def test_operation_without_body_has_no_body_or_content_type():
    request = request_for({"responses": {}}, method="get")

    assert "body" not in request
    assert request["header"] == []


def test_operation_description_becomes_the_request_description():
    request = request_for({"description": "Runs a tool.\n\nMore.", "responses": {}})

    assert request["description"] == "Runs a tool.\n\nMore."


MEDIA_EXAMPLE = {"from": "media example"}
NAMED_EXAMPLES = {
    "first": {"summary": "First", "value": {"from": "first of examples"}},
    "second": {"value": {"from": "second of examples"}},
}
SCHEMA = {"type": "object", "properties": {"from": {"type": "string", "example": "schema"}}}


@pytest.mark.parametrize(
    ("media", "expected"),
    [
        ({"schema": SCHEMA, "example": MEDIA_EXAMPLE, "examples": NAMED_EXAMPLES}, MEDIA_EXAMPLE),
        ({"schema": SCHEMA, "examples": NAMED_EXAMPLES}, {"from": "first of examples"}),
        ({"schema": SCHEMA}, {"from": "schema"}),
    ],
    ids=["example-wins", "then-first-of-examples", "then-schema"],
)
def test_body_example_precedence(media, expected):
    assert body_of({**json_body(media), "responses": {}}) == expected


def test_named_example_may_be_a_ref_to_components_examples():
    spec_components = {
        "examples": {"Short": {"value": {"text": "hi"}}},
        "schemas": {},
        "securitySchemes": {},
    }
    media = {"examples": {"short": {"$ref": "#/components/examples/Short"}}}

    assert body_of({**json_body(media), "responses": {}}, components=spec_components) == {
        "text": "hi"
    }


def test_request_body_may_be_a_ref_to_components_request_bodies():
    components = {
        "requestBodies": {"Run": {"content": {"application/json": {"example": {"slug": "x"}}}}},
        "schemas": {},
        "securitySchemes": {},
    }
    operation = {"requestBody": {"$ref": "#/components/requestBodies/Run"}, "responses": {}}

    assert body_of(operation, components=components) == {"slug": "x"}


def test_vendor_json_media_type_is_used_when_there_is_no_application_json():
    operation = {
        "requestBody": {"content": {"application/merge-patch+json": {"example": {"name": "n"}}}},
        "responses": {},
    }

    request = request_for(operation, method="patch")

    assert request["header"] == [{"key": "Content-Type", "value": "application/merge-patch+json"}]
    assert json.loads(request["body"]["raw"]) == {"name": "n"}


def test_body_without_any_example_or_schema_is_an_empty_object():
    assert request_for({**json_body({}), "responses": {}})["body"]["raw"] == "{}"


def test_multipart_body_becomes_form_data_with_file_fields():
    schema = {
        "type": "object",
        "properties": {
            "voice": {"type": "string", "example": "alloy"},
            "book": {"type": "string", "format": "binary"},
        },
    }
    operation = {
        "requestBody": {"content": {"multipart/form-data": {"schema": schema}}},
        "responses": {},
    }

    request = request_for(operation)

    assert request["header"] == []
    assert request["body"] == {
        "mode": "formdata",
        "formdata": [
            {"key": "voice", "value": "alloy", "type": "text"},
            {"key": "book", "type": "file", "src": []},
        ],
    }


def test_ref_is_resolved_through_nested_objects_and_arrays():
    schemas = {
        "Workflow": {
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "steps": {"type": "array", "items": {"$ref": "#/components/schemas/Step"}},
            },
        },
        "Step": {
            "type": "object",
            "properties": {
                "slug": {"type": "string", "example": "summarize"},
                "options": {"$ref": "#/components/schemas/Options"},
            },
        },
        "Options": {"type": "object", "properties": {"words": {"type": "integer", "minimum": 5}}},
    }
    media = {"schema": {"$ref": "#/components/schemas/Workflow"}}

    assert body_of({**json_body(media), "responses": {}}, schemas=schemas) == {
        "name": "string",
        "steps": [{"slug": "summarize", "options": {"words": 5}}],
    }


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({"const": "c", "example": "e", "default": "d", "enum": ["n"]}, "c"),
        ({"example": "e", "examples": ["es"], "default": "d", "enum": ["n"]}, "e"),
        ({"examples": ["es", "other"], "default": "d", "enum": ["n"]}, "es"),
        ({"type": "string", "default": "d", "enum": ["n"]}, "d"),
        ({"type": "string", "enum": ["first", "second"]}, "first"),
        ({"type": "string", "format": "date-time"}, "2024-01-01T00:00:00Z"),
        ({"type": "string", "format": "uuid"}, "3fa85f64-5717-4562-b3fc-2c963f66afa6"),
        ({"type": "string", "format": "uri"}, "https://example.com/"),
        ({"type": "string", "format": "email"}, "user@example.com"),
        ({"type": "string"}, "string"),
        ({"type": "integer"}, 0),
        ({"type": "integer", "minimum": 3}, 3),
        ({"type": "integer", "exclusiveMinimum": 3}, 4),
        ({"type": "boolean"}, True),
        ({"type": ["string", "null"]}, "string"),
        ({"type": "null"}, None),
        ({"type": "array", "items": {"type": "integer"}}, [0]),
        ({"prefixItems": [{"type": "string"}, {"type": "boolean"}]}, ["string", True]),
        ({"additionalProperties": {"type": "integer"}}, {"key": 0}),
        ({}, None),
    ],
)
def test_example_synthesised_from_schema(schema, expected):
    assert example_from_schema({}, schema) == expected


def test_one_of_takes_the_first_branch():
    schemas = {
        "WordCount": {
            "type": "object",
            "properties": {"slug": {"const": "word-count"}, "input": {"type": "string"}},
        },
        "Summarize": {"type": "object", "properties": {"slug": {"const": "summarize"}}},
    }
    schema = {
        "oneOf": [
            {"$ref": "#/components/schemas/WordCount"},
            {"$ref": "#/components/schemas/Summarize"},
        ],
        "discriminator": {"propertyName": "slug"},
    }
    spec = make_spec({}, schemas=schemas)

    assert example_from_schema(spec, schema) == {"slug": "word-count", "input": "string"}


def test_any_of_skips_a_leading_null_branch():
    schema = {"anyOf": [{"type": "null"}, {"type": "string", "format": "email"}]}

    assert example_from_schema({}, schema) == "user@example.com"


def test_all_of_merges_every_part_and_sibling_properties():
    schemas = {"Base": {"type": "object", "properties": {"id": {"type": "integer"}}}}
    schema = {
        "allOf": [
            {"$ref": "#/components/schemas/Base"},
            {"type": "object", "properties": {"name": {"type": "string"}}},
        ],
        "properties": {"extra": {"type": "boolean"}},
    }

    assert example_from_schema(make_spec({}, schemas=schemas), schema) == {
        "extra": True,
        "id": 0,
        "name": "string",
    }


def test_self_referencing_schema_terminates_one_level_deep():
    schemas = {
        "Node": {
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "parent": {"$ref": "#/components/schemas/Node"},
                "children": {"type": "array", "items": {"$ref": "#/components/schemas/Node"}},
            },
        }
    }
    spec = make_spec({}, schemas=schemas)

    assert example_from_schema(spec, {"$ref": "#/components/schemas/Node"}) == {
        "name": "string",
        "children": [],
    }


def test_mutually_recursive_schemas_terminate():
    schemas = {
        "A": {"type": "object", "properties": {"b": {"$ref": "#/components/schemas/B"}}},
        "B": {"type": "object", "properties": {"a": {"$ref": "#/components/schemas/A"}}},
    }
    spec = make_spec({}, schemas=schemas)

    assert example_from_schema(spec, {"$ref": "#/components/schemas/A"}) == {"b": {}}


def test_ref_that_points_at_itself_terminates():
    schemas = {"Loop": {"$ref": "#/components/schemas/Loop"}}
    spec = make_spec({}, schemas=schemas)

    assert example_from_schema(spec, {"$ref": "#/components/schemas/Loop"}) is None


def test_unresolvable_ref_gives_no_example():
    assert example_from_schema({}, {"$ref": "#/components/schemas/Missing"}) is None


def test_request_example_leaves_out_read_only_and_response_example_write_only():
    schema = {
        "type": "object",
        "properties": {
            "id": {"type": "integer", "readOnly": True},
            "password": {"type": "string", "writeOnly": True},
            "name": {"type": "string"},
        },
    }

    assert example_from_schema({}, schema) == {"password": "string", "name": "string"}
    assert example_from_schema({}, schema, for_request=False) == {"id": 0, "name": "string"}


def test_saved_responses_only_for_status_codes_with_a_json_example():
    operation = {
        "responses": {
            "200": {
                "description": "The run.\nWith details.",
                "content": {"application/json": {"example": {"id": "r1"}}},
            },
            "202": {
                "description": "Queued",
                "content": {"application/json": {"schema": {"type": "object"}}},
            },
            "404": {"$ref": "#/components/responses/NotFound"},
            "default": {
                "description": "Error",
                "content": {"application/json": {"example": {"code": "x"}}},
            },
        }
    }
    components = {
        "responses": {
            "NotFound": {
                "description": "Not found",
                "content": {
                    "application/problem+json": {
                        "examples": {"missing": {"value": {"status": 404}}}
                    }
                },
            }
        },
        "schemas": {},
        "securitySchemes": {},
    }
    spec = make_spec({"/v1/runs/{id}": {"get": operation}}, components=components)

    (item,) = openapi_to_postman(spec, BASE_URL)["item"]

    assert [
        (r["name"], r["code"], r["status"], json.loads(r["body"])) for r in item["response"]
    ] == [
        ("200 The run.", 200, "OK", {"id": "r1"}),
        ("404 Not found", 404, "Not Found", {"status": 404}),
    ]
    assert item["response"][1]["header"] == [
        {"key": "Content-Type", "value": "application/problem+json"}
    ]
    assert item["response"][0]["originalRequest"] == item["request"]


def test_example_folder_saves_one_request_per_example_on_the_operation():
    examples = [
        SavedExample("Count words", {"slug": "word-count"}, "Counts.", {"words": 2}),
        SavedExample("Summarize", {"slug": "summarize", "input": "x"}),
    ]

    folder = example_folder(
        FULL_SPEC,
        BASE_URL,
        "/v1/tools/run",
        "post",
        name="Runs",
        description="D.",
        examples=examples,
    )

    assert (folder["name"], folder["description"]) == ("Runs", "D.")
    first, second = folder["item"]
    assert [first["name"], second["name"]] == ["Count words", "Summarize"]
    operation_item = openapi_to_postman(FULL_SPEC, BASE_URL)["item"][0]["item"][0]
    for item, example in zip(folder["item"], examples, strict=True):
        request = item["request"]
        assert request["url"] == operation_item["request"]["url"]
        assert request["header"] == operation_item["request"]["header"]
        assert json.loads(request["body"]["raw"]) == example.body
    assert first["request"]["description"] == "Counts."
    assert "description" not in second["request"]
    (saved,) = first["response"]
    assert (saved["name"], saved["code"], json.loads(saved["body"])) == (
        "200 Count words",
        200,
        {"words": 2},
    )
    assert saved["originalRequest"] == first["request"]
    assert second["response"] == []
    collection = {"info": {"name": "x", "schema": POSTMAN_SCHEMA_URL}, "item": [folder]}
    assert list(Draft7Validator(POSTMAN_V21_SUBSET).iter_errors(collection)) == []


def test_output_is_deterministic_and_json_serialisable():
    first = openapi_to_postman(FULL_SPEC, BASE_URL)
    second = openapi_to_postman(copy.deepcopy(FULL_SPEC), BASE_URL)

    assert first == second
    assert json.dumps(first, sort_keys=True) == json.dumps(second, sort_keys=True)


def test_input_document_is_not_modified():
    spec = copy.deepcopy(FULL_SPEC)

    openapi_to_postman(spec, BASE_URL)

    assert spec == FULL_SPEC


# --- test scripts, links and live values -------------------------------------------------------


def problem(description):
    schema = {"$ref": "#/components/schemas/Problem"}
    return {"description": description, "content": {"application/problem+json": {"schema": schema}}}


def run_answer(description="OK", **extra):
    schema = {"$ref": "#/components/schemas/Run"}
    return {
        "description": description,
        "content": {"application/json": {"schema": schema}},
        **extra,
    }


RUN_ID = {
    "in": "path",
    "name": "run_id",
    "required": True,
    "schema": {"type": "string", "format": "uuid"},
}
LINKS = {
    "status": {"operationId": "getRun", "parameters": {"run_id": "$response.body#/id"}},
    "cancel": {"operationId": "cancelRun", "parameters": {"run_id": "$response.body#/id"}},
    "elsewhere": {"operationId": "getRun", "parameters": {"run_id": "$response.header.Location"}},
}
# Targets before their source in the document: the collection puts the start first.
RUNS_SPEC = make_spec(
    {
        "/v1/runs/{run_id}": {
            "parameters": [RUN_ID],
            "get": {
                "operationId": "getRun",
                "tags": ["runs"],
                "responses": {"200": run_answer(), "404": problem("No run [run_not_found].")},
            },
            "delete": {
                "operationId": "cancelRun",
                "tags": ["runs"],
                "responses": {
                    "200": run_answer(),
                    "404": problem("No run [run_not_found]."),
                    "409": problem("The run has ended [run_not_cancelable]."),
                },
            },
        },
        "/v1/runs": {
            "post": {
                "operationId": "startRun",
                "tags": ["runs"],
                **json_body({"example": {"input": "from the document"}}),
                "responses": {
                    "202": run_answer("Started", links=LINKS),
                    "402": problem("Buy a plan [plan_required]."),
                    "422": problem("Wrong fields [validation_failed]."),
                },
            },
        },
        "/v1/files/{file_id}": {
            "get": {
                "tags": ["files"],
                "parameters": [
                    {
                        "in": "path",
                        "name": "file_id",
                        "required": True,
                        "schema": {"type": "string"},
                    }
                ],
                "responses": {
                    "200": {"description": "Bytes", "content": {"*/*": {"schema": {}}}},
                    "404": problem("No file [file_not_found, file_gone]."),
                },
            }
        },
        "/v1/doc.yaml": {
            "get": {
                "operationId": "getYaml",
                "responses": {
                    "200": {"description": "YAML", "content": {"application/yaml": {"schema": {}}}}
                },
            }
        },
        "/v1/whoami": {
            "get": {
                "operationId": "whoami",
                "tags": ["runs"],
                "responses": {"200": {"description": "OK", "content": {"application/json": {}}}},
            }
        },
    },
    schemas={
        "Run": {
            "type": "object",
            "required": ["id", "status"],
            "allOf": [{"$ref": "#/components/schemas/Timed"}],
        },
        "Timed": {"type": "object", "required": ["created_at", "status"]},
        "Problem": {"type": "object", "required": ["code", "status", "title"]},
    },
    tags=[{"name": "runs"}, {"name": "files"}],
)


def items_by_name(collection):
    return {
        item["name"]: item for entry in collection["item"] for item in entry.get("item", [entry])
    }


def script_value(item, name):
    """The JSON value a generated test script assigns to `const <name>`."""
    (event,) = item["event"]
    assert event["listen"] == "test"
    prefix = f"const {name} = "
    (line,) = [line for line in event["script"]["exec"] if line.startswith(prefix)]
    return json.loads(line[len(prefix) : -1])


def test_each_request_accepts_its_documented_success_and_plan_refusal():
    start = items_by_name(openapi_to_postman(RUNS_SPEC, BASE_URL))["POST /runs"]

    answers = script_value(start, "answers")

    assert answers == {
        "202": {
            "media": "application/json",
            "json": True,
            "required": ["created_at", "id", "status"],
            "codes": [],
        },
        "402": {
            "media": "application/problem+json",
            "json": True,
            "required": ["code", "status", "title"],
            "codes": ["plan_required"],
        },
    }


def test_a_path_parameter_without_a_value_expects_the_documented_404():
    get_file = items_by_name(openapi_to_postman(RUNS_SPEC, BASE_URL))["GET /files/{file_id}"]

    answers = script_value(get_file, "answers")

    assert list(answers) == ["404"]
    assert answers["404"]["codes"] == ["file_not_found", "file_gone"]
    assert get_file["request"]["url"]["variable"] == [{"key": "file_id", "value": "string"}]


def test_an_answer_that_is_not_json_is_checked_for_its_media_type():
    item = items_by_name(openapi_to_postman(RUNS_SPEC, BASE_URL))["GET /doc.yaml"]

    assert script_value(item, "answers") == {
        "200": {"media": "application/yaml", "json": False, "required": [], "codes": []}
    }


def test_links_carry_the_id_from_a_start_to_its_targets_which_come_after_it():
    collection = openapi_to_postman(RUNS_SPEC, BASE_URL)
    (runs, files, _root) = collection["item"]
    items = items_by_name(collection)

    assert [item["name"] for item in runs["item"]] == [
        "POST /runs",
        "GET /whoami",
        "GET /runs/{run_id}",
        "DELETE /runs/{run_id}",
    ]
    assert script_value(items["POST /runs"], "captures") == [
        {"status": "202", "variable": "getRun_run_id", "pointer": "/id"},
        {"status": "202", "variable": "cancelRun_run_id", "pointer": "/id"},
    ]
    for name, variable in [
        ("GET /runs/{run_id}", "getRun"),
        ("DELETE /runs/{run_id}", "cancelRun"),
    ]:
        url = items[name]["request"]["url"]
        assert url["variable"] == [{"key": "run_id", "value": "{{" + variable + "_run_id}}"}]
    # A run may have ended before it is canceled; its status is always there.
    assert set(script_value(items["DELETE /runs/{run_id}"], "answers")) == {"200", "409"}
    assert set(script_value(items["GET /runs/{run_id}"], "answers")) == {"200"}
    variables = {v["key"]: v["value"] for v in collection["variable"]}
    assert variables["getRun_run_id"] == "3fa85f64-5717-4562-b3fc-2c963f66afa6"
    assert variables["cancelRun_run_id"] == "3fa85f64-5717-4562-b3fc-2c963f66afa6"


def test_live_run_gives_real_values_bodies_captures_and_variables():
    live = LiveRun(
        parameters={"file_id": "real-file"},
        bodies={"startRun": {"input": "{{topic}}"}},
        captures={"whoami": {"plan": "/plan/name"}},
        variables={"topic": "compost"},
    )
    collection = openapi_to_postman(RUNS_SPEC, BASE_URL, live)
    items = items_by_name(collection)

    get_file = items["GET /files/{file_id}"]
    assert get_file["request"]["url"]["variable"] == [{"key": "file_id", "value": "real-file"}]
    assert set(script_value(get_file, "answers")) == {"200"}
    assert json.loads(items["POST /runs"]["request"]["body"]["raw"]) == {"input": "{{topic}}"}
    assert script_value(items["GET /whoami"], "captures") == [
        {"status": None, "variable": "plan", "pointer": "/plan/name"}
    ]
    variables = {v["key"]: v["value"] for v in collection["variable"]}
    assert variables["topic"] == "compost"
    assert variables["plan"] == ""


def test_live_run_naming_an_operation_the_document_lacks_is_refused():
    with pytest.raises(ValueError, match="runTool"):
        openapi_to_postman(RUNS_SPEC, BASE_URL, LiveRun(bodies={"runTool": {}}))


def test_operation_id_is_made_from_method_and_path_when_the_document_has_none():
    assert operation_id("get", "/v1/files/{file_id}", {}) == "get_v1_files_file_id"
    assert operation_id("get", "/v1/files/{file_id}", {"operationId": "getFile"}) == "getFile"


def test_example_folder_requests_carry_the_operation_test_script():
    folder = example_folder(
        RUNS_SPEC,
        BASE_URL,
        "/v1/runs",
        "post",
        name="Examples",
        description="",
        examples=[SavedExample("one", {"input": "a"}), SavedExample("two", {"input": "b"})],
    )
    start = items_by_name(openapi_to_postman(RUNS_SPEC, BASE_URL))["POST /runs"]

    assert [item["event"] for item in folder["item"]] == [start["event"], start["event"]]


def test_tools_by_category_shows_a_tool_this_deployment_can_run():
    catalogue = load_catalogue()
    vision = "alt-text-writer"
    assert catalogue.filter(category="image-understanding")[0].slug == vision

    shown = {
        example.body["slug"]
        for example in category_examples(catalogue, runnable=lambda tool: tool.slug != vision)
    }
    firsts = {catalogue.filter(category=category)[0].slug for category in catalogue.categories()}

    assert shown == firsts - {vision} | {catalogue.filter(category="image-understanding")[1].slug}
    # A category with no tool that can run still has its example (a run answers 503).
    assert {e.body["slug"] for e in category_examples(catalogue, lambda tool: False)} == firsts
