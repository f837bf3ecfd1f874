"""A makeself self-extracting archive's header (CUDA and driver ``.run`` files) -> the fields it declares.

The header is a shell script; makeself writes its facts as assignments on lines of their own::

    #!/bin/sh
    # This script was generated using Makeself 2.4.5
    CRCsum="3065975105"
    MD5="e43b951684d106537df5d4ae1eab0398"
    SHA="d36c11c9...81b"                    (makeself 2.4+ with --sha256; zeros when absent)
    label="CUDA Toolkit 12.1.0"
    filesizes="166"                         (one size per appended archive)
    totalsize="166"                         (2.4+)
    skip="715"                              (header lines; makeself 2.1 writes `head -n 403 "$1"` instead)

* :func:`looks_like_makeself`  the start of a file (latin-1 text) is a makeself header
* :func:`parse_header`         the fields (absent ones None/empty)
* :func:`payload_offset`       where the payload starts: after the header's ``skip`` lines, found in the bytes read
* :func:`parse_file_name`      versions and platform from ``cuda_12.1.0_530.30.02_linux.run`` or
  ``NVIDIA-Linux-x86_64-550.54.15.run``

Pure, never raises, linear in its input: numbers are at most ``MAX_DIGITS`` ASCII digits (a 5000-digit size
is no size), every pattern is anchored at a line start or bounded.
"""

import re
from typing import Dict, NamedTuple, Optional, Tuple

from cudaenv.parse._lines import is_uint

MAX_DIGITS = 18  # a size, line count or CRC beyond this is garbage, not a number
HEAD = 4096  # the "generated using Makeself" line is in the first lines

_VERSION = re.compile(r"generated using Makeself ([^\s\"'`$]{1,40})")
_HEAD_N = re.compile(r'head -n (\d{1,18}) "?\$[01]')
_NAME = re.compile(r"cuda_(\d{1,4}\.\d{1,4}(?:\.\d{1,4})?)_(\d{1,4}\.\d{1,4}(?:\.\d{1,4})?)_(linux(?:_[a-z0-9]{1,20})?|windows)", re.IGNORECASE)
_DRIVER_NAME = re.compile(r"NVIDIA-Linux-([a-z0-9_]{1,20})-(\d{1,4}\.\d{1,4}(?:\.\d{1,4})?)", re.IGNORECASE)
_DECOMPRESS = (("gzip -cd", "gzip"), ("pigz -cd", "gzip"), ("xz -d", "xz"), ("zstd -d", "zstd"), ("bzip2 -d", "bzip2"),
               ("lz4 -d", "lz4"), ("lzop -d", "lzo"))


class Header(NamedTuple):
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
    bad_numbers: Tuple[str, ...] = ()  # fields whose value is not a number: "filesizes", "skip", ...


def _fields(text: str) -> Dict[str, str]:
    """``NAME="value"`` / ``NAME='value'`` assignments at line starts (the first of each name)."""
    out: Dict[str, str] = {}
    for line in text.split("\n"):
        eq = line.find("=")
        if eq <= 0 or eq > 40:
            continue
        name, rest = line[:eq], line[eq + 1:]
        if not name.isidentifier() or name in out or len(rest) < 2 or rest[0] not in "\"'":
            continue
        close = rest.find(rest[0], 1)
        if close > 0:
            out[name] = rest[1:close]
    return out


def _number(value: Optional[str]) -> Optional[int]:
    return int(value) if value is not None and is_uint(value, MAX_DIGITS) else None


def looks_like_makeself(text: str) -> bool:
    if not isinstance(text, str) or not text.startswith("#!"):
        return False
    return "Makeself" in text[:HEAD] or ("filesizes=" in text and ("CRCsum=" in text or "MD5=" in text))


def parse_header(text: str) -> Header:
    """The fields a makeself header declares (absent ones None/empty). Any text in, no exception out."""
    if not isinstance(text, str):
        return Header()
    fields = _fields(text)
    bad = []
    sizes = []
    for word in fields.get("filesizes", "").split():
        if is_uint(word, MAX_DIGITS):
            sizes.append(int(word))
        elif "filesizes" not in bad:
            bad.append("filesizes")
    total = _number(fields.get("totalsize"))
    if total is None and fields.get("totalsize"):
        bad.append("totalsize")
    skip = _number(fields.get("skip"))
    if skip is None and fields.get("skip"):
        bad.append("skip")
    if skip is None:
        m = _HEAD_N.search(text)
        skip = int(m.group(1)) if m else None
    version = _VERSION.search(text[:HEAD])
    compression = next((kind for needle, kind in _DECOMPRESS if needle in text), None)
    return Header(
        makeself_version=version.group(1) if version else None,
        label=fields.get("label"),
        filesizes=tuple(sizes),
        totalsize=total,
        crcsums=tuple(fields.get("CRCsum", "").split()),
        md5s=tuple(fields.get("MD5", "").split()),
        shas=tuple(fields.get("SHA", "").split()),
        skip_lines=skip,
        compression=compression,
        script=fields.get("script"),
        bad_numbers=tuple(bad),
    )


def payload_offset(head: bytes, skip_lines: int, complete: bool) -> Optional[int]:
    """The byte offset after the first ``skip_lines`` lines of ``head`` (the first bytes of the file).

    ``complete``: ``head`` is the whole file, so running out of lines puts the payload at its end (what ``tail``
    does, an empty payload); otherwise running out of lines means the header's count points past the bytes read
    (into the payload: a damaged header), and the answer is None. Never reads ``skip_lines`` when it is huge.
    """
    if not isinstance(head, (bytes, bytearray)) or not isinstance(skip_lines, int) or skip_lines < 0:
        return None
    pos = 0
    for _ in range(skip_lines):
        nl = head.find(b"\n", pos)
        if nl < 0:
            return len(head) if complete else None
        pos = nl + 1
    return pos


def parse_file_name(name: str) -> Dict[str, Optional[str]]:
    """Toolkit/driver versions and platform from ``cuda_12.1.0_530.30.02_linux.run`` or ``NVIDIA-Linux-x86_64-550.54.15.run``."""
    name = name if isinstance(name, str) else ""
    m = _NAME.search(name)
    if m:
        return {"toolkit": m.group(1), "driver": m.group(2), "platform": m.group(3).lower()}
    m = _DRIVER_NAME.search(name)
    if m:
        return {"toolkit": None, "driver": m.group(2), "platform": "linux_" + m.group(1).lower()}
    return {"toolkit": None, "driver": None, "platform": None}


_LABEL_VERSION = re.compile(r"(?<![\d.])(\d{1,4}\.\d{1,4}(?:\.\d{1,4})?)")


def label_versions(label: Optional[str]) -> Tuple[str, ...]:
    """The versions written in a header's ``label`` (``CUDA Toolkit 12.1.0`` -> ``("12.1.0",)``), at most 8."""
    if not isinstance(label, str):
        return ()
    return tuple(_LABEL_VERSION.findall(label[:1000]))[:8]
