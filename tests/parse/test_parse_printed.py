"""Versions people print beside an error and the kernel log's NVRM lines (cudaenv.parse.printed, issue 28).

Samples are lines from public threads: tests/corpus/threads/ (the kernel log's, with their sources) and
https://github.com/AUTOMATIC1111/stable-diffusion-webui/issues/9133 (the web UI footer); the REPL and pip forms are
those Python and pip print."""

from hypothesis import given, settings
from hypothesis import strategies as st

from builders import assert_linear
from cudaenv.parse.printed import parse_kernel_log, parse_printed_torch


def test_a_printed_torch_version_in_its_forms():
    assert parse_printed_torch(">>> print(torch.__version__)\n2.1.0+cu118\n>>> torch.version.cuda\n'11.8'\n") == ("2.1.0+cu118", "11.8")
    assert parse_printed_torch(">>> torch.__version__\n'1.13.1+cu117'").version == "1.13.1+cu117"
    assert parse_printed_torch("A python: 3.10.10  \u2022  torch: 1.12.1  \u2022  xformers: N/A").version == "1.12.1"
    assert parse_printed_torch(" - PyTorch Version (e.g., 1.0): 1.7.1\n - OS (e.g., Linux): Ubuntu").version == "1.7.1"
    assert parse_printed_torch("Torch version: 2.0.0+cu117").version == "2.0.0+cu117"
    assert parse_printed_torch("torch==2.1.0+cu118\ntorchvision==0.16.0").version == "2.1.0+cu118"
    assert parse_printed_torch("torch                     2.1.0+cu118").version == "2.1.0+cu118"


def test_what_is_not_a_torch_version():
    assert parse_printed_torch("CUDA used to build PyTorch: 11.8") is None  # collect_env's CUDA line
    assert parse_printed_torch("Torch not compiled with CUDA enabled") is None
    assert parse_printed_torch(">>> print(torch.__version__)\nTraceback (most recent call last):") is None
    assert parse_printed_torch(None) is None and parse_printed_torch(b"\xff\xfe") is None


def test_the_kernel_logs_module_version_from_a_mismatch_and_a_loading_line():
    assert parse_kernel_log("Jun 30 11:07:05 gpu-0 kernel: NVRM: API mismatch: the client has the version 535.54.03, "
                            "but#012NVRM: this kernel module has the version 530.30.02.  Please") == ("530.30.02", "535.54.03")
    wrapped = ("[    9.424670] NVRM: API mismatch: the client 'kwin_wayland' (pid 1005)\n"
               "               NVRM: has the version 595.84, but this kernel module has\n"
               "               NVRM: the version 595.80.  Please make sure that this\n")
    assert parse_kernel_log(wrapped) == ("595.80", "595.84")
    loading = "[    6.252567] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  570.148.06  Mon May  5 11:36:21 UTC 2025"
    assert parse_kernel_log(loading) == ("570.148.06", None)
    assert parse_kernel_log("NVRM: GPU 0000:13:00.0: RmInitAdapter failed! (0x26:0x56:1463)") is None


@settings(max_examples=300)
@given(st.text(max_size=500) | st.binary(max_size=500))
def test_any_text_or_bytes_never_raises(text):
    parse_printed_torch(text)
    parse_kernel_log(text)


def test_long_runs_of_the_parsers_own_pieces_are_read_in_linear_work():
    for unit in ("torch: ", "torch.__version__\n", "NVRM: ", "NVRM: API mismatch: the client has the version 1.1, but ",
                 "PyTorch Version (e.g., ", "torch  ", ">>> print(torch.__version__)\n\n"):
        assert_linear(parse_printed_torch, unit)
        assert_linear(parse_kernel_log, unit)
