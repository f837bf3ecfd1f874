"""data/cuda_arch.json is the one table of which CUDA first builds for which GPU; the torch decision reads it."""

import pytest

from cudaenv.facts import cuda_arch, torch as tf
from cudaenv.recommend.decide import decide
from cudaenv.recommend.records import Request
from cudaenv.core.resources import load_table
from cudaenv.core.version import compare_versions, version_key


@pytest.mark.parametrize("cc, first", [("10.0", "12.8"), ("10.1", "12.8"), ("10.3", "12.9"), ("11.0", "13.0"),
                                       ("12.0", "12.8"), ("12.1", "12.9"), ("9.0", "11.8"), ("8.6", "11.1")])
def test_first_nvcc_for_an_architecture_is_the_sourced_row(cc, first):
    assert cuda_arch.first_nvcc(cc)[0] == first
    assert cuda_arch.first_nvcc("sm_%s" % cc.replace(".", ""))[0] == first


@pytest.mark.parametrize("cc, first", [("10.0", "12.8"), ("10.3", "12.8"), ("11.0", "13.0"), ("12.0", "12.8"),
                                       ("12.1", "12.8"), ("9.0", "11.8")])
def test_gpu_min_cuda_is_the_first_cuda_whose_cubins_run_on_the_gpu(cc, first):
    """sm_100 / sm_120 cubins of a CUDA 12.8 build run on 10.3 / 12.1 (same major, later minor), though 12.8's nvcc
    cannot target sm_103 / sm_121; Thor (11.0 under CUDA 13) is a major of its own: 13.0, never 12.8 (the old policy
    row said every 10.x-12.x GPU needed 12.8)."""
    found = cuda_arch.gpu_min_cuda(cc)
    assert found[0] == first
    assert found[1] == cuda_arch.first_nvcc(cc)[1]  # the GPU's own family label


def test_gpu_min_cuda_agrees_with_gpu_runs_on_every_row():
    rows = load_table("cuda_arch")["rows"]
    for row in rows:
        runs = [r["cuda_from"] for r in rows if tf.gpu_runs([tf.sm_name(r["cc"])], row["cc"])]
        assert cuda_arch.gpu_min_cuda(row["cc"])[0] == min(runs, key=version_key), row
        assert compare_versions(cuda_arch.gpu_min_cuda(row["cc"])[0], row["cuda_from"]) <= 0


def test_a_table_passed_in_is_the_one_read():
    table = {"rows": [{"cc": "12.0", "label": "X", "cuda_from": "99.0"}]}
    assert cuda_arch.gpu_min_cuda("12.1", table) == ("99.0", "X")
    assert cuda_arch.first_nvcc("12.1", table) is None
    assert cuda_arch.gpu_min_cuda("9.0", table) is None
    assert cuda_arch.gpu_min_cuda("not a cc") is None


def test_every_cuda_arch_row_names_a_known_source():
    table = load_table("cuda_arch")
    for row in table["rows"]:
        assert row["source"] in table["sources"], row


def _decide(cc, torch_version):
    return decide(Request(driver="580.95.05", gpus=(("GPU", cc),), nvidia=True, python_version="3.11", torch_version=torch_version))


def test_thor_is_not_offered_a_cuda_12_build():
    """Thor under CUDA 13 (11.0): no sm_100/sm_120 cubin runs on it; the alternatives name CUDA 13.0, not 12.8."""
    rec = _decide("11.0", "2.13.0")
    assert rec.variant is None and not rec.ok
    assert not any(a.variant and a.variant.startswith("cu12") for a in rec.alternatives)
    text = " | ".join(a.summary for a in rec.alternatives)
    assert "CUDA >= 13.0" in text and "12.8" not in text and "only older official builds" not in text


def test_a_newer_torch_is_offered_with_the_first_cuda_the_gpu_needs():
    """GB10 (12.1) on torch 2.6 (no build with sm_12x): torch 2.7 cu128 runs it (sm_120 cubin, gpu_runs), and the
    reason names the CUDA the table gives for that (12.8)."""
    rec = _decide("12.1", "2.6.0")
    newer = next(a for a in rec.alternatives if a.kind == "torch")
    assert newer.variant == "cu128" and "GB10" in newer.summary and "CUDA >= 12.8 builds" in newer.summary
    assert _decide("12.1", "2.7.1").variant == "cu128"


def test_no_reason_about_cuda_when_the_gpu_is_not_the_problem():
    """An H100 and a driver too old for anything: the newer torch is no fix for a GPU, so no 'GPUs need CUDA' text."""
    rec = decide(Request(driver="560.35.03", gpus=(("H100", "9.0"),), nvidia=True, python_version="3.11", torch_version="2.6.0"))
    assert not any("GPUs need CUDA" in a.summary for a in rec.alternatives)
