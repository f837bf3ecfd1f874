"""Checkpoint names and the two rules over them, in one place, for the checkpoint reader, its advice and fix (and its
torch child, which gets them in its spec), ``cudaenv explain``'s key-list check and :mod:`cudaenv.portable` (which
imports nothing else of cudaenv's): the key prefixes a model wrapper puts on every state_dict key, the top-level
entries that hold a model's weights, how a key's wrapper prefixes come off (:func:`wrapper_length`,
:func:`strip_wrappers`), and what counts as a model's state_dict (:func:`holds_weights`)."""

WRAPPER_PREFIXES = ("module.", "_orig_mod.")  # DataParallel/DDP, torch.compile's OptimizedModule

# the top-level entries of a training checkpoint that hold the model's weights (``{"state_dict": ..., "optimizer":
# ...}``; Lightning's state_dict, timm's and many scripts' model/model_state_dict), in the order a reader tries them
WEIGHTS_ENTRIES = ("state_dict", "model", "model_state_dict", "model_state", "net", "network", "weights", "params")
# the same for an exponential moving average of the weights (timm's state_dict_ema, ema_model, model_ema, ...)
EMA_ENTRIES = ("ema", "model_ema", "ema_model", "state_dict_ema", "ema_state_dict", "ema_state")


def wrapper_length(key: str) -> int:
    """How many characters of wrapper prefixes ``key`` starts with, nested in any order (``_orig_mod.module.`` is 17
    of ``_orig_mod.module.conv1.weight``). Linear in the prefixes' length: nothing is copied on the way (a 2 MB key
    of ``module.module....`` took 73 s when each prefix was sliced off in turn)."""
    i = 0
    while True:
        for w in WRAPPER_PREFIXES:
            if key.startswith(w, i):
                i += len(w)
                break
        else:
            return i


def strip_wrappers(key: str) -> str:
    """``key`` without its wrapper prefixes (:func:`wrapper_length`): one copy at most."""
    n = wrapper_length(key)
    return key[n:] if n else key


def wrapper_chain(key: str) -> str:
    """The wrapper prefixes at the start of ``key``: ``_orig_mod.module.`` for ``_orig_mod.module.conv1.weight``."""
    return key[:wrapper_length(key)]


def holds_weights(values, is_tensor) -> bool:
    """The state-dict rule: a non-empty collection of values of which at least half are tensors (``is_tensor`` says
    which; a model's buffers and ``_extra_state`` can be other values)."""
    n = t = 0
    for v in values:
        n += 1
        t += bool(is_tensor(v))
    return n > 0 and t * 2 >= n


def is_weights_entry(path: str) -> bool:
    """Where a model's state_dict sits in a checkpoint: the top level (``""``) or a known top-level entry."""
    return path == "" or path in WEIGHTS_ENTRIES or path in EMA_ENTRIES


def prefix_fix(missing, unexpected, most: int = 100_000, depth: int = 8):
    """The one prefix that would have matched the keys a ``strict=False`` load left over (issue 32: silent random
    init): ``("strip", P, n)`` when ``n`` unexpected (checkpoint) keys are P + a missing (model) key, ``("add", P, n)``
    when ``n`` missing keys are P + an unexpected key; the prefix that matches the most keys, None when none does.
    Prefixes end at a dot and span at most ``depth`` parts (``_orig_mod.module.`` is two); at most ``most`` keys of
    each list are read, so the work is linear in what is read."""
    counts = {}
    for action, longer, shorter in (("strip", unexpected, missing), ("add", missing, unexpected)):
        targets = set(k for k in list(shorter)[:most] if isinstance(k, str))
        if not targets:
            continue
        for key in list(longer)[:most]:
            if not isinstance(key, str):
                continue
            at = -1
            for _ in range(depth):
                at = key.find(".", at + 1)
                if at < 0 or at + 1 >= len(key):
                    break
                if key[at + 1:] in targets:
                    pick = (action, key[:at + 1])
                    counts[pick] = counts.get(pick, 0) + 1
                    break
    if not counts:
        return None
    (action, prefix), n = max(counts.items(), key=lambda x: (x[1], -len(x[0][1]), x[0]))
    return action, prefix, n


def most_unmatched(missing: int, model_keys: int, unexpected: int, file_keys: int) -> bool:
    """The silent-random-init rule: a ``strict=False`` load left most of the model's keys missing (they keep their
    random initial values), or used few of the file's (most of its keys matched nothing)."""
    return (model_keys > 0 and missing * 2 > model_keys) or (file_keys > 0 and unexpected * 2 > file_keys)
