"""CUDA toolkits side by side: the capability behind `use`, `list`, `link`, `install`, `uninstall` and
`check-installer`. ``select`` (the one toolkit-spec grammar and its policies), ``switch`` (the switch as a variable ->
value/unset mapping) and ``project`` (`use --local`'s project file) pick and describe; ``link`` repairs
``/usr/local/cuda``; ``installer_check`` reads a ``.run`` installer; ``install/`` puts NVIDIA's wheels (or a runfile)
into a toolkit tree and ``uninstall/`` plans a clean removal. It comes first among the capabilities that read the
doctor's tables (explain and diagnose use its facts); shell code is written by :mod:`cudaenv.shells`.
"""
