"""cudaenv/host/registry.py's read_values(host, key): the string values of a HKEY_LOCAL_MACHINE key through the standard
library's winreg, on the real Windows machine only. No test reads this machine's registry: winreg is replaced by a
stand-in with winreg's documented calls (OpenKey as a context manager, EnumValue(key, i) -> (name, data, type) raising
OSError past the last value, REG_SZ = 1, REG_EXPAND_SZ = 2, REG_DWORD = 4). Its KnownDLLs values are constructed from
the key's documented shape, not recorded: ``<name> REG_SZ <name>.dll`` entries (a Windows registry reference's
``advapi32 REG_SZ advapi32.dll``) and ``DllDirectory REG_EXPAND_SZ %SystemRoot%\\system32`` (KB102985)."""

import types

import pytest

from cudaenv.host import Host
from cudaenv.host import registry

KEY = "SYSTEM\\CurrentControlSet\\Control\\Session Manager\\KnownDLLs"
VALUES = [("advapi32", "advapi32.dll", 1), ("kernel32", "kernel32.dll", 1), ("DllDirectory", "%SystemRoot%\\system32", 2),
          ("_wow64cpu", "wow64cpu.dll", 1), ("Flags", 7, 4)]


def fake_winreg(values, opened=None, fail=False):
    class Handle:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    def open_key(hive, key, reserved, access):
        if fail:
            raise FileNotFoundError(2, "The system cannot find the file specified")
        if opened is not None:
            opened.append((hive, key, reserved, access))
        return Handle()

    def enum_value(handle, index):
        if index >= len(values):
            raise OSError(259, "No more data is available")
        return values[index]

    return types.SimpleNamespace(HKEY_LOCAL_MACHINE="HKLM", KEY_READ=0x20019, REG_SZ=1, REG_EXPAND_SZ=2,
                                 OpenKey=open_key, EnumValue=enum_value)


def test_the_real_windows_machine_reads_its_key_strings_only(monkeypatch):
    opened = []
    monkeypatch.setattr(registry, "_winreg", lambda: fake_winreg(VALUES, opened))
    got = registry.read_values(Host(root="C:\\", system="windows"), KEY)
    assert got == {"advapi32": "advapi32.dll", "kernel32": "kernel32.dll", "DllDirectory": "%SystemRoot%\\system32",
                   "_wow64cpu": "wow64cpu.dll"}  # the REG_DWORD is no string: left out
    assert opened == [("HKLM", KEY, 0, 0x20019)]


def test_no_registry_under_a_root_off_windows_without_winreg_or_the_key(monkeypatch, tmp_path):
    """A rooted host (an image, a test's folder) and a Linux host never touch winreg; a missing winreg (not Windows'
    Python) or key is None, never an exception."""
    calls = []
    monkeypatch.setattr(registry, "_winreg", lambda: calls.append(1) or fake_winreg(VALUES))
    assert registry.read_values(Host(root=str(tmp_path), system="windows"), KEY) is None
    assert registry.read_values(Host(root="/", system="linux"), KEY) is None
    assert calls == []
    monkeypatch.setattr(registry, "_winreg", lambda: None)
    assert registry.read_values(Host(root="C:\\", system="windows"), KEY) is None
    monkeypatch.setattr(registry, "_winreg", lambda: fake_winreg(VALUES, fail=True))
    assert registry.read_values(Host(root="C:\\", system="windows"), KEY) is None


def test_a_key_is_read_bounded(monkeypatch):
    many = [("v%d" % i, "x" * 5000, 1) for i in range(registry.MAX_VALUES + 50)]
    monkeypatch.setattr(registry, "_winreg", lambda: fake_winreg(many))
    got = registry.read_values(Host(root="C:\\", system="windows"), KEY)
    assert len(got) == registry.MAX_VALUES and {len(v) for v in got.values()} == {registry.MAX_TEXT}


@pytest.mark.skipif(registry._winreg() is not None, reason="this Python has winreg")
def test_this_python_has_no_winreg():
    assert registry._winreg() is None
