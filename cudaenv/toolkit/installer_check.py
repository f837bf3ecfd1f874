"""Check a downloaded CUDA ``.run`` installer without running it.

CUDA and driver ``.run`` files are makeself self-extracting archives: a shell-script header, then the
compressed payload. The header declares what the payload must be (its fields, with a sample, are
:mod:`cudaenv.parse.makeself`'s docstring).

:mod:`cudaenv.parse.makeself` reads those fields (pure); ``check_installer`` finds the payload after the header's lines,
compares its size with ``filesizes`` (a truncated download), verifies SHA-256, MD5 or makeself's CRC
(POSIX ``cksum``, implemented here) the way makeself itself does (the strongest declared one), and
recognises an HTML/XML error page or an empty or zero-filled file saved under the installer's name.
The file is only ever read (a regular file only: a FIFO or device is refused), never executed; the header is
read bounded (its first MB), and a file of 200,000 archives gives 21 checks. An archive that declares no checksum
is ``unverified``, never "intact". Rendering is :mod:`cudaenv.render.installer`.
"""

import hashlib
import os
import re
from typing import TYPE_CHECKING, BinaryIO, List, Optional, Tuple

from cudaenv.host.files import open_regular
from cudaenv.model.record import Record
from cudaenv.parse.makeself import Header, label_versions, looks_like_makeself, parse_file_name, parse_header, payload_offset
from cudaenv.core.i18n import M

if TYPE_CHECKING:
    from cudaenv.host import Host

HEADER_LIMIT = 1024 * 1024  # a makeself header is a few hundred lines (a CUDA 12 one: about 25 KB)
CHUNK = 4 * 1024 * 1024
ZERO_TAIL_MIN = 512
MAX_LISTED = 20  # archives listed one by one; the rest are summed up in one check
CKSUM_RATE = 50e6  # bytes a second the system's cksum is given on top of the host's timeout

# Bounded, and no '<' inside: a page of 200,000 `<title` is read in one pass
_TITLE = re.compile(r"<title\b[^<>]{0,200}>([^<]{0,1000})</title", re.I)
_CODE = re.compile(r"<Code>([^<]{0,200})</Code>")
_MAGIC = {b"\x1f\x8b": "gzip", b"\xfd7zXZ\x00": "xz", b"BZh": "bzip2", b"\x28\xb5\x2f\xfd": "zstd", b"\x89LZO": "lzo", b"\x04\x22\x4d\x18": "lz4"}

__all__ = ["Check", "Cksum", "Header", "InstallerReport", "check_installer", "cksum", "looks_like_makeself", "parse_file_name",
           "parse_header"]


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


# ------------------------------------------------------------------------------------ the check


class Check(Record):
    name: str  # size | sha256 | md5 | crc | checksum | compression | name | header
    status: str  # ok | bad | skipped
    message: str


VERDICTS = ("ok", "bad", "unverified")  # unverified: nothing wrong found, but no checksum vouches for the content


class InstallerReport(Record):
    """``cudaenv check-installer --json``."""

    _json_envelope = True

    path: str
    size: int
    kind: str  # makeself | html | empty | zeros | not-makeself
    ok: bool  # verdict == "ok": intact and verified by a checksum
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
    verdict: str = "bad"
    archives: int = 0  # archives the header declares (checks lists at most MAX_LISTED of them one by one)

    @property
    def exit_code(self) -> int:
        """0: intact and verified; 3: nothing wrong found but no checksum to verify with; 1: bad."""
        return VERDICT_EXIT.get(self.verdict, 1)


VERDICT_EXIT = {"ok": 0, "bad": 1, "unverified": 3}  # `cudaenv check-installer`'s exit code by verdict


def mb(n: int) -> str:
    return "%.1f MB" % (n / 1e6) if n >= 100000 else "%d bytes" % n



def _html_title(head: bytes) -> Optional[str]:
    text = head.decode("utf-8", "replace")
    m = _TITLE.search(text)
    if m:
        return " ".join(m.group(1).split())[:120]
    m = _CODE.search(text)
    return m.group(1).strip() if m else None


def _is_markup(head: bytes) -> bool:
    start = head.lstrip()[:200].lower()
    return start.startswith((b"<!doctype html", b"<html", b"<?xml", b"<head", b"<body", b"<error")) or (
        not head.startswith(b"#!") and b"<html" in head[:4096].lower()
    )


def _zero_tail(fh: BinaryIO, size: int) -> int:
    """How many bytes at the end of the file are zeros (a preallocated, unfinished download). Each block is read into
    one buffer and compared with a block of zeros (a memcmp); only the block where the zeros end is scanned."""
    count, pos = 0, size
    buffer = bytearray(min(CHUNK, size))
    zeros = bytes(len(buffer))
    while pos > 0:
        step = min(CHUNK, pos)
        fh.seek(pos - step)
        view = memoryview(buffer)[:step]
        got = fh.readinto(view)
        if got == len(buffer) and buffer == zeros:  # bytearray == bytes: one memcmp (a memoryview compares bytewise)
            count += step
            pos -= step
            continue
        data = bytes(view[:got])
        stripped = data.rstrip(b"\x00")
        count += len(data) - len(stripped)
        if stripped:
            break
        pos -= step
    return count


def check_installer(path: str, host: "Optional[Host]" = None) -> InstallerReport:
    """Read ``path`` (never run it) and say whether it is an intact makeself installer.

    ``host``: runs the system's ``cksum`` for large CRC-only archives (bounded by its timeout); without one the CRC
    is computed here. Raises OSError when the file cannot be opened or is not a regular file (a FIFO never blocks).
    """
    names = parse_file_name(os.path.basename(path))
    base = dict(path=path, toolkit_version=names["toolkit"], driver_version=names["driver"], platform=names["platform"])
    redownload = M("download the installer again (resume a cut download with `wget -c URL` or `curl -C - -O URL`)")
    space = M("check the free space where you saved it (`df -h %s`): a full disk cuts downloads short", os.path.dirname(os.path.abspath(path)))
    with open_regular(path) as fh:
        size = os.fstat(fh.fileno()).st_size
        if size == 0:
            return InstallerReport(size=0, kind="empty", ok=False, problems=(M("the file is empty"),), advice=(redownload, space), **base)
        head = fh.read(HEADER_LIMIT)
        if not head.strip(b"\x00"):
            zeros = _zero_tail(fh, size)
            if zeros == size:
                return InstallerReport(
                    size=size, kind="zeros", ok=False, problems=(M("the file holds only zero bytes: the download never wrote its data"),),
                    advice=(redownload, space), **base
                )
        if _is_markup(head):
            title = _html_title(head)
            problem = M("this is a web page, not an installer%s", ": %r" % title if title else "")
            return InstallerReport(
                size=size, kind="html", ok=False, problems=(problem,),
                advice=(
                    M("the download link answered with an error or login page; download the .run file again from "
                    "developer.nvidia.com (in a browser, or with `wget URL` so redirects are followed)"),
                ),
                **base,
            )
        text = head.decode("latin-1")
        if not looks_like_makeself(text):
            return InstallerReport(
                size=size, kind="not-makeself", ok=False,
                problems=(M("the file does not start with a makeself self-extracting header"),),
                advice=(redownload,), **base
            )
        header = parse_header(text)
        return _check_makeself(fh, size, head, header, base, redownload, space, host)


def _damaged(size: int, base: dict, fields: dict, checks: List[Check], problem: str, redownload: str) -> InstallerReport:
    return InstallerReport(size=size, kind="makeself", ok=False, checks=tuple(checks), problems=(problem,), advice=(redownload,),
                           archives=fields.pop("archives", 0), **base, **fields)


def _check_makeself(fh: BinaryIO, size: int, head: bytes, header: Header, base: dict, redownload: str, space: str,
                    host: "Optional[Host]") -> InstallerReport:
    checks: List[Check] = []
    problems: List[str] = []
    advice: List[str] = []
    versions = label_versions(header.label)
    if base["toolkit_version"] is None and versions:
        base = dict(base, toolkit_version=versions[0])
    elif base["toolkit_version"] and versions and not any(v.startswith(base["toolkit_version"][:4]) for v in versions):
        checks.append(Check("name", "bad", M("the file name says %s but the header's label says %r: the file was renamed?", base["toolkit_version"], header.label)))
    fields = dict(makeself_version=header.makeself_version, label=header.label, header_lines=header.skip_lines, archives=len(header.filesizes))
    if header.bad_numbers:
        return _damaged(size, base, fields, checks, M("the makeself header's %s is not a number: it is damaged", " and ".join(header.bad_numbers)), redownload)
    if header.skip_lines is None or not header.filesizes:
        missing = "skip/head -n" if header.skip_lines is None else "filesizes"
        return _damaged(size, base, fields, checks, M("the makeself header has no %s field: it is damaged", missing), redownload)
    offset = payload_offset(head, header.skip_lines, complete=len(head) >= size)
    if offset is None:
        return _damaged(size, base, fields, checks, M("the makeself header says its script is %d lines long, but those lines run past the "
                        "first %s of the file: the header is damaged", header.skip_lines, mb(HEADER_LIMIT)), redownload)
    expected = header.totalsize if header.totalsize is not None else sum(header.filesizes)
    actual = size - offset
    fields.update(payload_offset=offset, expected_payload=expected, actual_payload=actual)
    zeros = _zero_tail(fh, size)
    if actual < expected:
        problems.append(M("the download is incomplete: %s of %s of payload (%s missing)", mb(actual), mb(expected), mb(expected - actual)))
        checks.append(Check("size", "bad", M("payload %d bytes, header expects %d", actual, expected)))
        advice += [redownload, space]
    elif actual > expected:
        checks.append(Check("size", "bad", M("%d bytes more than the header expects", actual - expected)))
        problems.append(M("the file is %s longer than its header says: something was appended or two downloads were joined", mb(actual - expected)))
        advice.append(redownload)
    else:
        checks.append(Check("size", "ok", M("payload is %s, as the header expects", mb(expected))))
    truncated = actual < expected
    if header.compression and actual > 0:
        fh.seek(offset)
        magic = fh.read(8)
        kind = next((k for m, k in _MAGIC.items() if magic.startswith(m)), None)
        if kind is None or kind != header.compression:
            problems.append(
                M("the payload is not %s data where the header expects it (this is what makes `%s: stdin: invalid compressed data--format violated`)", header.compression, header.compression)
            )
            checks.append(Check("compression", "bad", M("payload starts with %r, not %s", magic[:4], header.compression)))
        else:
            checks.append(Check("compression", "ok", M("payload is %s data", kind)))
    sums = _verify_sums(fh, base["path"], offset, header, host)
    checks += _list_sums(sums)
    bad_sum = next((which for _, which, status, _ in sums if status == "bad"), None)
    verified = any(status == "ok" for _, _, status, _ in sums)
    unverified = [i for i, _, status, _ in sums if status == "skipped"]
    # a tar ends in zero blocks: zeros only mean an unfinished download when the sums fail or nothing vouches for them
    if zeros >= ZERO_TAIL_MIN and (bad_sum or (not verified and header.compression)):
        problems.append(M("the file ends in %s of zero bytes: the download was preallocated and never finished", mb(zeros)))
        if redownload not in advice:
            advice += [redownload, space]
    if bad_sum and not truncated:
        problems.append(M("the payload does not match the %s checksum its header declares: the file is corrupt", bad_sum))
        if redownload not in advice:
            advice.append(redownload)
        advice.append(M("compare with the checksum NVIDIA publishes beside the download (`md5sum FILE`)"))
    name = os.path.basename(base["path"])
    if problems or any(c.status == "bad" for c in checks):
        verdict = "bad"
    elif unverified:
        verdict = "unverified"
        which = M("its archive") if len(sums) == 1 else M("%d of its %d archives", len(unverified), len(sums))
        problems.append(M("the header declares no checksum for %s: its size and format are right, but the content could not be "
                        "verified", which))
        advice.append(M("compare the file with the checksum NVIDIA publishes beside the download (`md5sum %s` or `sha256sum %s`)", name, name))
    else:
        verdict = "ok"
    if verdict != "bad":
        if verdict == "ok":
            advice.append(M("the file is intact. If `sh FILE` still fails while extracting (gzip/tar errors, 'No space left'), "
                            "the temporary folder is full: check `df -h /tmp` and run `sh %s --tmpdir=/a/folder/with/space`", name))
        else:
            advice.append(M("if `sh FILE` still fails while extracting (gzip/tar errors, 'No space left'), the temporary "
                            "folder is full: check `df -h /tmp` and run `sh %s --tmpdir=/a/folder/with/space`", name))
    return InstallerReport(size=size, kind="makeself", ok=verdict == "ok", verdict=verdict, checks=tuple(checks), problems=tuple(problems),
                           advice=tuple(advice), archives=fields.pop("archives"), **base, **fields)


FAST_CKSUM_OVER = 8 * 1024 * 1024  # the Python CRC runs at about 6 MB/s; the system's cksum is C
PY_CRC_MAX = 256 * 1024 * 1024  # beyond this the built-in CRC would take minutes: the archive stays unverified
_CKSUM_SLICE = 'tail -c +"$1" "$2" | head -c "$3" | cksum'  # the file and numbers are arguments, never shell text


def _system_cksum(host: "Host", path: str, pos: int, length: int) -> Optional[str]:
    """The POSIX CRC of ``length`` bytes at ``pos`` from the system's ``cksum``, run through the host's runner (its
    timeout, plus time for the size, kills the whole pipeline); None when it did not give one."""
    argv = ["sh", "-c", _CKSUM_SLICE, "cudaenv-cksum", str(pos + 1), os.path.abspath(path), str(length)]
    res = host.run(argv, timeout=host.timeout + length / CKSUM_RATE)
    words = res.stdout.split() if res.ok else []
    if len(words) >= 2 and words[0].isdigit() and words[1] == str(length) and len(words[0]) <= 10:
        return words[0]
    return None


def _declared(values: Tuple[str, ...], i: int) -> Optional[str]:
    if i < len(values) and values[i].strip("0"):
        return values[i]
    return None


def _verify_sums(fh: BinaryIO, path: str, offset: int, header: Header, host: "Optional[Host]") -> List[Tuple[int, str, str, str]]:
    """(archive number, which sum, ok|bad|skipped, message) for each archive, checked with its strongest declared sum
    (SHA-256, else MD5, else CRC), as makeself does."""
    out = []
    pos = offset
    for i, length in enumerate(header.filesizes):
        n = i + 1
        sha, md5, crc = _declared(header.shas, i), _declared(header.md5s, i), _declared(header.crcsums, i)
        which = "sha256" if sha else "md5" if md5 else "crc" if crc else None
        if which is None:
            out.append((n, "checksum", "skipped", M("archive %d declares no checksum", n)))
            pos += length
            continue
        got = None
        if which == "crc" and length > FAST_CKSUM_OVER and host is not None:
            got = _system_cksum(host, path, pos, length)
        left = 0
        if got is None:
            if which == "crc" and length > PY_CRC_MAX:
                out.append((n, "crc", "skipped", M("archive %d: the system's cksum gave no answer, and the built-in CRC of %s would "
                            "take minutes: not checked", n, mb(length))))
                pos += length
                continue
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
            out.append((n, which, "bad", M("archive %d is cut short: its %s cannot match", n, which)))
        elif got.lower() != want:
            out.append((n, which, "bad", M("archive %d: %s is %s, the header declares %s", n, which, got, want)))
        else:
            out.append((n, which, "ok", M("archive %d: %s matches", n, which)))
        pos += length
    return out


def _list_sums(sums: List[Tuple[int, str, str, str]]) -> List[Check]:
    """The first MAX_LISTED archives one by one; the rest as one check with the counts (200,000 archives are 21 lines)."""
    listed = [Check(which, status, message) for _, which, status, message in sums[:MAX_LISTED]]
    rest = sums[MAX_LISTED:]
    if rest:
        count = {s: sum(1 for _, _, status, _ in rest if status == s) for s in ("ok", "bad", "skipped")}
        bad = [n for n, _, status, _ in rest if status == "bad"]
        parts = ["%d match" % count["ok"]] if count["ok"] else []
        if count["bad"]:
            parts.append(M("%d do not (archive %s%s)", count["bad"], ", ".join(str(n) for n in bad[:5]), ", ..." if len(bad) > 5 else ""))
        if count["skipped"]:
            parts.append(M("%d not checked", count["skipped"]))
        status = "bad" if count["bad"] else "skipped" if count["skipped"] else "ok"
        listed.append(Check("checksum", status, M("archives %d-%d: %s", rest[0][0], rest[-1][0], ", ".join(parts))))
    return listed
