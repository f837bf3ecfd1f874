"""parse/nvidia_smi.py and parse/nvml.py: recorded real outputs, the same outputs pasted (quoted, indented, fenced,
cut), every failure row of the error table, and any text or bytes in bounded time."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import RECORDED, assert_bounded, assert_linear, recorded
from cudaenv.parse import nvidia_smi as smi
from cudaenv.parse import nvml
from cudaenv.parse._lines import excerpt, lines
from cudaenv.core.resources import load_table

BANNERS = sorted(p.name for p in RECORDED.glob("smi-banner-*.txt"))
PATTERNS = smi.failure_patterns(load_table("error_patterns")["rows"])


def quoted(text: str, prefix: str = "> ") -> str:
    return "\n".join(prefix + line for line in text.splitlines())


@pytest.mark.parametrize("name", BANNERS)
@pytest.mark.parametrize("paste", [
    lambda t: quoted(t),  # a mail / GitHub quote
    lambda t: quoted(quoted(t, ">"), "> "),  # quoted twice
    lambda t: "```\n$ nvidia-smi\n" + quoted(t, "    ") + "\n```\n",  # indented in a code fence
    lambda t: t.replace("\n", "\r\n"),  # Windows line ends
])
def test_a_pasted_banner_reads_as_the_captured_one(name, paste):
    captured = smi.parse_banner(recorded(name))
    assert captured.driver_version  # every recorded banner names its driver
    assert smi.parse_banner(paste(recorded(name))) == captured


def test_banner_as_bytes_with_undecodable_bytes():
    data = recorded("smi-banner-610-kmd-b200x2.txt").encode() + b"\xff\xfe garbage \x80\n"
    banner = smi.parse_banner(data)
    assert (banner.driver_version, banner.cuda_version, len(banner.gpus)) == ("610.43.02", "13.3", 2)


def test_a_table_cut_mid_row_keeps_what_is_complete():
    text = recorded("smi-banner-580-a100x2.txt")
    at_bus = smi.parse_banner(text[: text.index("00000000:10:1D.0") + 5])  # inside GPU 1's bus id
    assert at_bus.driver_version == "580.126.09" and at_bus.cuda_version == "13.0"
    assert [(g.index, g.pci_bus_id, g.memory_total_mib) for g in at_bus.gpus] == [(0, "00000000:10:1C.0", 40960), (1, None, None)]
    second = text.index("NVIDIA A100", text.index("NVIDIA A100") + 1)
    in_name = smi.parse_banner(text[: second + 4])  # inside GPU 1's name: that row is not made up
    assert [g.index for g in in_name.gpus] == [0]


def test_banner_na_and_err_are_no_versions():
    assert smi.parse_banner(recorded("smi-banner-cuda-na.txt")).cuda_version is None
    err = smi.parse_banner(recorded("smi-banner-wsl2-err.txt"))
    assert (err.cuda_version, err.cuda_raw, err.smi_version, err.driver_version) == (None, "ERR!", "545.46", "546.80")


def test_list_with_mig_devices():
    gpus = smi.parse_list(recorded("smi-list-h100nvl-mig.txt"))
    assert [(g.index, g.name, g.uuid) for g in gpus] == [(0, "NVIDIA H100 NVL", "GPU-81495ec7-da36-8ea5-9f7d-5804aa3fef20")]
    assert gpus[0].mig_uuids == (
        "MIG-7839bf6f-ba33-59f0-89eb-01c8d8c4134d", "MIG-433a63e2-53a4-58c0-9b8d-a4dba3eb8f36",
        "MIG-34fa791a-69d2-560b-969f-f2aa1d900c44", "MIG-dbf12406-b888-52e8-80ee-025b6412f6e4")
    old = smi.parse_list(quoted(recorded("smi-list-a100-mig-r450.txt")))
    assert old[0].name == "A100-PCIE-40GB" and old[0].mig_uuids[0] == "MIG-GPU-9de3d0e8-33f5-10dc-0c79-2c88a7ab0a23/2/0"
    assert smi.parse_list("GPU 0: Quadro (UUID: N/A)\n") == ()  # no UUID, no made-up one


def test_query_log_of_two_driver_eras():
    new = smi.parse_query_log(recorded("smi-q-450-gtx780.txt"))
    assert (new.driver_version, new.cuda_version) == ("450.66", "11.0")
    assert [(g.index, g.name, g.uuid, g.pci_bus_id) for g in new.gpus] == [
        (0, "GeForce GTX 780", "GPU-a230e637-c9e1-1b61-3830-a437b874d88d", "00000000:01:00.0")]
    old = smi.parse_query_log(quoted(recorded("smi-q-375-quadro-m1000m.txt")))  # pasted, quoted
    assert (old.driver_version, old.cuda_version, old.cuda_raw) == ("375.82", None, None)
    assert [(g.name, g.pci_bus_id) for g in old.gpus] == [("Quadro M1000M", "0000:01:00.0")]


def test_query_log_memory_counts_the_framebuffer_only():
    # the FB and BAR1 sections as nvidia-smi -q -d MEMORY prints them, indentation lost as in many pastes
    text = recorded("smi-q-450-gtx780.txt") + (
        "FB Memory Usage\nTotal : 3018 MiB\nUsed : 1 MiB\nFree : 3017 MiB\n"
        "BAR1 Memory Usage\nTotal : 256 MiB\nUsed : 5 MiB\n")
    g = smi.parse_query_log(text).gpus[0]
    assert (g.memory_total_mib, g.memory_used_mib) == (3018, 1)
    assert smi.parse_query_log("CUDA Version : Not Found\n").cuda_raw == "Not Found"


@pytest.mark.parametrize("name, failure", [
    ("smi-fail-no-driver.txt", "driver-not-loaded"),
    ("smi-fail-mismatch.txt", "driver-library-mismatch"),
    ("smi-fail-gpu-lost.txt", "gpu-lost"),
    ("smi-fail-no-devices.txt", "no-devices"),
    ("smi-fail-no-permission.txt", "no-permission"),
])
def test_each_failure_text_has_its_row_in_the_error_table(name, failure):
    assert smi.classify_failure(recorded(name), PATTERNS) == failure
    assert smi.classify_failure(quoted(recorded(name)), PATTERNS) == failure  # pasted
    # explain names the same row: the doctor's finding id
    from cudaenv.explain import classify_error

    row = next(p for p in PATTERNS if p.failure == failure)
    assert classify_error(recorded(name)).id == row.finding


def test_nvml_codes_come_from_the_same_rows():
    by_code = {code: smi.failure_for_nvml_code(code, PATTERNS) for code in (4, 6, 9, 15, 18, 999)}
    assert by_code == {4: "no-permission", 6: "no-devices", 9: "driver-not-loaded", 15: "gpu-lost",
                       18: "driver-library-mismatch", 999: None}


def test_the_probe_has_no_failure_texts_of_its_own():
    """One home: the probe's texts are the table's rows (no regex list left in probes/nvidia.py)."""
    from importlib.resources import files

    source = files("cudaenv.probes").joinpath("nvidia.py").read_text(encoding="utf-8")
    for text in ("Insufficient Permissions", "No devices were found", "Driver/library version mismatch", "NVML_FAILURES"):
        assert text not in source


def test_excerpt_bounds_a_foreign_text():
    assert excerpt("\n\n  first line  \nsecond") == "first line"
    long = excerpt("x" * 100000)
    assert len(long) == 200 and long.endswith("...")
    assert excerpt(b"\xffbad") == "\ufffdbad"


# ----------------------------------------------------------------------------------------- any input
SAMPLES = [
    "|   0  NVIDIA B200                    On  |   00000000:63:00.0 Off |                    0 |",
    "| N/A   26C    P0            139W / 1000W |       0MiB / 183359MiB |      0%      Default |",
    "| NVIDIA-SMI 610.43.02              KMD Version: 610.43.02     CUDA UMD Version: 13.3     |",
    "| Processes:                                                                              |",
    "|    0   N/A  N/A      1752    C+G   Insufficient Permissions        N/A      |",
    "|    0      1568    C   /usr/bin/python                            1850MiB |",
    "0, NVIDIA B200, 610.43.02, 10.0, 183359, 0, GPU-abc, 00000000:63:00.0",
    "12, python, [N/A], GPU-abc", "CUDA Version: ERR!", ",,,,,,,", "", "x" * 30, "> > |",
    "GPU 0: NVIDIA A100 (UUID: GPU-1)", "  MIG 1g.5gb Device 0: (UUID: MIG-2)", "²,٣,０,𝟙 MiB",
]
smi_like = st.lists(st.sampled_from(SAMPLES) | st.text(max_size=200), max_size=15).map("\n".join)


def every_parser(text):
    smi.parse_banner(text)
    smi.parse_query_csv(text)
    smi.parse_query_csv(text, smi.QUERY_FIELDS_OLD)
    smi.parse_apps_csv(text)
    smi.parse_list(text)
    smi.parse_query_log(text)
    smi.classify_failure(text, PATTERNS)
    nvml.parse_nvml_output(text)


@settings(max_examples=300)
@given(smi_like)
def test_any_text_never_raises(text):
    every_parser(text)


@settings(max_examples=200)
@given(st.binary(max_size=2000))
def test_any_bytes_never_raise(data):
    every_parser(data)


@pytest.mark.parametrize("unit", [" ", "|", "0", "0 ", "| 0 ", "1" * 50 + "MiB", "[", "(UUID: ", "GPU-", "NVIDIA-SMI ",
                                  "CUDA Version: ", "Driver Version: ", "| 0  x  On |", "|    0   N/A  N/A  1  C  "])
def test_adversarial_runs_take_linear_work(unit):
    """Long runs that could make a parser loop back: one line of each, and many lines of it (counted steps)."""
    assert_linear(every_parser, unit)
    assert_linear(every_parser, unit * 200 + "\n", size=200_000)


def test_apps_csv_with_unicode_digits_is_no_pid():
    # str.isdigit() is True for these, int() would refuse "²": nothing is read, nothing raises
    assert smi.parse_apps_csv("²³, python, 10, GPU-1\n٣, python, 10, GPU-1\n") == ()
    assert smi.parse_query_csv("²,NVIDIA,1,8.6,1,1,GPU-1,00000000:01:00.0").gpus == ()


def test_nvml_output_survives_deep_nesting_and_huge_numbers():
    assert nvml.parse_nvml_output("[" * 100000 + "]" * 100000).ok is False
    assert nvml.parse_nvml_output("1" * 5000).ok is False
    big = nvml.parse_nvml_output(json.dumps({"ok": True, "cuda_driver_version": 10 ** 30,
                                             "devices": [{"index": 0, "name": "x" * 10000}]}))
    assert big.ok and big.cuda_version is None and len(big.gpus[0].name) <= 200


def test_lines_are_bounded():
    rows = lines("y" * 10_000_000)
    assert len(rows) == 1 and len(rows[0]) == 1000
    assert len(lines("a\n" * 100000)) == 20000


def test_a_100_mb_output_costs_what_its_head_costs():
    """Issue 12: an nvidia-smi printing 100 MB took 25 s and 632 MB; only its head is parsed (its first lines, as
    ``parse._lines.lines`` keeps them): counted, the same Python for 900,000 junk lines after the table as for 30,000,
    and one split of the rest."""
    head = recorded("smi-banner-580-a100x2.txt") + "x" * 100 + "\n"
    junk = "| junk line " * 10 + "\n"
    banner = smi.parse_banner(head + junk * 900_000)
    assert banner.driver_version == "580.126.09" and len(banner.gpus) == 2
    assert_bounded(smi.parse_banner, head + junk * 30_000, head + junk * 900_000, passes=1)


@pytest.mark.parametrize("unit", ["0", "a:", "0000:", " ", "Unable to determine the device handle for GPU ", "NVML: ", "GPU is lost ",
                                  "NVIDIA-SMI has failed because it couldn't ", "Driver/library version "])
def test_the_failure_rows_are_linear_on_the_whole_text(unit):
    """explain runs these rows over a whole paste (not line by line): a 1 MB run of each unit stays fast."""
    prefix = "Unable to determine the device handle for GPU "
    def every_row(text):
        for row in PATTERNS:
            for p in row.patterns:
                p.search(text)

    for head in ("", prefix):
        assert_linear(every_row, unit, head=head)


@settings(max_examples=300)
@given(st.one_of(st.text(max_size=80), st.lists(st.sampled_from(["index", "name", " memory.total [MiB]", "uuid", "Name",
                                                                  "_x", "2024-05-01 train", " ", "[MiB]", "utilization.gpu"]),
                                                 max_size=5).map(", ".join)))
def test_a_query_header_is_told_by_its_first_letter_first(row):
    """is_query_header rejects a line whose first field cannot start a field name before splitting it (a 10 MB log's
    lines cost one look each): the answer is the full reading's."""
    from cudaenv.parse.nvidia_smi import _KNOWN_FIELDS, _header_fields, is_query_header

    names = _header_fields(row) if len(row) <= 2000 else None
    assert is_query_header(row) == (names is not None and all(n in _KNOWN_FIELDS or "." in n for n in names))
