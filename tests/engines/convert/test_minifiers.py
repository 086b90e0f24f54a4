"""The minifier engine (convert.minify), run through its catalogue tools."""


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
