"""cudaenv: a CUDA environment doctor and manager."""

__version__ = "0.1.0"
