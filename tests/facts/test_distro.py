"""One rule for "which distribution family is this" (issue 11): os-release's ID, then its ID_LIKE (else the 'like' of
data/distro_like.json), used alike by the driver advice (data/driver_install.json: the doctor and `cudaenv fix`) and
the toolkit install plan (data/toolkit_install.json: `cudaenv install --plan` and the doctor's toolkit line).
repos.py kept its own Python map (pop, linuxmint -> ubuntu), and both tables listed the derivatives by hand."""

import pytest

from cudaenv.facts import distro, driver_install
from cudaenv.parse.proc import parse_id_like, parse_os_release
from cudaenv.probes.platform import probe_platform
from cudaenv.core.resources import load_table
from cudaenv.toolkit.install import repos

# (ID, ID_LIKE as read; () where a report has none) -> the base distribution both tables use
CASES = [
    ("ubuntu", ("debian",), "ubuntu"),
    ("debian", (), "debian"),
    ("pop", ("ubuntu", "debian"), "ubuntu"),
    ("pop", (), "ubuntu"),  # an older report without ID_LIKE: data/distro_like.json
    ("linuxmint", (), "ubuntu"),
    ("linuxmint", ("debian",), "debian"),  # LMDE: Linux Mint on Debian, no ubuntu-drivers there
    ("kali", ("debian",), "debian"),  # named in no table: ID_LIKE alone
    ("rocky", ("rhel", "centos", "fedora"), "rhel"),
    ("almalinux", (), "rhel"),
    ("rhel", ("fedora",), "rhel"),  # its own ID first
    ("fedora", (), "fedora"),
    ("endeavouros", ("arch",), "arch"),
    ("manjaro", (), "arch"),
]


@pytest.mark.parametrize("distro_id, like, base", CASES)
def test_the_driver_advice_and_the_toolkit_plan_agree_on_the_family(distro_id, like, base):
    ids = distro.lineage(distro_id, like)
    assert ids[0] == distro_id and base in ids
    driver_rows = [r for r in load_table("driver_install")["rows"] if r.get("topic") is None]
    assert distro.pick(driver_rows, ids)[1] == base
    assert driver_install.install_steps("linux", distro_id, "550", like=like) == driver_install.install_steps("linux", base, "550")
    for topic in driver_install.TOPICS:
        assert driver_install.chore_steps(topic, distro_id, like=like) == driver_install.chore_steps(topic, base)
    toolkit = distro.pick(load_table("toolkit_install")["rows"], ids)
    if toolkit is not None:  # the toolkit table names no arch: both fall back to 'other' there
        assert toolkit[1] == base
    row, named = repos.distro_row(distro_id, like)
    if distro.same_release(distro_id, base):
        assert row is repos.row(base) and named == base
    else:  # a derivative's own VERSION_ID names no repository of its base
        assert row is repos.row("other")


def test_no_table_lists_a_derivative_the_rule_finds():
    """A derived ID is matched through ID_LIKE or distro_like.json, never written into a table's 'when' again."""
    derived = {r["id"] for r in load_table("distro_like")["rows"]}
    for name in ("driver_install", "toolkit_install"):
        for row in load_table(name)["rows"]:
            if isinstance(row.get("when"), list):
                assert not derived & set(row["when"]), (name, row["when"])
    table = load_table("distro_like")
    for row in table["rows"]:
        assert row["source"] in table["sources"] and row["like"] and row["id"] not in row["like"]


def test_linux_mint_gets_no_ubuntu_repository_named_from_its_own_version():
    """Linux Mint 21.3 is Ubuntu 22.04: the plan named repos/ubuntu213, which does not exist."""
    commands, _ = repos.plan_commands("12.4", "linuxmint", "21.3", None, "x86_64")
    assert not any("ubuntu213" in c for c in commands)
    assert commands[0] == repos.row("other")["steps"][0].format(version="12.4")
    pop, _ = repos.plan_commands("12.4", "pop", "22.04", None, "x86_64", like=("ubuntu", "debian"))
    assert "/repos/ubuntu2204/" in pop[0]
    rocky, _ = repos.plan_commands("12.4", "rocky", "9.4", None, "x86_64")
    assert "/repos/rhel9/" in rocky[0]


def test_the_platform_probe_reads_id_like(fake_root):
    fake_root.file("etc/os-release", 'NAME="LMDE"\nID=linuxmint\nID_LIKE=debian\nVERSION_ID="6"\n')
    platform = probe_platform(fake_root.host(), [])
    assert platform.distro_id == "linuxmint" and platform.distro_like == ("debian",)
    assert driver_install.install_steps("linux", platform.distro_id, "550", like=platform.distro_like)[-2:] == (
        "sudo reboot", "nvidia-smi    # check: driver at least 550")
    assert "ubuntu-drivers" not in " ".join(driver_install.install_steps("linux", "linuxmint", like=platform.distro_like))


def test_id_like_is_read_as_ids_only():
    assert parse_id_like(parse_os_release('ID_LIKE="ubuntu debian"\n').get("ID_LIKE")) == ("ubuntu", "debian")
    assert parse_id_like("rhel $(touch x) Fedora " + "a " * 50) == ("rhel", "a", "a", "a", "a", "a", "a", "a")
    assert parse_id_like(None) == () and parse_id_like("x" * 100) == ()


@pytest.mark.parametrize("distro_id, like, base", CASES)
def test_the_doctor_and_cudaenv_fix_give_the_same_driver_steps(distro_id, like, base):
    """The doctor's finding fixes (diagnose._common) and `cudaenv fix` (fix.plan) read the platform's
    ID_LIKE alike."""
    from cudaenv.diagnose import _common
    from cudaenv.fix.plan import driver_steps
    from cudaenv.model.snapshot import Platform, Snapshot

    platform = Platform(system="linux", distro_id=distro_id, distro_like=like)
    s = Snapshot(platform=platform)
    want = list(driver_install.install_steps("linux", base, "570"))
    assert _common.driver_install_commands(s, "570") == want == list(driver_steps(platform, "570"))
    assert _common.driver_chore(s, "initramfs") == list(driver_install.chore_steps("initramfs", base))
