"""The convert.data engine's CSV, Markdown and HTML table jobs, run through their tools."""

import json

import pytest

from engines import EngineError


def test_invalid_json_names_line_and_column(run):
    with pytest.raises(EngineError, match=r"line 2, column 9: Expecting ',' delimiter"):
        run("json-to-csv", json='[{"a": 1,\n "b": 2 "c": 3}]')


def test_json_to_csv_flattens_and_unions_columns(run):
    out = run("json-to-csv", json='[{"a": {"b": 1}, "t": ["x", "y"]}, {"c": true, "a": {"b": 2}}]')
    assert out["columns"] == ["a.b", "t.0", "t.1", "c"]
    assert out["csv"] == "a.b,t.0,t.1,c\n1,x,y,\n2,,,true\n"


def test_json_to_csv_refuses_items_that_are_not_objects(run):
    with pytest.raises(EngineError, match="Item 2 is number"):
        run("json-to-csv", json='[{"a": 1}, 5]')


def test_csv_to_json_infers_types_but_keeps_leading_zeros(run):
    out = run("csv-to-json", csv="id,zip,ok,score,note\n1,007,TRUE,2.5,\n", indent=0)
    assert json.loads(out["json"]) == [
        {"id": 1, "zip": "007", "ok": True, "score": 2.5, "note": None}
    ]


def test_csv_to_json_without_header_gives_arrays_of_text(run):
    out = run("csv-to-json", csv="a\tb\n1\t2\n", header=False, infer_types=False, indent=0)
    assert out == {"json": '[["a","b"],["1","2"]]', "rows": 2, "columns": None}


def test_csv_header_names_are_made_unique(run):
    out = run("csv-to-json", csv="x,x,\n1,2,3\n", indent=0)
    assert out["columns"] == ["x", "x_2", "column_3"]


def test_csv_row_longer_than_header_is_named(run):
    with pytest.raises(EngineError, match="Row 3 has 3 fields but the header has 2"):
        run("csv-to-json", csv="a,b\n1,2\n1,2,3\n")


def test_markdown_tables_pad_wide_characters(run):
    out = run("markdown-table-formatter", markdown="|a|b|\n|-|-|\n|漢字|x|")
    assert out["markdown"] == "| a    | b   |\n| ---- | --- |\n| 漢字 | x   |"


def test_markdown_table_needs_a_separator_line(run):
    with pytest.raises(EngineError, match="Line 2 must be the separator line"):
        run("markdown-table-formatter", markdown="|a|b|\n|1|2|")


def test_csv_to_markdown_without_header_and_centered(run):
    out = run("csv-to-markdown-table", csv="x,y\n", header=False, align="center")
    assert out == {
        "markdown": "| Column 1 | Column 2 |\n| :------: | :------: |\n|    x     |    y     |",
        "rows": 1,
        "columns": 2,
    }


def test_html_table_to_csv_picks_a_table_and_reports_a_missing_one(run):
    html = "<table><tr><td>a</td></tr></table><table><tr><th>b</th><td>c<br>d</td></tr></table>"
    out = run("html-table-to-csv", html=html, table=2)
    assert out == {"csv": "b,c d\n", "rows": 0, "columns": 2, "tables_found": 2}
    with pytest.raises(EngineError, match="Table 3 does not exist: the HTML has 2"):
        run("html-table-to-csv", html=html, table=3)
