"""One module per subcommand (the table is ``cudaenv.cli.COMMANDS``)."""
