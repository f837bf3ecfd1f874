"""The rpm database read without rpm (cudaenv.probes.rpm_db) in fake roots: rpm 4.16+'s rpmdb.sqlite (constructed by
tests/rpm_builders.py) through its Name index or by a bounded scan, opened read-only and left unchanged; the older
formats and a damaged file are notes; the container toolkit's packages on an rpm host."""

from rpm_builders import rpm_header, rpmdb
from cudaenv.model.snapshot import Platform
from cudaenv.probes.containers import probe_containers
from cudaenv.probes.rpm_db import probe_rpm_packages

TOOLKIT = ("nvidia-container-toolkit", "nvidia-container-toolkit-base", "libnvidia-container1")
HEADERS = [("nvidia-container-toolkit", rpm_header("nvidia-container-toolkit", "1.17.8", "1")),
           ("libnvidia-container1", rpm_header("libnvidia-container1", "1.17.8", "1", epoch=2)),
           ("podman", rpm_header("podman", "5.4.0", "1.el9"))]


def test_the_sqlite_database_through_its_name_index_unchanged(fake_root):
    db = rpmdb(fake_root.path / "var/lib/rpm/rpmdb.sqlite", HEADERS)
    before = db.read_bytes()
    notes = []
    assert probe_rpm_packages(fake_root.host(), TOOLKIT, notes) == {
        "nvidia-container-toolkit": "1.17.8-1", "libnvidia-container1": "2:1.17.8-1"}
    assert notes == [] and db.read_bytes() == before and not (db.parent / "rpmdb.sqlite-journal").exists()


def test_a_scan_without_the_index_and_the_sysimage_folder(fake_root):
    rpmdb(fake_root.path / "usr/lib/sysimage/rpm/rpmdb.sqlite", HEADERS, name_index=False)
    assert probe_rpm_packages(fake_root.host(), ("podman",), []) == {"podman": "5.4.0-1.el9"}


def test_other_formats_and_damage_are_notes(fake_root):
    notes = []
    assert probe_rpm_packages(fake_root.host(), TOOLKIT, notes) is None and notes == []
    fake_root.file("var/lib/rpm/Packages", "\x00" * 64)
    assert probe_rpm_packages(fake_root.host(), TOOLKIT, notes) is None
    assert "Berkeley DB or ndb" in notes[0].message
    fake_root.file("var/lib/rpm/rpmdb.sqlite", "not a database" * 100)
    notes = []
    assert probe_rpm_packages(fake_root.host(), TOOLKIT, notes) is None and "cannot be read" in notes[0].message


def test_the_toolkit_packages_of_an_rpm_container_host(fake_root, fake_bin):
    fake_bin.command("podman")
    rpmdb(fake_root.path / "var/lib/rpm/rpmdb.sqlite", HEADERS)
    h = probe_containers(fake_root.host(path=fake_bin.env_path), [], Platform(system="linux"))
    assert h.packages == ("nvidia-container-toolkit=1.17.8-1", "libnvidia-container1=2:1.17.8-1")
