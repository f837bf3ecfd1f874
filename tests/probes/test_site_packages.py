"""One home for an interpreter's site-packages dirs (issue 11): the child's ``_site_packages()`` asks the interpreter,
``probes/site_packages.py`` runs it and parses the list (the doctor's torch probe reads the same field through the
same parser), and guesses the active envs' dirs without running anything for `use` and `list`."""

import ast
import json
import site
import sys
import sysconfig
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from builders import TOOLS, FakeBin, docstring_ids

import cudaenv
from cudaenv.host import Host
from cudaenv.probes.site_packages import env_site_packages, probe_site_packages, site_packages_from
from cudaenv.probes.torch import torch_from_static
from cudaenv.probes.torch_child import MARKER

PACKAGE = Path(cudaenv.__file__).parent


def test_the_interpreter_reports_site_and_sysconfig_dirs():
    """The real child in this interpreter (sys.executable: the one program unit tests may run): the list holds every
    existing dir of site.getsitepackages() and sysconfig's purelib and platlib (what uninstall --python used to ask)."""
    dirs, why = probe_site_packages(Host(env={"PATH": TOOLS}), sys.executable, timeout=60)
    assert why is None
    expected = [d for d in list(site.getsitepackages()) + [sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]
                if Path(d).is_dir()]
    assert expected and all(d in dirs for d in expected), (dirs, expected)
    assert len(dirs) == len(set(dirs))


def test_a_reported_list_is_read_and_a_failure_is_said(tmp_path):
    fake = FakeBin(tmp_path / "bin")
    line = MARKER + json.dumps({"mode": "site-packages", "site_packages": ["/env/lib/python3.12/site-packages", 7,
                                                                           "/env/lib/python3.12/site-packages"]})
    good = fake.command("python", stdout="torch printed this\n" + line + "\n", by_args={"site-packages": (line + "\n", 0)})
    bad = fake.command("broken", stdout="", exit_code=3, stderr="no such module\n")
    host = Host(env={"PATH": fake.env_path})
    assert probe_site_packages(host, str(good)) == (("/env/lib/python3.12/site-packages", "7"), None)
    dirs, why = probe_site_packages(host, str(bad))
    assert dirs == () and "status 3" in why


def test_uninstall_python_takes_the_childs_list(cli, tmp_path):
    """`uninstall --python` finds the pip toolkit in the dirs the interpreter reports (a fake one, inside --root's
    image names), and says so when the interpreter cannot be run."""
    fake, root = FakeBin(tmp_path / "bin"), tmp_path / "root"
    site_dir = root / "env" / "site-packages"
    (site_dir / "nvidia" / "cuda_nvcc" / "bin").mkdir(parents=True)
    (site_dir / "nvidia_cuda_nvcc_cu12-12.4.131.dist-info").mkdir()
    (site_dir / "nvidia_cuda_nvcc_cu12-12.4.131.dist-info" / "METADATA").write_text("Name: nvidia-cuda-nvcc-cu12\nVersion: 12.4.131\n")
    line = MARKER + json.dumps({"mode": "site-packages", "site_packages": ["/env/site-packages"]})
    python = fake.command("python", stdout=line + "\n")
    env = {"PATH": fake.env_path, "HOME": str(tmp_path)}
    r = cli("uninstall", "--check", "--root", str(root), "--python", str(python), "12.4", env=env)
    assert "/env/site-packages/nvidia/cuda_nvcc" in r.out, (r.code, r.out, r.err)
    r = cli("uninstall", "--check", "--root", str(root), "12.4", env=env)  # without --python: not found
    assert "/env/site-packages/nvidia/cuda_nvcc" not in r.out, r.out
    broken = fake.command("broken", exit_code=1, stderr="boom\n")
    r = cli("uninstall", "--check", "--root", str(root), "--python", str(broken), "12.4", env=env)
    assert r.code == 2 and "could not be run" in r.err, (r.code, r.err)


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(),
                    lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner), max_leaves=20))
def test_the_parser_takes_any_json(data):
    got = site_packages_from(data)
    assert isinstance(got, tuple) and all(isinstance(x, str) for x in got)
    if isinstance(data, dict) and isinstance(data.get("site_packages"), list):
        assert len(got) == len(data["site_packages"])


def test_the_doctor_reads_the_same_field():
    data = {"installed": False, "site_packages": ["/a/site-packages", "/b/dist-packages"]}
    assert torch_from_static(data, "python", None).site_packages == site_packages_from(data) == ("/a/site-packages", "/b/dist-packages")


def test_env_guess_without_running_python(tmp_path):
    (tmp_path / "venv" / "lib" / "python3.12" / "site-packages").mkdir(parents=True)
    (tmp_path / "venv" / "lib" / "python3.12" / "x").mkdir()
    host = Host(root=str(tmp_path), env={"VIRTUAL_ENV": "/venv", "CONDA_PREFIX": "relative/ignored"})
    assert env_site_packages(host) == ("/venv/lib/python3.12/site-packages",)


def spells_site_packages(source):
    """Lines of code (docstrings aside) that spell a site-packages folder name: a path built with it
    (``join(p, "site-packages")``), a path cut at it (``parts.index("site-packages")``) or tested for it
    (``"site-packages" in path``): each is a way to find a site-packages folder."""
    tree = ast.parse(source)
    prose = docstring_ids(tree)
    return sorted({node.lineno for node in ast.walk(tree)
                   if isinstance(node, ast.Constant) and id(node) not in prose
                   and isinstance(node.value, str) and ("site-packages" in node.value or "dist-packages" in node.value)})


# generated from data/ (tools/explain_literals.py): the explain tables' patterns as the keys of their literals, the
# platform rule that reads an extension's site-packages path among them; no reader of site-packages folders
GENERATED = ("explain/literals.py",)


def test_one_home():
    """Only the child asks Python for its dirs (site, sysconfig), and only probes/site_packages.py spells a
    site-packages folder's name in code (to build one from a prefix, find the one a path lies in, or the prefix of
    one): a second reader anywhere else fails here."""
    askers, spellers = [], []
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE).as_posix()
        text = path.read_text(encoding="utf-8")
        if any(word in text for word in ("getsitepackages", "getusersitepackages", "purelib", "platlib")):
            askers.append(rel)
        if spells_site_packages(text) and not rel.startswith("_child/") and rel not in GENERATED:
            spellers.append(rel)
    assert askers == ["_child/torch_probe.py"]
    assert spellers == ["probes/site_packages.py"]


def test_the_one_home_check_catches_every_form():
    # the forms that were once written outside the one home (uninstall/inspect.py, uninstall/targets.py, python.py)
    for code in ('site = os.path.join(prefix, "lib", "python3.12", "site-packages")',
                 'parts = p.split("/")\nif "site-packages" in parts:\n    site = "/".join(parts[: parts.index("site-packages") + 1])',
                 'if "dist-packages" in path:\n    pass',
                 'def f(parts):\n    """Finds site-packages."""\n    return parts[-1] in ("site-packages", "dist-packages")'):
        assert spells_site_packages(code), code
    assert spells_site_packages('"""A module about site-packages."""\ndef f():\n    """In site-packages."""\n    return 1') == []


def test_the_list_is_in_sys_path_order_the_user_site_before_the_interpreters(tmp_path, monkeypatch):
    """The import system's order is sys.path's (tests/recorded/python-3.11-sys-path-user-site.txt: CPython puts the
    user site-packages after a venv's and before the interpreter's own, which site.getsitepackages() lists without
    it): the child lists the folders in that order, those not on sys.path after, so a first-hit reading (the nvidia
    package JAX's plugin imports) takes what Python takes."""
    from cudaenv._child import torch_probe

    venv, user, base, other = (str(tmp_path / name / "site-packages") for name in ("venv", "user", "base", "other"))
    for folder in (venv, user, base, other):
        Path(folder).mkdir(parents=True)
    monkeypatch.setattr(site, "getsitepackages", lambda: [venv, base])
    monkeypatch.setattr(site, "ENABLE_USER_SITE", True)
    monkeypatch.setattr(site, "getusersitepackages", lambda: user)
    monkeypatch.setattr(sysconfig, "get_paths", lambda: {"purelib": other, "platlib": venv})
    monkeypatch.setattr(sys, "path", [str(tmp_path), venv, user, base])
    assert torch_probe._site_packages() == [venv, user, base, other]
