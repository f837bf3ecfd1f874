"""Check a downloaded CUDA ``.run`` installer without running it.

CUDA and driver ``.run`` files are makeself self-extracting archives: a shell-script header, then the
compressed payload. The header declares what the payload must be::

    #!/bin/sh
    # This script was generated using Makeself 2.4.5
    CRCsum="3065975105"
    MD5="e43b951684d106537df5d4ae1eab0398"
    SHA="d36c11c9...81b"                    (makeself 2.4+ with --sha256; zeros when absent)
    label="CUDA Toolkit 12.1.0"
    filesizes="166"                         (one size per appended archive)
    totalsize="166"                         (2.4+)
    skip="715"                              (header lines; makeself 2.1 writes `head -n 403 "$1"` instead)

``parse_header`` reads those fields (pure); ``check_installer`` finds the payload after the header's lines,
compares its size with ``filesizes`` (a truncated download), verifies SHA-256, MD5 or makeself's CRC
(POSIX ``cksum``, implemented here) the way makeself itself does (the strongest declared one), and
recognises an HTML/XML error page or an empty or zero-filled file saved under the installer's name.
The file is only ever read, never executed.
"""

import hashlib
import os
import re
from typing import BinaryIO, Dict, List, Optional, Tuple

from cudaenv._record import Record

HEADER_LIMIT = 1024 * 1024  # a makeself header is a few hundred lines
CHUNK = 4 * 1024 * 1024
ZERO_TAIL_MIN = 512

_NAME = re.compile(r"cuda_(\d+\.\d+(?:\.\d+)?)_(\d+\.\d+(?:\.\d+)?)_(linux(?:_[a-z0-9]+)?|windows)", re.IGNORECASE)
_DRIVER_NAME = re.compile(r"NVIDIA-Linux-([a-z0-9_]+)-(\d+\.\d+(?:\.\d+)?)", re.IGNORECASE)
_VERSION_IN_LABEL = re.compile(r"(\d+\.\d+(?:\.\d+)?)")
_MAGIC = {b"\x1f\x8b": "gzip", b"\xfd7zXZ\x00": "xz", b"BZh": "bzip2", b"\x28\xb5\x2f\xfd": "zstd", b"\x89LZO": "lzo", b"\x04\x22\x4d\x18": "lz4"}
_DECOMPRESS = (("gzip -cd", "gzip"), ("pigz -cd", "gzip"), ("xz -d", "xz"), ("zstd -d", "zstd"), ("bzip2 -d", "bzip2"), ("lz4 -d", "lz4"), ("lzop -d", "lzo"))


# ------------------------------------------------------------------------------------ POSIX cksum


def _crc_table() -> List[int]:
    table = []
    for i in range(256):
        c = i << 24
        for _ in range(8):
            c = ((c << 1) ^ 0x04C11DB7) if c & 0x80000000 else (c << 1)
        table.append(c & 0xFFFFFFFF)
    return table


class Cksum:
    """POSIX ``cksum``: CRC-32 (polynomial 0x04C11DB7, MSB first) over the data and then its length."""

    _table: Optional[List[int]] = None

    def __init__(self) -> None:
        if Cksum._table is None:
            Cksum._table = _crc_table()
        self.crc = 0
        self.length = 0

    def update(self, data: bytes) -> None:
        table, crc = Cksum._table, self.crc
        for b in data:
            crc = ((crc << 8) & 0xFFFFFFFF) ^ table[(crc >> 24) ^ b]
        self.crc = crc
        self.length += len(data)

    def value(self) -> int:
        table, crc, n = Cksum._table, self.crc, self.length
        while n:
            crc = ((crc << 8) & 0xFFFFFFFF) ^ table[(crc >> 24) ^ (n & 0xFF)]
            n >>= 8
        return (~crc) & 0xFFFFFFFF


def cksum(data: bytes) -> int:
    c = Cksum()
    c.update(data)
    return c.value()


# ------------------------------------------------------------------------------------ header


class Header(Record):
    makeself_version: Optional[str] = None
    label: Optional[str] = None
    filesizes: Tuple[int, ...] = ()
    totalsize: Optional[int] = None
    crcsums: Tuple[str, ...] = ()
    md5s: Tuple[str, ...] = ()
    shas: Tuple[str, ...] = ()
    skip_lines: Optional[int] = None
    compression: Optional[str] = None  # from the header's decompress command
    script: Optional[str] = None


def _field(text: str, name: str) -> Optional[str]:
    m = re.search(r'^%s="([^"\n]*)"' % re.escape(name), text, re.M) or re.search(r"^%s='([^'\n]*)'" % re.escape(name), text, re.M)
    return m.group(1) if m else None


def looks_like_makeself(text: str) -> bool:
    return text.startswith("#!") and ("Makeself" in text[:4096] or ("filesizes=" in text and ("CRCsum=" in text or "MD5=" in text)))


def parse_header(text: str) -> Header:
    """The fields a makeself header declares (absent ones None/empty). Any text in, no exception out."""
    version = re.search(r"generated using Makeself (\S+)", text[:4096])
    sizes = tuple(int(x) for x in (_field(text, "filesizes") or "").split() if x.isdigit())
    total = _field(text, "totalsize")
    skip = _field(text, "skip")
    skip_lines = int(skip) if skip and skip.isdigit() else None
    if skip_lines is None:
        m = re.search(r'head -n (\d+) "?\$[01]', text)
        skip_lines = int(m.group(1)) if m else None
    compression = None
    for needle, kind in _DECOMPRESS:
        if needle in text:
            compression = kind
            break
    return Header(
        makeself_version=version.group(1) if version else None,
        label=_field(text, "label"),
        filesizes=sizes,
        totalsize=int(total) if total and total.isdigit() else None,
        crcsums=tuple((_field(text, "CRCsum") or "").split()),
        md5s=tuple((_field(text, "MD5") or "").split()),
        shas=tuple((_field(text, "SHA") or "").split()),
        skip_lines=skip_lines,
        compression=compression,
        script=_field(text, "script"),
    )


def parse_file_name(name: str) -> Dict[str, Optional[str]]:
    """Toolkit/driver versions and platform from ``cuda_12.1.0_530.30.02_linux.run`` or ``NVIDIA-Linux-x86_64-550.54.15.run``."""
    m = _NAME.search(name)
    if m:
        return {"toolkit": m.group(1), "driver": m.group(2), "platform": m.group(3).lower()}
    m = _DRIVER_NAME.search(name)
    if m:
        return {"toolkit": None, "driver": m.group(2), "platform": "linux_" + m.group(1).lower()}
    return {"toolkit": None, "driver": None, "platform": None}


# ------------------------------------------------------------------------------------ the check


class Check(Record):
    name: str  # size | sha256 | md5 | crc | compression | name
    status: str  # ok | bad | skipped
    message: str


class InstallerReport(Record):
    """``cudaenv check-installer --json``."""

    _json_envelope = True

    path: str
    size: int
    kind: str  # makeself | html | empty | zeros | not-makeself
    ok: bool
    makeself_version: Optional[str] = None
    label: Optional[str] = None
    toolkit_version: Optional[str] = None
    driver_version: Optional[str] = None
    platform: Optional[str] = None
    header_lines: Optional[int] = None
    payload_offset: Optional[int] = None
    expected_payload: Optional[int] = None
    actual_payload: Optional[int] = None
    checks: Tuple[Check, ...] = ()
    problems: Tuple[str, ...] = ()
    advice: Tuple[str, ...] = ()



def _mb(n: int) -> str:
    return "%.1f MB" % (n / 1e6) if n >= 100000 else "%d bytes" % n


def _html_title(head: bytes) -> Optional[str]:
    text = head.decode("utf-8", "replace")
    m = re.search(r"<title[^>]*>(.*?)</title>", text, re.I | re.S)
    if m:
        return " ".join(m.group(1).split())[:120]
    m = re.search(r"<Code>(.*?)</Code>", text, re.S)
    return m.group(1).strip() if m else None


def _is_markup(head: bytes) -> bool:
    start = head.lstrip()[:200].lower()
    return start.startswith((b"<!doctype html", b"<html", b"<?xml", b"<head", b"<body", b"<error")) or (
        not head.startswith(b"#!") and b"<html" in head[:4096].lower()
    )


def _zero_tail(fh: BinaryIO, size: int) -> int:
    """How many bytes at the end of the file are zeros (a preallocated, unfinished download)."""
    count, pos = 0, size
    while pos > 0:
        step = min(CHUNK, pos)
        fh.seek(pos - step)
        block = fh.read(step)
        stripped = block.rstrip(b"\x00")
        count += len(block) - len(stripped)
        if stripped:
            break
        pos -= step
    return count


def check_installer(path: str) -> InstallerReport:
    """Read ``path`` (never run it) and say whether it is an intact makeself installer."""
    names = parse_file_name(os.path.basename(path))
    base = dict(path=path, toolkit_version=names["toolkit"], driver_version=names["driver"], platform=names["platform"])
    size = os.path.getsize(path)
    redownload = "download the installer again (resume a cut download with `wget -c URL` or `curl -C - -O URL`)"
    space = "check the free space where you saved it (`df -h %s`): a full disk cuts downloads short" % (os.path.dirname(os.path.abspath(path)))
    with open(path, "rb") as fh:
        if size == 0:
            return InstallerReport(size=0, kind="empty", ok=False, problems=("the file is empty",), advice=(redownload, space), **base)
        head = fh.read(HEADER_LIMIT)
        if not head.strip(b"\x00"):
            zeros = _zero_tail(fh, size)
            if zeros == size:
                return InstallerReport(
                    size=size, kind="zeros", ok=False, problems=("the file holds only zero bytes: the download never wrote its data",),
                    advice=(redownload, space), **base
                )
        if _is_markup(head):
            title = _html_title(head)
            problem = "this is a web page, not an installer%s" % (": %r" % title if title else "")
            return InstallerReport(
                size=size, kind="html", ok=False, problems=(problem,),
                advice=(
                    "the download link answered with an error or login page; download the .run file again from "
                    "developer.nvidia.com (in a browser, or with `wget URL` so redirects are followed)",
                ),
                **base,
            )
        text = head.decode("latin-1")
        if not looks_like_makeself(text):
            return InstallerReport(
                size=size, kind="not-makeself", ok=False,
                problems=("the file does not start with a makeself self-extracting header",),
                advice=(redownload,), **base
            )
        header = parse_header(text)
        return _check_makeself(fh, size, header, base, redownload, space)


def _check_makeself(fh: BinaryIO, size: int, header: Header, base: dict, redownload: str, space: str) -> InstallerReport:
    checks: List[Check] = []
    problems: List[str] = []
    advice: List[str] = []
    label_versions = _VERSION_IN_LABEL.findall(header.label or "")
    if base["toolkit_version"] is None and label_versions:
        base = dict(base, toolkit_version=label_versions[0])
    elif base["toolkit_version"] and label_versions and not any(v.startswith(base["toolkit_version"][:4]) for v in label_versions):
        checks.append(Check("name", "bad", "the file name says %s but the header's label says %r: the file was renamed?" % (base["toolkit_version"], header.label)))
    fields = dict(makeself_version=header.makeself_version, label=header.label, header_lines=header.skip_lines)
    if header.skip_lines is None or not header.filesizes:
        problems.append("the makeself header has no %s field: it is damaged" % ("skip/head -n" if header.skip_lines is None else "filesizes"))
        return InstallerReport(size=size, kind="makeself", ok=False, checks=tuple(checks), problems=tuple(problems), advice=(redownload,), **base, **fields)
    fh.seek(0)
    offset = 0
    for _ in range(header.skip_lines):
        line = fh.readline()
        if not line:
            break
        offset += len(line)
    expected = header.totalsize if header.totalsize is not None else sum(header.filesizes)
    actual = size - offset
    fields.update(payload_offset=offset, expected_payload=expected, actual_payload=actual)
    zeros = _zero_tail(fh, size)
    if actual < expected:
        problems.append("the download is incomplete: %s of %s of payload (%s missing)" % (_mb(actual), _mb(expected), _mb(expected - actual)))
        checks.append(Check("size", "bad", "payload %d bytes, header expects %d" % (actual, expected)))
        advice += [redownload, space]
    elif actual > expected:
        checks.append(Check("size", "bad", "%d bytes more than the header expects" % (actual - expected)))
        problems.append("the file is %s longer than its header says: something was appended or two downloads were joined" % _mb(actual - expected))
        advice.append(redownload)
    else:
        checks.append(Check("size", "ok", "payload is %s, as the header expects" % _mb(expected)))
    truncated = actual < expected
    if header.compression and actual > 0:
        fh.seek(offset)
        magic = fh.read(8)
        kind = next((k for m, k in _MAGIC.items() if magic.startswith(m)), None)
        if kind is None or kind != header.compression:
            problems.append(
                "the payload is not %s data where the header expects it (this is what makes `%s: stdin: invalid compressed data--format violated`)"
                % (header.compression, header.compression)
            )
            checks.append(Check("compression", "bad", "payload starts with %r, not %s" % (magic[:4], header.compression)))
        else:
            checks.append(Check("compression", "ok", "payload is %s data" % kind))
    bad_sum = _verify_sums(fh, offset, header, checks)
    verified = any(c.status == "ok" and c.name in ("sha256", "md5", "crc") for c in checks)
    # a tar ends in zero blocks: zeros only mean an unfinished download when the sums fail or nothing vouches for them
    if zeros >= ZERO_TAIL_MIN and (bad_sum or (not verified and header.compression)):
        problems.append("the file ends in %s of zero bytes: the download was preallocated and never finished" % _mb(zeros))
        if redownload not in advice:
            advice += [redownload, space]
    if bad_sum and not truncated:
        problems.append("the payload does not match the %s checksum its header declares: the file is corrupt" % bad_sum)
        if redownload not in advice:
            advice.append(redownload)
        advice.append("compare with the checksum NVIDIA publishes beside the download (`md5sum FILE`)")
    ok = not problems and not any(c.status == "bad" for c in checks)
    if ok:
        advice.append(
            "the file is intact. If `sh FILE` still fails while extracting (gzip/tar errors, 'No space left'), the temporary "
            "folder is full: check `df -h /tmp` and run `sh %s --tmpdir=/a/folder/with/space`" % os.path.basename(base["path"])
        )
    return InstallerReport(size=size, kind="makeself", ok=ok, checks=tuple(checks), problems=tuple(problems), advice=tuple(advice), **base, **fields)


FAST_CKSUM_OVER = 8 * 1024 * 1024  # the Python CRC runs at about 6 MB/s; the system's cksum is C


def _system_cksum(fh: BinaryIO, pos: int, length: int) -> Tuple[Optional[str], int]:
    """(CRC, bytes not read) from the system's POSIX ``cksum`` fed the slice; (None, length) when it cannot run."""
    import shutil
    import subprocess

    exe = shutil.which("cksum")
    if exe is None:
        return None, length
    try:
        # bounded: communicate(timeout=60) below; cksum reads its input as fast as it is written
        proc = subprocess.Popen([exe], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    except OSError:
        return None, length
    fh.seek(pos)
    left = length
    try:
        while left > 0:
            block = fh.read(min(CHUNK, left))
            if not block:
                break
            proc.stdin.write(block)
            left -= len(block)
        out, _ = proc.communicate(timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        proc.kill()
        proc.wait()
        return None, length
    words = out.split()
    return (words[0].decode() if proc.returncode == 0 and words else None), left


def _declared(values: Tuple[str, ...], i: int) -> Optional[str]:
    if i < len(values) and values[i].strip("0"):
        return values[i]
    return None


def _verify_sums(fh: BinaryIO, offset: int, header: Header, checks: List[Check]) -> Optional[str]:
    """Verify each archive with its strongest declared sum (SHA-256, else MD5, else CRC), as makeself does."""
    bad = None
    pos = offset
    for i, length in enumerate(header.filesizes):
        sha, md5, crc = _declared(header.shas, i), _declared(header.md5s, i), _declared(header.crcsums, i)
        which = "sha256" if sha else "md5" if md5 else "crc" if crc else None
        if which is None:
            checks.append(Check("checksum", "skipped", "archive %d declares no checksum" % (i + 1)))
            pos += length
            continue
        if which == "crc" and length > FAST_CKSUM_OVER:
            got, left = _system_cksum(fh, pos, length)
        else:
            got, left = None, length
        if got is None:
            hasher = hashlib.sha256() if which == "sha256" else hashlib.md5() if which == "md5" else Cksum()
            fh.seek(pos)
            left = length
            while left > 0:
                block = fh.read(min(CHUNK, left))
                if not block:
                    break
                hasher.update(block)
                left -= len(block)
            got = hasher.hexdigest() if which != "crc" else str(hasher.value())
        want = (sha or md5 or crc).lower()
        if left > 0:
            checks.append(Check(which, "bad", "archive %d is cut short: its %s cannot match" % (i + 1, which)))
            bad = bad or which
        elif got.lower() != want:
            checks.append(Check(which, "bad", "archive %d: %s is %s, the header declares %s" % (i + 1, which, got, want)))
            bad = bad or which
        else:
            checks.append(Check(which, "ok", "archive %d: %s matches" % (i + 1, which)))
        pos += length
    return bad


def render_report(report: InstallerReport) -> str:
    lines = ["%s: %s" % (report.path, "OK, an intact installer" if report.ok else "BAD")]
    what = []
    if report.toolkit_version:
        what.append("CUDA %s" % report.toolkit_version)
    if report.driver_version:
        what.append("driver %s" % report.driver_version)
    if report.platform:
        what.append(report.platform)
    if what:
        lines.append("  for: " + ", ".join(what))
    if report.label:
        lines.append("  label: %s (makeself %s)" % (report.label, report.makeself_version or "?"))
    lines.append("  size: %s" % (_mb(report.size) if report.size < 100000 else "%s (%d bytes)" % (_mb(report.size), report.size)))
    for c in report.checks:
        lines.append("  [%s] %s: %s" % (c.status, c.name, c.message))
    for p in report.problems:
        lines.append("  problem: " + p)
    for a in report.advice:
        lines.append("  what to do: " + a)
    return "\n".join(lines) + "\n"
