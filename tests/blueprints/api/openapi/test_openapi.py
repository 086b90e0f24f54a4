"""The generated OpenAPI 3.1 document, its YAML twin, the Postman collection, the docs page."""

from openapi_spec_validator import validate

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
