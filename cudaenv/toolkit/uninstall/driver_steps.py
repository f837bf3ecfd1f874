"""Step 8 of an uninstall plan (``--driver``): the NVIDIA driver's packages or its own uninstaller. Pure: no I/O.

Under WSL2 the driver is Windows' job: nothing is planned inside WSL.
"""

from cudaenv.model.snapshot import Note
from cudaenv.toolkit.uninstall.builder import Builder
from cudaenv.toolkit.uninstall.facts import Inspection
from cudaenv.toolkit.uninstall.records import Guard, HostPath
from cudaenv.core.i18n import M


# ----------------------------------------------------------------------------- step 7: the driver


def driver_steps(b: Builder, inspection: Inspection) -> None:
    d = inspection.driver
    if d is None:
        b.notes.append(Note("uninstall", M("--driver: the driver was not inspected")))
        return
    if d.wsl:
        b.add(
            "driver-wsl",
            M("The driver is Windows' job under WSL2: update or remove the NVIDIA driver in Windows (Apps & features, or "
            "the NVIDIA app). Nothing is planned inside WSL; never install a Linux NVIDIA driver there."),
        )
        return
    if d.system == "windows":
        b.add(
            "driver-windows",
            M('Uninstall "NVIDIA Graphics Driver" in Windows Settings > Apps > Installed apps (Apps & features)'),
            needs_root=True,
            destructive=True,
        )
        return
    planned = False
    if d.packages and d.package_manager == "dpkg":
        b.add(
            "driver-apt-remove",
            M("Remove the NVIDIA driver packages installed with apt (exact names from the dpkg database)"),
            commands=(("apt-get", "--purge", "remove", *d.packages),),
            needs_root=True,
            destructive=True,
            details=(M("driver packages: %s", " ".join(d.packages)),),
        )
        planned = True
    elif d.packages and d.package_manager == "rpm":
        b.add(
            "driver-dnf-remove",
            M("Remove the NVIDIA driver packages (exact names from the rpm database)"),
            commands=(("dnf", "remove", *d.packages),),
            needs_root=True,
            destructive=True,
            details=(M("driver packages: %s", " ".join(d.packages)),),
        )
        planned = True
    if d.runfile_uninstaller:
        b.add(
            "driver-runfile-uninstall",
            M("Remove the NVIDIA driver installed from a .run file with its own uninstaller"),
            commands=((HostPath(d.runfile_uninstaller),),),
            needs_root=True,
            destructive=True,
            only_if=Guard("exists", d.runfile_uninstaller),
        )
        planned = True
    if not planned:
        b.notes.append(Note("uninstall", M("--driver: no driver packages and no nvidia-uninstall found: nothing to remove")))
