"""The developer text engine (convert.devtext), run through its catalogue tools."""

import pytest

from engines import EngineError
from engines.convert import developer_text


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
    monkeypatch.setattr(developer_text, "_REGEX_TIMEOUT", 0.05)
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
