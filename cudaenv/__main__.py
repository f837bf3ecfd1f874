from cudaenv.cli import main

raise SystemExit(main())
