"""One module per subcommand, and the table of them (the CLI and the shell hook read it)."""

# name -> (module, one-line help). Order is the order of `cudaenv --help`.
COMMANDS = {
    "doctor": ("cudaenv.commands.doctor", "inspect this machine's CUDA setup, say what is wrong and how to fix it"),
    "list": ("cudaenv.commands.list_toolkits", "list the CUDA toolkits installed here"),
    "use": ("cudaenv.commands.use", "print shell code that switches this shell to a CUDA toolkit"),
    "link": ("cudaenv.commands.link", "print the commands that repoint /usr/local/cuda"),
    "init": ("cudaenv.commands.init", "print the shell hook for your rc file"),
    "torch": ("cudaenv.commands.torch", "recommend the right torch build for this machine"),
    "fix": ("cudaenv.commands.fix", "guided fix for a CPU-only or wrong-CUDA torch"),
    "verify": ("cudaenv.commands.verify", "run real GPU work in your Python to prove it works"),
    "explain": ("cudaenv.commands.explain", "explain a pasted CUDA/torch error message"),
    "install": ("cudaenv.commands.install", "install a CUDA toolkit side by side, without root"),
    "uninstall": ("cudaenv.commands.uninstall", "plan the removal of a CUDA toolkit, leaving nothing behind"),
    "check-installer": ("cudaenv.commands.check_installer", "check a downloaded CUDA .run installer without running it"),
    "checkpoint": ("cudaenv.commands.checkpoint", "inspect a PyTorch checkpoint without loading it, or rewrite it to load here"),
    "fleet": ("cudaenv.commands.fleet", "summarize many nodes' doctor reports: configurations, drift, failing nodes"),
    "lock": ("cudaenv.commands.lock", "write this machine's CUDA stack (driver floor, GPU archs, torch build and index, toolkit, wheels) as TOML"),
    "diff": ("cudaenv.commands.diff", "show what changed between two `cudaenv doctor --json` reports"),
}
