"""The stack file as a record (a machine checked against it is :class:`cudaenv.model.reports.StackCheck`: it is part
of the doctor's JSON)."""

from __future__ import annotations

from typing import Optional, Tuple

from cudaenv.model.record import Record

STACK_SCHEMA = 1  # the stack file's own version (its ``schema`` key); a newer one is refused, never misread


class Stack(Record):
    """What must hold (``[require]``) and what was merely seen (``[seen]``) where the stack was locked."""

    schema: int = STACK_SCHEMA
    generated_by: Optional[str] = None  # "cudaenv 0.1.0"
    generated_at: Optional[str] = None
    host: Optional[str] = None  # where it was locked
    # [require]
    driver_min: Optional[str] = None  # the oldest driver that runs the torch build (else the driver seen)
    gpu_archs: Tuple[str, ...] = ()  # the compute capabilities it was locked on: "8.0"
    cuda_major: Optional[int] = None  # the torch build's CUDA major (13: the -cu13 wheels)
    torch: Optional[str] = None  # "2.13.0+cu130"
    torch_index: Optional[str] = None  # the index that serves that build (None: the default one)
    companions: Tuple[str, ...] = ()  # "torchvision==0.28.0+cu130"
    wheels: Tuple[str, ...] = ()  # the nvidia-* wheels: "nvidia-cudnn-cu13==9.13.0.50"
    toolkit: Optional[str] = None  # the active toolkit's version: "13.0.2"
    toolkit_source: Optional[str] = None  # how it was installed: runfile | deb | conda | pip-wheels | cudaenv | ...
    # [seen]
    seen_driver: Optional[str] = None
    seen_gpus: Tuple[str, ...] = ()
    seen_system: Optional[str] = None
    seen_python: Optional[str] = None
    seen_installer: Optional[str] = None
