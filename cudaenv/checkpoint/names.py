"""Checkpoint names in one place for the checkpoint reader, its advice and fix (and its torch child, which gets them
in its spec), ``cudaenv explain``'s key-list check and :mod:`cudaenv.portable` (which imports nothing else of
cudaenv's): the key prefixes a model wrapper puts on every state_dict key, and the top-level entries that hold a
model's weights."""

WRAPPER_PREFIXES = ("module.", "_orig_mod.")  # DataParallel/DDP, torch.compile's OptimizedModule

# the top-level entries of a training checkpoint that hold the model's weights (``{"state_dict": ..., "optimizer":
# ...}``; Lightning's state_dict, timm's and many scripts' model/model_state_dict), in the order a reader tries them
WEIGHTS_ENTRIES = ("state_dict", "model", "model_state_dict", "model_state", "net", "network", "weights", "params")
# the same for an exponential moving average of the weights (timm's state_dict_ema, ema_model, model_ema, ...)
EMA_ENTRIES = ("ema", "model_ema", "ema_model", "state_dict_ema", "ema_state_dict", "ema_state")
