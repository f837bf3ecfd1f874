"""`cudaenv install`'s fetch and unpack errors and `install --list`'s notes in the reader's language (issue 33): the
release list's reasons (the index that could not be read, a stale or corrupt cache, where no index base was found)
and the wheels' refused members are marked messages (toolkit/install/listing.py, assemble.py); the English of each is
unchanged, and the URLs, paths and commands stay as they are. A local index server (tests/install_builders.py)."""

import json
import socket
import time

import pytest

from install_builders import Index

ZH = {"LANG": "zh_CN.UTF-8"}


@pytest.fixture
def index(tmp_path):
    idx = Index(tmp_path)
    yield idx
    idx.close()


def _flat(text):
    return "".join(text.split())


def _closed_port():
    """A local port nothing listens on (bound, then closed): the connection is refused at once."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_refused_member_is_said_in_chinese(index, cli, tmp_path):
    index.add("nvidia-cuda-crt", "13.0.88", {"include/crt/host_config.h": "x"},
              extra_members=[("nvidia/cu13/../../../evil", "boom")])
    index.write()
    english = cli("install", "13.0", env=index.env(tmp_path / "data"))
    assert english.code == 1 and "refused member name 'nvidia/cu13/../../../evil' (it climbs out with ..)" \
        in " ".join(english.err.split())
    zh = cli("install", "13.0", env=dict(index.env(tmp_path / "data2"), **ZH))
    assert zh.code == 1, zh.err
    assert _flat("拒绝成员名 'nvidia/cu13/../../../evil'（它用 .. 跳出了目标文件夹）") in _flat(zh.err), zh.err
    assert "什么都没有安装" in _flat(zh.err) and "refused" not in zh.err


def test_an_index_that_cannot_be_read_in_chinese_then_the_stale_cache(index, cli, tmp_path):
    base = "http://127.0.0.1:%d/simple" % _closed_port()
    env = dict(index.env(tmp_path / "data", CUDAENV_CACHE_DIR=tmp_path / "cache"), CUDAENV_PACKAGE_INDEX=base)
    english = cli("install", "--list", env=env)
    zh = cli("install", "--list", env=dict(env, **ZH))
    assert english.code == zh.code == 1
    assert "the package index could not be read: 127.0.0.1:%s refused the connection" % base.split(":")[2].split("/")[0] \
        in " ".join(english.err.split())
    assert "set CUDAENV_PACKAGE_INDEX to an index that answers, or try again" in " ".join(english.err.split())
    assert _flat("无法读取包索引：127.0.0.1:%s 拒绝了连接" % base.split(":")[2].split("/")[0]) in _flat(zh.err), zh.err
    assert _flat("把 CUDAENV_PACKAGE_INDEX 设为一个能响应的索引，或者稍后重试") in _flat(zh.err)
    # a cache two days old is kept, with a note saying why
    (tmp_path / "cache").mkdir()
    fetched = time.time() - 2 * 86400
    (tmp_path / "cache" / "toolkit-releases.json").write_text(json.dumps(
        {"releases": ["13.0.2", "12.4.1"], "fetched_at": fetched, "index": base}))
    day = time.strftime("%Y-%m-%d", time.gmtime(fetched))
    english = cli("install", "--list", env=env)
    zh = cli("install", "--list", env=dict(env, **ZH))
    assert english.code == zh.code == 0, zh.err
    assert "could not be read: 127.0.0.1:" in english.out and "refused the connection; using the cache of %s" % day \
        in " ".join(english.out.split())
    assert _flat("拒绝了连接；使用 %s 的缓存" % day) in _flat(zh.out) and "using the cache" not in zh.out, zh.out
    assert "13.0.2" in zh.out


def test_a_corrupt_release_cache_is_said_in_chinese(index, cli, tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    path = cache / "toolkit-releases.json"
    path.write_text("{not json")
    env = index.env(tmp_path / "data", CUDAENV_CACHE_DIR=cache)
    english = cli("install", "--list", env=env)
    assert english.code == 0 and "the release cache %s is corrupt; ignored" % path in " ".join(english.out.split())
    path.write_text("{not json")
    zh = cli("install", "--list", env=dict(env, **ZH))
    assert zh.code == 0 and _flat("版本缓存 %s 已损坏；已忽略" % path) in _flat(zh.out), zh.out
    data = json.loads(cli("install", "--list", "--json", env=dict(env, **ZH)).out)
    assert data["wheels"]  # read again from the index


def test_where_no_index_base_was_found_in_chinese(chinese_language):
    from cudaenv.core.i18n import tr
    from cudaenv.toolkit.install.listing import index_base

    class Host:
        def which(self, name):
            return None

    base, why = index_base({"CUDAENV_PACKAGE_INDEX": "ftp://mirror.example/simple"}, Host(), 5.0)
    assert base is None and why == "CUDAENV_PACKAGE_INDEX: ftp://mirror.example/simple is not an http:// or https:// URL"
    assert tr(why).startswith("CUDAENV_PACKAGE_INDEX：ftp://mirror.example/simple ") and "URL" in tr(why)
    base, why = index_base({}, Host(), 5.0)
    assert why == "pip is not on PATH, and CUDAENV_PACKAGE_INDEX is not set"
    assert tr(why) == "pip 不在 PATH 上，也没有设置 CUDAENV_PACKAGE_INDEX"


@pytest.fixture
def chinese_language():
    from cudaenv.core.i18n import CHINESE, ENGLISH, set_language

    set_language(CHINESE)
    yield
    set_language(ENGLISH)


def test_the_torch_index_caches_field_reasons_and_a_pages_problem_in_chinese(chinese_language, tmp_path):
    """The index's own words (index/torch.py's field checks, parse/index_pages' problems), which the cache note and
    the release list quote, said in Chinese; their English unchanged."""
    from cudaenv.core.i18n import tr
    from cudaenv.index import cache as index_cache
    from cudaenv.parse.index_pages import parse_index_page

    path = tmp_path / "torch-index.json"
    path.write_text(json.dumps({"schema": 1, "index_base": "https://download.pytorch.org/whl", "fetched_at": "x",
                                "variants": {}}))
    data, why = index_cache.load_cache(str(path), "https://download.pytorch.org/whl", "2025-01-01")
    assert data is None and why == ("the torch index cache %s is corrupt (fetched_at is not a time); ignored "
                                    "(`cudaenv torch refresh` rebuilds it)" % path)
    assert tr(why) == "torch 索引缓存 %s 已损坏（fetched_at 不是时间）；已忽略（`cudaenv torch refresh` 会重建它）" % path
    page = parse_index_page('{"meta": {}}', "application/vnd.pypi.simple.v1+json")
    assert page.problem == "JSON page without a 'files' list" and tr(page.problem) == "JSON 页面没有 'files' 列表"
    assert tr(parse_index_page("\x00\x01", "application/octet-stream").problem) in ("不是文本", "既不是 JSON 也不是 HTML")


def test_how_to_get_an_older_cuda_in_chinese(cli):
    """The install line explain gives for a CUDA before the wheels (toolkit/install/plan.install_command): its words
    in Chinese, the command as it is (a real nvcc error, tests/recorded/err-nvcc-arch-unsupported.txt)."""
    from builders import recorded

    text = recorded("err-nvcc-arch-unsupported.txt")
    english = cli("explain", "--offline", text, env={"LANG": "C"})
    zh = cli("explain", "--offline", text, env=ZH)
    assert "cudaenv install 12.9 --plan" in english.out and ", or --runfile FILE" in " ".join(english.out.split())
    assert _flat("没有安装的话：cudaenv install 12.9 --plan（或者用 --runfile FILE）") in _flat(zh.out), zh.out
    assert "or --runfile" not in zh.out
