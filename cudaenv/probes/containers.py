"""The container side of a host, from files only: which engines are here (a program on PATH or its config file),
the NVIDIA Container Toolkit's programs and packages, the runtimes each engine's config registers (Docker's
``daemon.json`` and the rootless one, containerd's ``config.toml``, CRI-O's ``crio.conf`` and ``crio.conf.d``, Podman's
``containers.conf``), the CDI specs in ``/etc/cdi``, ``/var/run/cdi`` and the folders Podman is told to use, and whether
the cgroup hierarchy is v2 (the default cgroup driver of some engines follows it). No daemon is asked anything and no
program is run.

Inside a container this reads nothing (the engine is the host's); on a machine with no engine and no toolkit it
returns None and the doctor shows no Containers row.
"""

from __future__ import annotations

from cudaenv.model.snapshot import CdiSpec, ContainerHost, EngineConfig, Note, Platform
from cudaenv.parse.container_config import parse_cdi_spec, parse_containers_conf, parse_docker_daemon, parse_toml_runtimes

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import List, Optional, Tuple

PROBE = "containers"
LIMIT = 4 * 1024 * 1024  # bytes of one config file or CDI spec read (a generated spec is tens of kilobytes)
ENGINES = (("docker", ("dockerd", "docker")), ("podman", ("podman",)), ("containerd", ("containerd",)), ("crio", ("crio",)))
DOCKER_DAEMON = "/etc/docker/daemon.json"
ROOTLESS_DAEMON = "/.config/docker/daemon.json"  # under $HOME: rootless Docker's daemon.json (Docker's rootless docs)
CONTAINERD = "/etc/containerd/config.toml"
CRIO = ("/etc/crio/crio.conf",)
CRIO_DIR = "/etc/crio/crio.conf.d"
CDI_DIRS = ("/etc/cdi", "/var/run/cdi")
# Podman's containers.conf, lowest precedence first (containers.conf(5)): the distribution's, the system's, its drop-ins;
# then the user's under $HOME (rootless Podman).
PODMAN_CONF = ("/usr/share/containers/containers.conf", "/etc/containers/containers.conf")
PODMAN_CONF_D = "/etc/containers/containers.conf.d"
PODMAN_USER_CONF = "/.config/containers/containers.conf"  # under $HOME
CGROUP_V2 = "/sys/fs/cgroup/cgroup.controllers"  # present on the unified (v2) hierarchy only
TOOLKIT_PACKAGES = ("nvidia-container-toolkit", "nvidia-container-toolkit-base", "libnvidia-container-tools",
                    "libnvidia-container1", "nvidia-docker2", "nvidia-container-runtime")


def _read(host, path: str) -> Optional[str]:
    return host.read_text(path, limit=LIMIT) if host.is_file(path) else None


def _engines(host) -> Tuple[str, ...]:
    found = []
    for engine, programs in ENGINES:
        if any(host.which(p) for p in programs):
            found.append(engine)
    if "docker" not in found and host.is_file(DOCKER_DAEMON):
        found.append("docker")
    if "containerd" not in found and host.is_file(CONTAINERD):
        found.append("containerd")
    if "crio" not in found and (host.is_file(CRIO[0]) or host.is_dir(CRIO_DIR)):
        found.append("crio")
    return tuple(found)


def _configs(host, engines: Tuple[str, ...]) -> Tuple[EngineConfig, ...]:
    out: List[EngineConfig] = []
    text = _read(host, DOCKER_DAEMON)
    if text is not None:
        out.append(_at(parse_docker_daemon(text), DOCKER_DAEMON))
    elif "docker" in engines:
        out.append(EngineConfig(engine="docker"))  # no daemon.json: Docker's defaults, no runtime registered
    home = (host.env.get("HOME") or "").rstrip("/")
    if home:
        rootless = home + ROOTLESS_DAEMON
        text = _read(host, rootless)
        if text is not None:
            c = parse_docker_daemon(text)
            out.append(EngineConfig(engine="docker-rootless", path=rootless, readable=c.readable, runtimes=c.runtimes,
                                    default_runtime=c.default_runtime, cgroup_driver=c.cgroup_driver, cdi=c.cdi))
    text = _read(host, CONTAINERD)
    if text is not None:
        out.append(_at(parse_toml_runtimes(text, "containerd"), CONTAINERD))
    elif "containerd" in engines and "docker" not in engines:
        out.append(EngineConfig(engine="containerd"))  # containerd alone (Kubernetes) on its built-in defaults
    crio_files = [p for p in CRIO if host.is_file(p)] + sorted(
        CRIO_DIR + "/" + n for n in host.listdir(CRIO_DIR) if n.endswith(".conf") or n.endswith(".toml"))[:32]
    if crio_files:
        runtimes: List[str] = []
        cgroup, cdi = None, None
        for path in crio_files:
            c = parse_toml_runtimes(_read(host, path) or "", "crio")
            runtimes += [r for r in c.runtimes if r not in runtimes]
            cgroup, cdi = c.cgroup_driver or cgroup, c.cdi if c.cdi is not None else cdi
        out.append(EngineConfig(engine="crio", path=crio_files[0], runtimes=tuple(runtimes), cgroup_driver=cgroup, cdi=cdi))
    if "podman" in engines:  # containers.conf also comes with buildah and skopeo: read for Podman only
        out.append(_podman(host, home) or EngineConfig(engine="podman", cdi=True))  # none: Podman's defaults
    return tuple(out)


def _podman(host, home: str) -> Optional[EngineConfig]:
    """Podman's containers.conf files merged in their order (a later file's setting wins), None when there is none."""
    files = [p for p in PODMAN_CONF if host.is_file(p)]
    files += sorted(PODMAN_CONF_D + "/" + n for n in host.listdir(PODMAN_CONF_D) if n.endswith(".conf"))[:32]
    if home and host.is_file(home + PODMAN_USER_CONF):
        files.append(home + PODMAN_USER_CONF)
    if not files:
        return None
    cgroup, dirs, hooks = None, (), ()
    for path in files:
        c = parse_containers_conf(_read(host, path) or "")
        cgroup, dirs, hooks = c.cgroup_driver or cgroup, c.cdi_spec_dirs or dirs, c.hooks_dirs or hooks
    return EngineConfig(engine="podman", path=files[-1], cgroup_driver=cgroup, cdi=True, cdi_spec_dirs=dirs, hooks_dirs=hooks)


def _cgroup_v2(host) -> Optional[bool]:
    if host.is_file(CGROUP_V2):
        return True
    return False if host.is_dir("/sys/fs/cgroup") else None


def _at(c: EngineConfig, path: str) -> EngineConfig:
    return EngineConfig(engine=c.engine, path=path, readable=c.readable, runtimes=c.runtimes, default_runtime=c.default_runtime,
                        cgroup_driver=c.cgroup_driver, cdi=c.cdi)


def _cdi_specs(host, configs: Tuple[EngineConfig, ...] = ()) -> Tuple[CdiSpec, ...]:
    """The specs in the standard folders and in those an engine's config names (Podman's cdi_spec_dirs, 8 at most)."""
    out = []
    extra = [d.rstrip("/") for cfg in configs for d in cfg.cdi_spec_dirs if d.startswith("/")]
    for folder in tuple(dict.fromkeys(list(CDI_DIRS) + extra[:8])):
        for name in sorted(host.listdir(folder))[:64]:
            if not name.endswith((".yaml", ".yml", ".json")):
                continue
            path = folder + "/" + name
            text = _read(host, path)
            if text is not None:
                out.append(parse_cdi_spec(text, path))
    return tuple(out)


def _packages(host, notes: List[Note]) -> Tuple[str, ...]:
    """The toolkit's installed packages with their versions: dpkg's status, else the rpm database (read-only)."""
    from cudaenv.probes.dpkg import probe_dpkg_status

    packages = probe_dpkg_status(host, notes, probe=PROBE)
    if packages is None:
        from cudaenv.probes.rpm_db import probe_rpm_packages

        rpms = probe_rpm_packages(host, TOOLKIT_PACKAGES, notes, probe=PROBE) or {}
        return tuple("%s=%s" % (n, rpms[n]) for n in TOOLKIT_PACKAGES if n in rpms)
    return tuple("%s=%s" % (n, packages[n].version or "?") for n in TOOLKIT_PACKAGES
                 if n in packages and packages[n].state == "installed")


def _dev_char_links(host) -> Optional[bool]:
    """Whether /dev/char links to the NVIDIA device nodes (runc needs them when systemd manages the container's
    cgroups: NVIDIA/nvidia-docker#1730); None where /dev/char is absent."""
    if not host.is_dir("/dev/char"):
        return None
    for name in host.listdir("/dev/char")[:4096]:
        target = host.readlink("/dev/char/" + name) or ""
        if target.rstrip("/").rsplit("/", 1)[-1].startswith("nvidia"):
            return True
    return False


def probe_containers(host, notes: List[Note], platform: Platform) -> Optional[ContainerHost]:
    """The container host's GPU setup; None inside a container, and where no engine nor the toolkit is present."""
    if platform.container or platform.system != "linux":
        return None
    engines = _engines(host)
    ctk, cli = host.which("nvidia-ctk"), host.which("nvidia-container-cli")
    if not engines and not ctk and not cli:
        return None
    configs = _configs(host, engines)
    return ContainerHost(engines=engines, nvidia_ctk=ctk, nvidia_container_cli=cli, packages=_packages(host, notes),
                         configs=configs, cdi_specs=_cdi_specs(host, configs), dev_char_links=_dev_char_links(host),
                         cgroup_v2=_cgroup_v2(host))
