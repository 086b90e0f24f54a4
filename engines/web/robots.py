"""``seo.robots``: robots.txt tested (RFC 9309, as Google reads it) and generated."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote, unquote, urlsplit

from engines.base import ChoiceEngine, EngineError
from engines.web._helpers import _absolute_url, _is_absolute, _lines

# --- seo.robots --------------------------------------------------------------------------

_DIRECTIVE_RE = re.compile(r"^\s*([A-Za-z-]+)\s*:\s*(.*?)\s*$")
_KNOWN_DIRECTIVES = {"user-agent", "allow", "disallow", "sitemap", "crawl-delay", "host"}


def _parse_robots(text: str) -> tuple[list[dict[str, Any]], list[str], list[str]]:
    """Groups (agents, rules, crawl delay), sitemap URLs and problems, per RFC 9309."""
    groups: list[dict[str, Any]] = []
    sitemaps: list[str] = []
    problems: list[str] = []
    current: dict[str, Any] | None = None
    last_was_agent = False
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0]
        if not line.strip():
            continue
        match = _DIRECTIVE_RE.match(line)
        if not match:
            problems.append(f'Line {number}: "{line.strip()}" is not "directive: value".')
            continue
        key, value = match.group(1).lower(), match.group(2)
        if key == "user-agent":
            if not last_was_agent:
                current = {"agents": [], "rules": [], "crawl_delay": None}
                groups.append(current)
            current["agents"].append(value.lower())
            last_was_agent = True
            continue
        last_was_agent = False
        if key == "sitemap":
            sitemaps.append(value)
        elif key in ("allow", "disallow"):
            if current is None:
                problems.append(
                    f"Line {number}: {match.group(1)} comes before any User-agent line."
                )
            elif value:
                current["rules"].append((key == "allow", value, number))
        elif key == "crawl-delay" and current is not None:
            try:
                current["crawl_delay"] = float(value)
            except ValueError:
                problems.append(f"Line {number}: Crawl-delay must be a number of seconds.")
        elif key not in _KNOWN_DIRECTIVES:
            problems.append(f'Line {number}: "{match.group(1)}" is not a robots.txt directive.')
    return groups, sitemaps, problems


def _pick_group(
    groups: list[dict[str, Any]], user_agent: str
) -> tuple[str | None, list[dict[str, Any]]]:
    """The groups of the most specific user-agent that matches (Google's rule), else '*'."""
    token = re.split(r"[/\s]", user_agent.strip().lower(), maxsplit=1)[0]
    names = {a for g in groups for a in g["agents"] if a != "*" and token.startswith(a)}
    best = (
        max(names, key=len) if names else ("*" if any("*" in g["agents"] for g in groups) else None)
    )
    return best, [g for g in groups if best in g["agents"]]


def _rule_regex(pattern: str) -> re.Pattern[str]:
    anchored = pattern.endswith("$")
    body = re.escape(pattern.rstrip("$") if anchored else pattern).replace(r"\*", ".*")
    return re.compile(body + ("$" if anchored else ""))


def _robots_path(url: str) -> str:
    parts = urlsplit(
        url if "://" in url else "http://x" + (url if url.startswith("/") else "/" + url)
    )
    path = quote(unquote(parts.path or "/"), safe="/%:@!$&'()*+,;=-._~")
    return path + (f"?{parts.query}" if parts.query else "")


def _robots_test(inputs: dict[str, Any]) -> dict[str, Any]:
    urls = _lines(inputs["urls"])
    if not urls:
        raise EngineError("List the URLs or paths to test in urls, one per line.")
    groups, sitemaps, problems = _parse_robots(inputs["robots"])
    agent, chosen = _pick_group(groups, inputs["user_agent"])
    rules = [rule for group in chosen for rule in group["rules"]]
    results = []
    for url in urls:
        path = _robots_path(url)
        matches = [r for r in rules if _rule_regex(r[1]).match(path)]
        # The longest pattern wins; on a tie, allow wins.
        best = max(matches, key=lambda r: (len(r[1]), r[0]), default=None)
        allowed = path == "/robots.txt" or best is None or best[0]
        results.append(
            {
                "url": url,
                "allowed": allowed,
                "rule": f"{'Allow' if best[0] else 'Disallow'}: {best[1]}" if best else None,
                "line": best[2] if best else None,
            }
        )
    delays = [g["crawl_delay"] for g in chosen if g["crawl_delay"] is not None]
    return {
        "user_agent": inputs["user_agent"],
        "group": agent,
        "results": results,
        "sitemaps": sitemaps,
        "crawl_delay": delays[0] if delays else None,
        "problems": problems,
    }


AI_CRAWLERS = (
    "GPTBot", "ChatGPT-User", "OAI-SearchBot", "ClaudeBot", "anthropic-ai", "Claude-Web",
    "CCBot", "Google-Extended", "Applebot-Extended", "PerplexityBot", "Bytespider",
    "Meta-ExternalAgent", "Amazonbot", "cohere-ai", "Diffbot", "Omgilibot",
)  # fmt: skip


def _robots_paths(text: str, field: str, warnings: list[str]) -> list[str]:
    paths = []
    for path in _lines(text):
        if _is_absolute(path):
            parts = urlsplit(path)
            path = parts.path + (f"?{parts.query}" if parts.query else "")
            warnings.append(f"{field}: kept only the path of {path}; rules apply per host.")
        if not path.startswith(("/", "*")):
            warnings.append(f'{field}: "{path}" did not start with "/"; added it.')
            path = "/" + path
        paths.append(path)
    return list(dict.fromkeys(paths))


def _robots_generate(inputs: dict[str, Any]) -> dict[str, Any]:
    warnings: list[str] = []
    disallow = _robots_paths(inputs["disallow"], "disallow", warnings)
    allow = _robots_paths(inputs["allow"], "allow", warnings)
    sitemaps = [_absolute_url(url, "Each sitemap") for url in _lines(inputs["sitemaps"])]
    lines = ["User-agent: *"]
    if inputs["block_everything"]:
        lines.append("Disallow: /")
        warnings.append("Everything is blocked: use this only for staging sites.")
    else:
        lines += [f"Allow: {p}" for p in allow] + [f"Disallow: {p}" for p in disallow]
        if not allow and not disallow:
            lines.append("Disallow:")
    if inputs["crawl_delay"]:
        lines.append(f"Crawl-delay: {inputs['crawl_delay']}")
        warnings.append("Google ignores Crawl-delay; Bing and Yandex honour it.")
    if inputs["block_ai_crawlers"]:
        lines.append("")
        lines += [f"User-agent: {bot}" for bot in AI_CRAWLERS] + ["Disallow: /"]
    if sitemaps:
        lines.append("")
        lines += [f"Sitemap: {url}" for url in sitemaps]
    else:
        warnings.append("No sitemap listed; adding one helps crawlers find every page.")
    return {"robots_txt": "\n".join(lines) + "\n", "warnings": warnings}


class RobotsEngine(ChoiceEngine):
    name = "seo.robots"
    jobs = {"test": _robots_test, "generate": _robots_generate}
