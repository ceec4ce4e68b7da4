"""Notes when a PyTorch process's first optimizer step ends, for bench/first_minute.py.

bench/first_minute.py puts this folder first on PYTHONPATH when it runs shared/peers/fashion.py, so
Python imports this file at start instead of Debian's sitecustomize (which it then runs: it only
installs apport's exception hook). When EMBER_FIRST_STEP_FILE names a file, the first call of any
torch.optim.Optimizer subclass's step() writes time.time() at its end into that file, once per
process; fashion.py itself is not changed. The hook wraps each optimizer module's classes as the
module is imported (torch.optim.adam etc.), before any optimizer exists, so PyTorch's own step
profiling hook wraps our wrapper as usual. Cost: one flag test per step.
"""
import importlib.abc
import importlib.machinery
import os
import sys
import time

_DEBIAN = "/usr/lib/python3.11/sitecustomize.py"
if os.path.exists(_DEBIAN):
    try:
        exec(compile(open(_DEBIAN).read(), _DEBIAN, "exec"), {"__name__": "_debian_sitecustomize"})
    except Exception:  # noqa: BLE001 - the apport hook is optional
        pass

_FILE = os.environ.get("EMBER_FIRST_STEP_FILE")
_done = [False]


def _wrap(cls):
    orig = cls.__dict__.get("step")
    if orig is None or getattr(orig, "_ember_first_step", False):
        return

    def step(self, *args, **kwargs):
        r = orig(self, *args, **kwargs)
        if not _done[0]:
            _done[0] = True
            with open(_FILE, "w") as f:
                f.write("%.6f\n" % time.time())
        return r

    step._ember_first_step = True
    step.__name__ = orig.__name__
    step.__qualname__ = getattr(orig, "__qualname__", "step")
    step.__doc__ = orig.__doc__
    step.__wrapped__ = orig
    cls.step = step


class _Finder(importlib.abc.MetaPathFinder):
    """Finds nothing itself: wraps the loader of torch.optim's submodules to patch their optimizers."""

    def find_spec(self, name, path, target=None):
        if not name.startswith("torch.optim.") or name.count(".") != 2:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader = spec.loader
        orig_exec = loader.exec_module

        def exec_module(module):
            orig_exec(module)
            import torch.optim.optimizer as base
            for v in list(vars(module).values()):
                if isinstance(v, type) and issubclass(v, base.Optimizer) and v is not base.Optimizer:
                    _wrap(v)

        loader.exec_module = exec_module
        return spec


if _FILE:
    sys.meta_path.insert(0, _Finder())
