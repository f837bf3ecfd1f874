"""Driver: none installed, not loaded, userspace/kernel mismatch, a GPU off the bus, a hung nvidia-smi."""

from __future__ import annotations

from cudaenv.diagnose import _common as c
from cudaenv.core.i18n import M, join
from cudaenv.diagnose import health
from cudaenv.core.version import version_key

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off doctor --quick's path (issue 35)
    from typing import List

F = c.make("driver")


def check(s, tables=None) -> List:
    out = []
    out += hang(s)
    out += crashed(s)
    out += library_mismatch(s)
    out += not_loaded(s)
    out += gpu_lost(s)
    out += no_permission(s)
    out += no_devices(s)
    out += no_driver(s)
    out += health.check(s, tables)
    return out


def driver_place(s):
    """Where the driver comes from when it is not this system's to install: ``jetson`` (part of L4T),
    ``kubernetes`` (the node's), ``container`` (the host's); None on a machine that installs its own."""
    p = s.platform
    if getattr(p, "jetson", None) is not None:
        return "jetson"
    if p.container == "kubernetes":
        return "kubernetes"
    if p.container and p.wsl != 2:
        return "container"
    return None


def upgrade_driver_fix(s, target: str, cuda=None) -> List[str]:
    """The fix lines that get driver ``target`` (or newer) for CUDA ``cuda``: this distro's install command, or,
    in a container, on a Kubernetes node or a Jetson, the words of ``data/host_driver.json`` for that place."""
    place = driver_place(s)
    if place is None:
        return [M("# upgrade the driver to %s or newer:", target)] + c.driver_install_commands(s, str(version_key(target)[0]))
    from cudaenv.core.resources import load_table

    row = next((r for r in load_table("host_driver")["rows"] if r.get("place") == place), None)
    if row is None:
        return [M("# upgrade the host's driver to %s or newer", target)]
    jetson = getattr(s.platform, "jetson", None)
    from cudaenv.core.version import major_minor

    values = {"{target}": target, "{cuda}": major_minor(cuda) or cuda or "?", "{l4t}": (jetson.l4t if jetson else None) or "?",
              "{jetpack}": (jetson.jetpack if jetson else None) or "?"}
    from cudaenv.core.i18n import filled_message

    out = []
    for template in row["fix"]:
        line = template
        for key, value in values.items():
            line = line.replace(key, value)
        out.append(filled_message(template, line, {key.strip("{}"): value for key, value in values.items()}) if "#" in template else line)
    return out


def _message(s, kind: str) -> str:
    t = next((t for t in s.tools if t.failure == kind), None)
    return (t.message or "").strip() if t is not None else ""


def _said(s, kind: str) -> str:
    msg = _message(s, kind)
    tool = next((t.tool for t in s.tools if t.failure == kind), "nvidia-smi")
    return M(' %s said: "%s".', tool, msg) if msg else ""


def hang(s) -> List:
    hung = [t for t in s.tools if t.status == "timeout"]
    if not hung:
        return []
    t = hung[0]
    secs = ("%g s" % t.seconds) if t.seconds else M("the timeout")
    return [
        F(
            "nvidia-smi-hang",
            "error",
            M("%s hung: the GPU or driver is wedged", t.tool),
            M("%s (%s) did not answer within %s; cudaenv stopped it. A hang usually means a GPU stuck after an error "
              "(an Xid in the kernel log), a process in uninterruptible sleep holding the device, or a driver "
              "without persistence mode taking long to initialise.", t.tool, t.path or t.tool, secs),
            [
                M("sudo dmesg -T | grep -i -E 'NVRM|Xid' | tail -20    # the error that wedged it"),
                M("ps -eo pid,stat,user,cmd | awk '$2 ~ /D/'    # processes stuck on the device"),
                M("sudo nvidia-smi -pm 1    # persistence mode, if it answers again"),
                M("sudo reboot    # when it stays hung"),
            ],
        )
    ]


def crashed(s) -> List:
    """nvidia-smi (or the NVML child) killed by a signal: a damaged driver install, or a driver fault."""
    t = next((t for t in s.tools if t.failure == "crashed"), None)
    if t is None:
        return []
    d = s.driver
    series = (d.kernel_module_version or d.version or "").split(".")[0] if d is not None else ""
    what = t.message.strip() if t.message else M("%s crashed", t.tool)
    return [
        F(
            "nvidia-smi-crashed",
            "error",
            M("%s crashed: the driver's tools or libraries are damaged", t.tool),
            M("%s. A driver tool that dies by a signal (a segmentation fault most often) points at a damaged or "
              "half-upgraded driver install (libnvidia-ml from one version, nvidia-smi or the kernel module from "
              "another), a library of another driver earlier on the loader path, or a driver fault the kernel log "
              "names (Xid).", what),
            [
                M("sudo dmesg -T | grep -i -E 'NVRM|Xid|segfault' | tail -20    # what the kernel logged at the crash"),
                M("ldd \"$(command -v nvidia-smi)\" | grep -i nvidia    # which libnvidia-ml it loads"),
            ]
            + ([M("# reinstall (repair) the driver:")] + c.driver_install_commands(s, series if series.isdigit() and series.isascii() else None)
               if driver_place(s) is None else [M("# reinstall (repair) the driver where it is installed: the host, the node or the L4T image")])
            + [M("nvidia-smi    # afterwards it prints the GPU table")],
        )
    ]


def library_mismatch(s) -> List:
    if "driver-library-mismatch" not in c.failures(s):
        return []
    d = s.driver
    kernel = d.kernel_module_version if d is not None else None
    user = d.version if d is not None else None
    versions = ""
    if kernel and user and kernel != user:
        versions = M(" The loaded kernel module is %s, the userspace libraries are %s.", kernel, user)
    elif kernel:
        versions = M(" The loaded kernel module is %s (cat /proc/driver/nvidia/version).", kernel)
    return [
        F(
            "driver-library-mismatch",
            "error",
            M("driver/library version mismatch: reboot or reload the module"),
            M("NVML refuses to work because the kernel module that is loaded is not the version of the userspace "
              "libraries: the driver was upgraded (often by an automatic update) and the machine was not rebooted.")
            + versions + _said(s, "driver-library-mismatch"),
            [
                "sudo reboot",
                M("# or, with no process using the GPU:"),
                "sudo rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia && sudo modprobe nvidia",
                M("cat /proc/driver/nvidia/version    # afterwards: the kernel module and nvidia-smi agree"),
            ],
        )
    ]


def not_loaded(s) -> List:
    if "driver-not-loaded" not in c.failures(s):
        return []
    p = s.platform
    causes, fix = [], []
    if p.nouveau_loaded:
        causes.append(M("the open-source nouveau driver is loaded and holds the GPU"))
        fix += [
            "printf 'blacklist nouveau\\noptions nouveau modeset=0\\n' | sudo tee /etc/modprobe.d/blacklist-nouveau.conf",
        ] + c.driver_chore(s, "initramfs")
    if p.secure_boot:
        causes.append(M("Secure Boot is on and refuses an unsigned nvidia module"))
        fix += [
            M("sudo mokutil --import /var/lib/dkms/mok.pub    # enrol the DKMS key, then confirm it at the next boot"),
            M("# or disable Secure Boot in the firmware settings"),
        ]
    kernel = p.kernel or "$(uname -r)"
    causes.append(M("the kernel was updated and the module was not rebuilt for %s", kernel))
    fix += c.driver_chore(s, "module_rebuild", kernel=p.kernel)
    fix += ["sudo modprobe nvidia && nvidia-smi", M("sudo reboot    # if modprobe fails, then read: sudo dmesg | grep -i nvidia")]
    return [
        F(
            "driver-not-loaded",
            "error",
            M("the NVIDIA driver is installed but its kernel module is not loaded"),
            M("nvidia-smi cannot talk to the driver: the nvidia kernel module is not loaded. Likely causes here: %s.%s",
              join("; ", causes), _said(s, "driver-not-loaded")),
            fix,
        )
    ]


def gpu_lost(s) -> List:
    if "gpu-lost" not in c.failures(s):
        return []
    h = getattr(s, "health", None)
    if h is not None and (h.xids or h.fallen_off_bus):
        lead = M("The kernel log (%s) shows what happened: %s%s (gpu-xid says what each means and the first step).",
                 h.log, health.xid_names(h) or M("no Xid"),
                 M("; %s fell off the bus", ", ".join(h.fallen_off_bus)) if h.fallen_off_bus else "")
    elif h is not None and h.log:
        lead = M("The kernel log (%s) holds no Xid for it this boot: look at the earlier boots' logs "
                 "(journalctl -k -b -1), then at power, heat and seating.", h.log)
    else:
        lead = M("The driver knows a GPU but cannot reach it: usually Xid 79 (fallen off the bus) after a power, heat or "
                 "PCIe problem.")
    return [
        F(
            "gpu-lost",
            "error",
            M("a GPU fell off the bus (unable to determine the device handle)"),
            lead + M(" Nothing can use that GPU until it is reset.") + _said(s, "gpu-lost"),
            ([] if h is not None and h.log else ["sudo dmesg -T | grep -i -E 'Xid|fallen off the bus'"])
            + [
                M("sudo reboot    # a cold power cycle if it comes back lost"),
                M("# check the power cables, PSU capacity and cooling; reseat the card"),
            ]
            + (health.dcgm_fix(h) if h is not None else [])
            + [M("sudo nvidia-bug-report.sh    # collects everything NVIDIA support asks for")],
        )
    ]


def no_permission(s) -> List:
    if "no-permission" not in c.failures(s):
        return []
    nodes = " ".join(s.platform.dev_nvidia) or "/dev/nvidia*"
    return [
        F(
            "driver-no-permission",
            "error",
            M("no permission to use the GPU device nodes"),
            M("The driver answered with insufficient permissions: this user cannot open %s.%s", nodes, _said(s, "no-permission")),
            ["ls -l %s" % nodes, M("sudo usermod -aG video \"$USER\"    # then log out and in again")],
        )
    ]


def no_devices(s) -> List:
    if "no-devices" not in c.failures(s):
        return []
    pci = ", ".join(s.platform.pci_nvidia_devices)
    return [
        F(
            "driver-no-devices",
            "error",
            M("the driver is loaded but finds no GPU"),
            M("nvidia-smi found no devices%s: the GPU is not bound to the nvidia driver (vfio/passthrough), "
              "is too old for this driver branch, or is not seated.%s",
              M(" although the PCI bus has NVIDIA devices at %s", pci) if pci else "", _said(s, "no-devices")),
            [M("lspci -nnk -d 10de:    # 'Kernel driver in use' should be nvidia"), "sudo dmesg | grep -i -E 'NVRM|nvidia'"],
        )
    ]


def no_driver(s) -> List:
    p = s.platform
    if s.driver is not None or c.failures(s) or c.hung(s):
        return []
    if p.wsl == 2:
        return _wsl2_no_driver(s)
    if not p.pci_nvidia_devices:
        return []
    detail = M("The PCI bus has an NVIDIA GPU (vendor 0x10de at %s) but no NVIDIA driver is installed: no NVML, no nvidia-smi.",
               ", ".join(p.pci_nvidia_devices))
    if p.nouveau_loaded:
        detail += M(" The open-source nouveau driver runs the display; it cannot run CUDA.")
    return [F("no-driver", "error", M("NVIDIA GPU present but no NVIDIA driver"), detail, c.driver_install_commands(s))]


def _wsl2_no_driver(s) -> List:
    """WSL 2 shows no PCI bus: no driver answering and no Windows libcuda means the Windows side lacks it."""
    p = s.platform
    if any(c.norm(lib).startswith("/usr/lib/wsl/") for lib in p.libcuda):
        return []
    if not (p.dev_dxg or c.torch_cuda_build(s)):
        return []
    return [
        F(
            "no-driver",
            "error",
            M("WSL 2 sees no NVIDIA driver from Windows"),
            M("Under WSL 2 the GPU driver is the Windows host's, exposed as /usr/lib/wsl/lib/libcuda.so.1 and "
              "/usr/lib/wsl/lib/nvidia-smi; neither is here%s.", M(" although /dev/dxg exists") if p.dev_dxg else ""),
            [
                M("# install the NVIDIA driver on Windows (https://www.nvidia.com/Download/index.aspx), then in PowerShell:"),
                "wsl --update",
                M("wsl --shutdown    # then reopen the distribution; /usr/lib/wsl/lib/nvidia-smi must work"),
            ],
        )
    ]
