import math

import pytest
import torch

from fastjem.buffer import ReplayBuffer
from fastjem.errors import ConfigError


def binomial_bound(n, p, z=5.0):
    return z * math.sqrt(n * p * (1 - p))


def test_initial_buffer_is_uniform_on_the_cube():
    buf = ReplayBuffer(5000, (3, 4, 4))
    d = buf.data
    assert d.dtype == torch.float32 and d.shape == (5000, 3, 4, 4)
    assert d.min() >= -1 and d.max() <= 1
    assert abs(d.mean().item()) < 0.01 and abs(d.var().item() - 1 / 3) < 0.01


def test_reset_rate_matches_rho_and_kept_rows_are_exact():
    torch.manual_seed(0)
    rho = 0.05
    buf = ReplayBuffer(1000, (2, 3), reinit_prob=rho)
    buf.data.copy_(torch.arange(1000.0).view(-1, 1, 1).expand(-1, 2, 3) + 5.0)  # outside [-1, 1]
    n = 20000
    x0, idx = buf.sample(n)
    reset = (x0.abs() <= 1).all(dim=(1, 2))
    kept = (x0 >= 5).all(dim=(1, 2))
    assert bool((reset | kept).all())
    assert abs(reset.sum().item() - n * rho) < binomial_bound(n, rho)
    assert torch.equal(x0[kept], buf.data[idx[kept]])
    fresh = x0[reset].flatten()
    assert abs(fresh.mean().item()) < 5 * math.sqrt(1 / 3 / fresh.numel())
    assert abs(fresh.var().item() - 1 / 3) < 0.02


def test_indices_are_uniform():
    torch.manual_seed(1)
    buf = ReplayBuffer(10, (1,))
    idx = buf.draw_indices(50000)
    counts = torch.bincount(idx, minlength=10).double()
    chi2 = ((counts - 5000) ** 2 / 5000).sum().item()
    assert chi2 < 27.9  # chi-square, 9 dof, p = 0.001


def test_conditional_indices_stay_in_their_class_block():
    buf = ReplayBuffer(100, (1,), num_classes=4)
    y = torch.randint(0, 4, (5000,))
    idx = buf.draw_indices(5000, y)
    assert torch.equal(idx // 25, y)
    assert set(idx[y == 3].tolist()) == set(range(75, 100))


def test_conditional_buffer_must_divide_by_classes():
    with pytest.raises(ConfigError, match="not divisible by 3"):
        ReplayBuffer(100, (1,), num_classes=3)


def test_write_back_puts_samples_at_their_indices():
    buf = ReplayBuffer(8, (2,), reinit_prob=0.0)
    before = buf.data.clone()
    idx = torch.tensor([1, 6])
    buf.write_(idx, torch.full((2, 2), 7.0))
    assert (buf.data[idx] == 7).all()
    untouched = torch.tensor([0, 2, 3, 4, 5, 7])
    assert torch.equal(buf.data[untouched], before[untouched])


def test_state_dict_round_trip_and_shape_check():
    a, b = ReplayBuffer(8, (2,), reinit_prob=0.5, seed=1), ReplayBuffer(8, (2,), reinit_prob=0.5, seed=2)
    a.sample(4)  # a's state moved on from its seed
    b.load_state_dict(a.state_dict())
    assert torch.equal(a.data, b.data)
    # the restart draws continue too: the next samples (indices from torch's generator, restarts from the state)
    torch.manual_seed(0)
    xa, ia = a.sample(8)
    torch.manual_seed(0)
    xb, ib = b.sample(8)
    assert torch.equal(ia, ib) and torch.equal(xa, xb) and not torch.equal(xa, a.data[ia])  # some rows restarted
    with pytest.raises(ConfigError):
        ReplayBuffer(9, (2,)).load_state_dict(a.state_dict())
    # the same shape, read as other class blocks
    with pytest.raises(ConfigError, match="num_classes=2 cannot be loaded into one with num_classes=4"):
        ReplayBuffer(8, (2,), num_classes=4).load_state_dict(ReplayBuffer(8, (2,), num_classes=2).state_dict())


def _class_data(n_per_class=4000, seed=0):
    """Three classes of 4-dimensional points [N, 1, 2, 2], each Gaussian with its own mean and correlations, well
    inside [-1, 1] (so the clamp is almost never active)."""
    gen = torch.Generator().manual_seed(seed)
    means = torch.tensor([[-0.5, 0.0, 0.3, 0.1], [0.4, 0.4, -0.2, 0.0], [0.0, -0.4, 0.0, 0.5]])
    factors = torch.stack([torch.tril(0.08 * torch.randn(4, 4, generator=gen)) + 0.06 * torch.eye(4)
                           for _ in range(3)])
    xs, ys = [], []
    for k in range(3):
        z = torch.randn(n_per_class, 4, generator=gen)
        xs.append(means[k] + z @ factors[k].T)
        ys.append(torch.full((n_per_class,), k))
    return torch.cat(xs).view(-1, 1, 2, 2), torch.cat(ys), means, factors @ factors.transpose(1, 2)


def test_class_gaussians_fit_the_sample_covariance_with_bessels_correction():
    """Each class's covariance is its sample covariance over n - 1, plus eps I: with three images a class, the
    estimate over n would be a third smaller."""
    from fastjem.buffer import ClassGaussians

    x = torch.rand(6, 1, 1, 2, generator=torch.Generator().manual_seed(0)) * 2 - 1
    y = torch.tensor([0, 1, 0, 1, 0, 1])
    g = ClassGaussians(x, y, 2, eps=1e-4)
    for k in range(2):
        xk = x[y == k].view(-1, 2).double()
        want = torch.cov(xk.T) + 1e-4 * torch.eye(2, dtype=torch.float64)
        torch.testing.assert_close((g.factor[k] @ g.factor[k].T).double(), want, rtol=1e-5, atol=1e-7)
        torch.testing.assert_close(g.mean[k].double(), xk.mean(0), rtol=1e-6, atol=1e-7)


def test_class_gaussians_fit_each_class_and_draw_its_law():
    from fastjem.buffer import ClassGaussians

    x, y, means, covs = _class_data()
    g = ClassGaussians(x, y, 3, eps=1e-6)
    assert g.mean.shape == (3, 4) and g.factor.shape == (3, 4, 4) and g.nbytes == 4 * (12 + 48)
    for k in range(3):
        # the fit: mean and covariance of 4000 points (standard errors ~0.002 and ~0.0003)
        assert torch.allclose(g.mean[k], means[k], atol=0.01)
        assert torch.allclose(g.factor[k] @ g.factor[k].T, covs[k], atol=0.003)
    torch.manual_seed(0)
    n = 30000
    for name, draw in (("draw", g.draw), ("fill", g.fill)):
        labels = torch.randint(0, 3, (n,))
        s = draw(n, labels)
        assert s.shape == (n, 1, 2, 2) and s.dtype == torch.float32, name
        for k in range(3):
            sk = s[labels == k].view(-1, 4)
            assert torch.allclose(sk.mean(0), means[k], atol=0.01), (name, k)
            assert torch.allclose(torch.cov(sk.T), covs[k], atol=0.003), (name, k)
        # without labels the classes are uniform: a chi-square test of the nearest class mean's counts
        free = draw(n).view(-1, 4)
        nearest = torch.cdist(free, means).argmin(1)
        counts = torch.bincount(nearest, minlength=3).double()
        chi2 = float(((counts - n / 3) ** 2 / (n / 3)).sum())
        assert chi2 < 13.8, (name, counts)  # 2 degrees of freedom, p = 0.001
    # samples are clamped to the image range: pixels of -1 or 1 fit laws of variance about 1 in each class
    signs = torch.where(torch.rand(x.shape, generator=torch.Generator().manual_seed(1)) < 0.5, -1.0, 1.0)
    wide = ClassGaussians(signs, y, 3)
    s = wide.draw(2000)
    assert s.min() == -1.0 and s.max() == 1.0
    with pytest.raises(ConfigError, match="class 2 has 1 training image"):
        ClassGaussians(x[:8001], y[:8001], 3)
    two = ClassGaussians(x[:8002], y[:8002], 3)  # two images of a class are enough: their mean, a rank-1 covariance
    assert torch.allclose(two.mean[2], x[8000:8002].view(2, 4).mean(0))


def test_buffer_starts_and_restarts_from_its_init():
    """The first contents come from init.fill (class blocks of a conditional buffer from their class) and every
    restart from init.draw; the decisions and the kept rows are those of the uniform buffer."""
    from fastjem.buffer import ClassGaussians

    x, y, means, _ = _class_data()
    g = ClassGaussians(x, y, 3)
    torch.manual_seed(0)
    buf = ReplayBuffer(3000, (1, 2, 2), reinit_prob=0.3, num_classes=3, init=g, seed=5)
    blocks = buf.data.view(3, 1000, 4)
    for k in range(3):
        assert torch.allclose(blocks[k].mean(0), means[k], atol=0.02)
    buf.data.fill_(5.0)  # outside [-1, 1]: a restarted row is told apart
    plain = ReplayBuffer(3000, (1, 2, 2), reinit_prob=0.3, num_classes=3, seed=5)
    plain.data.fill_(5.0)
    labels = torch.randint(0, 3, (4000,))
    idx = buf.draw_indices(4000, labels)
    x0 = buf.gather_and_reset(idx, labels)
    x_plain = plain.gather_and_reset(idx, labels)
    reset = (x0.abs() <= 1).flatten(1).all(1)
    assert torch.equal(reset, (x_plain.abs() <= 1).flatten(1).all(1))  # the same decisions
    assert abs(int(reset.sum()) - 1200) < binomial_bound(4000, 0.3)
    assert bool((x0[~reset] == 5.0).all())
    for k in range(3):
        rows = x0[reset & (labels == k)].view(-1, 4)
        assert torch.allclose(rows.mean(0), means[k], atol=0.03), k  # restarted from their class's Gaussian
    # an unconditional buffer restarts from the mixture of the classes, not from one class
    free = ReplayBuffer(3000, (1, 2, 2), reinit_prob=1.0, init=g, seed=5)
    x_free = free.gather_and_reset(free.draw_indices(3000)).view(-1, 4)
    counts = torch.bincount(torch.cdist(x_free, means).argmin(1), minlength=3).double()
    assert float(((counts - 1000) ** 2 / 1000).sum()) < 13.8, counts  # chi-square, 2 dof, p = 0.001


def test_class_draws_need_one_label_per_chain():
    buf = ReplayBuffer(40, (3,), num_classes=4)
    with pytest.raises(ConfigError, match=r"int64 \[batch_size=8\]"):
        buf.sample(8, torch.tensor([0, 1, 2, 3]))
    with pytest.raises(ConfigError, match="int64"):
        buf.sample(4, torch.tensor([0.0, 1.0, 2.0, 3.0]))
    with pytest.raises(ConfigError, match=r"int64 \[batch_size=4\]; got a list"):  # was: no attribute 'dtype'
        buf.sample(4, [0, 1, 2, 3])
    with pytest.raises(ConfigError, match="num_classes must be > 0"):
        ReplayBuffer(40, (3,), num_classes=0)
    with pytest.raises(ConfigError, match="class-conditional draws need a buffer built with num_classes"):
        ReplayBuffer(40, (3,)).sample(4, torch.tensor([0, 1, 2, 3]))  # labels for a buffer without class blocks


def test_unconditional_restarts_of_a_class_blocked_buffer_draw_their_blocks_class():
    """The p(x) term samples a class-blocked buffer without labels: a restarted chain of block k still starts from
    class k's Gaussian, since block k later seeds the E(x, y=k) chains."""
    from fastjem.buffer import ClassGaussians

    torch.manual_seed(0)
    x = torch.cat([(-0.8 + 0.8 * k) + 0.01 * torch.randn(50, 1, 2, 2) for k in range(3)])
    y = torch.arange(3).repeat_interleave(50)
    buf = ReplayBuffer(30, (1, 2, 2), reinit_prob=1.0, num_classes=3, init=ClassGaussians(x, y, 3), seed=1,
                       backend="reference")
    x0, idx = buf.sample(30)
    block = idx // buf.class_block
    assert ((x0.mean((1, 2, 3)) - (-0.8 + 0.8 * block)).abs() < 0.2).all()


def test_class_gaussians_of_uint8_images_are_fitted_in_the_model_range():
    """The Trainer hands its uint8 training images over: 0..255 is read as [-1, 1], the fit equals the float one."""
    from fastjem.buffer import ClassGaussians

    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, 256, (60, 1, 2, 2), generator=g, dtype=torch.uint8)
    y = torch.arange(3).repeat(20)
    a, b = ClassGaussians(x, y, 3), ClassGaussians(x.float() / 127.5 - 1, y, 3)
    assert torch.allclose(a.mean, b.mean) and torch.allclose(a.factor, b.factor)
    wide = ClassGaussians(torch.where(torch.rand(60, 1, 2, 2, generator=g) < 0.5, -1.0, 1.0), y, 3)
    s = wide.fill(2000)
    assert s.min() == -1.0 and s.max() == 1.0  # a buffer's first contents are clamped to the image range too


class _Fp64Init:
    """An init drawing fp64 rows (of ``shape``)."""

    def __init__(self, shape):
        self.shape = shape

    def draw(self, n, y=None):
        return torch.rand(n, *self.shape, dtype=torch.float64) * 2 - 1

    def fill(self, n, y=None):
        return self.draw(n, y)


def test_the_buffer_checks_its_settings_and_holds_fp32_whatever_its_init_draws():
    for kwargs, match in (({"reinit_prob": 1.5}, "reinit_prob"), ({"reinit_prob": -0.1}, "reinit_prob")):
        with pytest.raises(ConfigError, match=match):
            ReplayBuffer(8, (2,), **kwargs)
    with pytest.raises(ConfigError, match="buffer size must be > 0"):
        ReplayBuffer(0, (2,))
    # a string or None failed a comparison with a bare TypeError, a float size or shape inside torch, a bool was
    # taken for 0 or 1, a 0 in the shape made empty chains, a float seed or unknown backend failed only when sampling
    for args, kwargs, match in (
            ((8, (2,)), {"reinit_prob": "x"}, r"reinit_prob \(a probability, e.g. 0.05\) must be a number, got 'x'"),
            ((8, (2,)), {"reinit_prob": None}, "reinit_prob .* must be a number, got None"),
            ((8, (2,)), {"reinit_prob": True}, r"reinit_prob .* must be a number, got True \(bool\)"),
            ((8.5, (2,)), {}, r"ReplayBuffer size \(the number of chains\) must be an integer, got 8.5"),
            (("8", (2,)), {}, "ReplayBuffer size .* must be an integer, got '8'"),
            ((True, (2,)), {}, "ReplayBuffer size .* must be an integer, got True"),
            ((8, (2,)), {"num_classes": 2.5}, r"ReplayBuffer num_classes \(or None\) must be an integer, got 2.5"),
            ((8, (2,)), {"num_classes": True}, "ReplayBuffer num_classes .* must be an integer, got True"),
            ((8, (2,)), {"backend": "gpu"}, "ReplayBuffer backend must be one of"),
            ((8, -2), {}, "sample_shape must be one sample's shape, a tuple of sizes >= 1"),
            ((8, (2, -1)), {}, r"sample_shape .* got \(2, -1\)"),
            ((8, (3, 0)), {}, r"sample_shape .* got \(3, 0\)"),
            ((8, 2.5), {}, "sample_shape .* got 2.5"),
            ((8, (2.5,)), {}, "sample_shape .* got"),
            ((8, "ab"), {}, "sample_shape .* got 'ab'")):
        with pytest.raises(ConfigError, match=match):
            ReplayBuffer(*args, **kwargs)
    for seed in (1.5, True):
        with pytest.raises(TypeError, match=rf"ReplayBuffer: seed must be an integer, got {seed}"):
            ReplayBuffer(8, (2,), seed=seed)
    # integers and numbers of other kinds are taken
    buf = ReplayBuffer(torch.tensor(8), [2, torch.tensor(3)], reinit_prob=torch.tensor(0.5), num_classes=2)
    assert (buf.size, buf.sample_shape, buf.reinit_prob, buf.data.shape) == (8, (2, 3), 0.5, (8, 2, 3))
    assert ReplayBuffer(8, ()).sample(3)[0].shape == (3,)  # scalar samples
    # the smallest buffers are buffers: one chain; one class (a conditional buffer of a single block)
    assert ReplayBuffer(1, (2,)).sample(3)[1].tolist() == [0, 0, 0]
    assert ReplayBuffer(4, (2,), num_classes=1).draw_indices(6, torch.zeros(6, dtype=torch.int64)).max() <= 3
    # ReplayBuffer(100, ...) of a library user was told of a command-line option only
    with pytest.raises(ConfigError, match=r"its size 100 \(--buffer-size\) is not divisible by 3; use e.g. 102"):
        ReplayBuffer(100, (1,), num_classes=3)
    with pytest.raises(ConfigError, match=r"init.fill\(8, y\) must return a tensor \[8, 2\] .* got shape \(8, 3\)"):
        ReplayBuffer(8, (2,), init=_Fp64Init((3,)))
    buf = ReplayBuffer(8, (2,), reinit_prob=1.0, init=_Fp64Init((2,)), seed=0)
    assert buf.data.dtype == torch.float32
    x0, _ = buf.sample(8)
    assert x0.dtype == torch.float32


def test_class_gaussians_move_to_a_device_and_draw_there():
    """`ClassGaussians.to(device)` moves the fitted means and factors (in place, returning itself for chaining),
    and draws happen on that device (the meta device stands in for a GPU here)."""
    from fastjem.buffer import ClassGaussians

    x = torch.rand(30, 1, 4, 4) * 2 - 1
    g = ClassGaussians(x, torch.arange(30) % 3, 3)
    assert g.to("meta") is g
    assert g.mean.device.type == "meta" and g.factor.device.type == "meta"
    drawn = g.draw(5, torch.tensor([0, 1, 2, 0, 1]))
    assert drawn.device.type == "meta" and drawn.shape == (5, 1, 4, 4)


class _CpuInit:
    """An init that makes its samples on the CPU whatever the buffer's device, and records where it was moved."""

    def __init__(self, movable):
        self.moved_to = []
        if movable:
            self.to = lambda device: (self.moved_to.append(torch.device(device)), self)[1]

    def fill(self, n, y=None):
        return torch.zeros(n, 1, 2, 2)

    def draw(self, n, y=None):
        return torch.ones(n, 1, 2, 2)


def test_an_init_on_another_device_is_moved_to_the_buffers_and_its_draws_follow():
    """A buffer on another device than its init (the meta device stands in for a GPU): an init that can move is
    moved once, at construction, to the buffer's device; whatever device a draw returns, the restarts reach the
    fused gather on the buffer's device (they used to stop it with an error about the fresh rows' device)."""
    movable = _CpuInit(movable=True)
    ReplayBuffer(10, (1, 2, 2), init=movable, device="meta")
    assert movable.moved_to == [torch.device("meta")]
    buf = ReplayBuffer(10, (1, 2, 2), reinit_prob=1.0, init=_CpuInit(movable=False), device="meta", seed=0,
                       backend="reference")
    x0, idx = buf.sample(4)
    assert x0.device.type == "meta" and x0.shape == (4, 1, 2, 2) and idx.device.type == "meta"
    # on one device the same buffer restarts every row from the init's draw
    here = ReplayBuffer(10, (1, 2, 2), reinit_prob=1.0, init=_CpuInit(movable=False), seed=0)
    assert torch.equal(here.sample(4)[0], torch.ones(4, 1, 2, 2))


def test_restarts_drawn_by_an_init_that_requires_grad_are_taken_by_value():
    """An init whose fill and draw come from a network (rows that require grad): the buffer holds and restarts from
    their values (the gather refused them, asking for a detach the caller of ReplayBuffer cannot make)."""
    net = torch.nn.Linear(4, 4)

    class NetInit:
        def fill(self, n, y):
            return net(torch.randn(n, 4)).tanh()

        def draw(self, n, y):
            return net(torch.randn(n, 4)).tanh()

    buf = ReplayBuffer(20, (4,), reinit_prob=1.0, init=NetInit(), seed=0)
    assert not buf.data.requires_grad
    x0, idx = buf.sample(5)
    assert not x0.requires_grad and x0.shape == (5, 4) and bool((x0.abs() < 1).all())
    buf.write_(idx, x0)


def test_an_int_shape_holds_vectors_and_a_batch_size_must_be_a_count():
    """ReplayBuffer(N, 2) is a buffer of 2-D points (it raised "'int' object is not iterable"); a batch size that
    is not an integer >= 0 is refused by name (it raised inside torch.randint)."""
    buf = ReplayBuffer(50, 2, seed=0)
    assert buf.sample_shape == (2,) and buf.data.shape == (50, 2)
    x0, idx = buf.sample(7)
    assert x0.shape == (7, 2) and idx.shape == (7,)
    assert buf.sample(0)[0].shape == (0, 2)
    for bad in (-1, 2.0, True):
        with pytest.raises(ConfigError, match="batch_size must be an integer >= 0"):
            buf.sample(bad)


def _memory(monkeypatch, available, swap=0):
    """The CPU's available memory and free swap as /proc/meminfo would say them."""
    import fastjem.memory

    monkeypatch.setattr(fastjem.memory, "_meminfo", lambda: {"MemAvailable": available, "SwapFree": swap})
    # and no cgroup limit (the machine's own may be lower than the figures faked)
    monkeypatch.setattr(fastjem.memory, "PROC_CGROUP", fastjem.memory.Path("/nonexistent/cgroup"))


def test_a_buffer_or_informative_init_past_the_free_memory_is_refused_before_it_is_allocated(monkeypatch):
    """A buffer past the machine's memory was allocated all the same (Linux overcommits) and the process killed
    without a word as its pages were filled; now a ConfigError names the option. What fits (swap counted) is made."""
    from fastjem.buffer import ClassGaussians

    chain = 3 * 32 * 32 * 4
    _memory(monkeypatch, 1000 * chain - 1)
    allocated = []
    real_empty = torch.empty
    monkeypatch.setattr(torch, "empty", lambda *a, **k: allocated.append(a) or real_empty(*a, **k))
    with pytest.raises(ConfigError, match=r"the replay buffer \(1000 chains of 3x32x32, fp32\) takes 11\.7 MiB on "
                                          r"cpu, which has 11\.7 MiB free: give a smaller --buffer-size \(at most 999 "
                                          "chains fit"):
        ReplayBuffer(1000, (3, 32, 32))
    assert allocated == []  # refused before the allocation
    monkeypatch.setattr(torch, "empty", real_empty)
    _memory(monkeypatch, 500 * chain, swap=500 * chain)  # swap counts: what would fit is made
    assert ReplayBuffer(1000, (3, 32, 32)).data.shape == (1000, 3, 32, 32)

    # the informative initialisation's K covariance factors of D x D (D = 3 x 16 x 16 = 768 here)
    x, y = torch.rand(40, 3, 16, 16) * 2 - 1, torch.arange(40) % 4
    need = 4 * 768 * 768 * 4 + 2 * 768 * 768 * 8
    _memory(monkeypatch, need - 1)
    with pytest.raises(ConfigError, match=r"informative initialisation \(4 covariance factors of 768 x 768 for "
                                          r"3x16x16 images, fp32\).*use --buffer-init uniform, or a smaller "
                                          "--image-size"):
        ClassGaussians(x, y, 4)
    _memory(monkeypatch, need)
    g = ClassGaussians(x, y, 4)
    assert g.factor.shape == (4, 768, 768) and g.mean.shape == (4, 768)
    xk = x[y == 1].reshape(-1, 768).double()
    assert torch.allclose(g.mean[1], xk.mean(0).float())
    assert torch.allclose(g.factor[1] @ g.factor[1].T, torch.cov(xk.T).float() + 1e-4 * torch.eye(768), atol=1e-4)


def test_free_memory_is_read_from_the_device(monkeypatch):
    """A GPU's free memory counts what torch's allocator holds unused; the CPU's is Linux's available memory plus
    free swap; unknown (another OS) checks nothing."""
    import os

    import fastjem.memory as memory

    if os.path.exists("/proc/meminfo"):  # Linux: its fields in bytes
        info = memory._meminfo()
        assert 0 < info["MemAvailable"] <= info["MemTotal"] and info["MemTotal"] % 1024 == 0
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda index=None: (3 << 30, 80 << 30))
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda index=None: 5 << 30)
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda index=None: 4 << 30)
    assert memory.free_bytes("cuda:0") == 4 << 30
    # torch built without CUDA (or no driver) asserts where a CUDA device is asked for: not known, not a crash

    def no_cuda(index=None):
        raise AssertionError("Torch not compiled with CUDA enabled")

    monkeypatch.setattr(torch.cuda, "mem_get_info", no_cuda)
    assert memory.free_bytes("cuda:0") is None
    _memory(monkeypatch, 7 << 30, swap=1 << 30)
    assert memory.free_bytes("cpu") == 8 << 30
    monkeypatch.setattr(memory, "_meminfo", lambda: {})
    assert memory.free_bytes("cpu") is None
    memory.check_fits(1 << 60, "cpu", "anything", "nothing")  # not known: not refused
    assert memory.size_text(1536 << 20) == "1.5 GiB"
    # a whole unit is said in it (not as 1024 of the one below)
    assert [memory.size_text(n) for n in (1 << 40, 1 << 30, 1 << 20)] == ["1.0 TiB", "1.0 GiB", "1.0 MiB"]


def _cgroups(monkeypatch, tmp_path, own: str, files: dict[str, str], available=8 << 30, swap=0):
    """A fake /proc/self/cgroup (``own``) and cgroup tree (``files``: path below the mount -> contents), and the
    machine's available memory and free swap."""
    import fastjem.memory as memory

    _memory(monkeypatch, available, swap)
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "cgroup").write_text(own)
    monkeypatch.setattr(memory, "PROC_CGROUP", tmp_path / "cgroup")
    monkeypatch.setattr(memory, "CGROUP_ROOT", tmp_path / "fs")
    (tmp_path / "fs").mkdir()
    for name, text in files.items():
        (tmp_path / "fs" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "fs" / name).write_text(text)


def test_free_cpu_memory_is_the_cgroups_where_it_limits_the_process_below_the_machine(monkeypatch, tmp_path):
    """In a container limited below the machine's free memory, a buffer past the limit was allocated (the machine
    had room) and the process killed at its cgroup's limit without a word. The tightest limit of the process's
    cgroup and those above it (v2, v1) counts now, less the usage, its page cache (reclaimed first) and swap added:
    what fits is never refused."""
    import fastjem.memory as memory

    gib, mib = 1 << 30, 1 << 20
    # v2: the job's limit (above the process's own unlimited cgroup) binds; 300 bytes of page cache count as free
    _cgroups(monkeypatch, tmp_path, "0::/job/step\n", {
        "job/memory.max": f"{2 * gib}\n", "job/memory.current": f"{gib + gib // 2}\n",
        "job/memory.stat": "anon 1000\nactive_file 100\ninactive_file 200\nshmem 7\n",
        "job/step/memory.max": "max\n", "job/step/memory.current": f"{gib}\n"})
    assert memory.free_bytes("cpu") == gib // 2 + 300
    with pytest.raises(ConfigError, match=r"the replay buffer .* which has 512\.0 MiB free"):
        ReplayBuffer(gib // 2 // (3 * 32 * 32 * 4) + 1, (3, 32, 32))
    memory.check_fits(gib // 2 + 300, "cpu", "what fits", "")
    # the machine's free memory where it is less; free swap counted, as much as the cgroup's swap limit allows
    _cgroups(monkeypatch, tmp_path / "a", "0::/job\n", {"job/memory.max": f"{4 * gib}", "job/memory.current": "0"},
             available=gib, swap=gib)
    assert memory.free_bytes("cpu") == 2 * gib
    (tmp_path / "a" / "fs" / "job" / "memory.max").write_text(str(gib))
    assert memory.free_bytes("cpu") == 2 * gib  # its swap is not limited: the machine's free swap
    (tmp_path / "a" / "fs" / "job" / "memory.swap.max").write_text(str(256 * mib))
    (tmp_path / "a" / "fs" / "job" / "memory.swap.current").write_text(str(56 * mib))
    assert memory.free_bytes("cpu") == gib + 200 * mib
    # v1: the memory controller's line; "no limit" (the largest page count) is none, the parent's limit binds
    no_limit = "9223372036854771712\n"
    _cgroups(monkeypatch, tmp_path / "b", "5:devices:/x\n4:memory:/docker/abc\n0::/\n", {
        "memory/docker/abc/memory.limit_in_bytes": no_limit, "memory/docker/abc/memory.usage_in_bytes": f"{gib}",
        "memory/docker/memory.limit_in_bytes": f"{3 * gib}", "memory/docker/memory.usage_in_bytes": f"{2 * gib}",
        "memory/docker/memory.stat": "cache 9\ntotal_active_file 10\ntotal_inactive_file 20\n",
        "memory/memory.limit_in_bytes": no_limit, "memory/memory.usage_in_bytes": f"{5 * gib}"})
    assert memory.free_bytes("cpu") == gib + 30
    # memory and swap together, where swap is accounted
    (tmp_path / "b" / "fs" / "memory" / "docker" / "memory.memsw.limit_in_bytes").write_text(f"{3 * gib}")
    (tmp_path / "b" / "fs" / "memory" / "docker" / "memory.memsw.usage_in_bytes").write_text(f"{2 * gib + mib}")
    assert memory.free_bytes("cpu") == gib - mib + 30
    # a container without its own cgroup namespace lists the host's path; its own cgroup is mounted at the root
    _cgroups(monkeypatch, tmp_path / "c", "0::/system.slice/docker-abc.scope\n",
             {"memory.max": f"{gib}", "memory.current": f"{gib // 4}"})
    assert memory.free_bytes("cpu") == gib - gib // 4
    # no limit anywhere (v2's "max", v1's largest value, no files): the machine's figure, to the byte
    _cgroups(monkeypatch, tmp_path / "d", "4:memory:/a\n0::/a\n", {
        "a/memory.max": "max", "a/memory.current": f"{gib}", "memory/a/memory.limit_in_bytes": no_limit,
        "memory/a/memory.usage_in_bytes": f"{gib}"}, available=3 * gib, swap=5)
    assert memory.free_bytes("cpu") == 3 * gib + 5
    monkeypatch.setattr(memory, "_meminfo", lambda: {})
    assert memory.free_bytes("cpu") is None  # not known (not 8 EiB, v1's no-limit value, free)
    # a cgroup past its limit has nothing free; no /proc/meminfo (not Linux's), the cgroup's figure alone
    _cgroups(monkeypatch, tmp_path / "e", "0::/\n", {"memory.max": "100", "memory.current": "200"})
    assert memory.free_bytes("cpu") == 0
    monkeypatch.setattr(memory, "_meminfo", lambda: {})
    (tmp_path / "e" / "fs" / "memory.current").write_text("40")
    assert memory.free_bytes("cpu") == 60


def test_a_cgroup_path_outside_the_mount_reads_the_mounts_own_cgroup(monkeypatch, tmp_path):
    """A process moved out of its cgroup namespace is listed as "0::/../other": that path leads out of the cgroup
    mount, to folders that are not its cgroups (here one that claims 100 bytes free); its own cgroup is the one
    mounted at the root."""
    import fastjem.memory as memory

    gib = 1 << 30
    _cgroups(monkeypatch, tmp_path, "0::/../other\n", {"memory.max": f"{gib}", "memory.current": "0"})
    (tmp_path / "other").mkdir()
    for name, text in (("memory.max", "100"), ("memory.current", "0")):
        (tmp_path / "other" / name).write_text(text)
        (tmp_path / name).write_text(text)
    assert (tmp_path / "fs" / ".." / "other").is_dir()
    assert memory.free_bytes("cpu") == gib


def test_the_tighter_of_two_cgroup_limits_binds(monkeypatch, tmp_path):
    """Limits at two levels (a job and its step): the one with less left binds, whichever level it is at (the cgroup
    mounted at the root included); free swap is counted under a v1 limit too."""
    import fastjem.memory as memory

    gib = 1 << 30
    _cgroups(monkeypatch, tmp_path / "b", "0::/job/step\n", {
        "job/memory.max": f"{gib}", "job/memory.current": f"{gib // 2}",
        "job/step/memory.max": f"{4 * gib}", "job/step/memory.current": f"{gib // 4}"})
    assert memory.free_bytes("cpu") == gib // 2
    (tmp_path / "b" / "fs" / "job" / "step" / "memory.max").write_text(f"{gib // 2}")
    assert memory.free_bytes("cpu") == gib // 4
    # the cgroup mounted at the root (a container's own, in its cgroup namespace) limits the one below it
    _cgroups(monkeypatch, tmp_path / "r", "0::/init.scope\n", {
        "memory.max": f"{gib}", "memory.current": f"{gib // 2}",
        "init.scope/memory.max": "max", "init.scope/memory.current": f"{gib // 4}"})
    assert memory.free_bytes("cpu") == gib // 2
    # v1 without swap accounting (no memory.memsw files): the machine's free swap counts, as in v2
    _cgroups(monkeypatch, tmp_path / "c", "4:memory:/job\n", {
        "memory/job/memory.limit_in_bytes": f"{gib}", "memory/job/memory.usage_in_bytes": f"{gib // 2}"},
        available=8 * gib, swap=gib // 4)
    assert memory.free_bytes("cpu") == gib // 2 + gib // 4


def test_class_gaussians_refuse_labels_that_are_not_one_class_per_image():
    """A float y dropped the images of fractional labels, a y of another length or a [N, 1] column raised a mask
    IndexError, labels past num_classes were left out of every class, num_classes 0 fitted nothing and 2.5 failed
    inside torch.empty. draw took -1 for class K-1; fill left the rows of a class outside uninitialised."""
    from fastjem.buffer import ClassGaussians

    x = torch.rand(20, 2) * 2 - 1
    y = torch.arange(20) % 2
    for labels, match in ((y.float(), r"ClassGaussians: y must be int64 \[N=20\], one class label per image, got "
                                      r"torch.float32"),
                          (y[:10], r"y must be int64 \[N=20\].* got torch.int64 \(10,\)"),
                          (y.view(20, 1), r"got torch.int64 \(20, 1\): pass y.long\(\), y.view\(-1\)"),
                          (y.tolist(), "y must be an int64 tensor .* got a list"),
                          (y + 1, r"y must be classes in \[0, num_classes=2\), got labels from 1 to 2"),
                          (y - 1, r"got labels from -1 to 0")):
        with pytest.raises(ConfigError, match=match):
            ClassGaussians(x, labels, 2)
    for k, match in ((0, "num_classes must be >= 1, got 0"), (2.5, "num_classes must be an integer, got 2.5"),
                     (True, "num_classes must be an integer, got True")):
        with pytest.raises(ConfigError, match=match):
            ClassGaussians(x, y, k)
    g = ClassGaussians(x, y.int(), 2)  # int32 labels are labels
    for name, fn in (("draw", g.draw), ("fill", g.fill)):
        for labels, match in ((torch.tensor([0.0, 1.0]), r"int64 \[n=2\]"), (torch.tensor([0, 1, 1]), r"\(3,\)"),
                              (torch.tensor([0, 2]), r"in \[0, num_classes=2\), got labels from 0 to 2"),
                              (torch.tensor([0, -1]), "got labels from -1 to 0")):
            with pytest.raises(ConfigError, match=rf"ClassGaussians.{name}: y must be .*{match}"):
                fn(2, labels)
        assert fn(2, torch.tensor([1, 0], dtype=torch.int32)).shape == (2, 2)


def test_a_buffer_without_a_seed_draws_its_restarts_from_torchs_seed():
    """No ``seed``: the restart stream's seed comes from torch's generator, so torch.manual_seed reproduces it and
    two buffers (two runs of different --seed) do not restart their chains with the same noise."""
    torch.manual_seed(0)
    a = ReplayBuffer(8, (2,))
    torch.manual_seed(1)
    b = ReplayBuffer(8, (2,))
    torch.manual_seed(0)
    c = ReplayBuffer(8, (2,))
    assert torch.equal(a.rng_state, c.rng_state) and not torch.equal(a.rng_state, b.rng_state)


def test_a_device_that_is_no_device_is_refused_naming_the_argument():
    """torch's own error listed its device types and named neither the buffer nor the argument."""
    for device in ("foo", 3.5):
        with pytest.raises(ConfigError, match=rf"ReplayBuffer: device must be a torch device such as 'cpu', 'cuda' "
                                              rf"or 'cuda:1', got {device!r}"):
            ReplayBuffer(8, (2,), device=device)
    with pytest.raises(ConfigError, match="ReplayBuffer.to: device must be a torch device .* got 'gpu'"):
        ReplayBuffer(8, (2,)).to("gpu")


def test_a_number_of_draws_that_is_no_count_is_refused():
    """A float or a bool failed inside torch.randint with its argument list, a negative count with torch's 'negative
    dimension'."""
    from fastjem.buffer import ClassGaussians

    g = ClassGaussians(torch.rand(20, 1, 2, 2) * 2 - 1, torch.arange(20) % 2, 2)
    for method in ("draw", "fill"):
        for n, match in ((2.5, r"n \(the number of samples\) must be an integer, got 2.5"),
                         (True, r"n .* must be an integer, got True \(bool\)"),
                         (-1, "n is a number of samples, >= 0; got -1")):
            with pytest.raises(ConfigError, match=rf"ClassGaussians.{method}: {match}"):
                getattr(g, method)(n)
        assert getattr(g, method)(torch.tensor(3)).shape == (3, 1, 2, 2) and getattr(g, method)(0).shape == (0, 1, 2, 2)


def test_an_init_without_the_laws_methods_or_of_other_classes_is_refused():
    """A function given as init failed with "'function' object has no attribute 'fill'"; a draw of the wrong shape
    was refused as buffer_sample's ``fresh`` (an argument the user never gave), a fill returning a NumPy array with
    "'numpy.ndarray' object has no attribute 'detach'"; a ClassGaussians of 3 classes in a buffer of 5 blocks failed
    in its fill naming labels from 0 to 4, and in one of 2 blocks restarted them from classes 0 and 1 of 3."""
    from fastjem.buffer import ClassGaussians

    with pytest.raises(ConfigError, match=r"ReplayBuffer init must be an object with methods fill\(n, y\) .* and "
                                          r"draw\(n, y\) .*; function objects have no fill or draw"):
        ReplayBuffer(8, (2,), init=lambda n, y: torch.rand(n, 2))

    class Law:
        def __init__(self, fill_shape, draw_shape, numpy=False):
            self.fill_shape, self.draw_shape, self.numpy = fill_shape, draw_shape, numpy

        def fill(self, n, y):
            x = torch.rand(n, *self.fill_shape)
            return x.numpy() if self.numpy else x

        def draw(self, n, y):
            return torch.rand(n, *self.draw_shape)

    with pytest.raises(ConfigError, match=r"Law objects have no draw"):
        ReplayBuffer(8, (2,), init=type("Law", (), {"fill": Law.fill})())
    with pytest.raises(ConfigError, match=r"init.draw\(3, y\) must return a tensor \[3, 2\] .* got shape \(3, 5\)"):
        ReplayBuffer(8, (2,), reinit_prob=1.0, init=Law((2,), (5,))).sample(3)
    with pytest.raises(ConfigError, match=r"init.fill\(8, y\) must return a tensor \[8, 2\] .* got a ndarray"):
        ReplayBuffer(8, (2,), init=Law((2,), (2,), numpy=True))
    x = torch.rand(30, 1, 2, 2) * 2 - 1
    three = ClassGaussians(x, torch.arange(30) % 3, 3)
    for blocks in (5, 2):
        with pytest.raises(ConfigError, match=rf"ReplayBuffer num_classes={blocks}, but its init holds 3 classes "
                                              r"\(ClassGaussians\)"):
            ReplayBuffer(30, (1, 2, 2), num_classes=blocks, init=three)
    assert ReplayBuffer(30, (1, 2, 2), num_classes=3, init=three).sample(4)[0].shape == (4, 1, 2, 2)
    assert ReplayBuffer(30, (1, 2, 2), init=three).sample(4)[0].shape == (4, 1, 2, 2)  # unconditional: any class


def test_class_gaussians_refuse_float_images_outside_the_chains_range():
    """Pixels of 0..255 as floats were fitted as they were, then every draw clamped to 1: restarts of a blank
    image."""
    from fastjem.buffer import ClassGaussians

    y = torch.arange(30) % 3
    x = torch.randint(0, 256, (30, 1, 2, 2)).float()
    with pytest.raises(ConfigError, match=r"ClassGaussians x must be images in \[-1, 1\] .* got floats from 0 to 255: "
                                          r"pass x / 127.5 - 1 for pixels of 0..255"):
        ClassGaussians(x.index_fill(0, torch.tensor([0]), 0).index_fill(0, torch.tensor([1]), 255), y, 3)
    with pytest.raises(ConfigError, match="got floats from nan"):
        ClassGaussians(torch.full((30, 1, 2, 2), torch.nan), y, 3)
    assert ClassGaussians(x / 127.5 - 1, y, 3).num_classes == 3
    # images in [-1, 1] with noise added pass a little past the range: images still
    assert ClassGaussians((x / 127.5 - 1) * 1.1, y, 3).num_classes == 3


def test_sample_refuses_cpu_classes_outside_the_buffers_naming_y():
    """A class outside [0, num_classes) was refused as "buffer_sample: idx holds rows outside the buffer's [0, N)",
    advising torch.randint for indices the user never gave (one below K drew another class's block)."""
    buf = ReplayBuffer(20, (2,), num_classes=4, seed=0)
    for bad in (torch.tensor([0, 4]), torch.tensor([-1, 2])):
        with pytest.raises(ConfigError, match=r"ReplayBuffer.sample: y must be classes in \[0, num_classes=4\), got "
                                              r"labels from -?\d to \d"):
            buf.sample(2, bad)
    assert buf.sample(2, torch.tensor([0, 3]))[1].tolist()[1] >= 15


def test_write_refuses_rows_that_are_not_a_tensor():
    """A list or NumPy array of rows failed with "'list' object has no attribute 'detach'"."""
    buf = ReplayBuffer(8, (2,), seed=0)
    x, idx = buf.sample(3)
    for rows in (x.tolist(), x.numpy()):
        with pytest.raises(TypeError, match=r"ReplayBuffer.write_: x must be a torch.Tensor, got a (list|ndarray)"):
            buf.write_(idx, rows)
