"""Planning clean removals of CUDA toolkits (``cudaenv uninstall``). cudaenv never removes anything itself.

Cut as records / I/O / pure plan:

| module | what it does |
|---|---|
| ``facts`` | the records of what was inspected (targets, ld.so.conf.d files, alternatives, the driver) |
| ``records`` | the records of the plan (``Plan``, ``Step``, ``Guard``, ``Options``, ``HostPath``; the protected folders) |
| ``targets`` | which toolkits: ``VERSION|PATH`` and ``--repoint`` to toolkit records (reads the Host) |
| ``inspect`` | what a removal would touch, read through the Host (owners, folders, links, config files, the driver) |
| ``dpkg``, ``rpm``, ``rcfiles``, ``wrappers`` | the package databases, shell startup lines and PATH wrappers it reads |
| ``plan`` | the ordered plan (pure), built by ``builder`` with ``tool_steps``, ``reference_steps``, ``driver_steps`` |
| ``script`` | the plan as a reviewable shell script (pure) |
| ``residue`` | ``--check``: what is left after a removal (pure) |
"""
