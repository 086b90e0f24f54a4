"""The JSON tools engine (convert.json), run through its catalogue tools."""

import json

import pytest

from engines import EngineError
from engines.convert import json_tools


def test_schema_inference_merges_samples_and_validates_them(run):
    sample = '[{"a": 1, "b": "x"}, {"a": 2.5, "b": null}, {"a": 3}]'
    schema = run("json-schema-generator", json=sample, strict=True)["schema"]
    assert schema["items"] == {
        "type": "object",
        "properties": {"a": {"type": "number"}, "b": {"type": ["string", "null"]}},
        "required": ["a"],
        "additionalProperties": False,
    }
    check = run("json-schema-validator", json=sample, schema=json.dumps(schema))
    assert check["valid"] is True


def test_schema_validator_reports_paths_and_refuses_remote_refs(run):
    out = run(
        "json-schema-validator",
        json='{"a": [1, "x"]}',
        schema='{"properties": {"a": {"items": {"type": "integer"}}}}',
    )
    assert out["errors"] == [
        {
            "path": "$.a[1]",
            "message": "'x' is not of type 'integer'",
            "keyword": "type",
            "schema_path": "properties/a/items/type",
        }
    ]
    with pytest.raises(EngineError, match="cannot be resolved"):
        run("json-schema-validator", json="1", schema='{"$ref": "https://example.com/s.json"}')


def test_schema_validator_refuses_an_invalid_schema(run):
    with pytest.raises(EngineError, match="The schema itself is invalid at \\$.type"):
        run("json-schema-validator", json="1", schema='{"type": "integr"}')


def test_schema_patterns_that_backtrack_forever_are_stopped(run, monkeypatch):
    monkeypatch.setattr(json_tools, "_REGEX_TIMEOUT", 0.05)
    with pytest.raises(EngineError, match="catastrophic backtracking"):
        run(
            "json-schema-validator",
            json=json.dumps("a" * 40 + "!"),
            schema='{"pattern": "^(a|aa)+$"}',
        )


def test_jmespath_query_and_its_syntax_errors(run):
    out = run("jmespath-query", json='{"a": [{"n": 2}, {"n": 1}]}', expression="max(a[].n)")
    assert (out["result"], out["type"]) == (2, "number")
    with pytest.raises(EngineError, match="invalid at position"):
        run("jmespath-query", json="{}", expression="a[")


def test_jmespath_results_that_multiply_are_bounded(run):
    expression = " | ".join(["[@, @, @, @, @, @, @, @, @, @]"] * 6)
    with pytest.raises(EngineError, match="The result holds more than"):
        run("jmespath-query", json="[1]", expression=expression)


def test_json_diff_of_identical_documents_ignores_key_order(run):
    out = run("json-diff", original='{"a": 1, "b": [1]}', changed='{"b": [1], "a": 1}')
    assert out["identical"] is True and out["differences"] == []


def test_json_diff_sees_a_type_change(run):
    out = run("json-diff", original='{"n": 1}', changed='{"n": "1"}')
    assert out["differences"] == [{"path": "$.n", "change": "changed", "old": 1, "new": "1"}]


def test_flatten_and_unflatten_round_trip(run):
    source = {"a": {"b": [1, {"c": 2}]}, "d": {}, "odd key": True}
    flat = run("json-flattener", json=json.dumps(source), separator="/", indent=0)
    assert json.loads(flat["json"]) == {"a/b/0": 1, "a/b/1/c": 2, "d": {}, "odd key": True}
    with pytest.raises(EngineError, match="already nested"):
        run("json-flattener", json=flat["json"], direction="unflatten", separator="/")
    plain = {"a/b/0": 1, "a/b/1/c": 2, "odd key": True}
    back = run("json-flattener", json=json.dumps(plain), direction="unflatten", separator="/")
    assert json.loads(back["json"]) == {"a": {"b": [1, {"c": 2}]}, "odd key": True}


def test_unflatten_refuses_a_key_that_is_value_and_parent(run):
    with pytest.raises(EngineError, match="'a.b' needs 'a' to be an object"):
        run("json-flattener", json='{"a": 1, "a.b": 2}', direction="unflatten")
