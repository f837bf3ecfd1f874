"""Reproducible CUDA stacks: ``cudaenv lock`` writes what must hold on every machine of a project (the driver floor, the
GPU architectures, the CUDA major, the torch build and its index, the toolkit, the cuDNN/NCCL wheels) and what was
merely seen, as a small versioned TOML file; ``cudaenv doctor --against FILE`` checks a machine against it and gives
the command that converges each difference.

A pure core (:mod:`cudaenv.stack.records`, :mod:`cudaenv.stack.tomlfile`, :mod:`cudaenv.stack.lock`) and one service
(:mod:`cudaenv.stack.service`) that probes the machine and reads and writes the file.
"""
