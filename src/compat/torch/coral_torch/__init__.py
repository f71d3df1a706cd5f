"""Coral as a torch.distributed backend.

``import coral_torch`` registers the backend "coral"; then
``torch.distributed.init_process_group("coral")`` works under torchrun, coral-run, mpirun
(with MASTER_ADDR/MASTER_PORT) or with an ``init_method``.
"""
import torch
import torch.distributed as dist

from . import _C  # noqa: F401  (loads libcoral and the process group type)

__all__ = ["ProcessGroupCoral", "BACKEND"]

ProcessGroupCoral = _C.ProcessGroupCoral
BACKEND = "coral"


def _create(store, rank, size, timeout):
    return _C.ProcessGroupCoral(store, rank, size, timeout)


def _register():
    if BACKEND.upper() in getattr(dist.Backend, "_plugins", {}):
        return
    kwargs = {}
    try:
        import inspect

        if "devices" in inspect.signature(dist.Backend.register_backend).parameters:
            kwargs["devices"] = ["cpu", "cuda"] if _C.CUDA else ["cpu"]
    except (TypeError, ValueError):
        pass
    dist.Backend.register_backend(BACKEND, _create, **kwargs)


if dist.is_available():
    _register()
