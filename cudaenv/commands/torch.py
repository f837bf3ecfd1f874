"""`cudaenv torch recommend` and `cudaenv torch refresh`.

recommend: probe this machine (static torch pass only: torch is never imported), fold in the what-if
flags, the cached live index data (never the network unless ``--refresh``) and print the decision.
refresh: read the live index (``--index-base`` / ``CUDAENV_TORCH_INDEX``), cache what it learned.
"""

import argparse
import json
import re
from typing import Any, Dict, List, Mapping, Optional, Tuple

from cudaenv.errors import UserError

HELP = "recommend the right torch build for this machine"

_VERSION_RE = re.compile(r"^\d+\.\d+(\.\d+)?t?$")
_CC_RE = re.compile(r"^(\d+\.\d+|sm_\d+[a-z]?)$")

def add_arguments(parser: argparse.ArgumentParser) -> None:
    from cudaenv.options import add_host_options

    sub = parser.add_subparsers(dest="torch_command", metavar="ACTION", parser_class=type(parser))
    rec = sub.add_parser("recommend", help="pick the torch wheel index for this machine and print the install command",
                         description="Pick the torch wheel index for this machine (driver, every GPU, OS, Python, torch version).")
    add_host_options(rec)
    rec.add_argument("--torch", metavar="VERSION", help="torch release to plan for: 2.7.1, 2.7 or latest (default: the installed one)")
    rec.add_argument("--variant", metavar="NAME", help="ask about one variant (cu121, cpu, rocm6.3, ...)")
    rec.add_argument("--driver", metavar="VERSION", help="what if the driver were VERSION (env: CUDAENV_DRIVER_VERSION)")
    rec.add_argument("--compute-capability", metavar="X.Y", action="append", dest="compute_capability",
                     help="what if the GPUs were these (repeatable: --compute-capability 6.1 --compute-capability 8.6)")
    rec.add_argument("--os", choices=("linux", "windows", "macos"), help="what if the OS were this")
    rec.add_argument("--machine", choices=("x86_64", "aarch64", "arm64"), help="what if the CPU architecture were this")
    rec.add_argument("--python-version", metavar="X.Y", help="what if the Python were X.Y (--python 3.11 means the same)")
    rec.add_argument("--index-base", metavar="URL", help="wheel index base instead of https://download.pytorch.org/whl (env: CUDAENV_TORCH_INDEX)")
    rec.add_argument("--refresh", action="store_true", help="read the live index first (otherwise only the cache and bundled tables)")
    rec.add_argument("--format", choices=("text", "json", "requirements", "pyproject"), default="text", help="output form")
    rec.add_argument("--json", action="store_true", help="same as --format json")

    ref = sub.add_parser("refresh", help="read the live torch index and cache which versions and variants exist",
                         description="Read {base}/torch/ and {base}/VARIANT/torch/ and cache what exists (offline first).")
    ref.add_argument("--index-base", metavar="URL", help="wheel index base (env: CUDAENV_TORCH_INDEX)")
    ref.add_argument("--timeout", metavar="SECONDS", type=float, help="timeout per request (default 15, env: CUDAENV_INDEX_TIMEOUT)")
    ref.add_argument("--json", action="store_true", help="print what was learned as JSON")


def run(args: argparse.Namespace, ctx: Any) -> int:
    action = getattr(args, "torch_command", None)
    if action == "recommend":
        return run_recommend(args, ctx)
    if action == "refresh":
        return run_refresh(args, ctx)
    raise UserError("say what to do: `cudaenv torch recommend` or `cudaenv torch refresh`", hint="see `cudaenv torch --help`")


# ------------------------------------------------------------------ shared with `cudaenv fix`
def index_timeout(env: Mapping[str, str], explicit: Optional[float] = None) -> float:
    from cudaenv import config

    return config.seconds(env, "CUDAENV_INDEX_TIMEOUT", explicit)


def split_python(value: Optional[str]) -> Tuple[Optional[str], Optional[str]]:
    """``--python 3.11`` is a what-if Python version; ``--python /path/python`` (or a name) is the interpreter."""
    if value and _VERSION_RE.match(value.strip()):
        return None, value.strip()
    return value, None


def load_index_data(env: Mapping[str, str], base: str, refresh_first: bool, timeout: float) -> Tuple[Any, List[str]]:
    """The live data to fold in: refreshed when asked, else the cache when it is newer than the bundled tables."""
    from cudaenv.facts.torch import data_date
    from cudaenv import torch_index as ti

    notes: List[str] = []
    path = ti.cache_file(env)
    if refresh_first:
        result = ti.refresh(base, timeout, extra_variants=_bundled_variants())
        if result.data is not None:
            try:
                ti.write_cache(path, result.data)
            except OSError as exc:
                notes.append("could not write the cache %s: %s" % (path, exc.strerror or exc))
            if result.pages_failed:
                notes.append("%d index page(s) could not be read: %s" % (result.pages_failed, "; ".join(result.notes[:3])))
            return result.data, notes
        notes.append("offline: %s; using %s" % ("; ".join(result.notes[:2]), "the cache" if _exists(path) else "the bundled tables"))
    data, note = ti.load_cache(path, base, data_date())
    if note:
        notes.append(note)
    if data is not None and ti.cache_age_days(data) > 30:
        notes.append("the torch index cache is %d days old: `cudaenv torch refresh` updates it" % ti.cache_age_days(data))
    return data, notes


def _exists(path: str) -> bool:
    import os

    return os.path.isfile(path)


def _bundled_variants() -> List[str]:
    from cudaenv.facts.torch import variants_for, known_torch_versions

    seen: List[str] = []
    for version in known_torch_versions()[-8:]:
        for system, machine in (("linux", "x86_64"), ("windows", "x86_64"), ("linux", "aarch64")):
            for v in variants_for(version, system, machine):
                if v not in seen and v != "default":
                    seen.append(v)
    return seen


def installed_companions(snapshot: Any) -> Dict[str, str]:
    """torchvision/torchaudio installed beside torch, as the torch probe's static pass found them."""
    torch = getattr(snapshot, "torch", None)
    pairs = (entry.partition("==") for entry in getattr(torch, "companions", ()) or ())
    return {name: version for name, _, version in pairs if version}


def detect_accelerator(host: Any, snapshot: Any) -> Optional[str]:
    """``rocm`` or ``xpu`` from simple signals; None otherwise (see the README)."""
    torch = getattr(snapshot, "torch", None)
    version = getattr(torch, "version", None) or ""
    if getattr(torch, "hip", None) or "+rocm" in version:
        return "rocm"
    if "+xpu" in version:
        return "xpu"
    if host.is_dir("/opt/rocm") or host.exists("/dev/kfd"):
        return "rocm"
    if getattr(getattr(snapshot, "platform", None), "pci_amd_devices", ()):
        return "rocm"
    if host.which("xpu-smi"):
        return "xpu"
    return None


def build_recommendation(args: argparse.Namespace, ctx: Any, host: Any, snapshot: Any, index_data: Any, python_version: Optional[str]):
    from cudaenv.recommend import recommend
    from cudaenv.torch_index import index_base

    from cudaenv import config

    driver = getattr(args, "driver", None) or config.value(ctx.env, "CUDAENV_DRIVER_VERSION")
    if driver and not re.match(r"^\d+(\.\d+)*$", driver.strip()):
        raise UserError("--driver %s is not a driver version" % driver, hint="for example --driver 550.54.15")
    ccs = getattr(args, "compute_capability", None) or None
    for cc in ccs or ():
        if not _CC_RE.match(cc.strip().lower()):
            raise UserError("--compute-capability %s is not a compute capability" % cc, hint="for example --compute-capability 8.6")
    os_name = getattr(args, "os", None)
    system = {"macos": "darwin"}.get(os_name, os_name)
    machine = getattr(args, "machine", None)
    probed = getattr(getattr(snapshot, "platform", None), "system", None)
    if system and system != probed and not machine:
        machine = "arm64" if system == "darwin" else "x86_64"  # planning for another OS: its usual CPU
    return recommend(
        snapshot,
        torch_version=getattr(args, "torch", None),
        driver=driver.strip() if driver else None,
        compute_capabilities=[c.strip() for c in ccs] if ccs else None,
        system=system,
        machine=machine,
        python_version=python_version,
        index_base=index_base(ctx.env, getattr(args, "index_base", None)),
        index_data=index_data,
        variant=getattr(args, "variant", None),
        companions=installed_companions(snapshot),
        accelerator=detect_accelerator(host, snapshot),
    )


# ------------------------------------------------------------------ recommend
def run_recommend(args: argparse.Namespace, ctx: Any) -> int:
    from cudaenv._record import replace
    from cudaenv.collect import collect_snapshot
    from cudaenv.recommend import render_pyproject, render_requirements, render_text
    from cudaenv.torch_index import index_base

    interpreter, what_if_python = split_python(args.python)
    python_version = args.python_version or what_if_python
    if python_version and not _VERSION_RE.match(python_version):
        raise UserError("--python-version %s is not a Python version" % python_version, hint="for example --python-version 3.11")
    host = ctx.host(args)
    snapshot = collect_snapshot(host, python=interpreter, quick=True)
    base = index_base(ctx.env, args.index_base)
    index_data, notes = load_index_data(ctx.env, base, args.refresh, index_timeout(ctx.env))
    rec = build_recommendation(args, ctx, host, snapshot, index_data, python_version)
    if notes:
        rec = replace(rec, notes=tuple(rec.notes) + tuple(notes))
    fmt = "json" if args.json else args.format
    if fmt == "json":
        ctx.out.write(json.dumps(rec.to_dict(), indent=2) + "\n")
    elif fmt == "requirements":
        ctx.out.write(render_requirements(rec))
    elif fmt == "pyproject":
        ctx.out.write(render_pyproject(rec))
    else:
        ctx.out.write(render_text(rec))
    if fmt in ("requirements", "pyproject"):
        for note in rec.notes:
            ctx.err.write("note: %s\n" % note)
    return 0 if rec.ok else 1


# ------------------------------------------------------------------ refresh
def run_refresh(args: argparse.Namespace, ctx: Any) -> int:
    from cudaenv import torch_index as ti
    from cudaenv.facts.drivers import compare_versions
    from cudaenv.facts.torch import known_torch_versions, variant_sort_key, variants_for

    base = ti.index_base(ctx.env, args.index_base)
    timeout = index_timeout(ctx.env, args.timeout)
    result = ti.refresh(base, timeout, extra_variants=_bundled_variants())
    path = ti.cache_file(ctx.env)
    if result.data is None:
        message = "offline: nothing could be read from %s (%s); the bundled tables stay in use" % (base, "; ".join(result.notes[:3]))
        if args.json:
            from cudaenv.model.reports import RefreshReport

            ctx.out.write(json.dumps(RefreshReport(False, base, notes=tuple(result.notes)).to_dict(), indent=2) + "\n")
        else:
            ctx.err.write("cudaenv: %s\n" % message)
        return 1
    try:
        ti.write_cache(path, result.data)
    except OSError as exc:
        raise UserError("could not write the cache %s: %s" % (path, exc.strerror or exc), hint="set CUDAENV_CACHE_DIR to a writable folder")
    bundled = set()
    for version in known_torch_versions(include_unreleased=True):
        for system, machine in (("linux", "x86_64"), ("windows", "x86_64"), ("linux", "aarch64")):
            bundled.update(variants_for(version, system, machine))
    learned = sorted(result.data.variants, key=variant_sort_key)
    new = [v for v in learned if v not in bundled]
    versions = result.data.torch_versions()
    released = known_torch_versions()
    new_versions = [v for v in versions if v not in released and compare_versions(v, released[-1]) > 0]
    if args.json:
        from cudaenv.model.reports import RefreshReport

        report = RefreshReport(True, base, path, result.pages_read, result.pages_failed, tuple(learned), tuple(new),
                               tuple(versions), tuple(new_versions), tuple(result.notes))
        ctx.out.write(json.dumps(report.to_dict(), indent=2) + "\n")
        return 0
    ctx.out.write("read %d index page(s) from %s%s\n" % (result.pages_read, base,
                  " (%d could not be read)" % result.pages_failed if result.pages_failed else ""))
    if versions:
        ctx.out.write("torch releases: %s to %s\n" % (versions[0], versions[-1]))
    ctx.out.write("variants: %s\n" % (", ".join(learned) or "none"))
    if new:
        ctx.out.write("new since the bundled table: %s\n" % ", ".join(new))
    if new_versions:
        ctx.out.write("torch releases the bundled table does not know: %s\n" % ", ".join(new_versions))
    for note in result.notes:
        ctx.out.write("note: %s\n" % note)
    ctx.out.write("cache written to %s\n" % path)
    return 0
