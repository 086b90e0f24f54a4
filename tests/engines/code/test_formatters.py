"""The code formatters (engines/code/formatters.py): SQL, JSON, JavaScript, Python."""

import pytest

from engines import EngineError

# --- SQL ---------------------------------------------------------------------------------


def test_sql_is_reindented_with_uppercase_keywords(run):
    result = run("sql-formatter", sql="select id, name from users where active=1 order by name")
    assert result == {
        "formatted": "SELECT id,\n       name\nFROM users\nWHERE active = 1\nORDER BY name",
        "statements": 1,
    }


def test_sql_keyword_case_and_statement_count_follow_the_input(run):
    result = run("sql-formatter", sql="SELECT a FROM t; SELECT b FROM u", keyword_case="lower")
    assert result == {"formatted": "select a\nfrom t;\n\nselect b\nfrom u", "statements": 2}


def test_sql_comments_can_be_stripped(run):
    result = run("sql-formatter", sql="select a /* note */ from t -- why\n", strip_comments=True)
    assert result["formatted"] == "SELECT a\nFROM t"


def test_sql_without_reindent_keeps_one_line(run):
    result = run("sql-formatter", sql="select a,b from t", reindent=False)
    assert result["formatted"] == "SELECT a,b FROM t"


@pytest.mark.parametrize("sql", [";", "-- only a comment", "/* nothing */ ;"])
def test_sql_without_a_statement_is_refused(run, sql):
    with pytest.raises(EngineError, match="^The text contains no SQL statement.$"):
        run("sql-formatter", sql=sql)


# --- JSON --------------------------------------------------------------------------------


def test_json_is_pretty_printed(run):
    result = run("json-formatter", json='{"b":[1,2],"a":null}')
    assert result == {
        "formatted": '{\n  "b": [\n    1,\n    2\n  ],\n  "a": null\n}',
        "type": "object",
        "items": 2,
    }


def test_json_can_be_minified_with_sorted_keys(run):
    result = run("json-formatter", json='{"b": [1, 2], "a": "é"}', indent=0, sort_keys=True)
    assert result["formatted"] == '{"a":"é","b":[1,2]}'


def test_json_nested_100_levels_is_formatted(run):
    assert run("json-formatter", json="[" * 100 + "]" * 100, indent=0)["formatted"] == (
        "[" * 100 + "]" * 100
    )


def test_json_brackets_inside_strings_do_not_count_as_nesting(run):
    source = '["' + "[" * 200 + '\\"{"]'
    assert run("json-formatter", json=source)["items"] == 1


def test_json_can_escape_non_ascii(run):
    assert run("json-formatter", json='["é"]', ascii_only=True)["formatted"] == (
        '[\n  "\\u00e9"\n]'
    )


@pytest.mark.parametrize(
    "source, kind, items",
    [("42", "number", None), ("1.5", "number", None), ('"x"', "string", None),
     ("true", "boolean", None), ("null", "null", None), ("[1, 2, 3]", "array", 3)],
)  # fmt: skip
def test_json_reports_the_top_level_type(run, source, kind, items):
    result = run("json-formatter", json=source)
    assert (result["type"], result["items"]) == (kind, items)


@pytest.mark.parametrize(
    "source, message",
    [
        ('{"a": 1,\n  "b": }', "Invalid JSON at line 2, column 8: Expecting value."),
        ("{'a': 1}", "Invalid JSON at line 1, column 2: Expecting property name enclosed in "
         "double quotes."),
        ('{"a": 1} x', "Invalid JSON at line 1, column 10: Extra data."),
        ("[NaN]", "Invalid JSON: NaN is not valid JSON."),
        ("[" * 101, "The JSON is nested more than 100 levels deep."),
    ],
    ids=["missing-value", "single-quotes", "trailing-data", "nan", "too-deep"],
)  # fmt: skip
def test_invalid_json_is_refused_with_its_position(run, source, message):
    with pytest.raises(EngineError) as caught:
        run("json-formatter", json=source)
    assert caught.value.message == message


# --- JavaScript --------------------------------------------------------------------------


def test_javascript_braces_can_be_expanded(run):
    result = run(
        "javascript-beautifier", code="if(a){b()}else{c()}", brace_style="expand", indent_size=4
    )
    assert result == {
        "formatted": "if (a)\n{\n    b()\n}\nelse\n{\n    c()\n}",
        "lines": 8,
    }


def test_javascript_blank_lines_can_be_removed(run):
    assert run("javascript-beautifier", code="a();\n\n\n\nb();", max_preserve_newlines=0) == {
        "formatted": "a();\nb();",
        "lines": 2,
    }


@pytest.mark.parametrize(
    "slug, code", [("javascript-beautifier", "{" * 101), ("python-formatter", "x = " + "[" * 101)]
)
def test_formatters_refuse_code_nested_over_100_levels(run, slug, code):
    with pytest.raises(EngineError) as caught:
        run(slug, code=code)
    assert caught.value.message == "The code is nested more than 100 levels deep."


def test_formatted_output_over_a_million_characters_is_refused(run):
    code = "{" * 100 + "a;\n" * 30000
    with pytest.raises(EngineError) as caught:
        run("javascript-beautifier", code=code)
    assert caught.value.message == (
        "The formatted result would be 6,100,099 characters, over the 1,000,000 limit; use "
        "less indentation or send less code."
    )


def test_javascript_can_indent_with_tabs(run):
    result = run("javascript-beautifier", code="function f(){return 1}", indent_with_tabs=True)
    assert result["formatted"] == "function f() {\n\treturn 1\n}"


# --- Python ------------------------------------------------------------------------------


def test_python_long_calls_are_wrapped_at_the_line_length(run):
    code = "result = some_function(argument_one, argument_two, argument_three)\n"
    assert run("python-formatter", code=code, line_length=40) == {
        "formatted": (
            "result = some_function(\n    argument_one,\n    argument_two,\n"
            "    argument_three,\n)\n"
        ),
        "changed": True,
    }


def test_python_already_formatted_code_is_unchanged(run):
    assert run("python-formatter", code="x = 1\n") == {"formatted": "x = 1\n", "changed": False}


def test_python_string_normalization_can_be_skipped(run):
    result = run("python-formatter", code="x = {'a':1}\n", skip_string_normalization=True)
    assert result["formatted"] == "x = {'a': 1}\n"


def test_python_syntax_errors_name_line_and_column(run):
    with pytest.raises(EngineError) as caught:
        run("python-formatter", code="x = 1\ndef f(:\n    pass\n")
    assert caught.value.message == "Invalid Python syntax at line 2, column 6."
