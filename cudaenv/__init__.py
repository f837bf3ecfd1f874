"""cudaenv: a CUDA environment doctor and manager. The folder tree is the layer tree (docs/contributing.md): core,
model, parse, shells, host, probes, facts, index, then the capabilities in their order (checkpoint, toolkit,
explain, recommend, diagnose, fix, pasted, verify, fleet), render, commands and cli; ``_child`` holds the scripts
run in other interpreters and ``portable`` the helper users import."""

__version__ = "0.1.0"

# The commands whose modules the `cudaenv` command takes from a start-up bundle (cudaenv.bundle: use and list from one,
# the doctor from its own); bin/cudaenv and cli.main import that package only for these.
BUNDLED_COMMANDS = ("use", "list", "doctor")
