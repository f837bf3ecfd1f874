"""The doctor on an LD_LIBRARY_PATH that names a toolkit no longer installed (issue 13): a finding with the value
to export instead, none for an installed toolkit's folder, and the text report's LD_LIBRARY_PATH line."""

from builders import TOOLS


def _doctor(cli, fake_root, ld):
    env = {"PATH": TOOLS, "CUDAENV_ROOT": str(fake_root.path), "LD_LIBRARY_PATH": ld}
    res = cli("doctor", "--quick", "--json", env=env)
    assert res.code in (0, 1), res
    return res.json()


def test_ld_library_path_of_a_removed_toolkit_is_a_finding(cli, fake_root):
    fake_root.toolkit("12.4.131")
    data = _doctor(cli, fake_root, "/usr/local/cuda-11.8/lib64:/opt/mylibs")
    found = [f for f in data["findings"] if f["id"] == "ld-library-path-missing-toolkit"]
    assert len(found) == 1, [f["id"] for f in data["findings"]]
    f = found[0]
    assert "/usr/local/cuda-11.8" in f["title"] and f["severity"] == "warning"
    assert f["fix"][0] == "export LD_LIBRARY_PATH=/opt/mylibs"


def test_ld_library_path_of_an_installed_toolkit_is_no_such_finding(cli, fake_root):
    fake_root.toolkit("12.4.131")
    for ld in ("/usr/local/cuda-12.4/lib64", "/opt/mylibs:/usr/lib/x86_64-linux-gnu", ""):
        ids = [f["id"] for f in _doctor(cli, fake_root, ld)["findings"]]
        assert "ld-library-path-missing-toolkit" not in ids, (ld, ids)


def test_the_text_report_shows_it_on_the_ld_library_path_line(cli, fake_root):
    fake_root.toolkit("12.4.131")
    env = {"PATH": TOOLS, "CUDAENV_ROOT": str(fake_root.path), "LD_LIBRARY_PATH": "/usr/local/cuda-11.8/lib64"}
    res = cli("doctor", "--quick", env=env)
    lines = res.out.splitlines()
    assert any(line.split()[:2] == ["warning", "LD_LIBRARY_PATH"] for line in lines), res.out  # the facts line
    assert "WARNING  ld-library-path-missing-toolkit" in lines, res.out  # and the finding
    assert "LD_LIBRARY_PATH names a toolkit that is not installed here:" in res.out
