"""The SSRF-guarded fetcher, against real HTTP(S) servers on loopback started by the tests."""

import re
import shutil
import socket
import ssl
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from services import fetch as fetcher
from services.fetch import FetchRefused, FetchTooLarge, check_address, fetch, resolve_public

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 100


# --- local servers -------------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        self.server.seen.append({"path": self.path, "host": self.headers["Host"]})
        route = self.server.routes.get(self.path.split("?")[0])
        try:
            if route is None:
                reply(self, b"not here", status=404)
            else:
                route(self)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the fetcher hung up, as it should past a limit

    def log_message(self, *args):
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address, family=socket.AF_INET):
        self.address_family = family
        super().__init__(address, _Handler)
        self.routes = {}
        self.seen = []
        self.server_names = []

    def handle_error(self, request, client_address):
        pass

    @property
    def port(self) -> int:
        return self.server_address[1]

    def url(self, path: str = "/", host: str = "127.0.0.1", scheme: str = "http") -> str:
        return f"{scheme}://{host}:{self.port}{path}"


def reply(handler, body: bytes = b"", *, status=200, content_type="application/octet-stream",
          headers=(), length=True):  # fmt: skip
    handler.send_response(status)
    handler.send_header("Content-Type", content_type)
    if length:
        handler.send_header("Content-Length", str(len(body)))
    for name, value in headers:
        handler.send_header(name, value)
    handler.end_headers()
    handler.wfile.write(body)


def _serve(server: _Server):
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join(5)


@pytest.fixture
def server():
    """An HTTP server on 127.0.0.1; tests put routes in ``server.routes``."""
    yield from _serve(_Server(("127.0.0.1", 0)))


class _Dns:
    """Names the test resolves: a list of addresses, or an iterator of such lists."""

    def __init__(self):
        self.names = {}
        self.lookups = []

    def __setitem__(self, host, answer):
        self.names[host] = answer

    def getaddrinfo(self, real, host, port, *args, **kwargs):
        if host not in self.names:
            return real(host, port, *args, **kwargs)
        self.lookups.append(host)
        answer = self.names[host]
        ips = answer if isinstance(answer, list) else next(answer)
        return [
            (socket.AF_INET6, socket.SOCK_STREAM, 6, "", (ip, port, 0, 0))
            if ":" in ip
            else (socket.AF_INET, socket.SOCK_STREAM, 6, "", (ip, port))
            for ip in ips
        ]


@pytest.fixture
def fake_dns(monkeypatch):
    """Names resolve as the test says; IP literals still go to the real resolver (no DNS)."""
    dns = _Dns()
    real = socket.getaddrinfo
    monkeypatch.setattr(socket, "getaddrinfo", lambda *a, **k: dns.getaddrinfo(real, *a, **k))
    return dns


@pytest.fixture
def loopback_is_public(monkeypatch):
    """Let 127.0.0.1 stand in for a public host, so the next hops can be checked."""
    real = fetcher.check_address
    monkeypatch.setattr(
        fetcher, "check_address", lambda ip: None if ip == "127.0.0.1" else real(ip)
    )


# --- check_address, resolve_public ---------------------------------------------------------


@pytest.mark.parametrize(
    ("ip", "reason"),
    [
        ("127.0.0.1", "loopback"),
        ("127.255.0.9", "loopback"),
        ("10.0.0.1", "private"),
        ("172.16.5.4", "private"),
        ("192.168.1.1", "private"),
        ("169.254.169.254", "metadata"),
        ("169.254.1.1", "link-local"),
        ("100.64.0.1", "carrier-grade NAT"),
        ("100.100.100.200", "carrier-grade NAT"),
        ("0.0.0.0", "unspecified"),
        ("0.1.2.3", "this network"),
        ("224.0.0.1", "multicast"),
        ("240.0.0.1", "private"),
        ("255.255.255.255", "private"),
        ("192.0.2.1", "private"),
        ("::", "unspecified"),
        ("::1", "loopback"),
        ("fe80::1", "link-local"),
        ("fe80::1%eth0", "link-local"),
        ("fc00::1", "private"),
        ("fd12:3456::1", "private"),
        ("fec0::1", "site-local"),
        ("ff02::1", "multicast"),
        ("2001:db8::1", "private"),
        ("::ffff:127.0.0.1", "loopback address (in IPv4-mapped form)"),
        ("::ffff:10.0.0.1", "private address (in IPv4-mapped form)"),
        ("::ffff:169.254.169.254", "metadata address (in IPv4-mapped form)"),
        ("::ffff:0.0.0.0", "unspecified address (in IPv4-mapped form)"),
        ("::127.0.0.1", "loopback address (in IPv4-compatible form)"),
        ("::ffff:0:7f00:1", "loopback address (in IPv4-translated form)"),
        ("64:ff9b::a00:1", "private address (in NAT64 form)"),
        ("2002:a00:1::1", "private address (in 6to4 form)"),
        ("fd00:ec2::254", "metadata"),
        ("not-an-ip", "not an IP address"),
    ],
)
def test_non_public_addresses_are_refused_with_a_reason(ip, reason):
    assert reason in (check_address(ip) or "")


@pytest.mark.parametrize(
    "ip", ["8.8.8.8", "1.1.1.1", "93.184.215.14", "2606:4700:4700::1111", "::ffff:8.8.8.8"]
)
def test_public_addresses_pass(ip):
    assert check_address(ip) is None


def test_a_name_resolving_to_loopback_is_refused(fake_dns):
    fake_dns["intranet.example.test"] = ["127.0.0.1"]
    with pytest.raises(FetchRefused) as refused:
        resolve_public("intranet.example.test", 80)
    assert refused.value.message == (
        "intranet.example.test resolves to a loopback address; "
        "only public addresses can be fetched."
    )


def test_one_private_address_among_public_ones_refuses_the_name(fake_dns):
    fake_dns["mixed.example.test"] = ["93.184.215.14", "2606:4700:4700::1111", "10.1.2.3"]
    with pytest.raises(FetchRefused, match="mixed.example.test resolves to a private address"):
        resolve_public("mixed.example.test", 443)


def test_public_names_resolve_to_every_address_once(fake_dns):
    fake_dns["cdn.example.test"] = ["93.184.215.14", "2606:4700:4700::1111", "93.184.215.14"]
    assert resolve_public("cdn.example.test", 443) == ["93.184.215.14", "2606:4700:4700::1111"]


def test_unresolvable_names_are_refused():
    with pytest.raises(FetchRefused, match="could not be resolved"):
        resolve_public("no-such-host.invalid", 80)


@pytest.mark.parametrize("ip", ["169.254.169.254", "fd00:ec2::254", "::ffff:169.254.169.254"])
def test_allow_private_still_refuses_the_metadata_service(fake_dns, ip):
    fake_dns["metadata.example.test"] = [ip]
    assert resolve_public("10.0.0.1", 80, allow_private=True) == ["10.0.0.1"]
    with pytest.raises(FetchRefused, match="metadata"):
        resolve_public("metadata.example.test", 80, allow_private=True)


# --- fetch: the guard, end to end ----------------------------------------------------------


def test_loopback_server_is_refused_without_fetch_allow_private(app, server):
    server.routes["/cat.png"] = lambda h: reply(h, PNG, content_type="image/png")
    assert app.config["FETCH_ALLOW_PRIVATE"] is False
    with pytest.raises(FetchRefused, match="^127.0.0.1 is a loopback address; only public"):
        fetch(server.url("/cat.png"), max_bytes=1000)
    assert server.seen == []


def test_loopback_server_is_fetched_with_fetch_allow_private(app, server):
    server.routes["/cat.png"] = lambda h: reply(h, PNG, content_type="image/png; x=1")
    app.config["FETCH_ALLOW_PRIVATE"] = True
    blob = fetch(server.url("/cat.png?size=2"), max_bytes=1000)
    assert (blob.data, blob.content_type, blob.filename) == (PNG, "image/png", "cat.png")
    assert server.seen == [{"path": "/cat.png?size=2", "host": f"127.0.0.1:{server.port}"}]


@pytest.mark.parametrize(
    "url", ["http://2130706433:{port}/", "http://0x7f.1:{port}/", "http://127.1:{port}/"]
)
def test_odd_spellings_of_loopback_are_refused(server, url):
    with pytest.raises(FetchRefused, match="loopback"):
        fetch(url.format(port=server.port), max_bytes=1000, allow_private=False)
    assert server.seen == []


def test_ipv6_loopback_is_refused_then_fetched_when_allowed():
    v6 = _Server(("::1", 0), socket.AF_INET6)
    for running in _serve(v6):
        running.routes["/"] = lambda h: reply(h, b"six")
        url = f"http://[::1]:{running.port}/"
        with pytest.raises(FetchRefused, match="::1 is a loopback address"):
            fetch(url, max_bytes=100, allow_private=False)
        assert fetch(url, max_bytes=100, allow_private=True).data == b"six"
        assert running.seen[0]["host"] == f"[::1]:{running.port}"


def test_connection_goes_to_the_checked_address_with_the_original_host(server, fake_dns):
    server.routes["/a.txt"] = lambda h: reply(h, b"hello", content_type="text/plain")
    # A rebinding resolver: the first answer is checked, any later one would point elsewhere.
    fake_dns["files.example.test"] = iter([["127.0.0.1"]] + [["10.66.66.66"]] * 9)
    blob = fetch(server.url("/a.txt", host="files.example.test"), max_bytes=100, allow_private=True)
    assert blob.data == b"hello"
    assert fake_dns.lookups == ["files.example.test"]  # resolved once, never again
    assert server.seen == [{"path": "/a.txt", "host": f"files.example.test:{server.port}"}]


def test_an_address_that_does_not_answer_falls_back_to_the_next_checked_one(server, fake_dns):
    server.routes["/"] = lambda h: reply(h, b"second")
    fake_dns["two.example.test"] = ["::1", "127.0.0.1"]  # nothing listens on [::1]:port
    url = server.url("/", host="two.example.test")
    assert fetch(url, max_bytes=100, allow_private=True).data == b"second"
    assert fake_dns.lookups == ["two.example.test"]


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://example.com/file.png", "Only http and https"),
        ("file:///etc/passwd", "Only http and https"),
        ("gopher://example.com:70/", "Only http and https"),
        ("javascript:alert(1)", "Only http and https"),
        ("//example.com/x.png", "Only http and https"),
        ("http://user:secret@example.com/", "user name or password"),
        ("http:///no-host", "no host"),
        ("http://example.com:99999/", "malformed"),
        ("http://[::1/", "malformed"),
    ],
)
def test_urls_other_than_plain_http_are_refused(url, message):
    with pytest.raises(FetchRefused, match=message):
        fetch(url, max_bytes=100, allow_private=True)


# --- redirects -----------------------------------------------------------------------------


def redirect(location: str, status: int = 302):
    return lambda h: reply(h, status=status, headers=[("Location", location)])


def test_redirects_are_followed_up_to_three(server):
    server.routes["/1"] = redirect("/2", 301)
    server.routes["/2"] = redirect(server.url("/3"), 307)
    server.routes["/3"] = redirect("4", 308)
    server.routes["/4"] = lambda h: reply(h, b"end", content_type="text/plain")
    blob = fetch(server.url("/1"), max_bytes=100, allow_private=True)
    assert (blob.data, blob.filename) == (b"end", "4")
    assert [hop["path"] for hop in server.seen] == ["/1", "/2", "/3", "/4"]


def test_a_fourth_redirect_is_refused(server):
    for hop in range(1, 5):
        server.routes[f"/{hop}"] = redirect(f"/{hop + 1}")
    server.routes["/5"] = lambda h: reply(h, b"too far")
    with pytest.raises(FetchRefused, match="redirected more than 3 times"):
        fetch(server.url("/1"), max_bytes=100, allow_private=True)
    assert [hop["path"] for hop in server.seen] == ["/1", "/2", "/3", "/4"]


@pytest.mark.parametrize(
    ("location", "reason"),
    [
        ("http://169.254.169.254/latest/meta-data/", "cloud metadata"),
        ("http://10.0.0.1/admin", "private"),
        ("http://[::1]:{port}/", "loopback"),
        ("http://[::ffff:127.0.0.1]:{port}/", "loopback address (in IPv4-mapped form)"),
        ("http://internal.example.test:{port}/", "private"),
        ("http://0.0.0.0:{port}/", "unspecified"),
    ],
)
def test_a_redirect_to_a_non_public_address_is_refused(
    server, fake_dns, loopback_is_public, location, reason
):
    fake_dns["internal.example.test"] = ["10.1.2.3"]
    server.routes["/start"] = redirect(location.format(port=server.port))
    with pytest.raises(FetchRefused, match=re.escape(reason)):
        fetch(server.url("/start"), max_bytes=100)
    assert [hop["path"] for hop in server.seen] == ["/start"]


def test_a_redirect_to_another_scheme_is_refused(server, loopback_is_public):
    server.routes["/start"] = redirect("file:///etc/passwd")
    with pytest.raises(FetchRefused, match="Only http and https"):
        fetch(server.url("/start"), max_bytes=100)


def test_a_redirect_without_location_is_refused(server):
    server.routes["/start"] = lambda h: reply(h, status=302)
    with pytest.raises(FetchRefused, match="without a Location"):
        fetch(server.url("/start"), max_bytes=100, allow_private=True)


# --- size, time, status, type --------------------------------------------------------------


def stream(total: int, chunk: int = 64 * 1024, pause: float = 0.0):
    """Send ``total`` bytes without a Content-Length, ``chunk`` at a time."""

    def route(h):
        reply(h, length=False, headers=[("Connection", "close")])
        sent = 0
        while sent < total:
            h.wfile.write(b"a" * min(chunk, total - sent))
            h.wfile.flush()
            sent += chunk
            time.sleep(pause)

    return route


def test_a_declared_length_over_the_limit_is_refused_before_the_body(server):
    server.routes["/big"] = lambda h: reply(h, b"x" * 5000)
    with pytest.raises(FetchTooLarge) as too_large:
        fetch(server.url("/big"), max_bytes=4999, allow_private=True)
    assert too_large.value.max_bytes == 4999
    assert "(5000 bytes)" in too_large.value.message


def test_the_limit_is_enforced_mid_stream(server):
    server.routes["/endless"] = stream(20 * 1024 * 1024)
    started = time.monotonic()
    with pytest.raises(FetchTooLarge, match="larger than the 100000 bytes accepted"):
        fetch(server.url("/endless"), max_bytes=100_000, allow_private=True)
    assert time.monotonic() - started < 2


def test_a_body_of_exactly_the_limit_is_accepted(server):
    server.routes["/exact"] = stream(100_000, chunk=30_000)
    assert len(fetch(server.url("/exact"), max_bytes=100_000, allow_private=True)) == 100_000


def test_a_server_that_does_not_answer_in_time_is_refused(server):
    server.routes["/slow"] = lambda h: (time.sleep(1.5), reply(h, b"late"))
    started = time.monotonic()
    with pytest.raises(FetchRefused, match="timed out"):
        fetch(server.url("/slow"), max_bytes=100, timeout=0.3, allow_private=True)
    assert time.monotonic() - started < 1


def test_a_slow_drip_is_cut_at_the_total_deadline(server):
    server.routes["/drip"] = stream(100, chunk=1, pause=0.05)
    started = time.monotonic()
    with pytest.raises(FetchRefused, match="took longer than 0.5 s"):
        fetch(server.url("/drip"), max_bytes=1000, timeout=0.5, allow_private=True)
    assert time.monotonic() - started < 1.5


def test_a_closed_port_is_refused_as_unreachable():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(FetchRefused, match="could not be reached: connection refused"):
        fetch(f"http://127.0.0.1:{port}/", max_bytes=100, allow_private=True)


@pytest.mark.parametrize("status", [404, 500, 204, 304])
def test_anything_but_2xx_with_a_body_is_refused_or_empty(server, status):
    server.routes["/x"] = lambda h: reply(
        h, b"" if status in (204, 304) else b"oops", status=status
    )
    if status == 204:
        assert fetch(server.url("/x"), max_bytes=100, allow_private=True).data == b""
        return
    with pytest.raises(FetchRefused, match=f"answered HTTP {status}"):
        fetch(server.url("/x"), max_bytes=100, allow_private=True)


def test_a_declared_type_outside_the_allowed_ones_is_refused_before_the_body(server):
    server.routes["/page"] = lambda h: reply(h, b"<html>", content_type="text/html; charset=utf-8")
    with pytest.raises(FetchRefused, match="sent text/html; expected image/\\* or application/pdf"):
        fetch(
            server.url("/page"),
            max_bytes=100,
            allowed_types=["image/*", "application/pdf"],
            allow_private=True,
        )


@pytest.mark.parametrize(
    ("declared", "returned"),
    [("image/webp", "image/webp"), ("application/octet-stream", "application/octet-stream")],
)
def test_allowed_or_generic_types_pass_for_the_caller_to_check(server, declared, returned):
    server.routes["/f"] = lambda h: reply(h, PNG, content_type=declared)
    blob = fetch(server.url("/f"), max_bytes=1000, allowed_types="image/*", allow_private=True)
    assert (blob.data, blob.content_type) == (PNG, returned)


def test_a_missing_content_type_is_returned_as_octet_stream(server):
    def bare(h):
        h.send_response(200)
        h.send_header("Content-Length", str(len(PNG)))
        h.end_headers()
        h.wfile.write(PNG)

    server.routes["/bare"] = bare
    blob = fetch(server.url("/bare"), max_bytes=1000, allowed_types=["image/*"], allow_private=True)
    assert blob.content_type == "application/octet-stream"


# --- https ---------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def certificates(tmp_path_factory):
    """Self-signed certificates for files.example.test and for another name (openssl)."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    folder = tmp_path_factory.mktemp("tls")
    made = {}
    for name in ("files.example.test", "other.example.test"):
        cert, key = folder / f"{name}.pem", folder / f"{name}.key"
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
             "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "2", "-subj", f"/CN={name}",
             "-addext", f"subjectAltName=DNS:{name}"],
            check=True,
            capture_output=True,
        )  # fmt: skip
        made[name] = (cert, key)
    return made


def _https_server(certificates, name):
    cert, key = certificates[name]
    server = _Server(("127.0.0.1", 0))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    context.sni_callback = lambda sock, server_name, ctx: server.server_names.append(server_name)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    return server


def test_https_verifies_the_name_and_sends_it_as_sni_to_the_checked_address(
    certificates, fake_dns, monkeypatch
):
    monkeypatch.setattr(fetcher, "CA_CERTS", str(certificates["files.example.test"][0]))
    fake_dns["files.example.test"] = ["127.0.0.1"]
    for server in _serve(_https_server(certificates, "files.example.test")):
        server.routes["/doc.pdf"] = lambda h: reply(h, b"%PDF-1.7", content_type="application/pdf")
        url = server.url("/doc.pdf", host="files.example.test", scheme="https")
        blob = fetch(url, max_bytes=100, allow_private=True)
        assert (blob.data, blob.content_type) == (b"%PDF-1.7", "application/pdf")
        assert server.server_names == ["files.example.test"]
        assert server.seen[0]["host"] == f"files.example.test:{server.port}"


def test_https_with_a_certificate_for_another_name_is_refused(certificates, fake_dns, monkeypatch):
    monkeypatch.setattr(fetcher, "CA_CERTS", str(certificates["other.example.test"][0]))
    fake_dns["files.example.test"] = ["127.0.0.1"]
    for server in _serve(_https_server(certificates, "other.example.test")):
        url = server.url("/", host="files.example.test", scheme="https")
        with pytest.raises(FetchRefused, match="TLS failed"):
            fetch(url, max_bytes=100, allow_private=True)
        assert server.seen == []
