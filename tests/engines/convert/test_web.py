"""The web and network engine (convert.web), run through its catalogue tools."""

import pytest

from engines import EngineError


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
