"""Issue 12: a hostile mirror and a hostile cache. A real HTTP server on 127.0.0.1 serves each bad page.

Every case must end with an answer (a note, an exit code), never a traceback, a hang past the timeout, or
unbounded memory.
"""

import json
import math
import os
import resource
import sys
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from hypothesis import given, settings, strategies as st

from builders import TOOLS, assert_linear
from cudaenv.index import cache, client
from cudaenv.core.config import TORCH_INDEX
from cudaenv.index import torch as ti
from cudaenv.parse import index_pages as pages
from cudaenv.host.process import Deadline


def _wheel(version, local, py="cp311", plat="manylinux_2_28_x86_64"):
    return "torch-%s%s-%s-%s-%s.whl" % (version, "+" + local if local else "", py, py, plat)


def _html(names):
    return "<html><body>%s</body></html>" % "".join('<a href="%s">%s</a><br/>' % (n.replace("+", "%2B"), n) for n in names)


def _gzip_member(data):
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    return c.compress(data) + c.flush()


MIB = 1024 * 1024
BOMB_MEMBER = _gzip_member(b"\0" * MIB)  # about 1 KB that inflates to 1 MiB


class HostileServer:
    """GET {base}/torch/ and {base}/VARIANT/torch/ for each mirror kind in ``/KIND/whl/...``."""

    def __init__(self):
        self.stop = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):
                kind, _, rest = self.path.lstrip("/").partition("/")
                try:
                    getattr(server, "page_" + kind)(self, "/" + rest)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = "http://127.0.0.1:%d" % self.httpd.server_address[1]

    def base(self, kind):
        return "%s/%s/whl" % (self.url, kind)

    def close(self):
        self.stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    @staticmethod
    def send(h, body, ctype="text/html", headers=()):
        h.send_response(200)
        h.send_header("Content-Type", ctype)
        for k, v in headers:
            h.send_header(k, v)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)

    # a gzip page of 2048 members: 2 MB on the wire, 2 GiB inflated
    def page_bomb(self, h, path):
        self.send(h, BOMB_MEMBER * 2048, headers=[("Content-Encoding", "gzip")])

    # a gzip page that is fine: the client decodes it itself
    def page_gzip(self, h, path):
        names = [_wheel("2.15.0", "cu126")] if path == "/whl/torch/" else [_wheel("2.15.0", "cu126")]
        self.send(h, _gzip_member(_html(names).encode()) + _gzip_member(b"<!-- second member -->"),
                  headers=[("Content-Encoding", "gzip")])

    def page_deep(self, h, path):
        self.send(h, ('{"files": ' + "[" * 100000 + "]" * 100000 + "}").encode(), "application/vnd.pypi.simple.v1+json")

    def page_digits(self, h, path):
        self.send(h, _html([_wheel("2.15.0", "cu126", py="cp3" + "1" * 5000), "torch-2.15.0+cu126-cp311-cp311-manylinux_2_28_x86_64.whl"
                            .replace("2.15.0", "2." + "9" * 5000)]).encode())

    def page_nowheels(self, h, path):
        self.send(h, _html(["torch-2.15.0.tar.gz", "README.html", "torchvision-0.30.0+cu126-cp311-cp311-manylinux_2_28_x86_64.whl"]).encode())

    def page_trickle(self, h, path):
        body = _html([_wheel("2.15.0", "cu126")] * 20).encode()
        h.send_response(200)
        h.send_header("Content-Type", "text/html")
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        for i in range(len(body)):
            if self.stop.is_set():
                return
            h.wfile.write(body[i:i + 1])
            h.wfile.flush()
            time.sleep(1.0)


@pytest.fixture(scope="module")
def hostile():
    srv = HostileServer()
    yield srv
    srv.close()


def _maxrss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


# ------------------------------------------------------------------ the mirror
def test_a_gzip_bomb_is_abandoned_with_a_note_and_bounded_memory(hostile):
    before = _maxrss_mib()
    with pytest.raises(client.FetchError, match="inflates to more than 1 MiB; abandoned"):
        client.fetch_page(hostile.base("bomb") + "/torch/", Deadline(10), limit=MIB)
    result = ti.refresh(hostile.base("bomb"), timeout=10, extra_variants=["cu126"])
    assert result.data is None
    assert any("inflates to more than 64 MiB; abandoned" in n for n in result.notes), result.notes
    assert _maxrss_mib() - before < 400  # 2 GiB inflated would show here


def test_gzip_pages_with_several_members_are_read(hostile):
    text, _ = client.fetch_page(hostile.base("gzip") + "/torch/", Deadline(5))
    assert "torch-2.15.0+cu126" in text and "second member" in text
    result = ti.refresh(hostile.base("gzip"), timeout=5)
    assert result.data is not None and "2.15.0" in result.data.variants["cu126"]


def test_a_json_page_nested_100000_deep_is_refused_not_a_recursion_error(hostile):
    page = pages.parse_index_page(('{"files": ' + "[" * 100000 + "]" * 100000 + "}"), "application/vnd.pypi.simple.v1+json")
    assert page.files == () and "nested deeper than" in page.problem
    result = ti.refresh(hostile.base("deep"), timeout=5, extra_variants=["cu126"])
    assert result.data is None and any("nested deeper than" in n for n in result.notes), result.notes


def test_a_5000_digit_python_tag_is_no_wheel(hostile):
    assert pages.parse_wheel_filename(_wheel("2.15.0", "cu126", py="cp3" + "1" * 5000)) is None
    assert pages.parse_wheel_filename(_wheel("2." + "9" * 5000, "cu126")) is None
    result = ti.refresh(hostile.base("digits"), timeout=5)
    assert result.data is None and result.reachable
    assert "list no torch wheels" in result.notes[-1]
    from cudaenv.core.i18n import CHINESE, ENGLISH, set_language, tr

    set_language(CHINESE)  # a marked note: a Chinese run says it whole
    try:
        said = tr(result.notes[-1])
    finally:
        set_language(ENGLISH)
    assert said.endswith("）没有列出任何 torch wheel 包") and "list no" not in said, said


def test_links_but_no_wheels_do_not_write_a_cache(cli, hostile, tmp_path):
    env = {"PATH": TOOLS, "CUDAENV_CACHE_DIR": str(tmp_path / "c")}
    res = cli("torch", "refresh", "--index-base", hostile.base("nowheels"), "--timeout", "5", env=env)
    assert res.code == 1, res
    assert "cache written" not in res.out + res.err
    err = " ".join(res.err.split())  # wrapped to the terminal
    assert "list no torch wheels" in err and "the cache was not written" in err
    assert not (tmp_path / "c" / cache.CACHE_NAME).exists()


def test_a_mirror_trickling_a_byte_a_second_honours_timeout_2(cli, hostile, tmp_path):
    env = {"PATH": TOOLS, "CUDAENV_CACHE_DIR": str(tmp_path / "c")}
    res = cli("torch", "refresh", "--index-base", hostile.base("trickle"), "--timeout", "2", env=env)
    # the page's deadline (the user's 2 s) cut it, not the trickle's end
    assert res.code == 1 and "took longer than 2 s in all" in " ".join(res.err.split()), res
    assert "Traceback" not in res.err


# ------------------------------------------------------------------ the cache
def _cache_cases(tmp_path):
    good = {"schema": 1, "index_base": TORCH_INDEX, "fetched_at": time.time(), "variants": {}}
    cases = {
        "invalid-utf8": b'{"schema": 1, "index_base": "\xff\xfe", "variants": {}}',
        "deep": ("[" * 100000 + "]" * 100000).encode(),
        "deep-object": ('{"a": ' * 50000 + "1" + "}" * 50000).encode(),
    }
    for label, value in (("1e300", "1e300"), ("Infinity", "Infinity"), ("NaN", "NaN"), ("-1e18", "-1e18")):
        cases["fetched_at-" + label] = json.dumps(good).replace('"fetched_at": %s' % json.dumps(good["fetched_at"]),
                                                                '"fetched_at": %s' % value).encode()
    return cases


def _write_case(folder, name, content):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / cache.CACHE_NAME
    if name == "dev-zero":
        os.symlink("/dev/zero", path)
    elif name == "fifo":
        os.mkfifo(path)
    elif name == "500MB":
        with open(path, "wb") as fh:
            fh.write(b'{"schema": 1, "pad": "')
            fh.truncate(500 * MIB)  # sparse: 500 MB without the disk
    else:
        path.write_bytes(content)
    return path


ALL_CASES = ["invalid-utf8", "deep", "deep-object", "fetched_at-1e300", "fetched_at-Infinity", "fetched_at-NaN",
             "fetched_at--1e18", "dev-zero", "fifo", "500MB"]


@pytest.mark.timeout(60)  # a FIFO or /dev/zero read would block or run for ever: this fails it instead
@pytest.mark.parametrize("name", ALL_CASES)
def test_a_bad_cache_is_ignored_with_one_note(tmp_path, name):
    path = _write_case(tmp_path / "c", name, _cache_cases(tmp_path).get(name))
    data, note = cache.load_cache(str(path), TORCH_INDEX, "2026-08-21")
    assert data is None and "ignored" in note, note
    assert "\n" not in note


@pytest.mark.parametrize("name", ALL_CASES)
def test_recommend_and_refresh_ignore_a_bad_cache_with_one_note(cli, fake_root, tmp_path, name):
    folder = tmp_path / "c"
    _write_case(folder, name, _cache_cases(tmp_path).get(name))
    env = {"PATH": TOOLS, "CUDAENV_CACHE_DIR": str(folder), "CUDAENV_TORCH_INDEX": TORCH_INDEX}
    res = cli("torch", "recommend", "--root", str(fake_root.path), "--driver", "560.35.03", "--compute-capability", "8.6",
              "--torch", "2.7.1", env=env)
    assert res.code == 0, res
    assert (res.out + res.err).count("the torch index cache") == 1, res.out
    assert "Traceback" not in res.err
    res = cli("torch", "refresh", "--index-base", _dead_base(), "--timeout", "1", env=env)
    assert res.code == 1, res
    assert (res.out + res.err).count("the torch index cache") == 1, res.err


@pytest.mark.parametrize("name", ["invalid-utf8", "fetched_at-NaN", "dev-zero", "500MB"])
def test_fix_ignores_a_bad_cache_with_one_note(cli, fake_root, fake_bin, tmp_path, name):
    from builders import recorded

    folder = tmp_path / "c"
    _write_case(folder, name, _cache_cases(tmp_path).get(name))
    fake_bin.command("nvidia-smi", recorded("smi-banner-550-single.txt"), by_args={"--query-gpu": (recorded("smi-query-titanv-5880.txt"), 0)})
    env = {"PATH": fake_bin.env_path, "CUDAENV_CACHE_DIR": str(folder), "HOME": str(tmp_path / "home")}
    res = cli("fix", "--dry-run", "--root", str(fake_root.path), "--python", sys.executable, env=env)
    assert "[torch-missing]" in res.out, res
    assert res.out.count("the torch index cache") == 1, res.out


def _dead_base():
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return "http://127.0.0.1:%d/whl" % port


# ------------------------------------------------------------------ parsers: any input, bounded time
@settings(max_examples=150)
@given(st.one_of(st.text(max_size=3000), st.binary(max_size=3000).map(lambda b: b.decode("latin-1"))))
def test_page_parsers_take_any_text_quickly(text):
    for ctype in ("text/html", "application/vnd.pypi.simple.v1+json", ""):
        page = pages.parse_index_page(text, ctype)
        assert page.problem is None or page.files == ()
    pages.parse_wheel_filename(text)
    assert isinstance(pages.json_depth_within(text), bool)


@pytest.mark.parametrize("head, unit", [
    ("", "<a"), ("", "<a href=x>"), ("", "<a href='"), ("", "</a"), ("<a ", "x"),
    ('{"files": ["', "\\"), ("", '"'), ("{", '"\\"'),
])
def test_page_parsers_are_linear_on_adversarial_pages(head, unit):
    def both(text):
        pages.parse_index_page(text, "text/html")
        pages.parse_index_page(text, "application/vnd.pypi.simple.v1+json")

    assert_linear(both, unit, head=head)


def test_unknown_fetched_at_values_are_refused_by_the_record():
    for bad in (1e300, math.inf, math.nan, -1e18, True, "1"):
        with pytest.raises(ValueError, match="fetched_at is not a time"):
            ti.IndexData.from_dict({"schema": 1, "index_base": "x", "fetched_at": bad, "variants": {}})


def test_an_offline_fix_checks_the_index_before_running_pip(cli, fake_root, fake_bin, tmp_path):
    """Issue 13: pip spent 82 s and 50 lines in retries; the refresh knew in 2 s that the index is unreachable."""
    from builders import recorded

    fake_bin.command("nvidia-smi", recorded("smi-banner-550-single.txt"), by_args={"--query-gpu": (recorded("smi-query-titanv-5880.txt"), 0)})
    env = {"PATH": fake_bin.env_path, "CUDAENV_CACHE_DIR": str(tmp_path / "c"), "HOME": str(tmp_path / "home")}
    res = cli("fix", "--yes", "--root", str(fake_root.path), "--python", sys.executable, "--index-base", _dead_base(), env=env)
    assert res.code == 1, res
    assert "The index cannot be reached" in res.out and "refused the connection" in res.out and "Running" not in res.out


def test_fix_passes_pip_bounded_retries():
    from cudaenv.fix.apply import install_argv
    from cudaenv.recommend.records import Recommendation

    rec = Recommendation("cu126", "https://download.pytorch.org/whl/cu126", "2.14.1", packages=("torch==2.14.1+cu126",))
    argv = install_argv(rec, "/v/bin/python")
    assert argv[:8] == ["/v/bin/python", "-m", "pip", "install", "--retries", "1", "--timeout", "15"]
