def test_catalogue_lists_tools_without_a_key(client):
    body = client.get("/v1/tools").get_json()
    assert body["count"] == len(body["tools"]) >= 12
    assert len({tool["category"] for tool in body["tools"]}) >= 4
    tool = body["tools"][0]
    for field in (
        "slug",
        "name",
        "category",
        "summary",
        "required_plan",
        "credit_class",
        "input_schema",
        "output_schema",
        "available",
    ):
        assert field in tool


def test_catalogue_filters_by_category_and_plan(client):
    seo = client.get("/v1/tools?category=seo").get_json()["tools"]
    assert seo and {tool["category"] for tool in seo} == {"seo"}
    assert client.get("/v1/tools?plan=free").get_json()["count"] == 0
    assert client.get("/v1/tools?plan=pro").get_json()["count"] >= 12


def test_unknown_filter_value_is_422(client):
    response = client.get("/v1/tools?category=astrology")
    assert response.status_code == 422
    assert response.get_json()["code"] == "validation_failed"


def test_one_tool_and_unknown_tool(client):
    assert client.get("/v1/tools/word-counter").get_json()["slug"] == "word-counter"
    response = client.get("/v1/tools/nope")
    assert response.status_code == 404 and response.get_json()["code"] == "tool_not_found"
