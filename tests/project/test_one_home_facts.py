"""Facts with one home: a second copy of a table, a URL or a distro command in the package fails here (issue 11).

Each check reads the installed package's sources and data (``ast`` or plain text), so it fails on the copy itself,
whatever the copy's answer is.
"""

import ast
import json
import os

import cudaenv
from builders import package_sources
from cudaenv.core.resources import load_table

PACKAGE = os.path.dirname(cudaenv.__file__)
DATA = os.path.join(PACKAGE, "data")


def _data_tables():
    for name in sorted(os.listdir(DATA)):
        if name.endswith(".json"):
            with open(os.path.join(DATA, name), encoding="utf-8") as f:
                yield name, json.load(f)


# ------------------------------------------------------------------ which CUDA first builds for which GPU
def test_one_table_says_which_cuda_first_builds_for_a_gpu():
    """data/cuda_arch.json only: torch_policy.json had a second table (every 10.x-12.x GPU needs 12.8) that disagreed
    with it for 10.3, 11.0 and 12.1."""
    for name, table in _data_tables():
        if name == "cuda_arch.json" or not isinstance(table, dict):
            continue
        for row in table.get("rows") or ():
            if isinstance(row, dict):
                keys = set(row)
                assert not (keys & {"cc", "cc_major_from", "capability"} and keys & {"min_cuda", "cuda_from", "first_cuda"}), (name, row)
    for path, text in package_sources():
        assert "gpu_needs_cuda" not in text, path
        if path != "facts/cuda_arch.py":
            assert 'load_table("cuda_arch")' not in text and "load_table('cuda_arch')" not in text, path
    assert {r["cc"] for r in load_table("cuda_arch")["rows"]} >= {"10.0", "10.3", "11.0", "12.0", "12.1"}


# ------------------------------------------------------------------ PyTorch's wheel index
def test_the_torch_index_url_is_written_once():
    """It was written in request.py, index/torch.py, records.py, config.py, service.py and two commands' help."""
    from cudaenv.core import config
    from cudaenv.index.torch import index_base
    from cudaenv.recommend.records import Request
    from cudaenv.recommend.request import request_from_snapshot
    from cudaenv.model.snapshot import Platform, Snapshot

    host = config.TORCH_INDEX.split("//", 1)[1].split("/", 1)[0]
    found = [path for path, text in package_sources() for _ in range(text.count(host))]
    assert found == ["core/config.py"], found
    assert Request().index_base == config.TORCH_INDEX == index_base({})
    assert request_from_snapshot(Snapshot(platform=Platform(system="linux"))).index_base == config.TORCH_INDEX
    assert index_base({"CUDAENV_TORCH_INDEX": "https://mirror.example/whl/"}) == "https://mirror.example/whl"


# ------------------------------------------------------------------ torch versions are PEP 440
TORCH_VERSION_MODULES = ("recommend", "facts/torch.py", "facts/torch_policy.py",
                         "index/torch.py")
LENIENT = ("compare_versions", "version_key")
TORCH_WORDS = ("torch", "target", "known", "release", '"to"', '"from"', "'to'", "'from'", "last", "first", "installed")


def test_torch_versions_are_compared_by_pep440_not_by_the_driver_reading():
    """cudaenv.core.version.compare_versions reads 2.6.0rc1 as 2.6.0: a call to it (or its sort keys) on a torch version in
    the torch decision fails here; driver, CUDA and capability readings keep it."""
    found = []
    for path, text in package_sources():
        if not path.startswith(TORCH_VERSION_MODULES):
            continue
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Call):
                name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                if name in ("sorted", "max", "min"):
                    keys = [k.value for k in node.keywords if k.arg == "key"]
                    used = [k for k in keys if (getattr(k, "attr", None) or getattr(k, "id", None)) in LENIENT]
                    args = " ".join(ast.unparse(a) for a in node.args)
                    if used and any(w in args for w in TORCH_WORDS):
                        found.append("%s:%d %s" % (path, node.lineno, ast.unparse(node)))
                elif name in LENIENT:
                    args = " ".join(ast.unparse(a) for a in node.args)
                    if any(w in args for w in TORCH_WORDS):
                        found.append("%s:%d %s" % (path, node.lineno, ast.unparse(node)))
    assert found == []


# ------------------------------------------------------------------ distribution advice
DISTRO_IDS = {"ubuntu", "debian", "pop", "linuxmint", "fedora", "rhel", "rocky", "almalinux", "centos", "arch", "manjaro",
              "endeavouros", "opensuse", "sles", "gentoo", "alpine"}
ADVICE = ("diagnose", "recommend", "commands", "render", "facts", "explain", "toolkit", "probes")


def test_no_list_of_distributions_in_the_advice_code():
    """Which distributions share a command is a row's 'when' in data/driver_install.json (or toolkit_install.json),
    and which one a derivative follows is its ID_LIKE or data/distro_like.json (cudaenv.facts.distro): diagnose/driver.py
    had its own ("fedora", "rhel", "rocky", "almalinux", "centos") to pick dnf over apt-get, and toolkit/install/repos.py
    its own ("pop", "linuxmint") -> ubuntu."""
    found = []
    for path, text in package_sources():
        if not path.startswith(ADVICE):
            continue
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
                names = {e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
                if len(names & DISTRO_IDS) >= 2:
                    found.append("%s:%d %s" % (path, node.lineno, sorted(names & DISTRO_IDS)))
    assert found == []


def test_every_driver_chore_has_a_row_for_every_distribution_and_a_source():
    from cudaenv.facts import driver_install

    table = load_table("driver_install")
    for topic in driver_install.TOPICS:
        rows = [r for r in table["rows"] if r.get("topic") == topic]
        assert [r for r in rows if r["when"] == "other"], topic  # a fallback for any distribution
        for row in rows:
            assert row["source"] in table["sources"] and row["steps"], row
    assert driver_install.chore_steps("initramfs", "rocky") == ("sudo dracut --force",)
    # the install rows are not mixed up with the chores
    assert driver_install.install_steps("linux", "rocky")[0].startswith("sudo dnf module install nvidia-driver")


# ------------------------------------------------------------------ versions are read by cudaenv/core/version.py
def test_the_torch_decision_and_config_read_versions_with_version_py_only():
    """recommend/service.py kept three regexes of its own (driver, compute capability, Python version) and
    decide.py one (a torch release): the readers are cudaenv.core.version's; no regular expression is left there."""
    found = []
    for path, text in package_sources():
        if path.startswith("recommend") or path == "core/config.py":
            for node in ast.walk(ast.parse(text)):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                    if "re" in names:
                        found.append("%s:%d" % (path, node.lineno))
    assert found == []
