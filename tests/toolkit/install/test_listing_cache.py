"""`cudaenv install --list` caches the release list with the index it read (which can carry a token): the cache
file is the user's own (0600) under any umask."""

import json
import os
import stat

import pytest

from builders import umask
from install_builders import Index


@pytest.fixture
def index(tmp_path):
    idx = Index(tmp_path)
    yield idx
    idx.close()


def test_the_release_cache_is_private(index, cli, tmp_path):
    cache = tmp_path / "cache"
    env = index.env(tmp_path / "data", CUDAENV_CACHE_DIR=cache)
    with umask(0o022):
        r = cli("install", "--list", "--json", env=env)
    assert r.code == 0, r.err
    path = cache / "toolkit-releases.json"
    assert json.loads(path.read_text())["index"] == index.base + "/simple"
    assert stat.S_IMODE(os.stat(str(path)).st_mode) == 0o600
