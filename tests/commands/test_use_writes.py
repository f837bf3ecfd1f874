"""`cudaenv use --local` and `--write`: their files reach their names in one rename, whole (cudaenv.core.fs)."""

import os
import stat

from builders import TOOLS


def _renames(monkeypatch):
    seen = []
    real = os.replace

    def replace(src, dst):
        with open(src, encoding="utf-8", errors="surrogateescape") as fh:
            seen.append((os.path.basename(dst), fh.read()))
        real(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    return seen


def test_local_writes_cuda_version_atomically_keeping_its_mode(fake_root, tmp_path, cli, monkeypatch):
    fake_root.toolkit("12.4.131")
    project = tmp_path / "project"
    project.mkdir()
    old = project / ".cuda-version"
    old.write_text("11.8\n")
    old.chmod(0o600)
    monkeypatch.chdir(project)
    seen = _renames(monkeypatch)
    r = cli("use", "--local", "12.4", "--shell", "bash", "--root", str(fake_root.path), env={"PATH": TOOLS})
    assert r.code == 0, r
    assert seen == [(".cuda-version", "12.4\n")] and old.read_text() == "12.4\n"
    assert stat.S_IMODE(old.stat().st_mode) == 0o600
    assert sorted(os.listdir(project)) == [".cuda-version"]  # no temporary file left


def test_write_script_is_rendered_then_written_atomically(fake_root, tmp_path, cli, monkeypatch):
    fake_root.toolkit("12.4.131")
    seen = _renames(monkeypatch)
    target = tmp_path / "switch.sh"
    r = cli("use", "12.4", "--write", str(target), "--root", str(fake_root.path), env={"PATH": TOOLS})
    assert r.code == 0, r
    text = target.read_text()
    assert seen == [("switch.sh", text)] and text.startswith("#!") and "cuda-12.4" in text
    assert target.stat().st_mode & stat.S_IXUSR
