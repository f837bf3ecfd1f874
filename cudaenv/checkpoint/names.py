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
