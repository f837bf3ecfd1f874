"""How the wheel carries the ``cudaenv`` command (hatchling hooks, run where the wheel is built).

On POSIX the command is the wheel's own script, ``bin/cudaenv`` (PEP 427 ``.data/scripts``; the installer replaces
its ``#!`` line by the environment's interpreter). A ``[project.scripts]`` entry point would give the wrapper pip
generates, which runs ``import re`` (for a ``sys.argv[0]`` rewrite that matters only on Windows) before cudaenv's
first line: with enum, functools and collections that is 0.6 to 0.7 x a whole ``python -c pass``, a third of the
start-up budget of ``cudaenv use`` (bench/RESULTS.md, 2026-12-03). pip also drops a wheel script that has an entry
point's name, so the two cannot be shipped side by side.

On Windows an installer makes a ``cudaenv.exe`` only for an entry point, so a wheel built there declares the entry
point, carries no script, and is tagged for its platform (``py3-none-win_amd64``): published beside the POSIX wheel
(``py3-none-any``), Windows installers pick it, because a platform tag outranks ``any``.

``CUDAENV_WHEEL_PLATFORM=win_amd64`` (any Windows platform tag) builds the Windows layout elsewhere, for a release
and for the packaging test; it is read only here, at build time.

The translations: each ``cudaenv/locale/<lang>/LC_MESSAGES/cudaenv.po`` is compiled to the ``cudaenv.mo`` beside it in
the wheel (the stdlib's gettext reads only ``.mo``), by the package's own msgfmt (``cudaenv/core/msgfmt.py``, loaded
from its file: the package is not installed where the wheel is built), so the build needs nothing more.

The facts tables in the line format: each ``data/NAME.txt`` is compiled to ``cudaenv/data/NAME.txt.marshal`` beside
it (``cudaenv/core/linetable.py``, loaded from its file the same way), which ``load_table`` reads without parsing when
the Python running cudaenv is the one that built the wheel (issue 26: `checkpoint inspect` reads two such tables on
every run); another Python parses the text, as an editable install does. The JSON tables (``data/NAME.json``) are
compiled the same way, to ``NAME.json.marshal`` (issue 35: `doctor --quick` reads eight, about 80 KB of JSON).

The start-up bundle: the code of the modules on the path of `cudaenv use` and `cudaenv list`
(``cudaenv/bundle/__init__.py``'s ``MODULES``, loaded from its file the same way), compiled from their files into
``cudaenv/bundle/startup.bundle`` (and the doctor's, ``DOCTOR_MODULES``, into ``cudaenv/bundle/doctor.bundle``), which the
`cudaenv` command reads in one ``open`` instead of finding and reading each
module's ``__pycache__`` file, when the Python running cudaenv has the bytecode of the one that built the wheel and
each source file is the size it was compiled from (issue 35); elsewhere the modules are imported as usual.

The torch probe's scripts: each pass's one ``-c`` source (``cudaenv/_child/__init__.py``'s ``torch_script``, loaded
from its file the same way) compiled into ``cudaenv/_child/torch_probe.<pass>.code``, whose code the child loads
instead of compiling the source where it runs the interpreter cudaenv runs in, with the bytecode of the one that built
the wheel (issue 35: compiling it was about a third of `doctor --quick`'s child); another interpreter is handed the
source, as with an editable install.
"""

import importlib.util
import os
import shutil
import sys
import sysconfig
import tempfile

from hatchling.builders.hooks.plugin.interface import BuildHookInterface
from hatchling.metadata.plugin.interface import MetadataHookInterface

ENTRY_POINT = "cudaenv.cli:main"
SCRIPT = "bin/cudaenv"


def windows_tag(forced=None, platform=None, build_platform=None):
    """The wheel's platform tag when the build is for Windows (``win_amd64``, ``win32``, ``win_arm64``), else None."""
    forced = os.environ.get("CUDAENV_WHEEL_PLATFORM", "") if forced is None else forced
    if forced:
        if not forced.startswith("win"):
            raise ValueError("CUDAENV_WHEEL_PLATFORM=%r: only a Windows platform tag (win_amd64, win32, win_arm64)" % forced)
        return forced
    if (sys.platform if platform is None else platform) != "win32":
        return None
    return (sysconfig.get_platform() if build_platform is None else build_platform).replace("-", "_").replace(".", "_")


class CustomMetadataHook(MetadataHookInterface):
    def update(self, metadata):
        if windows_tag():
            metadata["scripts"] = {"cudaenv": ENTRY_POINT}


class CustomBuildHook(BuildHookInterface):
    def initialize(self, version, build_data):
        if self.target_name != "wheel":
            return
        self._compiled = compile_catalogs(self.root, build_data["force_include"])
        self._tables = compile_tables(self.root, build_data["force_include"])
        self._bundle = compile_bundle(self.root, build_data["force_include"])
        self._children = compile_children(self.root, build_data["force_include"])
        tag = windows_tag()
        if tag:
            build_data["tag"] = "py3-none-" + tag
        else:
            build_data["shared_scripts"][SCRIPT] = "cudaenv"

    def finalize(self, version, build_data, artifact_path):
        for folder in (getattr(self, "_compiled", None), getattr(self, "_tables", None), getattr(self, "_bundle", None),
                       getattr(self, "_children", None)):
            if folder:
                shutil.rmtree(folder, ignore_errors=True)


def compile_catalogs(root, force_include):
    """Compile every ``cudaenv/locale/*/LC_MESSAGES/*.po`` under ``root`` into a temporary folder and map each ``.mo``
    into the wheel beside its ``.po``; the temporary folder (None when there is no catalog)."""
    locale = os.path.join(root, "cudaenv", "locale")
    if not os.path.isdir(locale):
        return None
    spec = importlib.util.spec_from_file_location("_cudaenv_msgfmt", os.path.join(root, "cudaenv", "core", "msgfmt.py"))
    msgfmt = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(msgfmt)
    out = tempfile.mkdtemp(prefix="cudaenv-mo-")
    for lang in sorted(os.listdir(locale)):
        folder = os.path.join(locale, lang, "LC_MESSAGES")
        for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else ():
            if not name.endswith(".po"):
                continue
            with open(os.path.join(folder, name), encoding="utf-8") as fh:
                data = msgfmt.compile_po(msgfmt.read_po(fh.read()))
            target = os.path.join(out, lang + "-" + name[:-3] + ".mo")
            with open(target, "wb") as fh:
                fh.write(data)
            force_include[target] = "cudaenv/locale/%s/LC_MESSAGES/%s.mo" % (lang, name[:-3])
    return out


def compile_tables(root, force_include):
    """Compile every facts table under ``root``, the line-format ``data/NAME.txt`` and the JSON ``data/NAME.json``
    (``cudaenv/core/linetable.py``, loaded from its file), into a temporary folder and map each into the wheel as
    ``cudaenv/data/NAME.txt.marshal`` (``NAME.json.marshal``), beside the text; the temporary folder (None when there
    is no table)."""
    data = os.path.join(root, "data")
    names = sorted(n for n in os.listdir(data) if n.endswith((".txt", ".json"))) if os.path.isdir(data) else []
    if not names:
        return None
    spec = importlib.util.spec_from_file_location("_cudaenv_linetable", os.path.join(root, "cudaenv", "core", "linetable.py"))
    linetable = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(linetable)
    out = tempfile.mkdtemp(prefix="cudaenv-tables-")
    for name in names:
        with open(os.path.join(data, name), "rb") as fh:
            raw = fh.read()
        target = os.path.join(out, name + ".marshal")
        with open(target, "wb") as fh:
            fh.write(linetable.compile_table(raw.decode("utf-8"), len(raw), name))
        force_include[target] = "cudaenv/data/%s.marshal" % name
    return out


def compile_bundle(root, force_include):
    """Compile the start-up bundles (``cudaenv/bundle/__init__.py``, loaded from its file) into a temporary folder and map
    them into the wheel as ``cudaenv/bundle/startup.bundle`` (use, list) and ``cudaenv/bundle/doctor.bundle``; the temporary
    folder."""
    spec = importlib.util.spec_from_file_location("_cudaenv_bundle", os.path.join(root, "cudaenv", "bundle", "__init__.py"))
    bundle = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bundle)
    out = tempfile.mkdtemp(prefix="cudaenv-bundle-")
    for name, modules in ((bundle.BUNDLE, bundle.MODULES), (bundle.DOCTOR_BUNDLE, bundle.DOCTOR_MODULES)):
        target = os.path.join(out, name)
        with open(target, "wb") as fh:
            fh.write(bundle.build_bundle(root, modules))
        force_include[target] = "cudaenv/bundle/" + name
    return out


def compile_children(root, force_include):
    """Compile the torch probe's scripts (``cudaenv/_child/__init__.py``'s ``torch_script`` and ``compile_code``, loaded
    from its file) into a temporary folder and map each into the wheel as ``cudaenv/_child/<its CODE_FILES name>``;
    the temporary folder."""
    folder = os.path.join(root, "cudaenv", "_child")
    spec = importlib.util.spec_from_file_location("_cudaenv_child", os.path.join(folder, "__init__.py"))
    child = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(child)

    def read(name):  # the bytes as the installed package's reader decodes them (no newline translation)
        with open(os.path.join(folder, name), "rb") as fh:
            return fh.read().decode("utf-8")

    out = tempfile.mkdtemp(prefix="cudaenv-child-")
    for mode, name in sorted(child.CODE_FILES.items()):
        target = os.path.join(out, name)
        with open(target, "wb") as fh:
            fh.write(child.compile_code(child.torch_script(mode, read), importlib.util.MAGIC_NUMBER))
        force_include[target] = "cudaenv/_child/" + name
    return out
