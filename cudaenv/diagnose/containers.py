"""Containers, on a host with a container engine or the NVIDIA Container Toolkit: the toolkit installed, the nvidia
runtime registered in each engine's config, CDI specs present, current (the driver they name) and covering every GPU,
and the systemd cgroup driver's ``daemon-reload`` hazard. Read from ``Snapshot.containers`` (files only).

Commands are the toolkit's documented ones: https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/
install-guide.html (``nvidia-ctk runtime configure --runtime=docker|containerd|crio``, rootless Docker), cdi-support.html
(``nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml``), and the daemon-reload notice NVIDIA/nvidia-docker#1730
(``nvidia-ctk system create-dev-char-symlinks --create-all`` and its udev rule)."""

from __future__ import annotations

from cudaenv.core.i18n import M, join
from cudaenv.diagnose import _common as c
from cudaenv.parse.container_config import gpu_devices

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import List

F = c.make("containers")
INSTALL_GUIDE = "https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/install-guide.html"
GPU_KIND = "nvidia.com/gpu"
RESTART = {"docker": "sudo systemctl restart docker", "docker-rootless": "systemctl --user restart docker",
           "containerd": "sudo systemctl restart containerd", "crio": "sudo systemctl restart crio"}
UDEV_RULE = ("echo 'ACTION==\"add\", DEVPATH==\"/bus/pci/drivers/nvidia\", RUN+=\"/usr/bin/nvidia-ctk system "
             "create-dev-char-symlinks --create-all\"' | sudo tee /lib/udev/rules.d/71-nvidia-dev-char.rules")


def check(s, tables=None) -> List:
    h = getattr(s, "containers", None)
    if h is None:
        return []
    out = toolkit_missing(s, h)
    if not out:
        out += unregistered(s, h) + cdi(s, h) + cgroup_reload(s, h)
    return out


def has_toolkit(h) -> bool:
    return bool(h.nvidia_ctk or h.nvidia_container_cli or h.packages)


def _has_gpu(s) -> bool:
    return bool(s.gpus or s.platform.pci_nvidia_devices or s.driver is not None)


def gpu_specs(h):
    return [spec for spec in h.cdi_specs if spec.kind == GPU_KIND]


def toolkit_missing(s, h) -> List:
    if has_toolkit(h) or not h.engines or not _has_gpu(s):
        return []
    configure = ["sudo nvidia-ctk runtime configure --runtime=%s" % e for e in h.engines if e in ("docker", "containerd", "crio")]
    restarts = [RESTART[e] for e in h.engines if e in RESTART]
    return [
        F(
            "container-toolkit-missing",
            "error",
            M("no NVIDIA Container Toolkit for %s", ", ".join(h.engines)),
            M("This machine has a GPU and %s, but neither nvidia-ctk nor nvidia-container-cli nor the toolkit's packages: "
              "a container asking for the GPU fails (Docker: 'could not select device driver \"\" with capabilities: [[gpu]]').",
              ", ".join(h.engines)),
            [M("# install the nvidia-container-toolkit package from NVIDIA's repository (this distribution's steps: %s)", INSTALL_GUIDE)]
            + configure + restarts
            + ([M("sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml    # podman uses CDI")] if "podman" in h.engines else []),
        )
    ]


def unregistered(s, h) -> List:
    if not has_toolkit(h):
        return []
    specs = gpu_specs(h)
    missing = [cfg for cfg in h.configs if cfg.readable and cfg.engine in RESTART and "nvidia" not in cfg.runtimes
               and not (cfg.cdi and specs)]  # Podman registers no runtime: it finds GPUs through CDI
    if not missing:
        return []
    fix: List[str] = []
    for cfg in missing:
        if cfg.engine == "docker-rootless":
            fix += ["nvidia-ctk runtime configure --runtime=docker --config=%s" % (cfg.path or "$HOME/.config/docker/daemon.json"),
                    M("sudo nvidia-ctk config --set nvidia-container-cli.no-cgroups --in-place    # rootless: no cgroups")]
        else:
            fix.append("sudo nvidia-ctk runtime configure --runtime=%s" % cfg.engine)
        fix.append(RESTART[cfg.engine])
    names = join(", ", ("%s (%s)" % (cfg.engine, cfg.path) if cfg.path else M("%s (no config file)", cfg.engine) for cfg in missing))
    return [
        F(
            "container-runtime-unregistered",
            "warning",
            M("the nvidia runtime is not registered with %s", ", ".join(cfg.engine for cfg in missing)),
            M("The NVIDIA Container Toolkit is installed but no nvidia runtime is registered in %s: `--runtime=nvidia`, "
              "a compose file's `runtime: nvidia` and a Kubernetes RuntimeClass `nvidia` fail (Docker's `--gpus` still "
              "works through the toolkit's hook).", names),
            fix,
        )
    ]


def cdi(s, h) -> List:
    specs = gpu_specs(h)
    wants = "podman" in h.engines or any(cfg.cdi for cfg in h.configs)
    regenerate = ["sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml", M("nvidia-ctk cdi list    # the device names it defines")]
    if not specs:
        if not (wants and has_toolkit(h) and _has_gpu(s)):
            return []
        who = "podman" if "podman" in h.engines else M("CDI (switched on in %s)", ", ".join(cfg.engine for cfg in h.configs if cfg.cdi))
        folders = list(dict.fromkeys(["/etc/cdi", "/var/run/cdi"] + [d for cfg in h.configs for d in cfg.cdi_spec_dirs]))
        return [F("cdi-spec-missing", "warning", M("no CDI spec for the GPUs"),
                  M("%s finds GPUs through a CDI spec, and none of %s holds one of kind %s: "
                    "`--device nvidia.com/gpu=all` fails with 'unresolvable CDI devices'.", who, ", ".join(folders), GPU_KIND),
                  regenerate)]
    out = []
    driver = c.driver_version(s)
    stale = [spec for spec in specs if driver and spec.driver_versions and driver not in spec.driver_versions]
    if stale:
        out.append(F("cdi-spec-stale", "error", M("the CDI spec names another driver than the one installed"),
                     M("%s was written for driver %s; the driver is now %s, so the libraries it mounts are gone and a "
                       "container started through it fails. Regenerate it after every driver upgrade.",
                       stale[0].path, ", ".join(stale[0].driver_versions), driver), regenerate))
    uuids = [g.uuid for g in s.gpus if g.uuid]
    names = {n for spec in specs for n in gpu_devices(spec)}
    by_uuid = any(n.startswith("GPU-") for n in names)
    uncovered = [u for u in uuids if u not in names] if by_uuid else []
    indexes = [n for n in names if n.isdigit()]
    short = bool(indexes) and len(indexes) < len(s.gpus)
    if uncovered or short:
        what = M("GPUs %s are not in it", ", ".join(uncovered)) if uncovered else (
            M("it defines %d GPU%s, this machine has %d", len(indexes), "" if len(indexes) == 1 else "s", len(s.gpus)))
        out.append(F("cdi-spec-uncovered", "warning", M("the CDI spec does not cover every GPU"),
                     M("%s: %s (a GPU added or replaced since it was written).", ", ".join(spec.path for spec in specs), what), regenerate))
    return out


def cgroup_driver(cfg, h):
    """``(driver, inferred)``: the engine's cgroup driver as its config sets it, else its documented default: Docker
    uses systemd on a cgroup v2 host (moby/moby#40846; cgroupfs on v1), CRI-O systemd (crio.conf(5)'s
    cgroup_manager), containerd cgroupfs (SystemdCgroup false); None where not known."""
    if cfg.cgroup_driver:
        return cfg.cgroup_driver, False
    if cfg.engine == "docker" and h.cgroup_v2 is not None:
        return ("systemd" if h.cgroup_v2 else "cgroupfs"), True
    return {"crio": ("systemd", True), "containerd": ("cgroupfs", True)}.get(cfg.engine, (None, False))


def cgroup_reload(s, h) -> List:
    # Podman finds GPUs through CDI, which runc knows of; rootless Docker sets up no device cgroups (no-cgroups)
    drivers = [(cfg, cgroup_driver(cfg, h)) for cfg in h.configs if cfg.engine not in ("podman", "docker-rootless")]
    systemd = [cfg for cfg, (driver, _) in drivers if driver == "systemd"]
    if not systemd or h.dev_char_links is not False or not has_toolkit(h):
        return []
    inferred = [cfg.engine for cfg, (driver, guess) in drivers if driver == "systemd" and guess]
    return [
        F(
            "container-cgroup-reload",
            "warning",
            M("running GPU containers lose the GPU at the next systemctl daemon-reload"),
            M("%s manage%s container cgroups through systemd and /dev/char has no links to the /dev/nvidia* nodes: "
              "a `systemctl daemon-reload` (a package upgrade runs one) detaches the GPUs from running containers, which "
              "then say 'Failed to initialize NVML: Unknown Error' until recreated (NVIDIA/nvidia-docker#1730).%s",
              ", ".join(cfg.engine for cfg in systemd), "s" if len(systemd) == 1 else "",
              M(" (%s set%s no cgroup driver: systemd is the default%s)",
                ", ".join(inferred), "s" if len(inferred) == 1 else "", M(" on this cgroup v2 host") if h.cgroup_v2 else "")
              if inferred else ""),
            ["sudo nvidia-ctk system create-dev-char-symlinks --create-all", UDEV_RULE + M("    # again at every boot")],
        )
    ]
