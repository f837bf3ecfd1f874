"""`cudaenv torch mirror-check` and --mirror against a real HTTP server on 127.0.0.1 serving a constructed index tree:
the official index, a good mirror (PEP 691 JSON, relative links), a flat listing, one that lags (no newest build),
one that answers with an HTML error page, one that is too slow, one whose links point back upstream, one whose HEAD
redirects upstream, and one whose file differs (hash)."""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import TOOLS
from cudaenv.parse.index_pages import IndexLink, parse_index_links
from cudaenv.recommend.mirrors import SourceCheck, WheelWant, find_wheel, judge_mirror, served_by

SHA = "a" * 64
OTHER = "b" * 64
WANT = "torch-2.7.1+cu126-cp311-cp311-manylinux_2_28_x86_64.whl"
OLDER = ["torch-2.7.0+cu126-cp311-cp311-manylinux_2_28_x86_64.whl", "torch-2.6.0+cu126-cp311-cp311-manylinux_2_28_x86_64.whl"]
BESIDE = ["torch-2.7.1+cu126-cp312-cp312-manylinux_2_28_x86_64.whl", "torch-2.7.1+cu126-cp311-cp311-win_amd64.whl"]
ERROR_PAGE = "<html><head><title>502 Bad Gateway</title></head><body><h1>502 Bad Gateway</h1><hr><center>nginx</center></body></html>"


def _html(links):
    rows = "".join('<a href="%s">%s</a><br/>\n' % (href, name) for name, href in links)
    return "<!DOCTYPE html><html><body><h1>Links for torch</h1>\n%s</body></html>\n" % rows


class Tree:
    """One server, one 'site' per path prefix: /official, /good, /flat, /lag, /err, /slow, /upstream, /redir, /bad."""

    def __init__(self, slow=3.0):
        tree = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_HEAD(self):
                if self.path.startswith("/redir/") and self.path.endswith(".whl"):
                    self.send_response(302)
                    self.send_header("Location", tree.url("/official/whl/cu126/") + WANT.replace("+", "%2B"))
                    self.end_headers()
                    return
                self.send_response(200 if self.path.endswith(".whl") else 404)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_GET(self):
                site, _, rest = self.path[1:].partition("/")
                page = tree.page(site, "/" + rest, self.headers.get("Accept", ""))
                if page is None:
                    return self.send(404, "not found", "text/plain")
                self.send(*page)

            def send(self, code, body, ctype):
                data = body.encode()
                try:
                    self.send_response(code)
                    self.send_header("Content-Type", ctype)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.slow = slow
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.root = "http://127.0.0.1:%d" % self.httpd.server_address[1]

    def url(self, path):
        return self.root + path

    def page(self, site, path, accept):
        names = [WANT] + OLDER + BESIDE
        quoted = lambda n: n.replace("+", "%2B")  # noqa: E731
        if path == "/whl/cu126/torch/":
            if site == "official":  # absolute links, as PyTorch's pages carry since 2026-05
                return 200, _html([(n, self.url("/official/whl/cu126/%s#sha256=%s" % (quoted(n), SHA))) for n in names]), "text/html"
            if site == "good" and "vnd.pypi.simple.v1+json" in accept:
                files = [{"filename": n, "url": "../%s" % quoted(n), "hashes": {"sha256": SHA}} for n in names]
                return 200, json.dumps({"meta": {"api-version": "1.1"}, "name": "torch", "files": files}), "application/vnd.pypi.simple.v1+json"
            if site == "lag":
                return 200, _html([(n, "../%s#sha256=%s" % (quoted(n), SHA)) for n in OLDER]), "text/html"
            if site == "err":
                return 200, ERROR_PAGE, "text/html"
            if site == "slow":
                time.sleep(self.slow)
                return 200, _html([]), "text/html"
            if site == "upstream":  # a mirror that copied the absolute links
                return 200, _html([(n, self.url("/official/whl/cu126/%s#sha256=%s" % (quoted(n), SHA))) for n in names]), "text/html"
            if site in ("redir", "bad"):
                return 200, _html([(n, "../%s#sha256=%s" % (quoted(n), OTHER if site == "bad" else SHA)) for n in names]), "text/html"
        if path == "/whl/cu126/" and site == "flat":
            return 200, _html([(n, quoted(n)) for n in names]), "text/html"
        if path == "/whl/cu126/" and site == "err":
            return 200, ERROR_PAGE, "text/html"
        return None

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(scope="module")
def tree():
    t = Tree()
    yield t
    t.close()


MACHINE = ("--driver", "560.35.03", "--compute-capability", "8.6", "--torch", "2.7.1", "--python-version", "3.11",
           "--machine", "x86_64")


def check(cli, fake_root, tmp_path, tree, site, *extra):
    env = {"PATH": TOOLS, "CUDAENV_CACHE_DIR": str(tmp_path / "c")}
    res = cli("torch", "mirror-check", tree.url("/%s/whl" % site), "--root", str(fake_root.path), *MACHINE,
              "--index-base", tree.url("/official/whl"), "--json", *extra, env=env)
    assert res.code in (0, 1), res
    return res.code, res.json()


def test_a_good_mirror_serves_the_build_itself_with_the_official_hash(cli, fake_root, tmp_path, tree):
    code, data = check(cli, fake_root, tmp_path, tree, "good")
    assert (code, data["verdict"], data["hash_match"]) == (0, "ok", True)
    src = data["source"]
    assert src["layout"] == "simple" and src["file"] == WANT and src["served_by"] == "mirror" and src["sha256"] == SHA
    assert src["file_url"] == tree.url("/good/whl/cu126/" + WANT.replace("+", "%2B"))
    assert data["want"] == {"torch_version": "2.7.1", "variant": "cu126", "local": "cu126", "python": "3.11", "platform": "linux-x86_64"}
    assert data["commands"][0].endswith("torch==2.7.1+cu126 --index-url %s" % tree.url("/good/whl/cu126"))


def test_a_flat_listing_is_read_when_there_is_no_simple_index(cli, fake_root, tmp_path, tree):
    code, data = check(cli, fake_root, tmp_path, tree, "flat")
    assert (code, data["verdict"], data["source"]["layout"]) == (0, "ok", "flat")
    assert data["hash_match"] is None  # the listing gives no hash
    assert all("--find-links %s" % tree.url("/flat/whl/cu126") in c for c in data["commands"])
    assert data["snippet"][:2] == ["[pypi-options]", 'find-links = [{ url = "%s" }]' % tree.url("/flat/whl/cu126")]


def test_a_mirror_that_lags_lacks_the_newest_build(cli, fake_root, tmp_path, tree):
    code, data = check(cli, fake_root, tmp_path, tree, "lag")
    assert (code, data["verdict"], data["source"]["newest"]) == (1, "lagging", "2.7.0")


def test_an_html_error_page_is_no_index(cli, fake_root, tmp_path, tree):
    code, data = check(cli, fake_root, tmp_path, tree, "err")
    assert (code, data["verdict"]) == (1, "not-an-index")


def test_a_mirror_too_slow_times_out(cli, fake_root, tmp_path, tree):
    code, data = check(cli, fake_root, tmp_path, tree, "slow", "--index-timeout", "0.5")
    assert (code, data["verdict"]) == (1, "timeout"), data


def test_links_back_upstream_and_a_redirect_upstream(cli, fake_root, tmp_path, tree):
    code, data = check(cli, fake_root, tmp_path, tree, "upstream")
    assert (code, data["verdict"], data["source"]["served_by"]) == (1, "upstream", "upstream")
    code, data = check(cli, fake_root, tmp_path, tree, "redir")
    assert (code, data["verdict"]) == (1, "upstream")
    assert data["source"]["redirect"] == tree.url("/official/whl/cu126/" + WANT.replace("+", "%2B"))


def test_a_file_whose_hash_differs_from_the_official_one(cli, fake_root, tmp_path, tree):
    code, data = check(cli, fake_root, tmp_path, tree, "bad")
    assert (code, data["verdict"], data["hash_match"]) == (1, "hash-mismatch", False)


def test_the_text_and_an_unreachable_mirror(cli, fake_root, tmp_path, tree):
    env = {"PATH": TOOLS, "CUDAENV_CACHE_DIR": str(tmp_path / "c")}
    res = cli("torch", "mirror-check", tree.url("/good/whl"), "--root", str(fake_root.path), *MACHINE,
              "--index-base", tree.url("/official/whl"), env=env)
    flat = " ".join(res.out.split())
    assert res.code == 0 and "OK: the mirror serves this build itself, and its sha256 matches the official index's." in flat
    dead = cli("torch", "mirror-check", "http://127.0.0.1:9/whl", "--root", str(fake_root.path), *MACHINE, env=env)
    assert dead.code == 1 and "Not usable: the mirror cannot be reached" in " ".join(dead.out.split())
    assert cli("torch", "mirror-check", "--root", str(fake_root.path), *MACHINE, env=env).code == 2  # no mirror named
    assert cli("torch", "mirror-check", "--mirror", "nowhere", "--root", str(fake_root.path), *MACHINE, env=env).code == 2


def test_recommend_and_fix_name_the_mirror_as_the_only_index(cli, fake_root, tmp_path):
    env = {"PATH": TOOLS, "CUDAENV_CACHE_DIR": str(tmp_path / "c")}
    res = cli("torch", "recommend", "--root", str(fake_root.path), *MACHINE, "--mirror", "aliyun", "--json", env=env)
    data = res.json()
    assert data["mirror"] == "aliyun" and data["index_layout"] == "flat"
    assert data["commands"][0].endswith("torch==2.7.1+cu126 --find-links https://mirrors.aliyun.com/pytorch-wheels/cu126")
    nju = cli("torch", "recommend", "--root", str(fake_root.path), *MACHINE, "--mirror", "nju", "--json", env=env).json()
    assert nju["commands"][0].endswith("--index-url https://mirrors.nju.edu.cn/pytorch/whl/cu126") and nju["index_layout"] == "simple"


def test_the_judgement_on_links():
    want = WheelWant("2.7.1", "cu126", "cu126", "3.11", "linux-x86_64")
    links = parse_index_links(_html([(n, "../%s#sha256=%s" % (n, SHA.upper())) for n in [WANT] + OLDER])).links
    link, url, newest = find_wheel(links, "https://m.example/whl/cu126/torch/", want)
    assert link.sha256 == SHA and url == "https://m.example/whl/cu126/" + WANT and newest == "2.7.1"
    assert find_wheel(links[1:], "https://m.example/", want)[2] == "2.7.0"
    assert served_by("https://download.pytorch.org/whl/cu126/x.whl", "https://m.example/whl", "https://download.pytorch.org/whl") == "upstream"
    assert served_by("https://cdn.example/x.whl", "https://m.example/whl", "https://download.pytorch.org/whl") == "elsewhere"
    mirror = SourceCheck("u", "simple", file=WANT, file_url="u", sha256=SHA, newest="2.7.1", served_by="mirror")
    assert judge_mirror(mirror, SourceCheck("o", sha256=None), want) == ("ok", None)
    assert judge_mirror(mirror, SourceCheck("o", sha256=OTHER), want) == ("hash-mismatch", False)
    assert parse_index_links('{"files": [{"filename": "a.whl", "hashes": {"sha256": "zz"}}]}').links == (IndexLink("a.whl", "a.whl", None),)


@settings(max_examples=200)
@given(st.one_of(st.text(), st.binary()), st.sampled_from(["", "text/html", "application/vnd.pypi.simple.v1+json"]))
def test_links_never_raise_and_name_what_the_page_reader_names(text, ctype):
    from cudaenv.parse.index_pages import parse_index_page

    links = parse_index_links(text, ctype)
    page = parse_index_page(text, ctype)
    assert tuple(link.filename for link in links.links) == page.files and links.problem == page.problem
    assert all(link.sha256 is None or len(link.sha256) == 64 for link in links.links)


def test_links_in_linear_work():
    from builders import assert_linear

    assert_linear(lambda t: parse_index_links(t, "text/html"), '<a href="x.whl#sha256=%s">torch-1-py3-none-any.whl</a>' % SHA,
                  size=20_000)
