"""Every catalogue tool in the OpenAPI document and the Postman collection: its input and output
schemas, its example on the dispatcher's body, its output tied to run answers, and one saved
request per category."""

import json
import re

import pytest
from jsonschema import Draft202012Validator

from app import create_app
from blueprints.api import endpoint_tools
from blueprints.api.openapi.routes import TOOLS_BY_CATEGORY
from blueprints.api.tools.openapi import component_name
from catalogue import load_catalogue
from tests.helpers import app_config, auth

CATALOGUE = load_catalogue()


@pytest.fixture(scope="module")
def docs_client():
    """No request here touches the database or Redis."""
    app = create_app(
        app_config(
            SQLALCHEMY_DATABASE_URI="sqlite://", REDIS_URL=None, RATELIMIT_STORAGE_URI="memory://"
        )
    )
    return app.test_client()


@pytest.fixture(scope="module")
def document(docs_client) -> dict:
    return docs_client.get("/v1/openapi.json").get_json()


@pytest.fixture(scope="module")
def collection(docs_client) -> dict:
    return docs_client.get("/v1/openapi/postman").get_json()


def validator(document: dict, schema: dict) -> Draft202012Validator:
    """A validator for ``schema`` whose ``#/components/...`` references reach the document's."""
    return Draft202012Validator({**schema, "components": document["components"]})


def dispatcher(document: dict) -> dict:
    return document["paths"]["/v1/tools/run"]["post"]


def answer_schema(document: dict, path: str, method: str, status: str = "200") -> dict:
    response = document["paths"][path][method]["responses"][status]
    return response["content"]["application/json"]["schema"]


def run_answer(slug: str, output) -> dict:
    return {
        "run_id": "0b8f6c1e-4f3a-4c7e-9a51-2d5e8f7a9c10",
        "tool": slug,
        "status": "succeeded" if output is not None else "canceled",
        "output": output,
        "credits": 1,
        "duration_ms": 12,
        "sandbox": False,
        "model": None,
        "quality_note": None,
    }


def test_every_tool_has_its_body_and_its_output_as_components(document):
    schemas = document["components"]["schemas"]
    for tool in CATALOGUE:
        body = schemas[component_name(tool)]
        assert body["properties"]["slug"] == {"const": tool.slug}
        assert body["properties"][tool.primary] == tool.inputs["properties"][tool.primary]
        output = schemas[component_name(tool, "ToolOutput")]
        assert {k: v for k, v in output.items() if k not in ("title", "examples")} == tool.output
        assert output["examples"] == [example["output"] for example in tool.examples]


def test_tool_schemas_are_titled_after_the_tool(document):
    """Client generators name models by title: ``AudioChannelConverterOutput``, not the
    display name (it was ``StereoConverterOutput``)."""
    schemas = document["components"]["schemas"]
    tool = CATALOGUE.get("audio-channel-converter")
    assert schemas[component_name(tool)]["title"] == "AudioChannelConverterInput"
    assert schemas[component_name(tool, "ToolOutput")]["title"] == "AudioChannelConverterOutput"
    titles = [
        schemas[component_name(tool, kind)]["title"]
        for tool in CATALOGUE
        for kind in ("RunTool", "ToolOutput")
    ]
    assert len(set(titles)) == 2 * len(CATALOGUE)
    assert all(re.fullmatch(r"[A-Z][A-Za-z0-9]*(Input|Output)", title) for title in titles)


def test_a_tools_body_states_input_or_its_primary_field_without_a_one_of(document):
    """openapi-python-client typed a body with a top-level ``oneOf`` of ``required`` lists as
    ``Any``; the rule is in the description, and the API enforces it."""
    schemas = document["components"]["schemas"]
    for tool in CATALOGUE:
        body = schemas[component_name(tool)]
        assert not {"oneOf", "anyOf", "allOf"} & set(body), tool.slug
        assert f"Send `input` or `{tool.primary}`" in body["description"]
        assert body["description"].endswith("not both.")
        assert body["required"] == ["slug"]


@pytest.mark.parametrize(
    ("path", "body", "field", "message"),
    [
        ("/v1/tools/run", {"slug": "word-counter"}, "text", "Missing required field."),
        (
            "/v1/tools/run",
            {"slug": "word-counter", "input": "a", "text": "b"},
            "input",
            "Send either input or text, not both.",
        ),
        ("/v1/public/tools/word-counter/run", {}, "text", "Missing required field."),
        (
            "/v1/public/tools/word-counter/run",
            {"input": "a", "text": "b"},
            "input",
            "Send either input or text, not both.",
        ),
    ],
)
def test_the_api_refuses_input_with_the_primary_field_and_neither(
    client, make_key, path, body, field, message
):
    response = client.post(path, json=body, headers=auth(make_key("pro")))
    assert response.status_code == 422
    problem = response.get_json()
    assert (problem["code"], problem["errors"]) == ("validation_failed", {field: [message]})


def test_the_dispatchers_body_is_one_of_the_tools_keyed_by_slug(document):
    schema = dispatcher(document)["requestBody"]["content"]["application/json"]["schema"]
    mapping = schema["discriminator"]["mapping"]
    assert set(mapping) == set(CATALOGUE.tools)
    assert mapping["keyword-extractor"] == "#/components/schemas/RunTool_keyword_extractor"
    assert len(schema["oneOf"]) == len(CATALOGUE)


def test_every_tools_example_is_a_named_example_of_the_dispatchers_body(document):
    media = dispatcher(document)["requestBody"]["content"]["application/json"]
    assert "example" not in media  # OpenAPI allows `example` or `examples`, not both
    examples = media["examples"]
    # The example the route documented is still the one shown first.
    assert next(iter(examples)) == "keyword-extractor"
    assert set(examples) == set(CATALOGUE.tools)
    for slug, example in examples.items():
        tool = CATALOGUE.get(slug)
        assert example["summary"] == tool.name
        assert example["value"] == {"slug": slug, **tool.examples[0]["input"]}
        body_schema = {"$ref": f"#/components/schemas/{component_name(tool)}"}
        assert list(validator(document, body_schema).iter_errors(example["value"])) == []


@pytest.mark.parametrize(
    ("path", "method", "status", "component"),
    [
        ("/v1/tools/run", "post", "200", "RunResult"),
        ("/v1/public/tools/{slug}/run", "post", "200", "RunResult"),
        ("/v1/tools/run", "post", "202", "RunRecord"),
        ("/v1/tools/run/{run_id}/status", "get", "200", "RunRecord"),
        ("/v1/tools/run/{run_id}/cancel", "post", "200", "RunRecord"),
    ],
)
def test_run_answers_tie_the_output_to_the_tools_output_schema(
    document, path, method, status, component
):
    schema = answer_schema(document, path, method, status)
    assert schema == {"$ref": f"#/components/schemas/{component}"}
    run = document["components"]["schemas"][component]
    assert run["dependentSchemas"] == {"tool": {"$ref": "#/components/schemas/RunOutputByTool"}}
    # A model of its own for client generators: no oneOf, no allOf beside its properties.
    assert {"run_id", "tool", "status", "output"} <= set(run["properties"])
    assert not {"allOf", "oneOf", "anyOf"} & set(run)


def test_a_run_answer_is_checked_against_its_own_tools_output(document):
    check = validator(document, answer_schema(document, "/v1/tools/run", "post"))
    keywords = CATALOGUE.get("keyword-extractor").examples[0]["output"]
    words = CATALOGUE.get("word-counter").examples[0]["output"]

    assert check.is_valid(run_answer("keyword-extractor", keywords))
    assert check.is_valid(run_answer("word-counter", words))
    # Another tool's output, or a stray field, is refused.
    assert not check.is_valid(run_answer("keyword-extractor", words))
    assert not check.is_valid(run_answer("word-counter", {**words, "extra": 1}))
    # Null until a run has succeeded.
    assert check.is_valid(run_answer("keyword-extractor", None))


def test_runs_of_the_plan_gated_endpoints_tools_are_left_to_their_endpoints(document):
    # The status endpoint shows these runs too; their tools are not in the catalogue.
    check = validator(document, answer_schema(document, "/v1/tools/run/{run_id}/status", "get"))
    record = {
        **run_answer("x", None),
        "error": None,
        "model": None,
        "created_at": "2026-01-01T00:00:00Z",
        "started_at": None,
        "finished_at": None,
        "status_url": "https://svc.test/v1/tools/run/x/status",
    }
    for tool in endpoint_tools().values():
        assert tool.slug not in CATALOGUE
        answer = {**record, "tool": tool.slug, "output": tool.sample_output()}
        assert list(check.iter_errors(answer)) == []


def test_the_catalogue_endpoint_still_answers_the_schemas_as_data(docs_client):
    tool = CATALOGUE.get("keyword-extractor")
    shown = docs_client.get("/v1/tools/keyword-extractor").get_json()
    assert shown["input_schema"] == tool.inputs
    assert shown["output_schema"] == tool.output


# --- Postman -------------------------------------------------------------------------------


def tools_by_category(collection: dict) -> dict:
    (folder,) = [item for item in collection["item"] if item["name"] == TOOLS_BY_CATEGORY]
    return folder


def test_postman_has_one_example_run_per_category(collection):
    requests = tools_by_category(collection)["item"]
    categories = [item["name"].split(":")[0] for item in requests]
    assert categories == list(CATALOGUE.categories())
    for item, category in zip(requests, categories, strict=True):
        request = item["request"]
        assert request["method"] == "POST"
        assert request["url"]["raw"] == "{{baseUrl}}/tools/run"
        assert "auth" not in request  # the collection's API key
        body = json.loads(request["body"]["raw"])
        tool = CATALOGUE.get(body.pop("slug"))
        assert tool.category == category
        # The category's first tool this deployment can run (else its first).
        tools = CATALOGUE.filter(category=category)
        assert tool == next((t for t in tools if t.available), tools[0])
        assert tool.validate(body) == {}


def test_postman_example_runs_save_the_tools_example_answer(collection):
    for item in tools_by_category(collection)["item"]:
        (saved,) = item["response"]
        answer = json.loads(saved["body"])
        tool = CATALOGUE.get(json.loads(item["request"]["body"]["raw"])["slug"])
        assert saved["code"] == 200
        assert answer["tool"] == tool.slug
        assert answer["output"] == tool.examples[0]["output"]
