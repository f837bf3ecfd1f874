"""`cudaenv use 13.0` after `cudaenv install 13.0`, on a machine that also has /usr/local/cuda-13.0 with no
version.json (its version, 13.0.88, is nvcc's component number): the release-numbered install wins at 13.0, an exact
request names exactly, `link`'s newest policy agrees, `uninstall`'s unique policy still refuses to guess, and
`cudaenv list` says which one `use 13.0` picks."""

import json

import pytest

from builders import TOOLS

from cudaenv.model.snapshot import Toolkit
from cudaenv.toolkit.select import SelectError, UNIQUE, newest_toolkits, numbering, select_toolkit, select_toolkits


def _tk(version, path, source):
    return Toolkit(version=version, path=path, source="test", version_source=source)


SYSTEM = _tk("13.0.88", "/usr/local/cuda-13.0", "nvcc-file")
INSTALLED = _tk("13.0.2", "/home/u/.local/share/cudaenv/toolkits/13.0.2", "version.json")


def test_release_and_component_numbers_compare_at_major_minor_only():
    assert numbering(SYSTEM) == "component" and numbering(INSTALLED) == "release"
    assert select_toolkit([SYSTEM, INSTALLED], "13.0") is INSTALLED
    assert select_toolkit([INSTALLED, SYSTEM], "13") is INSTALLED
    assert select_toolkit([SYSTEM, INSTALLED], "13.0.2") is INSTALLED  # exact: the release
    assert select_toolkit([SYSTEM, INSTALLED], "13.0.88") is SYSTEM  # exact: nvcc's number
    newer = _tk("13.1.80", "/usr/local/cuda-13.1", "nvcc-file")
    assert select_toolkit([SYSTEM, INSTALLED, newer], "13") is newer  # a newer major.minor still wins, whatever its numbering
    # one numbering: compared part by part, as before
    a, b = _tk("13.0.2", "/a", "version.json"), _tk("13.0.10", "/b", "version.json")
    assert select_toolkit([a, b], "13.0") is b
    c, d = _tk("13.0.48", "/c", "nvcc"), _tk("13.0.88", "/d", "nvcc-file")
    assert select_toolkit([c, d], "13.0") is d
    # two releases that tie stay ambiguous (give the path)
    with pytest.raises(SelectError) as err:
        select_toolkit([a, _tk("13.0.2", "/e", "version.json"), SYSTEM], "13.0")
    assert err.value.kind == "ambiguous"
    assert newest_toolkits([]) == []


def test_uninstall_keeps_its_unique_policy():
    with pytest.raises(SelectError) as err:
        select_toolkits([SYSTEM, INSTALLED], "13.0", UNIQUE)
    assert err.value.kind == "ambiguous"
    assert select_toolkits([SYSTEM, INSTALLED], "13.0.2", UNIQUE) == [INSTALLED]


def _machine(fake_root):
    fake_root.toolkit("13.0.88", version_json=False, cuda_h=False)  # /usr/local/cuda-13.0, nvcc only
    data = fake_root.path / "data"
    tk = data / "toolkits" / "13.0.2"
    fake_root.toolkit("13.0.2", where="data/toolkits", name="13.0.2")
    (tk / "version.json").write_text(json.dumps({"cuda": {"name": "CUDA SDK", "version": "13.0.2"},
                                                  "cuda_nvcc": {"name": "nvidia-cuda-nvcc", "version": "13.0.88"}}))
    (tk / ".cudaenv-install.json").write_text('{"installer": "cudaenv", "release": "13.0.2"}\n')
    return data, tk


def test_use_13_0_picks_the_install_and_list_says_so(cli, fake_root):
    data, tk = _machine(fake_root)
    env = {"PATH": TOOLS, "CUDAENV_DATA_DIR": str(data)}
    root = str(fake_root.path)
    listed = cli("list", "--json", "--root", root, env=env).json()["toolkits"]
    versions = {t["path"]: (t["version"], t["version_source"], t["install_method"]) for t in listed}
    assert versions["/usr/local/cuda-13.0"][:2] == ("13.0.88", "nvcc-file")
    assert versions["/data/toolkits/13.0.2"] == ("13.0.2", "version.json", "cudaenv")
    use = cli("use", "13.0", "--root", root, "--shell", "bash", env=env)
    assert use.code == 0, use.err
    assert "export CUDA_HOME='%s'" % tk in use.out
    exact = cli("use", "13.0.88", "--root", root, "--shell", "bash", env=env)
    assert exact.code == 0 and "export CUDA_HOME='%s'" % (fake_root.path / "usr/local/cuda-13.0") in exact.out
    table = cli("list", "--root", root, env=env)
    assert table.code == 0
    text = " ".join(table.out.split())
    assert "`cudaenv use 13.0` picks /data/toolkits/13.0.2 (release 13.0.2); 13.0.88 is nvcc's own number" in text
