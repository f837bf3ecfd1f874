"""The start-up bundles of the `cudaenv` command: the code of the modules of `use` and `list`, and of the doctor's.

Issue 35: the compiled code of the modules on their path in one file of the wheel, read by one ``open`` instead of a
directory listing, a ``stat`` and an ``open`` of a ``__pycache__`` file for each of about 40 modules.

The source stays where it is: hatch_build.py compiles each module of :data:`MODULES` from its file when the wheel is
built (:func:`build_bundle`, loaded from this file there: the package is not installed where the wheel is built) into
``cudaenv/bundle/startup.bundle``. The `cudaenv` command (bin/cudaenv) calls :func:`start` before it imports
:mod:`cudaenv.cli` (which is in the bundle too: this package is outside that one so that it can), and
:func:`cudaenv.cli.main` takes the finder put in place (:func:`started`); :class:`_Finder` goes first on
``sys.meta_path`` (:func:`use_bundle`) only when the bundle was built by this interpreter's bytecode (its magic number,
the one ``__pycache__`` files carry) with no ``-O``; each module is then taken from it only when its source file is
still the size it was compiled from, else found and loaded as usual. For `use` and `list` the bundle's modules are
also made past the import system's own steps (:meth:`_Finder.import_directly`).

A module taken from the bundle is the module the usual import makes (``__file__``, ``__spec__``, ``__path__``,
``__cached__``; its code names the real source file, so a traceback shows that file's lines): only its loader's
``get_code`` differs. It saves the finding and reading, not the running (bench/RESULTS.md, issue 35).

Nothing here imports what the interpreter has not loaded before any code runs (``os`` from ``site``; ``marshal``,
``_imp`` and the import system's own module are built in): it runs before the modules it saves.
"""

import _thread  # (built in, and loaded before any code runs, as marshal is)
import marshal
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing stays off the `cudaenv use` path
    from typing import Dict, Iterable, Optional, Tuple

BUNDLE = "startup.bundle"  # beside this module in the wheel (hatch_build.py compile_bundle)
BUNDLE_COMMANDS = ("use", "list")  # the commands whose modules come from BUNDLE (the doctor's from DOCTOR_BUNDLE)
FORMAT = b"cudaenv-bundle 2"  # 2: the code in groups (GROUPS)

# The modules imported after the bundle is in place, on `cudaenv use 12.4 --shell bash` and `cudaenv list` (English,
# the usual toolkits): tests/cli/test_cli_bundle.py fails when one of them is not here, or one here is never imported.
# In groups, each group's code marshalled as one tuple and read at once where its first module is imported: one
# marshal.loads of a group shares the names and strings its modules have in common (`use 12.4`: 1 M instructions
# fewer of 52 M than reading its 30 modules one by one). `use` reads SHARED and USE_ONLY, `list` SHARED
# and LIST_ONLY (the test fails when one of them imports a module of the other's group); LIST_ONLY holds the dpkg
# readers, which `list` imports for any toolkit that no cudaenv or pip install marks.
CLI_MODULES = (  # what bin/cudaenv imports after start()
    "cudaenv.cli", "cudaenv.cli.streams", "cudaenv.commands", "cudaenv.core", "cudaenv.core.options")
SHARED = CLI_MODULES + (
    "cudaenv.core.config", "cudaenv.core.lazy", "cudaenv.core.text", "cudaenv.core.version_strings",
    "cudaenv.model", "cudaenv.model.record", "cudaenv.model.toolkits", "cudaenv.parse", "cudaenv.parse.toolkit_files",
    "cudaenv.host", "cudaenv.host.files", "cudaenv.host.resolve", "cudaenv.host.state",
    "cudaenv.probes", "cudaenv.probes.package_db", "cudaenv.probes.paths", "cudaenv.probes.site_packages",
    "cudaenv.probes.toolkits", "cudaenv.probes.toolkits.candidate", "cudaenv.probes.toolkits.candidates",
    "cudaenv.probes.toolkits.folder", "cudaenv.probes.toolkits.store", "cudaenv.toolkit", "cudaenv.toolkit.select",
)
USE_ONLY = ("cudaenv.commands.use", "cudaenv.probes.toolkits.named", "cudaenv.shells", "cudaenv.shells.posix",
            "cudaenv.toolkit.project", "cudaenv.toolkit.switch")
LIST_ONLY = (
    "cudaenv.commands.list_toolkits", "cudaenv.core.errors", "cudaenv.core.i18n", "cudaenv.core.resources",
    "cudaenv.parse.dpkg", "cudaenv.probes.dpkg", "cudaenv.render", "cudaenv.render.text", "cudaenv.render.toolkits",
    "cudaenv.render.width", "cudaenv.toolkit.table",
)
GROUPS = (SHARED, USE_ONLY, LIST_ONLY)
MODULES = tuple(name for group in GROUPS for name in group)


# The doctor's own bundle (DOCTOR_BUNDLE): the modules `cudaenv doctor --json` (with or without --quick, torch installed
# or not) imports after the bundle is in place on a machine without a GPU; a machine with one imports a few more (the
# NVML reader, the GPU health parsers), found as usual. tests/cli/test_cli_bundle.py fails when a module
# `doctor --json --quick` imports in a fake root is not here, or one here is no module. A file of its own, so that
# `use` reads no more than its own modules.
DOCTOR_BUNDLE = "doctor.bundle"
DOCTOR_MODULES = CLI_MODULES + (
    "cudaenv._child",
    "cudaenv.commands.doctor",
    "cudaenv.core.config",
    "cudaenv.core.errors",
    "cudaenv.core.i18n",
    "cudaenv.core.jobs",
    "cudaenv.core.lazy",
    "cudaenv.core.pep440",
    "cudaenv.core.resources",
    "cudaenv.core.text",
    "cudaenv.core.tuples",
    "cudaenv.core.version",
    "cudaenv.core.version_strings",
    "cudaenv.diagnose",
    "cudaenv.diagnose._common",
    "cudaenv.diagnose.containers",
    "cudaenv.diagnose.dlls",
    "cudaenv.diagnose.driver",
    "cudaenv.diagnose.environment",
    "cudaenv.diagnose.extensions",
    "cudaenv.diagnose.framework_cudnn",
    "cudaenv.diagnose.framework_imports",
    "cudaenv.diagnose.frameworks",
    "cudaenv.diagnose.health",
    "cudaenv.diagnose.hints",
    "cudaenv.diagnose.inside",
    "cudaenv.diagnose.resources",
    "cudaenv.diagnose.service",
    "cudaenv.diagnose.toolkit_paths",
    "cudaenv.diagnose.toolkits",
    "cudaenv.diagnose.versions",
    "cudaenv.diagnose.view",
    "cudaenv.diagnose.visibility",
    "cudaenv.facts",
    "cudaenv.facts.cuda_arch",
    "cudaenv.facts.distro",
    "cudaenv.facts.drivers",
    "cudaenv.facts.findings",
    "cudaenv.facts.frameworks",
    "cudaenv.facts.torch",
    "cudaenv.facts.torch_policy",
    "cudaenv.facts.xid",
    "cudaenv.host",
    "cudaenv.host.children",
    "cudaenv.host.files",
    "cudaenv.host.process",
    "cudaenv.host.resolve",
    "cudaenv.host.state",
    "cudaenv.model",
    "cudaenv.model.codec",
    "cudaenv.model.record",
    "cudaenv.model.reports",
    "cudaenv.model.schema",
    "cudaenv.model.snapshot",
    "cudaenv.model.toolkits",
    "cudaenv.model.visible",
    "cudaenv.parse",
    "cudaenv.parse._lines",
    "cudaenv.parse.container_config",
    "cudaenv.parse.cudnn",
    "cudaenv.parse.decorations",
    "cudaenv.parse.elf",
    "cudaenv.parse.elf_symbols",
    "cudaenv.parse.frameworks",
    "cudaenv.parse.kernel_log",
    "cudaenv.parse.ldcache",
    "cudaenv.parse.ldconf",
    "cudaenv.parse.lspci",
    "cudaenv.parse.nvidia_smi",
    "cudaenv.parse.nvml",
    "cudaenv.parse.proc",
    "cudaenv.parse.pyenvs",
    "cudaenv.parse.symbols",
    "cudaenv.parse.toolkit_files",
    "cudaenv.parse.visible_devices",
    "cudaenv.probes",
    "cudaenv.probes.collect",
    "cudaenv.probes.containers",
    "cudaenv.probes.cudnn",
    "cudaenv.probes.elf",
    "cudaenv.probes.env",
    "cudaenv.probes.extensions",
    "cudaenv.probes.frameworks",
    "cudaenv.probes.gpu_health",
    "cudaenv.probes.ldconf",
    "cudaenv.probes.libraries",
    "cudaenv.probes.memo",
    "cudaenv.probes.nvidia",
    "cudaenv.probes.nvidia_smi_path",
    "cudaenv.probes.package_db",
    "cudaenv.probes.paths",
    "cudaenv.probes.platform",
    "cudaenv.probes.pyenv",
    "cudaenv.probes.python",
    "cudaenv.probes.site_packages",
    "cudaenv.probes.toolkits",
    "cudaenv.probes.toolkits.candidate",
    "cudaenv.probes.toolkits.candidates",
    "cudaenv.probes.toolkits.folder",
    "cudaenv.probes.toolkits.store",
    "cudaenv.probes.torch",
    "cudaenv.probes.torch_child",
    "cudaenv.probes.visibility",
    "cudaenv.recommend",
    "cudaenv.recommend.alternatives",
    "cudaenv.recommend.decide",
    "cudaenv.recommend.install",
    "cudaenv.recommend.jetson",
    "cudaenv.recommend.judge",
    "cudaenv.recommend.records",
    "cudaenv.recommend.request",
    "cudaenv.recommend.view",
    "cudaenv.render",
    "cudaenv.render.json_out",
    "cudaenv.render.report",
    "cudaenv.render.spinner",
    "cudaenv.render.text",
    "cudaenv.render.width",
    "cudaenv.toolkit",
    "cudaenv.toolkit.install",
    "cudaenv.toolkit.install.repos",
    "cudaenv.toolkit.sudo",
)


def _magic() -> bytes:
    """This interpreter's bytecode magic number (the import system's own module is loaded before any code runs)."""
    return sys.modules["_frozen_importlib_external"].MAGIC_NUMBER


def _header(magic: bytes) -> bytes:
    return b"%s %s\n" % (FORMAT, magic.hex().encode())


def _source_file(name: str, package_root: str) -> "Tuple[str, bool]":
    """The source file of module ``name`` under ``package_root`` (the folder holding ``cudaenv/``), and whether it is
    a package's ``__init__.py``."""
    import os

    base = os.path.join(package_root, *name.split("."))
    init = os.path.join(base, "__init__.py")
    return (init, True) if os.path.isfile(init) else (base + ".py", False)


def build_bundle(package_root: str, modules: "Iterable[str]" = MODULES, groups: "Optional[Iterable[Iterable[str]]]" = None) -> bytes:
    """The bundle of ``modules`` compiled from their files under ``package_root``: a header line naming this
    interpreter's magic number, the marshalled index (its length first, 8 bytes) ``({name: (relative path, is a
    package, source size, group, place in the group)}, [(start, end) of each group])``, then each group's code, a
    marshalled tuple. ``groups``: :data:`GROUPS` for :data:`MODULES`, else each module a group of its own (the doctor's
    bundle). Compiled as the import system compiles a source (``dont_inherit``, no optimisation) under its path
    relative to ``package_root`` (the loader names the real file)."""
    modules = tuple(modules)
    if groups is None:
        groups = GROUPS if modules == MODULES else tuple((name,) for name in modules)
    groups = [tuple(group) for group in groups]
    if sorted(name for group in groups for name in group) != sorted(modules):
        raise ValueError("the groups are not the modules")
    index: "Dict[str, tuple]" = {}
    spans = []
    blobs = []
    at = 0
    for number, group in enumerate(groups):
        codes = []
        for place, name in enumerate(group):
            path, is_package = _source_file(name, package_root)
            with open(path, "rb") as fh:
                source = fh.read()
            relative = "/".join(name.split(".")) + ("/__init__.py" if is_package else ".py")
            codes.append(compile(source, relative, "exec", dont_inherit=True, optimize=0))
            index[name] = (relative, is_package, len(source), number, place)
        blob = marshal.dumps(tuple(codes))
        spans.append((at, at + len(blob)))
        blobs.append(blob)
        at += len(blob)
    head = marshal.dumps((index, spans))
    return _header(_magic()) + b"%08d" % len(head) + head + b"".join(blobs)


def read_bundle(path: str) -> "Optional[Tuple[dict, list, memoryview]]":
    """The index, the groups' places and the code bytes of the bundle at ``path``, or None where it cannot be used: no
    such file (an editable install, another build), another interpreter's bytecode or another format, ``python -O``,
    or a file cut short."""
    if sys.flags.optimize:
        return None
    try:
        with open(path, "rb") as fh:
            blob = fh.read()
    except OSError:
        return None
    header = _header(_magic())
    if not blob.startswith(header):
        return None
    start = len(header) + 8
    try:
        end = start + int(blob[len(header):start])
        index, spans = marshal.loads(blob[start:end])
    except (ValueError, EOFError, TypeError):
        return None
    if not isinstance(index, dict) or not isinstance(spans, list) or (spans and spans[-1][1] != len(blob) - end):
        return None
    return index, spans, memoryview(blob)[end:]


class _Finder:
    """Finds the bundle's modules whose source files are still the size they were compiled from (``sys.meta_path``)."""

    def __init__(self, index: dict, spans: list, code: memoryview, package_root: str):
        ext = sys.modules["_frozen_importlib_external"]
        self.index, self.code, self.root, self.ext = index, code, package_root.rstrip("/") + "/", ext
        self.spans = spans
        self.groups: "Dict[int, tuple]" = {}  # group number -> its code objects, read where its first module is imported
        # the __pycache__ tag of __cached__ (None: a PYTHONPYCACHEPREFIX moves it, and the usual computation says where)
        self.tag = None if sys.pycache_prefix else sys.implementation.cache_tag
        self.loaded = []  # the names taken from the bundle, in order (for the tests)
        self.skipped = []  # the names found as usual: their source changed since the build

        finder = self

        class BundleLoader(ext.SourceFileLoader):
            """A source file's loader whose code comes from the bundle (the rest, ``get_source`` included, is the
            usual loader's)."""

            def get_code(self, fullname):
                import _imp

                entry = finder.index[fullname]
                group = finder.groups.get(entry[3])
                if group is None:
                    start, end = finder.spans[entry[3]]
                    group = finder.groups[entry[3]] = marshal.loads(finder.code[start:end])
                code = group[entry[4]]
                _imp._fix_co_filename(code, self.path)  # as the usual loader does for a moved __pycache__ file
                finder.loaded.append(fullname)
                return code

        self.loader_class = BundleLoader

    def find_spec(self, name, path=None, target=None):
        entry = self.index.get(name)
        if entry is None:
            return None
        import os

        origin = self.root + entry[0]
        try:
            if os.stat(origin).st_size != entry[2]:
                self.skipped.append(name)
                return None
        except OSError:
            return None
        folder, _, file = origin.rpartition("/")
        spec = self.ext.spec_from_file_location(name, origin, loader=self.loader_class(name, origin),
                                                submodule_search_locations=[folder] if entry[1] else None)
        if self.tag is not None:  # __cached__ as the usual import names it, without its path arithmetic per module
            spec.cached = "%s/__pycache__/%s.%s.pyc" % (folder, file[:-3], self.tag)
        return spec

    def import_directly(self) -> None:
        """Take the bundle's modules past the import system's own steps as well (`use` and `list`): until
        :meth:`close`, ``builtins.__import__`` is :meth:`_import`, which makes a bundle module the way
        ``importlib._bootstrap`` does (its parent package first, ``module_from_spec``, in ``sys.modules`` while its
        code runs, out again where the code raises, then an attribute of its parent) without the module locks, the
        search of ``sys.meta_path`` and the lock context of each step: about 130,000 instructions of the import
        system's Python for each of the 40-odd modules, 12 % of `cudaenv use` (bench/RESULTS.md, issue 35).

        Everything else goes to the usual ``__import__``: a relative import, a module not in the bundle (or one whose
        source changed: :meth:`find_spec`), ``import *``, a name missing from a package, any import while another
        thread runs (the usual import's locks keep threads from seeing a module half made; no module of the bundle starts
        one when imported), and the whole of a run under
        ``python -v`` or ``-X importtime``, whose reports would miss these modules."""
        import builtins

        import os

        if self.usual_import is not None or sys.flags.verbose or "importtime" in sys._xoptions or (
                os.environ.get("PYTHONPROFILEIMPORTTIME") and not sys.flags.ignore_environment):
            return
        self.usual_import = builtins.__import__
        builtins.__import__ = self._import

    def close(self) -> None:
        """The usual import again: the finder off ``sys.meta_path``, ``builtins.__import__`` the one it replaced."""
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        if self.usual_import is not None:
            import builtins

            if builtins.__import__ == self._import:
                builtins.__import__ = self.usual_import
            self.usual_import = None

    usual_import = None

    def _import(self, name, globals=None, locals=None, fromlist=(), level=0):
        """``__import__`` for the bundle's modules (:meth:`import_directly`)."""
        modules = sys.modules
        module = modules.get(name, _MISSING)
        if level or _thread._count() or module is None:
            return self.usual_import(name, globals, locals, fromlist, level)
        if module is _MISSING and name not in self.index:  # found as usual, its package from the bundle first
            parent = name.rpartition(".")[0]
            if parent in self.index and parent not in modules:
                self._load(parent)
            return self.usual_import(name, globals, locals, fromlist, level)
        if module is _MISSING:
            module = self._load(name)
        if not fromlist:
            return modules[name.partition(".")[0]] if "." in name else module
        if hasattr(module, "__path__"):
            for item in fromlist:
                if not hasattr(module, item):  # a submodule of the bundle, or what the usual import decides
                    sub = "%s.%s" % (name, item)
                    if item == "*" or sub not in self.index or sub in modules:
                        return self.usual_import(name, globals, locals, fromlist, level)
                    self._load(sub)
        return module

    def _load(self, name):
        """Module ``name`` of the bundle made and run as ``importlib._bootstrap._find_and_load_unlocked`` does."""
        modules = sys.modules
        parent, _, child = name.rpartition(".")
        if parent and parent not in modules:
            self._import(parent)
            if name in modules:  # the parent's code imported it
                return modules[name]
        spec = self.find_spec(name)
        if spec is None:  # its source changed since the build: found and loaded as usual
            self.usual_import(name)
            return modules[name]
        module = _new_module(spec)
        spec._initializing = True
        try:
            modules[name] = module
            try:
                spec.loader.exec_module(module)
            except BaseException:
                modules.pop(name, None)
                raise
            module = modules.pop(name)  # (what its code left in sys.modules under its name, as the import system)
            modules[name] = module
        finally:
            spec._initializing = False
        if parent:
            setattr(modules[parent], child, module)
        return module


_MISSING = object()


def _new_module(spec):
    """``importlib._bootstrap.module_from_spec`` of a bundle's spec (a source file's loader, whose module is the usual
    new module): the same attributes in the same order as its ``_init_module_attrs`` sets them, without its tests for
    the other kinds of spec (a seventh of its time)."""
    module = type(sys)(spec.name)
    module.__loader__ = spec.loader
    module.__package__ = spec.parent
    module.__spec__ = spec
    if spec.submodule_search_locations is not None:
        module.__path__ = spec.submodule_search_locations
    module.__file__ = spec.origin
    cached = spec.cached
    if cached is not None:
        module.__cached__ = cached
    return module


def use_bundle(path: "Optional[str]" = None, name: str = BUNDLE) -> "Optional[_Finder]":
    """Put the bundle's finder first on ``sys.meta_path`` (the bundle ``name`` beside this module unless ``path``:
    :data:`BUNDLE`, or :data:`DOCTOR_BUNDLE` for the doctor) and return
    it, or None (the usual import) where the bundle cannot be used (:func:`read_bundle`; on Windows). The caller takes
    it off ``sys.meta_path`` when the command is done (the modules it loaded stay loaded)."""
    import os

    if os.sep != "/":  # (Windows: the usual import, whose paths name the files with its own separator)
        return None
    here = os.path.dirname(__file__)
    found = read_bundle(path or os.path.join(here, name))
    if found is None:
        return None
    finder = _Finder(found[0], found[1], found[2], os.path.dirname(os.path.dirname(here)))
    sys.meta_path.insert(0, finder)
    return finder



_early: "list" = []  # the finder start() put in place, until main() takes it (started)


def _put_in_place(argv) -> "Optional[_Finder]":
    """The bundle of the command ``argv`` names in place: BUNDLE, its modules made directly, for `use` and `list`,
    DOCTOR_BUNDLE for `doctor`; None for the others, or where the bundle cannot be used."""
    command = argv[0] if argv else None
    if command in BUNDLE_COMMANDS:
        finder = use_bundle()
        if finder is not None:
            finder.import_directly()
        return finder
    if command == "doctor":
        return use_bundle(name=DOCTOR_BUNDLE)
    return None


def start(argv) -> None:
    """bin/cudaenv, before it imports :mod:`cudaenv.cli`: the bundle of the command ``argv`` (``sys.argv[1:]``) names
    in place, so that the command line's own modules come from it too (:data:`CLI_MODULES`)."""
    _early[:] = [_put_in_place(argv)]


def started(argv) -> "Optional[_Finder]":
    """:func:`cudaenv.cli.main` as the `cudaenv` command: the finder :func:`start` put in place (once), else the bundle
    put in place now (``python -m cudaenv``); main takes it off (:meth:`_Finder.close`) when the command is done."""
    if _early:
        return _early.pop()
    return _put_in_place(argv)
