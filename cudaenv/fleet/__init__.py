"""Many machines: one doctor report per node (:mod:`cudaenv.fleet.files` names and reads them) and the summary of
a folder of them (:mod:`cudaenv.fleet.summary`, pure, streaming: one report at a time reduced to a small key)."""
