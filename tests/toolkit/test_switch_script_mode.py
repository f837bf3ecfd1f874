"""`cudaenv use VERSION --write FILE`: the switch script is executable as a new script is (0777 & ~umask), and
always runnable by its owner (it was 0755 whatever the umask)."""

import os
import stat

import pytest

from builders import umask


@pytest.mark.parametrize("mask, expected", [(0o022, 0o755), (0o077, 0o700), (0o002, 0o775), (0o177, 0o700)])
def test_the_switch_script_follows_the_umask(fake_root, cli, tmp_path, mask, expected):
    fake_root.toolkit("12.1.105")
    script = tmp_path / "switch_cuda.sh"
    env = {"PATH": "/nonexistent", "HOME": str(tmp_path)}
    with umask(mask):
        r = cli("use", "12.1.105", "--write", str(script), "--root", str(fake_root.path), env=env)
    assert r.code == 0, r.err
    assert stat.S_IMODE(os.stat(str(script)).st_mode) == expected
    assert script.read_text().startswith("#!/usr/bin/env bash\n")
