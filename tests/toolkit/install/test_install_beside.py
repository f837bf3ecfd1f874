"""`cudaenv install` waits for one pip start-up, not two (issue 35): pip downloads the requirement while pip resolves it,
and the planned files are then checked as before. Counted work and order, not time: the stand-in pip's dry run
finishes only once a download has started beside it (STANDIN_BESIDE), and its log counts the pip runs."""

import json

import pytest

from install_builders import Index, nothing_left_but


@pytest.fixture
def index(tmp_path):
    idx = Index(tmp_path)
    yield idx
    idx.close()


def test_the_download_runs_beside_the_resolve_and_two_pip_runs_install(index, cli, tmp_path):
    data = tmp_path / "data"
    r = cli("install", "13.0", "--json", env=index.env(data, STANDIN_BESIDE=tmp_path / "download-started"))
    assert r.code == 0, r.err
    assert r.json()["status"] == "installed"
    runs = index.log.read_text().splitlines()
    assert sorted(line.split()[0] for line in runs) == ["download", "finished", "install"]  # one resolve, one download
    download = next(line.split() for line in runs if line.startswith("download"))
    assert "cuda-toolkit[nvcc,cudart,cccl,crt,nvvm]==13.0.2" in download  # the requirement the dry run resolved
    tk = data / "toolkits" / "13.0.2"
    assert json.loads((tk / "version.json").read_text())["cuda_nvcc"]["version"] == "13.0.88"
    nothing_left_but(data, ["13.0.2"])


def test_a_failed_resolve_stops_the_download_and_leaves_nothing(index, cli, tmp_path):
    """The dry run fails once the download has started (and sits in its slow first file): the install fails, the
    download is stopped (it never finishes), and the staging folder, with what the download wrote, is gone."""
    data = tmp_path / "data"
    env = index.env(data, STANDIN_BESIDE=tmp_path / "download-started", STANDIN_FAIL="resolve", STANDIN_SLOW=tmp_path / "slow")
    r = cli("install", "13.0", env=env)
    assert r.code == 1 and "ResolutionImpossible" in r.err + r.out
    assert (tmp_path / "slow").exists()  # the download had written a file when the resolve failed
    assert "finished download" not in index.log.read_text()
    nothing_left_but(data, [])
