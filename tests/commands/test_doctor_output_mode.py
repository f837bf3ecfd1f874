"""`cudaenv doctor --output`: the report is readable by the site's other users as any file this user writes is
(0666 & ~umask), also when it replaces an older report that was private (fleet summarize reads them all)."""

import os
import stat

import pytest

from builders import umask
from machine import a10g_535


@pytest.mark.parametrize("mask, expected", [(0o022, 0o644), (0o027, 0o640)])
def test_the_report_gets_the_usual_mode(machine, tmp_path, mask, expected):
    machine.root.file("etc/hostname", "n1\n")
    a10g_535(machine)
    out = tmp_path / "n1.json"
    out.write_text("old")
    out.chmod(0o600)
    with umask(mask):
        r = machine.doctor("--output", str(out))
    assert r.code == 0, r
    assert stat.S_IMODE(os.stat(str(out)).st_mode) == expected and out.read_text() != "old"
