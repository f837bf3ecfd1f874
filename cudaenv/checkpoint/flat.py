"""What a converted checkpoint must hold, key by key (issue 32: ``checkpoint fix --to``): the flat names and shapes
of the tensors torch in the child will write, computed from cudaenv's own reading of the source, and the comparison
with what was written. Pure: walked pickles and already-read safetensors headers in, names and shapes out.

The names follow ``_child/checkpoint_fix.py``: ``--extract`` first, then ``--strip-prefix`` in every dict whose
values are mostly tensors, then ``--add-prefix`` in the model state_dicts (the top level, or its ``state_dict`` /
``model`` / EMA entries); a key whose new name is taken keeps its name. A safetensors file is one flat dict; nested
dicts are joined with ``.`` (``model.fc.weight``), as the child flattens them for safetensors; what is not a tensor
nor a dict is not written there.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from cudaenv.checkpoint.graph import pairs_of
from cudaenv.checkpoint.names import EMA_ENTRIES, WEIGHTS_ENTRIES
from cudaenv.checkpoint.nodes import Call, SDict
from cudaenv.checkpoint.rewrite import strip_key

Shapes = Dict[str, Tuple[int, ...]]
ALIASES_KEY = "cudaenv.aliases"  # the safetensors metadata entry with the tied names the child wrote once
MAX_DEPTH = 50  # as the child's walk


def _rename(keys: List[Any], fn: Callable[[str], str]) -> List[Any]:
    """The child's rule: each string key renamed by ``fn`` unless the new name is taken (by a key that keeps its
    name, or one renamed before it)."""
    taken = {k for k in keys if not isinstance(k, str) or fn(k) == k}
    out = []
    for k in keys:
        new = fn(k) if isinstance(k, str) else k
        if new != k and new in taken:
            new = k
        taken.add(new)
        out.append(new)
    return out


def renamed_keys(keys: Sequence[str], strip: Sequence[str], add: Optional[str]) -> List[str]:
    """The keys of one flat state_dict after ``--strip-prefix`` then ``--add-prefix``."""
    out = list(keys)
    if strip:
        out = _rename(out, lambda k: strip_key(k, list(strip)))
    if add:
        out = _rename(out, lambda k: add + k)
    return out


def pt_shapes(root: Any, tensor_of: Callable[[Any], Optional[Tuple[int, ...]]], strip: Sequence[str] = (),
              add: Optional[str] = None, extract: Optional[str] = None) -> Optional[Shapes]:
    """The flat names and shapes the child writes from the walked ``root`` of a torch.save file (``tensor_of``: a
    walked value's shape when it is a tensor, else None); None when ``extract`` names no top-level entry."""
    if extract is not None:
        found = [v for k, v in pairs_of(root) if k == extract]
        if not found:
            return None
        root = found[-1]

    def is_tensor_dict(pairs) -> bool:
        return bool(pairs) and sum(1 for _, v in pairs if tensor_of(v) is not None) * 2 >= len(pairs)

    top = pairs_of(root)
    add_here = set()
    if add:
        if is_tensor_dict(top):
            add_here.add(id(root))
        else:
            add_here.update(id(v) for k, v in top if k in WEIGHTS_ENTRIES + EMA_ENTRIES and is_tensor_dict(pairs_of(v)))
    out: Shapes = {}

    def walk(obj: Any, prefix: str, depth: int) -> None:
        pairs = pairs_of(obj)
        keys = [k for k, _ in pairs]
        if strip and is_tensor_dict(pairs):
            keys = _rename(keys, lambda k: strip_key(k, list(strip)))
        if id(obj) in add_here:
            keys = _rename(keys, lambda k: add + k)
        for key, (_, value) in zip(keys, pairs):
            name = prefix + str(key)
            shape = tensor_of(value)
            if shape is not None:
                out[name] = shape
            elif isinstance(value, (SDict, Call)) and pairs_of(value) and depth < MAX_DEPTH:
                walk(value, name + ".", depth + 1)

    if isinstance(root, (SDict, Call)):
        walk(root, "", 0)
    return out


def safetensors_shapes(header: Dict[str, Any]) -> Shapes:
    """The names and shapes of a safetensors header (the parsed JSON), with the tied names the child wrote once
    (``cudaenv.aliases`` in ``__metadata__``, JSON name -> name) under their own names."""
    import json

    out: Shapes = {}
    for key, info in header.items():
        if key != "__metadata__" and isinstance(info, dict) and isinstance(info.get("shape"), list):
            out[key] = tuple(d for d in info["shape"] if isinstance(d, int))
    meta = header.get("__metadata__")
    raw = meta.get(ALIASES_KEY) if isinstance(meta, dict) else None
    if isinstance(raw, str):
        try:
            aliases = json.loads(raw)
        except ValueError:
            aliases = None
        if isinstance(aliases, dict):
            for name, target in aliases.items():
                if isinstance(name, str) and target in out and name not in out:
                    out[name] = out[target]
    return out


def compare(expected: Shapes, got: Shapes) -> List[str]:
    """What differs between the names and shapes the source gives and those written (empty: they match), as marked
    messages (said in the reader's language; the keys and shapes as they are)."""
    from cudaenv.core.i18n import M

    problems: List[str] = []
    missing = [k for k in expected if k not in got]
    extra = [k for k in got if k not in expected]
    shapes = [k for k in expected if k in got and tuple(expected[k]) != tuple(got[k])]
    if missing:
        problems.append(M("%d keys of the source are not in it: %s", len(missing), ", ".join(missing[:5])))
    if extra:
        problems.append(M("%d keys in it are not in the source: %s", len(extra), ", ".join(extra[:5])))
    if shapes:
        problems.append(M("%d tensors changed shape: %s", len(shapes), ", ".join(
            "%s %s -> %s" % (k, list(expected[k]), list(got[k])) for k in shapes[:5])))
    return problems
