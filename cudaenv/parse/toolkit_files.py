"""A toolkit's own files: version.json, version.txt, cuda.h's CUDA_VERSION, a wheel's METADATA and dist-info name,
conda-meta record names, and the small shell wrappers some installs put in front of nvcc.

Samples::

    version.json   {"cuda" : {"name" : "CUDA SDK", "version" : "11.8.20220929"}, "nvidia_driver" : {...}}
    version.txt    CUDA Version 10.2.89
    cuda.h         #define CUDA_VERSION 13000
    METADATA       Name: nvidia-cuda-nvcc, Version: 13.0.88
    dist-info      nvidia_cuda_nvcc-13.0.88.dist-info, nvidia_cuda_nvcc_cu12-12.4.131.dist-info
    conda-meta     cuda-nvcc-12.4.131-0.json

Every version returned is strict (:func:`cudaenv.core.version.parse_version`): ``"12.4$(touch x)"`` or a 60,000-digit
``CUDA_VERSION`` give None; the ``*_raw`` readers return the field as written so the probe can say what it ignored.
Pure, stdlib only (on the ``cudaenv use`` path: ``json`` is imported only for files the quick reading misses).
"""

from __future__ import annotations

from cudaenv.core.lazy import LazyPattern
from cudaenv.core.version_strings import parse_version

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off the `cudaenv use` path
    from typing import Mapping, Optional, Tuple

_VERSION_TXT = LazyPattern(r"CUDA\s+Version\s+(\S+)")
_CUDA_H = LazyPattern(r"(?m)^[ \t]*#[ \t]*define[ \t]+CUDA_VERSION[ \t]+(\d+)\b")
_CUDA_H_RAW = LazyPattern(r"(?m)^[ \t]*#[ \t]*define[ \t]+CUDA_VERSION[ \t]+(\S+)")
_ENV_REF = LazyPattern(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?")


def parse_version_json(text: str) -> Optional[str]:
    """``cuda.version`` of a toolkit's version.json, as written (``12.4.131``, or date-stamped ``12.1.20230222``).

    Sample::

        {"cuda" : {"name" : "CUDA SDK", "version" : "11.8.20220929"}, "nvidia_driver" : {...}}
    """
    return _json_component_version(text, "cuda")


def parse_bundled_driver(text: str) -> Optional[str]:
    """``nvidia_driver.version`` of a version.json: the driver the installer bundled, not the installed one."""
    return _json_component_version(text, "nvidia_driver")


def version_json_raw(text: str) -> Optional[str]:
    """``cuda.version`` of a version.json as written, not checked (for the note when it is not a version)."""
    return _json_component_raw(text, "cuda")


def _json_component_version(text: str, key: str) -> Optional[str]:
    return parse_version(_json_component_raw(text, key))


_JSON_SPACE = " \t\r\n"


def _after(text: str, at: int, char: str) -> int:
    """The index just past ``char`` when it is the next non-space character from ``at``, else -1."""
    n = len(text)
    while at < n and text[at] in _JSON_SPACE:
        at += 1
    return at + 1 if at < n and text[at] == char else -1


def _flat_entry_version(text: str, key: str) -> Optional[str]:
    """``"KEY": {..., "version": "12.4.131", ...}`` read with string scans: version.json files are flat maps of
    components, and neither json nor re is free on the `cudaenv use` path. None for anything less plain."""
    needle = '"%s"' % key
    at = text.find(needle)
    # the next "}" and "{" found so far (-2: not looked for yet), looked for again only once an entry starts past them:
    # the text is scanned a bounded number of times, not once from each occurrence of the key (quadratic)
    close_at = open_at = -2
    while at != -1:
        start = _after(text, at + len(needle), ":")
        start = _after(text, start, "{") if start != -1 else -1
        if start != -1:
            if close_at != -1 and close_at < start:
                close_at = text.find("}", start)
            if close_at == -1:
                break  # no "}" after this entry: none after a later one either
            if open_at != -1 and open_at < start:
                open_at = text.find("{", start)
            if open_at == -1 or open_at > close_at:  # a flat entry, nothing nested in it
                body = text[start:close_at]
                v = body.find('"version"')
                colon = _after(body, v + len('"version"'), ":") if v != -1 else -1
                quote = _after(body, colon, '"') if colon != -1 else -1
                close = body.find('"', quote) if quote != -1 else -1
                if close != -1 and "\\" not in body[quote:close]:
                    return body[quote:close]
        at = text.find(needle, at + 1)
    return None


def _json_component_raw(text: str, key: str) -> Optional[str]:
    if not isinstance(text, str) or ('"%s"' % key) not in text:
        return None
    value = _flat_entry_version(text, key)
    if value is None:  # escapes, nesting, anything unusual: the real JSON reader
        import json

        try:
            data = json.loads(text)
        except (ValueError, RecursionError):
            data = None
        part = data.get(key) if isinstance(data, dict) else None
        if isinstance(part, dict):
            value = part.get("version")
    return value.strip() if isinstance(value, str) else None


def parse_version_txt(text: str) -> Optional[str]:
    """``CUDA Version 10.2.89`` (toolkits up to 11.0) -> ``10.2.89``."""
    if not isinstance(text, str) or "Version" not in text:
        return None
    match = _VERSION_TXT.search(text)
    return parse_version(match.group(1)) if match else None


def parse_cuda_h(text: str) -> Optional[str]:
    """``#define CUDA_VERSION 13000`` in include/cuda.h -> ``13.0`` (12040 -> 12.4, 9020 -> 9.2)."""
    if not isinstance(text, str) or "CUDA_VERSION" not in text:
        return None
    match = _CUDA_H.search(text)
    if not match:
        return None
    from cudaenv.core.version import cuda_from_int  # (a toolkit without version.json: off `use`'s usual path)

    return cuda_from_int(match.group(1))  # 60,000 digits are no version: None


def cuda_h_raw(text: str) -> Optional[str]:
    """The ``CUDA_VERSION`` define of a cuda.h as written, not checked (for the note when it is not a CUDA int)."""
    match = _CUDA_H_RAW.search(text) if isinstance(text, str) and "CUDA_VERSION" in text else None
    return match.group(1) if match else None


def parse_dist_metadata_version(text: str) -> Optional[str]:
    """The ``Version:`` header of a wheel's METADATA."""
    value = _metadata_header(text, "Version:")
    return parse_version(value) if value else None


def parse_dist_metadata_name(text: str) -> Optional[str]:
    """The ``Name:`` header of a wheel's METADATA (``Name: nvidia-cuda-nvcc-cu12``), as written; None without one."""
    return _metadata_header(text, "Name:")


def _metadata_header(text: str, key: str) -> Optional[str]:
    """The first word after the first ``KEY: word`` line (string scans: this is on the `cudaenv use` path)."""
    if not isinstance(text, str):
        return None
    for line in text.split("\n"):
        if line.startswith(key):
            rest = line[len(key):].lstrip(" \t")
            if rest and not rest[0].isspace():
                return rest.split(None, 1)[0]
    return None


def _exec_target(text: str) -> Optional[str]:
    """The program of the first ``exec [-a NAME] PATH`` line whose PATH (bare, or in matching quotes, with no quote
    or space inside) ends in nvcc or nvcc.exe. String scans, not a regular expression: a wrapper on PATH is read on
    every `cudaenv use`, and re costs that path ~10 ms to import."""
    for line in text.split("\n"):
        rest = line.lstrip(" \t")
        if not (rest.startswith("exec") and rest[4:5] in (" ", "\t")):
            continue
        words = rest[5:].split(None, 3)
        if words[:1] == ["-a"]:  # exec -a NAME PATH
            words = words[2:]
        if not words:
            continue
        word = words[0]
        quote = word[0] if word[0] in "\"'" else ""
        if quote:
            if len(word) < 2 or not word.endswith(quote):
                continue
            word = word[1:-1]
        if '"' in word or "'" in word or not (word.endswith("nvcc") or word.endswith("nvcc.exe")):
            continue
        return word
    return None


def parse_wrapper_target(text: str, env: Optional[Mapping[str, str]] = None) -> Optional[str]:
    """The nvcc a small shell wrapper ``exec``s (``exec /usr/local/cuda-13.0/bin/nvcc "$@"``), ``$VAR`` expanded."""
    if not isinstance(text, str) or not text.startswith("#!") or "exec" not in text:
        return None
    target = _exec_target(text)
    if target is None:
        return None
    if "$" in target:
        env = env or {}
        missing = [name for name in _ENV_REF.findall(target) if not env.get(name)]
        if missing:
            return None
        target = _ENV_REF.sub(lambda m: env.get(m.group(1), ""), target)
    return target or None


def parse_dist_info_name(name: str) -> Optional[Tuple[str, Optional[str], Optional[str]]]:
    """``nvidia_cuda_nvcc_cu12-12.4.131.dist-info`` -> ``("nvcc", "12", "12.4.131")``; ``nvidia_cuda_runtime-13.0.96
    .dist-info`` -> ``("runtime", None, "13.0.96")``. The version is None when the name's is not a version; None for
    any other name."""
    if not isinstance(name, str) or len(name) >= 256 or not name.isascii():
        return None
    lower = name.lower()
    if not (lower.startswith("nvidia_cuda_") and lower.endswith(".dist-info")):
        return None
    project, dash, version = name[12:-10].partition("-")
    if not dash or not version or "-" in version:
        return None
    component, _, suffix = project.partition("_")
    if component.lower() not in ("nvcc", "runtime"):
        return None
    if _:
        if not (suffix[:2].lower() == "cu" and 1 <= len(suffix) - 2 <= 3 and suffix[2:].isdigit()):
            return None
        suffix = suffix[2:]
    return component.lower(), (suffix or None), parse_version(version)


def parse_conda_meta_record(name: str) -> Optional[Tuple[str, str, str]]:
    """``pytorch-2.7.1-cuda126_generic_py312_h1234_200.json`` (conda-meta/) -> ``("pytorch", "2.7.1",
    "cuda126_generic_py312_h1234_200")``, the version as written; None when it is not a record name (a package name
    may hold ``-``, its version and build never do) or its version is not a version."""
    if not isinstance(name, str) or not name.endswith(".json") or len(name) > 256:
        return None
    parts = name[:-5].rsplit("-", 2)
    if len(parts) != 3 or not parts[0] or not parse_version(parts[1]):
        return None
    return parts[0], parts[1], parts[2]


def parse_conda_meta_name(name: str) -> Optional[Tuple[str, str]]:
    """``cuda-nvcc-12.4.131-0.json`` (conda-meta/) -> ``("cuda-nvcc", "12.4.131")``, the version normalised; None when
    it is not a record name or its version is not a version."""
    record = parse_conda_meta_record(name)
    return (record[0], parse_version(record[1])) if record is not None else None
