"""`cudaenv install`: CUDA toolkits side by side, without root.

| module | what it does |
|---|---|
| ``plan`` | pure: a version spec and pip's report -> the release and its component wheels (pins from the ``cuda-toolkit`` meta-package's Requires-Dist); 12.x and older -> the no-wheel answer |
| (``cudaenv.probes.toolkits.store``) | where installs live (the user data dir, ``CUDAENV_DATA_DIR``) and the marker file: discovery reads it too |
| ``assemble`` | wheels -> a toolkit tree: bounded unpacking, the symlinks a normal toolkit has, ``version.json`` |
| ``apply`` | the install itself through the Host: pip download, hashes, staging beside the target, rename under a lock |
| ``repos``, ``runfile`` | 12.x and older: the repository commands of ``--plan`` (pure), the rootless runfile install |
| ``listing``, ``precheck`` | ``--list``'s releases (cached), the driver and GPU warnings |
"""
