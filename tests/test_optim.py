"""DeviceSGD: torch.optim.SGD's arithmetic with the learning rate as a device tensor (capturable)."""

import copy

import pytest
import torch

from fastjem.optim import DeviceSGD


@pytest.mark.parametrize("weight_decay,momentum,nesterov", [(0.0, 0.9, False), (5e-4, 0.9, False), (5e-4, 0.9, True),
                                                             (0.0, 0.0, False), (1e-3, 0.0, False)])
def test_device_sgd_follows_torch_sgd(weight_decay, momentum, nesterov):
    """Five steps on the same gradients: the same parameters up to the rounding of one fused multiply-add per
    step (torch may fuse p - lr * buf; DeviceSGD rounds lr * buf first)."""
    gen = torch.Generator().manual_seed(0)
    p1 = torch.nn.Parameter(torch.randn(2000, generator=gen))
    p2 = torch.nn.Parameter(p1.detach().clone())
    ref = torch.optim.SGD([p1], lr=0.1, momentum=momentum, weight_decay=weight_decay, nesterov=nesterov)
    lr = torch.tensor(0.1, dtype=torch.float64)
    mine = DeviceSGD([p2], lr, momentum=momentum, weight_decay=weight_decay, nesterov=nesterov)
    for step in range(5):
        g = torch.randn(2000, generator=gen)
        p1.grad, p2.grad = g.clone(), g.clone()
        ref.step()
        mine.step()
        torch.testing.assert_close(p2.detach(), p1.detach(), rtol=0, atol=4e-7 * (step + 1))
    # a new learning rate is read from the tensor, no re-build: at 0 nothing moves
    before = p2.detach().clone()
    lr.fill_(0.0)
    p2.grad = torch.ones(2000)
    mine.step()
    assert torch.equal(p2.detach(), before)


def test_defaults_are_torch_sgds_plain_descent():
    """Without options DeviceSGD is what torch.optim.SGD is without them: no momentum, no weight decay, no Nesterov."""
    p = torch.nn.Parameter(torch.zeros(3))
    mine = DeviceSGD([p], torch.tensor(0.1)).param_groups[0]
    ref = torch.optim.SGD([p], lr=0.1).param_groups[0]
    assert [mine[k] for k in ("momentum", "weight_decay", "nesterov")] == \
        [ref[k] for k in ("momentum", "weight_decay", "nesterov")] == [0, 0, False]
    # plain descent keeps no momentum buffers (each would be a copy of its parameter)
    opt = DeviceSGD([p], torch.tensor(0.1))
    p.grad = torch.ones(3)
    opt.step()
    assert opt.state_dict()["state"] == {}


def test_state_dicts_load_both_ways_and_buffers_exist_from_the_start():
    net = torch.nn.Linear(4, 3)
    mine = DeviceSGD(net.parameters(), torch.tensor(0.1), momentum=0.9)
    assert all(torch.equal(mine.state[p]["momentum_buffer"], torch.zeros_like(p)) for p in net.parameters())
    ref = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    net(torch.randn(5, 4)).sum().backward()
    ref.step()
    other = copy.deepcopy(net)
    loaded = DeviceSGD(other.parameters(), torch.tensor(0.1), momentum=0.9)
    loaded.load_state_dict(ref.state_dict())
    for p, q in zip(net.parameters(), other.parameters()):
        assert torch.equal(loaded.state[q]["momentum_buffer"], ref.state[p]["momentum_buffer"])
    back = torch.optim.SGD(other.parameters(), lr=0.1, momentum=0.9)
    back.load_state_dict(mine.state_dict())
    with pytest.raises(ValueError, match="0-dim tensor"):
        DeviceSGD(net.parameters(), 0.1)
    with pytest.raises(ValueError, match="Nesterov"):
        DeviceSGD(net.parameters(), torch.tensor(0.1), nesterov=True)


def test_a_state_saved_before_the_first_step_loads_and_keeps_the_lr_tensor():
    """torch.optim.SGD saves no momentum buffers before its first step: loading that state must not leave DeviceSGD
    without them (its next step failed), and the saved rate goes into the optimiser's own lr tensor."""
    net = torch.nn.Linear(4, 3)
    lr = torch.tensor(0.5)
    mine = DeviceSGD(net.parameters(), lr, momentum=0.9)
    mine.load_state_dict(torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9).state_dict())
    assert mine.param_groups[0]["lr"] is lr and lr.item() == pytest.approx(0.1)
    net(torch.randn(5, 4)).sum().backward()
    assert mine.step(lambda: torch.tensor(3.0)).item() == 3.0  # the closure's loss is returned
    assert all(mine.state[p]["momentum_buffer"] is not None for p in net.parameters())
    for kwargs in ({"momentum": -0.1}, {"weight_decay": -1e-4}):
        with pytest.raises(ValueError, match=">= 0"):
            DeviceSGD(net.parameters(), torch.tensor(0.1), **kwargs)


def test_a_closure_computes_its_gradients_and_parameters_without_one_stay():
    """step(closure) runs the closure with gradients on (the step itself runs without: a closure that calls
    backward failed), as torch's optimisers do; a parameter without a gradient (frozen, or unused this step) is
    not moved by weight decay or momentum, as in torch.optim.SGD; the learning rate is one number (0-dim)."""
    net = torch.nn.Linear(4, 3)
    frozen = torch.nn.Parameter(torch.ones(5))
    ref_net = copy.deepcopy(net)
    x = torch.randn(6, 4)

    def closure():
        opt.zero_grad()
        loss = net(x).square().mean()
        loss.backward()
        return loss

    opt = DeviceSGD([*net.parameters(), frozen], torch.tensor(0.1), momentum=0.9, weight_decay=0.1)
    ref = torch.optim.SGD([*ref_net.parameters(), torch.nn.Parameter(torch.ones(5))], lr=0.1, momentum=0.9,
                          weight_decay=0.1)
    for _ in range(2):
        loss = opt.step(closure)
        ref.zero_grad()
        ref_loss = ref_net(x).square().mean()
        ref_loss.backward()
        ref.step()
        assert torch.equal(loss, ref_loss)
    for p, q in zip(net.parameters(), ref_net.parameters()):
        torch.testing.assert_close(p, q, rtol=0, atol=1e-6)
    assert frozen.grad is None and torch.equal(frozen.detach(), torch.ones(5))
    with pytest.raises(ValueError, match="0-dim tensor"):
        DeviceSGD(net.parameters(), torch.tensor([0.1]))
