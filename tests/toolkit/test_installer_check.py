"""`cudaenv check-installer`: real makeself archives (Debian's makeself), damaged the ways downloads fail."""

import os
import shutil
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import CHILD_CWD, TOOLS, recorded, tools
from cudaenv.toolkit.installer_check import check_installer, cksum, parse_file_name, parse_header

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


def recording_host(env_path, timeout=5.0):
    """A Host running commands through the test's (refusing) runner, PATH = env_path, that keeps each CommandResult."""
    import cudaenv.host as host_module
    from cudaenv.host import process
    from cudaenv.host import Host

    runs = []

    def runner(argv, timeout, env, cwd=None):
        res = (host_module.default_runner or process.subprocess_runner)(argv, timeout, env, cwd)
        runs.append(res)
        return res

    return Host(env={"PATH": env_path}, timeout=timeout, runner=runner), runs


@needs_makeself
def test_large_crc_only_archive_uses_system_cksum(tmp_path):
    path = build(tmp_path, "--nomd5", "--nocomp", payload=12 * 1024 * 1024)  # over FAST_CKSUM_OVER
    host, runs = recording_host(tools("cksum", "tail", "head"))
    assert check_installer(str(path), host).ok
    assert len(runs) == 1 and runs[0].ok and "cksum" in " ".join(runs[0].argv)  # through the Host's runner
    data = bytearray(path.read_bytes())
    data[payload_offset(path) + 7_000_000] ^= 0x10
    path.write_bytes(bytes(data))
    report = check_installer(str(path), host)
    assert any(c.name == "crc" and c.status == "bad" for c in report.checks)
    assert len(runs) == 2 and runs[1].ok


@needs_makeself
def test_a_cksum_that_never_reads_its_input_costs_one_timeout(tmp_path, fake_bin):
    """Issue 12: a `cksum` that never reads stdin blocked the writer forever; now the runner's timeout ends it (the
    whole pipeline) and the built-in CRC gives the verdict. Counted, not timed: one run, ended by its timeout (the
    old code blocked here for ever: the test's timeout mark is what would end that)."""
    path = build(tmp_path, "--nomd5", "--nocomp", payload=12 * 1024 * 1024)
    fake_bin.command("cksum", stdout="1 2\n", sleep=1000)
    host, runs = recording_host(fake_bin.env_path, timeout=1.0)
    report = check_installer(str(path), host)
    # the host's 1 s plus the size's allowance (installer_check.CKSUM_RATE)
    assert len(runs) == 1 and runs[0].error == "timeout" and runs[0].timeout < 1.0 + 12 * 1024 * 1024 / 50e6 + 0.1, runs
    assert report.ok and any(c.name == "crc" and c.status == "ok" for c in report.checks)


@needs_makeself
def test_a_cksum_that_lies_is_not_believed(tmp_path, fake_bin):
    path = build(tmp_path, "--nomd5", "--nocomp", payload=12 * 1024 * 1024)
    fake_bin.command("cksum", stdout="12345 99\n")  # not the length it was given: not a cksum answer
    host, _ = recording_host(fake_bin.env_path)
    assert check_installer(str(path), host).ok


def test_a_fifo_is_refused_and_never_opened_for_reading(tmp_path, cli_subprocess):
    fifo = tmp_path / NAME
    os.mkfifo(fifo)
    r = cli_subprocess("check-installer", str(fifo), timeout=20)
    assert r.code == 2 and "FIFO" in r.err and "not a regular file" in r.err, r
    with pytest.raises(OSError):
        check_installer(str(fifo))


def handmade(tmp_path, header_fields, payload=b"", name=NAME):
    """A makeself-like file: the header's fields, a skip= line count that is right, then the payload."""
    lines = ["#!/bin/sh", "# This script was generated using Makeself 2.4.5"] + header_fields
    skip = len(lines) + 2
    lines.append('skip="%d"' % skip)
    lines.append("exit 0")
    path = tmp_path / name
    path.write_bytes(("\n".join(lines) + "\n").encode("latin-1") + payload)
    return path


def test_sizes_of_5000_digits_are_a_damaged_header(tmp_path, cli):
    path = handmade(tmp_path, ['label="CUDA Toolkit 12.1.0"', 'CRCsum="0"', 'MD5="0"', 'filesizes="%s"' % ("9" * 5000), 'totalsize="%s"' % ("9" * 5000)])
    report = check_installer(str(path))
    assert report.verdict == "bad" and not report.ok
    assert any("not a number" in p and "filesizes" in p for p in report.problems)
    r = cli("check-installer", str(path))
    assert r.code == 1 and "damaged" in r.out


def test_skip_pointing_into_a_gigabyte_of_zeros_is_read_bounded(tmp_path):
    """Issue 12: `skip=` past the header made the old reader take 1 GB of zeros as one line (2 GB RSS)."""
    import resource

    path = tmp_path / NAME
    header = '#!/bin/sh\n# This script was generated using Makeself 2.4.5\nCRCsum="0"\nMD5="0"\nfilesizes="10"\nskip="1000000"\n'
    with open(path, "wb") as fh:
        fh.write(header.encode())
        fh.truncate(1 << 30)  # sparse: 1 GB of zeros after the header
    code = "from cudaenv.toolkit.installer_check import check_installer; r = check_installer(%r); print(r.verdict, r.problems[0])" % str(path)
    limit = 512 * 1024 * 1024

    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, preexec_fn=cap, cwd=CHILD_CWD)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.startswith("bad ") and "run past the first" in res.stdout


def test_two_hundred_thousand_archives_give_a_short_report(tmp_path, cli):
    n = 200_000
    path = handmade(tmp_path, ['label="CUDA Toolkit 12.1.0"', 'CRCsum="0"', 'MD5="0"', 'filesizes="%s"' % " ".join(["1"] * n)], b"x" * n)
    report = check_installer(str(path))
    assert report.archives == n and len(report.checks) <= 25
    assert report.checks[-1].message.startswith("archives 21-200000:")
    r = cli("check-installer", str(path))
    assert len(r.out.splitlines()) <= 40, r.out[-3000:]
    assert "200000" in r.out


@needs_makeself
def test_an_archive_without_any_checksum_is_not_called_intact(tmp_path, cli):
    """Issue 12: `--nomd5 --nocrc` declares no checksum; it was "OK, an intact installer". It is not verified: exit 3."""
    path = build(tmp_path, "--nomd5", "--nocrc")
    report = check_installer(str(path))
    assert report.verdict == "unverified" and report.ok is False
    assert any("could not be verified" in p for p in report.problems)
    assert any("sha256sum" in a for a in report.advice)
    r = cli("check-installer", str(path))
    assert r.code == 3 and "NOT VERIFIED" in r.out and "intact" not in r.out.splitlines()[0]
    assert cli("check-installer", str(path), "--json").json()["verdict"] == "unverified"


@needs_makeself
def test_the_label_and_path_are_printed_escaped(tmp_path, cli):
    """A downloaded file's label= can hold escape sequences (set the title, clear the screen): shown, never obeyed."""
    path = build(tmp_path, label="CUDA Toolkit 12.1.0 \x1b]0;pwned\x07\x1b[2J")
    r = cli("check-installer", str(path))
    assert r.code == 0, r
    assert "\x1b" not in r.out and "\x07" not in r.out
    assert "\\x1b]0;pwned\\x07" in r.out


@pytest.mark.timeout(120)  # only keeps a quadratic scan (minutes) from blocking the suite; the patterns' own
def test_a_page_of_200000_title_tags_is_read(tmp_path):  # linearity is test_regex_safety's
    path = tmp_path / NAME
    path.write_bytes(b"<!DOCTYPE html>\n<html>" + b"<title" * 200_000)
    report = check_installer(str(path))
    assert report.kind == "html"


@settings(max_examples=300)
@given(st.binary(max_size=4000), st.integers(min_value=0, max_value=10**30))
def test_payload_offset_any_bytes(head, skip):
    from cudaenv.parse.makeself import payload_offset as offset

    got = offset(head, skip, complete=True)
    assert got is not None and 0 <= got <= len(head)
    assert got == len(head) or head[:got].count(b"\n") == skip


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


@settings(max_examples=25)
@given(st.binary(max_size=3000))
def test_cksum_matches_posix_cksum(data):
    res = subprocess.run(["cksum"], input=data, capture_output=True, timeout=30)
    assert cksum(data) == int(res.stdout.split()[0])


@settings(max_examples=300)
@given(st.text())
def test_parse_header_any_text(text):
    parse_header(text)
    parse_file_name(text)


@settings(max_examples=50)
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


def _fits(out, width):
    """Every line within ``width``, except one holding a single word longer than a line (a path: never cut)."""
    for line in out.splitlines():
        if len(line) > width:
            words = line.split()
            assert any(len(w) > width // 2 for w in words), (width, line)


@needs_makeself
@pytest.mark.parametrize("columns", [None, "60", "44"])
def test_output_fits_the_terminal_and_wraps_between_words(tmp_path, cli, columns):
    """Issue 13: check-installer fits 80 columns (or a narrower COLUMNS) and never breaks a command or a path."""
    path = build(tmp_path, "--nomd5", "--nocrc", name="cuda_12.1.0_530.30.02_linux.run")
    env = {"PATH": TOOLS}
    if columns:
        env["COLUMNS"] = columns
    r = cli("check-installer", str(path), env=env)
    width = int(columns or 80)
    _fits(r.out, width)
    flat = " ".join(r.out.split())
    assert "sh cuda_12.1.0_530.30.02_linux.run --tmpdir=/a/folder/with/space" in flat
    assert any("--tmpdir=/a/folder/with/space" in line for line in r.out.splitlines())
    if columns is None:
        long_line = [line for line in r.out.splitlines() if len(line) > 80]
        assert all(str(tmp_path) in line for line in long_line), long_line


@settings(max_examples=200)
@given(st.binary(max_size=40), st.integers(0, 70), st.integers(1, 16))
def test_the_zero_tail_is_what_stripping_the_file_of_its_zeros_gives(body, zeros, chunk):
    """_zero_tail compares whole blocks with a block of zeros (issue 35: an all-zero 4 GiB download at md5sum's
    speed) and scans only the block where the zeros end: the count is the file's trailing zeros, for any block size."""
    import io

    from cudaenv.toolkit import installer_check as ic

    data = body + bytes(zeros)
    real = ic.CHUNK
    ic.CHUNK = chunk
    try:
        got = ic._zero_tail(io.BufferedReader(io.BytesIO(data)), len(data))
    finally:
        ic.CHUNK = real
    assert got == len(data) - len(data.rstrip(b"\x00"))
