"""Scripts run inside other interpreters (the user's Python), and the sources cudaenv hands to tools.

The scripts are stdlib only, Python 3.7+, and never imported by cudaenv itself. :func:`source` is the one
loader for every file here (``torch_probe.py``, ``framework_probe.py``, ``nvml_probe.py``, ``verify_device.py``, ``verify_dist.py``,
``line_editor.py``, ``check.cu``).
"""

import os


def source(name: str) -> str:
    """The text of the shipped file ``cudaenv/_child/NAME``.

    A plain read of the file beside this module (bounded, regular files only, through
    :func:`cudaenv.host.read_regular`); ``importlib.resources`` (about 30 ms to import, most of ``doctor
    --quick``'s budget) only when the package is not a folder (a zip import).
    """
    from cudaenv.host.files import read_regular

    data = read_regular(os.path.join(os.path.dirname(os.path.abspath(__file__)), name), 4 * 1024 * 1024)
    if data is not None:
        return data.decode("utf-8")
    try:
        from importlib.resources import files

        return files(__name__).joinpath(name).read_text(encoding="utf-8")
    except (ImportError, OSError) as exc:
        raise RuntimeError(
            "cudaenv is installed without its _child/%s file; reinstall it with `pip install --force-reinstall cudaenv` (%s)" % (name, exc)
        ) from None
