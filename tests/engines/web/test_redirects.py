"""``seo.redirects`` (engines/web/redirects.py), run through its catalogue tools."""

import pytest

from engines import EngineError

# --- seo.redirects -----------------------------------------------------------------------


def test_redirects_for_apache_match_exact_paths(run):
    out = run("redirect-rules-generator", rules="https://e.com/old.html /new 308\n/a /a")
    assert out["config"].splitlines()[1] == r"RedirectMatch 308 ^/old\.html/?$ /new"
    assert out["warnings"] == ["Line 2: /a redirects to itself; skipped."]


def test_redirects_for_netlify(run):
    out = run("redirect-rules-generator", rules="/a /b\n/long-path /c", server="netlify")
    assert out["config"] == "/a          /b  301\n/long-path  /c  301\n"


@pytest.mark.parametrize(
    "rules", ["/a", "/a /b 404", "/search?q=x /find"]
)  # fmt: skip
def test_redirects_refuse_malformed_lines(run, rules):
    with pytest.raises(EngineError, match="Line 1"):
        run("redirect-rules-generator", rules=rules)
