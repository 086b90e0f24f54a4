"""Code engines: SQL, JSON, JavaScript and Python formatters, cron, highlighting, Markdown."""

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


# --- cron --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "expression, description",
    [
        ("*/15 * * * *", "Every 15 minutes"),
        ("0 14 1 * *", "At 02:00 PM, on day 1 of the month"),
        ("0 9-17/2 * JAN-MAR MON-FRI", "Every 2 hours, between 09:00 AM and 05:59 PM, Monday "
         "through Friday, January through March"),
        ("0 0 * * MON#2", "At 12:00 AM, on the second Monday of the month"),
        ("0 0 L * *", "At 12:00 AM, on the last day of the month"),
    ],
)  # fmt: skip
def test_cron_expressions_are_explained(run, expression, description):
    assert run("cron-expression-explainer", expression=expression)["description"] == description


def test_cron_macros_are_expanded(run):
    assert run("cron-expression-explainer", expression="@weekly") == {
        "expression": "0 0 * * 0",
        "description": "At 12:00 AM, only on Sunday",
        "fields": {
            "minute": "0",
            "hour": "0",
            "day_of_month": "*",
            "month": "*",
            "day_of_week": "0",
        },
    }


def test_cron_times_can_use_24_hours(run):
    result = run("cron-expression-explainer", expression="0 14 * * *", use_24_hour_time=True)
    assert result["description"] == "At 14:00"


def test_cron_verbose_spells_out_every_day(run):
    result = run("cron-expression-explainer", expression="0 14 * * *", verbose=True)
    assert result["description"] == "At 02:00 PM, every day"


@pytest.mark.parametrize(
    "expression, message",
    [
        ("61 * * * *", "Minute: 61 is out of range 0-59."),
        ("0 24 * * *", "Hour: 24 is out of range 0-23."),
        ("0 0 32 * *", "Day of month: 32 is out of range 1-31."),
        ("0 0 * 13 *", "Month: 13 is out of range 1-12."),
        ("0 0 * * 8", "Day of week: 8 is out of range 0-7."),
        ("5-1 * * * *", "Minute: the range 5-1 runs backwards."),
        ("*/0 * * * *", "Minute: step 0 must be between 1 and 59."),
        ("x * * * *", "Minute: 'X' is not a valid value."),
        ("? * * * *", "Minute: '?' is only allowed for the day fields."),
        ("* * *", "A cron expression has 5 fields (minute, hour, day of month, month, day of "
         "week); this one has 3."),
        ("@reboot", "@reboot runs once when cron starts; it has no schedule to explain."),
        ("@often", "Unknown cron macro '@often'."),
    ],
)  # fmt: skip
def test_invalid_cron_expressions_are_refused_field_by_field(run, expression, message):
    with pytest.raises(EngineError) as caught:
        run("cron-expression-explainer", expression=expression)
    assert caught.value.message == message


# --- syntax highlighting -----------------------------------------------------------------


def test_code_is_highlighted_as_html(run):
    result = run("syntax-highlighter", code="def f(x):\n    return x\n")
    assert result["language"] == "Python" and result["css"] is None
    assert result["html"].startswith(
        '<div class="highlight"><pre><span></span><code><span class="k">def</span>'
    )


def test_highlighting_can_return_the_theme_css_and_line_numbers(run):
    result = run(
        "syntax-highlighter", code="a = 1\n", language="py", style="monokai", line_numbers=True,
        include_css=True,
    )  # fmt: skip
    assert '<td class="linenos">' in result["html"]
    assert ".highlight .k { color: #66D9EF }" in result["css"]


def test_highlighting_refuses_an_unknown_language(run):
    with pytest.raises(EngineError) as caught:
        run("syntax-highlighter", code="x", language="klingon")
    assert caught.value.message == "Unknown language 'klingon'."


# --- Markdown ----------------------------------------------------------------------------


def test_markdown_is_converted_with_tables(run):
    result = run("markdown-to-html", markdown="# Hi\n\n| a |\n|---|\n| 1 |")
    assert result["html"] == (
        "<h1>Hi</h1>\n<table>\n<thead>\n<tr>\n<th>a</th>\n</tr>\n</thead>\n<tbody>\n<tr>\n"
        "<td>1</td>\n</tr>\n</tbody>\n</table>"
    )


def test_safe_markdown_escapes_html_and_drops_unsafe_links(run):
    markdown = (
        "Hi <script>alert(1)</script> [x](javascript:alert(1)) [y](https://a.b/c) "
        "![i](data:image/png;base64,xx)"
    )
    assert run("markdown-to-html", markdown=markdown)["html"] == (
        "<p>Hi &lt;script&gt;alert(1)&lt;/script&gt; <a>x</a> "
        '<a href="https://a.b/c">y</a> <img alt="i"></p>'
    )


def test_safe_markdown_drops_event_handler_attributes(run):
    result = run(
        "markdown-to-html", markdown='[x](/a){: onclick="alert(1)" title="t"}',
        extensions=["attr_list"],
    )  # fmt: skip
    assert result["html"] == '<p><a href="/a" title="t">x</a></p>'


def test_unsafe_markdown_keeps_raw_html(run):
    result = run("markdown-to-html", markdown="Hi <b>bold</b>", safe=False)
    assert result["html"] == "<p>Hi <b>bold</b></p>"


@pytest.mark.parametrize("markdown", ["[" * 1500, "[x](" * 1000, ("[" * 100 + "\n\n") * 300])
def test_markdown_with_thousands_of_unclosed_brackets_is_refused(run, markdown):
    # Python-Markdown takes quadratic time on these (30,000 "[" took 95 s).
    with pytest.raises(EngineError, match="too many unclosed"):
        run("markdown-to-html", markdown=markdown)


def test_markdown_with_many_closed_links_is_converted(run):
    markdown = "\n".join(f"- [link {i}](https://example.com/{i})" for i in range(2500))
    assert run("markdown-to-html", markdown=markdown)["html"].count("<a href=") == 2500


def test_markdown_nested_too_deeply_is_refused(run):
    with pytest.raises(EngineError, match="^The Markdown is nested too deeply to convert.$"):
        run("markdown-to-html", markdown="- " * 5000 + "x")


def test_markdown_extensions_can_be_chosen(run):
    result = run("markdown-to-html", markdown="# A\n\n[TOC]", extensions=["toc"])
    assert result["html"] == (
        '<h1 id="a">A</h1>\n<div class="toc">\n<ul>\n<li><a href="#a">A</a></li>\n</ul>\n</div>'
    )
