"""Checkpoints without running them: ``cudaenv checkpoint inspect`` and ``fix``.

* :mod:`cudaenv.checkpoint.pickle_vm`: a symbolic walk of pickle opcodes (no ``find_class``, no import of any name
  the file gives); values become plain data, :class:`~cudaenv.checkpoint.pickle_vm.Global`,
  :class:`~cudaenv.checkpoint.pickle_vm.Call` and :class:`~cudaenv.checkpoint.pickle_vm.Persid` nodes.
* :mod:`cudaenv.checkpoint.container`: the file formats (torch zip, legacy, TorchScript, safetensors), read bounded;
  the tensor bytes are never read.
* :mod:`cudaenv.checkpoint.analyze`: tensors, storages, devices, key prefixes, structure, weights_only verdict.
* :mod:`cudaenv.checkpoint.report`: the records of ``inspect --json``.
* :mod:`cudaenv.checkpoint.rewrite`: the pickle and zip writers of ``fix``.

Facts and sources: ``data/checkpoint_weights_only.json`` and the project's checkpoint facts (torch 2.13).
Nothing here imports torch.
"""
