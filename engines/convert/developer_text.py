"""Developer text (convert.devtext): diffs, regex testing, identifier cases, semver."""

from __future__ import annotations

import re
from typing import Any

from engines.base import ChoiceEngine, EngineError
from engines.convert._helpers import _REGEX_TIMEOUT, _bounded

_MAX_DIFF_LINES = 5_000


def _text_diff(inputs: dict[str, Any]) -> dict[str, Any]:
    import difflib

    def lines(text: str, what: str) -> list[str]:
        result = text.splitlines()
        if len(result) > _MAX_DIFF_LINES:
            raise EngineError(f"The {what} text has more than {_MAX_DIFF_LINES:,} lines.")
        return result

    old, new = lines(inputs["original"], "original"), lines(inputs["changed"], "changed")
    if inputs["ignore_whitespace"]:
        normal_old = [" ".join(line.split()) for line in old]
        normal_new = [" ".join(line.split()) for line in new]
    else:
        normal_old, normal_new = old, new
    matcher = difflib.SequenceMatcher(None, normal_old, normal_new, autojunk=False)
    groups = list(matcher.get_grouped_opcodes(inputs["context_lines"]))
    diff = ["--- original", "+++ changed"] if groups else []
    added = removed = 0
    for group in groups:
        first, last = group[0], group[-1]
        diff.append(f"@@ -{_diff_range(first[1], last[2])} +{_diff_range(first[3], last[4])} @@")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                diff.extend(f" {line}" for line in old[i1:i2])
                continue
            diff.extend(f"-{line}" for line in old[i1:i2])
            diff.extend(f"+{line}" for line in new[j1:j2])
            removed += i2 - i1
            added += j2 - j1
    return {
        "identical": not groups,
        "diff": "\n".join(diff),
        "added_lines": added,
        "removed_lines": removed,
        "hunks": len(groups),
    }


def _diff_range(start: int, stop: int) -> str:
    """A unified diff range, as difflib writes it."""
    length = stop - start
    beginning = start + 1 if length else start
    return f"{beginning}" if length == 1 else f"{beginning},{length}"


_REGEX_FLAGS = ("ignorecase", "multiline", "dotall", "verbose", "ascii")
_MAX_MATCH_CHARS = 200_000


def _regex_test(inputs: dict[str, Any]) -> dict[str, Any]:
    import regex

    flags = 0
    for name in inputs["flags"]:
        flags |= getattr(regex, name.upper())
    try:
        pattern = regex.compile(inputs["pattern"], flags | regex.VERSION0)
    except regex.error as error:
        where = f" at position {error.pos}" if error.pos is not None else ""
        raise EngineError(f"The pattern is invalid{where}: {error.msg}.") from None
    text = inputs["text"]
    matches: list[dict[str, Any]] = []
    budget = _MAX_MATCH_CHARS
    truncated = False
    names = {index: name for name, index in pattern.groupindex.items()}
    try:
        for match in pattern.finditer(text, timeout=_REGEX_TIMEOUT):
            budget -= len(match.group()) + sum(len(g or "") for g in match.groups())
            if len(matches) == inputs["max_matches"] or budget < 0:
                truncated = True
                break
            matches.append(
                {
                    "match": match.group(),
                    "start": match.start(),
                    "end": match.end(),
                    "groups": [
                        {
                            "group": index,
                            "name": names.get(index),
                            "value": match.group(index),
                            "start": match.start(index) if match.group(index) is not None else None,
                            "end": match.end(index) if match.group(index) is not None else None,
                        }
                        for index in range(1, pattern.groups + 1)
                    ],
                }
            )
        replaced = None
        if inputs["replacement"] is not None:
            replaced = _bounded(pattern.sub(inputs["replacement"], text, timeout=_REGEX_TIMEOUT))
    except TimeoutError:
        raise EngineError(
            "The pattern takes too long on this text (catastrophic backtracking); avoid nested "
            "quantifiers such as (a+)+."
        ) from None
    except (regex.error, IndexError) as error:
        raise EngineError(f"The replacement is invalid: {error}.") from None
    return {"count": len(matches), "truncated": truncated, "matches": matches, "replaced": replaced}


def _words(identifier: str) -> list[str]:
    """An identifier in any case style as lowercase words (``HTTPServer2`` -> http, server2)."""
    import regex

    found = regex.findall(
        r"\p{Lu}+(?=\p{Lu}\p{Ll})|\p{Lu}?\p{Ll}+\d*|\p{Lu}+\d*|\p{Lo}+\d*|\d+", identifier
    )
    return [word.lower() for word in found]


_CASES = {
    "camel": lambda w: w[0] + "".join(x.capitalize() for x in w[1:]),
    "pascal": lambda w: "".join(x.capitalize() for x in w),
    "snake": lambda w: "_".join(w),
    "constant": lambda w: "_".join(w).upper(),
    "kebab": lambda w: "-".join(w),
    "train": lambda w: "-".join(x.capitalize() for x in w),
    "dot": lambda w: ".".join(w),
    "title": lambda w: " ".join(x.capitalize() for x in w),
}


def _case_convert(inputs: dict[str, Any]) -> dict[str, Any]:
    lines = [line.strip() for line in inputs["identifiers"].splitlines() if line.strip()]
    if len(lines) > 1000:
        raise EngineError(f"Give at most 1,000 identifiers; there are {len(lines):,}.")
    results = []
    for line in lines:
        words = _words(line)
        if not words:
            raise EngineError(f"'{line}' has no letters or digits to build an identifier from.")
        results.append({"input": line, **{case: make(words) for case, make in _CASES.items()}})
    target = inputs["target"]
    return {"converted": "\n".join(r[target] for r in results), "identifiers": results}


_SEMVER_RE = re.compile(
    r"v?(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?"
)


def _semver(text: str) -> dict[str, Any]:
    match = _SEMVER_RE.fullmatch(text.strip())
    if not match:
        raise EngineError(
            f"'{text.strip()}' is not a semantic version such as 1.4.2, 2.0.0-rc.1 or "
            "1.0.0+build.5."
        )
    major, minor, patch, pre, build = match.groups()
    return {
        "version": text.strip().removeprefix("v"),
        "major": int(major),
        "minor": int(minor),
        "patch": int(patch),
        "prerelease": pre,
        "build": build,
    }


def _precedence(version: dict[str, Any]) -> tuple[Any, ...]:
    """Sort key of semver precedence: a release outranks its pre-releases; build is ignored."""
    core = (version["major"], version["minor"], version["patch"])
    if version["prerelease"] is None:
        return (*core, 1, ())
    identifiers = tuple(
        (0, int(part), "") if part.isdigit() else (1, 0, part)
        for part in version["prerelease"].split(".")
    )
    return (*core, 0, identifiers)


def _bump(version: dict[str, Any], part: str, tag: str) -> str:
    major, minor, patch = version["major"], version["minor"], version["patch"]
    pre = version["prerelease"]
    if part == "major":
        return f"{major if pre and minor == patch == 0 else major + 1}.0.0"
    if part == "minor":
        return f"{major}.{minor if pre and patch == 0 else minor + 1}.0"
    if part == "patch":
        return f"{major}.{minor}.{patch if pre else patch + 1}"
    # prerelease: next number of the same tag, or start the tag on the next patch
    if pre:
        head, _, last = pre.rpartition(".")
        if last.isdigit() and head == tag:
            return f"{major}.{minor}.{patch}-{tag}.{int(last) + 1}"
        if pre == tag:
            return f"{major}.{minor}.{patch}-{tag}.1"
        return f"{major}.{minor}.{patch}-{tag}.0"
    return f"{major}.{minor}.{patch + 1}-{tag}.0"


def _semver_tool(inputs: dict[str, Any]) -> dict[str, Any]:
    lines = [line for line in inputs["versions"].splitlines() if line.strip()]
    if len(lines) > 500:
        raise EngineError(f"Give at most 500 versions; there are {len(lines)}.")
    versions = [_semver(line) for line in lines]
    ordered = sorted(versions, key=_precedence)
    latest = ordered[-1]
    tag = inputs["prerelease_tag"]
    if not re.fullmatch(r"[0-9A-Za-z-]+", tag):
        raise EngineError("The pre-release tag may hold only letters, digits and hyphens.")
    return {
        "versions": versions,
        "sorted": [v["version"] for v in ordered],
        "latest": latest["version"],
        "next": _bump(latest, inputs["bump"], tag) if inputs["bump"] != "none" else None,
    }


class DeveloperTextEngine(ChoiceEngine):
    """Developer text utilities: diffs, regex testing, identifier cases, semantic versions."""

    name = "convert.devtext"
    requires = ("regex",)
    jobs = {
        "diff": _text_diff,
        "regex": _regex_test,
        "case": _case_convert,
        "semver": _semver_tool,
    }
