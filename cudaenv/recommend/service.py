"""The I/O the torch commands share: probe, read the index cache (or refresh it), decide.

``recommend_for(env, host, options)`` is `cudaenv torch recommend` without the printing; ``refresh_cache(env,
base, timeout)`` is `cudaenv torch refresh`; `cudaenv fix` calls :func:`load_index_data` and
:func:`request_for`. Every misuse is a :class:`~cudaenv.core.errors.UserError` (exit 2).
"""

from dataclasses import dataclass, field
from typing import Any, List, Mapping, NamedTuple, Optional, Sequence, Tuple

from cudaenv.model.record import Record
from cudaenv.core import config
from cudaenv.core.errors import UserError
from cudaenv.core.version import cc_tuple, compare_pep440, parse_driver_version, parse_python_version
from cudaenv.core.i18n import M, join


class Options(Record):
    """What the user asked (flags), before any probing."""

    python: Optional[str] = None  # --python: an interpreter, or a version ("3.11")
    python_version: Optional[str] = None
    torch: Optional[str] = None
    variant: Optional[str] = None
    driver: Optional[str] = None
    compute_capabilities: Tuple[str, ...] = ()
    os: Optional[str] = None
    machine: Optional[str] = None
    index_base: Optional[str] = None
    refresh: bool = False
    jetson: Optional[str] = None  # --jetson: a JetPack (6.2) or L4T (r36.4.3) release; "" the newest JetPack known
    installer: Optional[str] = None  # --installer: pip | uv | conda | pixi (default: the environment's, else torch's installer)
    mirror: Optional[str] = None  # --mirror NAME (data/torch_mirrors.json) or URL: the torch index, and its layout


def index_timeout(env: Mapping[str, str], explicit: Optional[float] = None) -> float:
    return config.seconds(env, "CUDAENV_INDEX_TIMEOUT", explicit)


def index_base(env: Mapping[str, str], explicit: Optional[str] = None) -> str:
    """The wheel index base; a malformed one is a usage error (exit 2), never "offline"."""
    from cudaenv.index.client import check_url
    from cudaenv.index.torch import index_base as base_of

    base = base_of(env, explicit)
    problem = check_url(base)
    if problem:
        flag = "--index-base" if explicit else "CUDAENV_TORCH_INDEX"
        raise UserError(M("%s: %s", flag, problem), hint=M("for example --index-base %s", config.TORCH_INDEX))
    return base


class Mirror(NamedTuple):
    name: str  # the table's name, or the URL as given
    base: str  # the index base: URL/cu126 is the variant's index (simple) or listing (flat)
    layout: str  # simple | flat | upstream


def mirror_for(value: Optional[str]) -> Optional[Mirror]:
    """``--mirror NAME`` from data/torch_mirrors.json, or ``--mirror URL`` (an index base, taken as a simple index:
    `cudaenv torch mirror-check URL` says which layout it really has); a usage error for anything else."""
    from cudaenv.facts import mirrors
    from cudaenv.index.client import check_url

    if not value:
        return None
    row = mirrors.find(value)
    if row is not None:
        return Mirror(row["name"], mirrors.base_of(row), row["layout"])
    url = value.strip().replace("/{variant}", "").rstrip("/")
    if "://" not in url:
        raise UserError(M("--mirror %s is not a mirror cudaenv knows", value), hint=M("one of %s, or the mirror's URL", ", ".join(mirrors.names())))
    problem = check_url(url)
    if problem:
        raise UserError(M("--mirror: %s", problem), hint=M("for example --mirror nju, or --mirror https://mirror.example/pytorch/whl"))
    return Mirror(url, url, "simple")


def split_python(value: Optional[str]) -> Tuple[Optional[str], Optional[str]]:
    """``--python 3.11`` is a what-if Python version; ``--python /path/python`` (or a name) is the interpreter."""
    if value and parse_python_version(value):
        return None, value.strip()
    return value, None


def load_index_data(env: Mapping[str, str], base: str, refresh_first: bool, timeout: float) -> Tuple[Any, List[str], bool]:
    """(live data or None, notes, index reachable?): refreshed when asked, else the cache when it is newer than
    the bundled tables. A bad cache gives one note."""
    from cudaenv.facts.torch import data_date
    from cudaenv.index import cache as ic
    from cudaenv.index import torch as it

    notes: List[str] = []
    path = ic.cache_file(env)
    reachable = True
    if refresh_first:
        result = it.refresh(base, timeout, extra_variants=bundled_variants())
        reachable = result.reachable
        if result.data is not None:
            try:
                ic.write_cache(path, result.data)
            except OSError as exc:
                notes.append(M("could not write the cache %s: %s", path, exc.strerror or exc))
            if result.pages_failed:
                notes.append(M("%d index page(s) could not be read: %s", result.pages_failed, join("; ", result.notes[:3])))
            return result.data, notes, True
        data, note = ic.load_cache(path, base, data_date())
        said = join("; ", result.notes[:2])
        notes.append(M("offline: %s; using the cache", said) if data is not None else M("offline: %s; using the bundled tables", said))
        if note:
            notes.append(note)
        return data, notes, reachable
    data, note = ic.load_cache(path, base, data_date())
    if note:
        notes.append(note)
    if data is not None and ic.cache_age_days(data) > 30:
        notes.append(M("the torch index cache is %d days old: `cudaenv torch refresh` updates it", ic.cache_age_days(data)))
    return data, notes, reachable


def bundled_variants() -> List[str]:
    from cudaenv.facts.torch import known_torch_versions, variants_for

    seen: List[str] = []
    for version in known_torch_versions()[-8:]:
        for system, machine in (("linux", "x86_64"), ("windows", "x86_64"), ("linux", "aarch64")):
            for v in variants_for(version, system, machine):
                if v not in seen and v != "default":
                    seen.append(v)
    return seen


def check_options(options: Options, env: Mapping[str, str]) -> None:
    config.check(env, ("CUDAENV_DRIVER_VERSION",))  # its own error, naming the variable
    if options.driver and parse_driver_version(options.driver) is None:
        raise UserError(M("--driver %s is not a driver version", options.driver), hint=M("for example --driver 550.54.15"))
    for cc in options.compute_capabilities:
        if cc_tuple(cc) is None:
            raise UserError(M("--compute-capability %s is not a compute capability", cc), hint=M("for example --compute-capability 8.6"))
    if options.python_version and parse_python_version(options.python_version) is None:
        raise UserError(M("--python-version %s is not a Python version", options.python_version), hint=M("for example --python-version 3.11"))
    if options.jetson is not None and jetson_what_if(options.jetson) is None:
        raise UserError(M("--jetson %s is not a JetPack or L4T release the Jetson table knows", options.jetson),
                        hint=M("for example --jetson 6.2 (JetPack) or --jetson r36.4.3 (L4T); see data/jetson.json"))


def mirror_changes(value: Optional[str]) -> dict:
    mirror = mirror_for(value)
    return {"index_layout": mirror.layout, "mirror": mirror.name} if mirror is not None else {}


class JetsonWhatIf(NamedTuple):
    l4t: Optional[str]
    jetpack: Optional[str]


def jetson_what_if(value: str) -> Optional[JetsonWhatIf]:
    """The board ``--jetson VALUE`` describes, from ``data/jetson.json``: a JetPack release (``6.2``), an L4T one
    (``r36.4.3``, ``L4T 36.4.3``, or any release whose major is 28 or more), or "" for the newest JetPack listed."""
    from cudaenv.core.resources import load_table
    from cudaenv.core.version import version_key

    rows = [r for r in load_table("jetson")["rows"] if isinstance(r.get("l4t"), str) and isinstance(r.get("jetpack"), str)]
    if not rows:
        return None
    text = value.strip().lower()
    if not text:
        row = max(rows, key=lambda r: version_key(r["jetpack"]))
        return JetsonWhatIf(row["l4t"], row["jetpack"])
    l4t = text[1:] if text.startswith("r") else text[3:].strip() if text.startswith("l4t") else None
    if l4t is None and text.split(".")[0].isdigit() and int(text.split(".")[0]) >= 28:
        l4t = text
    key, wanted = ("l4t", l4t) if l4t is not None else ("jetpack", text)
    ordered = sorted(rows, key=lambda r: version_key(r[key]), reverse=True)
    row = next((r for r in ordered if r[key] == wanted), None) or next((r for r in ordered if r[key].startswith(wanted + ".")), None)
    return JetsonWhatIf(row["l4t"], row["jetpack"]) if row is not None else None


def request_for(options: Options, env: Mapping[str, str], host: Any, snapshot: Any, python_version: Optional[str]) -> Any:
    """The frozen request: the probed snapshot with the what-if flags laid over it."""
    from cudaenv.probes.accelerator import probe_accelerator
    from cudaenv.recommend.request import request_from_snapshot

    check_options(options, env)
    driver = options.driver or config.value(env, "CUDAENV_DRIVER_VERSION")
    ccs = [c.strip() for c in options.compute_capabilities] or None
    system = {"macos": "darwin"}.get(options.os or "", options.os)
    machine = options.machine
    jetson = jetson_what_if(options.jetson) if options.jetson is not None else None
    if jetson is not None:  # a Jetson is an aarch64 Linux board whatever this machine is
        system, machine = system or "linux", machine or "aarch64"
    probed = getattr(getattr(snapshot, "platform", None), "system", None)
    if system and system != probed and not machine:
        machine = "arm64" if system == "darwin" else "x86_64"  # planning for another OS: its usual CPU
    return request_from_snapshot(
        snapshot, torch_version=options.torch, driver=driver.strip() if driver else None, compute_capabilities=ccs,
        system=system, machine=machine, python_version=python_version,
        index_base=mirror_for(options.mirror).base if options.mirror else index_base(env, options.index_base),
        variant=options.variant, accelerator=probe_accelerator(host, snapshot), jetson=jetson, installer=options.installer,
        cuda_override=env.get("CONDA_OVERRIDE_CUDA"), **mirror_changes(options.mirror),
    )


def recommend_for(env: Mapping[str, str], make_host: Any, options: Options) -> Any:
    """Probe (static torch pass only), fold in the cache and decide: the Recommendation with the notes."""
    from cudaenv.model.record import replace
    from cudaenv.probes.collect import collect_snapshot
    from cudaenv.recommend.decide import decide

    interpreter, what_if_python = split_python(options.python)
    python_version = options.python_version or what_if_python
    check_options(dataclasses_replace(options, python_version=python_version), env)
    base = mirror_for(options.mirror).base if options.mirror else index_base(env, options.index_base)
    host = make_host()
    snapshot = collect_snapshot(host, python=interpreter, quick=True)
    index_data, notes, _ = load_index_data(env, base, options.refresh, index_timeout(env))
    rec = decide(request_for(options, env, host, snapshot, python_version), index_data)
    if notes:
        rec = replace(rec, notes=tuple(rec.notes) + tuple(notes))
    return rec


def dataclasses_replace(record: Any, **changes: Any) -> Any:
    from cudaenv.model.record import replace

    return replace(record, **changes)


# ------------------------------------------------------------------ refresh
@dataclass
class RefreshOutcome:
    ok: bool
    base: str
    notes: List[str] = field(default_factory=list)
    cache_file: Optional[str] = None
    pages_read: int = 0
    pages_failed: int = 0
    variants: List[str] = field(default_factory=list)
    new_variants: List[str] = field(default_factory=list)
    versions: Sequence[str] = ()
    new_versions: List[str] = field(default_factory=list)
    message: Optional[str] = None  # why nothing was cached
    cache_note: Optional[str] = None  # the cache in place is bad (said once)

    def report(self) -> Any:
        """The JSON contract record (``cudaenv torch refresh --json``)."""
        from cudaenv.model.reports import RefreshReport

        if not self.ok:
            notes = [self.message] + self.notes + ([self.cache_note] if self.cache_note else [])
            return RefreshReport(False, self.base, notes=tuple(n for n in notes if n))
        return RefreshReport(True, self.base, self.cache_file, self.pages_read, self.pages_failed, tuple(self.variants),
                             tuple(self.new_variants), tuple(self.versions), tuple(self.new_versions), tuple(self.notes))


def refresh_cache(env: Mapping[str, str], base_flag: Optional[str], timeout_flag: Optional[float]) -> RefreshOutcome:
    """`cudaenv torch refresh`: read the index within the timeout, write the cache only when it listed torch wheels."""
    from cudaenv.facts.torch import data_date, known_torch_versions, variant_sort_key, variants_for
    from cudaenv.index import cache as ic
    from cudaenv.index import torch as it

    base = index_base(env, base_flag)
    timeout = index_timeout(env, timeout_flag)
    result = it.refresh(base, timeout, extra_variants=bundled_variants())
    path = ic.cache_file(env)
    if result.data is None:
        _, note = ic.load_cache(path, base, data_date())
        listed_nothing = result.reachable and result.pages_read > 0
        if listed_nothing:
            message = M("%s lists no torch wheels; the cache was not written", base)
        else:
            message = M("offline: nothing could be read from %s; the bundled tables stay in use", base)
        return RefreshOutcome(False, base, result.notes, message=message, cache_note=note)
    try:
        ic.write_cache(path, result.data)
    except OSError as exc:
        raise UserError(M("could not write the cache %s: %s", path, exc.strerror or exc), hint=M("set CUDAENV_CACHE_DIR to a writable folder"))
    bundled = set()
    for version in known_torch_versions(include_unreleased=True):
        for system, machine in (("linux", "x86_64"), ("windows", "x86_64"), ("linux", "aarch64")):
            bundled.update(variants_for(version, system, machine))
    learned = sorted(result.data.variants, key=variant_sort_key)
    versions = result.data.torch_versions()
    released = known_torch_versions()
    return RefreshOutcome(
        True, base, result.notes, path, result.pages_read, result.pages_failed, learned, [v for v in learned if v not in bundled],
        versions, [v for v in versions if v not in released and compare_pep440(v, released[-1]) > 0])
