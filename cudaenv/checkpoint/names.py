"""The key prefixes a model wrapper puts on every state_dict key, in one place for the checkpoint reader, its
advice, ``cudaenv explain``'s key-list check and :mod:`cudaenv.portable` (which imports nothing else of cudaenv's)."""

WRAPPER_PREFIXES = ("module.", "_orig_mod.")  # DataParallel/DDP, torch.compile's OptimizedModule
