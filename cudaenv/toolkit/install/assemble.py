"""NVIDIA's CUDA 13 wheels -> one toolkit folder laid out like the runfile's.

Every CUDA 13 component wheel unpacks into ``nvidia/cu13/{bin,include,lib,nvvm}``; that prefix is stripped, so the
five wheels make ``bin/``, ``include/``, ``lib/`` and ``nvvm/`` (and ``--components`` wheels add to ``lib/`` and
``include/``; cuDNN's ``nvidia/cudnn/{include,lib}`` is laid into the same two). Wheels hold no symlinks, so :func:`fix_layout` adds
what a normal toolkit has and nvcc, CMake and linkers look for (toolkit-wheels facts): ``lib64 -> lib``,
``targets/<arch>-linux/{include,lib}`` (nvcc.profile's ``-I``/``-L``; without them ``cannot find -lcudadevrt``),
and ``libX.so -> libX.so.N`` for each versioned library (``libcudart.so``, ``libnvvm.so``).

Unpacking is bounded and refuses what a wheel must never hold: an absolute or ``..`` member name, a symlink
member, a member larger than :data:`MAX_MEMBER` or a wheel past :data:`MAX_TOTAL` unpacked, two wheels with
different files at one path. Files are created new (``O_EXCL``, no link followed); ``bin/`` and ``nvvm/bin/`` get
exec bits (``zipfile`` keeps none).
"""

from __future__ import annotations

import json
import os
import stat
from typing import Dict, Optional, Sequence, Tuple

from cudaenv.core.i18n import M

MAX_MEMBER = 1024 * 1024 * 1024  # nvvm's libnvvm is ~100 MB, nvcc's cicc ~ 70 MB
MAX_TOTAL = 8 * 1024 * 1024 * 1024  # all wheels of a release, unpacked (13.0: 271 MB; 13.5: 347 MB)
MAX_MEMBERS = 50000  # 13.0's five wheels hold 1,867 files
EXEC_DIRS = ("bin/", "nvvm/bin/")
# version.json's component keys (the runfile's names) by wheel project
VERSION_KEYS = {"nvidia-cuda-nvcc": "cuda_nvcc", "nvidia-cuda-runtime": "cuda_cudart", "nvidia-cuda-cccl": "cuda_cccl",
                "nvidia-cuda-crt": "cuda_crt", "nvidia-nvvm": "libnvvm"}
LIBRARY_FOLDERS = ("cudnn",)  # wheels below nvidia/<folder>/{include,lib} (data/toolkit_install.json's cudnn row)
ARCH_DIRS = {"x86_64": "x86_64-linux", "amd64": "x86_64-linux", "aarch64": "sbsa-linux", "arm64": "sbsa-linux"}
COPY_CHUNK = 1024 * 1024


class AssembleError(Exception):
    """A wheel that cannot be unpacked safely, or a tree that cannot be written; the message is one line."""


def _member_path(name: str) -> Optional[str]:
    """The member's path below ``nvidia/cuNN/`` (None: not part of the toolkit tree). Raises for unsafe names."""
    if not name or "\x00" in name or "\\" in name or name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        raise AssembleError(M("refused member name %r (absolute or odd)", name[:120]))
    parts = name.split("/")
    if ".." in parts:
        raise AssembleError(M("refused member name %r (it climbs out with ..)", name[:120]))
    if len(parts) < 3 or parts[0] != "nvidia" or not ((parts[1].startswith("cu") and parts[1][2:].isdigit())
                                                      or parts[1] in LIBRARY_FOLDERS):
        return None  # dist-info, nvidia/__init__.py: not part of the toolkit
    rel = "/".join(p for p in parts[2:] if p not in ("", "."))
    if not rel or rel.startswith(".metadata/") or "__pycache__" in parts or parts[-1] == "__init__.py":
        return None
    return rel


def unpack_wheel(wheel: str, dest: str, seen: Dict[str, Tuple[int, int]], total: list) -> int:
    """Unpack the toolkit part of ``wheel`` into ``dest``; returns the number of files written.

    ``seen``: rel path -> (size, crc) of files already written by other wheels (the same file twice is fine);
    ``total``: a one-item list counting the bytes written (bounded by :data:`MAX_TOTAL`)."""
    import zipfile

    try:
        zf = zipfile.ZipFile(wheel)
    except (zipfile.BadZipFile, OSError) as exc:
        raise AssembleError(M("%s is not a readable wheel (%s)", os.path.basename(wheel), exc)) from None
    written = 0
    with zf:
        infos = zf.infolist()
        if len(infos) > MAX_MEMBERS:
            raise AssembleError(M("%s has %d members, more than a toolkit wheel holds", os.path.basename(wheel), len(infos)))
        for info in infos:
            rel = _member_path(info.filename)
            mode = (info.external_attr >> 16) & 0xFFFF
            if stat.S_ISLNK(mode):
                raise AssembleError(M("refused member %r of %s: a symlink", info.filename[:120], os.path.basename(wheel)))
            if rel is None or info.is_dir():
                continue
            if info.file_size > MAX_MEMBER:
                raise AssembleError(M("refused member %r: %d bytes unpacked", info.filename[:120], info.file_size))
            if rel in seen:
                if seen[rel] == (info.file_size, info.CRC):
                    continue
                raise AssembleError(M("two wheels hold different files at %s", rel))
            total[0] += info.file_size
            if total[0] > MAX_TOTAL:
                raise AssembleError(M("the wheels unpack to more than %d GiB", MAX_TOTAL >> 30))
            target = os.path.join(dest, *rel.split("/"))
            os.makedirs(os.path.dirname(target), exist_ok=True)
            executable = rel.startswith(EXEC_DIRS) or bool(mode & 0o111)
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0),
                         0o755 if executable else 0o644)
            size = 0
            with os.fdopen(fd, "wb") as out, zf.open(info) as src:
                while True:
                    chunk = src.read(COPY_CHUNK)
                    if not chunk:
                        break
                    size += len(chunk)
                    if size > info.file_size:
                        raise AssembleError(M("member %r is longer than its header says", info.filename[:120]))
                    out.write(chunk)
            seen[rel] = (info.file_size, info.CRC)
            written += 1
    return written


def _link(dest: str, name: str, target: str) -> None:
    path = os.path.join(dest, name)
    if not os.path.lexists(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        os.symlink(target, path)


def fix_layout(dest: str, machine: str) -> Tuple[str, ...]:
    """Add the links a normal toolkit has; returns them (``lib64``, ``targets/x86_64-linux/include``, ...)."""
    made = []
    arch = ARCH_DIRS.get((machine or "").lower(), "x86_64-linux")
    if os.path.isdir(os.path.join(dest, "lib")):
        _link(dest, "lib64", "lib")
        made.append("lib64")
    for sub in ("include", "lib"):
        if os.path.isdir(os.path.join(dest, sub)):
            _link(dest, "targets/%s/%s" % (arch, sub), "../../%s" % sub)
            made.append("targets/%s/%s" % (arch, sub))
    lib = os.path.join(dest, "lib")
    names = sorted(os.listdir(lib)) if os.path.isdir(lib) else []
    for name in names:
        base, sep, rest = name.partition(".so.")
        if sep and rest and (base + ".so") not in names and os.path.isfile(os.path.join(lib, name)):
            # the shortest versioned name wins: libcudart.so -> libcudart.so.13
            versions = sorted((n for n in names if n.startswith(base + ".so.")), key=len)
            if versions[0] == name:
                _link(dest, "lib/%s.so" % base, name)
                made.append("lib/%s.so" % base)
    return tuple(made)


def version_json(release: str, components: Sequence) -> str:
    """The toolkit's ``version.json`` (the runfile's shape): ``cuda`` is the release, one entry per component."""
    data = {"cuda": {"name": "CUDA SDK", "version": release}}
    from cudaenv.toolkit.install.repos import row

    keys = dict(VERSION_KEYS, **row("components")["version_keys"])
    for comp in components:
        key = keys.get(comp.name, comp.name.replace("-", "_"))
        data[key] = {"name": comp.name, "version": comp.version}
    return json.dumps(data, indent=3, sort_keys=True) + "\n"


def marker(release: str, components: Sequence, source: str, cudaenv_version: str, extras: Sequence[str] = ()) -> str:
    """The marker file (written last): what was installed, from which files; ``extras``: the ``--components`` given."""
    return json.dumps({"installer": "cudaenv", "cudaenv_version": cudaenv_version, "release": release, "source": source,
                       "extras": list(extras),
                       "components": [{"name": c.name, "version": c.version, "file": c.filename, "sha256": c.sha256}
                                      for c in components]}, indent=1, sort_keys=True) + "\n"
