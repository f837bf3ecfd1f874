"""Where the package managers keep their databases under the root: the one list of those paths.

The dpkg reader (:mod:`cudaenv.probes.dpkg`), the rpm owner lookup of ``uninstall``
(:mod:`cudaenv.toolkit.uninstall.rpm`) and the toolkit probe's install-method guess
(:mod:`cudaenv.probes.toolkits`) name these folders only through this module. Stdlib only, no typing, nothing
done at import: the toolkit probe is on the ``cudaenv use`` path.
"""

DPKG_STATUS = "/var/lib/dpkg/status"
DPKG_INFO = "/var/lib/dpkg/info"  # NAME.list / NAME:ARCH.list: the files each package installed
ALTERNATIVES = ("/var/lib/dpkg/alternatives", "/var/lib/alternatives")  # update-alternatives admin files (dpkg, rpm)
RPM_DB_DIRS = ("/var/lib/rpm", "/usr/lib/sysimage/rpm")  # /usr/lib/sysimage/rpm: Fedora 36+, openSUSE


def has_rpm_database(host) -> bool:
    """True when an rpm database folder under the root holds anything."""
    return any(host.is_dir(d) and host.listdir(d) for d in RPM_DB_DIRS)


def is_rpm_system(host) -> bool:
    """True on an rpm-based system: an rpm database and no dpkg one (a Debian system with rpm installed has both)."""
    return any(host.is_dir(d) for d in RPM_DB_DIRS) and not host.is_dir(DPKG_INFO)
