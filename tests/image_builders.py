"""Small real container images built in tmp_path with tarfile (constructed, in the formats of docker save and the OCI
image layout: opencontainers/image-spec image-layout.md, manifest.md, config.md; moby's image/tarexport for
manifest.json), for `doctor --image` and `fleet summarize --image`."""

import gzip
import hashlib
import io
import json
import tarfile

from builders import recorded

NVIDIA_CUDA_12_0_CONFIG = json.loads(recorded("image-config-nvidia-cuda-12.0.0-base.json"))


def config(env=(), labels=None):
    """An OCI image config whose Env is ``env`` (``KEY=value`` strings)."""
    return {"architecture": "amd64", "os": "linux", "config": {"Env": list(env), "Labels": labels or {}}}


def layer(files, gz=False) -> bytes:
    """A layer tarball: ``files`` maps a path to bytes (a file), None (a folder) or ("link", target)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, body in files.items():
            info = tarfile.TarInfo(name)
            if body is None:
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            elif isinstance(body, tuple):
                info.type, info.linkname = tarfile.SYMTYPE, body[1]
                tar.addfile(info)
            else:
                info.size = len(body)
                tar.addfile(info, io.BytesIO(body))
    data = buf.getvalue()
    return gzip.compress(data) if gz else data


def _add(tar, name, data: bytes):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def docker_save(path, cfg, layers, tags=("example/cuda:test",)):
    """A legacy ``docker save`` tarball: manifest.json, <id>.json (the config), <n>/layer.tar."""
    with tarfile.open(path, "w") as tar:
        cfg_name = hashlib.sha256(json.dumps(cfg).encode()).hexdigest() + ".json"
        _add(tar, cfg_name, json.dumps(cfg).encode())
        names = []
        for i, data in enumerate(layers):
            names.append("%d/layer.tar" % i)
            _add(tar, names[-1], data)
        _add(tar, "manifest.json", json.dumps([{"Config": cfg_name, "RepoTags": list(tags), "Layers": names}]).encode())
    return path


def _blob(folder, data: bytes) -> str:
    digest = hashlib.sha256(data).hexdigest()
    (folder / "blobs" / "sha256").mkdir(parents=True, exist_ok=True)
    (folder / "blobs" / "sha256" / digest).write_bytes(data)
    return "sha256:" + digest


def oci_layout(folder, cfg, layers, nested=False):
    """An OCI image layout folder (``nested``: index.json names an index that names the manifest, as multi-platform
    images do)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "oci-layout").write_text('{"imageLayoutVersion": "1.0.0"}')
    cfg_digest = _blob(folder, json.dumps(cfg).encode())
    descs = [{"mediaType": "application/vnd.oci.image.layer.v1.tar" + ("+gzip" if data[:2] == b"\x1f\x8b" else ""),
              "digest": _blob(folder, data), "size": len(data)} for data in layers]
    manifest = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                           "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": cfg_digest},
                           "layers": descs}).encode()
    top = {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": _blob(folder, manifest)}
    if nested:
        inner = json.dumps({"schemaVersion": 2, "manifests": [top]}).encode()
        top = {"mediaType": "application/vnd.oci.image.index.v1+json", "digest": _blob(folder, inner)}
    (folder / "index.json").write_text(json.dumps({"schemaVersion": 2, "manifests": [top]}))
    return folder


VERSION_JSON_11_8 = recorded("versionjson-11.8.0-runfile.json").encode()  # a real toolkit's version.json (11.8.0)
