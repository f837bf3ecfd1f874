"""What pip prints, read: ``pip index versions NAME`` and the JSON of ``pip install --dry-run --report FILE``.

Pure: text in, values out; never raises for any input (a broken report is ``()``).

``pip index versions cuda-toolkit`` sample::

    cuda-toolkit (13.5.0)
    Available versions: 13.5.0, 13.4.3, 13.4.2, 13.4.1.0, 13.0.2, 12.9.1, 11.8.0

``--report`` sample (abridged; pip's installation report, version 1)::

    {"version": "1", "install": [{"metadata": {"name": "nvidia-cuda-nvcc", "version": "13.0.88",
      "requires_dist": [...]}, "download_info": {"url": ".../nvidia_cuda_nvcc-13.0.88-py3-none-....whl",
      "archive_info": {"hashes": {"sha256": "..."}}}, "requested_extras": null}, ...]}
"""

from __future__ import annotations

from typing import Optional, Tuple

from cudaenv.model.record import Record
from cudaenv.core.version import parse_version

MAX_REPORT = 8 * 1024 * 1024  # a report of a few packages is a few hundred KB (requires_dist lists)
MAX_ITEMS = 500
_HEX = frozenset("0123456789abcdef")


class ReportItem(Record):
    """One distribution pip would install: its name, version, the file it would fetch and that file's sha256."""

    name: str
    version: str
    filename: str
    url: str
    sha256: Optional[str] = None
    requires_dist: Tuple[str, ...] = ()
    requested_extras: Tuple[str, ...] = ()


def parse_index_versions(text: object) -> Tuple[str, ...]:
    """The versions of ``pip index versions`` (newest first, as pip lists them); ``()`` when there are none.

    Entries that are not plain versions (``13.0.0rc1``, anything odd) are dropped."""
    if not isinstance(text, str):
        return ()
    for line in text[:MAX_REPORT].splitlines():
        head, sep, rest = line.partition(":")
        if sep and head.strip() == "Available versions":
            out = []
            for part in rest.split(",")[:5000]:
                version = parse_version(part)
                if version and version not in out:
                    out.append(version)
            return tuple(out)
    return ()


def _sha256(value: object) -> Optional[str]:
    if isinstance(value, str) and len(value) == 64 and _HEX.issuperset(value.lower()):
        return value.lower()
    return None


def _strings(value: object, limit: int = 2000) -> Tuple[str, ...]:
    if not isinstance(value, list):
        return ()
    return tuple(v[:1000] for v in value[:limit] if isinstance(v, str))


def parse_install_report(text: object) -> Tuple[ReportItem, ...]:
    """The ``install`` list of pip's ``--report`` JSON; ``()`` for anything that is not one."""
    import json

    from cudaenv.parse.index_pages import json_depth_within

    if not isinstance(text, str) or len(text) > MAX_REPORT or not json_depth_within(text):
        return ()
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return ()
    items = data.get("install") if isinstance(data, dict) else None
    if not isinstance(items, list):
        return ()
    out = []
    for item in items[:MAX_ITEMS]:
        if not isinstance(item, dict):
            continue
        meta = item.get("metadata") if isinstance(item.get("metadata"), dict) else {}
        info = item.get("download_info") if isinstance(item.get("download_info"), dict) else {}
        name, version, url = meta.get("name"), meta.get("version"), info.get("url")
        if not (isinstance(name, str) and isinstance(version, str) and isinstance(url, str)):
            continue
        if not (0 < len(name) <= 200 and 0 < len(version) <= 100 and 0 < len(url) <= 4096):
            continue
        archive = info.get("archive_info") if isinstance(info.get("archive_info"), dict) else {}
        hashes = archive.get("hashes") if isinstance(archive.get("hashes"), dict) else {}
        sha = _sha256(hashes.get("sha256"))
        if sha is None and isinstance(archive.get("hash"), str) and archive["hash"].startswith("sha256="):
            sha = _sha256(archive["hash"][7:])
        filename = url.split("#", 1)[0].split("?", 1)[0].rsplit("/", 1)[-1]
        out.append(ReportItem(name, version, filename, url, sha, _strings(meta.get("requires_dist")),
                              _strings(item.get("requested_extras"), 50)))
    return tuple(out)
