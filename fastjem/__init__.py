"""fastjem: Joint Energy-based Models (Grathwohl et al., ICLR 2020) trained as fast as the hardware allows.

The parts are importable on their own: ``fastjem.sampler.SGLD`` samples any energy function,
``fastjem.buffer.ReplayBuffer`` holds persistent chains, ``fastjem.models`` has the networks and
``fastjem.energy`` turns logits into energies.
"""

import importlib

# name -> the module that defines it; imported at first use, so that `fastjem --help` and the light commands start
# without importing torch (about 2 s)
_EXPORTS = {
    "ReplayBuffer": "fastjem.buffer",
    "PRESETS": "fastjem.config",
    "TrainConfig": "fastjem.config",
    "joint_energy": "fastjem.energy",
    "log_py_given_x": "fastjem.energy",
    "marginal_energy": "fastjem.energy",
    "SGLD": "fastjem.sampler",
    "model_energy": "fastjem.sampler",
    "sampling_mode": "fastjem.sampler",
}

__version__ = "0.1.0"
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'fastjem' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
