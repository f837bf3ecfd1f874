"""Run by `cudaenv checkpoint fix --trust` in the user's Python: load a checkpoint with torch (weights_only=False:
the user said they trust it), change it, save it. Stdlib + torch only; one JSON argument; prints one line
``CUDAENV-CHECKPOINT {json}``: {"ok": true, "changes": [English], "said": [[template, values]]} (:func:`say`) or {"ok":
false, "error"} (or "missing_modules"). With "layout" (bin, safetensors, dcp, dcp-safetensors, zero) it reads a
checkpoint folder instead of one file
(:func:`load_folder`).

The argument: {"source", "output", "map_location" (or null), "strip": [prefixes], "add" (or null), "extract" (or
null), "to" ("safetensors" or null: torch.save), "weights_only" (a file cudaenv calls safe: loaded with
weights_only=True)}. Keys are changed in every dict whose values are mostly tensors (strip) or in the model state_dicts (add:
the top level or its state_dict/model/ema entries), and in their ``_metadata`` like
torch.nn.modules.utils.consume_prefix_in_state_dict_if_present.
"""

import json
import sys


def say(changes, template, *values):
    """Add one change to ``changes``: ``[English, template, values]`` (``said``, the children's shared helper in
    ``say.py``, put before this text). The parent prints the English, or the template said in the reader's language
    with the same values (cudaenv.checkpoint.fix.CHILD_CHANGES); a list value is prefixes stripped one after another
    (``a then b``)."""
    changes.append(said(template, *values))  # noqa: F821 - said is say.py's, put before this text


def load_folder(torch, spec, kwargs, changes):
    """A checkpoint folder as one object (cudaenv checkpoint fix FOLDER): .bin shards merged, a DCP folder through
    torch's own dcp_to_torch_save, a DeepSpeed ZeRO folder through its own zero_to_fp32.py (the user gave --trust)."""
    import os

    layout = spec["layout"]
    if layout == "bin":
        obj = {}
        kwargs = dict(kwargs, weights_only=bool(spec.get("weights_only", True)))
        for src in spec["sources"]:
            part = torch.load(src, **kwargs)
            if not isinstance(part, dict):
                raise TypeError("%s holds a %s, not a state_dict" % (os.path.basename(src), type(part).__name__))
            twice = [k for k in part if k in obj]
            if twice:
                raise KeyError("%d keys are in more than one shard, e.g. %r" % (len(twice), twice[0]))
            obj.update(part)
        say(changes, "merged %d .bin shards (%d keys) with torch.load(weights_only=%s)", len(spec["sources"]), len(obj),
            kwargs["weights_only"])
        return obj
    if layout == "safetensors":
        from safetensors import safe_open

        obj = {}
        tied = 0
        for src in spec["sources"]:
            with safe_open(src, framework="pt", device="cpu") as f:
                part = {k: f.get_tensor(k) for k in f.keys()}
                aliases = json.loads((f.metadata() or {}).get("cudaenv.aliases") or "{}")
            twice = [k for k in part if k in obj]
            if twice:
                raise KeyError("%d keys are in more than one shard, e.g. %r" % (len(twice), twice[0]))
            for name, target in aliases.items():  # tied weights cudaenv wrote once: one tensor again, under both names
                if target in part and name not in part:
                    part[name] = part[target]
                    tied += 1
            obj.update(part)
        if spec.get("map_location") and spec["map_location"] != "cpu":
            obj = {k: v.to(spec["map_location"]) for k, v in obj.items()}
        say(changes, "read %d safetensors file%s (%d tensors) with safetensors.safe_open", len(spec["sources"]),
            "" if len(spec["sources"]) == 1 else "s", len(obj))
        if tied:
            say(changes, "%d tied tensors named in the metadata (cudaenv.aliases) share one storage again", tied)
        return obj
    if layout == "dcp":
        from torch.distributed.checkpoint.format_utils import dcp_to_torch_save

        dcp_to_torch_save(spec["source"], spec["output"])
        obj = torch.load(spec["output"], **dict(kwargs, weights_only=bool(spec.get("weights_only", True))))
        say(changes, "consolidated with torch.distributed.checkpoint.format_utils.dcp_to_torch_save (torch %s)",
            str(torch.__version__))
        return obj
    if layout == "dcp-safetensors":  # torch's own reader of DCP's HuggingFaceStorageWriter shards
        import torch.distributed.checkpoint as dcp
        from torch.distributed.checkpoint import HuggingFaceStorageReader

        meta = HuggingFaceStorageReader(spec["source"]).read_metadata()
        obj = {k: torch.empty(tuple(m.size), dtype=m.properties.dtype) for k, m in meta.state_dict_metadata.items()}
        import warnings

        with warnings.catch_warnings():  # ("assuming the intent is to load in a single process": it is)
            warnings.simplefilter("ignore")
            dcp.load(obj, storage_reader=HuggingFaceStorageReader(spec["source"]), no_dist=True)
        if spec.get("map_location") and spec["map_location"] != "cpu":
            obj = {k: v.to(spec["map_location"]) for k, v in obj.items()}
        say(changes, "consolidated %d tensors with torch.distributed.checkpoint.HuggingFaceStorageReader and dcp.load "
            "(torch %s)", len(obj), str(torch.__version__))
        return obj
    if layout == "zero":
        import importlib.util

        found = importlib.util.spec_from_file_location("cudaenv_zero_to_fp32", spec["script"])
        module = importlib.util.module_from_spec(found)
        found.loader.exec_module(module)  # code shipped with the checkpoint: run because the user gave --trust
        obj = module.get_fp32_state_dict_from_zero_checkpoint(spec["source"], tag=spec.get("tag"))
        if spec.get("map_location"):
            obj = {k: v.to(spec["map_location"]) if isinstance(v, torch.Tensor) else v for k, v in obj.items()}
        say(changes, "consolidated with the folder's own zero_to_fp32.py (get_fp32_state_dict_from_zero_checkpoint)")
        return obj
    raise ValueError("unknown layout %r" % layout)


class MissingModules(Exception):
    """The modules a transform of the folder needs, none of which this Python has: [[descriptor, [module, ...]]]."""


def main(argv):
    spec = json.loads(argv[1])
    import importlib.util

    missing = [need for need in spec.get("need_modules") or ()
               if not any(importlib.util.find_spec(m) is not None for m in need[1])]
    if missing:  # said before torch is imported or anything read: torch would raise at the first such item
        raise MissingModules(missing)
    import torch

    changes = []
    kwargs = {"weights_only": False}
    if spec.get("map_location"):
        kwargs["map_location"] = spec["map_location"]
        say(changes, "storages mapped to %s", spec["map_location"])
    layout = spec.get("layout")
    if layout is None:
        if spec.get("weights_only"):  # a file cudaenv's own verdict calls safe: nothing of it runs
            kwargs["weights_only"] = True
        obj = torch.load(spec["source"], **kwargs)
    else:
        obj = load_folder(torch, spec, kwargs, changes)
    if spec.get("extract") is not None:
        if not isinstance(obj, dict) or spec["extract"] not in obj:
            raise KeyError("no top-level entry %r" % spec["extract"])
        obj = obj[spec["extract"]]
        say(changes, "kept only the entry %r", spec["extract"])

    def tensor_dict(d):
        return isinstance(d, dict) and d and sum(1 for v in d.values() if isinstance(v, torch.Tensor)) * 2 >= len(d)

    kept = []

    def rename(d, fn, fn_meta):
        # a key whose new name is taken (by a key that keeps its name, or one renamed first) stays as it is: no value
        # ever replaces another (the rule of cudaenv's own rewrite and of cudaenv.portable)
        items = list(d.items())
        d.clear()
        n = 0
        taken = {k for k, _ in items if not isinstance(k, str) or fn(k) == k}
        for k, v in items:
            new = fn(k) if isinstance(k, str) else k
            if new != k and new in taken:
                kept.append(k)
                new = k
            taken.add(new)
            n += new != k
            d[new] = v
        meta = getattr(d, "_metadata", None)
        if isinstance(meta, dict):
            items = list(meta.items())
            meta.clear()
            for k, v in items:
                meta[fn_meta(k) if isinstance(k, str) else k] = v
        return n

    def walk(o, depth=0):
        if depth > 50:
            return
        if isinstance(o, dict):
            yield o
            for v in list(o.values()):
                for x in walk(v, depth + 1):
                    yield x
        elif isinstance(o, (list, tuple)):
            for v in o:
                for x in walk(v, depth + 1):
                    yield x

    strip = spec.get("strip") or []
    if strip:
        def s_key(k):
            for p in strip:
                if k.startswith(p):
                    k = k[len(p):]
            return k

        def s_meta(k):
            for p in strip:
                bare = p[:-1] if p.endswith(".") else p
                if k == bare:
                    k = ""
                elif k.startswith(p):
                    k = k[len(p):]
            return k

        n = sum(rename(d, s_key, s_meta) for d in list(walk(obj)) if tensor_dict(d))
        say(changes, "stripped %s from %d keys", list(strip), n)
    add = spec.get("add")
    if add:
        bare = add[:-1] if add.endswith(".") else add
        targets = [obj] if tensor_dict(obj) else [v for k, v in obj.items() if k in spec["weights_entries"] and tensor_dict(v)] if isinstance(obj, dict) else []
        n = sum(rename(d, lambda k: add + k, lambda k: bare if k == "" else add + k) for d in targets)
        say(changes, "added %s to %d keys", add, n)
    if kept:
        say(changes, "keys kept as they were, because their new name is taken: %s", ", ".join(map(str, kept[:5])))
    if spec.get("to") == "safetensors":
        save_safetensors(torch, obj, spec["output"], changes)
    else:
        torch.save(obj, spec["output"])
    return changes


def flat_tensors(torch, obj, prefix="", out=None, dropped=None):
    """The tensors of a nested dict as one flat dict (``model.fc.weight``), and the paths of what is not a tensor."""
    out = {} if out is None else out
    dropped = [] if dropped is None else dropped
    for k, v in obj.items():
        name = prefix + str(k)
        if isinstance(v, torch.Tensor):
            out[name] = v
        elif isinstance(v, dict):
            flat_tensors(torch, v, name + ".", out, dropped)
        else:
            dropped.append(name)
    return out, dropped


def save_safetensors(torch, obj, output, changes):
    """``obj`` as a safetensors file, as the safetensors library requires: a flat dict of contiguous tensors that
    share no memory. A tensor that is another one (tied weights: same storage, offset, shape and stride) is written
    once and its other names kept in the metadata (``cudaenv.aliases``, JSON name -> name); a view that shares memory
    with another tensor but is not it is copied. Values that are not tensors cannot be stored: they are named."""
    from safetensors.torch import save_file

    if not isinstance(obj, dict):
        raise TypeError("a %s cannot be written as safetensors (a dict of tensors can)" % type(obj).__name__)
    flat, dropped = flat_tensors(torch, obj)
    seen, tensors, aliases, copied = {}, {}, {}, []
    for name, t in flat.items():
        t = t.detach().cpu()
        if t.numel() == 0:
            tensors[name] = t.contiguous()
            continue
        ident = (t.untyped_storage().data_ptr(), t.storage_offset(), tuple(t.shape), tuple(t.stride()), t.dtype)
        if ident in seen:
            aliases[name] = seen[ident]
            continue
        shares = any(t.untyped_storage().data_ptr() == o.untyped_storage().data_ptr() for o in tensors.values() if o.numel())
        if shares or not t.is_contiguous():
            t = t.contiguous().clone()
            if shares:
                copied.append(name)
        seen[ident] = name
        tensors[name] = t
    metadata = {"format": "pt"}
    if aliases:
        metadata["cudaenv.aliases"] = json.dumps(aliases, sort_keys=True)
    save_file(tensors, output, metadata=metadata)
    say(changes, "written as safetensors (%d tensors)", len(tensors))
    if aliases:
        say(changes, "%d tied tensors written once, their other names in the metadata (cudaenv.aliases): %s", len(aliases),
            ", ".join("%s = %s" % kv for kv in list(aliases.items())[:5]))
    if copied:
        say(changes, "%d views of shared memory copied (safetensors stores no sharing): %s", len(copied), ", ".join(copied[:5]))
    if dropped:
        say(changes, "%d values that are not tensors left out (safetensors stores only tensors): %s", len(dropped),
            ", ".join(dropped[:8]))


if __name__ == "__main__":
    try:
        done = main(sys.argv)
        sys.stdout.write("CUDAENV-CHECKPOINT " + json.dumps({"ok": True, "changes": [c[0] for c in done],
                                                             "said": [c[1:] for c in done]}) + "\n")
    except MissingModules as exc:
        sys.stdout.write("CUDAENV-CHECKPOINT " + json.dumps({"ok": False, "missing_modules": exc.args[0]}) + "\n")
        sys.exit(1)
    except BaseException as exc:  # noqa: BLE001 - the parent reads the error from this line
        sys.stdout.write("CUDAENV-CHECKPOINT " + json.dumps({"ok": False, "error": "%s: %s" % (type(exc).__name__, exc)}) + "\n")
        sys.exit(1)
