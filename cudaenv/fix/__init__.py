"""`cudaenv fix`: the doctor's findings and the torch decision turned into one change, and that change applied.

``plan`` (pure) chooses between the recommended install, another build that fits, the driver, or nothing, from the
findings and :mod:`cudaenv.recommend`'s decision; ``apply`` (the service) runs the chosen install through the
Host's runner with a timeout, probes the machine again and diagnoses it. It sits after ``diagnose`` in the
capability order: the doctor itself asks :mod:`cudaenv.recommend` which torch fits, so the step that reads the
doctor's findings back cannot live in ``recommend``.
"""
