"""The driver facts table (data/cuda_drivers.json) and the questions cudaenv.facts.drivers answers from it."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cudaenv.facts import drivers
from cudaenv.core.resources import load_table
from cudaenv.core.version import version_key

TABLE = load_table("cuda_drivers")
MINIMUM = [r for r in TABLE["rows"] if r["table"] == "minimum"]
BUNDLED = [r for r in TABLE["rows"] if r["table"] == "bundled"]


def test_every_row_names_a_known_source():
    assert TABLE["rows"]
    for row in TABLE["rows"]:
        assert row["source"] in TABLE["sources"], row
        assert row["table"] in ("minimum", "bundled", "cudnn"), row
        assert row.get("confirmed", True) in (True, False)


def test_windows_13x_minimum_is_marked_unconfirmed():
    row = next(r for r in MINIMUM if r["cuda_from"] == "13.0")
    assert row["confirmed"] is False


@pytest.mark.parametrize("system", ["linux", "windows"])
def test_minimums_never_decrease_with_cuda_version(system):
    ordered = sorted(MINIMUM, key=lambda r: version_key(r["cuda_from"]))
    values = [r[system] for r in ordered]
    for older, newer in zip(values, values[1:]):
        assert drivers.compare_versions(older, newer) <= 0, (older, newer)


@pytest.mark.parametrize("system", ["linux", "windows"])
def test_bundled_drivers_never_decrease_with_toolkit_version(system):
    ordered = sorted(BUNDLED, key=lambda r: version_key(r["toolkit"]))
    values = [r[system] for r in ordered if r[system]]
    for older, newer in zip(values, values[1:]):
        assert drivers.compare_versions(older, newer) <= 0, (older, newer)


@pytest.mark.parametrize("system", ["linux", "windows"])
def test_the_newest_driver_runs_every_cuda_row(system):
    newest = max((r["linux"] for r in BUNDLED), key=version_key)
    for row in MINIMUM:
        assert drivers.compare_versions(newest, row[system]) >= 0
    for mm in drivers.known_cuda_versions():
        assert drivers.min_driver_for_cuda(mm, system) is not None, mm
        assert drivers.compare_versions(newest, drivers.min_driver_for_cuda(mm, system)) >= 0


def test_a_400_series_driver_runs_no_cuda_11_or_newer():
    for mm in drivers.known_cuda_versions():
        if version_key(mm)[0] >= 11:
            assert drivers.compare_versions("440.100", drivers.min_driver_for_cuda(mm, "linux")) < 0, mm
            assert drivers.compare_versions("449.99", drivers.min_driver_for_cuda(mm, "windows")) < 0, mm
    assert drivers.compare_versions(drivers.max_cuda_for_driver("440.100", "linux"), "10.2") == 0


def test_bundled_driver_meets_the_minimum_of_its_own_cuda():
    for row in BUNDLED:
        minimum = drivers.min_driver_for_cuda(row["toolkit"], "linux")
        assert minimum is not None, row
        assert drivers.compare_versions(row["linux"], minimum) >= 0, row


@pytest.mark.parametrize(
    "cuda, system, expected",
    [
        ("12.8", "linux", "525.60.13"),
        ("12.1", "windows", "528.33"),
        ("12", "linux", "525.60.13"),
        ("11.8", "linux", "450.80.02"),
        ("11.1", "windows", "452.39"),
        ("11.0", "linux", "450.36.06"),
        ("13.0", "linux", "580"),
        ("10.2", "linux", "440.33"),
        ("9.2", "linux", None),
        ("garbage", "linux", None),
        (None, "linux", None),
    ],
)
def test_min_driver_for_cuda(cuda, system, expected):
    assert drivers.min_driver_for_cuda(cuda, system) == expected


@pytest.mark.parametrize(
    "driver, system, expected",
    [
        ("535.104.05", "linux", "12.9"),
        ("525.60.13", "linux", "12.9"),
        ("525.60.12", "linux", "11.8"),
        ("580.65.06", "linux", "13.2"),
        ("450.80.02", "linux", "11.8"),
        ("450.51.06", "linux", "11.0"),
        ("418.39", "linux", "10.1"),
        ("390.1", "linux", None),
        ("528.33", "windows", "12.9"),
        ("N/A", "linux", None),
    ],
)
def test_max_cuda_for_driver(driver, system, expected):
    assert drivers.max_cuda_for_driver(driver, system) == expected


@pytest.mark.parametrize(
    "toolkit, system, expected",
    [
        ("12.4", "linux", "550.54.14"),
        ("12.4.1", "linux", "550.54.15"),
        ("12.4.131", "linux", "550.54.14"),
        ("12.8", "windows", "570.65"),
        ("13.0", "windows", None),
        ("13.0.0", "linux", "580.65.06"),
        ("11.8", "linux", "520.61.05"),
        ("14.0", "linux", None),
    ],
)
def test_toolkit_driver(toolkit, system, expected):
    assert drivers.toolkit_driver(toolkit, system) == expected


def test_native_cuda_for_driver_is_what_nvidia_smi_prints():
    assert drivers.native_cuda_for_driver("535.104.05", "linux") == "12.2"
    assert drivers.native_cuda_for_driver("550.54.15", "linux") == "12.4"
    assert drivers.native_cuda_for_driver("570.124.06", "linux") == "12.8"
    assert drivers.native_cuda_for_driver("300", "linux") is None


@pytest.mark.parametrize(
    "a, b, expected",
    [("580", "580.65.06", -1), ("550.54.15", "550.54.15", 0), ("535.104.05", "535.54.03", 1), ("12.10", "12.9", 1), ("", "1", -1)],
)
def test_compare_versions(a, b, expected):
    assert drivers.compare_versions(a, b) == expected


@given(st.text(), st.text())
def test_compare_versions_never_raises(a, b):
    assert drivers.compare_versions(a, b) in (-1, 0, 1)
    assert drivers.compare_versions(a, b) == -drivers.compare_versions(b, a)


@given(st.text())
def test_questions_never_raise(text):
    drivers.min_driver_for_cuda(text, "linux")
    drivers.max_cuda_for_driver(text, "windows")
    drivers.toolkit_driver(text, "linux")
    drivers.native_cuda_for_driver(text, "linux")


@pytest.mark.parametrize(
    "major, cuda, expected",
    [(9, "12.4", True), (9, "13.0", True), (9, "11.8", True), (9, "11.7", False), (8, "12.1", True), (8, "13.0", False),
     (7, "12.1", False), (5, "12.1", None), (None, "12.1", None)],
)
def test_cudnn_fits_cuda(major, cuda, expected):
    assert drivers.cudnn_fits_cuda(major, cuda) == expected


def test_cudnn_majors_for_cuda_newest_first():
    assert drivers.cudnn_majors_for_cuda("12.4") == [9, 8]
    assert drivers.cudnn_majors_for_cuda("13.0") == [9]
    assert drivers.cudnn_majors_for_cuda("10.2")[:1] == [8]
    assert drivers.cudnn_majors_for_cuda(None) == [] and drivers.cudnn_majors_for_cuda("junk") == []
