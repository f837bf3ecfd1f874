"""Live index data: a real HTTP server on 127.0.0.1 serving a small PyTorch-style index tree."""

import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from hypothesis import given, strategies as st

from cudaenv.index import cache, client
from cudaenv.index import torch as ti
from cudaenv.parse import index_pages as pages
from cudaenv.recommend import recommend
from cudaenv.model.snapshot import Driver, Gpu, Platform, Snapshot, Torch
from cudaenv.host.process import Deadline

from builders import TOOLS, recorded


def _wheel(version, local, py="cp311", plat="manylinux_2_28_x86_64"):
    return "torch-%s%s-%s-%s-%s.whl" % (version, "+" + local if local else "", py, py, plat)


ROOT_FILES = [
    _wheel("2.13.0", "cu126"), _wheel("2.13.0", "cu126", "cp312"), _wheel("2.13.0", "cpu"),
    _wheel("2.15.0", "cu134"), _wheel("2.15.0", "cu134", "cp312"), _wheel("2.15.0", "cu134", plat="win_amd64"),
    _wheel("2.15.0", "cu126"), _wheel("2.15.0", "cpu"),
    _wheel("2.15.0", "cu999"), _wheel("2.15.0", "cu998"),
    _wheel("1.13.1", "cu117"),  # older than 2.0: not fetched
]


def html_page(names):
    links = "".join('<a href="/whl/%s#sha256=00">%s</a><br/>\n' % (n.replace("+", "%2B"), n) for n in names)
    return "<!DOCTYPE html><html><body><h1>Links for torch</h1>\n%s</body></html>\n" % links


def json_page(names):
    return json.dumps({"meta": {"api-version": "1.1"}, "name": "torch", "files": [{"filename": n, "url": n, "hashes": {}} for n in names]})


class IndexServer:
    """/whl/torch/ (HTML), /whl/cu134/torch/ (PEP 691 JSON when asked), /whl/cu126/torch/ (HTML),
    /whl/cpu/torch/ (JSON), /whl/cu999/torch/ (slow), /whl/cu998/torch/ (broken)."""

    def __init__(self, slow=3.0):
        self.requests = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):
                server.requests.append((self.path, self.headers.get("Accept", "")))
                wants_json = "application/vnd.pypi.simple.v1+json" in self.headers.get("Accept", "")
                path = self.path
                if path == "/whl/torch/":
                    return self.send(200, html_page(ROOT_FILES), "text/html")
                if path == "/whl/cu134/torch/":
                    names = [n for n in ROOT_FILES if "+cu134" in n]
                    if wants_json:
                        return self.send(200, json_page(names), "application/vnd.pypi.simple.v1+json")
                    return self.send(200, html_page(names), "text/html")
                if path == "/whl/cu126/torch/":
                    return self.send(200, html_page([n for n in ROOT_FILES if "+cu126" in n]), "text/html")
                if path == "/whl/cpu/torch/":
                    return self.send(200, json_page([n for n in ROOT_FILES if "+cpu" in n]), "application/vnd.pypi.simple.v1+json")
                if path == "/whl/cu999/torch/":
                    time.sleep(slow)
                    return self.send(200, html_page([]), "text/html")
                if path == "/whl/cu998/torch/":
                    return self.send(200, '{"meta": {"api-version": "1.0"}, "files": [', "application/vnd.pypi.simple.v1+json")
                return self.send(404, "not found", "text/plain")

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

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        self.base = "http://127.0.0.1:%d/whl" % self.httpd.server_address[1]

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def index_server():
    srv = IndexServer()
    yield srv
    srv.close()


def _dead_base():
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return "http://127.0.0.1:%d/whl" % port


# ------------------------------------------------------------------ parsing
def test_parse_real_wheel_links():
    names = [line for line in recorded("index-wheel-links-cu126.txt").splitlines() if line]
    wheels = [pages.parse_wheel_filename(n) for n in names]
    assert [(w.name, w.version, w.local, w.platform, w.pythons) for w in wheels] == [
        ("torch", "2.13.0", "cu126", "linux-x86_64", ("3.12",)),
        ("torchvision", "0.28.0", "cu126", "linux-x86_64", ("3.12",)),
        ("torchaudio", "2.11.0", "cu126", "linux-x86_64", ("3.12",)),
    ]


@pytest.mark.parametrize("name, expected", [
    ("torch-2.7.1+cu128-cp313-cp313t-manylinux_2_28_aarch64.whl", ("2.7.1", "cu128", "linux-aarch64", ("3.13t",))),
    ("torch-2.2.2-cp39-none-macosx_10_9_x86_64.whl", ("2.2.2", None, "macos-x86_64", ("3.9",))),
    ("torch-2.6.0%2Bcpu-cp312-cp312-win_amd64.whl", ("2.6.0", "cpu", "windows-x86_64", ("3.12",))),
    ("torch-2.5.0.dev20240801+cu124-cp311-cp311-linux_x86_64.whl", ("2.5.0.dev20240801", "cu124", "linux-x86_64", ("3.11",))),
    ("torch-2.1.0+rocm5.6-cp310-cp310-linux_x86_64.whl", ("2.1.0", "rocm5.6", "linux-x86_64", ("3.10",))),
])
def test_parse_wheel_filename(name, expected):
    w = pages.parse_wheel_filename(name)
    assert (w.version, w.local, w.platform, w.pythons) == expected


@pytest.mark.parametrize("name", ["torch-2.7.1.tar.gz", "torch.whl", "torch-2.7.1-cp311.whl", "", "-----.whl"])
def test_not_wheels(name):
    assert pages.parse_wheel_filename(name) is None


@given(st.text(max_size=200))
def test_parsers_take_any_text(text):
    pages.parse_wheel_filename(text)
    for ctype in ("text/html", "application/vnd.pypi.simple.v1+json"):
        page = pages.parse_index_page(text, ctype)
        assert isinstance(page.files, tuple) and (page.problem is None or not page.files)


def test_parse_pages_both_formats():
    names = ROOT_FILES[:3]
    assert pages.parse_index_page(html_page(names), "text/html").files == tuple(names)
    assert pages.parse_index_page(json_page(names), "application/vnd.pypi.simple.v1+json").files == tuple(names)
    assert "not valid JSON" in pages.parse_index_page('{"files": [', "application/vnd.pypi.simple.v1+json").problem
    assert pages.parse_index_page("just text", "text/plain").problem == "neither JSON nor HTML"


# ------------------------------------------------------------------ refresh against the server
def test_refresh_learns_cu134_and_survives_slow_and_broken_pages(index_server):
    result = ti.refresh(index_server.base, timeout=1.0)  # cu999 answers after 3 s: its note says it was cut off
    data = result.data
    assert data is not None
    assert "cu134" in data.variants and data.variants["cu134"]["2.15.0"]["linux-x86_64"] == ["3.11", "3.12"]
    assert data.variants["cu134"]["2.15.0"]["windows-x86_64"] == ["3.11"]
    assert data.variants_for("2.15.0", "linux-x86_64", "3.12") == ("cu134",)  # cu126 has only a cp311 wheel
    assert data.variants_for("2.15.0", "linux-x86_64", "3.11") == ("cu126", "cu134", "cpu")
    assert data.torch_versions()[-1] == "2.15.0"
    notes = " ".join(result.notes)
    assert "cu999" in notes and "timed out" in notes
    assert "cu998" in notes and "JSON" in notes
    assert result.pages_failed == 2
    # old variants (cu117 only for torch 1.13) are not fetched; JSON was asked for
    paths = [p for p, _ in index_server.requests]
    assert "/whl/cu117/torch/" not in paths
    assert all("application/vnd.pypi.simple.v1+json" in accept for _, accept in index_server.requests)


def test_refresh_offline_gives_no_data_and_says_so():
    result = ti.refresh(_dead_base(), timeout=1.0, extra_variants=["cu126"])
    assert result.data is None
    assert "nothing could be read" in result.notes[-1]


def test_recommend_with_learned_data_picks_cu134(index_server):
    data = ti.refresh(index_server.base, timeout=1.0).data
    snap = Snapshot(platform=Platform(system="linux", machine="x86_64"), driver=Driver(version="595.45.04"),
                    gpus=(Gpu(0, name="NVIDIA GeForce RTX 5090", compute_capability="12.0"),),
                    torch=Torch(python="/venv/bin/python", python_version="3.12.1"))
    rec = recommend(snap, torch_version="latest", index_data=data, index_base=index_server.base)
    assert (rec.torch_version, rec.variant) == ("2.15.0", "cu134")
    assert rec.index_url == index_server.base + "/cu134"
    assert any("not in the bundled table" in n for n in rec.notes)
    # an older driver: cu126 from the same live data
    # an older driver: cu134 needs 580, and cu126 (arch list borrowed from the newest bundled cu126) has no sm_120
    old = recommend(snap, torch_version="2.15.0", driver="560.35.03", index_data=data)
    assert old.variant is None
    assert any(a.kind == "driver" and a.driver == "580" for a in old.alternatives)
    # an RTX 3090 on that driver runs the learned 2.15.0 cu126
    ampere = recommend(snap, torch_version="2.15.0", driver="560.35.03", compute_capabilities=["8.6"], python_version="3.11",
                       index_data=data)
    assert ampere.variant == "cu126"
    # ... but the live data has no cp312 wheel of it
    assert recommend(snap, torch_version="2.15.0", driver="560.35.03", compute_capabilities=["8.6"], index_data=data).variant is None


# ------------------------------------------------------------------ the cache
def test_cache_written_atomically_and_read_back(tmp_path, index_server):
    data = ti.refresh(index_server.base, timeout=1.0).data
    path = str(tmp_path / "c" / cache.CACHE_NAME)
    cache.write_cache(path, data)
    first_inode = os.stat(path).st_ino
    cache.write_cache(path, data)
    assert os.stat(path).st_ino != first_inode  # replaced, never rewritten in place
    assert os.listdir(tmp_path / "c") == [cache.CACHE_NAME]  # no temporary files left
    back, note = cache.load_cache(path, index_server.base, "2026-08-21")
    assert note is None and back.variants == data.variants
    # a write that fails half-way leaves the old cache intact and no temporary file
    broken = ti.IndexData(index_server.base, time.time(), {"cu126": {"2.13.0": {"linux-x86_64": {object()}}}})
    with pytest.raises(TypeError):
        cache.write_cache(path, broken)
    assert os.listdir(tmp_path / "c") == [cache.CACHE_NAME]
    assert cache.load_cache(path, index_server.base, "2026-08-21")[0].variants == data.variants


@pytest.mark.parametrize("content", ["{not json", '{"schema": 1}', '{"schema": 99, "variants": {}}', "",
                                     '{"schema": 1, "index_base": "x", "fetched_at": 1, "variants": {"cu1": {"2": {"p": 5}}}}'])
def test_corrupt_cache_is_ignored_with_a_note(tmp_path, content):
    path = tmp_path / cache.CACHE_NAME
    path.write_text(content)
    data, note = cache.load_cache(str(path), "x", "2026-08-21")
    assert data is None and "ignored" in note


@pytest.mark.parametrize("schema, why", [(ti.CACHE_SCHEMA + 1, "was written by a newer cudaenv (cache schema %d; this one reads %d)"
                                         % (ti.CACHE_SCHEMA + 1, ti.CACHE_SCHEMA)),
                                        (ti.CACHE_SCHEMA - 1, "was written by an older cudaenv (cache schema %d; this one reads %d)"
                                         % (ti.CACHE_SCHEMA - 1, ti.CACHE_SCHEMA)),
                                        (None, "has no cache schema this cudaenv knows"), (True, "has no cache schema"),
                                        ("1", "has no cache schema"), (10**30, "has no cache schema")])
def test_a_cache_of_another_layout_is_ignored_and_named(tmp_path, schema, why):
    # an otherwise valid cache: only its version differs (a newer cudaenv may have added keys this one would misread)
    path = tmp_path / cache.CACHE_NAME
    good = ti.IndexData("http://a/whl", time.time(), {"cu126": {"2.13.0": {"linux-x86_64": ["3.12"]}}}).to_dict()
    assert good["schema"] == ti.CACHE_SCHEMA and cache.load_cache(_write(path, good), "http://a/whl", "2026-08-21")[1] is None
    data, note = cache.load_cache(_write(path, dict(good, schema=schema)), "http://a/whl", "2026-08-21")
    assert data is None and why in note and note.endswith("ignored (`cudaenv torch refresh` rebuilds it)"), note
    with pytest.raises(ti.CacheVersionError):
        ti.IndexData.from_dict(dict(good, schema=schema))


def _write(path, data):
    path.write_text(json.dumps(data))
    return str(path)


def test_refresh_writes_a_new_cache_over_one_of_a_newer_layout(cli, fake_root, tmp_path):
    folder = tmp_path / "cache"
    folder.mkdir()
    newer = dict(ti.IndexData("x", time.time(), {}).to_dict(), schema=ti.CACHE_SCHEMA + 1, index_base="http://x/whl")
    _write(folder / cache.CACHE_NAME, newer)
    srv = IndexServer()
    env = {"PATH": TOOLS, "CUDAENV_CACHE_DIR": str(folder), "CUDAENV_TORCH_INDEX": srv.base}
    try:
        res = cli("torch", "recommend", "--root", str(fake_root.path), "--torch", "2.7.1", "--driver", "560.35.03",
                  "--compute-capability", "8.6", env=env)
        assert res.code == 0 and "written by a newer cudaenv" in " ".join((res.out + res.err).split()), res
        assert cli("torch", "refresh", "--timeout", "1", env=env).code == 0
    finally:
        srv.close()
    back, note = cache.load_cache(str(folder / cache.CACHE_NAME), srv.base, "2026-08-21")
    assert note is None and "cu134" in back.variants  # refetched, in this version's layout
    assert json.loads((folder / cache.CACHE_NAME).read_text())["schema"] == ti.CACHE_SCHEMA


def test_stale_or_foreign_cache_is_ignored(tmp_path):
    path = str(tmp_path / cache.CACHE_NAME)
    old = ti.IndexData("http://a/whl", time.mktime((2025, 1, 1, 0, 0, 0, 0, 0, 0)), {"cu126": {}})
    cache.write_cache(path, old)
    data, note = cache.load_cache(path, "http://a/whl", "2026-08-21")
    assert data is None and "older than the bundled tables" in note
    cache.write_cache(path, ti.IndexData("http://a/whl", time.time(), {}))
    data, note = cache.load_cache(path, "http://b/whl", "2026-08-21")
    assert data is None and "not http://b/whl" in note
    assert cache.load_cache(str(tmp_path / "missing.json"), "x", "2026-08-21") == (None, None)


# ------------------------------------------------------------------ the commands
def test_refresh_command_then_recommend_offline_uses_the_cache(cli, fake_root, tmp_path):
    srv = IndexServer()
    env = {"PATH": TOOLS, "CUDAENV_CACHE_DIR": str(tmp_path / "cache"), "CUDAENV_TORCH_INDEX": srv.base}
    try:
        res = cli("torch", "refresh", "--timeout", "1", env=env)
        assert res.code == 0, res
        assert "new since the bundled table: cu134" in res.out and "cu999" in res.out and "cu999" not in res.out.split("variants:")[1].split("\n")[0]
        assert (tmp_path / "cache" / cache.CACHE_NAME).is_file()
        js = cli("torch", "refresh", "--timeout", "1", "--json", env=env).json()
        assert "cu134" in js["new_variants"] and "2.15.0" in js["new_torch_versions"]
    finally:
        srv.close()
    # the server is gone: recommend reads only the cache
    res = cli("torch", "recommend", "--root", str(fake_root.path), "--torch", "latest", "--driver", "595.45.04",
              "--compute-capability", "12.0", "--python-version", "3.11", "--json", env=env)
    assert res.code == 0, res
    assert (res.json()["torch_version"], res.json()["variant"]) == ("2.15.0", "cu134")


def test_recommend_refresh_offline_falls_back_with_a_note(cli, fake_root, tmp_path):
    env = {"PATH": TOOLS, "CUDAENV_CACHE_DIR": str(tmp_path / "cache"), "CUDAENV_INDEX_TIMEOUT": "1"}
    res = cli("torch", "recommend", "--root", str(fake_root.path), "--refresh", "--index-base", _dead_base(), "--driver", "575.51.03",
              "--compute-capability", "8.6", "--torch", "2.7.1", env=env)
    assert res.code == 0, res
    assert "torch 2.7.1, cu128" in res.out
    assert "note: offline" in res.out and "bundled tables" in res.out
    res = cli("torch", "refresh", "--index-base", _dead_base(), "--timeout", "1", env=env)
    assert res.code == 1 and "offline" in res.err


def test_recommend_ignores_a_corrupt_cache(cli, fake_root, tmp_path):
    folder = tmp_path / "cache"
    folder.mkdir()
    (folder / cache.CACHE_NAME).write_text("{garbage")
    env = {"PATH": TOOLS, "CUDAENV_CACHE_DIR": str(folder)}
    res = cli("torch", "recommend", "--root", str(fake_root.path), "--driver", "560.35.03", "--compute-capability", "6.1",
              "--torch", "2.7.1", env=env)
    assert res.code == 0 and "cu126" in res.out and "is corrupt" in res.out and res.out.count("torch index cache") == 1, res


# ------------------------------------------------------------------ a server that trickles bytes
class TrickleServer:
    """/whl/torch/ lists cu126 and cu997 wheels; /whl/cu997/torch/ promises a page and sends one byte every 0.1 s."""

    def __init__(self):
        self.requests = []
        server = self
        self.stop = threading.Event()

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):
                server.requests.append(self.path)
                if self.path == "/whl/cu997/torch/":
                    body = html_page([_wheel("2.15.0", "cu997")] * 50).encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "text/html")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    try:
                        for i in range(len(body)):
                            if server.stop.is_set():
                                return
                            self.wfile.write(body[i:i + 1])
                            self.wfile.flush()
                            time.sleep(0.1)
                    except (BrokenPipeError, ConnectionResetError):
                        return
                    return
                if self.path == "/whl/torch/":
                    names = [_wheel("2.13.0", "cu126"), _wheel("2.15.0", "cu997")]
                elif self.path == "/whl/cu126/torch/":
                    names = [_wheel("2.13.0", "cu126")]
                else:
                    self.send_error(404)
                    return
                body = html_page(names).encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.base = "http://127.0.0.1:%d/whl" % self.httpd.server_address[1]

    def close(self):
        self.stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def trickle_server():
    srv = TrickleServer()
    yield srv
    srv.close()


def test_a_trickling_page_is_cut_off_by_the_overall_deadline(trickle_server):
    # each byte comes well inside the 1 s read timeout, so only the deadline per page can stop it
    with pytest.raises(client.FetchError, match="took longer than 1.5 s in all"):
        client.fetch_page(trickle_server.base + "/cu997/torch/", Deadline(1.5))
    text, ctype = client.fetch_page(trickle_server.base + "/cu126/torch/", Deadline(1.5))  # a fresh run
    assert pages.parse_index_page(text, ctype).files == (_wheel("2.13.0", "cu126"),)


def test_refresh_finishes_despite_a_trickling_page(trickle_server):
    result = ti.refresh(trickle_server.base, timeout=1.0, deadline=1.5)
    assert result.pages_read == 2 and result.pages_failed == 1
    assert "cu997" in " ".join(result.notes) and "took longer" in " ".join(result.notes)
    assert set(result.data.variants) == {"cu126"}


def test_recommend_touches_no_network_unless_asked(cli, fake_root, tmp_path, index_server):
    env = {"PATH": TOOLS, "CUDAENV_CACHE_DIR": str(tmp_path / "cache"), "CUDAENV_TORCH_INDEX": index_server.base}
    res = cli("torch", "recommend", "--root", str(fake_root.path), "--driver", "560.35.03", "--compute-capability", "6.1",
              "--torch", "2.7.1", "--json", env=env)
    assert res.code == 0, res
    assert res.json()["index_url"] == index_server.base + "/cu126"
    assert index_server.requests == []
    res = cli("torch", "recommend", "--root", str(fake_root.path), "--driver", "560.35.03", "--compute-capability", "6.1",
              "--torch", "2.7.1", "--refresh", "--json", env=dict(env, CUDAENV_INDEX_TIMEOUT="1"))
    assert res.code == 0, res
    assert ("/whl/torch/", client.ACCEPT) in index_server.requests


def test_timeout_settings_are_checked(cli, tmp_path):
    env = {"PATH": TOOLS, "CUDAENV_CACHE_DIR": str(tmp_path / "c"), "CUDAENV_TORCH_INDEX": _dead_base()}
    res = cli("torch", "refresh", "--timeout", "0", env=env)
    assert res.code == 2 and "--timeout must be more than 0 seconds" in res.err
    res = cli("torch", "refresh", env=dict(env, CUDAENV_INDEX_TIMEOUT="soon"))
    assert res.code == 2 and "CUDAENV_INDEX_TIMEOUT=soon is not a number of seconds" in res.err
    from cudaenv.fix.apply import install_timeout
    from cudaenv.core.errors import UserError

    assert install_timeout({}) == 1800.0 and install_timeout({"CUDAENV_INSTALL_TIMEOUT": "60"}) == 60.0
    with pytest.raises(UserError, match="CUDAENV_INSTALL_TIMEOUT must be more than 0"):
        install_timeout({"CUDAENV_INSTALL_TIMEOUT": "-5"})
