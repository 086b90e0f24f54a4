"""The converter engines (engines/convert.py), run through their catalogue tools."""

import json

import pytest

from engines import EngineError, convert

# --- data formats ------------------------------------------------------------------------


def test_json_to_yaml_keeps_order_and_unicode(run):
    out = run("json-to-yaml", json='{"b": [1, {"c": null}], "a": "Grüße", "e": {}}')
    assert out["yaml"] == "b:\n- 1\n- c: null\na: Grüße\ne: {}\n"


def test_json_to_yaml_and_back_round_trips(run):
    source = {"name": "api", "ports": [80, 443], "nested": {"list": [], "flag": True, "n": 1.5}}
    text = run("json-to-yaml", json=json.dumps(source), sort_keys=True)["yaml"]
    back = run("yaml-to-json", yaml=text)
    assert json.loads(back["json"]) == source
    assert back["documents"] == 1


def test_yaml_to_json_reads_several_documents_into_an_array(run):
    out = run("yaml-to-json", yaml="a: 1\n---\nb: 2000-01-02\n", indent=0)
    assert out == {"json": '[{"a":1},{"b":"2000-01-02"}]', "documents": 2}


def test_yaml_syntax_errors_give_line_and_column(run):
    with pytest.raises(EngineError, match=r"line 2, column 4: mapping values"):
        run("yaml-to-json", yaml="a: 1\n  b: 2\n")


def test_yaml_alias_bomb_is_refused(run):
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
    for level in "bcdefg":
        previous = chr(ord(level) - 1)
        bomb += f"{level}: &{level} [*{previous}, *{previous}, *{previous}, *{previous}, *{previous}, *{previous}, *{previous}, *{previous}, *{previous}, *{previous}]\n"  # noqa: E501
    with pytest.raises(EngineError, match="more than 100,000 values"):
        run("yaml-to-json", yaml=bomb)


def test_deeply_nested_json_is_refused(run):
    with pytest.raises(EngineError, match="nested more than 64 levels"):
        run("json-to-yaml", json="[" * 70 + "]" * 70)


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


def test_xml_to_json_and_back_round_trips(run):
    xml = '<r a="1"><i>x</i><i>y</i><e/><t k="v">text</t></r>'
    data = run("xml-to-json", xml=xml, indent=0)
    assert json.loads(data["json"]) == {
        "r": {"@a": "1", "i": ["x", "y"], "e": None, "t": {"@k": "v", "#text": "text"}}
    }
    back = run("json-to-xml", json=data["json"], indent=0, declaration=False)
    assert back == {"xml": xml.replace("<e/>", "<e />"), "root": "r"}


def test_xml_doctype_is_refused(run):
    bomb = '<!DOCTYPE r [<!ENTITY a "aaaa">]><r>&a;</r>'
    with pytest.raises(EngineError, match="DOCTYPE declarations are not accepted"):
        run("xml-to-json", xml=bomb)


def test_malformed_xml_names_line_and_column(run):
    with pytest.raises(EngineError, match=r"line 2, column 3: mismatched tag"):
        run("xml-formatter", xml="<a>\n</b>")


def test_json_to_xml_wraps_arrays_and_rejects_bad_names(run):
    out = run("json-to-xml", json='[1, "two"]', root="list", indent=0, declaration=False)
    assert out["xml"] == "<list><item>1</item><item>two</item></list>"
    with pytest.raises(EngineError, match="'1st' cannot be an XML element"):
        run("json-to-xml", json='{"1st": 1, "b": 2}')


def test_xml_formatter_minifies_and_strips_comments(run):
    out = run(
        "xml-formatter", xml="<a>\n  <!-- c -->\n  <b>1</b>\n</a>", indent=0, strip_comments=True
    )
    assert out == {"xml": "<a><b>1</b></a>", "elements": 2}


def test_toml_to_json_and_its_errors(run):
    out = run("toml-to-json", toml="x = 1979-05-27T07:32:00Z\n[t]\ny = [1, 2]\n", indent=0)
    assert out == {"json": '{"x":"1979-05-27T07:32:00+00:00","t":{"y":[1,2]}}', "keys": ["x", "t"]}
    with pytest.raises(EngineError, match=r"Invalid value \(at line 1, column 4\)"):
        run("toml-to-json", toml="a =\n")


def test_ini_to_json_and_a_key_outside_sections(run):
    out = run("ini-to-json", ini="[s]\nKey = on\nn = 5\n", indent=0)
    assert out == {"json": '{"s":{"Key":"on","n":"5"}}', "sections": ["s"]}
    with pytest.raises(EngineError, match="Line 1: 'a = 1' comes before any"):
        run("ini-to-json", ini="a = 1\n[s]\n")


def test_env_parsing_quotes_escapes_and_expansion(run):
    env = "A=1\nB=\"x\\ny ${A}\"\nC='$A'\nD=${MISSING:-dflt} # note\n"
    out = run("env-file-to-json", env=env, indent=0)
    assert json.loads(out["json"]) == {"A": "1", "B": "x\ny 1", "C": "$A", "D": "dflt"}
    assert run("env-file-to-json", env=env, expand=False, indent=0)["json"].count("${A}") == 1


def test_env_unclosed_quote_is_named(run):
    with pytest.raises(EngineError, match='Line 2: the " quote is not closed'):
        run("env-file-to-json", env='A=1\nB="open\n')


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


# --- JSON tools --------------------------------------------------------------------------


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
    monkeypatch.setattr(convert, "_REGEX_TIMEOUT", 0.05)
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


# --- encodings, digests ------------------------------------------------------------------


@pytest.mark.parametrize("alphabet", ["standard", "url-safe"])
def test_base64_round_trips_unicode(run, alphabet):
    text = "ü?>~ 😀"
    encoded = run("base64-encoder-decoder", text=text, alphabet=alphabet, padding=False)
    assert "=" not in encoded["result"]
    decoded = run(
        "base64-encoder-decoder", text=encoded["result"], direction="decode", alphabet=alphabet
    )
    assert decoded == {"result": text, "bytes": 10}


def test_base64_decoding_binary_or_bad_input_is_explained(run):
    with pytest.raises(EngineError, match="not UTF-8 text \\(starts with ff fe\\)"):
        run("base64-encoder-decoder", text="//4=", direction="decode")
    with pytest.raises(EngineError, match="it contains '\\*'"):
        run("base64-encoder-decoder", text="ab*c", direction="decode")


def test_url_encoding_modes_and_decoding(run):
    assert run("url-encoder-decoder", text="a b/c", mode="form")["result"] == "a+b%2Fc"
    assert run("url-encoder-decoder", text="a b/c", mode="path")["result"] == "a%20b/c"
    decoded = run("url-encoder-decoder", text="a+b%C3%A9", direction="decode", mode="form")
    assert decoded["result"] == "a bé"
    with pytest.raises(EngineError, match="not UTF-8"):
        run("url-encoder-decoder", text="%FF", direction="decode")


def test_html_entities_numeric_and_decoding(run):
    out = run("html-entity-encoder-decoder", text="é'😀", non_ascii="numeric")
    assert out["result"] == "&#xE9;&#x27;&#x1F600;"
    decoded = run(
        "html-entity-encoder-decoder", text="&lt;&eacute;&#x1F600;&amp;", direction="decode"
    )
    assert decoded["result"] == "<é😀&"


@pytest.mark.parametrize(
    ("target", "escaped"),
    [
        ("json", '"it\'s \\"x\\"\\n"'),
        ("python", "'it\\'s \"x\"\\n'"),
        ("sql", "'it''s \"x\"\n'"),
        ("shell", "'it'\"'\"'s \"x\"\n'"),
        ("csv", '"it\'s ""x""\n"'),
        ("regex", 'it\'s\\ "x"\\\n'),
    ],
)
def test_string_escaping_round_trips(run, target, escaped):
    text = 'it\'s "x"\n'
    assert run("string-escaper", text=text, target=target)["result"] == escaped
    back = run("string-escaper", text=escaped, target=target, direction="unescape")
    assert back["result"] == text


def test_string_unescape_refuses_what_is_not_one_literal(run):
    with pytest.raises(EngineError, match="2 shell words"):
        run("string-escaper", text="a b", target="shell", direction="unescape")
    with pytest.raises(EngineError, match="The Python literal is not a string"):
        run("string-escaper", text="'a', 'b'", target="python", direction="unescape")


def test_punycode_refuses_invalid_names(run):
    with pytest.raises(EngineError, match="is not a valid domain name"):
        run("punycode-converter", domains="bad_name!.com")


def test_hashes_in_base64_and_crc32(run):
    out = run("hash-generator", text="", algorithms=["crc32", "sha256"], encoding="base64")
    assert out["hashes"] == [
        {"algorithm": "crc32", "digest": "AAAAAA=="},
        {"algorithm": "sha256", "digest": "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="},
    ]
    assert out["matches"] is None


def test_hmac_matches_a_known_signature_and_rejects_a_bad_key(run):
    # RFC 4231 test case 2.
    expected = "5BDCC146BF60754E6A042426089575C75A003F089D2739839DEC58B964EC3843"
    out = run(
        "hmac-generator",
        message="what do ya want for nothing?",
        key="4a656665",
        key_encoding="hex",
        compare_with=expected,
    )
    assert out["matches"] is True
    with pytest.raises(EngineError, match="The key is not valid hex"):
        run("hmac-generator", message="m", key="zz", key_encoding="hex")


def test_uuid_v3_with_a_custom_namespace_is_deterministic(run):
    out = run("uuid-v5-generator", names="python.org", namespace="dns", version=3)
    assert out["uuids"] == [{"name": "python.org", "uuid": "6fa459ea-ee8a-3ca4-894e-db77e160355e"}]
    with pytest.raises(EngineError, match="is not a namespace"):
        run("uuid-v5-generator", names="x", namespace="nope")


def test_jwt_expiry_and_a_wrong_secret(run):
    token = load_example("jwt-decoder")["token"]
    out = run("jwt-decoder", token=f"Bearer {token}", secret="wrong", now="2025-03-14T11:00Z")
    assert (out["expired"], out["signature"]) == (True, "invalid")
    with pytest.raises(EngineError, match="three parts"):
        run("jwt-decoder", token="abc.def")


def load_example(slug):
    from catalogue import load_catalogue

    return load_catalogue().get(slug).examples[0]["input"]


# --- web and network ---------------------------------------------------------------------


def test_url_parser_needs_a_scheme_and_a_valid_port(run):
    with pytest.raises(EngineError, match="has no scheme"):
        run("url-parser", url="example.com/path")
    with pytest.raises(EngineError, match="port is not a number"):
        run("url-parser", url="http://example.com:99999/")


def test_url_parser_default_port_and_ipv6_host(run):
    out = run("url-parser", url="http://[::1]/a")
    assert (out["host"], out["port"], out["explicit_port"]) == ("::1", 80, False)


def test_query_builder_with_plus_and_sorting(run):
    out = run("query-string-builder", params="b=x y\na=1\nb=2", spaces="plus", sort=True)
    assert out == {"query": "a=1&b=x+y&b=2", "url": None, "parameters": 3}
    with pytest.raises(EngineError, match="Line 1: write one name=value"):
        run("query-string-builder", params="novalue")


def test_http_status_by_code_class_and_unknown(run):
    assert run("http-status-code-lookup", query="429")["statuses"][0]["retryable"] is True
    assert len(run("http-status-code-lookup", query="1xx")["statuses"]) == 4
    with pytest.raises(EngineError, match="599 is not a registered"):
        run("http-status-code-lookup", query="599")


def test_mime_lookup_both_ways(run):
    assert run("mime-type-lookup", query="WEBP")["mime_type"] == "image/webp"
    assert ".jpg" in run("mime-type-lookup", query="image/jpeg")["extensions"]
    with pytest.raises(EngineError, match="No media type is known"):
        run("mime-type-lookup", query=".nosuchext")


def test_subnet_edge_cases(run):
    out = run("subnet-calculator", cidr="10.0.0.5/31")
    assert (out["first_host"], out["last_host"], out["usable_hosts"]) == (
        "10.0.0.4",
        "10.0.0.5",
        "2",
    )
    v6 = run("subnet-calculator", cidr="2001:db8::/32")
    assert v6["total_addresses"] == str(2**96) and v6["broadcast_address"] is None
    with pytest.raises(EngineError, match="splits into 65,536"):
        run("subnet-calculator", cidr="10.0.0.0/8", split_prefix=24)
    with pytest.raises(EngineError, match="not an IP network"):
        run("subnet-calculator", cidr="10.0.0.300/24")


def test_ip_inspector_for_ipv6_loopback(run):
    out = run("ip-address-inspector", ip="::1")
    assert out["loopback"] is True and out["reverse_pointer"].endswith(".ip6.arpa")


# --- dates and times ---------------------------------------------------------------------


def test_timestamp_from_a_date_and_unknown_zone(run):
    out = run("unix-timestamp-converter", value="2000-01-01T00:00:00+01:00")
    assert (out["unix_seconds"], out["utc"], out["detected_unit"]) == (
        946681200,
        "1999-12-31T23:00:00Z",
        None,
    )
    with pytest.raises(EngineError, match="Unknown time zone 'Mars/Base'"):
        run("unix-timestamp-converter", value="0", timezone="Mars/Base")
    with pytest.raises(EngineError, match="outside the years 1 to 9999"):
        run("unix-timestamp-converter", value="1e30", unit="seconds")


def test_time_zone_conversion_across_the_date_line_and_a_dst_gap(run):
    out = run("time-zone-converter", datetime="2025-01-01T23:30", to_zones="Pacific/Kiritimati")
    assert out["conversions"][0]["day_shift"] == 1
    with pytest.raises(EngineError, match="does not exist in Europe/Paris"):
        run("time-zone-converter", datetime="2025-03-30T02:30", from_zone="Europe/Paris")


def test_date_difference_backwards_and_month_end(run):
    out = run("date-difference-calculator", start="2024-03-31", end="2024-02-29")
    assert out["calendar"]["months"] == -1 and out["calendar"]["days"] == -2
    assert out["total_days"] == -31
    assert out["business_days"] == -22


def test_date_add_subtracting_and_fractional_months(run):
    out = run("date-calculator", start="2024-03-31T10:00", duration="P1M", subtract=True)
    assert out["datetime"] == "2024-02-29T10:00:00+00:00"
    with pytest.raises(EngineError, match="must be whole numbers"):
        run("date-calculator", start="2024-01-01", duration="P1.5M")


def test_duration_from_seconds_and_calendar_durations(run):
    out = run("iso-duration-converter", duration="93784", use_days=False)
    assert (out["iso"], out["total_seconds"]) == ("PT26H3M4S", 93784)
    months = run("iso-duration-converter", duration="-P1Y2M")
    assert months["total_seconds"] is None and months["description"] == "minus 1 year, 2 months"
    with pytest.raises(EngineError, match="is not an ISO 8601 duration"):
        run("iso-duration-converter", duration="PT")


def test_cron_runs_cross_a_dst_change_and_refuse_impossible_dates(run):
    out = run(
        "cron-next-run-times",
        expression="0 1 * * *",
        start="2025-03-29T12:00",
        timezone="Europe/Paris",
        count=2,
    )
    assert out["runs"] == ["2025-03-30T01:00:00+01:00", "2025-03-31T01:00:00+02:00"]
    with pytest.raises(EngineError, match="never matches a real date"):
        run("cron-next-run-times", expression="0 0 30 2 *", start="2025-01-01")
    with pytest.raises(EngineError, match="Invalid cron expression"):
        run("cron-next-run-times", expression="61 * * * *", start="2025-01-01")


# --- numbers, units, colours -------------------------------------------------------------


def test_number_base_with_explicit_base_and_bad_digits(run):
    out = run("number-base-converter", value="-z", from_base=36, to_base=2)
    assert (out["decimal"], out["converted"]) == ("-35", "-100011")
    with pytest.raises(EngineError, match="not a base-2 number"):
        run("number-base-converter", value="102", from_base=2)


def test_roman_numerals_suggest_the_standard_form(run):
    assert run("roman-numeral-converter", value="3999")["roman"] == "MMMCMXCIX"
    with pytest.raises(EngineError, match="Did you mean IV \\(4\\)"):
        run("roman-numeral-converter", value="iiii")


def test_unit_conversion_of_temperature_and_mismatched_kinds(run):
    out = run("unit-converter", value=-40, from_unit="°C", to_unit="fahrenheit")
    assert out["conversions"] == [{"unit": "F", "name": "degree Fahrenheit", "value": -40}]
    with pytest.raises(EngineError, match="Cannot convert length \\(m\\) to mass"):
        run("unit-converter", value=1, from_unit="m", to_unit="kg")
    with pytest.raises(EngineError, match="below absolute zero"):
        run("unit-converter", value=-1, from_unit="K")


def test_byte_sizes_binary_units_and_bits(run):
    assert run("byte-size-converter", size="20 MiB")["bytes"] == 20 * 1024**2
    assert run("byte-size-converter", size="100 Mbit")["bytes"] == 12_500_000
    assert run("byte-size-converter", size="1 KB", kb_means=1024)["binary"] == "1.00 KiB"
    with pytest.raises(EngineError, match="is not a size"):
        run("byte-size-converter", size="lots")


def test_colour_parsing_of_names_alpha_and_cmyk(run):
    out = run("color-converter", color="RebeccaPurple")
    assert (out["hex"], out["css_names"]) == ("#663399", ["rebeccapurple"])
    assert run("color-converter", color="#f008")["rgb"] == "rgb(255 0 0 / 53.3%)"
    assert run("color-converter", color="cmyk(0%, 100%, 100%, 0%)")["hex"] == "#ff0000"
    with pytest.raises(EngineError, match="is not a colour"):
        run("color-converter", color="blurple")


def test_contrast_extremes_and_translucent_text(run):
    assert run("color-contrast-checker", foreground="black")["ratio"] == 21
    half = run("color-contrast-checker", foreground="rgb(0 0 0 / 0%)")
    assert half["ratio"] == 1 and half["ui_components"] is False
    with pytest.raises(EngineError, match="background must be opaque"):
        run("color-contrast-checker", foreground="black", background="#fff0")


def test_palette_tints_start_at_the_base_and_lighten(run):
    out = run("color-palette-generator", color="#000000", scheme="tints", count=3)
    assert out["colors"] == ["#000000", "#404040", "#808080"]


# --- minifiers and developer text --------------------------------------------------------


def test_html_minifier_keeps_inline_spacing_and_non_js_scripts(run):
    html = '<p>a <b>b</b>\n <i>c</i></p><script type="text/template"> <b>  x </b> </script>'
    out = run("html-minifier", html=html)
    assert out["minified"] == (
        '<p>a <b>b</b> <i>c</i></p><script type="text/template"> <b>  x </b> </script>'
    )


def test_html_minifier_keeps_conditional_comments_and_escapes_attributes(run):
    out = run("html-minifier", html='<!--[if IE]>x<![endif]--><a title="&quot;q&quot;">x</a>')
    assert out["minified"] == '<!--[if IE]>x<![endif]--><a title="&quot;q&quot;">x</a>'


def test_js_and_css_minifiers_drop_license_comments_on_request(run):
    assert (
        run("javascript-minifier", code="/*! L */ var a = 1;", keep_license_comments=False)[
            "minified"
        ]
        == "var a=1;"
    )
    assert (
        run("css-minifier", css="/*! L */ a { b : c }", keep_license_comments=False)["minified"]
        == "a{b:c}"
    )


def test_text_diff_of_identical_texts_and_ignored_whitespace(run):
    assert run("text-diff-checker", original="a\nb", changed="a\nb")["diff"] == ""
    out = run("text-diff-checker", original="a  b\nc", changed="a b\nc", ignore_whitespace=True)
    assert out["identical"] is True


def test_text_diff_of_an_empty_original(run):
    out = run("text-diff-checker", original="", changed="x\ny")
    assert out["diff"] == "--- original\n+++ changed\n@@ -0,0 +1,2 @@\n+x\n+y"


def test_regex_tester_limits_matches_and_reports_bad_patterns(run):
    out = run("regex-tester", pattern=r"\d", text="a1b2c3", max_matches=2)
    assert [m["match"] for m in out["matches"]] == ["1", "2"] and out["truncated"] is True
    with pytest.raises(EngineError, match="invalid at position"):
        run("regex-tester", pattern="(unclosed", text="x")
    with pytest.raises(EngineError, match="The replacement is invalid"):
        run("regex-tester", pattern="a", text="a", replacement=r"\9")


def test_regex_tester_stops_catastrophic_backtracking(run, monkeypatch):
    monkeypatch.setattr(convert, "_REGEX_TIMEOUT", 0.05)
    with pytest.raises(EngineError, match="catastrophic backtracking"):
        run("regex-tester", pattern="^(a|aa)+$", text="a" * 40 + "!")


def test_regex_tester_optional_group_that_did_not_take_part(run):
    out = run("regex-tester", pattern="a(b)?", text="a", flags=["ignorecase"])
    assert out["matches"][0]["groups"] == [
        {"group": 1, "name": None, "value": None, "start": None, "end": None}
    ]


def test_identifier_cases_with_unicode_and_no_letters(run):
    out = run("identifier-case-converter", identifiers="ÉtéCafé", target="kebab")
    assert out["converted"] == "été-café"
    with pytest.raises(EngineError, match="has no letters or digits"):
        run("identifier-case-converter", identifiers="---")


@pytest.mark.parametrize(
    ("version", "bump", "expected"),
    [
        ("1.2.3", "patch", "1.2.4"),
        ("1.2.3", "major", "2.0.0"),
        ("2.0.0-rc.1", "major", "2.0.0"),
        ("1.2.3-rc.1", "prerelease", "1.2.3-rc.2"),
        ("1.2.3", "prerelease", "1.2.4-rc.0"),
        ("1.2.3-beta", "prerelease", "1.2.3-rc.0"),
    ],
)
def test_semver_bumps(run, version, bump, expected):
    assert run("semantic-version-calculator", versions=version, bump=bump)["next"] == expected


def test_semver_precedence_of_prerelease_identifiers_and_bad_versions(run):
    out = run(
        "semantic-version-calculator", versions="1.0.0-alpha.beta\n1.0.0-alpha.1\n1.0.0-alpha"
    )
    assert out["sorted"] == ["1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta"]
    with pytest.raises(EngineError, match="'1.2' is not a semantic version"):
        run("semantic-version-calculator", versions="1.2")
