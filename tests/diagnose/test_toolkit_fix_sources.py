"""The doctor's toolkit fixes read the one home of each fact instead of a copy of their own.

* the one-line toolkit install (nvcc-torch-mismatch with no matching toolkit) is the package step of
  data/toolkit_install.json (what `cudaenv install VERSION --plan` prints): the doctor kept its own distro lists and
  sent SUSE to conda while the table has NVIDIA's zypper repository;
* the startup files to grep for a stale LD_LIBRARY_PATH line are those `cudaenv uninstall` and `cudaenv link` search
  (cudaenv.toolkit.uninstall.rcfiles): the doctor's own list missed ~/.bash_profile, fish's config and /etc/profile.d.
"""


import pytest

from builders import TOOLS, code_constants, package_sources
from machine import A10G, ARCH_CU121, a10g_535

OS_RELEASES = {
    "ubuntu": 'NAME="Ubuntu"\nID=ubuntu\nVERSION_ID="22.04"\n',
    "rocky": 'NAME="Rocky Linux"\nID="rocky"\nVERSION_ID="9.4"\n',
    "sles": 'NAME="SLES"\nID="sles"\nVERSION_ID="15.6"\n',
    "alpine": 'NAME="Alpine Linux"\nID=alpine\nVERSION_ID=3.20.3\n',
    "pop": 'NAME="Pop!_OS"\nID=pop\nID_LIKE="ubuntu debian"\nVERSION_ID="22.04"\n',
    "elementary": 'NAME="elementary OS"\nID=elementary\nID_LIKE=ubuntu\nVERSION_ID="7.1"\n',
    "linuxmint": 'NAME="Linux Mint"\nID=linuxmint\nID_LIKE="ubuntu debian"\nVERSION_ID="21.3"\n',
}


@pytest.mark.parametrize("distro, command", [
    ("ubuntu", "sudo apt-get install cuda-toolkit-12-1    # from NVIDIA's repository (`cudaenv install 12.1 --plan`)"),
    ("rocky", "sudo dnf install cuda-toolkit-12-1    # from NVIDIA's repository"),
    ("sles", "sudo zypper install cuda-toolkit-12-1    # from NVIDIA's repository"),
    ("alpine", "conda install -c nvidia cuda-toolkit=12.1    # in a conda environment: no root"),
    ("pop", "sudo apt-get install cuda-toolkit-12-1    # from NVIDIA's repository"),  # ID_LIKE, VERSION_ID is Ubuntu's
    # derivatives whose VERSION_ID is their own: no repository of the base can be named from it (was ubuntu213)
    ("elementary", "conda install -c nvidia cuda-toolkit=12.1"),
    ("linuxmint", "conda install -c nvidia cuda-toolkit=12.1"),
])
def test_the_doctors_install_line_is_the_install_tables(machine, distro, command):
    a10g_535(machine).torch("2.5.1+cu121", "12.1", A10G, ARCH_CU121).toolkit("11.8.0", on_path=True)
    machine.root.file("etc/os-release", OS_RELEASES[distro])
    _, found, _ = machine.findings()
    fix = found["nvcc-torch-mismatch"]["fix"]
    assert fix[0].startswith(command), fix
    assert "cudaenv use 12.1" in fix[1]


# a package-manager or boot-image command of one distribution: written only in data/ (driver_install.json,
# toolkit_install.json), each row with its source
DISTRO_COMMANDS = ("apt-get install", "apt-get remove", "apt install", "apt remove", "dnf install", "dnf module install",
                   "yum install", "zypper install", "pacman -S", "update-initramfs", "dracut --force", "mkinitcpio",
                   "linux-headers-", "kernel-devel")


def _code_strings(source):
    """(line, text) of every string in the module's code, docstrings left out (they may show an example)."""
    import ast

    return [(n.lineno, n.value) for n in code_constants(ast.parse(source)) if isinstance(n.value, str)]


def test_no_distro_install_command_is_written_in_python():
    """A toolkit package install (`apt-get install cuda-toolkit-...`) is spelled only in data/toolkit_install.json,
    and the driver's per-distribution chores (kernel headers, initramfs, removing a Linux driver from WSL 2) only in
    data/driver_install.json: the doctor had its own apt-get/dnf pair, initramfs line and `apt-get remove`."""
    found = []
    for rel, source in package_sources():
        for n, text in _code_strings(source):
            if any(tool + " install cuda-toolkit" in text for tool in ("apt-get", "apt", "dnf", "yum", "zypper")) \
                    or any(command in text for command in DISTRO_COMMANDS):
                found.append("%s:%d %s" % (rel, n, text[:60]))
    assert found == []


def test_the_stale_ld_library_path_grep_reads_the_startup_files_uninstall_searches(cli, fake_root):
    from cudaenv.shells.startup import startup_words
    from cudaenv.toolkit.uninstall.rcfiles import PROFILE_D, SYSTEM_FILES

    fake_root.toolkit("12.4.131")
    env = {"PATH": TOOLS, "CUDAENV_ROOT": str(fake_root.path), "LD_LIBRARY_PATH": "/usr/local/cuda-11.8/lib64"}
    res = cli("doctor", "--quick", "--json", env=env)
    found = [f for f in res.json()["findings"] if f["id"] == "ld-library-path-missing-toolkit"]
    assert len(found) == 1, res
    grep = next(x for x in found[0]["fix"] if x and x.startswith("grep -n /usr/local/cuda-11.8 "))
    words = grep.split("    #")[0].split()
    assert [w for w in list(startup_words()) + list(SYSTEM_FILES) + [PROFILE_D + "/*.sh"] if w not in words] == []
    assert "~/.bash_profile" in words and "${XDG_CONFIG_HOME:-~/.config}/fish/config.fish" in words
    assert "${ZDOTDIR:-~}/.zshrc" in words  # the file zsh reads: ~/.zshrc only while ZDOTDIR is unset
