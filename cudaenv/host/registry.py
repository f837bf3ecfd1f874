"""Windows registry values, read in cudaenv's own process with the standard library's ``winreg`` (no program runs, no
shell): only for the real machine (a Host that is not rooted in an image or a test's folder) and only on Windows;
None everywhere else, and when the key cannot be opened. Bounded: at most MAX_VALUES values of a key, the string ones
only (REG_SZ, REG_EXPAND_SZ, unexpanded), each name and value cut at MAX_TEXT characters. Whatever is read came from
outside: callers check each value before use."""

from typing import Dict, Optional

MAX_VALUES = 512
MAX_TEXT = 1024


def _winreg():
    """The ``winreg`` module (Windows' Python only), or None."""
    try:
        import winreg
    except ImportError:
        return None
    return winreg


def read_values(host, key: str) -> Optional[Dict[str, str]]:
    """{value name: string data} of ``HKEY_LOCAL_MACHINE\\<key>`` on the machine ``host`` stands for, or None."""
    if host.rooted or host.system != "windows":
        return None
    reg = _winreg()
    if reg is None:
        return None
    out: Dict[str, str] = {}
    try:
        with reg.OpenKey(reg.HKEY_LOCAL_MACHINE, key, 0, reg.KEY_READ) as handle:
            for index in range(MAX_VALUES):
                try:
                    name, data, kind = reg.EnumValue(handle, index)
                except OSError:  # no more values
                    break
                if kind in (reg.REG_SZ, reg.REG_EXPAND_SZ) and isinstance(name, str) and isinstance(data, str):
                    out[name[:MAX_TEXT]] = data[:MAX_TEXT]
    except OSError:
        return None
    return out
