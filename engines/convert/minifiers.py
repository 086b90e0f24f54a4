"""Minifiers (convert.minify): CSS, JavaScript and HTML."""

from __future__ import annotations

import re
from typing import Any

from engines.base import ChoiceEngine


def _savings(original: str, minified: str) -> dict[str, Any]:
    saved = 100 * (len(original) - len(minified)) / len(original) if original else 0.0
    return {
        "minified": minified,
        "original_chars": len(original),
        "minified_chars": len(minified),
        "saved_percent": round(saved, 1),
    }


def _minify_css(inputs: dict[str, Any]) -> dict[str, Any]:
    import rcssmin

    minified = rcssmin.cssmin(inputs["css"], keep_bang_comments=inputs["keep_license_comments"])
    return _savings(inputs["css"], minified.strip())


def _minify_js(inputs: dict[str, Any]) -> dict[str, Any]:
    import rjsmin

    minified = rjsmin.jsmin(inputs["code"], keep_bang_comments=inputs["keep_license_comments"])
    return _savings(inputs["code"], minified.strip())


_BLOCK_TAGS = frozenset(
    "html head body title meta link base style script noscript template div p ul ol li dl dt "  # noqa: SIM905 - a table
    "dd table thead tbody tfoot tr td th caption colgroup col form fieldset legend h1 h2 h3 h4 "
    "h5 h6 header footer main nav section article aside figure figcaption blockquote hr pre "
    "address details summary dialog option optgroup select".split()
)
_JS_TYPES = frozenset({"", "text/javascript", "application/javascript", "module"})


def _minify_html_text(html: str, minify_inline: bool, keep_comments: bool) -> str:
    """Collapse whitespace, drop comments and minify inline CSS/JS, token by token.

    Whitespace between two tags is dropped only next to block-level tags (it can matter
    between inline ones); <pre> and <textarea> keep theirs.
    """
    from html import escape
    from html.parser import HTMLParser

    import rcssmin
    import rjsmin

    out: list[str] = []
    # after_block: the last token is a block-level tag (whitespace after it never renders);
    # text_last: the last token is collapsible text, whose trailing space a block tag drops.
    state = {"verbatim": 0, "after_block": True, "raw": "", "text_last": False}

    class Minifier(HTMLParser):
        def __init__(self) -> None:
            super().__init__(convert_charrefs=False)

        def _tag(self, tag: str, attrs: list[tuple[str, str | None]], close: str) -> str:
            parts = [tag]
            for name, value in attrs:
                if value is None:
                    parts.append(name)
                else:
                    parts.append(f'{name}="{escape(value, quote=True)}"')
            return "<" + " ".join(parts) + close + ">"

        def _whitespace_before(self, tag: str) -> None:
            if tag in _BLOCK_TAGS and state["text_last"]:
                out[-1] = out[-1].rstrip(" ")
            state["text_last"] = False

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            self._whitespace_before(tag)
            out.append(self._tag(tag, attrs, ""))
            state["after_block"] = tag in _BLOCK_TAGS
            if tag in ("pre", "textarea"):
                state["verbatim"] += 1
            if tag in ("script", "style"):
                kind = (dict(attrs).get("type") or "").lower()
                state["raw"] = tag if tag == "style" or kind in _JS_TYPES else "keep"

        def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            self._whitespace_before(tag)
            out.append(self._tag(tag, attrs, " /"))
            state["after_block"] = tag in _BLOCK_TAGS

        def handle_endtag(self, tag: str) -> None:
            self._whitespace_before(tag)
            out.append(f"</{tag}>")
            state["after_block"] = tag in _BLOCK_TAGS
            state["raw"] = ""
            if tag in ("pre", "textarea") and state["verbatim"]:
                state["verbatim"] -= 1

        def handle_data(self, data: str) -> None:
            raw = state["raw"]
            if raw:
                if raw == "style" and minify_inline:
                    data = rcssmin.cssmin(data)
                elif raw == "script" and minify_inline:
                    data = rjsmin.jsmin(data)
                out.append(data.strip() if raw != "keep" else data)
                return
            if state["verbatim"]:
                out.append(data)
                state["text_last"] = False
                return
            text = re.sub(r"[ \t\n\r\f]+", " ", data)
            if state["after_block"] or (out and out[-1].endswith(" ")):
                text = text.lstrip(" ")
            if text:
                out.append(text)
                state["after_block"] = False
                state["text_last"] = True

        def handle_entityref(self, name: str) -> None:
            out.append(f"&{name};")
            state["after_block"] = state["text_last"] = False

        def handle_charref(self, name: str) -> None:
            out.append(f"&#{name};")
            state["after_block"] = state["text_last"] = False

        def handle_comment(self, data: str) -> None:
            if keep_comments or data.startswith("[if") or data.startswith("<![endif"):
                out.append(f"<!--{data}-->")
                state["text_last"] = False

        def handle_decl(self, decl: str) -> None:
            out.append(f"<!{decl}>")

        def handle_pi(self, data: str) -> None:
            out.append(f"<?{data}>")

    minifier = Minifier()
    minifier.feed(html)
    minifier.close()
    return "".join(out).strip()


def _minify_html(inputs: dict[str, Any]) -> dict[str, Any]:
    minified = _minify_html_text(inputs["html"], inputs["minify_inline"], inputs["keep_comments"])
    return _savings(inputs["html"], minified)


class MinifyEngine(ChoiceEngine):
    """Minifies CSS, JavaScript and HTML."""

    name = "convert.minify"
    requires = ("rcssmin", "rjsmin")
    jobs = {"css": _minify_css, "javascript": _minify_js, "html": _minify_html}
