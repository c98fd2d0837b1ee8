"""fastjem: Joint Energy-based Models (Grathwohl et al., ICLR 2020) trained as fast as the hardware allows.

The parts are importable on their own: ``fastjem.sampler.SGLD`` samples any energy function,
``fastjem.buffer.ReplayBuffer`` holds persistent chains, ``fastjem.models`` has the networks and
``fastjem.energy`` turns logits into energies.
"""

from fastjem.buffer import ReplayBuffer
from fastjem.config import PRESETS, TrainConfig
from fastjem.energy import joint_energy, log_py_given_x, marginal_energy
from fastjem.sampler import SGLD, model_energy, sampling_mode

__version__ = "0.1.0"
__all__ = ["PRESETS", "SGLD", "ReplayBuffer", "TrainConfig", "joint_energy", "log_py_given_x", "marginal_energy",
           "model_energy", "sampling_mode"]
