"""The convert.data engine's YAML, XML, TOML, INI and .env jobs, run through their tools."""

import json

import pytest

from engines import EngineError


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
