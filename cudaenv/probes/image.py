"""A container image read without running it or pulling it (``doctor --image REF``): a ``docker save`` tarball, an OCI
layout folder, ``docker image inspect`` output or a config blob saved as JSON.

Nothing is extracted: the outer tarball and every layer are read as streams (gzip layers decompressed as they stream,
never to disk), only small regular files are kept (a toolkit's ``version.json``), and only names are looked at
otherwise (torch's ``dist-info`` folder). Each read is capped (:data:`LIMITS`); what a cap left unread is a note.
Layers are applied in order with their whiteouts (``.wh.NAME``, ``.wh..wh..opq``), so a torch a later layer removed
is not reported. An OCI blob is opened only by its digest's hex under ``blobs/sha256``, never through a link.
"""

import os
import re
import tarfile
from typing import Dict, List, Optional, Tuple

from cudaenv.model.reports import ImageFacts
from cudaenv.core.i18n import M, join
from cudaenv.parse import image as p
from cudaenv.parse.toolkit_files import parse_version_json
from cudaenv.probes.site_packages import SITE_DIRS

# The caps: JSON documents, small files kept, layers, members per layer, bytes streamed through all layers.
LIMITS = {"json": p.MAX_JSON, "small": 64 * 1024, "layers": 256, "members": 500_000, "bytes": 16 * 1024 ** 3}
_GZIP, _ZSTD = b"\x1f\x8b", b"\x28\xb5\x2f\xfd"


class _Unreadable(Exception):
    """The image cannot be read: the message says why (shown to the user, escaped by the renderer)."""


class _Layers:
    """The interesting files of the image as its layers, applied in order, leave them."""

    def __init__(self, limits):
        self.limits = limits
        self.version_json: Dict[str, str] = {}  # path -> the toolkit version it holds
        self.torch: Dict[str, str] = {}  # dist-info folder -> version
        self.read = 0
        self.bytes = 0
        self.notes: List[str] = []

    def _drop(self, target: str, opaque: bool) -> None:
        prefix = target + "/" if target else ""
        for table in (self.version_json, self.torch):
            for key in [k for k in table if (k.startswith(prefix) if opaque else (k == target or k.startswith(prefix)))]:
                del table[key]

    def walk(self, stream, label: str) -> None:
        """One layer, a stream of a tar (plain or gzip); a layer that is not one is a note, not a failure."""
        head = stream.peek(4)[:4] if hasattr(stream, "peek") else b""
        if head.startswith(_ZSTD):
            self.notes.append(M("%s: a zstd layer (not read)", label))
            return
        mode = "r|gz" if head.startswith(_GZIP) else "r|"
        seen = 0
        try:
            with tarfile.open(fileobj=stream, mode=mode) as layer:
                for member in layer:
                    seen += 1
                    if seen > self.limits["members"]:
                        self.notes.append(M("%s: more than %d entries (the rest not read)", label, self.limits["members"]))
                        break
                    self.bytes += max(member.size, 0)
                    if self.bytes > self.limits["bytes"]:
                        self.notes.append(M("layers past %d bytes not read", self.limits["bytes"]))
                        raise _Cap()
                    self._member(layer, member)
        except (tarfile.TarError, OSError, EOFError) as exc:
            self.notes.append(M("%s: not a readable layer (%s)", label, str(exc)))
        self.read += 1

    def _member(self, layer, member) -> None:
        path = p.layer_path(member.name)
        if path is None:
            return
        wh = p.whiteout(path)
        if wh is not None:
            self._drop(wh[1], wh[0] == "opaque")
            return
        self._drop(path, False)  # a new entry hides what the layers below had at that path
        parts = path.split("/")
        if len(parts) >= 3 and parts[-3] in SITE_DIRS:
            version = p.torch_dist_version(path)
            if version is not None:
                self.torch[path.rpartition("/")[0]] = version
        if p.toolkit_version_json(path) and member.isreg() and 0 < member.size <= self.limits["small"]:
            data = layer.extractfile(member)
            text = data.read(self.limits["small"]).decode("utf-8", "replace") if data is not None else ""
            version = parse_version_json(text)
            if version:
                self.version_json[path] = version


class _Cap(Exception):
    """The bytes cap was reached: the walk stops."""


def _read_capped(fh, limit: int, what: str) -> bytes:
    data = fh.read(limit + 1)
    if len(data) > limit:
        raise _Unreadable(M("%s is larger than %d bytes", what, limit))
    return data


def _from_config(facts: Dict, data, tags=()) -> None:
    parsed = p.parse_image_config(data)
    if parsed is None:
        raise _Unreadable(M("its image config is not JSON with a config section"))
    env, labels, own_tags = parsed
    facts["env"], facts["labels"] = env, labels
    facts["tags"] = tuple(tags) or own_tags


def _docker_save(path: str, limits, facts: Dict) -> _Layers:
    """A ``docker save`` tarball (legacy layout or Docker 25's OCI one: both hold ``manifest.json``)."""
    from cudaenv.host.files import open_regular

    layers = _Layers(limits)
    with open_regular(path) as fh, tarfile.open(fileobj=fh, mode="r:") as outer:
        members = {}
        for m in outer:
            name = p.layer_path(m.name)
            if name is not None and m.isreg():
                members[name] = m
            if len(members) > limits["members"]:
                raise _Unreadable(M("more than %d entries in the tarball", limits["members"]))

        def read(name: str, limit: int) -> bytes:
            m = members.get(p.layer_path(name) or "")
            if m is None:
                raise _Unreadable(M("%s is not in the tarball", name))
            if m.size > limit:
                raise _Unreadable(M("%s is larger than %d bytes", name, limit))
            return outer.extractfile(m).read(limit)

        manifest = p.parse_save_manifest(read("manifest.json", limits["json"])) if "manifest.json" in members else None
        if manifest is None:
            raise _Unreadable(M("no docker save manifest.json in it (save it with `docker save IMAGE -o image.tar`)"))
        config, layer_names, tags = manifest
        _from_config(facts, read(config, limits["json"]), tags)
        try:
            for name in layer_names[: limits["layers"]]:
                m = members.get(p.layer_path(name) or "")
                if m is None:
                    layers.notes.append(M("layer %s is not in the tarball", name))
                    continue
                layers.walk(_Peekable(outer.extractfile(m)), name)
        except _Cap:
            pass
        _too_many(layers, len(layer_names), limits)
    return layers


def _too_many(layers: _Layers, count: int, limits) -> None:
    if count > limits["layers"]:
        layers.notes.append(M("%d layers: only the first %d read", count, limits["layers"]))


def _blob(folder: str, hexdigest: str) -> str:
    path = os.path.join(folder, "blobs", "sha256", hexdigest)
    if os.path.islink(path):
        raise _Unreadable(M("blob %s is a link (not followed)", hexdigest[:12]))
    return path


def _oci_layout(folder: str, limits, facts: Dict) -> _Layers:
    from cudaenv.host.files import read_regular_why

    def read_json(path: str, what: str) -> bytes:
        if os.path.islink(path):
            raise _Unreadable(M("%s is a link (not followed)", what))
        data, why = read_regular_why(path, limits["json"] + 1)
        if data is None:
            raise _Unreadable(M("%s cannot be read (%s)", what, why) if why else M("%s cannot be read: it is missing", what))
        if len(data) > limits["json"]:
            raise _Unreadable(M("%s is larger than %d bytes", what, limits["json"]))
        return data

    manifest = None
    todo = list(p.parse_oci_index(read_json(os.path.join(folder, "index.json"), "index.json")))
    hops = 0
    while todo and manifest is None and hops < 16:  # an index may name an index (one per platform)
        hops += 1
        data = read_json(_blob(folder, todo.pop(0)), M("a manifest blob"))
        manifest = p.parse_oci_manifest(data)
        if manifest is None:
            todo = list(p.parse_oci_index(data)) + todo
    if manifest is None:
        raise _Unreadable(M("index.json leads to no image manifest"))
    config, layer_list = manifest
    _from_config(facts, read_json(_blob(folder, config), M("the config blob")))
    layers = _Layers(limits)
    from cudaenv.host.files import open_regular

    try:
        for hexdigest, _media in layer_list[: limits["layers"]]:
            try:
                with open_regular(_blob(folder, hexdigest)) as fh:
                    layers.walk(_Peekable(fh), M("layer %s", hexdigest[:12]))
            except OSError as exc:
                layers.notes.append(M("layer %s: %s", hexdigest[:12], str(exc.strerror or exc)))
    except _Cap:
        pass
    _too_many(layers, len(layer_list), limits)
    return layers


class _Peekable:
    """A read-only stream with ``peek`` (the layer's first bytes say its compression) over any file object."""

    def __init__(self, fh):
        self._fh, self._head = fh, b""

    def peek(self, n: int) -> bytes:
        if len(self._head) < n:
            self._head += self._fh.read(n - len(self._head))
        return self._head

    def read(self, n: int = -1) -> bytes:
        if self._head:
            head, self._head = (self._head, b"") if n < 0 or n >= len(self._head) else (self._head[:n], self._head[n:])
            if n < 0:
                return head + self._fh.read()
            return head + (self._fh.read(n - len(head)) if n > len(head) else b"")
        return self._fh.read(n)


def _kind(path: str) -> str:
    from cudaenv.host.files import open_regular

    if os.path.isdir(path):
        if os.path.exists(os.path.join(path, "index.json")):
            return "oci-layout"
        raise _Unreadable(M("a folder without an OCI index.json"))
    try:
        with open_regular(path) as fh:
            head = fh.read(512)
    except OSError as exc:
        raise _Unreadable(str(exc.strerror or exc)) from None
    if head.lstrip()[:1] in (b"{", b"["):
        return "json"
    if len(head) >= 262 and head[257:262] == b"ustar":
        return "docker-save"
    if head.startswith(_GZIP) or head.startswith(_ZSTD):
        raise _Unreadable(M("a compressed file: decompress it first (gunzip, zstd -d); `docker save IMAGE -o image.tar` "
                            "writes an uncompressed tarball, which is read without unpacking"))
    raise _Unreadable(M("neither a docker save tarball, an OCI layout folder nor image JSON"))


# An image reference as the engines name local images ("nvidia/cuda:12.4.1-base-ubuntu22.04", "sha256:...", a digest
# after @): never a flag, never shell syntax (it is passed as one argument, after --).
_REFERENCE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/:@+-]{0,254}")
INSPECT_ENGINES = ("docker", "podman")  # whose local image store `doctor --image` asks


def _inspect(host, ref: str) -> Tuple[Optional[bytes], Optional[str]]:
    """``docker image inspect -- REF`` (else podman's): the engine's local copy, never a pull; (JSON, None) or (None,
    why). Read-only: inspect asks the daemon about an image it holds and changes nothing."""
    if host is None or not _REFERENCE.fullmatch(ref):
        return None, None
    whys = []
    for engine in INSPECT_ENGINES:
        program = host.which(engine)
        if program is None:
            continue
        result = host.run([program, "image", "inspect", "--", ref])
        if result.ok and result.stdout.lstrip().startswith("["):
            return result.stdout.encode("utf-8"), None
        whys.append(M("%s image inspect: %s", engine, (result.output.strip().splitlines() or [result.error or "failed"])[0][:200]))
    return None, join("; ", whys) or None


def probe_image(ref: str, cwd: str = ".", limits: Optional[Dict[str, int]] = None, host=None) -> ImageFacts:
    """Read the image ``ref`` names: a path (relative to ``cwd``), else, with ``host``, an image the local engine holds
    (``docker image inspect``, then podman's: its config, no layers); an unreadable one is ``readable=False`` with
    why."""
    limits = dict(LIMITS, **(limits or {}))
    path = os.path.join(cwd, ref)
    facts: Dict = {}
    kind = "unknown"
    layers: Optional[_Layers] = None
    try:
        if not os.path.lexists(path):
            data, why = _inspect(host, ref)
            if data is not None:
                if len(data) > limits["json"]:
                    raise _Unreadable(M("the engine's inspect output is larger than %d bytes", limits["json"]))
                _from_config(facts, data)
                return _facts(ref, "engine-inspect", facts, None)
            raise _Unreadable(M("no such file or folder here%s; cudaenv reads an image from disk or the local engine, "
                                "never from a registry: pull or save it first", M(" (%s)", why) if why else ""))
        kind = _kind(path)
        if kind == "oci-layout":
            layers = _oci_layout(path, limits, facts)
        elif kind == "docker-save":
            layers = _docker_save(path, limits, facts)
        else:
            from cudaenv.host.files import open_regular

            with open_regular(path) as fh:
                data = _read_capped(fh, limits["json"], M("the JSON file"))
            _from_config(facts, data)
            kind = "inspect-json" if data.lstrip()[:1] == b"[" else "config-json"
    except _Unreadable as exc:
        return ImageFacts(ref, kind, readable=False, why=exc.args[0] if exc.args else str(exc))  # a marked message
    except (OSError, tarfile.TarError, EOFError) as exc:
        return ImageFacts(ref, kind, readable=False, why=str(getattr(exc, "strerror", None) or exc))
    return _facts(ref, kind, facts, layers)


def _facts(ref: str, kind: str, facts: Dict, layers: Optional[_Layers]) -> ImageFacts:
    env: Dict[str, str] = facts.get("env", {})
    toolkits: Tuple[str, ...] = tuple(sorted(set(layers.version_json.values()))) if layers else ()
    cuda, cuda_from = env.get("CUDA_VERSION") or None, "CUDA_VERSION"
    if not cuda and env.get("NV_CUDA_CUDART_VERSION"):
        cuda, cuda_from = env["NV_CUDA_CUDART_VERSION"].split("-")[0], "NV_CUDA_CUDART_VERSION"
    if not cuda and layers and layers.version_json:
        cuda_from = sorted(layers.version_json)[-1]
        cuda = layers.version_json[cuda_from]
        cuda_from = "/" + cuda_from
    torch = None
    if layers and layers.torch:
        torch = layers.torch[sorted(layers.torch)[-1]]
    disabled = (env.get("NVIDIA_DISABLE_REQUIRE") or "").strip().lower() in ("1", "true", "yes")
    return ImageFacts(
        ref, kind, tags=tuple(facts.get("tags", ())), cuda_version=cuda, cuda_from=cuda_from if cuda else None,
        require_cuda=env.get("NVIDIA_REQUIRE_CUDA") or None, require_disabled=disabled,
        compat_package=env.get("NV_CUDA_COMPAT_PACKAGE") or None, toolkits=toolkits, torch=torch,
        layers_read=layers.read if layers else 0, notes=tuple(layers.notes) if layers else (),
    )

