"""Tool: field errors, defaults, samples and the public form; Catalogue: lookups and filters."""

import dataclasses
import random

import pytest
import yaml

from catalogue import CATEGORIES, CREDIT_CLASSES, TOOL_PLANS, load_catalogue
from tests.catalogue.test_loader import record


@pytest.fixture(scope="module")
def catalogue():
    return load_catalogue()


@pytest.fixture
def markdown_tool(catalogue):
    return catalogue.get("markdown-to-html")


@pytest.mark.parametrize(
    "data, errors",
    [
        ({"markdown": "# Hi"}, {}),
        ({"markdown": "# Hi", "colour": "red"}, {"colour": ["Unknown field."]}),
        ({}, {"markdown": ["Missing required field."]}),
        ({"markdown": 12}, {"markdown": ["Must be a string."]}),
        ({"markdown": ""}, {"markdown": ["Must not be empty."]}),
        ({"markdown": "x" * 100001}, {"markdown": ["Longer than 100000 characters."]}),
        ({"markdown": "x", "safe": "yes"}, {"safe": ["Must be a boolean."]}),
        ({"markdown": "x", "extensions": ["tables", "tables"]},
         {"extensions": ["Must not contain duplicates."]}),
        ({"markdown": "x", "extensions": ["emoji"]},
         {"extensions.0": ["Must be one of: tables, fenced_code, footnotes, toc, sane_lists, "
                           "nl2br, smarty, abbr, def_list, attr_list, admonition, md_in_html."]}),
        ([1, 2], {"": ["Must be an object."]}),
        ({"safe": 1, "extra": True},
         {"markdown": ["Missing required field."], "extra": ["Unknown field."],
          "safe": ["Must be a boolean."]}),
    ],
    ids=["valid", "unknown-field", "missing-field", "wrong-type", "empty", "too-long",
         "not-boolean", "duplicates", "not-in-enum", "not-an-object", "several"],
)  # fmt: skip
def test_validate_returns_human_field_errors(markdown_tool, data, errors):
    assert markdown_tool.validate(data) == errors


@pytest.mark.parametrize(
    "slug, data, errors",
    [
        ("keyword-extractor", {"text": "x", "max_keywords": 0},
         {"max_keywords": ["Must be at least 1."]}),
        ("keyword-extractor", {"text": "x", "max_keywords": 51},
         {"max_keywords": ["Must be at most 50."]}),
        ("keyword-extractor", {"text": "x", "max_keywords": 2.5},
         {"max_keywords": ["Must be an integer."]}),
        ("keyword-extractor", {"text": "x", "max_keywords": True},
         {"max_keywords": ["Must be an integer."]}),
        ("keyword-extractor", {"text": "   "}, {"text": ["Must not be blank."]}),
    ],
    ids=["below-minimum", "above-maximum", "float-for-integer", "bool-for-integer", "blank"],
)  # fmt: skip
def test_validate_reports_bounds_and_blank_text(catalogue, slug, data, errors):
    assert catalogue.get(slug).validate(data) == errors


def test_with_defaults_fills_every_missing_optional_field(markdown_tool):
    assert markdown_tool.with_defaults({"markdown": "# Hi"}) == {
        "markdown": "# Hi",
        "extensions": ["tables", "fenced_code"],
        "safe": True,
    }


def test_with_defaults_keeps_the_values_given(markdown_tool):
    given = {"markdown": "# Hi", "extensions": [], "safe": False}
    assert markdown_tool.with_defaults(given) == given


def test_with_defaults_never_shares_a_mutable_default(markdown_tool):
    first = markdown_tool.with_defaults({"markdown": "a"})
    first["extensions"].append("toc")
    assert markdown_tool.with_defaults({"markdown": "b"})["extensions"] == [
        "tables",
        "fenced_code",
    ]


def test_sample_output_is_a_copy_of_the_first_example(markdown_tool):
    sample = markdown_tool.sample_output()
    assert sample == markdown_tool.examples[0]["output"]
    sample["html"] = "changed"
    assert markdown_tool.sample_output() == markdown_tool.examples[0]["output"]


def test_to_public_describes_the_tool_for_the_api(catalogue):
    tool = catalogue.get("word-counter")
    public = tool.to_public()
    assert set(public) == {
        "slug", "name", "category", "summary", "required_plan", "credit_class", "credits",
        "queue", "input_schema", "primary_field", "output_schema", "examples", "available",
        "unavailable_reason", "best_with_provider",
    }  # fmt: skip
    assert (public["slug"], public["category"], public["primary_field"]) == (
        "word-counter",
        "writing-analysis",
        "text",
    )
    assert (public["credits"], public["queue"], public["available"]) == (1, False, True)
    assert public["unavailable_reason"] is None and public["best_with_provider"] is False
    assert public["input_schema"] == tool.inputs and public["input_schema"] is not tool.inputs


def test_to_public_reports_an_engine_that_cannot_run(catalogue, monkeypatch):
    import engines

    monkeypatch.setattr(engines.get_engine("code.sql"), "requires", ("no_such_module_xyz",))
    public = catalogue.get("sql-formatter").to_public()
    assert public["available"] is False
    assert public["unavailable_reason"] == (
        "Engine code.sql needs the Python package(s) no_such_module_xyz."
    )


def test_credits_follow_the_credit_class():
    assert CREDIT_CLASSES == {
        "fast_text": 1,
        "premium_text": 2,
        "image": 5,
        "audio": 5,
        "video": 10,
    }


def test_get_returns_none_for_an_unknown_slug(catalogue):
    assert catalogue.get("no-such-tool") is None


def test_filter_by_category_returns_only_that_category_sorted(catalogue):
    slugs = [tool.slug for tool in catalogue.filter(category="code-helpers")]
    assert slugs == sorted(t.slug for t in catalogue if t.category == "code-helpers")
    assert {"sql-formatter", "qr-code-generator", "unit-test-writer"} <= set(slugs)
    assert "image-resizer" not in slugs


@pytest.fixture
def plans_catalogue(tmp_path):
    tools = [record(slug=f"{plan}-tool", required_plan=plan) for plan in TOOL_PLANS]
    (tmp_path / "seo").mkdir()
    (tmp_path / "seo" / "tools.yaml").write_text(yaml.safe_dump(tools), encoding="utf-8")
    return load_catalogue(str(tmp_path))


@pytest.mark.parametrize(
    "plan, slugs",
    [
        ("free", []),
        ("starter", []),
        ("pro", ["pro-tool"]),
        ("creator", ["creator-tool", "pro-tool"]),
        ("business", ["business-tool", "creator-tool", "pro-tool"]),
        ("agency", ["agency-tool", "business-tool", "creator-tool", "pro-tool"]),
        (None, ["agency-tool", "business-tool", "creator-tool", "pro-tool"]),
    ],
)
def test_filter_by_plan_includes_every_lower_plan(plans_catalogue, plan, slugs):
    assert [tool.slug for tool in plans_catalogue.filter(plan=plan)] == slugs


@pytest.mark.parametrize("arguments", [{"plan": "gold"}, {"category": "gossip"}])
def test_filter_refuses_an_unknown_plan_or_category(catalogue, arguments):
    with pytest.raises(ValueError):
        catalogue.filter(**arguments)


def test_categories_lists_used_categories_in_canonical_order(catalogue):
    used = {tool.category for tool in catalogue}
    assert catalogue.categories() == tuple(c for c in CATEGORIES if c in used)
    assert len(catalogue.categories()) >= 12


def test_a_tool_is_immutable(catalogue):
    with pytest.raises(dataclasses.FrozenInstanceError):
        catalogue.get("word-counter").slug = "other"


# --- the quick check (fastjsonschema) never changes what validate answers -----------------


def _candidates(spec, rng: random.Random) -> list:
    """Values for a field of schema ``spec``: fitting ones, and ones just past each bound."""
    if not isinstance(spec, dict):
        return [None]
    values: list = [None, True, 0, 1, -1, 1.0, 2.5, "", " ", "x", "x\n", "$", [], {}, {"a": 1}]
    values += spec.get("enum", [])
    if "default" in spec:
        values.append(spec["default"])
    for bound in ("minLength", "maxLength"):
        if bound in spec and spec[bound] <= 1000:  # longer ones only cost time
            values += ["y" * max(0, spec[bound] + delta) for delta in (-1, 0, 1)]
    for bound in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        if bound in spec:
            values += [spec[bound] + delta for delta in (-1, -0.5, 0, 0.5, 1)]
    if "pattern" in spec:
        values += ["abc", "ABC 123", "a b", "-", "\t", "abc\n", "https://example.com/x"]
    items = spec.get("items")
    if isinstance(items, dict):
        item_values = _candidates(items, rng)
        for size in (0, 1, 2, spec.get("maxItems", 3), spec.get("maxItems", 3) + 1):
            values.append([rng.choice(item_values) for _ in range(size)])
        pick = rng.choice(item_values)
        values.append([pick, pick])  # duplicates
    return values


def _inputs(tool, rng: random.Random):
    """Each example's input, then mutations: a field changed, dropped or added."""
    properties = tool.inputs.get("properties", {})
    bases = [example["input"] for example in tool.examples] or [{}]
    for base in bases:
        yield base
        for name, spec in properties.items():
            values = _candidates(spec, rng)
            for value in rng.sample(values, min(len(values), 12)):
                yield {**base, name: value}
            yield {key: value for key, value in base.items() if key != name}
        yield {**base, "not_a_field": "x"}
    yield "not an object"
    yield [base for base in bases]


def test_the_quick_check_never_changes_what_validate_answers(catalogue):
    """validate() accepts at once what the compiled schema accepts; everything else goes to
    jsonschema. So the two must agree on every input the quick check accepts."""
    rng = random.Random(20261122)
    checked = quick = 0
    for tool in catalogue.filter():
        for data in _inputs(tool, rng):
            assert tool.validate(data) == tool._errors(data), (tool.slug, data)
            checked += 1
            quick += tool._quick_check is not None
    assert checked > 10_000 and quick > 0.9 * checked  # most tools have the quick check
