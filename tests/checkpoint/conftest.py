"""Fixtures of the checkpoint tests."""

import pytest


class Counting:
    """A file whose reads are counted in ``box[0]``."""

    def __init__(self, fh, box):
        self.fh, self.box = fh, box

    def read(self, n=-1):
        data = self.fh.read(n)
        self.box[0] += len(data)
        return data

    def __getattr__(self, name):
        return getattr(self.fh, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.fh.close()


@pytest.fixture
def bytes_read(monkeypatch):
    """The bytes every checkpoint reader reads through open_regular, counted."""
    import cudaenv.host
    import cudaenv.host.files as files

    box = [0]
    real = files.open_regular

    def counted(path):
        return Counting(real(path), box)

    monkeypatch.setattr(files, "open_regular", counted)
    monkeypatch.setattr(cudaenv.host, "open_regular", counted)
    return box
