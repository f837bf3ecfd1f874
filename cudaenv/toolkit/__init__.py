"""CUDA toolkits on this machine: the one toolkit-spec grammar and the pick (``select``), the switch as variables
(``switch``), the ``/usr/local/cuda`` link (``link``), sudo, a project's pinned toolkit (``project``), the ``.run``
installer check (``installer_check``), installs without root (``install/``) and planned removals (``uninstall/``)."""
