import re

import pytest
import torch
from fastjem.kernels import lse_energy
from kernel_utils import OpRecorder, skip_unless_runnable

from fastjem.energy import joint_energy, log_py_given_x, marginal_energy


def test_marginal_energy_is_negative_logsumexp():
    logits = torch.randn(7, 10, dtype=torch.float64) * 5
    expected = -torch.log(torch.exp(logits).sum(1))
    torch.testing.assert_close(marginal_energy(logits).double(), expected, rtol=1e-6, atol=1e-6)


def test_marginal_energy_is_stable_for_large_logits():
    logits = torch.tensor([[1e4, 1e4 - 1.0, -1e4]])
    e = marginal_energy(logits)
    assert torch.isfinite(e).all()
    torch.testing.assert_close(e, -(1e4 + torch.log1p(torch.exp(torch.tensor(-1.0)))).view(1))


def test_log_p_y_given_x_is_log_softmax_and_energy_difference():
    logits = torch.randn(5, 4)
    y = torch.tensor([0, 3, 1, 2, 2])
    logp = log_py_given_x(logits)
    torch.testing.assert_close(logp.exp(), torch.softmax(logits, 1))
    # log p(y|x) = -E(x, y) + E(x)
    expected = -joint_energy(logits, y) + marginal_energy(logits)
    torch.testing.assert_close(logp.gather(1, y[:, None]).squeeze(1), expected)


def test_joint_energy_picks_the_label_logit():
    logits = torch.arange(12.0).view(3, 4)
    y = torch.tensor([1, 0, 3])
    assert joint_energy(logits, y).tolist() == [-1.0, -4.0, -11.0]


def test_energies_are_fp32_for_bf16_logits():
    logits = torch.randn(3, 10).bfloat16()
    assert marginal_energy(logits).dtype == torch.float32
    assert joint_energy(logits, torch.zeros(3, dtype=torch.long)).dtype == torch.float32


@pytest.mark.parametrize("backend", ["reference", "triton"])
def test_the_backward_fills_no_gradient_for_the_saved_row_statistics(backend):
    """The energy op's row max and sum are outputs without gradients: autograd filled a zero tensor for each at
    every backward (two kernels per SGLD step on a GPU) until their gradients were left as None."""
    skip_unless_runnable("cpu", backend)
    x = torch.randn(16, 10, requires_grad=True)
    energy = lse_energy(x, backend=backend)
    with OpRecorder() as record:
        energy.sum().backward()
    assert record.names and not [op for op in record.names if "zero" in op], record.names


def test_log_p_y_given_x_is_fp32_from_bf16_logits():
    """log p(y|x) is computed in fp32 whatever the network's precision (the loss is reduced in fp32)."""
    logits = torch.randn(3, 5)
    out = log_py_given_x(logits.bfloat16())
    assert out.dtype == torch.float32
    torch.testing.assert_close(out, torch.log_softmax(logits.bfloat16().float(), 1))


def test_logits_that_are_not_b_by_k_are_refused():
    """A network's energy [B] (an own EBM's output) raised an IndexError from inside torch; a sequence of logits
    [B, T, K] was reduced over T: E(x) of shape [B, K], log p(y|x) normalised over the wrong axis."""
    y = torch.zeros(4, dtype=torch.long)
    for logits in (torch.randn(4), torch.randn(4, 3, 5)):
        for name, fn in (("marginal_energy", marginal_energy), ("joint_energy", lambda z: joint_energy(z, y)),
                         ("log_py_given_x", log_py_given_x)):
            shape = re.escape(str(tuple(logits.shape)))
            with pytest.raises(ValueError, match=rf"{name}: logits must be \[B, K\] .* got shape {shape}"):
                fn(logits)


def test_a_network_that_returns_several_outputs_gets_a_clear_error():
    """A network returning (logits, features) or {"logits": ...}: the energies and the sampler's model_energy said
    "is_functorch_wrapped_tensor(): incompatible function arguments" or "'tuple' object has no attribute 'dim'";
    now they name what came back and how to pass the logits."""
    from fastjem import SGLD, model_energy

    logits = torch.randn(4, 3)
    y = torch.zeros(4, dtype=torch.long)
    for out in ((logits, logits), {"logits": logits}):
        kind = type(out).__name__
        for name, fn in (("marginal_energy", marginal_energy), ("joint_energy", lambda z: joint_energy(z, y)),
                         ("log_py_given_x", log_py_given_x), ("lse_energy", lse_energy),
                         ("lse_energy", lambda z: lse_energy(z, y))):
            with pytest.raises(TypeError, match=rf"{name}: logits must be a tensor \[B, K\], got a {kind}: .*net\(x\)"):
                fn(out)

    class TwoHeads(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(2, 3)

        def forward(self, x):
            return self.fc(x), x

    net = TwoHeads()
    with pytest.raises(TypeError, match=r"lse_energy: logits must be a tensor \[B, K\], got a tuple"):
        SGLD(2, 0.1, 0.01, seed=0).sample(model_energy(net), torch.zeros(4, 2), model=net)
    assert all(p.requires_grad for p in net.parameters())  # the sampler's freeze undone on the way out


def test_joint_energy_labels_that_are_not_one_class_per_row_are_refused():
    """Float labels failed inside gather, a list had no .view, labels of another length gave that many energies
    (or an error about gather's sizes), and labels outside [0, K) an index error from inside torch."""
    logits = torch.randn(4, 3)
    for y in (torch.zeros(4), torch.zeros(3, dtype=torch.long), torch.zeros(8, dtype=torch.long),
              torch.zeros(4, 1, dtype=torch.long)):
        with pytest.raises(ValueError, match=r"joint_energy: y must be int64 \(or int32\) \[B=4\]"):
            joint_energy(logits, y)
    with pytest.raises(TypeError, match="joint_energy: y must be an int64 tensor"):
        joint_energy(logits, [0, 1, 2, 0])
    for y in (torch.tensor([0, 1, 3, 0]), torch.tensor([0, -1, 2, 0])):
        with pytest.raises(ValueError, match=r"joint_energy: y must be class indices in \[0, K=3\)"):
            joint_energy(logits, y)
    # the valid labels still pick their logits, int32 ones too
    y = torch.tensor([2, 0, 1, 2])
    assert torch.equal(joint_energy(logits, y.int()), -logits.gather(1, y[:, None]).squeeze(1))
    # an empty batch has no labels to range-check (torch.aminmax of nothing raises): no energies, no error
    assert joint_energy(torch.randn(0, 3), torch.zeros(0, dtype=torch.long)).shape == (0,)


def test_logits_of_no_classes_are_refused():
    """[B, 0] logits gave E(x) = +inf for every row (logsumexp over nothing) and an index error for E(x, y)."""
    logits = torch.randn(4, 0)
    for name, fn in (("marginal_energy", marginal_energy), ("log_py_given_x", log_py_given_x),
                     ("joint_energy", lambda z: joint_energy(z, torch.zeros(4, dtype=torch.long)))):
        with pytest.raises(ValueError, match=rf"{name}: logits must have K >= 1 classes, got shape \(4, 0\)"):
            fn(logits)
