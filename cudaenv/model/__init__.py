"""cudaenv's JSON contract as records: the snapshot records (:mod:`cudaenv.model.snapshot`), each command's output
envelope (:mod:`cudaenv.model.reports`), the one codec that writes and reads them (:mod:`cudaenv.model.codec`), the
schema version check (:mod:`cudaenv.model.schema`) and the registry of every contract record
(:mod:`cudaenv.model.records`).

This package file imports nothing: :mod:`cudaenv.model.schema` is imported on the ``cudaenv use`` path.
"""


def registry():
    """Every record class of the JSON contract (:func:`cudaenv.model.records.contract_records`)."""
    from cudaenv.model.records import contract_records

    return contract_records()
