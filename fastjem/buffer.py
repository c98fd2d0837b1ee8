"""The persistent replay buffer of SGLD chains (PCD), held as one device tensor."""

from __future__ import annotations

import math

import torch

from fastjem import kernels
from fastjem.checkpoint import check_part_state, check_rng_state
from fastjem.errors import ConfigError, as_integer, as_real
from fastjem.kernels._dispatch import check_tensors
from fastjem.kernels.rng import check_seed
from fastjem.memory import check_fits


def check_sample_shape(given) -> tuple[int, ...]:
    """One sample's shape (a tuple, or an int for vectors) as a tuple of sizes >= 1 (``()``: scalar samples): a
    negative or float size failed inside torch, a 0 made empty chains."""
    dims = (given,) if hasattr(given, "__index__") else given
    sizes = None
    if not isinstance(given, (str, bytes)) and hasattr(dims, "__iter__"):
        try:
            sizes = tuple(as_integer("", d) for d in dims)
        except TypeError:
            sizes = None
    if sizes is None or any(d < 1 for d in sizes):
        raise ConfigError(f"ReplayBuffer sample_shape must be one sample's shape, a tuple of sizes >= 1 such as "
                          f"(3, 32, 32) (or an int for vectors), got {given!r}")
    return sizes


def as_device(what: str, device) -> torch.device:
    """``device`` as a torch.device, else a ConfigError naming the argument (torch's own listed its device types and
    said nothing of where the string came from)."""
    try:
        return torch.device(device)
    except (RuntimeError, TypeError, ValueError):
        raise ConfigError(f"{what}: device must be a torch device such as 'cpu', 'cuda' or 'cuda:1', got "
                          f"{device!r}") from None


def sample_count(what: str, n) -> int:
    """``n`` as a number of samples, an int >= 0, else a ConfigError (a float or a bool failed inside torch.randint
    with its argument list, a negative count with torch's "negative dimension")."""
    n = as_integer(f"{what}: n (the number of samples)", n, ConfigError)
    if n < 0:
        raise ConfigError(f"{what}: n is a number of samples, >= 0; got {n}")
    return n


def check_class_labels(what: str, y, n: int, num_classes: int, rows: str = "n", *, on_device: bool = True,
                       range_: bool = True) -> None:
    """y is an int64 (or int32) tensor [n] of classes in [0, num_classes); the range is read on the host, so where
    that would cost a sync in the training loop (``on_device`` False) it is checked on CPU tensors only."""
    if not isinstance(y, torch.Tensor):
        raise ConfigError(f"{what}: y must be an int64 tensor [{rows}={n}] of class labels, got a {type(y).__name__}: "
                          "pass torch.as_tensor(y, dtype=torch.long)")
    if y.dtype not in (torch.int64, torch.int32) or tuple(y.shape) != (n,):
        raise ConfigError(f"{what}: y must be int64 [{rows}={n}], one class label per image, got {y.dtype} "
                          f"{tuple(y.shape)}: pass y.long(), y.view(-1) for a column of labels")
    if range_ and y.numel() and (on_device or y.device.type == "cpu"):
        low, high = torch.aminmax(y)
        if low < 0 or high >= num_classes:
            raise ConfigError(f"{what}: y must be classes in [0, num_classes={num_classes}), got labels from "
                              f"{int(low)} to {int(high)}")


def check_init(init, num_classes: int | None) -> None:
    """A buffer's ``init`` has ``fill(n, y)`` and ``draw(n, y)``, and (where it says) the buffer's classes: a function
    failed with "'function' object has no attribute 'fill'", and a ClassGaussians of other classes than the buffer's
    blocks either failed in its fill naming labels the user never gave, or restarted block k from class k's law of
    the wrong classes without a word."""
    missing = [name for name in ("fill", "draw") if not callable(getattr(init, name, None))]
    if missing:
        raise ConfigError(f"ReplayBuffer init must be an object with methods fill(n, y) (the first contents) and "
                          f"draw(n, y) (each restart), such as fastjem.buffer.ClassGaussians; "
                          f"{type(init).__name__} objects have no {' or '.join(missing)}")
    classes = getattr(init, "num_classes", None)
    if num_classes is not None and isinstance(classes, int) and classes != num_classes:
        raise ConfigError(f"ReplayBuffer num_classes={num_classes}, but its init holds {classes} classes "
                          f"({type(init).__name__}): block k restarts from the init's class k; build both with the "
                          "same number of classes")


def check_init_result(method: str, got, n: int, sample_shape: tuple[int, ...]) -> None:
    """What an init's fill or draw returned is a tensor [n, *S]: a NumPy array failed with "'numpy.ndarray' object has
    no attribute 'detach'", and a draw of the wrong shape was refused as the ``fresh`` of ``buffer_sample``, an
    argument the user never gave."""
    if not isinstance(got, torch.Tensor) or tuple(got.shape) != (n, *sample_shape):
        what = f"shape {tuple(got.shape)}" if isinstance(got, torch.Tensor) else f"a {type(got).__name__}"
        raise ConfigError(f"the buffer's init.{method}({n}, y) must return a tensor [{n}, "
                          f"{', '.join(map(str, sample_shape))}] (n samples of the buffer's sample_shape "
                          f"{sample_shape}), got {what}")


class ClassGaussians:
    """A Gaussian per class fitted to images: the informative initialisation of JEM++ (Yang & Ji, ICCV 2021).

    Class k's mean mu_k and covariance S_k (over all C x H x W pixels, plus ``eps`` I) are estimated in float64
    from the images of that class; a draw picks a class uniformly at random (or the one given), then
    x = clamp(mu_k + L_k z, -1, 1) with L_k L_k^T = S_k and z ~ N(0, I). Chains restarted there begin near the
    data instead of in uniform noise, which lets far fewer SGLD steps reach samples of the model.

    ``draw`` (the training hot path) has fixed shapes and no host sync: it forms L_k z for all K classes and
    keeps each row's own (K B D^2 multiply-adds; for CIFAR-10 at batch 64, 12 GFLOP, 0.03% of a WRN-28-10
    iteration's 37 TFLOP). The factors take K D^2 fp32 values (CIFAR-10: 377 MB; CIFAR-100: 3.8 GB).
    Random numbers come from torch's generator on the device.
    """

    def __init__(self, x: torch.Tensor, y: torch.Tensor, num_classes: int, eps: float = 1e-4):
        """``x`` [N, *S] images in [-1, 1] (any float dtype, or uint8 0..255), ``y`` [N] class labels."""
        num_classes = as_integer("ClassGaussians num_classes", num_classes, ConfigError)
        if num_classes < 1:
            raise ConfigError(f"ClassGaussians num_classes must be >= 1, got {num_classes}")
        if not isinstance(x, torch.Tensor) or x.dim() < 1:
            raise ConfigError(f"ClassGaussians x must be the images as a tensor [N, *S], got "
                              f"{tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__}")
        # a float y dropped the images of fractional labels, one of another length or a [N, 1] column raised a mask
        # IndexError, and labels past num_classes were left out of every class without a word
        check_class_labels("ClassGaussians", y, x.shape[0], num_classes, "N")
        if x.dtype == torch.uint8:
            x = x.float() / 127.5 - 1.0
        elif x.numel():
            # pixels of 0..255 as floats were fitted as they were, and every draw clamped to 1: restarts of a blank
            # image, without a word. Values a little past 1 (noise added to images in [-1, 1]) are images still
            low, high = (float(v) for v in torch.aminmax(x))
            if not (low >= -2.0 and high <= 2.0):
                raise ConfigError(f"ClassGaussians x must be images in [-1, 1] (the range its draws are clamped to), "
                                  f"or uint8 0..255; got floats from {low:.4g} to {high:.4g}: pass x / 127.5 - 1 for "
                                  "pixels of 0..255, x * 2 - 1 for [0, 1]")
        self.sample_shape = tuple(x.shape[1:])
        self.num_classes = num_classes
        d = x[0].numel()
        # before a byte is allocated: K fp32 factors of D x D, and (one class at a time) its float64 covariance and
        # Cholesky factor; 512 x 512 RGB images make D^2 alone petabytes
        shown = "x".join(map(str, self.sample_shape))
        check_fits(num_classes * d * d * 4 + 2 * d * d * 8, x.device,
                   f"the informative initialisation ({num_classes} covariance factors of {d} x {d} for {shown} "
                   "images, fp32)",
                   "use --buffer-init uniform, or a smaller --image-size (its size grows as the image size to the 4th "
                   "power)")
        # filled in place, one class at a time: a list of the factors stacked at the end held them twice
        self.mean = torch.empty(num_classes, d, device=x.device)  # [K, D]
        self.factor = torch.empty(num_classes, d, d, device=x.device)  # [K, D, D], lower triangular
        for k in range(num_classes):
            xk = x[y == k].reshape(-1, d).double()
            if len(xk) < 2:
                raise ConfigError(f"informative initialisation fits a Gaussian per class: class {k} has "
                                  f"{len(xk)} training image(s), at least 2 are needed")
            mu = xk.mean(0)
            centred = xk - mu
            cov = centred.T @ centred / (len(xk) - 1)
            cov.diagonal().add_(eps)
            self.mean[k] = mu
            self.factor[k] = torch.linalg.cholesky(cov)
            del centred, cov

    def to(self, device: torch.device | str) -> ClassGaussians:
        self.mean, self.factor = self.mean.to(device), self.factor.to(device)
        return self

    @property
    def nbytes(self) -> int:
        return self.mean.nbytes + self.factor.nbytes

    def __repr__(self) -> str:
        # the settings and the size, never the factors (hundreds of MB for CIFAR-10)
        return (f"ClassGaussians(num_classes={self.num_classes}, sample_shape={self.sample_shape}, "
                f"device={str(self.mean.device)!r}, {self.nbytes / 2**20:.1f} MB)")

    def draw(self, n: int, y: torch.Tensor | None = None, *, check_range: bool = True) -> torch.Tensor:
        """[n, *S] fp32 samples of class ``y`` (int64 [n]) or of uniformly random classes; fixed shapes, no sync.
        ``check_range`` False leaves CPU labels' range unread (the replay buffer's restarts: labels it made itself,
        in the training loop, where a read is a host sync on a GPU and is kept out on a CPU alike)."""
        n = sample_count("ClassGaussians.draw", n)
        dev = self.mean.device
        if y is not None:
            # the range on CPU labels only: in the training loop a GPU's would cost a host sync (-1 draws class K-1)
            check_class_labels("ClassGaussians.draw", y, n, self.num_classes, on_device=False, range_=check_range)
        k = torch.randint(0, self.num_classes, (n,), device=dev) if y is None else y.to(dev)
        z = torch.randn(n, self.mean.shape[1], device=dev)  # [n, D]
        every = torch.matmul(z, self.factor.transpose(1, 2))  # [K, n, D]: L_k z for every class
        rows = every[k, torch.arange(n, device=dev)] + self.mean[k]
        return rows.clamp_(-1.0, 1.0).reshape(n, *self.sample_shape)

    def fill(self, n: int, y: torch.Tensor | None = None) -> torch.Tensor:
        """Like ``draw`` for many samples at once (a buffer's first contents): one class at a time."""
        n = sample_count("ClassGaussians.fill", n)
        dev = self.mean.device
        if y is not None:
            # a row of a class outside [0, num_classes) was never written: uninitialised memory as first contents
            check_class_labels("ClassGaussians.fill", y, n, self.num_classes)
        k = torch.randint(0, self.num_classes, (n,), device=dev) if y is None else y.to(dev)
        out = torch.empty(n, self.mean.shape[1], device=dev)
        for c in range(self.num_classes):
            rows = (k == c).nonzero().squeeze(1)
            z = torch.randn(len(rows), self.mean.shape[1], device=dev)
            out[rows] = z @ self.factor[c].T + self.mean[c]
        return out.clamp_(-1.0, 1.0).reshape(n, *self.sample_shape)


class ReplayBuffer:
    """N samples of shape ``sample_shape`` (a tuple, or an int for vectors) in fp32 on ``device``, initialised
    U(-1, 1) (or from ``init``).

    ``sample`` draws B chain indices uniformly (or, when ``num_classes`` is given, from the block of
    the requested class: the buffer is K contiguous blocks of N/K) and restarts each drawn chain from
    U(-1, 1) with probability ``reinit_prob``; ``write_`` puts the advanced chains back. Everything
    happens on the device: no host round-trip, no data-dependent Python branch.

    ``init``: another law for the first contents and the restarts, an object with ``fill(n, y)`` and
    ``draw(n, y) -> [n, *S]`` (y: the classes of a class-conditional buffer's rows, else None), such as
    ``ClassGaussians``; ``draw`` runs at every ``sample``, so it must keep fixed shapes and avoid host syncs. An
    ``init`` with a ``to(device)`` method is moved to the buffer's device once, here (``ClassGaussians.to`` moves it
    in place); the draws of one without reach the buffer's device by a copy at every ``sample``.

    The gather + reset and the write-back are the fused ops of ``fastjem.kernels`` (Triton on CUDA,
    their PyTorch references elsewhere; ``backend`` forces one). The reset decisions and fresh
    values come from the buffer's own device RNG state ``rng_state`` (seeded by ``seed``, or from
    torch's generator when None; an ``SGLD`` sampler given the same seed draws the same Philox numbers, so give
    them different seeds); the chain indices from torch's generator.
    """

    def __init__(self, size: int, sample_shape: tuple[int, ...], reinit_prob: float = 0.05,
                 num_classes: int | None = None, device: torch.device | str = "cpu", seed: int | None = None,
                 backend: str | None = None, init=None):
        # types first: a string failed the comparisons below with a bare TypeError, a float size failed inside torch,
        # a bool was taken for 0 or 1 (num_classes=True for one class)
        size = as_integer("ReplayBuffer size (the number of chains)", size, ConfigError)
        reinit_prob = as_real("ReplayBuffer reinit_prob (a probability, e.g. 0.05)", reinit_prob, ConfigError)
        if num_classes is not None:
            num_classes = as_integer("ReplayBuffer num_classes (or None)", num_classes, ConfigError)
        if backend is not None and backend not in kernels.BACKENDS:
            raise ConfigError(f"ReplayBuffer backend must be one of {kernels.BACKENDS} (or None for the current "
                              f"default), got {backend!r}")
        if size <= 0:
            raise ConfigError(f"buffer size must be > 0, got {size}")
        if not 0.0 <= reinit_prob <= 1.0:
            raise ConfigError(f"reinit_prob must be in [0, 1], got {reinit_prob}")
        if num_classes is not None and num_classes <= 0:
            raise ConfigError(f"num_classes must be > 0 (or None for an unconditional buffer), got {num_classes}")
        if num_classes is not None and size % num_classes != 0:
            raise ConfigError(f"class-conditional sampling splits the buffer into {num_classes} equal blocks: "
                              f"its size {size} (--buffer-size) is not divisible by {num_classes}; use e.g. "
                              f"{(size // num_classes + 1) * num_classes}")
        self.size = size
        # an int is one sample's length: ReplayBuffer(N, 2) holds 2-D points [N, 2]
        self.sample_shape = check_sample_shape(sample_shape)
        self.reinit_prob = float(reinit_prob)
        self.num_classes = num_classes
        self.device = as_device("ReplayBuffer", device)
        if init is not None:
            check_init(init, num_classes)
        if init is not None and callable(getattr(init, "to", None)):
            init = init.to(self.device)  # its draws at every sample then happen where the buffer is
        self.init = init
        # before a byte is allocated: a buffer past the machine's memory was a kill without a word (a CPU's
        # overcommitted pages filled) or an out-of-memory error that named no option
        chain = math.prod(self.sample_shape) * 4
        check_fits(size * chain, self.device,
                   f"the replay buffer ({size} chains of {'x'.join(map(str, self.sample_shape))}, fp32)",
                   lambda free: f"give a smaller --buffer-size (at most {free // chain} chains fit, less what the "
                                "network and the data take)")
        # Never bf16: its spacing near 1 (0.004) is the size of the SGLD noise.
        if init is None:
            self.data = torch.empty((size, *self.sample_shape), device=self.device, dtype=torch.float32).uniform_(-1, 1)
        else:
            blocks = None
            if num_classes is not None:
                blocks = torch.arange(num_classes, device=self.device).repeat_interleave(size // num_classes)
            filled = init.fill(size, blocks)
            check_init_result("fill", filled, size, self.sample_shape)
            self.data = filled.detach().to(self.device, torch.float32).contiguous()
        seed = int(torch.randint(0, 2**62, ()).item()) if seed is None else check_seed("ReplayBuffer", seed)
        self.rng_state = kernels.new_rng_state(seed, self.device)
        self.backend = backend

    def __repr__(self) -> str:
        # the settings, never the chains (a notebook printing a buffer of 10000 images printed its tensor)
        conditional = f", num_classes={self.num_classes}" if self.num_classes is not None else ""
        init = f", init={self.init!r}" if self.init is not None else ""
        backend = f", backend={self.backend!r}" if self.backend is not None else ""
        return (f"ReplayBuffer(size={self.size}, sample_shape={self.sample_shape}, reinit_prob={self.reinit_prob!r}"
                f"{conditional}, device={str(self.device)!r}{backend}{init})")

    def to(self, device: torch.device | str) -> ReplayBuffer:
        """The chains, the RNG state and an ``init`` with a ``to`` method moved to ``device`` (new tensors there: a
        CUDA graph captured with the old ones does not follow); returns the buffer, as ``nn.Module.to`` does."""
        device = as_device("ReplayBuffer.to", device)
        self.data, self.rng_state = self.data.to(device), self.rng_state.to(device)
        if self.init is not None and callable(getattr(self.init, "to", None)):
            self.init = self.init.to(device)
        self.device = device
        return self

    @property
    def class_block(self) -> int:
        return self.size // (self.num_classes or 1)

    def draw_indices(self, batch_size: int, y: torch.Tensor | None = None) -> torch.Tensor:
        """Uniform chain indices [B] (int64, on the device); within class blocks when y is given.

        y must lie in [0, num_classes); it is not checked here, since that would read a device value on the host in
        the iteration: a class outside draws indices outside [0, N), which the buffer ops refuse on a CPU (``sample``
        then names y) and the Triton kernels read as NaN rows on a GPU."""
        if isinstance(batch_size, bool) or not hasattr(batch_size, "__index__") or batch_size < 0:
            raise ConfigError(f"batch_size must be an integer >= 0, got {batch_size!r}")
        if y is None:
            return torch.randint(0, self.size, (batch_size,), device=self.device)
        if self.num_classes is None:
            raise ConfigError("class-conditional draws need a buffer built with num_classes")
        if not isinstance(y, torch.Tensor) or y.dtype != torch.int64 or tuple(y.shape) != (batch_size,):
            # a list of classes failed with "'list' object has no attribute 'dtype'"
            got = f"{y.dtype} {tuple(y.shape)}" if isinstance(y, torch.Tensor) else f"a {type(y).__name__}"
            raise ConfigError(f"y must hold the class of each drawn chain, int64 [batch_size={batch_size}]; got "
                              f"{got}")
        offset = torch.randint(0, self.class_block, (y.shape[0],), device=self.device)
        return y.to(self.device) * self.class_block + offset

    def sample(self, batch_size: int, y: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Draw chains: returns (x0 [B, *S] fp32, idx [B]); each drawn chain restarts with prob. reinit_prob.
        y [B] int64, classes in [0, num_classes) (refused on the CPU only: see ``draw_indices``), draws from their
        blocks."""
        idx = self.draw_indices(batch_size, y)
        try:
            x0 = self.gather_and_reset(idx, y)
        except IndexError:
            # a class outside was refused as rows outside the buffer ("idx holds rows outside", an argument the user
            # never gave); read here, after the failure, so that the iteration reads no device value on the host
            if y is not None:
                check_class_labels("ReplayBuffer.sample", y, batch_size, self.num_classes, "batch_size")
            raise
        return x0, idx

    def gather_and_reset(self, idx: torch.Tensor, y: torch.Tensor | None = None) -> torch.Tensor:
        """buffer[idx] [B, *S], each row replaced by U(-1, 1) (or a draw of ``init``, of class y when given) with
        probability reinit_prob (one fused op)."""
        if self.init is not None and y is None and self.num_classes is not None:
            y = idx // self.class_block  # a class block restarts from its own class's law
        fresh = None
        if self.init is not None:
            # on the buffer's device whatever the init's draw returns (a no-op when it is there already); detached,
            # since restarts are chain states read by value (an init that is a network draws rows requiring grad)
            # ClassGaussians: the labels are the buffer's own (its blocks, or sample's y), their range read by no one
            checks = {"check_range": False} if isinstance(self.init, ClassGaussians) else {}
            fresh = self.init.draw(idx.shape[0], y, **checks)
            check_init_result("draw", fresh, idx.shape[0], self.sample_shape)
            fresh = fresh.detach().to(self.device, torch.float32)
        return kernels.buffer_sample(self.data, idx, self.reinit_prob, self.rng_state, fresh=fresh,
                                     backend=self.backend)

    def write_(self, idx: torch.Tensor, x: torch.Tensor) -> None:
        """Write the advanced chains back at the indices they were drawn from."""
        check_tensors("ReplayBuffer.write_", idx=idx, x=x)
        kernels.buffer_write_(self.data, idx, x.detach().to(torch.float32).contiguous(), backend=self.backend)

    def state_dict(self) -> dict:
        """The chains (``data``) and the restart RNG state (``rng_state``), with ``size``, ``num_classes`` and
        ``reinit_prob`` for reference; the tensors are the buffer's own (as ``nn.Module.state_dict``'s are):
        ``torch.save`` them, or clone them to keep them in memory. The chain indices and the draws of an ``init``
        come from torch's generator: save ``torch.get_rng_state()`` (and the CUDA one) beside it for a resumed
        run to draw what the uninterrupted one would."""
        return {"data": self.data, "size": self.size, "num_classes": self.num_classes,
                "reinit_prob": self.reinit_prob, "rng_state": self.rng_state}

    def load_state_dict(self, state: dict) -> None:
        """Chains and RNG state from ``state_dict()``, copied in place (on this buffer's device, whatever the saved
        one; a captured CUDA graph keeps reading them). The buffer must have the saved size, sample shape and
        num_classes; ``reinit_prob`` and ``init`` stay this buffer's own (settings, not state). A state without
        ``rng_state`` (an authors' buffer that ``fastjem convert`` imported) loads its chains and keeps this buffer's
        RNG state. Anything else is refused before a tensor is written."""
        check_part_state("ReplayBuffer", state, ("data",), ("size", "num_classes", "reinit_prob", "rng_state"))
        data = state["data"]
        if not isinstance(data, torch.Tensor) or not data.is_floating_point():
            what = data.dtype if isinstance(data, torch.Tensor) else type(data).__name__
            raise ConfigError(f"ReplayBuffer.load_state_dict: data must be the floating-point tensor of chains its "
                              f"state_dict() saved, got {what}")
        if tuple(data.shape) != tuple(self.data.shape):
            saved = tuple(data.shape)
            raise ConfigError(f"replay buffer shape {saved} does not match {tuple(self.data.shape)}: build the "
                              f"ReplayBuffer with size {saved[0] if saved else '?'} and sample_shape {saved[1:]} "
                              "to load this state")
        if state.get("num_classes", self.num_classes) != self.num_classes:
            # the same rows would be read as other classes' blocks
            raise ConfigError(f"replay buffer saved with num_classes={state['num_classes']} cannot be loaded into one "
                              f"with num_classes={self.num_classes}: build it with num_classes={state['num_classes']}")
        if state.get("rng_state") is not None:
            check_rng_state("ReplayBuffer", state["rng_state"])
        self.data.copy_(data)
        if state.get("rng_state") is not None:
            self.rng_state.copy_(state["rng_state"])
