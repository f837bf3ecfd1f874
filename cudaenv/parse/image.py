"""A container image's own files, read without running it: its config's environment, the manifests that lead to it,
NVIDIA's ``NVIDIA_REQUIRE_CUDA`` constraint, and the layer paths that matter (pure: text or bytes in, values out).

The formats (sources):

* the OCI image spec (github.com/opencontainers/image-spec: ``image-layout.md``, ``image-index.md``,
  ``manifest.md``, ``config.md``): an ``index.json`` names manifests by digest, a manifest names one config and its
  layers (``blobs/sha256/<hex>``), the config's ``config.Env`` is a list of ``KEY=value`` and ``config.Labels`` a map;
* ``docker save``'s ``manifest.json`` (moby's image/tarexport): a list of ``{"Config": path, "RepoTags": [...],
  "Layers": [path, ...]}``; ``docker image inspect`` prints a list of ``{"RepoTags": [...], "Config": {"Env": [...],
  "Labels": {...}}}``;
* layer changesets (image-spec ``layer.md``): a file ``.wh.NAME`` deletes ``NAME`` from the layers below, a file
  ``.wh..wh..opq`` makes its folder opaque (everything below it in earlier layers is gone);
* ``NVIDIA_REQUIRE_CUDA`` (libnvidia-container, as NVIDIA's CUDA images set it: ``cuda>=12.0
  brand=tesla,driver>=470,driver<471 ...``): alternatives separated by spaces, each a comma-separated list of
  conditions that must all hold (gitlab.com/nvidia/container-images/cuda issue 31, quoted in cvat's compose file).
"""

import json
import re
from typing import Any, Dict, List, Optional, Tuple

MAX_JSON = 4 * 1024 * 1024  # a manifest, index or config larger than this is not read (the probe's cap, said here)
_DIGEST = re.compile(r"sha256:([0-9a-f]{64})")
_CONDITION = re.compile(r"([a-z]{1,16})\s*(>=|<=|==|=|>|<)\s*([A-Za-z0-9._-]{1,32})")
_TORCH_DIST = re.compile(r"torch-(\d{1,4}(?:\.\d{1,6}){1,3}(?:[a-z]{1,5}\d{0,8})?(?:\+[A-Za-z0-9.]{1,32})?)\.dist-info")
WHITEOUT = ".wh."
OPAQUE = ".wh..wh..opq"


def _json(data: Any) -> Any:
    if isinstance(data, (bytes, bytearray)):
        if len(data) > MAX_JSON:
            return None
        data = bytes(data).decode("utf-8", "replace")
    if not isinstance(data, str) or len(data) > MAX_JSON:
        return None
    try:
        return json.loads(data)
    except (ValueError, RecursionError):
        return None


def _strings(value: Any) -> Tuple[str, ...]:
    return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()


def _env(value: Any) -> Dict[str, str]:
    """A config's ``Env`` list (``["PATH=/usr/bin", "CUDA_VERSION=12.4.1"]``) as a map; later keys win, as in Docker."""
    out: Dict[str, str] = {}
    for item in _strings(value):
        key, sep, val = item.partition("=")
        if sep and key:
            out[key] = val
    return out


def _labels(value: Any) -> Dict[str, str]:
    return {k: v for k, v in value.items() if isinstance(k, str) and isinstance(v, str)} if isinstance(value, dict) else {}


def parse_image_config(data: Any) -> Optional[Tuple[Dict[str, str], Dict[str, str], Tuple[str, ...]]]:
    """``(env, labels, tags)`` of an image config: an OCI/Docker config blob (``{"config": {"Env": ...}}``), one
    ``docker image inspect`` object (``{"Config": {"Env": ...}, "RepoTags": [...]}``) or its list (the first image);
    None for anything else."""
    doc = _json(data)
    if isinstance(doc, list):
        doc = doc[0] if doc and isinstance(doc[0], dict) else None
    if not isinstance(doc, dict):
        return None
    cfg = doc.get("config") if isinstance(doc.get("config"), dict) else doc.get("Config")
    if not isinstance(cfg, dict):
        return None
    return _env(cfg.get("Env")), _labels(cfg.get("Labels")), _strings(doc.get("RepoTags"))


def parse_save_manifest(data: Any) -> Optional[Tuple[str, Tuple[str, ...], Tuple[str, ...]]]:
    """``docker save``'s ``manifest.json``: ``(config path, layer paths, tags)`` of its first image; None otherwise."""
    doc = _json(data)
    if not (isinstance(doc, list) and doc and isinstance(doc[0], dict)):
        return None
    first = doc[0]
    config = first.get("Config")
    if not isinstance(config, str):
        return None
    return config, _strings(first.get("Layers")), _strings(first.get("RepoTags"))


def digest_hex(value: Any) -> Optional[str]:
    """``sha256:<64 hex>`` -> the hex (a blob's file name); None for any other digest (never a path)."""
    m = _DIGEST.fullmatch(value) if isinstance(value, str) else None
    return m.group(1) if m else None


def parse_oci_index(data: Any) -> Tuple[str, ...]:
    """The manifest digests' hex an ``index.json`` (or a nested index) names, in order; () when it is not one."""
    doc = _json(data)
    items = doc.get("manifests") if isinstance(doc, dict) else None
    if not isinstance(items, list):
        return ()
    return tuple(h for h in (digest_hex(m.get("digest")) for m in items if isinstance(m, dict)) if h)


def parse_oci_manifest(data: Any) -> Optional[Tuple[str, Tuple[Tuple[str, str], ...]]]:
    """An image manifest: ``(config hex, ((layer hex, media type), ...))``; None when it is not one (an index)."""
    doc = _json(data)
    if not isinstance(doc, dict) or not isinstance(doc.get("config"), dict):
        return None
    config = digest_hex(doc["config"].get("digest"))
    if config is None:
        return None
    layers = []
    for layer in doc.get("layers") if isinstance(doc.get("layers"), list) else ():
        if isinstance(layer, dict) and digest_hex(layer.get("digest")):
            media = layer.get("mediaType")
            layers.append((digest_hex(layer.get("digest")), media if isinstance(media, str) else ""))
    return config, tuple(layers)


def parse_require_cuda(text: Any) -> Tuple[Optional[str], Tuple[Tuple[Tuple[str, str, str], ...], ...]]:
    """``NVIDIA_REQUIRE_CUDA`` -> ``(the cuda>= version of its first alternative, every alternative's conditions)``.

    ``"cuda>=12.0 brand=tesla,driver>=470,driver<471"`` -> ``("12.0", ((("cuda", ">=", "12.0"),), (("brand", "=",
    "tesla"), ("driver", ">=", "470"), ("driver", "<", "471"))))``. A condition that does not read is left out."""
    if not isinstance(text, str):
        return None, ()
    alternatives: List[Tuple[Tuple[str, str, str], ...]] = []
    for word in text[:64 * 1024].split():
        conds = tuple(m.groups() for m in (_CONDITION.fullmatch(c.strip()) for c in word.split(",")) if m)
        if conds:
            alternatives.append(conds)
    cuda = next((v for alt in alternatives for k, op, v in alt if k == "cuda" and op in (">=", ">") and len(alt) == 1), None)
    return cuda, tuple(alternatives)


def driver_branches(alternatives) -> Tuple[Tuple[str, Tuple[str, ...]], ...]:
    """The ``brand=...,driver>=N,driver<N+1`` alternatives grouped by driver branch: ``(("470", ("tesla", ...)), ...)``,
    branches in their first order (the forward-compatibility branches the image's cuda-compat package serves)."""
    out: Dict[str, Dict[str, None]] = {}  # dicts as ordered sets
    for alt in alternatives:
        lows = [v for k, op, v in alt if k == "driver" and op == ">="]
        brands = [v for k, op, v in alt if k == "brand" and op in ("=", "==")]
        if lows and brands:
            out.setdefault(lows[0].split(".")[0], {}).update(dict.fromkeys(brands))
    return tuple((k, tuple(v)) for k, v in out.items())


def layer_path(name: Any) -> Optional[str]:
    """A tar member's name as a path inside the image (``./usr/lib`` -> ``usr/lib``); None for a name that climbs out
    (``..``) or is not text a path can be."""
    if not isinstance(name, str) or len(name) > 4096 or "\x00" in name:
        return None
    parts = [p for p in name.replace("\\", "/").split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        return None
    return "/".join(parts)


def whiteout(path: str) -> Optional[Tuple[str, str]]:
    """``("opaque", folder)`` for ``folder/.wh..wh..opq``, ``("delete", folder/name)`` for ``folder/.wh.name``, None
    for an ordinary path (``path`` as :func:`layer_path` gives it)."""
    folder, _, base = path.rpartition("/")
    if base == OPAQUE:
        return "opaque", folder
    if base.startswith(WHITEOUT) and len(base) > len(WHITEOUT):
        return "delete", (folder + "/" if folder else "") + base[len(WHITEOUT):]
    return None


def torch_dist_version(path: str) -> Optional[str]:
    """``usr/lib/python3.12/site-packages/torch-2.5.1+cu124.dist-info/METADATA`` -> ``2.5.1+cu124`` (the folder's
    name); None for another path."""
    parts = path.split("/")
    if len(parts) < 2 or len(parts[-2]) > 80:
        return None
    m = _TORCH_DIST.fullmatch(parts[-2])
    return m.group(1) if m else None


def toolkit_version_json(path: str) -> bool:
    """``usr/local/cuda-12.4/version.json`` (or ``usr/local/cuda/version.json``): a toolkit's version file."""
    parts = path.split("/")
    return (len(parts) == 4 and parts[:2] == ["usr", "local"] and parts[3] == "version.json"
            and (parts[2] == "cuda" or parts[2].startswith("cuda-")))
