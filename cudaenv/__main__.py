"""``python -m cudaenv``: the command line (:func:`cudaenv.cli.main`), the same as the ``cudaenv`` command."""

from cudaenv.cli import exit_now, main

exit_now(main())
