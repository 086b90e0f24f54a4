"""``code.highlight`` and ``code.markdown`` (engines/code/markup.py): code and Markdown as HTML."""

import pytest

from engines import EngineError

# --- syntax highlighting -----------------------------------------------------------------


def test_code_is_highlighted_as_html(run):
    result = run("syntax-highlighter", code="def f(x):\n    return x\n")
    assert result["language"] == "Python" and result["css"] is None
    assert result["html"].startswith(
        '<div class="highlight"><pre><span></span><code><span class="k">def</span>'
    )


def test_highlighting_can_return_the_theme_css_and_line_numbers(run):
    result = run(
        "syntax-highlighter", code="a = 1\n", language="py", style="monokai", line_numbers=True,
        include_css=True,
    )  # fmt: skip
    assert '<td class="linenos">' in result["html"]
    assert ".highlight .k { color: #66D9EF }" in result["css"]


def test_highlighting_refuses_an_unknown_language(run):
    with pytest.raises(EngineError) as caught:
        run("syntax-highlighter", code="x", language="klingon")
    assert caught.value.message == "Unknown language 'klingon'."


# --- Markdown ----------------------------------------------------------------------------


def test_markdown_is_converted_with_tables(run):
    result = run("markdown-to-html", markdown="# Hi\n\n| a |\n|---|\n| 1 |")
    assert result["html"] == (
        "<h1>Hi</h1>\n<table>\n<thead>\n<tr>\n<th>a</th>\n</tr>\n</thead>\n<tbody>\n<tr>\n"
        "<td>1</td>\n</tr>\n</tbody>\n</table>"
    )


def test_safe_markdown_escapes_html_and_drops_unsafe_links(run):
    markdown = (
        "Hi <script>alert(1)</script> [x](javascript:alert(1)) [y](https://a.b/c) "
        "![i](data:image/png;base64,xx)"
    )
    assert run("markdown-to-html", markdown=markdown)["html"] == (
        "<p>Hi &lt;script&gt;alert(1)&lt;/script&gt; <a>x</a> "
        '<a href="https://a.b/c">y</a> <img alt="i"></p>'
    )


def test_safe_markdown_drops_event_handler_attributes(run):
    result = run(
        "markdown-to-html", markdown='[x](/a){: onclick="alert(1)" title="t"}',
        extensions=["attr_list"],
    )  # fmt: skip
    assert result["html"] == '<p><a href="/a" title="t">x</a></p>'


def test_unsafe_markdown_keeps_raw_html(run):
    result = run("markdown-to-html", markdown="Hi <b>bold</b>", safe=False)
    assert result["html"] == "<p>Hi <b>bold</b></p>"


@pytest.mark.parametrize("markdown", ["[" * 1500, "[x](" * 1000, ("[" * 100 + "\n\n") * 300])
def test_markdown_with_thousands_of_unclosed_brackets_is_refused(run, markdown):
    # Python-Markdown takes quadratic time on these (30,000 "[" took 95 s).
    with pytest.raises(EngineError, match="too many unclosed"):
        run("markdown-to-html", markdown=markdown)


def test_markdown_with_many_closed_links_is_converted(run):
    markdown = "\n".join(f"- [link {i}](https://example.com/{i})" for i in range(2500))
    assert run("markdown-to-html", markdown=markdown)["html"].count("<a href=") == 2500


def test_markdown_nested_too_deeply_is_refused(run):
    with pytest.raises(EngineError, match="^The Markdown is nested too deeply to convert.$"):
        run("markdown-to-html", markdown="- " * 5000 + "x")


def test_markdown_extensions_can_be_chosen(run):
    result = run("markdown-to-html", markdown="# A\n\n[TOC]", extensions=["toc"])
    assert result["html"] == (
        '<h1 id="a">A</h1>\n<div class="toc">\n<ul>\n<li><a href="#a">A</a></li>\n</ul>\n</div>'
    )
