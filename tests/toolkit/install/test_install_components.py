"""`cudaenv install` (issue 17, the rest): `--components` at the release's pins (cuDNN at its newest), `--force` over
the machine checks, pip's progress passed through to a terminal, `--list` read with cudaenv's index client, and the
runfile's flags from the data table. The served index, the fake wheels and the stand-in pip are install_builders'."""

import json
import os
import sys
from pathlib import Path

import pytest

from builders import TOOLS
from install_builders import LIBRARIES, Index, nothing_left, nothing_left_but

from cudaenv.toolkit.install import plan

CUDNN = ("nvidia-cudnn-cu13", "9.28.1.4", {"lib/libcudnn.so.9": "ELF-cudnn", "include/cudnn_version.h": "#define CUDNN_MAJOR 9\n"})


@pytest.fixture
def index(tmp_path):
    idx = Index(tmp_path)
    for project, (version, extra, files) in LIBRARIES.items():
        idx.add(project, version, files, extra=extra)
    name, version, files = CUDNN
    idx.add(name, version, files, root="nvidia/cudnn/")
    idx.write()
    yield idx
    idx.close()


def _dry_run_args(index):
    return [l for l in index.log.read_text().splitlines() if l.startswith("install --dry-run")]


# ------------------------------------------------------------------------------------------- --components
def test_components_come_at_the_releases_pins_into_the_same_tree(index, cli, tmp_path):
    data = tmp_path / "data"
    r = cli("install", "13.0", "--components", "nvtx,cudnn,cublas", "--json", env=index.env(data))
    assert r.code == 0, r.err + r.out
    report = r.json()
    versions = {c["name"]: c["version"] for c in report["components"]}
    assert versions["nvidia-cublas"] == "13.1.0.3" and versions["nvidia-nvtx"] == "13.0.85"  # the meta wheel's pins
    assert versions["nvidia-cudnn-cu13"] == "9.28.1.4" and versions["nvidia-cuda-nvcc"] == "13.0.88"
    pins = {c["name"]: c["pin"] for c in report["components"]}
    assert pins["nvidia-nvtx"] == "==13.0.85.*" and pins["nvidia-cudnn-cu13"] == ""
    (dry,) = _dry_run_args(index)
    # the extras in the table's order after the core five; cuDNN by its project for CUDA 13, unpinned
    assert dry.endswith("cuda-toolkit[nvcc,cudart,cccl,crt,nvvm,cublas,nvtx]==13.0.2 nvidia-cudnn-cu13")
    tk = data / "toolkits" / "13.0.2"
    assert (tk / "include/nvtx3/nvToolsExt.h").is_file() and (tk / "include/cublas_v2.h").is_file()
    assert (tk / "lib/libcudnn.so.9").is_file() and (tk / "include/cudnn_version.h").is_file()  # nvidia/cudnn/ laid in
    assert os.readlink(tk / "lib/libcudnn.so") == "libcudnn.so.9" and os.readlink(tk / "lib/libcublas.so") == "libcublas.so.13"
    assert (tk / "targets/x86_64-linux/lib/libcudnn.so.9").is_file()
    version = json.loads((tk / "version.json").read_text())
    assert version["libcublas"]["version"] == "13.1.0.3" and version["cuda_nvtx"]["version"] == "13.0.85"
    assert version["cudnn"]["version"] == "9.28.1.4"
    assert json.loads((tk / ".cudaenv-install.json").read_text())["extras"] == ["cublas", "nvtx", "cudnn"]
    nothing_left_but(data, ["13.0.2"])


def test_an_install_without_the_components_says_how_to_add_them(index, cli, tmp_path):
    data = tmp_path / "data"
    assert cli("install", "13.0", env=index.env(data)).code == 0
    again = cli("install", "13.0", "--components", "nvtx", env=index.env(data))
    assert again.code == 0 and "already installed" in again.out
    assert "installed without nvtx: give --reinstall --components nvtx" in again.out
    re = cli("install", "13.0", "--components", "nvtx", "--reinstall", env=index.env(data))
    assert re.code == 0, re.err
    assert (data / "toolkits/13.0.2/include/nvtx3/nvToolsExt.h").is_file()
    quiet = cli("install", "13.0", "--components", "nvtx", env=index.env(data))
    assert "already installed" in quiet.out and "installed without" not in quiet.out


def test_unknown_components_and_components_without_wheels_are_usage_errors(index, cli, tmp_path):
    data = tmp_path / "data"
    r = cli("install", "13.0", "--components", "nvtx,cufoo", env=index.env(data))
    assert r.code == 2 and "unknown component 'cufoo'" in r.err and "cublas,cufft,curand" in r.err
    r12 = cli("install", "12.4", "--components", "nvtx", env={"PATH": TOOLS, "CUDAENV_DATA_DIR": str(data)})
    assert r12.code == 2 and "--components" in r12.err
    assert not index.log.exists() or not _dry_run_args(index)
    nothing_left(data)


def test_parse_components_follows_the_table():
    table = {"rows": [{"when": "components", "extras": ["cublas", "nvtx"], "version_keys": {}},
                      {"when": "cudnn", "project": "nvidia-cudnn-cu{major}", "folder": "cudnn"}, {"when": "other", "steps": []}]}
    added = plan.parse_components(" NVTX , cublas,nvtx", "13.0.2", table)
    assert added.extras == ("cublas", "nvtx") and added.unpinned == ()
    assert plan.parse_components("cudnn", "14.1.0", table).unpinned == ("nvidia-cudnn-cu14",)
    assert plan.parse_components(None, "13.0.2", table) == plan.Extras()
    with pytest.raises(plan.PlanError):
        plan.parse_components("cufft", "13.0.2", table)  # not in this table


def test_the_uv_installer_lays_cudnn_into_the_same_tree(index, cli, tmp_path):
    index.uv.rename(index.bin / "uv")
    data = tmp_path / "data"
    r = cli("install", "13.0", "--installer", "uv", "--components", "cudnn", env=index.env(data))
    assert r.code == 0, r.err
    tk = data / "toolkits" / "13.0.2"
    assert (tk / "lib/libcudnn.so.9").is_file() and (tk / "lib/libcudart.so.13").is_file()


# ------------------------------------------------------------------------------------------- --force
def _old_driver(index, fake_bin, recorded):
    fake_bin.command("nvidia-smi", by_args={"--query-gpu": (recorded("smi-query-2080ti-x4.txt"), 0),
                                             "--query-compute-apps": ("", 0)})


def test_an_old_driver_stops_the_install_and_force_installs_with_the_warning(index, cli, tmp_path, fake_bin, recorded):
    _old_driver(index, fake_bin, recorded)
    data = tmp_path / "data"
    env = index.env(data)
    env["PATH"] = "%s:%s" % (fake_bin.path, env["PATH"])
    r = cli("install", "13.0", env=env)
    assert r.code == 1, r.err
    assert "Not installing CUDA 13.0.2" in r.out and "driver 520.61.05 is older than 580" in r.out
    assert "CUDA 11.8 runs on it" in r.out and "--force installs it anyway" in r.out  # what would work instead
    assert not index.log.exists() or not _dry_run_args(index)  # nothing resolved or downloaded
    nothing_left(data)
    as_json = cli("install", "13.0", "--json", env=env).json()
    assert as_json["status"] == "refused" and as_json["ok"] is False and as_json["warnings"]
    forced = cli("install", "13.0", "--force", "--json", env=env)
    assert forced.code == 0, forced.err
    report = forced.json()
    assert report["status"] == "installed" and report["forced"] is True
    assert any("older than 580" in w for w in report["warnings"])  # skipped nothing silently
    text = cli("install", "13.0.2", "--force", "--reinstall", env=env)
    assert text.code == 0 and "--force: installed although" in text.out and "warning: driver 520.61.05" in text.out


def test_force_is_only_for_wheel_installs(cli):
    r = cli("install", "12.4", "--plan", "--force", env={"PATH": TOOLS})
    assert r.code == 2 and "--force" in r.err


def test_the_machine_check_stops_only_when_nothing_would_run(monkeypatch):
    import cudaenv.probes.nvidia as nv
    from cudaenv.model.snapshot import Gpu
    from cudaenv.toolkit.install import service

    volta, ampere = Gpu(0, "Tesla V100", compute_capability="7.0"), Gpu(1, "A100", compute_capability="8.0")

    class _State:
        def __init__(self, driver, gpus):
            self.driver = type("D", (), {"version": driver})() if driver else None
            self.gpus = tuple(gpus)

    for driver, gpus, stops in [("580.65.06", [volta, ampere], False), ("580.65.06", [volta], True),
                                ("550.54.15", [ampere], True), (None, [], False), ("580.65.06", [ampere], False)]:
        monkeypatch.setattr(nv, "probe_nvidia", lambda host, notes, _d=driver, _g=gpus: _State(_d, _g))
        warnings, stop = service.machine_check(object(), "13.0.2")
        assert stop is stops, (driver, gpus)
        assert bool(warnings) is (stops or len(gpus) == 2)  # one old GPU among newer ones: a warning, no stop


# ------------------------------------------------------------------------------------------- progress on a terminal
def test_passthrough_shows_pips_lines_escaped_and_bounded():
    import io

    from cudaenv.render.install import PassThrough

    out = io.StringIO()
    p = PassThrough(out, limit=200)
    p(b"Collecting nvidia-nvtx\n  Downloading nvidia_nvtx.whl (148 kB)\r\n   \x1b[31m")
    p(b"bar 50%\r   bar 100%\n")
    p(b"Saved ./x.whl")
    p.close()
    lines = out.getvalue().splitlines()
    assert lines[0] == "  pip: Collecting nvidia-nvtx" and lines[1] == "  pip:   Downloading nvidia_nvtx.whl (148 kB)"
    assert lines[2] == "  pip:    \\x1b[31mbar 50%" and lines[3] == "  pip:    bar 100%" and lines[4] == "  pip: Saved ./x.whl"
    p(b"x" * 500)
    p(b"never shown\n")
    p.close()
    assert out.getvalue().splitlines()[-1] == "  pip: (more output not shown)" and "never shown" not in out.getvalue()


def test_host_run_streams_output_and_keeps_the_capture_bounded(tmp_path):
    from cudaenv.host import Host

    chunks = []
    host = Host(env={"PATH": TOOLS})
    script = "import sys\nfor i in range(3):\n    sys.stdout.write('line %d\\n' % i); sys.stdout.flush()\nsys.stderr.write('err\\n')\n"
    result = host.run([sys.executable, "-c", script], timeout=30, on_output=chunks.append)
    assert result.ok and result.stdout == "line 0\nline 1\nline 2\n" and result.stderr == "err\n"
    seen = b"".join(chunks)
    assert b"line 2\n" in seen and b"err\n" in seen


@pytest.mark.skipif(sys.platform != "linux", reason="a pty")
def test_a_terminal_sees_a_line_per_step_and_pips_own_output(index, tmp_path):
    pexpect = pytest.importorskip("pexpect")
    data = tmp_path / "data"
    exe = str(Path(sys.executable).parent / "cudaenv")
    env = dict(index.env(data, STANDIN_PROGRESS="1"))
    child = pexpect.spawn(exe, ["install", "13.0"], env=env, timeout=60, encoding="utf-8")
    child.expect(pexpect.EOF)
    child.close()
    text = child.before.replace("\r\n", "\n")
    assert child.exitstatus == 0, text
    assert "cudaenv: looking up cuda-toolkit releases" in text and "cudaenv: resolving cuda-toolkit 13.0.2" in text
    assert "cudaenv: downloading nvidia-cuda-nvcc 13.0.88" in text and "cudaenv: unpacking 5 wheels" in text
    assert "  pip:   Downloading nvidia_cuda_nvcc-13.0.88" in text and "  pip: Collecting nvidia-cuda-nvcc==13.0.88" in text  # the stand-in pip's own progress, passed through
    assert "\\x1b[" in text and "\x1b[" not in text  # escaped, never obeyed
    assert "Installed CUDA 13.0.2" in text


def test_json_and_pipes_get_no_progress(index, cli_subprocess, tmp_path):
    data = tmp_path / "data"
    r = cli_subprocess("install", "13.0", "--json", env=index.env(data, STANDIN_PROGRESS="1"))
    assert r.code == 0, r.err
    assert "pip:" not in r.err and "cudaenv: downloading" not in r.err and json.loads(r.out)["status"] == "installed"


# ------------------------------------------------------------------------------------------- --list: the index client
def test_list_reads_the_index_with_the_client_json_and_html(index, cli, tmp_path):
    # PEP 691 JSON for the project page (served as a file: the content type comes from the name)
    page = index.www / "json" / "cuda-toolkit"
    page.mkdir(parents=True)
    files = [{"filename": "cuda_toolkit-%s-py2.py3-none-any.whl" % v, "url": "x", "hashes": {}} for v in ["13.2.0", "12.8.1"]]
    files.append({"filename": "cuda_toolkit-13.3.0rc1-py2.py3-none-any.whl", "url": "x", "hashes": {}})
    files.append({"filename": "cuda_toolkit-11.8.0.tar.gz", "url": "x", "hashes": {}})
    (page / "index.html").write_text(json.dumps({"meta": {"api-version": "1.0"}, "name": "cuda-toolkit", "files": files}))
    env = index.env(tmp_path / "data", CUDAENV_PACKAGE_INDEX=index.base + "/json")
    r = cli("install", "--list", "--json", env=env)
    assert r.code == 0, r.err
    listed = r.json()
    assert listed["wheels"] == ["13.2.0"] and listed["runfile_or_repository"] == ["12.8.1", "11.8.0"]
    assert listed["index"] == index.base + "/json" and listed["source"] == "index"
    text = cli("install", "--list", env=env).out
    assert "13.2.0" in text and "Read from %s/json (cached)." % index.base in text


def test_list_falls_back_to_a_stale_cache_when_the_index_is_down(index, cli, tmp_path):
    import time

    cache = tmp_path / "data-cache"
    cache.mkdir()
    (cache / "toolkit-releases.json").write_text(json.dumps({"releases": ["13.0.1", "12.4.1"], "fetched_at": time.time() - 9e5,
                                                              "index": "http://old"}))
    env = index.env(tmp_path / "data", CUDAENV_CACHE_DIR=cache, CUDAENV_PACKAGE_INDEX="http://127.0.0.1:9/simple")
    r = cli("install", "--list", "--json", env=env)
    assert r.code == 0, r.err
    data = r.json()
    assert data["wheels"] == ["13.0.1"] and data["source"] == "cache"
    assert any("refused the connection" in n and "using the cache of" in n for n in data["notes"])
    # no cache at all: the failure is said in words, exit 1
    bare = cli("install", "--list", env=dict(env, CUDAENV_CACHE_DIR=str(tmp_path / "none")))
    assert bare.code == 1 and "the package index could not be read" in bare.err


def test_the_index_base_comes_from_the_setting_pip_or_pips_default(index, tmp_path):
    from cudaenv.host import Host
    from cudaenv.toolkit.install.listing import index_base, parse_pip_config, releases_from_page

    assert parse_pip_config(":env:.find-links='/opt/w'\nglobal.index-url='https://mirror.example/simple'\n") == \
        "https://mirror.example/simple"
    assert parse_pip_config("global.extra-index-url='file:///x'\n") is None and parse_pip_config("") is None
    assert releases_from_page(["cuda_toolkit-13.0.2-py2.py3-none-any.whl", "cuda_toolkit-13.0.2.tar.gz",
                               "other-1.0-py3-none-any.whl", "cuda_toolkit-13.1.0.dev1-py3-none-any.whl"]) == ["13.0.2"]
    env = index.env(tmp_path / "d")
    assert index_base(env, Host(env=env), 5) == (index.base + "/simple", "CUDAENV_PACKAGE_INDEX")
    env.pop("CUDAENV_PACKAGE_INDEX")
    env["PIP_INDEX_URL"] = "https://mirror.example/simple/"
    assert index_base(env, Host(env=env), 5) == ("https://mirror.example/simple", "PIP_INDEX_URL")
    env["PIP_INDEX_URL"] = "ftp://nope"
    assert index_base(env, Host(env=env), 5)[0] is None
    env.pop("PIP_INDEX_URL")
    # pip's configuration, asked through the Host (a stand-in pip answering `config list`)
    conf = tmp_path / "confbin"
    conf.mkdir()
    (conf / "pip").write_text("#!/bin/sh\necho \"global.index-url='https://mirror.example/pypi/simple'\"\n")
    (conf / "pip").chmod(0o755)
    env["PATH"] = "%s:%s" % (conf, TOOLS)
    assert index_base(env, Host(env=env), 5) == ("https://mirror.example/pypi/simple", "pip's configuration")


# ------------------------------------------------------------------------------------------- the runfile's flags
def test_the_runfile_flags_are_the_tables_and_never_a_driver():
    from cudaenv.core.resources import load_table
    from cudaenv.toolkit.install.repos import row
    from cudaenv.toolkit.install.runfile import runfile_argv

    r = row("runfile")
    table = load_table("toolkit_install")
    assert "docs.nvidia.com/cuda/cuda-installation-guide-linux" in table["sources"][r["source"]]
    argv = runfile_argv("/bin/sh", "/x/cuda.run", "/d/.tmp/tree", "/d/.tmp/tmp")
    assert argv[:2] == ["/bin/sh", "/x/cuda.run"]
    assert {"--silent", "--toolkit", "--toolkitpath=/d/.tmp/tree", "--tmpdir=/d/.tmp/tmp", "--no-man-page", "--override"} <= set(argv)
    assert not any(a.startswith("--driver") for a in argv)
    bad = {"rows": [{"when": "runfile", "flags": ["--silent", "--driver"]}, {"when": "other", "steps": []}]}
    with pytest.raises(Exception, match="driver"):
        runfile_argv("/bin/sh", "/x", "/t", "/s", bad)


def test_list_available_is_install_list(index, cli, tmp_path):
    env = index.env(tmp_path / "data")
    r = cli("list", "--available", "--json", env=env)
    assert r.code == 0, r.err
    data = r.json()
    assert data["wheels"] == ["13.1.0", "13.0.2", "13.0.1"] and data["runfile_or_repository"] == ["12.9.1", "12.4.1"]
    text = cli("list", "--available", env=env)
    assert text.code == 0 and "From wheels (cudaenv install VERSION, no root):" in text.out and "13.1.0, 13.0.2" in text.out
    assert index.page_reads() == 1  # the second answer was the cache's, the same one `install --list` writes
