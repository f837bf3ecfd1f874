"""sys.path as ``site`` makes it, without running any .pth code: put before ``torch_probe.py`` in the one ``-c`` source
cudaenv runs with ``-S`` (``doctor --quick``'s read of the interpreter; :func:`cudaenv.probes.torch_child.child_script`).
Stdlib only, Python 3.7+; imports nothing at load.

A .pth file's import lines and a sitecustomize or usercustomize module can cost more than the whole read (this
machine's pyenv Python imports certifi from a .pth on every start) and may change sys.path; they are listed, never
run, and the full doctor's children (plain ``site``) run them.
"""

import os
import sys

_UF_HIDDEN, _FILE_ATTRIBUTE_HIDDEN = 0x8000, 0x2  # stat's, as site skips hidden .pth files (stat not imported)
PTH_LIMIT = 4 * 1024 * 1024


def _module_file(name):
    """The file ``import name`` would load from sys.path's folders (``name.py``, a package, a ``.pyc``, an extension
    module), found without importing it; None when no folder has one."""
    try:
        import _imp

        suffixes = [".py", ".pyc"] + list(_imp.extension_suffixes())
    except Exception:  # noqa: BLE001
        suffixes = [".py", ".pyc"]
    for entry in sys.path:
        base = os.path.join(entry or ".", name)
        if os.path.isfile(os.path.join(base, "__init__.py")):
            return os.path.join(base, "__init__.py")
        for suffix in suffixes:
            if os.path.isfile(base + suffix):
                return base + suffix
    return None


def _site_without_code():
    """Under ``-S`` (the doctor's ``--quick`` read): sys.path as this interpreter's own ``site.main()`` makes it (its
    venv, user-site and site-packages rules, each site folder's .pth files in its order), with the .pth files' path
    lines added and none of their code run. A .pth import line and a sitecustomize or usercustomize module are
    listed, never executed: they may change sys.path when the interpreter starts, and the full doctor's children run
    them. Returns those files (each once). A site module without these hooks (an old virtualenv's) runs as it is."""
    skipped = []
    import site

    makepath = getattr(site, "makepath", None)
    if not (callable(getattr(site, "main", None)) and callable(getattr(site, "addpackage", None)) and callable(makepath)):
        getattr(site, "main", lambda: None)()  # an unknown site.py: run it, code and all (nothing skipped unsaid)
        return skipped

    def addpackage(sitedir, name, known_paths):
        reset = known_paths is None
        if reset:
            known_paths = site._init_pathinfo()
        fullname = os.path.join(sitedir, name)
        try:
            st = os.lstat(fullname)
        except OSError:
            return None if reset else known_paths
        if getattr(st, "st_flags", 0) & _UF_HIDDEN or getattr(st, "st_file_attributes", 0) & _FILE_ATTRIBUTE_HIDDEN:
            return None if reset else known_paths
        try:
            with open(fullname, "rb") as fh:
                data = fh.read(PTH_LIMIT)
        except OSError:
            return None if reset else known_paths
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            text = data.decode("latin-1")
        for line in text.splitlines():
            if line.startswith("#") or not line.strip():
                continue
            if line.startswith(("import ", "import\t")):
                if fullname not in skipped:
                    skipped.append(fullname)
                continue
            try:
                folder, case = makepath(sitedir, line.rstrip())
                if case not in known_paths and os.path.exists(folder):
                    sys.path.append(folder)
                    known_paths.add(case)
            except Exception:  # noqa: BLE001 - site reports a bad line and stops reading that file
                break
        return None if reset else known_paths

    def customize(module):
        def check():
            found = _module_file(module)
            if found and found not in skipped:
                skipped.append(found)
        return check

    site.addpackage = addpackage
    site.execsitecustomize = customize("sitecustomize")
    site.execusercustomize = customize("usercustomize")
    site.main()
    return skipped
