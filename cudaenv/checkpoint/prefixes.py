"""Wrapper prefixes on a state_dict's keys and on its ``_metadata`` keys: ``module.`` (DataParallel/DDP),
``_orig_mod.`` (torch.compile's OptimizedModule), nested in either order, and a prefix that every key shares."""

from __future__ import annotations

from cudaenv.checkpoint.graph import metadata_keys, pairs_of
from cudaenv.checkpoint.names import WRAPPER_PREFIXES, wrapper_chain
from cudaenv.checkpoint.report import KeyPrefix

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing (and the re it imports) stays off `checkpoint inspect`'s start-up
    from typing import Any, Dict, List

_WRAPPER_NAMES = tuple(w[:-1] for w in WRAPPER_PREFIXES)  # how a _metadata key (no trailing dot) starts


def prefix_findings(path: str, obj: Any) -> List[KeyPrefix]:
    keys = [k for k, _ in pairs_of(obj) if isinstance(k, str)]
    keys = list(dict.fromkeys(keys))
    found: List[KeyPrefix] = []
    counts: Dict[str, int] = {}
    for k in keys:
        if k.startswith(WRAPPER_PREFIXES):  # (most keys have none: the C test first)
            c = wrapper_chain(k)
            counts[c] = counts.get(c, 0) + 1
    for c, n in sorted(counts.items(), key=lambda x: -x[1]):
        found.append(KeyPrefix(path, c, n, len(keys)))
    if not counts and len(keys) > 1:
        first = keys[0].split(".", 1)[0] + "."
        if "." in keys[0] and all(k.startswith(first) for k in keys):
            found.append(KeyPrefix(path, first, len(keys), len(keys)))
    meta = metadata_keys(obj)
    if meta:
        mcounts: Dict[str, int] = {}
        for k in meta:
            if k.startswith(_WRAPPER_NAMES):
                c = wrapper_chain(k + ".")
                if c:
                    mcounts[c] = mcounts.get(c, 0) + 1
        for c, n in sorted(mcounts.items(), key=lambda x: -x[1]):
            found.append(KeyPrefix(path, c, n, len(meta), "_metadata"))
    return found
