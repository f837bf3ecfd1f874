"""``python -m cudaenv``: the command line (:func:`cudaenv.cli.main`), the same as the ``cudaenv`` command."""

from cudaenv.cli import main

raise SystemExit(main())
