"""What a CUDA consumer's own files say about its build (parse/frameworks.py): METADATA, build-info files, local
version tags, Requires-Dist names and RECORD's libraries; any input in, no exception out, linear work."""

from hypothesis import given, settings
from hypothesis import strategies as st

from builders import assert_linear
from cudaenv.parse import frameworks as pf


def test_metadata_headers_stop_at_the_blank_line():
    text = ("Metadata-Version: 2.1\nName: onnxruntime-gpu\nVersion: 1.23.2\nRequires-Dist: numpy>=1.21\n"
            "Requires-Dist: nvidia-cudnn-cu12 ~=9.0 ; extra == \"cuda\"\n\nRequires-Dist: not-a-header\n")
    name, version, requires = pf.parse_metadata(text)
    assert (name, version) == ("onnxruntime-gpu", "1.23.2")
    assert requires == ("numpy>=1.21", "nvidia-cudnn-cu12 ~=9.0 ; extra == \"cuda\"")
    assert [pf.requirement_name(r) for r in requires] == ["numpy", "nvidia-cudnn-cu12"]
    assert pf.parse_metadata("Name: a b c\nVersion: $(touch x)\n")[:2] == (None, None)


def test_names_and_nvidia_majors():
    assert pf.normalize_name("Flash_Attn") == "flash-attn" and pf.normalize_name("cupy.cuda__12x") == "cupy-cuda-12x"
    assert pf.nvidia_cuda_major("nvidia-cublas-cu12") == 12 and pf.nvidia_cuda_major("nvidia_cudnn_cu11") == 11
    assert pf.nvidia_cuda_major("nvidia-cuda-runtime") is None and pf.nvidia_cuda_major("cupy-cuda12x") is None


def test_local_version_tags():
    assert pf.local_cuda("2.8.0+cu128") == "12.8" and pf.local_cuda("0.6.3+cu118") == "11.8"
    assert pf.local_cuda("0.23.0+cpu") == "cpu" and pf.local_cuda("2.8.0") is None
    assert pf.local_cuda("1.0+cu.12.8.torch.2.11") is None  # Astral's tags say cu.12.8: not a cuXYZ word
    assert pf.local_cuda("1.0+pt28cu128") is None
    # jaxlib's own CUDA wheels before the plugin packages (jax-ml/jax#16082, xai-org/grok-1#249)
    assert pf.local_cuda("0.4.25+cuda12.cudnn89") == "12" and pf.local_cuda("0.1.57+cuda111") == "11.1"
    assert pf.local_cudnn("0.4.25+cuda12.cudnn89") == "8.9" and pf.local_cudnn("0.3.20+cuda11.cudnn805") == "8.0.5"
    assert pf.local_cudnn("2.8.0+cu128") is None and pf.local_cudnn("0.4.25") is None and pf.local_cudnn("1+cudnn8") is None


def test_build_info_in_its_three_forms():
    tf = "build_info = collections.OrderedDict([('cuda_version', '12.5.1'), ('cudnn_version', '9'), ('is_cuda_build', True)])"
    assert pf.parse_build_info(tf, ("cuda_version", "cudnn_version", "is_cuda_build")) == {
        "cuda_version": "12.5.1", "cudnn_version": "9", "is_cuda_build": "True"}
    assert pf.parse_build_info("cuda_version = '12.2'\ncudnn_version = \"9\"\n", ("cuda_version", "cudnn_version")) == {
        "cuda_version": "12.2", "cudnn_version": "9"}
    ds = "torch_info = {'version': '2.1', 'cuda_version': '12.1', 'nccl_version': '2.18'}"
    assert pf.parse_build_info(ds, ("cuda_version",)) == {"cuda_version": "12.1"}
    # a key mentioned in a comment first, then set: the value is the set one; a value with shell characters is left out
    assert pf.parse_build_info("# cuda_version is the toolkit\ncuda_version = '11.8'", ("cuda_version",)) == {"cuda_version": "11.8"}
    assert pf.parse_build_info("cuda_version = '$(reboot)'", ("cuda_version",)) == {}
    assert pf.build_cuda("0.0") is None and pf.build_cuda("") is None and pf.build_cuda("12.8") == "12.8"


def test_the_windows_build_info_names_its_versions_by_dll_suffix():
    """TensorFlow 2.10.1's Windows build_info.py (the real wheel's line): cuda_version '64_112' and cudnn_version
    '64_8', the DLL name suffixes, read as CUDA 11.2 and cuDNN 8; other shapes of that form are no version."""
    from builders import recorded_runs

    line = recorded_runs("wheel-tensorflow-2.10.1-win_amd64.txt")["build_info.py"]
    values = pf.parse_build_info(line, ("cuda_version", "cudnn_version", "is_cuda_build"))
    assert values == {"cuda_version": "64_112", "cudnn_version": "64_8", "is_cuda_build": "True"}
    assert pf.build_cuda(values["cuda_version"]) == "11.2" and pf.build_cuda(values["cudnn_version"]) == "8"
    assert pf.build_cuda("64_110") == "11.0" and pf.build_cuda("64_") is None and pf.build_cuda("64_1x2") is None
    assert pf.build_cuda("64_00") is None and pf.build_cuda("64_1234567") is None


def test_record_libraries_stay_inside_site_packages():
    record = ("onnxruntime/capi/libonnxruntime_providers_cuda.so,sha256=x,1\n../../etc/evil.so,,\n/abs/x.so,,\n"
              "cupy_backends/cuda/libs/libnvrtc.so.12,,\ncupy/__init__.py,,\nx/y.pyd,,\n")
    assert pf.record_libraries(record) == ("onnxruntime/capi/libonnxruntime_providers_cuda.so",
                                           "cupy_backends/cuda/libs/libnvrtc.so.12", "x/y.pyd")
    assert len(pf.record_libraries("a.so\n" * 500, limit=10)) == 10


@settings(max_examples=200)
@given(st.one_of(st.text(max_size=3000), st.none(), st.integers()))
def test_any_input_never_raises(text):
    pf.parse_metadata(text)
    pf.parse_build_info(text, ("cuda_version", "is_cuda_build"))
    pf.record_libraries(text)
    pf.local_cuda(text)
    pf.local_cudnn(text)
    pf.nvidia_cuda_major(text)
    pf.requirement_name(text)
    pf.requirement_floor(text)
    got = pf.parse_build_info(text if isinstance(text, str) else "", ("cuda_version",))
    assert all(len(v) <= 40 for v in got.values())


@settings(max_examples=200)
@given(st.text(alphabet="cuda_version='\":=,( )12.\n", max_size=400))
def test_build_info_on_near_misses(text):
    for value in pf.parse_build_info(text, ("cuda_version",)).values():
        assert value and all(ch.isalnum() or ch in ".-_+" for ch in value)


def test_a_requirements_floor():
    """The lowest version a Requires-Dist line allows: the real jax-cuda12/13-plugin 0.10.2 lines
    (tests/recorded/wheel-jax-cuda1N-plugin-0.10.2-METADATA.txt), an exact pin, a compatible release; none without."""
    from builders import recorded

    lines = [line[len("Requires-Dist: "):] for name in ("wheel-jax-cuda12-plugin-0.10.2-METADATA.txt", "wheel-jax-cuda13-plugin-0.10.2-METADATA.txt")
             for line in recorded(name).splitlines() if line.startswith("Requires-Dist: nvidia-cudnn")]
    assert [pf.requirement_floor(line) for line in lines] == ["9.8", "9.12.0.46"]
    assert pf.requirement_floor("nvidia-cudnn-cu12 (==8.9.2.26)") == "8.9.2.26"
    assert pf.requirement_floor("nvidia-cudnn-cu12 ~=9.1 ; extra == \"cuda\"") == "9.1"
    assert pf.requirement_floor("jax[cuda12]>=0.4.1") == "0.4.1"
    assert pf.requirement_floor("nvidia-cudnn-cu12<10") is None and pf.requirement_floor("numpy") is None
    assert pf.requirement_floor("a>=1.0a1") is None and pf.requirement_floor("a>=$(x)") is None


@settings(max_examples=300)
@given(st.text(alphabet="nvidia-cudnn<>=~!,.;() 0129[]x\"", max_size=300))
def test_a_requirements_floor_on_near_misses(text):
    got = pf.requirement_floor(text)
    assert got is None or (got and all(part.isdigit() for part in got.split(".")) and got in text)


def test_the_work_is_linear_on_hostile_runs():
    assert_linear(lambda t: pf.parse_build_info(t, ("cuda_version", "cudnn_version")), "cuda_version'':")
    assert_linear(pf.parse_metadata, "Requires-Dist: a\n")
    assert_linear(pf.record_libraries, "a/b.so.1,,\n")
    assert_linear(pf.requirement_floor, ">=1,", head="a")


def _record_libraries_every_line(text, limit=200):
    """What record_libraries answers when it reads every line (the reference its pre-filter must agree with)."""
    def a_library(path):
        base = path.rsplit("/", 1)[-1].lower()
        return base.endswith((".so", ".dll", ".pyd")) or ".so." in base

    paths = [line.split(",", 1)[0].strip() for line in text.split("\n")]
    kept = [p for p in paths if p and not p.startswith(("/", "\\")) and ".." not in p.replace("\\", "/").split("/")]
    return tuple([p for p in kept if a_library(p)][:limit])


@settings(max_examples=300)
@given(st.text(alphabet="aSoOdDlLpPyY./\\,\n \u0130\u03a3", max_size=400), st.integers(min_value=1, max_value=5))
def test_record_libraries_pre_filter_skips_only_lines_without_a_library(text, limit):
    """Lines without .so/.dll/.pyd (any case) are skipped unread; the answer is the one of reading every line."""
    assert pf.record_libraries(text, limit) == _record_libraries_every_line(text, limit)


def test_a_big_record_hands_on_only_its_library_lines():
    """Counted work: of a RECORD of 20,000 headers and 3 libraries, the 3 lines with a library's mark are the only
    ones handed on (one search through the text, each letter's two cases in the pattern: nothing lowered, not each
    line nor the whole text, issue 35); a character whose lower case is longer changes nothing (it hands on the same
    3 lines: before, the text's lowering moved the offsets and every line was handed on)."""
    lines = ["tensorflow/include/x/h%05d.h,sha256=x,100" % i for i in range(20_000)]
    libs = ["tensorflow/libtensorflow_framework.so.2,,", "tensorflow/python/_pywrap.SO,,", "tf/x.Pyd,,"]
    text = "\n".join(lines[:5] + libs[:1] + lines[5:] + libs[1:]) + "\n"
    assert list(pf._library_lines(text)) == libs
    assert pf.record_libraries(text) == tuple(line.split(",")[0] for line in libs)
    wide = "\u0130" + text  # İ lowers to two characters
    assert list(pf._library_lines(wide)) == libs and pf.record_libraries(wide) == pf.record_libraries(text)


def test_cupy_preload_configuration():
    """cupy/.data/_wheel.json (cupy/_environment.py's documented shape: packaging, cuda, and per library a version and
    its file names; older wheels one filename): the libraries it preloads; a name with a folder or drive is not a
    file name and is dropped, so no configuration can point the resolver outside the CUPY_CUDA_LIB_PATH tree."""
    text = ('{"packaging": "pip", "cuda": "12.x", "cudnn": {"version": "8.8.1", "filenames": ["cudnn64_8.dll"]}, '
            '"cutensor": {"version": "2.0.1", "filenames": ["cutensor.dll", "..\\\\..\\\\evil.dll", "C:x.dll"]}, "nccl": 3}')
    assert pf.parse_cupy_preload(text) == ("pip", "12.x", (("cudnn", "8.8.1", ("cudnn64_8.dll",)),
                                                           ("cutensor", "2.0.1", ("cutensor.dll",))))
    assert pf.parse_cupy_preload('{"packaging": "pip", "cuda": "11.0", "cudnn": {"version": "8.0.0", "filename": "cudnn64_8.dll"}}')[2] == (
        ("cudnn", "8.0.0", ("cudnn64_8.dll",)),)
    assert pf.parse_cupy_preload("[1]") == (None, None, ()) and pf.parse_cupy_preload("{") == (None, None, ())
    assert pf.parse_cupy_preload("[" * 100000) == (None, None, ())  # nesting too deep for json: no exception


@settings(max_examples=200)
@given(st.one_of(st.text(max_size=2000), st.binary(max_size=500), st.none(), st.integers(),
                 st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=20)),
                              lambda kids: st.one_of(st.lists(kids, max_size=4), st.dictionaries(
                                  st.sampled_from(["packaging", "cuda", "cudnn", "cutensor", "nccl", "version", "filenames",
                                                   "filename"]), kids, max_size=5)), max_leaves=30).map(
                     lambda v: __import__("json").dumps(v))))
def test_cupy_preload_never_raises(text):
    packaging, cuda, libs = pf.parse_cupy_preload(text)
    assert packaging is None or isinstance(packaging, str)
    for lib, version, names in libs:
        assert lib in pf.PRELOAD_LIBS and version not in ("", ".", "..") and "\\" not in version
        assert names and all("\\" not in n and "/" not in n for n in names)


def _normalize_name_by_character(name: str) -> str:
    """PEP 503's normalisation one character at a time (the reference: cudaenv's own before issue 35)."""
    out = []
    for ch in str(name).lower():
        if ch in "-_.":
            if out and out[-1] != "-":
                out.append("-")
        else:
            out.append(ch)
    return "".join(out).strip("-")


def _parse_metadata_every_line(text):
    """parse_metadata splitting the whole text, description included (the reference: cudaenv's own before issue 35)."""
    name = version = None
    requires = []
    for count, line in enumerate(text.split("\n")):
        if count >= pf.MAX_HEADER_LINES or not line.strip():
            break
        key, sep, value = line.partition(":")
        if not sep:
            continue
        key, value = key.strip().lower(), value.strip()
        if key == "name" and name is None:
            name = value if pf._NAME.fullmatch(value) else None
        elif key == "version" and version is None:
            version = value if pf._pep440ish(value) else None
        elif key == "requires-dist" and len(value) < 300:
            requires.append(value)
    return name, version, tuple(requires)


@settings(max_examples=400)
@given(st.text(alphabet="aB-_.9 \u0130\u212a\u00df", max_size=40))
def test_normalize_name_without_a_step_per_character_says_the_same(name):
    """Issue 35: the name normalised through replace/split/join (C) is the one of the step per character."""
    assert pf.normalize_name(name) == _normalize_name_by_character(name)


@settings(max_examples=400)
@given(st.lists(st.sampled_from(["Name: torch", "Version: 2.8.0+cu128", "Requires-Dist: torch>=2", "Requires-Dist: x",
                                 "", " ", "\r", "Name: other", "Summary: a: b", "no colon", "Version: bad version"]),
                max_size=12).map("\n".join),
       st.text(alphabet="\n\r :Nameq", max_size=20))
def test_metadata_read_up_to_its_blank_line_says_what_the_whole_text_says(head, tail):
    """Issue 35: parse_metadata splits only the text before the first blank line; the answer is the one of splitting
    the whole text (a description after it is never split)."""
    text = head + tail
    assert pf.parse_metadata(text) == _parse_metadata_every_line(text)


def test_a_long_description_is_not_split():
    """Counted work (issue 35): a METADATA of a 5-line header and a 20,000-line description splits 5 lines, not the
    description's."""
    calls = []

    class Text(str):
        def split(self, *args):
            parts = str.split(self, *args)
            calls.append(len(parts))
            return parts

        def __getitem__(self, key):
            return Text(str.__getitem__(self, key))

    body = "Name: x\nVersion: 1\nRequires-Dist: torch\nSummary: s\nLicense: l\n\n" + "a description line\n" * 20_000
    assert pf.parse_metadata(Text(body)) == ("x", "1", ("torch",))
    assert calls == [5]
