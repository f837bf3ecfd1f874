"""The PEP 503/691 index client and the torch index cache (shared by `torch refresh` and the toolkit installs): the
network read as the probes read the machine, on its own floor above the facts and below the capabilities (among
which only services import it).

| module | what it does |
|---|---|
| ``client`` | one page over HTTP: a deadline for the whole run, bounded decompression, errors in words |
| ``torch`` | ``refresh``: PyTorch's wheel index read into :class:`~cudaenv.index.torch.IndexData` |
| ``cache`` | the cache file: atomic write, bounded untrusted read |

The pure page and wheel-name parsers are in :mod:`cudaenv.parse.index_pages`. Nothing here is imported by
``cudaenv use``.
"""
