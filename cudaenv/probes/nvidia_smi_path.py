"""Where nvidia-smi is: its own small module, so that ``checkpoint inspect`` (which runs only ``nvidia-smi -L``) does
not import the whole driver probe."""

WSL_SMI = "/usr/lib/wsl/lib/nvidia-smi"
MOUNTED_SMI = "/usr/local/nvidia/bin/nvidia-smi"  # the /usr/local/nvidia driver mount, when PATH lacks its bin
WINDOWS_SMI = (
    "C:\\Windows\\System32\\nvidia-smi.exe",
    "C:\\Program Files\\NVIDIA Corporation\\NVSMI\\nvidia-smi.exe",
)


def find_nvidia_smi(host):
    """nvidia-smi on the real PATH, else WSL's /usr/lib/wsl/lib/nvidia-smi or a /usr/local/nvidia driver mount's,
    else Windows' usual places (a path, or None)."""
    found = host.which("nvidia-smi")
    if found:
        return found
    places = WINDOWS_SMI if host.system == "windows" else (WSL_SMI, MOUNTED_SMI) if host.system == "linux" else ()
    for place in places:
        if host.is_file(place):
            return str(host.path(place))
    return None
