"""``doctor --image REF`` (in the containers section): what driver a container image needs, from what it says about
its CUDA, against this machine's driver, before anyone runs it. :func:`image_need` is also the fleet's answer per node.

The floors, the highest wins:

* ``NVIDIA_REQUIRE_CUDA`` (``cuda>=12.8 ...``): the NVIDIA runtime refuses to start the container unless the
  driver's own CUDA version (nvidia-smi's "CUDA Version") reaches it: "nvidia-container-cli: requirement error:
  unsatisfied condition: cuda>=12.8, please update your driver to a newer version, or use an earlier cuda
  container" with driver 551.78, CUDA 12.4 (SyneRBI/PETRIC2#27), even where minor-version compatibility would run
  the CUDA runtime. Its ``brand=...,driver>=N,driver<N+1`` alternatives accept driver branch N on those GPU brands
  (forward compatibility through the image's ``cuda-compat`` package). ``NVIDIA_DISABLE_REQUIRE=true`` skips the
  check (NVIDIA/nvidia-container-toolkit#152);
* ``CUDA_VERSION`` (or a toolkit's version.json in the layers), without that check: the lowest driver that runs the
  CUDA runtime by minor-version compatibility (data/cuda_drivers.json);
* torch in the layers (``torch-2.5.1+cu124.dist-info``): the same for its CUDA build.
"""

from typing import Any, Dict, List, Optional, Tuple

from cudaenv.core.version import compare_versions, major_minor
from cudaenv.core.i18n import M
from cudaenv.diagnose import _common as c
from cudaenv.facts import drivers as drv
from cudaenv.parse.frameworks import local_cuda
from cudaenv.parse.image import driver_branches, parse_require_cuda

F = c.make("containers")


def image_need(facts, system: str = "linux", tables=None) -> Dict[str, Any]:
    """What the image needs: ``driver`` (the floor, None when nothing says), ``why`` (``require`` | ``cuda`` |
    ``torch``), ``cuda`` (the CUDA that floor is for), ``require`` (the ``cuda>=`` of NVIDIA_REQUIRE_CUDA the runtime
    checks, None when absent or disabled) and ``branches`` (its forward-compatibility driver branches with brands)."""
    table = c.table(tables)
    floors: List[Tuple[str, str, str]] = []  # (driver, why, cuda)
    require, alternatives = parse_require_cuda(facts.require_cuda)
    if facts.require_disabled:
        require = None
    if require:
        need = drv.toolkit_driver(major_minor(require), system, table) or drv.min_driver_for_cuda(require, system, table)
        if need:
            floors.append((need, "require", major_minor(require) or require))
    cuda = major_minor(facts.cuda_version)
    if cuda:
        need = drv.min_driver_for_cuda(cuda, system, table)
        if need:
            floors.append((need, "cuda", cuda))
    torch_cuda = local_cuda(facts.torch) if facts.torch else None
    if torch_cuda and torch_cuda != "cpu":
        need = drv.min_driver_for_cuda(torch_cuda, system, table)
        if need:
            floors.append((need, "torch", major_minor(torch_cuda) or torch_cuda))
    top = None
    for f in floors:
        if top is None or compare_versions(f[0], top[0]) > 0:
            top = f
    return {"driver": top[0] if top else None, "why": top[1] if top else None, "cuda": top[2] if top else None,
            "require": major_minor(require) if require else None,
            "branches": driver_branches(alternatives) if require else ()}


def image_verdict(need: Dict[str, Any], driver: Optional[str], driver_cuda: Optional[str]) -> str:
    """``runs`` | ``forward-compat`` (only through a brand/driver-branch alternative) | ``needs-newer-driver`` |
    ``no-driver`` (this machine's driver is not known) | ``no-cuda`` (the image says nothing of its CUDA)."""
    if need["driver"] is None:
        return "no-cuda"
    if not driver:
        return "no-driver"
    if need["why"] == "require" and driver_cuda:
        if compare_versions(driver_cuda, need["require"]) >= 0:
            return "runs"  # the runtime compares the driver's own CUDA version, not the driver's number
    elif compare_versions(driver, need["driver"]) >= 0:
        return "runs"
    branch = driver.split(".")[0]
    if need["why"] == "require" and any(b == branch for b, _ in need["branches"]):
        return "forward-compat"
    return "needs-newer-driver"


def check(s, image, tables=None) -> List:
    """The image's findings for snapshot ``s`` (``image``: the :class:`~cudaenv.model.reports.ImageFacts` read)."""
    if image is None:
        return []
    name = image.tags[0] if image.tags else image.ref
    if not image.readable:
        return [F("image-unreadable", "error", M("cannot read the image %s", image.ref),
                  M("cudaenv reads an image from disk without running or pulling it: %s.", image.why or M("not readable")),
                  ["docker save IMAGE -o image.tar && cudaenv doctor --image image.tar",
                   M("docker image inspect IMAGE > image.json && cudaenv doctor --image image.json    # the config alone")])]
    need = image_need(image, c.driver_system(s), tables)
    driver = c.driver_version(s)
    dcuda = c.driver_cuda(s, tables)
    verdict = image_verdict(need, driver, dcuda)
    if verdict == "no-cuda":
        return [F("image-no-cuda", "info", M("the image %s says nothing of its CUDA", name),
                  M("Its config sets no CUDA_VERSION or NVIDIA_REQUIRE_CUDA%s, so no driver floor can be read from it; "
                    "a CUDA program in it brings its own runtime (pip's nvidia-* wheels, a conda env), whose CUDA sets "
                    "the floor.", M(" and its layers hold no toolkit version.json or torch") if image.layers_read else
                    M(" (its layers were not read: give a docker save tarball or an OCI layout folder)")),
                  [M("docker run --rm --entrypoint python3 %s -c 'import torch; print(torch.version.cuda)'    # the CUDA its "
                     "torch brings, where it has one", name)])]
    if verdict == "no-driver":
        return [F("image-no-driver", "warning", M("the image %s needs driver %s or newer; this machine's is not known",
                                                   name, need["driver"]),
                  M("The image's %s needs driver %s or newer, and no NVIDIA driver answered here, so whether this machine "
                    "runs it is not known.", _what(need), need["driver"]),
                  [M("nvidia-smi    # on the machine that will run the image: its driver version")])]
    if verdict == "runs":
        return []
    native = drv.native_cuda_for_driver(driver, c.driver_system(s), c.table(tables))
    if verdict == "forward-compat":
        return [F("image-forward-compat", "warning", M("the image %s runs on driver %s only through forward compatibility",
                                                        name, driver),
                  M("Its NVIDIA_REQUIRE_CUDA asks for CUDA %s (driver %s or newer); the runtime still starts it on driver "
                    "branch %s for the GPU brands it lists (%s), and CUDA then runs through the image's forward-"
                    "compatibility libraries%s, which NVIDIA supports on data-center GPUs only: on another GPU its CUDA "
                    "programs fail with 'forward compatibility was attempted on non supported HW'.",
                    need["require"], need["driver"], driver.split(".")[0], ", ".join(_brands(need, driver)),
                    " (%s)" % image.compat_package if image.compat_package else ""),
                  _upgrade(s, need))]
    detail = M("The image's %s needs driver %s or newer; this machine has %s (CUDA %s). ",
               _what(need), need["driver"], driver, dcuda or "?")
    fix = _upgrade(s, need)
    if need["why"] == "require":
        detail += M("The NVIDIA runtime refuses to start it: 'nvidia-container-cli: requirement error: unsatisfied "
                    "condition: cuda>=%s'.", need["require"])
        minor = drv.min_driver_for_cuda(need["require"], c.driver_system(s), c.table(tables))
        if minor and compare_versions(driver, minor) >= 0:
            detail += M(" This driver runs CUDA %s programs by minor-version compatibility (from %s), so skipping the "
                        "runtime's check works for code that needs no newer PTX JIT.", need["require"], minor)
            fix.append(M("docker run --gpus all -e NVIDIA_DISABLE_REQUIRE=true %s ...    # skips the runtime's check only", name))
    else:
        detail += M("Its CUDA programs fail with 'CUDA driver version is insufficient for CUDA runtime version'.")
    if native:
        fix.append(M("# or an image built for CUDA %s or older (a tag such as nvidia/cuda:%s.*)", native, native))
    return [F("image-needs-newer-driver", "error", M("the image %s needs driver %s or newer; this machine has %s",
                                                     name, need["driver"], driver), detail, fix)]


def _what(need) -> str:
    if need["why"] == "torch":
        return M("torch built for CUDA %s", need["cuda"])
    return {"require": "NVIDIA_REQUIRE_CUDA (cuda>=%s)", "cuda": "CUDA %s"}[need["why"]] % need["cuda"]


def _brands(need, driver: str) -> Tuple[str, ...]:
    branch = driver.split(".")[0]
    return next((brands for b, brands in need["branches"] if b == branch), ())


def _upgrade(s, need) -> List[str]:
    from cudaenv.diagnose.driver import upgrade_driver_fix

    return list(upgrade_driver_fix(s, need["driver"], need["cuda"]))
