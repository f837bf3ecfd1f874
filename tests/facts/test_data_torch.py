"""Invariants of the torch facts tables (data/torch_*.json), table-driven."""

import re

import pytest

from cudaenv.facts import drivers as drv
from cudaenv.facts import torch as tf
from cudaenv.core.resources import load_table
from cudaenv.core.version import compare_versions, version_key

TABLES = ["torch_variants", "torch_arch", "torch_companions", "torch_python"]
PLATFORMS = ["linux-x86_64", "linux-aarch64", "windows-x86_64", "macos-arm64", "macos-x86_64"]
VARIANT = re.compile(r"^(cu\d{3}|rocm\d+(\.\d+)+|xpu|cpu|default)$")
CC = re.compile(r"^\d{1,2}\.\d$")


def _all_rows(name):
    table = load_table(name)
    return list(table["rows"]) + list(table.get("unreleased", []))


@pytest.mark.parametrize("name", TABLES)
def test_every_row_names_a_known_source(name):
    table = load_table(name)
    assert table["description"] and table["sources"]
    for row in _all_rows(name):
        assert row["source"] in table["sources"], row
        assert isinstance(row.get("confirmed", True), bool)


@pytest.mark.parametrize("name", TABLES)
def test_every_source_is_used(name):
    table = load_table(name)
    used = {row["source"] for row in _all_rows(name)}
    assert set(table["sources"]) == used


def test_variant_rows_well_formed_and_complete():
    seen = {}
    for row in load_table("torch_variants")["rows"]:
        assert row["platform"] in PLATFORMS
        assert row["variants"], row
        for v in row["variants"]:
            assert VARIANT.match(v), v
        assert row["variants"] == sorted(row["variants"], key=tf.variant_sort_key) or row["platform"].startswith("macos")
        for release in row["releases"]:
            assert version_key(release)[:2] == version_key(row["torch"])
            key = (release, row["platform"])
            assert key not in seen, "duplicate row for %s" % (key,)
            seen[key] = row
    # every release is on the three main platforms
    for release in tf.known_torch_versions():
        for plat in ("linux-x86_64", "windows-x86_64", "linux-aarch64"):
            assert (release, plat) in seen, (release, plat)


def test_newest_driver_runs_every_variant_and_an_old_one_none():
    newest = max((r["linux"] for r in drv._table(None)["rows"] if r.get("table") == "bundled" and r.get("linux")), key=version_key)
    newest_win = max((r["windows"] for r in drv._table(None)["rows"] if r.get("table") == "bundled" and r.get("windows")), key=version_key)
    cudas = set()
    for row in load_table("torch_variants")["rows"]:
        cudas.update(tf.variant_cuda(v) for v in row["variants"] if tf.variant_cuda(v))
    assert {"11.8", "12.6", "13.0", "13.2"} <= cudas
    for cuda in cudas:
        need = drv.min_driver_for_cuda(cuda, "linux")
        assert need, cuda
        assert compare_versions(newest, need) >= 0, (cuda, need, newest)
        assert compare_versions("418.39", need) < 0, cuda  # an old driver runs none of them
        assert compare_versions("580.95.05", drv.min_driver_for_cuda(cuda, "windows")) >= 0
    assert compare_versions(newest_win, drv.min_driver_for_cuda("12.6", "windows")) >= 0


def test_arch_rows_well_formed_and_cover_every_cuda_variant():
    rows = load_table("torch_arch")["rows"]
    for row in rows:
        assert row["platform"] in PLATFORMS
        assert tf.variant_cuda(row["variant"]), row
        assert compare_versions(row["from"], row["to"]) <= 0
        assert row["archs"] and all(CC.match(a) for a in row["archs"]), row
        assert len(set(row["archs"])) == len(row["archs"])
        assert row["ptx"] is None or (CC.match(row["ptx"]) and row["ptx"] in row["archs"]), row
    # no two rows overlap for the same platform x variant
    for i, a in enumerate(rows):
        for b in rows[i + 1:]:
            if a["platform"] == b["platform"] and a["variant"] == b["variant"]:
                assert compare_versions(a["to"], b["from"]) < 0 or compare_versions(b["to"], a["from"]) < 0, (a, b)
    # every published CUDA variant of x86_64 Linux and Windows has an arch list
    for release in tf.known_torch_versions():
        for system in ("linux", "windows"):
            for v in tf.variants_for(release, system, "x86_64"):
                if tf.variant_cuda(v):
                    assert tf.arch_list_for(release, v, system, "x86_64"), (release, v, system)


def test_companions_and_pythons_cover_every_release():
    for release in tf.known_torch_versions():
        comp = tf.companions_for(release)
        assert comp and re.match(r"^0\.\d+\.\d+$", comp["torchvision"]) and comp["torchaudio"], release
        pys = tf.pythons_for(release)
        assert pys and all(re.match(r"^3\.\d+t?$", p) for p in pys), release


def test_facts_answer_the_known_questions():
    assert tf.variants_for("2.7.1", "linux", "x86_64")[:3] == ("cu118", "cu126", "cu128")
    assert tf.last_torch_for_variant("cu121") == ("2.1.0", "2.5.1")
    archs, ptx = tf.arch_list_for("2.7.1", "cu128", "linux", "x86_64")
    assert "6.1" not in archs and "12.0" in archs and ptx == "12.0"  # measured: 2.7.1+cu128 ships compute_120
    # the Windows cu128 wheel of 2.7.x still had Maxwell/Pascal (measured), from 2.10 it has the Linux list
    assert {"5.0", "6.1", "12.0"} <= set(tf.arch_list_for("2.7.1", "cu128", "windows", "AMD64")[0])
    assert tf.arch_list_for("2.10.0", "cu128", "windows")[0][0] == "7.0"
    assert tf.arch_list_for("2.13.0", "cu130", "linux")[1] == "12.0"
    assert tf.companions_for("2.7.1+cu126") == {"torchvision": "0.22.1", "torchaudio": "2.7.1"}
    assert "3.9" not in tf.pythons_for("2.9.0") and "3.9" in tf.pythons_for("2.8.0")
    assert tf.variants_for("2.7.1", "darwin", "arm64") == ("default",)
    assert tf.variants_for("2.7.1", "darwin", "x86_64") == ()
    assert tf.latest_torch() == "2.14.1"
    assert {"2.14.0", "2.14.1"} <= set(tf.known_torch_versions())
    # measured on the real 2.14.1 wheel: cu130 without PTX (2.13.0 shipped 12.0+PTX), cu126 keeps Maxwell..Volta
    assert tf.arch_list_for("2.14.1", "cu130", "linux", "x86_64") == (("7.5", "8.0", "8.6", "9.0", "10.0", "12.0"), None)
    assert tf.arch_list_for("2.14.0", "cu126", "linux", "x86_64")[0][:3] == ("5.0", "6.0", "7.0")
    assert "cu134" not in tf.variants_for("2.14.1", "linux", "x86_64")  # pytorch#194374
    assert tf.companions_for("2.14.0") == {"torchvision": "0.29.0", "torchaudio": "2.11.0"}
    assert tf.platform_key("windows", "AMD64") == "windows-x86_64"


@pytest.mark.parametrize("cc, archs, ptx, jit, expected", [
    ("6.1", ("5.0", "6.0", "7.0"), None, True, "binary"),
    ("6.1", ("7.5", "8.0"), None, True, None),
    ("8.6", ("8.6",), None, True, "exact"),
    ("8.9", ("8.0", "8.6"), None, True, "binary"),
    ("12.0", ("8.0", "9.0"), "9.0", True, "ptx"),
    ("12.0", ("8.0", "9.0"), "9.0", False, None),
    ("8.0", ("9.0",), "9.0", True, None),
    ("7.0", ("7.5",), None, True, None),
])
def test_gpu_runs(cc, archs, ptx, jit, expected):
    how = tf.gpu_runs(tf.arch_list_of(archs, ptx), cc, jit)
    assert (how.kind if how else None) == expected


def test_torch_versions_are_ordered_by_pep440():
    """rc, dev, post and local builds: compare_versions saw 2.6.0rc1 == 2.6.0 and 2.10.0 vs 2.9.1 only by its digits."""
    from cudaenv.facts import torch_policy
    from cudaenv.index.torch import IndexData

    table = {"rows": [{"platform": "linux-x86_64", "releases": ["2.10.0", "2.6.0", "2.9.1", "2.6.0.post1"], "variants": ["cu126"]}]}
    assert tf.known_torch_versions(table) == ("2.6.0", "2.6.0.post1", "2.9.1", "2.10.0")
    assert tf.resolve_torch_version("2.6", ("2.6.0", "2.6.0.post1", "2.9.1")) == "2.6.0.post1"
    assert tf.resolve_torch_version("2.6rc1", ("2.6.0", "2.9.1")) is None  # a pre-release is not a series
    # a pre-release of torchaudio 2.11 predates the release that stopped being rebuilt per torch
    assert torch_policy.not_rebuilt("torchaudio", "2.11.0", "2.13.0")
    assert not torch_policy.not_rebuilt("torchaudio", "2.11.0rc1", "2.13.0")
    # an rc or nightly of 2.8.0 is built like 2.8.0: the same arch row
    assert tf.arch_list_for("2.8.0rc1", "cu128", "linux") == tf.arch_list_for("2.8.0", "cu128", "linux") is not None
    assert tf.arch_list_for("2.8.0.dev20250528+cu128", "cu128", "linux") == tf.arch_list_for("2.8.0", "cu128", "linux")
    data = IndexData("https://mirror.example/whl", 0.0, {"cu126": {v: {"linux-x86_64": ["3.11"]} for v in (
        "2.9.1", "2.10.0", "2.10.0rc1", "2.11.0.dev20260101", "2.9.1.post1", "v2.9.0", "2.9.1+cu126")}})
    assert data.torch_versions() == ("2.9.1", "2.10.0")
