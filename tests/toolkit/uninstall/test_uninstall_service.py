"""`cudaenv uninstall`'s service (cudaenv.toolkit.uninstall.service) as the command uses it: the routing, the
one prompt helper for the toolkits cudaenv made itself, and the atomic ``--script`` write."""

import io
import os
import stat
import sys

from builders import TOOLS


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def _own_install(tmp_path, fake_root):
    """A toolkit `cudaenv install` made (its marker file) in CUDAENV_DATA_DIR; the env to find it with."""
    data = tmp_path / "data"
    store = fake_root.__class__(data / "toolkits")
    (data / "toolkits").mkdir(parents=True)
    store.toolkit("13.0.2", where="", name="13.0.2", lib="lib")
    store.file("13.0.2/.cudaenv-install.json", '{"installer": "cudaenv", "release": "13.0.2", "components": []}\n')
    return data / "toolkits" / "13.0.2", {"PATH": TOOLS, "CUDAENV_DATA_DIR": str(data), "HOME": str(tmp_path)}


def test_a_cudaenv_install_is_removed_after_a_yes_on_the_terminal(tmp_path, fake_root, cli, monkeypatch):
    folder, env = _own_install(tmp_path, fake_root)
    monkeypatch.setattr(sys, "stdin", _Terminal("n\n"))
    kept = cli("uninstall", "13.0.2", env=env)
    assert kept.code == 1 and kept.out.endswith("Remove? [y/N] Nothing removed.\n") and folder.is_dir()
    monkeypatch.setattr(sys, "stdin", _Terminal("YES\n"))
    gone = cli("uninstall", "13.0.2", env=env)
    assert gone.code == 0 and gone.out.endswith("Remove? [y/N] Removed %s\n" % folder) and not folder.exists()


def test_a_cudaenv_install_is_planned_not_removed_with_json(tmp_path, fake_root, cli):
    folder, env = _own_install(tmp_path, fake_root)
    r = cli("uninstall", "13.0.2", "--json", env=env)
    assert r.code == 0 and r.json()["targets"][0]["install_method"] == "cudaenv" and folder.is_dir()


def test_script_is_written_atomically_and_executable(tmp_path, fake_root, cli, monkeypatch):
    fake_root.toolkit("12.4.1")
    script = tmp_path / "plan.sh"
    script.write_text("old\n")
    script.chmod(0o640)
    seen = []
    real_replace = os.replace

    def replace(src, dst):  # the script reaches its name in one rename, whole
        seen.append((os.path.basename(dst), open(src).read()))
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    r = cli("uninstall", "12.4", "--root", str(fake_root.path), "--script", str(script), env={"PATH": TOOLS})
    assert r.code == 0, r
    assert [name for name, _ in seen] == ["plan.sh"] and seen[0][1].startswith("#!") and seen[0][1] == script.read_text()
    assert stat.S_IMODE(script.stat().st_mode) == 0o740  # its mode kept, executable by its owner
    assert [n for n in os.listdir(tmp_path) if n.endswith(".cudaenv-tmp")] == []


def test_a_version_never_installed_is_refused(fake_root, cli):
    fake_root.toolkit("12.4.1")
    r = cli("uninstall", "11.2", "--root", str(fake_root.path), env={"PATH": TOOLS})
    assert r.code == 2 and "no CUDA 11.2 toolkit was found here" in r.err and "12.4.1" in r.err
