"""Toolkit discovery: parsers on recorded outputs, and fake roots that look like real installs."""

import json
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import CHILD_CWD, recorded
from cudaenv.host import Host
from cudaenv.core.version import version_key
from cudaenv.parse.nvcc import parse_nvcc_version
from cudaenv.parse.toolkit_files import (
    parse_bundled_driver,
    parse_cuda_h,
    parse_dist_metadata_version,
    parse_version_json,
    parse_version_txt,
    parse_wrapper_target,
)
from cudaenv.probes.site_packages import env_site_packages
from cudaenv.probes.toolkits import ToolkitState, dpkg_owners, probe_toolkits
from cudaenv.probes.toolkits.folder import follow_nvcc


def fake_nvcc_script(version):
    mm = ".".join(version.split(".")[:2])
    return "#!/bin/sh\necho 'nvcc: NVIDIA (R) Cuda compiler driver'\necho 'Cuda compilation tools, release %s, V%s'\n" % (mm, version)

WIN_CUDA = "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA"
WIN_CUDA_REL = "C/Program Files/NVIDIA GPU Computing Toolkit/CUDA"


def probe(host, site_packages=()):
    notes = []
    state = probe_toolkits(host, notes, site_packages=site_packages)
    return state, notes


def by_path(state, path):
    matches = [tk for tk in state.toolkits if tk.path == path]
    assert matches, "no toolkit at %s in %s" % (path, [tk.path for tk in state.toolkits])
    return matches[0]


def messages(notes):
    return [n.message for n in notes]


# ------------------------------------------------------------------------------------- parsers
def test_version_json_recorded_runfile_11_8():
    text = recorded("versionjson-11.8.0-runfile.json")
    assert parse_version_json(text) == "11.8.0"
    assert parse_bundled_driver(text) == "520.61.05"


def test_version_json_date_stamped_fragment_is_kept_as_written():
    # only the grep excerpt was published: not valid JSON, the entry is still read
    text = recorded("versionjson-12.1-datestamped-grep.txt")
    assert parse_version_json(text) == "12.1.20230222"
    assert parse_bundled_driver(text) is None


@pytest.mark.parametrize(
    "text",
    ["", "{", "[]", '{"cuda": "12.4"}', '{"cuda": {"version": 12.4}}', '{"cuda": {"version": "abc"}}', "null", '{"x": 1}'],
)
def test_version_json_without_a_usable_version(text):
    assert parse_version_json(text) is None


def test_version_txt_and_cuda_h():
    assert parse_version_txt("CUDA Version 10.2.89\n") == "10.2.89"
    assert parse_version_txt("CUDA Version 9.0.176") == "9.0.176"
    assert parse_version_txt("nothing here") is None
    assert parse_cuda_h("#define CUDA_VERSION 13000\n") == "13.0"
    assert parse_cuda_h("/* x */\n#  define   CUDA_VERSION 12040 /* CUDA 12.4 */\n") == "12.4"
    assert parse_cuda_h("#define CUDA_VERSION 9020") == "9.2"
    assert parse_cuda_h(" * \\defgroup CUDA_VERSION Version Management") is None
    assert parse_cuda_h("#define CUDA_VERSION 0") is None


@pytest.mark.real_machine
def test_this_machines_cuda_h_line():
    real = Path("/usr/local/cuda-13.0/include/cuda.h")
    if not real.exists():
        pytest.skip("no /usr/local/cuda-13.0 here")
    assert parse_cuda_h(real.read_text(errors="replace")) == "13.0"


@pytest.mark.parametrize(
    "name, expected",
    [
        ("nvcc-13.0.88-this-machine.txt", "13.0.88"),
        ("nvcc-11.7.99.txt", "11.7.99"),
        ("nvcc-10.1.243.txt", "10.1.243"),
        ("nvcc-8.0.44-debian.txt", "8.0.44"),
    ],
)
def test_nvcc_version_recorded(name, expected):
    assert parse_nvcc_version(recorded(name)) == expected


def test_nvcc_version_falls_back_to_the_release():
    assert parse_nvcc_version("Cuda compilation tools, release 13.0") == "13.0"
    assert parse_nvcc_version("bash: nvcc: command not found") is None


def test_wrapper_target_and_metadata():
    assert parse_wrapper_target('#!/bin/sh\nexec /usr/local/cuda-13.0/bin/nvcc "$@"\n') == "/usr/local/cuda-13.0/bin/nvcc"
    assert parse_wrapper_target("#!/bin/bash\nset -e\nexec '/opt/my cuda/bin/nvcc' \"$@\"\n") is None  # quoted space: not a plain path
    assert parse_wrapper_target('#!/bin/sh\nexec "${CUDA_HOME}/bin/nvcc" "$@"\n', {"CUDA_HOME": "/opt/c"}) == "/opt/c/bin/nvcc"
    assert parse_wrapper_target('#!/bin/sh\nexec "$CUDA_HOME/bin/nvcc" "$@"\n', {}) is None
    assert parse_wrapper_target("\x7fELF...") is None
    assert parse_dist_metadata_version("Metadata-Version: 2.4\nName: nvidia-cuda-nvcc\nVersion: 13.0.88\n") == "13.0.88"
    assert version_key("12.10") > version_key("12.9") > version_key("12.1.20230222") > version_key(None)


@settings(max_examples=200)
@given(st.text())
def test_parsers_never_raise(text):
    for parser in (parse_version_json, parse_bundled_driver, parse_version_txt, parse_cuda_h, parse_nvcc_version,
                   parse_dist_metadata_version, parse_wrapper_target, version_key):
        parser(text)


@settings(max_examples=100)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.sampled_from(["cuda", "version", "nvidia_driver"]), c, max_size=3),
                    max_leaves=10))
def test_version_json_any_json_shape(value):
    text = json.dumps(value)
    for parser in (parse_version_json, parse_bundled_driver):
        result = parser(text)
        assert result is None or isinstance(result, str)


# ---------------------------------------------------------------------------- several toolkits
def test_version_from_each_kind_of_file_in_order(fake_root):
    fake_root.toolkit("12.4.131")  # version.json (and cuda.h, nvcc)
    fake_root.toolkit("10.2.89", version_json=False, version_txt=True)
    fake_root.toolkit("11.8.89", version_json=False)  # cuda.h and nvcc only
    fake_root.toolkit("12.1.105", version_json=False, cuda_h=False)  # nvcc only
    # cuda.h must win over running nvcc: this nvcc leaves a trace when run
    trace = fake_root / "ran-11.8-nvcc"
    fake_root.executable("usr/local/cuda-11.8/bin/nvcc", "#!/bin/sh\ntouch '%s'\necho 'release 99.9, V99.9.9'\n" % trace)
    state, notes = probe(fake_root.host())
    assert [(tk.path, tk.version, tk.version_source) for tk in state.toolkits] == [
        ("/usr/local/cuda-12.4", "12.4.131", "version.json"),
        ("/usr/local/cuda-12.1", "12.1.105", "nvcc-file"),  # the release string read from nvcc's bytes, not run
        ("/usr/local/cuda-11.8", "11.8", "cuda.h"),
        ("/usr/local/cuda-10.2", "10.2.89", "version.txt"),
    ]
    assert not trace.exists()
    tk = by_path(state, "/usr/local/cuda-12.4")
    assert tk.nvcc == "/usr/local/cuda-12.4/bin/nvcc" and tk.lib_dir == "lib64" and tk.source == "/usr/local/cuda-*"
    assert state.active_toolkit is None and state.cuda_symlink is None
    assert notes == []
    assert isinstance(state, ToolkitState)


def test_bundled_driver_and_lib_dir_variants(fake_root):
    base = fake_root.toolkit("11.8.0", lib="lib")
    (base / "version.json").write_text(recorded("versionjson-11.8.0-runfile.json"))
    fake_root.toolkit("12.2.0", lib="targets/x86_64-linux/lib", version_json=False)
    state, _ = probe(fake_root.host())
    tk = by_path(state, "/usr/local/cuda-11.8")
    assert tk.bundled_driver == "520.61.05" and tk.lib_dir == "lib" and tk.version == "11.8.0"
    assert by_path(state, "/usr/local/cuda-12.2").lib_dir == "targets/x86_64-linux/lib"


def test_targets_cuda_h_only(fake_root):
    fake_root.file("opt/cuda/targets/x86_64-linux/include/cuda.h", "#define CUDA_VERSION 12060\n")
    fake_root.dir("opt/cuda/targets/x86_64-linux/lib")
    state, _ = probe(fake_root.host())
    tk = by_path(state, "/opt/cuda")
    assert (tk.version, tk.version_source, tk.nvcc, tk.lib_dir) == ("12.6", "cuda.h", None, "targets/x86_64-linux/lib")


def test_broken_version_json_falls_back_with_a_note(fake_root):
    base = fake_root.toolkit("12.3.2")
    (base / "version.json").write_text('{"cuda": {"name": "CUDA SDK"}}')
    state, notes = probe(fake_root.host())
    tk = by_path(state, "/usr/local/cuda-12.3")
    assert (tk.version, tk.version_source) == ("12.3", "cuda.h")
    assert any("no readable cuda.version" in m for m in messages(notes))
    from cudaenv.core.i18n import CHINESE, ENGLISH, set_language, tr

    set_language(CHINESE)  # a marked note (review: it was made unmarked, English in a Chinese run)
    try:
        said = [tr(n.message) for n in notes]
    finally:
        set_language(ENGLISH)
    assert any(s.endswith("version.json 中没有可读的 cuda.version") for s in said), said


# -------------------------------------------------------------------------------- the link
def test_absolute_link(fake_root):
    fake_root.toolkit("12.4.131")
    fake_root.toolkit("11.8.89")
    fake_root.link("usr/local/cuda", "/usr/local/cuda-12.4")
    state, _ = probe(fake_root.host())
    assert state.cuda_symlink.path == "/usr/local/cuda"
    assert state.cuda_symlink.target == "/usr/local/cuda-12.4"
    assert state.cuda_symlink.resolved == "/usr/local/cuda-12.4"
    assert not state.cuda_symlink.dangling and not state.cuda_symlink.alternatives
    assert [tk.is_link_target for tk in state.toolkits] == [True, False]
    assert by_path(state, "/usr/local/cuda-12.4").sources == ("/usr/local/cuda-*", "/usr/local/cuda")
    assert len(state.toolkits) == 2  # the link is no toolkit of its own


def test_relative_link(fake_root):
    fake_root.toolkit("12.1.105")
    fake_root.link("usr/local/cuda", "cuda-12.1")
    state, _ = probe(fake_root.host())
    assert state.cuda_symlink.target == "cuda-12.1" and state.cuda_symlink.resolved == "/usr/local/cuda-12.1"
    assert state.toolkits[0].is_link_target


def test_dangling_link(fake_root):
    fake_root.toolkit("12.4.131")
    fake_root.link("usr/local/cuda", "/usr/local/cuda-11.3")
    state, _ = probe(fake_root.host())
    assert state.cuda_symlink.dangling and state.cuda_symlink.resolved is None
    assert state.cuda_symlink.target == "/usr/local/cuda-11.3"
    assert not state.toolkits[0].is_link_target


def test_link_through_alternatives(fake_root):
    fake_root.toolkit("12.4.131")
    fake_root.link("etc/alternatives/cuda", "/usr/local/cuda-12.4")
    fake_root.link("usr/local/cuda", "/etc/alternatives/cuda")
    state, _ = probe(fake_root.host())
    assert state.cuda_symlink.alternatives and state.cuda_symlink.resolved == "/usr/local/cuda-12.4"
    assert state.toolkits[0].sources == ("/usr/local/cuda-*", "/usr/local/cuda", "/etc/alternatives/cuda")


def test_only_alternatives_link(fake_root):
    fake_root.toolkit("12.4.131", where="opt/nvidia")
    fake_root.link("etc/alternatives/cuda", "/opt/nvidia/cuda-12.4")
    state, _ = probe(fake_root.host())
    assert state.cuda_symlink.path == "/etc/alternatives/cuda" and state.cuda_symlink.alternatives
    tk = by_path(state, "/opt/nvidia/cuda-12.4")
    assert tk.source == "/etc/alternatives/cuda" and tk.is_link_target


# ------------------------------------------------------------------------- environment variables
def test_cuda_home_makes_it_active_without_nvcc_on_path(fake_root):
    fake_root.toolkit("12.4.131", where="opt")
    fake_root.toolkit("11.8.89")
    state, _ = probe(fake_root.host(env={"CUDA_HOME": "/opt/cuda-12.4/"}))
    tk = by_path(state, "/opt/cuda-12.4")
    assert tk.is_cuda_home and tk.active and "CUDA_HOME" in tk.sources
    assert state.active_toolkit.via == "CUDA_HOME" and state.active_toolkit.path == "/opt/cuda-12.4"
    assert state.active_toolkit.nvcc == "/opt/cuda-12.4/bin/nvcc" and state.active_toolkit.nvcc_on_path == ()
    assert not by_path(state, "/usr/local/cuda-11.8").active


def test_cuda_home_problems_are_notes(fake_root):
    fake_root.toolkit("12.4.131")
    state, notes = probe(fake_root.host(env={"CUDA_HOME": "/usr/local/cuda-12.4/bin", "CUDA_PATH": "/usr/local/cuda-9.9", "CUDA_ROOT": "cuda"}))
    text = " | ".join(messages(notes))
    assert "CUDA_HOME=/usr/local/cuda-12.4/bin names the bin folder" in text
    assert "CUDA_PATH=/usr/local/cuda-9.9 does not exist" in text
    assert "CUDA_ROOT=cuda is not an absolute path" in text
    tk = by_path(state, "/usr/local/cuda-12.4")
    assert "CUDA_HOME" in tk.sources and state.active_toolkit.via == "CUDA_HOME"


def test_env_paths_are_read_inside_the_root(fake_root):
    # CUDA_HOME names the inspected system's path: it must be found in the fake root, never on this machine
    fake_root.toolkit("13.0.88", where="usr/local", name="cuda-13.0")
    state, _ = probe(fake_root.host(env={"CUDA_HOME": "/usr/local/cuda-13.0"}))
    assert by_path(state, "/usr/local/cuda-13.0").version == "13.0.88"
    assert all(str(fake_root.path) not in tk.path for tk in state.toolkits)


def test_windows_program_files_and_cuda_path_variables(fake_root):
    for version in ("12.1.105", "11.8.89"):
        mm = ".".join(version.split(".")[:2])
        fake_root.toolkit(version, where=WIN_CUDA_REL, name="v" + mm, nvcc=False, lib="lib/x64")
        fake_root.executable("%s/v%s/bin/nvcc.exe" % (WIN_CUDA_REL, mm), fake_nvcc_script(version))
    env = {
        "CUDA_PATH": WIN_CUDA + "\\v12.1",
        "CUDA_PATH_V12_1": WIN_CUDA + "\\v12.1",
        "CUDA_PATH_V11_8": WIN_CUDA + "\\v11.8\\",
        "PATH": "C:\\Windows\\System32",
    }
    state, notes = probe(fake_root.host(system="windows", env=env))
    assert [tk.path for tk in state.toolkits] == [WIN_CUDA + "\\v12.1", WIN_CUDA + "\\v11.8"]
    new, old = state.toolkits
    assert new.sources == ("Program Files", "CUDA_PATH", "CUDA_PATH_V12_1")
    assert old.sources == ("Program Files", "CUDA_PATH_V11_8")
    assert new.install_method == old.install_method == "windows-installer"
    assert new.nvcc == WIN_CUDA + "\\v12.1\\bin\\nvcc.exe" and new.lib_dir == "lib\\x64"
    assert new.is_cuda_home and new.active and not old.is_cuda_home
    assert state.active_toolkit.via == "CUDA_PATH" and state.cuda_symlink is None
    assert notes == []


def test_windows_path_decides_the_active_one(fake_root):
    fake_root.toolkit("11.8.89", where=WIN_CUDA_REL, name="v11.8", nvcc=False)
    fake_root.executable(WIN_CUDA_REL + "/v11.8/bin/nvcc.exe", fake_nvcc_script("11.8.89"))
    fake_root.toolkit("12.1.105", where=WIN_CUDA_REL, name="v12.1", nvcc=False)
    env = {"PATH": WIN_CUDA + "\\v11.8\\bin;C:\\Windows", "CUDA_PATH": WIN_CUDA + "\\v12.1"}
    state, _ = probe(fake_root.host(system="windows", env=env))
    assert state.active_toolkit.via == "PATH" and state.active_toolkit.path == WIN_CUDA + "\\v11.8"
    assert by_path(state, WIN_CUDA + "\\v11.8").on_path and by_path(state, WIN_CUDA + "\\v12.1").is_cuda_home


# ---------------------------------------------------------------------------- CUDAENV_TOOLKITS
def test_cudaenv_toolkits_hpc_tree(fake_root):
    fake_root.toolkit("12.1.1", where="sw/cuda", name="12.1")
    fake_root.toolkit("11.8.0", where="sw/cuda", name="11.8")
    fake_root.dir("sw/cuda/modulefiles")
    fake_root.toolkit("12.2.2", where="opt/my cuda", name="12.2")  # a space in the path
    env = {"CUDAENV_TOOLKITS": "/sw/cuda:/opt/my cuda/12.2::/nowhere"}
    state, notes = probe(fake_root.host(env=env))
    assert [tk.path for tk in state.toolkits] == ["/opt/my cuda/12.2", "/sw/cuda/12.1", "/sw/cuda/11.8"]
    assert all(tk.source == "CUDAENV_TOOLKITS" for tk in state.toolkits)
    assert messages(notes) == ["CUDAENV_TOOLKITS entry /nowhere does not exist"]


def test_cudaenv_toolkits_on_windows_splits_on_semicolons(fake_root):
    fake_root.toolkit("12.4.131", where="D/sw/cuda", name="12.4", nvcc=False, lib="lib/x64")
    fake_root.toolkit("11.8.89", where="E/cuda 11.8", name="v11.8", nvcc=False, lib="lib/x64")
    env = {"CUDAENV_TOOLKITS": "D:\\sw\\cuda;E:\\cuda 11.8\\v11.8;relative\\dir", "PATH": "C:\\Windows"}
    state, notes = probe(fake_root.host(system="windows", env=env))
    assert [(tk.path, tk.version) for tk in state.toolkits] == [("D:\\sw\\cuda\\12.4", "12.4.131"), ("E:\\cuda 11.8\\v11.8", "11.8.89")]
    assert all(tk.source == "CUDAENV_TOOLKITS" for tk in state.toolkits)
    assert messages(notes) == ["CUDAENV_TOOLKITS entry 'relative\\\\dir' is not an absolute path; ignored"]


def test_cudaenv_toolkits_folder_without_toolkits(fake_root):
    fake_root.dir("sw/empty/a")
    state, notes = probe(fake_root.host(env={"CUDAENV_TOOLKITS": "/sw/empty"}))
    assert state.toolkits == ()
    assert "holds no toolkit" in messages(notes)[0]


# ----------------------------------------------------------------------------------- conda, pip
def test_conda_env(fake_root):
    prefix = "opt/conda/envs/build"
    fake_root.executable(prefix + "/bin/nvcc", fake_nvcc_script("12.4.131"))
    fake_root.file(prefix + "/targets/x86_64-linux/include/cuda.h", "#define CUDA_VERSION 12040\n")
    fake_root.file(prefix + "/conda-meta/cuda-nvcc-12.4.131-0.json", "{}")
    fake_root.file(prefix + "/conda-meta/python-3.11.9-h1_0_cpython.json", "{}")
    fake_root.dir(prefix + "/lib")
    state, notes = probe(fake_root.host(env={"CONDA_PREFIX": "/" + prefix}))
    tk = by_path(state, "/" + prefix)
    assert (tk.version, tk.version_source, tk.install_method, tk.source) == ("12.4.131", "conda-meta", "conda", "conda")
    assert tk.nvcc == "/%s/bin/nvcc" % prefix and tk.lib_dir == "lib"


def test_conda_env_without_cuda_is_ignored(fake_root):
    fake_root.file("opt/conda/conda-meta/python-3.11.9-h1_0_cpython.json", "{}")
    fake_root.dir("opt/conda/bin")
    state, _ = probe(fake_root.host(env={"CONDA_PREFIX": "/opt/conda"}))
    assert state.toolkits == ()


def _pip_dist(fake_root, sp, dist, version):
    fake_root.file("%s/%s-%s.dist-info/METADATA" % (sp, dist, version),
                   "Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (dist.replace("_", "-"), version))


def test_pip_wheels_cu12_and_cu13(fake_root):
    sp12 = "venv12/lib/python3.11/site-packages"
    fake_root.executable(sp12 + "/nvidia/cuda_nvcc/bin/nvcc", fake_nvcc_script("12.4.131"))
    fake_root.file(sp12 + "/nvidia/cuda_runtime/lib/libcudart.so.12", "")
    _pip_dist(fake_root, sp12, "nvidia_cuda_nvcc_cu12", "12.4.131")
    _pip_dist(fake_root, sp12, "nvidia_cuda_runtime_cu12", "12.4.127")
    sp13 = "venv13/lib/python3.12/site-packages"
    fake_root.executable(sp13 + "/nvidia/cu13/bin/nvcc", fake_nvcc_script("13.0.88"))
    fake_root.file(sp13 + "/nvidia/cu13/include/cuda.h", "#define CUDA_VERSION 13000\n")
    fake_root.dir(sp13 + "/nvidia/cu13/lib")
    _pip_dist(fake_root, sp13, "nvidia_cuda_nvcc", "13.0.88")
    state, notes = probe(fake_root.host(), site_packages=["/" + sp12, "/" + sp13])
    assert [(tk.path, tk.version, tk.version_source, tk.install_method) for tk in state.toolkits] == [
        ("/%s/nvidia/cu13" % sp13, "13.0.88", "dist-info", "pip"),
        ("/%s/nvidia/cuda_nvcc" % sp12, "12.4.131", "dist-info", "pip"),
    ]
    assert state.toolkits[0].lib_dir == "lib" and state.toolkits[1].nvcc.endswith("cuda_nvcc/bin/nvcc")
    assert notes == []


def test_pip_runtime_only_wheel(fake_root):
    sp = "venv/lib/python3.11/site-packages"
    fake_root.file(sp + "/nvidia/cuda_runtime/lib/libcudart.so.12", "")
    _pip_dist(fake_root, sp, "nvidia_cuda_runtime_cu12", "12.6.77")
    host = fake_root.host(env={"VIRTUAL_ENV": "/venv"})
    assert env_site_packages(host) == ("/" + sp,)
    state, _ = probe(host, site_packages=env_site_packages(host))
    tk = state.toolkits[0]
    assert (tk.version, tk.nvcc, tk.install_method, tk.lib_dir) == ("12.6.77", None, "pip", "lib")


# ------------------------------------------------------------------------------ which is active
def test_path_order_decides_the_active_toolkit(fake_root):
    fake_root.toolkit("12.4.131")
    fake_root.toolkit("11.8.89")
    path = "/usr/local/cuda-11.8/bin:/usr/local/cuda-12.4/bin:/usr/bin:/bin"
    state, _ = probe(fake_root.host(path=path, env={"CUDA_HOME": "/usr/local/cuda-12.4"}))
    old, new = by_path(state, "/usr/local/cuda-11.8"), by_path(state, "/usr/local/cuda-12.4")
    assert old.active and not new.active and old.on_path and new.on_path
    assert new.is_cuda_home and not old.is_cuda_home
    assert state.active_toolkit.via == "PATH" and state.active_toolkit.version == "11.8.89"
    assert state.active_toolkit.nvcc_on_path == ("/usr/local/cuda-11.8/bin/nvcc", "/usr/local/cuda-12.4/bin/nvcc")
    assert "PATH" in old.sources


def test_shell_wrapper_like_this_machine(fake_root):
    fake_root.toolkit("13.0.88", version_json=False)
    fake_root.link("usr/local/cuda", "/usr/local/cuda-13.0")
    fake_root.executable("usr/local/bin/nvcc", '#!/bin/sh\nexec /usr/local/cuda-13.0/bin/nvcc "$@"\n')
    host = fake_root.host(path="/usr/local/bin:/usr/bin:/bin")
    state, notes = probe(host)
    assert len(state.toolkits) == 1
    tk = state.toolkits[0]
    assert tk.active and tk.on_path and tk.is_link_target and (tk.version, tk.version_source) == ("13.0", "cuda.h")
    assert state.active_toolkit.nvcc == "/usr/local/cuda-13.0/bin/nvcc"
    assert state.active_toolkit.nvcc_on_path == ("/usr/local/bin/nvcc",)
    assert follow_nvcc(host, "/usr/local/bin/nvcc") == "/usr/local/cuda-13.0/bin/nvcc"
    assert notes == []


def test_symlinked_nvcc_and_env_wrapper(fake_root):
    fake_root.toolkit("12.4.131")
    fake_root.toolkit("12.6.20", where="opt/nvidia/hpc_sdk", name="cuda")
    fake_root.link("usr/bin/nvcc", "/usr/local/cuda-12.4/bin/nvcc")
    fake_root.executable("opt/bin/nvcc", '#!/bin/bash\nexec "${MYCUDA}/bin/nvcc" "$@"\n')
    host = fake_root.host(path="/opt/bin:/usr/bin:/bin", env={"MYCUDA": "/opt/nvidia/hpc_sdk/cuda"})
    state, _ = probe(host)
    assert state.active_toolkit.path == "/opt/nvidia/hpc_sdk/cuda" and state.active_toolkit.version == "12.6.20"
    assert state.active_toolkit.nvcc_on_path == ("/opt/bin/nvcc", "/usr/bin/nvcc")
    assert by_path(state, "/usr/local/cuda-12.4").on_path  # through the /usr/bin/nvcc link
    assert by_path(state, "/opt/nvidia/hpc_sdk/cuda").source == "PATH"


def test_wrapper_loop_does_not_hang(fake_root):
    fake_root.executable("opt/a/bin/nvcc", "#!/bin/sh\nexec /opt/b/bin/nvcc \"$@\"\n")
    fake_root.executable("opt/b/bin/nvcc", "#!/bin/sh\nexec /opt/a/bin/nvcc \"$@\"\n")
    host = fake_root.host(path="/opt/a/bin", timeout=2)
    state, notes = probe(host)
    assert state.active_toolkit is not None  # reported, with no version, and no crash
    assert any("could not tell the version" in m for m in messages(notes))


def test_ld_library_path_flags(fake_root):
    fake_root.toolkit("12.4.131")
    fake_root.toolkit("11.8.89")
    fake_root.link("usr/local/cuda", "/usr/local/cuda-11.8")
    env = {"LD_LIBRARY_PATH": "/usr/local/cuda/lib64:/usr/lib/x86_64-linux-gnu:relative/lib"}
    state, _ = probe(fake_root.host(env=env))
    assert by_path(state, "/usr/local/cuda-11.8").in_ld_library_path
    assert not by_path(state, "/usr/local/cuda-12.4").in_ld_library_path


# ---------------------------------------------------------------------- install methods, distro
def test_runfile_and_deb_and_unknown(fake_root):
    fake_root.toolkit("11.8.89", runfile=True)
    old = fake_root.toolkit("10.0.130", version_json=False, version_txt=True)
    fake_root.executable("usr/local/cuda-10.0/bin/uninstall_cuda_10.0.pl", "#!/usr/bin/perl\n")
    fake_root.toolkit("12.4.131")
    fake_root.toolkit("12.6.85")
    fake_root.file("var/lib/dpkg/info/cuda-nvcc-12-4.list", "/.\n/usr\n/usr/local\n/usr/local/cuda-12.4\n/usr/local/cuda-12.4/bin\n/usr/local/cuda-12.4/bin/nvcc\n")
    fake_root.file("var/lib/dpkg/info/libc6:amd64.list", "/usr/local/cuda-12.6/bin/nvcc\n")  # not a CUDA package name
    state, _ = probe(fake_root.host())
    methods = {tk.path: tk.install_method for tk in state.toolkits}
    assert methods == {
        "/usr/local/cuda-11.8": "runfile",
        "/usr/local/cuda-10.0": "runfile",
        "/usr/local/cuda-12.4": "deb",
        "/usr/local/cuda-12.6": "unknown",
    }
    assert dpkg_owners(fake_root.host(), "/usr/local/cuda-12.4") == ("cuda-nvcc-12-4",)
    assert old.exists()


def test_rpm_is_a_weak_signal(fake_root):
    fake_root.toolkit("12.4.131")
    fake_root.dir("var/lib/rpm")
    state, _ = probe(fake_root.host())
    assert state.toolkits[0].install_method == "rpm"


def test_rpm_under_usr_lib_sysimage_is_the_same_signal(fake_root):
    """Fedora 36+ and openSUSE keep the rpm database in /usr/lib/sysimage/rpm: the probe reads the one list of
    database folders (probes/package_db.py) that uninstall's rpm lookup reads, not its own /var/lib/rpm."""
    fake_root.toolkit("12.4.131")
    state, _ = probe(fake_root.host())
    assert state.toolkits[0].install_method == "unknown"
    fake_root.file("usr/lib/sysimage/rpm/rpmdb.sqlite", "x")
    state, _ = probe(fake_root.host())
    assert state.toolkits[0].install_method == "rpm"
    fake_root.dir("var/lib/dpkg/info")  # a Debian system with rpm installed is not an rpm system
    state, _ = probe(fake_root.host())
    assert state.toolkits[0].install_method == "unknown"


def test_distro_package(fake_root):
    fake_root.executable("usr/bin/nvcc", fake_nvcc_script("11.5.119"))
    fake_root.file("usr/lib/cuda/version.txt", "CUDA Version 11.5.1\n")
    fake_root.file("usr/include/cuda.h", "#define CUDA_VERSION 11050\n")
    host = fake_root.host(env={"CUDA_HOME": "/usr/lib/cuda"}, path="/usr/bin:/bin")  # the image's PATH, read inside the root
    state, _ = probe(host)
    assert len(state.toolkits) == 1
    tk = state.toolkits[0]
    assert (tk.path, tk.version, tk.version_source, tk.install_method) == ("/usr", "11.5.1", "version.txt", "distro")
    assert tk.nvcc == "/usr/bin/nvcc" and tk.active and tk.on_path and tk.sources == ("distro", "CUDA_HOME", "PATH")
    fake_root.file("var/lib/dpkg/info/nvidia-cuda-toolkit.list", "/usr/bin/nvcc\n/usr/lib/cuda/version.txt\n")
    state, _ = probe(host)
    assert state.toolkits[0].install_method == "deb"


def test_distro_nvcc_wrapper_is_one_toolkit(fake_root):
    # Debian/Ubuntu: /usr/bin/nvcc is a script that execs /usr/lib/nvidia-cuda-toolkit/bin/nvcc
    fake_root.executable("usr/lib/nvidia-cuda-toolkit/bin/nvcc", fake_nvcc_script("12.0.140"))
    fake_root.executable("usr/bin/nvcc", '#!/bin/sh\nexec /usr/lib/nvidia-cuda-toolkit/bin/nvcc "$@"\n')
    fake_root.file("usr/include/cuda.h", "#define CUDA_VERSION 12000\n")
    state, _ = probe(fake_root.host(path="/usr/bin:/bin"))  # the image's PATH, read inside the root
    assert [(tk.path, tk.version, tk.install_method) for tk in state.toolkits] == [("/usr", "12.0", "distro")]
    assert state.active_toolkit.path == "/usr" and state.active_toolkit.nvcc == "/usr/lib/nvidia-cuda-toolkit/bin/nvcc"
    assert state.toolkits[0].active and state.toolkits[0].on_path


# ---------------------------------------------------------------------------------- odd trees
def test_odd_trees_never_break_it(fake_root):
    fake_root.toolkit("12.1.105", name="cuda-12.1.bak")  # a real toolkit under an odd name
    fake_root.dir("usr/local/cuda-12.0.old/share")  # odd name, no toolkit: silently ignored
    fake_root.dir("usr/local/cuda-12.0/share")  # named like one, holds nothing
    fake_root.file("usr/local/cuda-12.4", "not a folder")
    fake_root.link("usr/local/cuda-11.0", "/usr/local/cuda-11.0-gone")
    fake_root.link("usr/local/cuda-9.9", "/usr/local/cuda-9.8")
    fake_root.link("usr/local/cuda-9.8", "/usr/local/cuda-9.9")
    fake_root.link("usr/local/cuda", "/usr/local/cuda")  # a link to itself
    locked = fake_root.toolkit("12.3.2")
    locked.chmod(0)
    try:
        state, notes = probe(fake_root.host())
    finally:
        locked.chmod(0o755)
    paths = [tk.path for tk in state.toolkits]
    assert "/usr/local/cuda-12.1.bak" in paths
    assert by_path(state, "/usr/local/cuda-12.1.bak").version == "12.1.105"
    text = " | ".join(messages(notes))
    assert "/usr/local/cuda-12.0 holds no toolkit" in text
    assert "/usr/local/cuda-12.4 is not a folder" in text
    assert "/usr/local/cuda-11.0 is a dangling or looping link" in text
    assert "/usr/local/cuda-9.9 is a dangling or looping link" in text
    assert "cuda-12.0.old" not in text
    assert state.cuda_symlink.dangling
    if os.geteuid() != 0:  # root reads a chmod 000 folder anyway
        assert "/usr/local/cuda-12.3 cannot be read" in text
        assert "/usr/local/cuda-12.3" not in paths


# ---------------------------------------------------------------------------- the real machine
@pytest.mark.real_machine
def test_real_machine_cuda_13():
    if not os.path.exists("/usr/local/cuda-13.0/bin/nvcc"):
        pytest.skip("no /usr/local/cuda-13.0 toolkit here")
    host = Host(root="/", env={"PATH": "/usr/local/bin:/usr/bin:/bin"})
    state, notes = probe(host)
    versions_13 = [tk for tk in state.toolkits if tk.version and tk.version.startswith("13.0")]
    assert len(versions_13) == 1
    tk = versions_13[0]
    assert (tk.path, tk.version, tk.version_source, tk.install_method) == ("/usr/local/cuda-13.0", "13.0.88", "dist-info", "pip-wheels")
    assert tk.lib_dir == "lib64" and tk.is_link_target and tk.active
    assert state.cuda_symlink.target == "/usr/local/cuda-13.0" and state.cuda_symlink.resolved == "/usr/local/cuda-13.0"
    assert state.active_toolkit.nvcc == "/usr/local/cuda-13.0/bin/nvcc"
    assert state.active_toolkit.nvcc_on_path[0] == "/usr/local/bin/nvcc"


_NAMES = st.text(st.characters(blacklist_characters="/\x00", blacklist_categories=("Cs",)), min_size=1, max_size=12).filter(
    lambda n: n not in (".", "..")
)


@settings(max_examples=30)
@given(st.lists(st.tuples(st.sampled_from(["dir", "file", "link", "toolkit"]), _NAMES, _NAMES), max_size=6))
def test_any_tree_under_usr_local_never_raises(tmp_path_factory, entries):
    root = tmp_path_factory.mktemp("odd")
    local = root / "usr" / "local"
    local.mkdir(parents=True)
    for kind, name, other in entries:
        target = local / ("cuda-" + name)
        try:
            if kind == "dir":
                target.mkdir(exist_ok=True)
            elif kind == "file":
                target.write_text(other)
            elif kind == "link":
                os.symlink(other if not other.startswith("/") else "/usr/local/" + other, target)
            else:
                (target / "bin").mkdir(parents=True, exist_ok=True)
                (target / "version.json").write_text(other)
        except OSError:
            continue
    host = Host(root=str(root), env={"PATH": "/usr/local/cuda-%s/bin" % entries[0][1] if entries else "/usr/bin",
                                     "CUDA_HOME": "/usr/local/cuda-" + (entries[-1][2] if entries else "x")})
    notes = []
    state = probe_toolkits(host, notes)
    assert all(tk.path.startswith("/usr/local/") for tk in state.toolkits)


# ------------------------------------------------------------------ issue 12: a version is a version
def test_version_json_with_shell_code_is_rejected_with_a_note(fake_root):
    base = fake_root.toolkit("12.4.1")
    (base / "version.json").write_text('{"cuda": {"name": "CUDA SDK", "version": "12.4$(touch PWNED)"}}')
    state, notes = probe(fake_root.host())
    tk = by_path(state, "/usr/local/cuda-12.4")
    assert tk.version == "12.4" and tk.version_source == "cuda.h"  # the next file tells it
    assert any("version.json has a malformed version '12.4$(touch PWNED)', ignored" in m for m in messages(notes))


def test_huge_cuda_version_define_is_no_version(fake_root):
    fake_root.file("usr/local/cuda-12.4/include/cuda.h", "#define CUDA_VERSION %s\n" % ("9" * 60_000))
    assert parse_cuda_h("#define CUDA_VERSION %s\n" % ("9" * 60_000)) is None
    state, notes = probe(fake_root.host())
    tk = by_path(state, "/usr/local/cuda-12.4")
    assert tk.version != "999999.99" and tk.version is None
    assert any("CUDA_VERSION has a malformed version" in m and "characters), ignored" in m for m in messages(notes))


def test_a_3000_digit_nvcc_release_is_no_version():
    assert parse_nvcc_version("Cuda compilation tools, release %s.0, V%s.0.1" % ("1" * 3000, "1" * 3000)) is None
    assert parse_nvcc_version("Cuda compilation tools, release 13.0, V13.0.88") == "13.0.88"


# ------------------------------------------------------------ issue 13: a toolkit assembled from NVIDIA's wheels
def test_wheel_assembled_toolkit_has_its_full_version_and_method(fake_root):
    """Like this project's build machine: /usr/local/cuda-13.0 made from nvidia-cuda-nvcc & co, their dist-info kept."""
    base = fake_root.toolkit("13.0.88", version_json=False, nvcc=False, lib="lib")
    for name, version in (("nvidia_cuda_nvcc-13.0.88", "13.0.88"), ("nvidia_cuda_runtime-13.0.96", "13.0.96"),
                          ("nvidia_cuda_cccl-13.0.85", "13.0.85")):
        fake_root.file("usr/local/cuda-13.0/dist-info/%s.dist-info/METADATA" % name,
                       "Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (name.split("-")[0], version))
    fake_root.file("usr/local/cuda-13.0/bin/nvcc", "\x7fELF stand-in without a release string", mode=0o755)
    state, notes = probe(fake_root.host())
    tk = by_path(state, "/usr/local/cuda-13.0")
    assert (tk.version, tk.version_source, tk.install_method) == ("13.0.88", "dist-info", "pip-wheels")
    assert base.is_dir() and notes == []


def test_a_folders_dist_info_is_read_once_for_its_version_and_its_method(fake_root):
    """The version (no version.json) and the install method both ask for the wheels' dist-info: one listing, one
    read of each METADATA (the probe keeps what it read; `cudaenv use` runs it)."""
    fake_root.toolkit("13.0.88", version_json=False, nvcc=False, lib="lib")
    for name in ("nvidia_cuda_nvcc-13.0.88", "nvidia_cuda_runtime-13.0.96"):
        fake_root.file("usr/local/cuda-13.0/dist-info/%s.dist-info/METADATA" % name,
                       "Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % tuple(name.split("-")))
    host = fake_root.host()
    asked = []
    listdir, read_text = host.listdir, host.read_text
    host.listdir = lambda p: asked.append(("listdir", p)) or listdir(p)
    host.read_text = lambda p, **kw: asked.append(("read", p)) or read_text(p, **kw)
    state = probe_toolkits(host, [], install_methods=False)
    tk = by_path(state, "/usr/local/cuda-13.0")
    assert (tk.version, tk.version_source, tk.install_method) == ("13.0.88", "dist-info", "pip-wheels")
    dist_info = [a for a in asked if "/dist-info" in a[1]]
    assert dist_info.count(("listdir", "/usr/local/cuda-13.0/dist-info")) == 1
    assert len(dist_info) == 3 and len(set(dist_info)) == 3, dist_info  # the listing and two METADATA, once each


def test_the_nvcc_parser_is_loaded_only_when_nvcc_must_say_its_version(fake_root):
    """A toolkit whose files name its version needs no nvcc parser (`cudaenv use` imports one module fewer)."""
    import subprocess
    import sys

    fake_root.toolkit("12.4.131")
    probe_code = ("import sys\nfrom cudaenv.host import Host\nfrom cudaenv.probes.toolkits import probe_toolkits\n"
                  "state = probe_toolkits(Host(root=%r, env={'PATH': '/usr/bin'}), [])\n"
                  "print(state.toolkits[0].version, 'cudaenv.parse.nvcc' in sys.modules)\n"
                  "from cudaenv.parse.nvcc import parse_nvcc_version\n"
                  "print(parse_nvcc_version('Cuda compilation tools, release 12.4, V12.4.131'))\n" % str(fake_root.path))
    run = subprocess.run([sys.executable, "-c", probe_code], capture_output=True, text=True, timeout=60, cwd=CHILD_CWD)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["12.4.131", "False", "12.4.131"]
