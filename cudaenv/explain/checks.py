"""Checks that decide whether an error-table row really fits a text, and the values it then fills in.

A row of ``data/error_patterns.json`` may name a ``check``; when its patterns match, the check reads the values
of the patterns (and the text they matched in) and returns more values, or None when the row does not fit after
all. Two rows with the same patterns and opposite checks tell causes apart that one message can show:

* ``state_dict_prefix`` / ``state_dict_mismatch``: the quoted ``Missing key(s)`` and ``Unexpected key(s)``
  lists of ``load_state_dict`` differ only by a ``module.`` (DataParallel/DDP) or ``_orig_mod.`` (torch.compile)
  prefix, in either direction, or by something else (a checkpoint nested under ``state_dict``, renamed layers);
* ``capability_harmless`` / ``capability_too_old`` / ``capability_no_kernels``: torch's capability warnings,
  by where the GPU's compute capability lies against torch's range (a newer minor of the newest major runs the
  older minor's code; an older one than the oldest never runs);
* ``nvcc_arch``: the first CUDA whose nvcc compiles for the architecture (``data/cuda_arch.json``);
* ``torch_wheel``: the Pythons and platforms a torch release has wheels for (``data/torch_python.json``,
  ``data/torch_variants.json``);
* ``runfile``: a corrupt download, a full /tmp, or not a CUDA installer at all.

A value set to "" is a flag: an advice line that starts with ``{flag}`` is shown only when the check set it.
Pure functions of their input; bounded (every list is capped), never raise.
"""

import re
from functools import lru_cache
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from cudaenv.checkpoint.names import EMA_ENTRIES, WEIGHTS_ENTRIES, WRAPPER_PREFIXES, prefix_fix, strip_wrappers

# the wheels a capability check names when the paste shows no platform (rank's "platform" rows: linux-aarch64, ...)
DEFAULT_PLATFORM = "linux-x86_64"
MAX_SEGMENT = 200_000  # characters of one key list read
MAX_KEYS = 5_000
# the top-level key a "Missing key(s)" error most likely wants unwrapped, first found first (DeepSpeed saves "module")
NESTED = WEIGHTS_ENTRIES + EMA_ENTRIES + ("module",)

# a leading \b gates each search: re gives a case-insensitive pattern no fast first-letter test, so without it every
# position of a 1 MB paste enters the branch
_LABEL = re.compile(r"\b(Missing|Unexpected) key\(s\) in state_dict\s{0,4}[:：]", re.IGNORECASE)
_STOP = re.compile(r"\b(?:Missing|Unexpected) key\(s\) in state_dict|\bsize mismatch for |\n\s*\n|\n[^\s\"'“”‘’`]", re.IGNORECASE)
_KEY = re.compile(r"[\"'“”‘’`]([\w.]{1,300})[\"'“”‘’`]")
_SIZE = re.compile(r"\bsize mismatch for ([\w.]{1,300})\s{0,4}[:：]", re.IGNORECASE)
_OLD_KEY = re.compile(r"\b(?:unexpected|missing) key[\"'\s]{1,4}([\w.]{1,300})[\"']{0,2} in state_dict", re.IGNORECASE)


# ------------------------------------------------------------------------------------------- state dicts
def key_lists(text: str) -> Tuple[List[str], List[str]]:
    """(missing, unexpected) keys quoted in a ``load_state_dict`` error; each list in the order printed."""
    missing, unexpected = _key_lists(text)
    return list(missing), list(unexpected)


@lru_cache(maxsize=2)
def _key_lists(text: str) -> Tuple[Tuple[str, ...], Tuple[str, ...]]:
    """:func:`key_lists`, once per text (the prefix and mismatch rows both read the same text's lists)."""
    out: Dict[str, List[str]] = {"missing": [], "unexpected": []}
    if text.isascii() and "key(s) in state_dict" not in text.lower():  # the label's literal (ASCII: lower() is what
        return (), ()  # re.IGNORECASE compares): a text without it has no list, and 1 MB is not scanned twice
    for label in _LABEL.finditer(text):
        start = label.end()
        stop = _STOP.search(text, start, start + MAX_SEGMENT)
        segment = text[start: stop.start() if stop else start + MAX_SEGMENT]
        keys = out[label.group(1).lower()]
        for m in _KEY.finditer(segment):
            if len(keys) >= MAX_KEYS:
                break
            keys.append(m.group(1))
    return tuple(out["missing"]), tuple(out["unexpected"])


TOLERATED = (".num_batches_tracked",)  # BatchNorm fills a missing counter itself: torch never lists it as missing


def _tolerated(keys: Sequence[str], other: Sequence[str]) -> Tuple[str, ...]:
    """``keys`` less those a module fills in when absent (BatchNorm's ``num_batches_tracked``) that have no partner in
    ``other``: loading DataParallel's state_dict into a bare model with BatchNorm lists ``module.bn.num_batches_tracked``
    as unexpected but never ``bn.num_batches_tracked`` as missing."""
    partners = {strip_wrappers(k) for k in other}
    return tuple(k for k in keys if not (k.endswith(TOLERATED) and strip_wrappers(k) not in partners))


def _extra_prefix(more: Sequence[str], fewer: Sequence[str]) -> Optional[str]:
    """The prefix every key of ``more`` has beyond the same key in ``fewer`` (None when not one prefix)."""
    for p in WRAPPER_PREFIXES + ("_orig_mod.module.", "module._orig_mod."):
        if all(k.startswith(p) for k in more) and {k[len(p):] for k in more} == set(fewer):
            return p
    return None


def _prefix_verdict(text: str, values: Dict[str, str]) -> Optional[Dict[str, str]]:
    """The prefix values when the key lists differ only by a prefix; None otherwise."""
    missing, unexpected = key_lists(text)
    if missing and unexpected:
        missing, unexpected = _tolerated(missing, unexpected), _tolerated(unexpected, missing)
        if {strip_wrappers(k) for k in missing} != {strip_wrappers(k) for k in unexpected}:
            return None
        p = _extra_prefix(unexpected, missing)
        if p:
            return {"prefix": p, "if_ckpt_prefixed": "", "key_count": str(len(unexpected))}
        p = _extra_prefix(missing, unexpected)
        if p:
            return {"prefix": p, "if_model_prefixed": "", "key_count": str(len(missing))}
        return None
    one_side = missing or unexpected
    if one_side and not (missing and unexpected):  # only one list pasted: every key must carry the prefix
        for p in WRAPPER_PREFIXES:
            if all(k.startswith(p) for k in one_side):
                side = "if_ckpt_prefixed" if unexpected else "if_model_prefixed"
                return {"prefix": p, side: "", "key_count": str(len(one_side))}
        return None
    if not missing and not unexpected:
        old = _OLD_KEY.search(text)
        key = old.group(1) if old else values.get("old_key")
        if key and "unexpected" in (old.group(0).lower() if old else "unexpected"):
            for p in WRAPPER_PREFIXES:
                if key.startswith(p):
                    return {"prefix": p, "if_ckpt_prefixed": "", "key_count": "1"}
    return None


def state_dict_prefix(values: Dict[str, str], text: str) -> Optional[Dict[str, str]]:
    if _SIZE.search(text):
        return None
    found = _prefix_verdict(text, values)
    if found is None:
        return None
    found["wrapper"] = "DataParallel/DistributedDataParallel" if "module." in found["prefix"] else "torch.compile"
    return found


def incompatible_lists(text: str) -> Tuple[List[str], List[str]]:
    """(missing, unexpected) of a printed ``_IncompatibleKeys(missing_keys=[...], unexpected_keys=[...])``: what
    ``model.load_state_dict(..., strict=False)`` returns, as ``print`` shows it (the first one in the text)."""
    missing, unexpected, _cut = _incompatible(text)
    return missing, unexpected


def _incompatible(text: str) -> Tuple[List[str], List[str], bool]:
    """:func:`incompatible_lists`, and whether a list runs to the end of the text (the paste was cut)."""
    out: List[List[str]] = []
    cut = False
    at = text.find("_IncompatibleKeys(")
    if at < 0:
        return [], [], False
    for label in ("missing_keys=[", "unexpected_keys=["):
        start = text.find(label, at, at + MAX_SEGMENT)
        if start < 0:
            out.append([])
            continue
        start += len(label)
        stop = text.find("]", start, start + MAX_SEGMENT)
        cut = cut or stop < 0
        segment = text[start: stop if stop >= 0 else start + MAX_SEGMENT]
        out.append([m.group(1) for _, m in zip(range(MAX_KEYS), _KEY.finditer(segment))])
        at = stop if stop >= 0 else start
    return out[0], out[1], cut


_MMCV_LABELS = ("missing keys in source state_dict:", "unexpected key in source state_dict:")
_MMCV_CUT = "..."  # where a paste was cut ("......", "[...]": no key holds two dots in a row)
_BARE_KEY = re.compile(r"[\w.]{1,300}")


def mmcv_lists(text: str) -> Tuple[List[str], List[str], bool]:
    """(missing, unexpected, cut) of mmcv's (and mmengine's) ``load_state_dict`` warning: ``The model and loaded
    state dict do not match exactly``, then ``unexpected key in source state_dict: a, b`` and ``missing keys in
    source state_dict: c, d``, each a comma-separated list ended by a blank line (their ``load_checkpoint`` loads
    with ``strict=False`` by default and only logs this: mmcv/runner/checkpoint.py, load_state_dict). A list is read
    up to the other's label, a blank line or ``...``; line breaks inside it are a terminal's wrapping and are
    dropped. ``cut``: a list ran to the end of the text or to ``...``."""
    lists: List[List[str]] = []
    cut = False
    for label in _MMCV_LABELS:
        start = text.find(label)
        if start < 0:
            lists.append([])
            continue
        start += len(label)
        limit = min(len(text), start + MAX_SEGMENT)
        ends = [e for e in (text.find(x, start, limit) for x in _MMCV_LABELS + ("\n\n",)) if e >= 0]
        marker = text.find(_MMCV_CUT, start, limit)
        stop = min(ends + ([marker] if marker >= 0 else []), default=limit)
        cut = cut or stop == marker or (not ends and not text[start:stop].endswith("\n"))  # (ended: a whole last line)
        keys = []
        for part in re.split("[,\uff0c]", text[start:stop].replace("\n", "")):
            part = part.strip().strip("`*")
            if _BARE_KEY.fullmatch(part) and len(keys) < MAX_KEYS:
                keys.append(part)
        lists.append(keys)
    return lists[0], lists[1], cut


def silent_random_init(values: Dict[str, str], text: str) -> Optional[Dict[str, str]]:
    """A ``strict=False`` load that left the model's keys missing while the checkpoint's went unused (issue 32): the
    missing layers keep their random initial values. Read from a printed ``_IncompatibleKeys`` or mmcv's warning.
    Fits when one prefix turns at least half the missing keys into unexpected ones (three when a list was cut: the
    pasted parts need not line up), or when ten or more keys are left over on each side, or when a cut paste shows
    ten or more missing keys that all carry a wrapper prefix (DataParallel/DDP, torch.compile) before its unexpected
    list; a few missing keys alone (a new head) do not."""
    missing, unexpected, cut = _incompatible(text)
    mmcv = not missing and not unexpected
    if mmcv:
        missing, unexpected, cut = mmcv_lists(text)
    if not missing:
        return None
    out = {"missing_count": str(len(missing)), "unexpected_count": str(len(unexpected)), "missing_first": missing[0]}
    if mmcv:
        out["if_mmcv"] = ""
    found = prefix_fix(missing, unexpected)
    if found is not None and (found[2] * 2 >= min(len(missing), len(unexpected)) or (cut and found[2] >= 3)):
        action, prefix, n = found
        out.update({"prefix": prefix, "matched": str(n), "if_strip" if action == "strip" else "if_add": ""})
        return out
    if len(missing) >= 10 and len(unexpected) >= 10:
        out["if_no_prefix"] = ""
        return out
    if cut and not unexpected and len(missing) >= 10:
        wrapper = next((p for p in WRAPPER_PREFIXES if all(k.startswith(p) for k in missing)), None)
        if wrapper is not None:
            del out["unexpected_count"]  # the paste ends before that list: its count is not known, not 0
            out.update({"prefix": wrapper, "if_wrapped_cut": "", "missing_shown": out["missing_count"]})
            return out
    return None


def state_dict_mismatch(values: Dict[str, str], text: str) -> Optional[Dict[str, str]]:
    if state_dict_prefix(values, text) is not None:
        return None
    missing, unexpected = key_lists(text)
    out: Dict[str, str] = {}
    if missing:
        out["missing_count"] = str(len(missing))
        out["missing_first"] = missing[0]
    if unexpected:
        out["unexpected_count"] = str(len(unexpected))
        out["unexpected_first"] = unexpected[0]
    nested = [k for k in unexpected if "." not in k]
    if unexpected and set(unexpected) <= {"state", "param_groups"}:
        out["if_optimizer"] = ""
    elif unexpected and len(nested) == len(unexpected) and len(nested) <= 12:
        pick = next((n for n in NESTED if n in nested), None)
        pick = pick or next((n for n in nested if "state_dict" in n.lower() or "model" in n.lower()), nested[0])
        out["nested_key"] = pick
        out["if_nested"] = ""
    else:
        size = _SIZE.search(text)
        if size:
            out["size_param"] = size.group(1)
            out["if_size"] = ""
        else:
            out["if_renamed"] = ""
    return out


# ------------------------------------------------------------------------------------------- capabilities
def _cc(text: Optional[str]) -> Optional[Tuple[int, int]]:
    from cudaenv.core.version import cc_tuple

    return cc_tuple(text) if text else None


def _cc_str(cc: Tuple[int, int]) -> str:
    return "%d.%d" % cc


def _capability(values: Dict[str, str], text: str) -> Optional[str]:
    """'harmless', 'too_old', 'no_kernels' or None (not enough to tell)."""
    gpu = _cc(values.get("gpu_cc"))
    if gpu is None:
        return None
    low, high = _cc(values.get("min_cc")), _cc(values.get("max_cc"))
    if low is not None and gpu < low:
        return "too_old"
    if high is not None and gpu > high:
        return "harmless" if gpu[0] == high[0] else "no_kernels"
    if low is not None and high is not None:
        return "harmless"  # inside the range the build has: the warning's own comparison was too strict
    if values.get("torch_release") and values.get("torch_variant"):
        from cudaenv.facts import torch as tf

        found = tf.arch_list_for(values["torch_release"], values["torch_variant"])
        if found is not None:
            runs = tf.gpu_runs(tf.arch_list_of(found[0], found[1]), gpu)
            if runs is not None:
                return "harmless"
            return "too_old" if all(_cc(a) is not None and gpu < _cc(a) for a in found[0]) else "no_kernels"
    if "no longer supports this gpu" in text.lower():
        return "too_old"
    return None


def _capability_values(values: Dict[str, str]) -> Dict[str, str]:
    out: Dict[str, str] = {}
    gpu = _cc(values.get("gpu_cc"))
    if gpu is not None:
        from cudaenv.core.version import sm_name

        out["gpu_sm"] = sm_name(_cc_str(gpu)) or ""
        from cudaenv.facts.torch import last_torch_with_kernels

        last = last_torch_with_kernels([gpu], values.get("wheel_platform") or DEFAULT_PLATFORM)
        if last:
            out["last_torch"], out["last_variant"] = last
        else:
            out["if_no_wheel"] = ""
    return out


def capability_harmless(values: Dict[str, str], text: str) -> Optional[Dict[str, str]]:
    return _capability_values(values) if _capability(values, text) == "harmless" else None


def capability_too_old(values: Dict[str, str], text: str) -> Optional[Dict[str, str]]:
    return _capability_values(values) if _capability(values, text) == "too_old" else None


def capability_no_kernels(values: Dict[str, str], text: str) -> Optional[Dict[str, str]]:
    """The arch row's own patterns always fit; a capability warning only when the GPU really has no kernels."""
    if values.get("gpu_cc") is None:
        return {}
    verdict = _capability(values, text)
    return _capability_values(values) if verdict in ("no_kernels", None) else None


# ------------------------------------------------------------------------------------------- nvcc, wheels
def first_cuda_for(cc: Tuple[int, int]) -> Optional[Tuple[str, str]]:
    """(first CUDA whose nvcc compiles for ``cc``, the GPU family) from ``data/cuda_arch.json``."""
    from cudaenv.facts.cuda_arch import first_nvcc

    return first_nvcc(cc)


def nvcc_arch(values: Dict[str, str], text: str) -> Optional[Dict[str, str]]:
    from cudaenv.core.version import split_arch
    from cudaenv.facts.drivers import known_cuda_versions
    from cudaenv.toolkit.install.precheck import newest_cuda_for

    arch = split_arch(values.get("arch") or "")
    out: Dict[str, str] = {}
    if arch:
        cc = (arch[1], arch[2])
        found = first_cuda_for(cc)
        if found:
            out["first_cuda"], out["family"] = found
            out["arch_cc"] = "%d.%d" % cc
            newest = newest_cuda_for(cc)
            if newest:
                known = known_cuda_versions()
                newer_too = bool(known) and newest == known[-1]
                out["pick_cuda"] = newest
                from cudaenv.core.i18n import M
                from cudaenv.toolkit.install.plan import install_command

                out["cuda_range"] = M("%s or newer", found[0]) if newer_too else M("%s to %s", found[0], newest)

                out["get_cuda"] = install_command(newest)
    return out


def torch_wheel(values: Dict[str, str], text: str) -> Optional[Dict[str, str]]:
    from cudaenv.facts import torch as tf
    from cudaenv.core.resources import load_table
    from cudaenv.core.version import is_version, pep440, pep440_release

    out: Dict[str, str] = {}
    wanted = (values.get("torch_req") or "").rstrip(".")  # "torch==2.7.1." at the end of a sentence
    parsed = pep440(wanted)  # a final release only: 2.8.0rc1, 2.7.*, 1!2.0 and 2.7.1.post1 get no wheel facts
    version = pep440_release(wanted) if parsed is not None and parsed.public == pep440_release(wanted) else None
    if not version or not is_version(version, 4, 4) or "." not in version:
        return out
    pythons = tf.pythons_for(version)
    if pythons:
        out["pythons"] = ", ".join(pythons)
    platforms = sorted({row["platform"] for row in load_table(tf.VARIANTS)["rows"]
                        if version in row.get("releases", ()) or row.get("torch") == version})
    if platforms:
        out["platforms"] = ", ".join(platforms)
    if "+" in wanted:
        out["local_tag"] = wanted.split("+", 1)[1]
    return out


MAKESELF = ("verifying archive integrity", "enough space in /tmp", "checksums", "archive size", ".run:", "extraction failed")


def runfile(values: Dict[str, str], text: str) -> Optional[Dict[str, str]]:
    """Which advice fits: makeself always prints its space line, so /tmp is full only without a damaged-data sign."""
    low = text.lower()
    if "/dev/tty: no such device or address" in low:
        return {"if_no_tty": ""}
    makeself = any(m in low for m in MAKESELF)
    cuda = "cuda" in low or "nvidia" in low or makeself
    damaged = any(m in low for m in ("invalid compressed data", "not in gzip format", "unexpected end of file", "crc error",
                                     "checksums", "unexpected archive size", "syntax error", "not look like a tar"))
    out: Dict[str, str] = {}
    if "no space left on device" in low or (("enough space" in low or "error occurred during extraction" in low) and not damaged):
        out["if_tmp_full"] = ""  # a full /tmp fails writes; it does not damage gzip data
        if not damaged:
            return out
    if "<!doctype" in low or "<html" in low or "syntax error: newline unexpected" in low:
        out["if_html"] = ""  # an HTML page run by sh: dash stops at its first line's '<'
    else:
        out["if_corrupt"] = ""
    out.update({"if_cuda": ""} if cuda else {"if_not_cuda": ""})
    return out


def cudnn_versions(values: Dict[str, str], text: str) -> Optional[Dict[str, str]]:
    """``(8, 7, 0)`` -> 8.7.0 and the old integers (``7102`` -> 7.1.2) of both sides of a cuDNN mismatch, and whose
    check said it: XLA's (under JAX and TensorFlow: "Loaded runtime CuDNN library: X but source was compiled with: Y"),
    JAX's own ("Found cuDNN version X, but JAX was built against version Y") or torch's."""
    from cudaenv.core.version import cudnn_from_int

    framework = ("XLA (JAX, TensorFlow)" if "source was compiled with" in text
                 else "JAX" if "JAX was built against" in text else "torch")
    out: Dict[str, str] = {"framework": framework}
    for side in ("compiled", "runtime"):
        raw = (values.get(side) or "").strip()
        if raw.startswith("("):
            parts = [p.strip() for p in raw.strip("()").split(",")]
            if all(p.isdigit() for p in parts):
                out[side + "_version"] = ".".join(parts)
        elif raw.isdigit():
            decoded = cudnn_from_int(raw)
            if decoded:
                out[side + "_version"] = decoded
        elif raw:
            out[side + "_version"] = raw.rstrip(".")
    return out


_DISTRIBUTED = ("torch.distributed", "init_process_group", "tcpstore", "rendezvous", "torchrun", "master_port", "master_addr",
                "gloo", "nccl", "dist_url", "dist-url", "distributed", "processgroup", "multiprocessing", "29500", "deepspeed",
                "accelerate launch", "\u5206\u5e03\u5f0f")  # the last: "distributed" in Chinese


def distributed(values: Dict[str, str], text: str) -> Optional[Dict[str, str]]:
    """torch's own rendezvous messages (the server socket, EADDRINUSE) are the rendezvous port; the bare 'Address
    already in use' only when the text is about distributed training (a web server's is not torch's)."""
    low = text.lower()
    if "server socket has failed" in low or "eaddrinuse" in low:
        return {}
    return {} if any(word in low for word in _DISTRIBUTED) else None


def flags(values: Dict[str, str], text: str) -> Optional[Dict[str, str]]:
    """Each ``is_X`` group that matched becomes the flag ``if_X``."""
    return {"if_" + key[3:]: "" for key, value in values.items() if key.startswith("is_") and value}


CHECKS: Dict[str, Callable[[Dict[str, str], str], Optional[Dict[str, str]]]] = {
    "state_dict_prefix": state_dict_prefix,
    "state_dict_mismatch": state_dict_mismatch,
    "silent_random_init": silent_random_init,
    "capability_harmless": capability_harmless,
    "capability_too_old": capability_too_old,
    "capability_no_kernels": capability_no_kernels,
    "nvcc_arch": nvcc_arch,
    "torch_wheel": torch_wheel,
    "runfile": runfile,
    "cudnn_versions": cudnn_versions,
    "flags": flags,
    "distributed": distributed,
}


_CAPABILITY = ("gpu_sm", "last_torch", "last_variant", "if_no_wheel")
PROVIDES: Dict[str, Tuple[str, ...]] = {  # the values each check may add (the table's placeholders may name them)
    "state_dict_prefix": ("prefix", "wrapper", "key_count", "if_ckpt_prefixed", "if_model_prefixed"),
    "state_dict_mismatch": ("missing_count", "missing_first", "unexpected_count", "unexpected_first", "nested_key",
                            "size_param", "if_nested", "if_size", "if_renamed", "if_optimizer"),
    "silent_random_init": ("missing_count", "unexpected_count", "missing_first", "prefix", "matched", "if_strip",
                           "if_add", "if_no_prefix", "if_mmcv", "if_wrapped_cut", "missing_shown"),
    "capability_harmless": _CAPABILITY,
    "capability_too_old": _CAPABILITY,
    "capability_no_kernels": _CAPABILITY,
    "nvcc_arch": ("first_cuda", "family", "arch_cc", "pick_cuda", "cuda_range", "get_cuda"),
    "torch_wheel": ("pythons", "platforms", "local_tag"),
    "runfile": ("if_no_tty", "if_tmp_full", "if_html", "if_cuda", "if_corrupt", "if_not_cuda"),
    "cudnn_versions": ("compiled_version", "runtime_version", "framework"),
    "flags": ("if_adb", "if_network", "if_boot", "if_windows", "if_rocm", "if_mps", "if_wrong_arch", "if_broken", "if_nvrtc",
              "if_ort", "if_symbol"),
    "distributed": (),
}


def run_check(name: str, values: Dict[str, str], text: str) -> Optional[Dict[str, str]]:
    """More values for a row whose patterns matched, or None when the row does not fit the text after all."""
    check = CHECKS.get(name)
    if check is None:
        return {}
    try:
        return check(values, text)
    except (KeyError, ValueError, TypeError, IndexError, OSError):  # a table without a field: the row still fits
        return {}
