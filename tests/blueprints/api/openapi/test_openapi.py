"""The generated OpenAPI 3.1 document, its YAML twin, the Postman collection, the docs page."""

import re

import pytest
from openapi_spec_validator import validate

from blueprints.api.problems import PROBLEM_JSON

OPERATIONS = {
    ("get", "/v1/public/whoami"),
    ("post", "/v1/public/tools/{slug}/run"),
    ("post", "/v1/tools/run"),
    ("get", "/v1/tools"),
    ("get", "/v1/tools/{slug}"),
    ("get", "/v1/health"),
    ("get", "/v1/health/chatbot"),
    ("get", "/v1/openapi.yaml"),
    ("get", "/v1/openapi/postman"),
}


def spec(client) -> dict:
    response = client.get("/v1/openapi.json")
    assert response.status_code == 200
    return response.get_json()


def test_document_is_valid_openapi_3_1(client):
    document = spec(client)
    assert document["openapi"] == "3.1.0"
    validate(document)


def test_every_operation_is_documented_without_a_catch_all_default(client):
    document = spec(client)
    found = {
        (method, path)
        for path, item in document["paths"].items()
        for method in item
        if method in {"get", "post", "put", "patch", "delete"}
    }
    assert found >= OPERATIONS
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if method not in {"get", "post", "put", "patch", "delete"}:
                continue
            assert "default" not in operation["responses"], (method, path)
            assert operation.get("summary"), (method, path)
            assert "security" in operation, (method, path)


# What generated clients call: a rename breaks every client made before it.
OPERATION_IDS = {
    ("get", "/v1/public/whoami"): "whoami",
    ("post", "/v1/public/tools/{slug}/run"): "runToolBySlug",
    ("post", "/v1/tools/run"): "runTool",
    ("get", "/v1/tools/run/{run_id}/status"): "getRunStatus",
    ("get", "/v1/tools/run/{run_id}/events"): "streamRunEvents",
    ("post", "/v1/tools/run/{run_id}/cancel"): "cancelRun",
    ("get", "/v1/tools"): "listTools",
    ("get", "/v1/tools/{slug}"): "getTool",
    ("get", "/v1/workflows"): "listWorkflows",
    ("get", "/v1/workflows/{workflow_id}"): "getWorkflow",
    ("post", "/v1/workflows/run"): "startWorkflow",
    ("get", "/v1/workflows/run/{run_id}/status"): "getWorkflowRunStatus",
    ("get", "/v1/workflows/run/{run_id}/events"): "streamWorkflowRunEvents",
    ("post", "/v1/workflows/run/{run_id}/cancel"): "cancelWorkflowRun",
    ("post", "/v1/images/generate"): "generateImages",
    ("post", "/v1/voice/speak"): "speak",
    ("get", "/v1/voice/voices"): "listVoices",
    ("post", "/v1/video/generate"): "generateVideo",
    ("post", "/v1/audiobooks"): "createAudiobook",
    ("get", "/v1/audiobooks/{run_id}"): "getAudiobook",
    ("get", "/v1/files/{file_id}"): "getFile",
    ("delete", "/v1/files/{file_id}"): "deleteFile",
    ("get", "/v1/webhook"): "getWebhook",
    ("put", "/v1/webhook"): "setWebhook",
    ("get", "/v1/webhook/deliveries"): "listWebhookDeliveries",
    ("get", "/v1/webhook/deliveries/{delivery_id}"): "getWebhookDelivery",
    ("post", "/v1/webhook/deliveries/{delivery_id}/redeliver"): "redeliverWebhookDelivery",
    ("post", "/v1/webhook/test"): "testWebhook",
    ("get", "/v1/embeds"): "listEmbeds",
    ("post", "/v1/embeds"): "createEmbed",
    ("get", "/v1/embeds/{embed_id}"): "getEmbed",
    ("patch", "/v1/embeds/{embed_id}"): "updateEmbed",
    ("delete", "/v1/embeds/{embed_id}"): "deleteEmbed",
    ("get", "/v1/white-label"): "getWhiteLabel",
    ("put", "/v1/white-label"): "setWhiteLabel",
    ("get", "/v1/health"): "getHealth",
    ("get", "/v1/health/chatbot"): "getChatbotHealth",
    ("get", "/v1/openapi.yaml"): "getOpenApiYaml",
    ("get", "/v1/openapi/postman"): "getPostmanCollection",
}


def operations(document: dict) -> dict:
    """Every operation of the document, by (method, path)."""
    return {
        (method, path): operation
        for path, item in document["paths"].items()
        for method, operation in item.items()
        if method in {"get", "post", "put", "patch", "delete"}
    }


def test_every_operation_has_a_stable_unique_operation_id(client):
    found = {where: op.get("operationId") for where, op in operations(spec(client)).items()}
    assert found == OPERATION_IDS
    assert len(set(found.values())) == len(found)
    assert all(re.fullmatch(r"[a-z][A-Za-z]*", name) for name in found.values())


@pytest.mark.parametrize(
    ("path", "statuses", "follow"),
    [
        ("/v1/tools/run", ("200", "202"), ("getRunStatus", "cancelRun")),
        ("/v1/public/tools/{slug}/run", ("200", "202"), ("getRunStatus", "cancelRun")),
        ("/v1/images/generate", ("200", "202"), ("getRunStatus", "cancelRun")),
        ("/v1/voice/speak", ("200", "202"), ("getRunStatus", "cancelRun")),
        ("/v1/video/generate", ("200", "202"), ("getRunStatus", "cancelRun")),
        ("/v1/audiobooks", ("200", "202"), ("getRunStatus", "cancelRun")),
        ("/v1/workflows/run", ("202",), ("getWorkflowRunStatus", "cancelWorkflowRun")),
    ],
)
def test_a_run_start_links_to_the_runs_status_and_cancel(client, path, statuses, follow):
    document = spec(client)
    paths = {op["operationId"]: path for (_, path), op in operations(document).items()}
    for status in statuses:
        links = document["paths"][path]["post"]["responses"][status]["links"]
        assert [links["status"]["operationId"], links["cancel"]["operationId"]] == list(follow)
        for link in links.values():
            assert link["parameters"] == {"run_id": "$response.body#/run_id"}
            target = document["paths"][paths[link["operationId"]]]
            assert [p["name"] for p in target["parameters"] if p["in"] == "path"] == ["run_id"]


# The health checks answer their own document when down, not a problem.
HEALTH_503 = {("get", "/v1/health", "503"), ("get", "/v1/health/chatbot", "503")}


def test_every_error_answer_is_a_problem(client):
    problem = {PROBLEM_JSON: {"schema": {"$ref": "#/components/schemas/Problem"}}}
    for (method, path), operation in operations(spec(client)).items():
        for status, response in operation["responses"].items():
            if int(status) >= 400 and (method, path, status) not in HEALTH_503:
                assert response["content"] == problem, (method, path, status)


def test_authenticated_operations_use_the_key_header_scheme(client):
    document = spec(client)
    scheme = document["components"]["securitySchemes"]["ApiKeyHeader"]
    assert scheme == {"type": "apiKey", "in": "header", "name": "X-SVC-API-Key"}
    whoami = document["paths"]["/v1/public/whoami"]["get"]
    assert {"ApiKeyHeader": []} in whoami["security"]
    assert set(whoami["responses"]) == {"200", "401", "429", "503"}
    problem = whoami["responses"]["401"]["content"]["application/problem+json"]["schema"]
    assert problem == {"$ref": "#/components/schemas/Problem"}
    assert document["paths"]["/v1/tools"]["get"]["security"] == []


def test_every_operation_with_a_key_documents_503(client):
    """A key's limits live in Redis: any operation that takes one answers 503 without it."""
    for path, item in spec(client)["paths"].items():
        for method, operation in item.items():
            if method != "parameters" and "401" in operation.get("responses", {}):
                assert "503" in operation["responses"], (method, path)


def test_run_endpoints_document_every_refusal(client):
    document = spec(client)
    for path in ("/v1/public/tools/{slug}/run", "/v1/tools/run"):
        statuses = set(document["paths"][path]["post"]["responses"])
        assert {"200", "400", "401", "402", "403", "404", "413", "422", "429", "503"} <= statuses


def test_postman_collection_covers_every_operation(client):
    response = client.get("/v1/openapi/postman")
    assert response.status_code == 200
    collection = response.get_json()
    assert collection["info"]["schema"].endswith("/v2.1.0/collection.json")
    assert {"key": "api_key", "value": "svc_your_key_here"} in [
        {"key": v["key"], "value": v["value"]} for v in collection["variable"]
    ]
    requests = [
        request for folder in collection["item"] for request in folder.get("item", [folder])
    ]
    assert len(requests) >= len(OPERATIONS)


def test_docs_page_uses_vendored_assets_only(client):
    response = client.get("/docs")
    assert response.status_code == 200
    html = response.get_data(as_text=True)
    assert "/static/vendor/swagger-ui/swagger-ui-bundle.js" in html
    assert "/v1/openapi.json" in html
    assert "cdn" not in html.lower() and "unpkg" not in html.lower()
    asset = client.get("/static/vendor/swagger-ui/swagger-ui-bundle.js")
    assert asset.status_code == 200
    asset.close()
