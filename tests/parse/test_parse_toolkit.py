"""The pure toolkit parsers (cudaenv.parse.{nvcc,toolkit_files,cudnn,dpkg,ldconf}): recorded inputs, hostile
inputs, and any text or bytes in -> no exception, no hang."""


import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import assert_linear, recorded
from cudaenv.parse import cudnn, dpkg, ldconf, nvcc, toolkit_files

TEXT = st.one_of(st.text(max_size=2000), st.binary(max_size=2000).map(lambda b: b.decode("utf-8", "surrogateescape")))
ADVERSARIAL = [  # (head, a unit repeated, tail)
    ("", "release ", ""),
    ("release 1.", "1", ""),
    ("#define CUDA_VERSION ", "9", ""),
    ("", '"cuda": {', ""),
    ('{"cuda": {"version": "', "1.", '"}}'),
    ("", "\n", "exec nvcc"),
    ("#!/bin/sh\n" + " " * 4000, "\n", ""),
    ("Version: ", "9", ""),
    ("#define CUDNN_MAJOR ", "9", ""),
    ("sm_", "9", ""),
    ("Package: a\n ", "x", ""),
    ("", "include ", ""),
    ("", "[", ""),
]


def _all_text_parsers():
    return [
        nvcc.parse_nvcc_version, nvcc.parse_gpu_code_list, toolkit_files.parse_version_json, toolkit_files.parse_bundled_driver,
        toolkit_files.version_json_raw, toolkit_files.parse_version_txt, toolkit_files.parse_cuda_h, toolkit_files.cuda_h_raw,
        toolkit_files.parse_dist_metadata_version, toolkit_files.parse_dist_metadata_name, toolkit_files.parse_wrapper_target,
        toolkit_files.parse_dist_info_name,
        toolkit_files.parse_conda_meta_name, cudnn.parse_cudnn_header, cudnn.parse_cudnn_dist_info_name, dpkg.parse_status,
        dpkg.parse_list, dpkg.list_package_name, dpkg.parse_alternatives, ldconf.ld_conf_lines, ldconf.parse_ld_so_conf,
    ]


@settings(max_examples=150)
@given(TEXT)
def test_every_parser_takes_any_text(text):
    for parse in _all_text_parsers():
        parse(text)
    nvcc.parse_release_excerpt(text.encode("utf-8", "surrogateescape"))


@pytest.mark.parametrize("head, unit, tail", ADVERSARIAL, ids=range(len(ADVERSARIAL)))
def test_adversarial_inputs_take_linear_work(head, unit, tail):
    text = head + unit * (100_000 // len(unit)) + tail
    for parse in _all_text_parsers():
        assert_linear(parse, unit, head=head, tail=tail)
        value = parse(text)
        if isinstance(value, str) and not parse.__name__.endswith("_raw"):  # the raw readers return what the note shortens
            assert len(value) < 200, parse.__name__  # never a huge "version"
    huge = "#define CUDA_VERSION " + "9" * 60000
    assert toolkit_files.parse_cuda_h(huge) is None
    assert toolkit_files.cuda_h_raw(huge) == "9" * 60000  # what the note shortens


# ------------------------------------------------------------------------------------ nvcc
def test_nvcc_version_recorded_and_bounded():
    assert nvcc.parse_nvcc_version(recorded("nvcc-13.0.88-this-machine.txt")) == "13.0.88"
    assert nvcc.parse_nvcc_version("Cuda compilation tools, release 9.0") == "9.0"
    assert nvcc.parse_nvcc_version("release %s.0, V%s.0.1" % ("1" * 3000, "1" * 3000)) is None
    assert nvcc.parse_nvcc_version("release 12.4, V12.4.131$(touch x)") == "12.4.131"


def test_release_string_inside_a_binary():
    blob = b"\x7fELF" + b"\0" * 1000 + b"Cuda compilation tools, release 13.0, V13.0.88\nBuild cuda_13.0.r13.0/compiler\0more"
    assert nvcc.parse_release_excerpt(blob) == "13.0.88"
    assert nvcc.parse_release_excerpt(b"\0" * 100) is None
    assert nvcc.parse_release_excerpt(nvcc.RELEASE_MARKER + b"1" * 5000) is None


def test_gpu_code_list_sorted_and_bounded():
    assert nvcc.parse_gpu_code_list("sm_90\nsm_75\nsm_100a\nsm_80\n") == ("sm_75", "sm_80", "sm_90", "sm_100a")
    assert nvcc.parse_gpu_code_list("sm_" + "9" * 5000) == ()


# ---------------------------------------------------------------------------- toolkit files
def test_dist_info_and_conda_names():
    assert toolkit_files.parse_dist_info_name("nvidia_cuda_nvcc_cu12-12.4.131.dist-info") == ("nvcc", "12", "12.4.131")
    assert toolkit_files.parse_dist_info_name("nvidia_cuda_nvcc-13.0.88.dist-info") == ("nvcc", None, "13.0.88")
    assert toolkit_files.parse_dist_info_name("nvidia_cuda_nvcc-12.4$(x).dist-info") == ("nvcc", None, None)
    assert toolkit_files.parse_dist_info_name("numpy-2.0.dist-info") is None
    assert toolkit_files.parse_conda_meta_name("cuda-nvcc-12.4.131-0.json") == ("cuda-nvcc", "12.4.131")
    assert toolkit_files.parse_conda_meta_name("cuda-nvcc-12.4`id`-0.json") is None


def test_version_json_strict_and_raw():
    text = '{"cuda": {"name": "CUDA SDK", "version": "12.4$(touch PWNED)"}}'
    assert toolkit_files.parse_version_json(text) is None
    assert toolkit_files.version_json_raw(text) == "12.4$(touch PWNED)"
    assert toolkit_files.parse_version_json('{"cuda": {"version": " 12.4.131 "}}') == "12.4.131"


# ------------------------------------------------------------------------------------ cuDNN
def test_cudnn_headers_both_int_schemes_and_macros():
    assert cudnn.parse_cudnn_header("#define CUDNN_MAJOR 9\n#define CUDNN_MINOR 1\n#define CUDNN_PATCHLEVEL 0\n") == "9.1.0"
    assert cudnn.parse_cudnn_header("#define CUDNN_VERSION 90100\n") == "9.1.0"
    assert cudnn.parse_cudnn_header("#define CUDNN_VERSION 8907\n") == "8.9.7"
    assert cudnn.parse_cudnn_header("#define CUDNN_MAJOR %s\n" % ("9" * 60000)) is None
    assert cudnn.parse_cudnn_dist_info_name("nvidia_cudnn_cu12-9.1.0.70.dist-info") == "9.1.0.70"


# ------------------------------------------------------------------------------------ dpkg
STATUS = """Package: cuda-nvcc-12-4
Status: install ok installed
Architecture: amd64
Version: 12.4.131-1
Depends: cuda-cudart-dev-12-4 (>= 12.4), libc6 | libc6-udeb
Description: nvcc
 a long description line

Package: cuda-toolkit-12-4
Status: deinstall ok config-files
Version: 12.4.1-1
"""


def test_status_from_text_and_from_lines_is_the_same():
    from_text = dpkg.parse_status(STATUS)
    from_lines = dpkg.parse_status(iter(STATUS.splitlines(True)))
    assert from_text == from_lines
    packages, problems = from_text
    assert problems == []
    assert packages["cuda-nvcc-12-4"].depends == ("cuda-cudart-dev-12-4", "libc6", "libc6-udeb")
    assert packages["cuda-toolkit-12-4"].state == "config-files" and packages["cuda-toolkit-12-4"].present


def test_status_is_streamed_not_held():
    """A generator of a million description lines is consumed one line at a time (nothing keeps the text)."""
    def lines():
        yield "Package: big\n"
        yield "Status: install ok installed\n"
        yield "Description: x\n"
        for _ in range(1_000_000):
            yield " " + "d" * 100 + "\n"

    packages, _ = dpkg.parse_status(lines())
    assert list(packages) == ["big"] and packages["big"].state == "installed"


def test_list_and_alternatives():
    assert dpkg.parse_list("/.\n/usr\n/usr/local/cuda-12.4/bin/nvcc\n\n") == ["/usr", "/usr/local/cuda-12.4/bin/nvcc"]
    assert dpkg.list_package_name("cuda-nvcc-12-4:amd64.list") == "cuda-nvcc-12-4"
    assert dpkg.parse_alternatives("manual\n/usr/local/cuda\n\n/usr/local/cuda-12.4\n124\n/usr/local/cuda-11.8\n118\n") == (
        "/usr/local/cuda", ("/usr/local/cuda-12.4", "/usr/local/cuda-11.8"))


# ------------------------------------------------------------------------------------ ld.so.conf
def test_ld_so_conf_lines_dirs_and_includes():
    text = "# c\ninclude /etc/ld.so.conf.d/*.conf\n/usr/local/cuda/lib64/\r\nrelative\n\n  \ninclude x/*.conf\n"
    assert ldconf.ld_conf_lines(text) == [(2, "include /etc/ld.so.conf.d/*.conf"), (3, "/usr/local/cuda/lib64/"), (4, "relative"),
                                          (7, "include x/*.conf")]
    assert ldconf.parse_ld_so_conf(text) == (["/usr/local/cuda/lib64"], ["/etc/ld.so.conf.d/*.conf", "/etc/x/*.conf"])


@settings(max_examples=300)
@given(st.dictionaries(st.sampled_from(["cuda", "cuda_nvcc", "name", "version"]),
                       st.one_of(st.text(max_size=12), st.integers(),
                                 st.dictionaries(st.sampled_from(["name", "version", "cuda"]),
                                                 st.one_of(st.text(max_size=12), st.integers()), max_size=3)),
                       max_size=4),
       st.sampled_from([None, 0, 2]))
def test_the_fast_version_json_scan_agrees_with_json(doc, indent):
    """The string scan on the `cudaenv use` path reads what json reads, or leaves the file to json."""
    import json

    from cudaenv.parse.toolkit_files import _flat_entry_version, _json_component_raw

    text = json.dumps(doc, indent=indent)
    part = doc.get("cuda")
    expected = part.get("version") if isinstance(part, dict) and isinstance(part.get("version"), str) else None
    fast = _flat_entry_version(text, "cuda")
    assert fast is None or fast == expected
    assert _json_component_raw(text, "cuda") == (expected.strip() if expected is not None else None)


@settings(max_examples=400)
@given(st.lists(st.one_of(
    st.text(alphabet=" \t\"'$/-aexcnvdhb.{}\r", max_size=30),
    st.builds(lambda pre, a, q, path, post: "%sexec%s%s%s%s%s" % (pre, a, q, path, q, post),
              st.sampled_from(["", " ", "\t", "  "]), st.sampled_from([" ", "\t", " -a nvcc ", " -a x\t"]),
              st.sampled_from(["", '"', "'"]), st.sampled_from(["/usr/local/cuda-13.0/bin/nvcc", "/x/nvcc.exe", "${CUDA_HOME}/bin/nvcc",
                                                               "/opt/my cuda/bin/nvcc", "/x/nvcc-real", "nvcc"]),
              st.sampled_from(["", ' "$@"', "\r"]))), max_size=4))
def test_the_wrapper_scan_reads_what_the_exec_line_says(lines):
    """Against the regular expression it replaced (kept here as the specification), on wrapper-like scripts; the
    only difference allowed: a bare path that merely starts with ...nvcc (nvcc-real) is not read as nvcc."""
    import re

    spec = re.compile(r"""(?m)^[ \t]*exec[ \t]+(?:-a[ \t]+\S+[ \t]+)?(["']?)([^"'\s]*nvcc(?:\.exe)?)\1""")
    text = "#!/bin/sh\n" + "\n".join(lines)
    whole = [m.group(2) for m in spec.finditer(text) if m.group(1) or text[m.end():m.end() + 1] in ("", " ", "\t", "\n", "\r")]
    assert toolkit_files._exec_target(text) == (whole[0] if whole else None)


@settings(max_examples=400)
@given(st.one_of(st.text(max_size=40),
                 st.builds(lambda a, b, c, d, e: "%s%s%s-%s%s" % (a, b, c, d, e),
                           st.sampled_from(["nvidia_cuda_", "NVIDIA_CUDA_", "nvidia_cudax", ""]),
                           st.sampled_from(["nvcc", "runtime", "RUNTIME", "cupti", "nvcc_"]),
                           st.sampled_from(["", "_cu12", "_CU13", "_cu", "_cu1234", "_cu1x", "_x12"]),
                           st.sampled_from(["12.4.131", "13.0.96", "1-2", "", "٣.٠", "x"]),
                           st.sampled_from([".dist-info", ".DIST-INFO", ".dist-info\n", ".egg-info", ""]))))
def test_the_dist_info_name_scan_matches_its_specification(name):
    """Against the regular expression it replaced (the specification), ASCII names only: a non-ASCII digit or a
    trailing newline, which the expression let through, is no wheel's folder name."""
    import re

    spec = re.compile(r"(?i)^nvidia_cuda_(nvcc|runtime)(?:_cu(\d{1,3}))?-([^-]+)\.dist-info$")
    m = spec.match(name) if name.isascii() and not name.endswith("\n") else None
    want = None if m is None else (m.group(1).lower(), m.group(2), toolkit_files.parse_version(m.group(3)))
    assert toolkit_files.parse_dist_info_name(name) == want


@settings(max_examples=300)
@given(st.lists(st.one_of(st.text(alphabet="Vesrion: \t12.3x\r", max_size=20),
                          st.sampled_from(["Version: 13.0.88", "Version:\t12.4", "Version:", "Version:  ", "Version: 1 2"])), max_size=5))
def test_the_metadata_version_scan_matches_its_specification(lines):
    import re

    text = "\n".join(lines)
    m = re.compile(r"(?m)^Version:[ \t]*(\S+)").search(text)
    assert toolkit_files.parse_dist_metadata_version(text) == (toolkit_files.parse_version(m.group(1)) if m else None)


def test_the_driver_api_from_preprocessed_cuda_h():
    """Issue 17's libcuda stub: the entry points cuda.h 13.0 declares, from cc's real output."""
    from cudaenv.parse.cuda_header import driver_entry_points, stub_error_code

    text = recorded("cc-E-cuda-h-13.0-default.txt")
    names = driver_entry_points(text)
    assert len(names) == 449 and names == tuple(sorted(set(names)))
    assert "cuInit" in names and "cuLinkComplete" in names and "cuCtxCreate" not in names
    assert stub_error_code(text) == 34
    ptds = set(driver_entry_points(recorded("cc-E-cuda-h-13.0-ptds.txt")))
    assert "cuMemcpy_ptds" in ptds - set(names) and "cuLaunchKernel_ptsz" in ptds
    assert driver_entry_points("CUresult cuX(void); int cuY(void); CUresult  \n cuZ (int);") == ("cuX", "cuZ")
    assert stub_error_code("enum { CUDA_ERROR_STUB_LIBRARY = 99999999 };") is None


@settings(max_examples=200)
@given(st.one_of(st.text(max_size=2000), st.binary(max_size=2000).map(lambda b: b.decode("latin-1"))))
def test_the_cuda_header_readers_never_raise(text):
    from cudaenv.parse.cuda_header import driver_entry_points, stub_error_code

    assert isinstance(driver_entry_points(text), tuple)
    code = stub_error_code(text)
    assert code is None or 0 <= code < 10 ** 6
