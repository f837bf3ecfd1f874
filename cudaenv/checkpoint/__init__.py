"""Checkpoints without running them: ``cudaenv checkpoint inspect`` and ``fix``.

* :mod:`cudaenv.checkpoint.pickle_vm`: a symbolic walk of pickle opcodes (no ``find_class``, no import of any name
  the file gives): its fast loop, and :mod:`cudaenv.checkpoint.careful`, the interpreter of every opcode; values
  become plain data and :mod:`cudaenv.checkpoint.nodes` (:class:`~cudaenv.checkpoint.nodes.Global`,
  :class:`~cudaenv.checkpoint.nodes.Call`, :class:`~cudaenv.checkpoint.nodes.Persid`, ...).
* :mod:`cudaenv.checkpoint.container`: the file formats (torch zip, legacy, TorchScript, safetensors), read bounded;
  the tensor bytes are never read. :mod:`cudaenv.checkpoint.zipdir`: a zip's central directory.
* :mod:`cudaenv.checkpoint.analyze`: the report: structure, devices, globals, weights_only verdict, from
  :mod:`cudaenv.checkpoint.graph` (storages, tensors and their paths, wrapper prefixes) and
  :mod:`cudaenv.checkpoint.tables` (torch's allowlist, dtypes, and the verdict by them);
  :mod:`cudaenv.checkpoint.safetensors_report` for safetensors.
* :mod:`cudaenv.checkpoint.report`: the records of ``inspect --json``.
* :mod:`cudaenv.checkpoint.rewrite`: the pickle and zip writers of ``fix``.

Facts and sources: ``data/checkpoint_weights_only.txt`` and the project's checkpoint facts (torch 2.13).
Nothing here imports torch.
"""
