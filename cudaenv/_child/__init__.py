"""Scripts run inside other interpreters (the user's Python); stdlib only, Python 3.7+. Never imported by cudaenv itself."""
