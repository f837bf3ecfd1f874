"""What will happen when this machine loads the checkpoint, and the line that makes it load. Pure: the report
holds the saved devices and this machine's visible GPUs (:func:`probe_visible_gpus` reads those, cheaply).

The torch.load errors quoted are torch 2.13's ``_validate_device`` (``T:serialization.py:601-650``, messages at
635-649; the project's checkpoint facts, section 1.6).
"""

from __future__ import annotations

from cudaenv.checkpoint.names import WRAPPER_PREFIXES
from cudaenv.checkpoint.report import VisibleGpus
from cudaenv.core.i18n import M

TYPE_CHECKING = False
if TYPE_CHECKING:  # off inspect's start-up (typing costs more than the whole walk of a small file)
    from typing import Dict, List, Optional

    from cudaenv.checkpoint.report import CheckpointReport


def _cuda_index(device: str) -> Optional[int]:
    """N of a ``cuda:N`` device string (1-4 decimal digits; ``cuda`` alone is 0), None for any other string.

    Without re, which costs `checkpoint inspect` more than half a ``python -c pass`` to import: the test of
    ``^cuda(?::(\\d{1,4}))?$`` as ``re.match`` reads it (``$`` also before one final newline, ``\\d`` any Unicode
    decimal digit, which ``int`` reads)."""
    s = device[:-1] if device.endswith("\n") else device
    if s == "cuda":
        return 0
    digits = s[5:]
    if s.startswith("cuda:") and 0 < len(digits) <= 4 and digits.isdecimal():
        return int(digits)
    return None


def probe_visible_gpus(host) -> VisibleGpus:
    """The GPUs CUDA would show a process here: ``nvidia-smi -L`` (one run, the host's timeout) filtered by
    CUDA_VISIBLE_DEVICES; no nvidia-smi means none. torch is never imported."""
    from cudaenv.probes.nvidia_smi_path import find_nvidia_smi

    gpus = ()
    source = "nvidia-smi -L"
    smi = find_nvidia_smi(host)
    if smi is None:
        source = M("no nvidia-smi")
    else:
        run = host.run([smi, "-L"])
        if run.ok:
            from cudaenv.parse.nvidia_smi import parse_list  # its patterns: only for an output to read

            gpus = parse_list(run.stdout)
        else:
            source = M("nvidia-smi -L failed")
    if not gpus:  # no GPU listed: none is visible whatever CUDA_VISIBLE_DEVICES says (and its parser stays unimported)
        return VisibleGpus(0, (), source + (M(" and CUDA_VISIBLE_DEVICES") if host.env.get("CUDA_VISIBLE_DEVICES") is not None else ""))
    from cudaenv.probes.visibility import probe_visibility

    visible = probe_visibility(host, gpus)
    if visible.cuda_visible_devices is not None:
        source += M(" and CUDA_VISIBLE_DEVICES")
    return VisibleGpus(len(visible.mapping), tuple("cuda:%d" % m.logical for m in visible.mapping), source)


def target_device(choice: str, visible: Optional[VisibleGpus]) -> str:
    """``--map-location auto``: the first visible device, else cpu; anything else as given."""
    if choice == "auto":
        return "cuda:0" if visible is not None and visible.count > 0 else "cpu"
    return choice


UNREAD = "not read, so not checked: "  # how a weights_only reason for a pickle that was not read starts (analyze)


def _q(path: str) -> str:
    from cudaenv.core.text import shell_quote

    return shell_quote(path)


def advise(report: CheckpointReport) -> List[str]:
    """Sentences (with the exact code to run) for a person on this machine."""
    out: List[str] = []
    path = report.path
    saved = [d for d in report.devices if d.via == "storage"]
    cuda: Dict[str, int] = {}
    others: Dict[str, int] = {}
    for d in saved:
        if _cuda_index(d.device) is not None:
            cuda[d.device] = d.count
        elif d.device != "cpu":
            others[d.device] = d.count
    vis = report.visible
    map_flag = None  # the --map-location of a fix command offered above, for the one-command line below
    if cuda and vis is not None:
        seen = vis.count
        where = M("this machine sees %s", M("no GPU") if seen == 0 else M("%d GPU%s (%s)", seen, "" if seen == 1 else "s", ", ".join(vis.devices[:4])))
        names = sorted(cuda, key=_cuda_index)
        too_high = [d for d in names if _cuda_index(d) >= seen]
        if seen == 0:
            out.append(M("saved on %s; %s: plain torch.load fails ('Attempting to deserialize object on a CUDA device but "
                       "torch.cuda.is_available() is False'). Load it with torch.load(%r, map_location=\"cpu\"), or rewrite it "
                       "once: %s", ", ".join(names), where, path, fix_command(path, "--map-location cpu")))
            map_flag = "--map-location cpu"
        elif too_high:
            mapping = ", ".join('"%s": "cuda:0"' % d for d in too_high)
            out.append(M("saved on %s; %s: torch.load fails for %s ('Attempting to deserialize object on CUDA device N but "
                       "torch.cuda.device_count() is %d'). Load it with torch.load(%r, map_location={%s}), or rewrite it: "
                       "%s", ", ".join(names), where, ", ".join(too_high), seen, path, mapping, fix_command(path, "--map-location cuda:0")))
            map_flag = "--map-location cuda:0"
        else:
            out.append(M("saved on %s; %s: it loads onto the same devices (map_location=\"cpu\" keeps it off the GPU)", ", ".join(names), where))
    elif cuda:
        out.append(M("saved on %s: on a machine without those GPUs load it with map_location=\"cpu\" or a mapping such as "
                   "map_location={\"%s\": \"cuda:0\"}", ", ".join(sorted(cuda)), sorted(cuda)[-1]))
    for d, n in sorted(others.items()):
        out.append(M("%d storage%s saved on %s: torch.load needs that backend, or map_location=\"cpu\"", n, ("" if n == 1 else "s"), d))
    for d in report.devices:
        if d.via == "device-value":
            out.append(M("%s stored in the checkpoint (a device value, not a tensor): map_location does not change it, and "
                       "code that moves tensors to it needs that device", (M("a torch.device %s is", d.device) if d.count == 1 else M("%d torch.device %s values are", d.count, d.device))))
        elif d.via != "storage":
            out.append(M("%d tensor%s rebuilt on %s (%s), outside the storage locations: map_location does not change that", d.count, ("" if d.count == 1 else "s"), d.device, d.via))
    strip = sorted({p.prefix for p in report.prefixes if p.where == "keys" and p.prefix in _WRAPPER_CHAINS})
    if strip:
        flags = " ".join("--strip-prefix %s" % p for p in _split_chains(strip))
        out.append(M("keys carry wrapper prefixes (%s; DataParallel/DDP `module.`, torch.compile `_orig_mod.`); "
                   "cudaenv.portable.load_state_dict(model, %r) strips or adds what the model needs as it loads, or "
                   "rewrite the file once: %s", ", ".join(strip), path, fix_command(path, flags)))
        if map_flag:
            out.append(M("both in one rewrite: %s", fix_command(path, map_flag + " " + flags)))
    unread = [r for r in report.weights_only_reasons if r.startswith(UNREAD)]
    if report.weights_only is False and unread:
        out.append(M("cudaenv did not read the pickle torch.load would run (%s), so it cannot say what loading it does: "
                   "load it only if you trust where it came from", _unread_what(unread[0])))
    elif report.weights_only is False and report.format not in ("unknown", "zip"):
        if report.security:
            out.append(M("torch.load(weights_only=True), the default since torch 2.6, refuses it; do not load it with "
                       "weights_only=False unless you trust where it came from"))
        else:
            out.append(M("torch.load(weights_only=True), the default since torch 2.6, refuses it: %s", report.weights_only_reasons[0]))
    return out


_WRAPPER_CHAINS = set()
for a in WRAPPER_PREFIXES:
    _WRAPPER_CHAINS.add(a)
    for b in WRAPPER_PREFIXES:
        _WRAPPER_CHAINS.add(a + b)
        for c in WRAPPER_PREFIXES:
            _WRAPPER_CHAINS.add(a + b + c)


def _split_chains(chains) -> List[str]:
    """The --strip-prefix flags for these chains (the longest first, so nested prefixes come off in one run; then in
    alphabetical order, so the line is the same in every run, whatever the string hashes)."""
    return sorted(set(chains), key=lambda c: (-len(c), c))


def fix_command(path: str, flags: str) -> str:
    """The ``cudaenv checkpoint fix`` line for ``path``: the flags, ``-o`` the fixed name, then ``--`` and the file, so
    that a file named ``-rf.pt`` is an operand, never an option (and an OUT that starts with ``-`` gets ``./``)."""
    out = _fixed(path)
    if out.startswith("-"):
        out = "./" + out
    return "cudaenv checkpoint fix %s -o %s -- %s" % (flags, _q(out), _q(path))


def _fixed(path: str) -> str:
    base, dot, ext = path.rpartition(".")
    if dot and "/" not in ext and base:
        return "%s.fixed.%s" % (base, ext)
    return path + ".fixed"


def needs_mapping(report: CheckpointReport) -> bool:
    """True when a plain torch.load here would fail on a saved device (cuda:N beyond the visible GPUs)."""
    vis = report.visible
    for d in report.devices:
        if d.via != "storage":
            continue
        n = _cuda_index(d.device)
        if n is not None and (vis is None or n >= vis.count):
            return True
    return False


def _unread_what(reason: str) -> str:
    """The pickle a weights_only reason for one that was not read names (analyze makes it ``M("not read, so not
    checked: %s", what)``): its value, still a marked message, else the text after :data:`UNREAD`."""
    parts = getattr(reason, "parts", ())
    if len(parts) == 1 and isinstance(parts[0][1], tuple) and len(parts[0][1]) == 1:
        return parts[0][1][0]
    return reason[len(UNREAD):]
