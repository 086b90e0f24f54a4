"""The encoding engine (convert.encoding), run through its catalogue tools."""

import pytest

from engines import EngineError


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
