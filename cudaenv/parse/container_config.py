"""The container engines' GPU configuration, read from their files: Docker's ``daemon.json``, containerd's and CRI-O's
TOML, and CDI specs as ``nvidia-ctk cdi generate`` writes them (YAML, or JSON). Pure and bounded: text in, records out;
a damaged file gives what could be read, never an exception.

The TOML and YAML are read by their lines, for the few keys the doctor needs (the runtimes' table headers, the cgroup
switches, a CDI spec's kind, device names and the driver version in its library paths), so no TOML or YAML library is
needed on Python 3.9.

>>> parse_toml_runtimes('[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]').runtimes
('nvidia',)
"""

from __future__ import annotations

import json
import re

from cudaenv.model.snapshot import CdiSpec, EngineConfig
from cudaenv.parse._lines import as_text, lines
from cudaenv.core.lazy import LazyPattern  # compiled when first used: the doctor's start-up reads few of these

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import Any, List, Optional, Tuple
    from cudaenv.parse._lines import Text

_RUNTIME_HEADER = LazyPattern(r"""^\[[^\]]{0,300}\.runtimes\.(?:"([^"]{1,64})"|([A-Za-z0-9_-]{1,64}))\]\s*(?:#.*)?$""")
_BOOL = LazyPattern(r"^([A-Za-z_]{1,40})\s*=\s*(true|false)\b", re.IGNORECASE)
_DRIVER = LazyPattern(r"(?:libcuda\.so\.|libnvidia-ml\.so\.|--host-driver-version=)(\d{2,4}\.\d{1,3}(?:\.\d{1,3})?)\b")
_NAME = LazyPattern(r"""^(?:-\s+)?name:\s*["']?([^"'\s]{1,128})["']?\s*$""")
_KIND = LazyPattern(r"""^kind:\s*["']?([^"'\s]{1,128})["']?\s*$""")
_MANAGER = LazyPattern(r"""^cgroup_manager\s*=\s*["']([A-Za-z]{1,16})["']""")
_ARRAY_KEY = LazyPattern(r"^(cdi_spec_dirs|hooks_dir)\s*=\s*(.*)$")
_QUOTED = LazyPattern(r"""["']([^"'\n]{1,4096})["']""")


def parse_docker_daemon(data: Text) -> EngineConfig:
    """Docker's ``daemon.json``: the runtimes it registers, its default runtime, its cgroup driver and whether CDI is
    on (``features.cdi``). A file that is not a JSON object gives ``readable=False``."""
    try:
        doc = json.loads(as_text(data) or "{}")
    except ValueError:
        return EngineConfig(engine="docker", readable=False)
    if not isinstance(doc, dict):
        return EngineConfig(engine="docker", readable=False)
    runtimes = doc.get("runtimes")
    names = tuple(sorted(str(k)[:64] for k in runtimes)) if isinstance(runtimes, dict) else ()
    default = doc.get("default-runtime")
    driver = None
    opts = doc.get("exec-opts")
    for opt in opts if isinstance(opts, list) else ():
        if isinstance(opt, str) and opt.replace(" ", "").startswith("native.cgroupdriver="):
            driver = opt.split("=", 1)[1].strip()[:32] or None
    features = doc.get("features")
    cdi = features.get("cdi") if isinstance(features, dict) else None
    return EngineConfig(engine="docker", runtimes=names, default_runtime=str(default)[:64] if isinstance(default, str) else None,
                        cgroup_driver=driver, cdi=cdi if isinstance(cdi, bool) else None)


def parse_toml_runtimes(data: Text, engine: str = "containerd") -> EngineConfig:
    """containerd's ``config.toml`` or a CRI-O ``crio.conf(.d)`` file: the runtimes declared as tables
    (``[...runtimes.nvidia]``, ``[crio.runtime.runtimes.nvidia]``), ``SystemdCgroup``/``systemd_cgroup`` and
    ``enable_cdi``."""
    names: List[str] = []
    systemd: Optional[bool] = None
    cdi: Optional[bool] = None
    for line in lines(as_text(data)):
        if line.startswith("["):
            m = _RUNTIME_HEADER.match(line)
            if m is not None:
                name = m.group(1) or m.group(2)
                if name not in names:
                    names.append(name)
            continue
        m = _MANAGER.match(line)
        if m is not None and m.group(1).lower() in ("systemd", "cgroupfs"):  # CRI-O's crio.conf(5), Podman's [engine]
            systemd = m.group(1).lower() == "systemd"
            continue
        m = _BOOL.match(line)
        if m is None:
            continue
        key, value = m.group(1).lower(), m.group(2).lower() == "true"
        if key in ("systemdcgroup", "systemd_cgroup"):
            systemd = value or bool(systemd)
        elif key == "enable_cdi":
            cdi = value
    return EngineConfig(engine=engine, runtimes=tuple(names), cgroup_driver=None if systemd is None else ("systemd" if systemd else "cgroupfs"),
                        cdi=cdi)


def parse_containers_conf(data: Text) -> EngineConfig:
    """Podman's ``containers.conf`` (containers.conf(5)): ``cgroup_manager``, ``cdi_spec_dirs`` and ``hooks_dir`` of its
    ``[engine]`` table (arrays on one line or over several), as set; an engine record of ``podman``, which finds GPUs
    through CDI (``cdi`` True)."""
    table = ""
    arrays = {"cdi_spec_dirs": [], "hooks_dir": []}
    systemd: Optional[bool] = None
    open_key: Optional[str] = None
    for line in lines(as_text(data)):
        if open_key is not None:  # the rest of a multi-line array
            arrays[open_key] = (arrays[open_key] + _QUOTED.findall(line.split("#", 1)[0]))[:64]
            if "]" in line.split("#", 1)[0]:
                open_key = None
            continue
        if line.startswith("["):
            table = line.split("#", 1)[0].strip()
            continue
        if table != "[engine]":
            continue
        m = _MANAGER.match(line)
        if m is not None and m.group(1).lower() in ("systemd", "cgroupfs"):
            systemd = m.group(1).lower() == "systemd"
            continue
        m = _ARRAY_KEY.match(line)
        if m is not None:
            value = m.group(2).split("#", 1)[0]
            arrays[m.group(1)] = _QUOTED.findall(value)[:64]
            open_key = m.group(1) if value.strip().startswith("[") and "]" not in value else None
    return EngineConfig(engine="podman", cgroup_driver=None if systemd is None else ("systemd" if systemd else "cgroupfs"),
                        cdi=True, cdi_spec_dirs=tuple(arrays["cdi_spec_dirs"][:64]), hooks_dirs=tuple(arrays["hooks_dir"][:64]))


def parse_cdi_spec(data: Text, path: str = "") -> CdiSpec:
    """A CDI spec: its kind (``nvidia.com/gpu``), the device names it defines (``0``, ``GPU-<uuid>``, ``all``) and the
    driver version its library paths name (``libcuda.so.575.64.03``). JSON specs are read as JSON, YAML by its lines."""
    text = as_text(data)
    if text.lstrip().startswith(("{", "[")):
        return _cdi_json(text, path)
    kind = None
    names: List[str] = []
    versions: List[str] = []
    in_devices = False
    for raw in text.splitlines()[:200000]:
        line = raw[:1000]
        stripped = line.strip()
        if not raw.startswith((" ", "-")):  # a top-level key
            in_devices = stripped.startswith("devices:")
            m = _KIND.match(stripped)
            if m is not None:
                kind = m.group(1)
        elif in_devices and (line.startswith("  name:") or line.startswith("- name:")):
            m = _NAME.match(stripped)
            if m is not None:
                names.append(m.group(1))
        if ".so." in line or "--host-driver-version" in line:
            m = _DRIVER.search(line)
            if m is not None and m.group(1) not in versions:
                versions.append(m.group(1))
    return CdiSpec(path=path, kind=kind, devices=tuple(names[:1024]), driver_versions=tuple(versions[:8]))


def _cdi_json(text: str, path: str) -> CdiSpec:
    try:
        doc: Any = json.loads(text)
    except ValueError:
        return CdiSpec(path=path, readable=False)
    if not isinstance(doc, dict):
        return CdiSpec(path=path, readable=False)
    devices = doc.get("devices") if isinstance(doc.get("devices"), list) else []
    names = tuple(str(d.get("name"))[:128] for d in devices[:1024] if isinstance(d, dict) and d.get("name") is not None)
    versions: List[str] = []
    for m in _DRIVER.finditer(text[:4_000_000]):
        if m.group(1) not in versions:
            versions.append(m.group(1))
        if len(versions) >= 8:
            break
    kind = doc.get("kind")
    return CdiSpec(path=path, kind=str(kind)[:128] if kind is not None else None, devices=names, driver_versions=tuple(versions))


def gpu_devices(spec: CdiSpec) -> Tuple[str, ...]:
    """The spec's names of single GPUs (not ``all``)."""
    return tuple(n for n in spec.devices if n != "all")
