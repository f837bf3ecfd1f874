"""`cudaenv check-installer`: real makeself archives (Debian's makeself), damaged the ways downloads fail."""

import os
import shutil
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import recorded
from cudaenv.installer_check import check_installer, cksum, parse_file_name, parse_header

NAME = "cuda_12.1.0_530.30.02_linux.run"
MAKESELF = shutil.which("makeself") or shutil.which("makeself.sh")
needs_makeself = pytest.mark.skipif(MAKESELF is None, reason="Debian's makeself is not installed")


def build(tmp_path, *flags, name=NAME, label="CUDA Toolkit 12.1.0", payload=65536):
    src = tmp_path / "src"
    src.mkdir(exist_ok=True)
    (src / "blob.bin").write_bytes(os.urandom(payload))  # incompressible: the payload stays this large
    marker = tmp_path / "EXECUTED"
    (src / "setup.sh").write_text("#!/bin/sh\ntouch %s\n" % marker)
    (src / "setup.sh").chmod(0o755)
    out = tmp_path / name
    res = subprocess.run([MAKESELF, "--quiet", *flags, str(src), str(out), label, "./setup.sh"], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    return out


def payload_offset(path):
    header = parse_header(path.read_bytes()[:1 << 20].decode("latin-1"))
    with open(path, "rb") as fh:
        return sum(len(fh.readline()) for _ in range(header.skip_lines))


@needs_makeself
@pytest.mark.parametrize(
    "flags, used",
    [((), "md5"), (("--sha256",), "sha256"), (("--nomd5",), "crc"), (("--xz",), "md5"), (("--nocomp",), "md5")],
)
def test_intact_archive(tmp_path, flags, used):
    path = build(tmp_path, *flags)
    report = check_installer(str(path))
    assert report.ok, report
    assert report.kind == "makeself" and report.label == "CUDA Toolkit 12.1.0"
    assert (report.toolkit_version, report.driver_version, report.platform) == ("12.1.0", "530.30.02", "linux")
    assert [c.name for c in report.checks if c.status == "ok" and c.name not in ("size", "compression")] == [used]
    assert report.expected_payload == report.actual_payload
    assert any("--tmpdir" in a for a in report.advice)
    assert not (tmp_path / "EXECUTED").exists()  # read, never run


@needs_makeself
def test_makeself_agrees_with_our_verdicts(tmp_path):
    """Debian's makeself `--check` must agree: intact passes, a flipped byte fails (our CRC = POSIX cksum)."""
    path = build(tmp_path, "--nomd5")
    assert subprocess.run(["sh", str(path), "--check"], capture_output=True, timeout=60).returncode == 0
    data = bytearray(path.read_bytes())
    data[payload_offset(path) + 1000] ^= 0xFF
    path.write_bytes(bytes(data))
    assert subprocess.run(["sh", str(path), "--check"], capture_output=True, timeout=60).returncode != 0
    report = check_installer(str(path))
    assert not report.ok and any(c.name == "crc" and c.status == "bad" for c in report.checks)


@needs_makeself
def test_large_crc_only_archive_uses_system_cksum(tmp_path):
    path = build(tmp_path, "--nomd5", "--nocomp", payload=12 * 1024 * 1024)  # over FAST_CKSUM_OVER
    assert check_installer(str(path)).ok
    data = bytearray(path.read_bytes())
    data[payload_offset(path) + 7_000_000] ^= 0x10
    path.write_bytes(bytes(data))
    report = check_installer(str(path))
    assert any(c.name == "crc" and c.status == "bad" for c in report.checks)


@needs_makeself
def test_truncated_download(tmp_path, cli):
    path = build(tmp_path)
    data = path.read_bytes()
    path.write_bytes(data[:-20000])
    report = check_installer(str(path))
    assert not report.ok
    assert any("incomplete" in p and "20000 bytes missing" in p for p in report.problems)
    assert any("download the installer again" in a for a in report.advice)
    assert any("df -h" in a for a in report.advice)
    res = cli("check-installer", str(path))
    assert res.code == 1 and "BAD" in res.out


@needs_makeself
@pytest.mark.parametrize("flags, which", [((), "md5"), (("--sha256",), "sha256"), (("--nomd5",), "crc")])
def test_flipped_byte(tmp_path, flags, which):
    path = build(tmp_path, *flags)
    data = bytearray(path.read_bytes())
    data[payload_offset(path) + 5000] ^= 0x01
    path.write_bytes(bytes(data))
    report = check_installer(str(path))
    assert not report.ok
    assert any(c.name == which and c.status == "bad" for c in report.checks)
    assert any("does not match the %s checksum" % which in p for p in report.problems)


@needs_makeself
def test_zero_filled_tail(tmp_path):
    path = build(tmp_path)
    data = path.read_bytes()
    path.write_bytes(data[:-30000] + b"\x00" * 30000)  # same size: a preallocated download that stopped
    report = check_installer(str(path))
    assert not report.ok
    assert any("zero bytes" in p and "preallocated" in p for p in report.problems)


@needs_makeself
def test_garbage_where_the_gzip_stream_starts(tmp_path):
    path = build(tmp_path)
    data = bytearray(path.read_bytes())
    off = payload_offset(path)
    data[off : off + 4] = b"<htm"
    path.write_bytes(bytes(data))
    report = check_installer(str(path))
    assert any("invalid compressed data" in p for p in report.problems)


@needs_makeself
def test_appended_bytes(tmp_path):
    path = build(tmp_path)
    path.write_bytes(path.read_bytes() + b"extra")
    report = check_installer(str(path))
    assert not report.ok and any("longer than its header says" in p for p in report.problems)


def test_html_page_under_the_installers_name(tmp_path, cli):
    path = tmp_path / NAME
    path.write_text(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Sign In | NVIDIA Developer</title></head>"
        "<body>Please log in</body></html>\n"
    )
    report = check_installer(str(path))
    assert report.kind == "html" and not report.ok
    assert "Sign In | NVIDIA Developer" in report.problems[0]
    assert report.toolkit_version == "12.1.0" and report.driver_version == "530.30.02"
    res = cli("check-installer", str(path), "--json")
    assert res.code == 1 and res.json()["kind"] == "html"


def test_xml_error_page(tmp_path):
    path = tmp_path / NAME
    path.write_text('<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>')
    report = check_installer(str(path))
    assert report.kind == "html" and "AccessDenied" in report.problems[0]


def test_empty_zeros_and_not_makeself(tmp_path, cli):
    empty = tmp_path / "empty.run"
    empty.write_bytes(b"")
    assert check_installer(str(empty)).kind == "empty"
    zeros = tmp_path / "zeros.run"
    zeros.write_bytes(b"\x00" * 100000)
    assert check_installer(str(zeros)).kind == "zeros"
    elf = tmp_path / "other.run"
    elf.write_bytes(b"\x7fELF" + os.urandom(1000))
    assert check_installer(str(elf)).kind == "not-makeself"
    res = cli("check-installer", str(tmp_path / "missing.run"))
    assert res.code == 2 and "does not exist" in res.err
    assert cli("check-installer", str(empty), "--json").json()["ok"] is False


def test_recorded_headers_parse():
    h = parse_header(recorded("makeself-2.4.5-header"))
    assert h.makeself_version == "2.4.5" and h.label == "CUDA Toolkit 12.1.0 test"
    assert h.filesizes == (166,) and h.totalsize == 166 and h.skip_lines == 715
    assert h.crcsums == ("3065975105",) and h.md5s == ("e43b951684d106537df5d4ae1eab0398",) and len(h.shas[0]) == 64
    old = parse_header(recorded("makeself-2.1.5-header-excerpt"))
    assert old.makeself_version == "2.1.5" and old.skip_lines == 401 and old.filesizes == (7348,)
    assert old.label == "Test Isntaller" and old.compression == "gzip" and old.shas == ()


@pytest.mark.parametrize(
    "name, expected",
    [
        ("cuda_12.1.0_530.30.02_linux.run", ("12.1.0", "530.30.02", "linux")),
        ("cuda_11.8.0_520.61.05_linux.run", ("11.8.0", "520.61.05", "linux")),
        ("cuda_12.4.1_550.54.15_linux_sbsa.run", ("12.4.1", "550.54.15", "linux_sbsa")),
        ("NVIDIA-Linux-x86_64-550.54.15.run", (None, "550.54.15", "linux_x86_64")),
        ("installer.run", (None, None, None)),
    ],
)
def test_file_names(name, expected):
    got = parse_file_name(name)
    assert (got["toolkit"], got["driver"], got["platform"]) == expected


@settings(max_examples=25, deadline=None)
@given(st.binary(max_size=3000))
def test_cksum_matches_posix_cksum(data):
    res = subprocess.run(["cksum"], input=data, capture_output=True, timeout=30)
    assert cksum(data) == int(res.stdout.split()[0])


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_parse_header_any_text(text):
    parse_header(text)
    parse_file_name(text)


@settings(max_examples=50, deadline=None)
@given(st.binary(max_size=5000))
def test_check_any_bytes(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("inst") / NAME
    path.write_bytes(data)
    report = check_installer(str(path))
    assert report.ok is False or report.kind == "makeself"


@needs_makeself
def test_versions_from_the_label_of_a_renamed_download(tmp_path, cli):
    """A browser saves the installer as download.run: the version comes from the header's label instead."""
    renamed = build(tmp_path, name="download.run")
    report = check_installer(str(renamed))
    assert report.ok and report.toolkit_version == "12.1.0" and report.driver_version is None
    mismatch = build(tmp_path, name="cuda_11.8.0_520.61.05_linux.run")
    report = check_installer(str(mismatch))
    assert report.toolkit_version == "11.8.0" and not report.ok
    bad = [c for c in report.checks if c.name == "name" and c.status == "bad"]
    assert bad and "renamed" in bad[0].message and "12.1.0" in bad[0].message
    data = cli("check-installer", str(mismatch), "--json").json()
    assert data["ok"] is False and data["toolkit_version"] == "11.8.0" and data["label"] == "CUDA Toolkit 12.1.0"
