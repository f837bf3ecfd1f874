"""Planning clean removals of CUDA toolkits (``cudaenv uninstall``). cudaenv never removes anything itself."""
