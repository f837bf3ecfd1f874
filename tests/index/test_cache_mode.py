"""The torch index cache stays the user's own (0600) whatever the umask and whatever mode an older cache had: its
``index_base`` can be a URL with a token in it (cudaenv.core.fs would otherwise give a new file 0666 & ~umask)."""

import json
import os
import stat
import time

from builders import umask
from cudaenv.index import cache
from cudaenv.index import torch as ti


def test_the_cache_is_private(tmp_path):
    path = str(tmp_path / "c" / cache.CACHE_NAME)
    data = ti.IndexData("https://me:s3cret@mirror.example/whl", time.time(), {})
    with umask(0o022):
        cache.write_cache(path, data)
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        os.chmod(path, 0o644)
        cache.write_cache(path, data)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    with open(path, encoding="utf-8") as fh:
        assert json.load(fh)["index_base"] == "https://me:s3cret@mirror.example/whl"
