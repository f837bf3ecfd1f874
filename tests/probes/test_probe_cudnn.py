"""cuDNN: headers of every generation, in every place, and never torch's ATen wrappers."""


import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import recorded
from cudaenv.core.version import cudnn_from_int
from cudaenv.probes.cudnn import parse_cudnn_header, probe_cudnn
from cudaenv.model.snapshot import Toolkit

WIN_CUDNN_REL = "C/Program Files/NVIDIA/CUDNN"


def tk(path):
    return Toolkit(version="12.4", path=path, source="test")


def probe(host, toolkits=(), site_packages=()):
    notes = []
    return probe_cudnn(host, notes, toolkits, site_packages=site_packages), notes


# ------------------------------------------------------------------------------------- parser
@pytest.mark.parametrize(
    "name, expected",
    [
        ("cudnn-9.6.0-cudnn_version.h", "9.6.0"),
        ("cudnn-8.2.1-cudnn_version.h", "8.2.1"),
        ("cudnn-7.2.1-cudnn.h", "7.2.1"),
        ("cudnn-8.9.7-grep-multiarch.txt", "8.9.7"),
    ],
)
def test_recorded_headers(name, expected):
    assert parse_cudnn_header(recorded(name)) == expected


def test_both_encodings_of_a_bare_number():
    assert parse_cudnn_header("#define CUDNN_VERSION 90100\n") == "9.1.0"
    assert parse_cudnn_header("#define CUDNN_VERSION 91002\n") == "9.10.2"
    assert parse_cudnn_header("#define CUDNN_VERSION (8907)\n") == "8.9.7"
    assert parse_cudnn_header("#define CUDNN_VERSION 7605\n") == "7.6.5"
    assert cudnn_from_int(12) is None


def test_partial_and_unrelated_headers():
    assert parse_cudnn_header("#define CUDNN_MAJOR 8\n#define CUDNN_MINOR 9\n") == "8.9"
    assert parse_cudnn_header("#define CUDNN_MAJOR 8\n") == "8"
    assert parse_cudnn_header("#include <cudnn_version.h>\n") is None  # cuDNN 8's cudnn.h
    assert parse_cudnn_header("#define CUDNN_VERSION (CUDNN_MAJOR * 1000 + CUDNN_MINOR * 100)\n") is None
    assert parse_cudnn_header("\r\n#define CUDNN_MAJOR 9\r\n#define CUDNN_MINOR 1\r\n#define CUDNN_PATCHLEVEL 0\r\n") == "9.1.0"


@settings(max_examples=300)
@given(st.text())
def test_parser_never_raises(text):
    result = parse_cudnn_header(text)
    assert result is None or isinstance(result, str)


@settings(max_examples=100)
@given(st.integers(min_value=-10, max_value=10**12))
def test_decode_never_raises(number):
    cudnn_from_int(number)
    parse_cudnn_header("#define CUDNN_VERSION %d\n" % number)


# ------------------------------------------------------------------------------------- places
def test_debian_multiarch_with_alternatives_link(fake_root):
    fake_root.file("usr/include/x86_64-linux-gnu/cudnn_version_v9.h", recorded("cudnn-9.6.0-cudnn_version.h"))
    fake_root.file("usr/include/x86_64-linux-gnu/cudnn_v9.h", "#include <cudnn_version.h>\n")
    fake_root.link("etc/alternatives/cudnn_version_h", "/usr/include/x86_64-linux-gnu/cudnn_version_v9.h")
    fake_root.link("usr/include/cudnn_version.h", "/etc/alternatives/cudnn_version_h")
    found, notes = probe(fake_root.host())
    assert len(found) == 1  # the link and its target are one cuDNN
    assert (found[0].version, found[0].major, found[0].source) == ("9.6.0", 9, "system")
    assert found[0].header == "/usr/include/cudnn_version.h"
    assert notes == []


def test_pip_wheel_with_plain_and_versioned_copies_is_one_cudnn(fake_root):
    """nvidia-cudnn-cu13 9.24.0.43 (seen in a real torch 2.14.1+cu130 venv here) ships cudnn_version.h and
    cudnn_version_v9.h in nvidia/cudnn/include as two real files, not a link: one cuDNN, reported once."""
    sp = "venv/lib/python3.11/site-packages"
    for name in ("cudnn_version_v9.h", "cudnn_version.h"):
        fake_root.file(sp + "/nvidia/cudnn/include/" + name, recorded("cudnn-9.6.0-cudnn_version.h"))
    found, _ = probe(fake_root.host(), site_packages=["/" + sp])
    assert [(c.source, c.version, c.header) for c in found] == [("pip", "9.6.0", "/" + sp + "/nvidia/cudnn/include/cudnn_version.h")]


def test_two_majors_side_by_side(fake_root):
    fake_root.file("usr/include/aarch64-linux-gnu/cudnn_version_v8.h", recorded("cudnn-8.2.1-cudnn_version.h"))
    fake_root.file("usr/include/aarch64-linux-gnu/cudnn_version_v9.h", recorded("cudnn-9.6.0-cudnn_version.h"))
    found, _ = probe(fake_root.host())
    assert sorted(c.version for c in found) == ["8.2.1", "9.6.0"]


def test_toolkit_include_dirs_v7_and_v8(fake_root):
    fake_root.toolkit("12.4.131", cudnn="8.9.7")
    fake_root.toolkit("10.0.130", version_json=False)
    fake_root.file("usr/local/cuda-10.0/include/cudnn.h", recorded("cudnn-7.2.1-cudnn.h"))
    fake_root.file("opt/cuda/targets/x86_64-linux/include/cudnn_version.h", recorded("cudnn-9.6.0-cudnn_version.h"))
    fake_root.file("usr/local/cuda-12.4/include/cudnn.h", "#include \"cudnn_version.h\"\n")  # cuDNN 8's cudnn.h: no macros
    toolkits = [tk("/usr/local/cuda-12.4"), tk("/usr/local/cuda-10.0"), tk("/opt/cuda")]
    found, _ = probe(fake_root.host(), toolkits)
    got = {(c.toolkit, c.version, c.source, c.header) for c in found}
    assert got == {
        ("/usr/local/cuda-12.4", "8.9.7", "toolkit", "/usr/local/cuda-12.4/include/cudnn_version.h"),
        ("/usr/local/cuda-10.0", "7.2.1", "toolkit", "/usr/local/cuda-10.0/include/cudnn.h"),
        ("/opt/cuda", "9.6.0", "toolkit", "/opt/cuda/targets/x86_64-linux/include/cudnn_version.h"),
    }


def test_cudnn_path_pip_conda_and_aten_ignored(fake_root):
    sp = "venv/lib/python3.11/site-packages"
    fake_root.file(sp + "/nvidia/cudnn/include/cudnn_version.h", recorded("cudnn-9.6.0-cudnn_version.h"))
    # torch's wrappers, which must never count as a cuDNN
    fake_root.file(sp + "/torch/include/ATen/cudnn/cudnn-wrapper.h", "#include <cudnn.h>\n#define CUDNN_MAJOR 5\n")
    fake_root.file(sp + "/torch/include/ATen/cudnn/Handle.h", "#define CUDNN_VERSION 5000\n")
    fake_root.file("opt/cudnn-8.9/include/cudnn_version.h", recorded("cudnn-8.2.1-cudnn_version.h"))
    fake_root.file("opt/conda/include/cudnn_version.h", "#define CUDNN_MAJOR 9\n#define CUDNN_MINOR 1\n#define CUDNN_PATCHLEVEL 0\n")
    env = {"CUDNN_PATH": "/opt/cudnn-8.9", "CONDA_PREFIX": "/opt/conda"}
    found, notes = probe(fake_root.host(env=env), site_packages=["/" + sp])
    assert [(c.source, c.version) for c in found] == [("CUDNN_PATH", "8.2.1"), ("pip", "9.6.0"), ("conda", "9.1.0")]
    assert all("ATen" not in (c.header or "") for c in found)
    assert notes == []


def test_pip_wheel_without_headers_and_missing_cudnn_path(fake_root):
    sp = "venv/lib/python3.11/site-packages"
    fake_root.file(sp + "/nvidia/cudnn/lib/libcudnn.so.9", "")
    fake_root.file(sp + "/nvidia_cudnn_cu12-9.1.0.70.dist-info/METADATA", "Name: nvidia-cudnn-cu12\nVersion: 9.1.0.70\n")
    found, notes = probe(fake_root.host(env={"CUDNN_PATH": "/nowhere"}), site_packages=["/" + sp])
    assert [(c.source, c.version, c.header, c.major) for c in found] == [("pip", "9.1.0.70", None, 9)]
    assert [n.message for n in notes] == ["CUDNN_PATH=/nowhere does not exist"]


def test_windows_cudnn_installer(fake_root):
    fake_root.file(WIN_CUDNN_REL + "/v9.6/include/12.6/cudnn_version.h", recorded("cudnn-9.6.0-cudnn_version.h"))
    fake_root.file(WIN_CUDNN_REL + "/v8.9/include/cudnn_version.h", recorded("cudnn-8.2.1-cudnn_version.h"))
    found, _ = probe(fake_root.host(system="windows", env={"PATH": "C:\\Windows"}))
    assert sorted((c.version, c.source) for c in found) == [("8.2.1", "windows"), ("9.6.0", "windows")]
    assert any(c.header == "C:\\Program Files\\NVIDIA\\CUDNN\\v9.6\\include\\12.6\\cudnn_version.h" for c in found)


def test_nothing_installed(fake_root):
    fake_root.dir("usr/include")
    found, notes = probe(fake_root.host())
    assert found == () and notes == []
