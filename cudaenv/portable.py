"""Device-portable helpers for your own training and inference code (``from cudaenv.portable import ...``).

Importing this module does nothing: torch is imported inside the functions, when they are called.

* :func:`pick_device`: the device to use here (``CUDA_VISIBLE_DEVICES`` is honoured, as torch honours it), falling
  back to cpu; ``prefer="cuda:1"`` degrades with a warning when that GPU is absent.
* :func:`to_device`: tensors inside dicts, lists, tuples, namedtuples and dataclasses moved to a device
  (``non_blocking`` only from pinned memory, where it is safe).
* :func:`load_state_dict`: a checkpoint into a model whatever it was saved on and however it was wrapped
  (``map_location``, ``state_dict``/``model`` nesting, ``module.``/``_orig_mod.`` prefixes stripped or added to match
  the model), with a message listing the missing and unexpected keys when it still does not fit.
"""

from __future__ import annotations

from cudaenv.checkpoint.names import WEIGHTS_ENTRIES, holds_weights, strip_wrappers


def pick_device(prefer=None):
    """A ``torch.device`` that exists here: ``prefer`` when it does, else the first visible GPU, else cpu."""
    import warnings

    import torch

    if prefer is not None:
        want = torch.device(prefer)
        if want.type == "cpu":
            return want
        if want.type == "cuda":
            count = torch.cuda.device_count() if torch.cuda.is_available() else 0
            if (want.index or 0) < count:
                return want
            fallback = torch.device("cuda:0") if count else torch.device("cpu")
            warnings.warn("%s is not available here (%d visible GPU%s): using %s" % (want, count, "" if count == 1 else "s", fallback),
                          RuntimeWarning, stacklevel=2)
            return fallback
        if want.type == "mps" and _mps_available(torch):
            return want
        warnings.warn("%s is not available here: using the default device" % want, RuntimeWarning, stacklevel=2)
    if torch.cuda.is_available() and torch.cuda.device_count() > 0:
        return torch.device("cuda:0")
    if _mps_available(torch):
        return torch.device("mps")
    return torch.device("cpu")


def _mps_available(torch) -> bool:
    mps = getattr(getattr(torch, "backends", None), "mps", None)
    try:
        return bool(mps is not None and mps.is_available())
    except Exception:  # noqa: BLE001 - an odd build
        return False


def to_device(obj, device):
    """``obj`` with every tensor inside it on ``device``; containers keep their type (OrderedDict, defaultdict,
    namedtuple, dataclass) and what they carry besides their items (a state_dict's ``_metadata``, a dataclass's
    ``init=False`` fields). ``obj`` itself is not changed. ``non_blocking=True`` is used only for a copy from pinned
    memory to a GPU."""
    import copy
    import dataclasses

    import torch

    device = torch.device(device)

    def move(o, depth):
        if depth > 100:
            return o
        if isinstance(o, torch.Tensor):
            pinned = o.device.type == "cpu" and device.type != "cpu" and o.is_pinned()
            return o.to(device, non_blocking=pinned)
        if isinstance(o, torch.nn.Module):
            return o.to(device)
        if isinstance(o, dict):
            items = [(k, move(v, depth + 1)) for k, v in o.items()]
            try:
                out = o.__class__()
            except TypeError:
                out = {}
            if hasattr(o, "default_factory"):  # a defaultdict
                out.default_factory = o.default_factory
            if type(out) is type(o):  # the instance's own attributes: torch's state_dict()._metadata (versions)
                for name, value in getattr(o, "__dict__", {}).items():
                    setattr(out, name, copy.copy(value) if name == "_metadata" else value)
            out.update(items)
            return out
        if isinstance(o, tuple) and hasattr(o, "_fields"):  # a namedtuple
            return o.__class__(*(move(v, depth + 1) for v in o))
        if isinstance(o, (list, tuple)):
            return o.__class__(move(v, depth + 1) for v in o)
        if dataclasses.is_dataclass(o) and not isinstance(o, type):
            # a copy with every field set, init=False ones too (dataclasses.replace would reset those to their
            # default, and run __post_init__ again); object.__setattr__ also sets the fields of a frozen dataclass
            out = copy.copy(o)
            for f in dataclasses.fields(o):
                if hasattr(o, f.name):
                    object.__setattr__(out, f.name, move(getattr(o, f.name), depth + 1))
            return out
        return o

    return move(obj, 0)


def find_state_dict(obj):
    """The model weights in a loaded checkpoint: ``obj`` itself, or its ``state_dict``/``model``/... entry."""
    import torch

    def tensors(d):
        return isinstance(d, dict) and holds_weights(d.values(), lambda v: isinstance(v, torch.Tensor))

    if tensors(obj):
        return obj
    if isinstance(obj, dict):
        for name in WEIGHTS_ENTRIES:
            value = obj.get(name)
            if isinstance(value, torch.nn.Module):
                return value.state_dict()
            if tensors(value):
                return value
    if isinstance(obj, torch.nn.Module):
        return obj.state_dict()
    raise ValueError("no state_dict found in the checkpoint (top-level keys: %s)"
                     % (", ".join(map(str, list(obj)[:10])) if isinstance(obj, dict) else type(obj).__name__))


def match_keys(state_dict, model_keys):
    """``state_dict`` renamed to the model's keys: wrapper prefixes (``module.``, ``_orig_mod.``, nested) stripped or
    added, and a prefix every checkpoint key shares (Lightning's ``model.``) dropped when that makes keys match.
    ``_metadata`` follows. Keys that match nothing are kept as they are (they show up as unexpected), and so is a key
    whose new name another key already has: a checkpoint key that is exactly the model's is never replaced by a
    renamed one (a decoy ``module.weight`` beside the real ``weight``), and of two keys renamed to one name the first
    wins (:func:`_match` says which). A ``_metadata`` that is not a dict of dicts raises ``RuntimeError``."""
    return _match(state_dict, model_keys)[0]


def _match(state_dict, model_keys):
    """:func:`match_keys` and its notes: one sentence for each key left as it was because its new name was taken."""
    model_keys = list(model_keys)
    by_base = {}
    for k in model_keys:
        if isinstance(k, str):
            by_base.setdefault(strip_wrappers(k), k)
    keys = [k for k in state_dict.keys() if isinstance(k, str)]
    common = ""
    if keys and all("." in k for k in keys):
        first = strip_wrappers(keys[0]).split(".", 1)[0] + "."
        bases = [strip_wrappers(k) for k in keys]
        if all(b.startswith(first) for b in bases):
            hits = sum(b in by_base for b in bases)
            if hits * 2 < len(keys) and sum(b[len(first):] in by_base for b in bases) > hits:
                common = first

    def rename(k):
        if not isinstance(k, str):
            return k
        base = strip_wrappers(k)
        if common and base.startswith(common):
            base = base[len(common):]
        return by_base.get(base, k)

    out, notes = _renamed(state_dict.items(), rename, set(model_keys), "key")
    meta = getattr(state_dict, "_metadata", None)
    if meta is not None:
        if not isinstance(meta, dict) or not all(isinstance(v, dict) for v in meta.values()):
            raise RuntimeError("the checkpoint's _metadata is not a dict of per-module dicts (%s): torch's "
                               "load_state_dict cannot read it" % type(meta).__name__)
        model_modules = {}
        for k in model_keys:
            if isinstance(k, str):
                module = k.rsplit(".", 1)[0] if "." in k else ""
                model_modules.setdefault(strip_wrappers(module + ".")[:-1] if module else "", module)

        def rename_meta(k):
            if not isinstance(k, str):
                return k
            base = strip_wrappers(k + ".")[:-1] if k else ""
            if common and (base + ".").startswith(common):
                base = (base + ".")[len(common):][:-1]
            return model_modules.get(base, k)

        out._metadata = _renamed(meta.items(), rename_meta, set(model_modules.values()), "_metadata key")[0]
    return out, notes


def _renamed(items, rename, exact, what):
    """An OrderedDict of ``items`` with keys renamed, never onto a name another item already has or is exactly."""
    import collections

    items = list(items)
    taken = {k for k, _ in items if k in exact}  # (a key of the model's own, as it is: kept whatever else comes)
    out = collections.OrderedDict()
    notes = []
    for k, v in items:
        new = k if k in taken else rename(k)
        if new != k and (new in taken or new in out):
            notes.append("the checkpoint's %s %s would become %s, which it already has: %s is kept as it is"
                         % (what, _short(k), _short(new), _short(k)))
            new = k
        if new not in taken:
            taken.add(new)
        out[new] = v
    return out, notes


def _short(key) -> str:
    text = repr(key)
    return text if len(text) <= 80 else text[:60] + "...(%d characters)" % len(text)


def load_state_dict(model, path, device=None, strict=True):
    """Load the checkpoint at ``path`` into ``model`` on ``device`` (default :func:`pick_device`); returns the
    ``(missing_keys, unexpected_keys)`` result of ``model.load_state_dict``. With ``strict``, a mismatch raises a
    ``RuntimeError`` that lists both. The file is loaded with ``weights_only=True``."""
    import torch

    device = pick_device() if device is None else torch.device(device)
    loaded = torch.load(path, map_location=device, weights_only=True)
    wanted = list(model.state_dict().keys())
    sd, notes = _match(find_state_dict(loaded), wanted)
    missing = sorted(set(wanted) - set(sd))
    unexpected = sorted(str(k) for k in set(sd) - set(wanted))
    if strict and (missing or unexpected):
        raise RuntimeError("the checkpoint %s does not fit %s:\n  missing keys (%d): %s\n  unexpected keys (%d): %s%s"
                           % (path, type(model).__name__, len(missing), ", ".join(missing[:20]) + (" ..." if len(missing) > 20 else ""),
                              len(unexpected), ", ".join(unexpected[:20]) + (" ..." if len(unexpected) > 20 else ""),
                              "".join("\n  " + n for n in notes[:20])))
    if notes:
        import warnings

        warnings.warn("; ".join(notes[:20]), RuntimeWarning, stacklevel=2)
    result = model.load_state_dict(sd, strict=strict)
    model.to(device)
    if not strict:
        _warn_random_init(path, type(model).__name__, result, len(wanted), len(sd))
    return result


def _warn_random_init(path, model_name, result, model_keys, file_keys):
    """Silent random init (issue 32): a ``strict=False`` load that left most of the model's keys missing (they keep
    their random initial values) or most of the file's keys unused says so, with the prefix that would have matched."""
    import warnings

    from cudaenv.checkpoint.names import most_unmatched, prefix_fix

    missing, unexpected = list(result.missing_keys), list(result.unexpected_keys)
    if not most_unmatched(len(missing), model_keys, len(unexpected), file_keys):
        return
    text = ("load_state_dict(strict=False) of %s into %s: %d of the model's %d keys were not in the checkpoint (they "
            "keep their random initial values) and %d of the checkpoint's %d keys matched nothing"
            % (path, model_name, len(missing), model_keys, len(unexpected), file_keys))
    found = prefix_fix(missing, unexpected)
    if found is not None:
        action, prefix, n = found
        if action == "strip":
            text += ("; %d checkpoint keys are model keys with %r in front: strip it, e.g. state = {k[len(%r):]: v for "
                     "k, v in state.items() if k.startswith(%r)}" % (n, prefix, prefix, prefix))
        else:
            text += ("; %d model keys are checkpoint keys with %r in front: add it, e.g. state = {%r + k: v for k, v in "
                     "state.items()}" % (n, prefix, prefix))
    warnings.warn(text + ". Check the missing_keys a strict=False load returns, or load with strict=True",
                  RuntimeWarning, stacklevel=3)
