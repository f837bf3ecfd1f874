"""CUDA toolkits on this machine: the one toolkit-spec grammar and the pick (``select``), the switch as variables
(``switch``), the ``/usr/local/cuda`` link (``link``), sudo, a project's pinned toolkit (``project``), the ``.run``
installer check (``installer_check``), installs without root (``install/``) and planned removals (``uninstall/``).

Second in the capabilities' order, after ``checkpoint``: explain and the doctor read its facts (an install's oldest
target, the repositories, the start-up files uninstall searches); shell code is written by :mod:`cudaenv.shells`.
"""
