import pytest
import torch
from torch import nn

from fastjem.models import ConvNet, WideResNet, build_model, has_batch_norm, has_dropout
from fastjem.models.wrn import WideBlock


def n_params(m):
    return sum(p.numel() for p in m.parameters())


def test_wrn_28_10_has_the_published_parameter_count():
    assert abs(n_params(WideResNet(28, 10)) - 36.5e6) < 0.05e6


@pytest.mark.parametrize("in_ch,size,k", [(3, 32, 10), (1, 28, 10), (1, 8, 7), (3, 17, 100)])
def test_wrn_any_input_size_and_channels(in_ch, size, k):
    m = WideResNet(10, 1, num_classes=k, in_channels=in_ch)
    assert m(torch.randn(2, in_ch, size, size)).shape == (2, k)


def test_wrn_block_structure():
    m = WideResNet(16, 2, norm="batch", dropout=0.1)
    blocks = list(m.blocks)
    assert len(blocks) == 3 * 2  # n = (16 - 4) / 6 per group
    first_of_group2 = blocks[2]
    assert isinstance(first_of_group2, WideBlock)
    # The stride sits on the second conv; the first is stride 1.
    assert first_of_group2.conv1.stride == (1, 1) and first_of_group2.conv2.stride == (2, 2)
    assert first_of_group2.shortcut is not None and first_of_group2.shortcut.kernel_size == (1, 1)
    assert blocks[3].shortcut is None
    assert all(c.bias is not None for c in m.modules() if isinstance(c, nn.Conv2d))
    assert [b.conv2.out_channels for b in blocks] == [32, 32, 64, 64, 128, 128]
    assert [b.conv2.stride[0] for b in blocks] == [1, 1, 2, 1, 2, 1]  # the first group keeps the image size
    convs = [c for c in m.modules() if isinstance(c, nn.Conv2d)]
    assert all((c.kernel_size, c.padding) in (((3, 3), (1, 1)), ((1, 1), (0, 0))) for c in convs)
    assert (m.conv1.kernel_size, m.conv1.stride) == ((3, 3), (1, 1))
    acts = [a for a in m.modules() if isinstance(a, nn.LeakyReLU)]
    assert acts and all(a.negative_slope == 0.2 for a in acts)
    assert isinstance(first_of_group2.dropout, nn.Dropout)
    assert m.fc.in_features == 128


def test_a_block_adds_its_branch_to_its_input_or_to_its_shortcut():
    """A WRN block's output is its residual branch plus its input, through a 1x1 shortcut wherever the width or the
    stride changes (also at stride 1: the first block widens the stem's 16 channels)."""
    m = WideResNet(16, 2).eval()
    assert m.conv1.out_channels == 16
    x = torch.randn(2, 16, 8, 8)
    for block in m.blocks[:3]:  # widens at stride 1; keeps width and size; widens at stride 2
        branch = block.conv2(block.act(block.norm2(block.dropout(block.conv1(block.act(block.norm1(x)))))))
        skip = x if block.shortcut is None else block.shortcut(x)
        out = block(x)
        assert torch.equal(out, branch + skip)
        x = out
    assert [b.shortcut is not None for b in m.blocks[:3]] == [True, False, True]


def test_the_head_is_norm_leaky_relu_global_average_pool_then_linear():
    """After the last block: norm -> LeakyReLU(0.2) -> global average pool -> Linear (DESIGN section 2), computed
    here from the network's own layers: a head that skipped the activation or the norm would give other logits."""
    m = WideResNet(10, 1, norm="batch").eval()
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():  # running statistics far from (0, 1), so that the norm is no identity
        m.norm.running_mean.copy_(torch.randn(m.norm.num_features, generator=gen))
        m.norm.running_var.copy_(torch.rand(m.norm.num_features, generator=gen) + 0.5)
    x = torch.randn(3, 3, 8, 8, generator=gen)
    h = m.blocks(m.conv1(x))
    want = m.fc(torch.nn.functional.leaky_relu(m.norm(h), 0.2).mean(dim=(2, 3)))
    torch.testing.assert_close(m(x), want)
    torch.testing.assert_close(m.features(x), torch.nn.functional.leaky_relu(m.norm(h), 0.2).mean(dim=(2, 3)))


def test_dropout_sits_between_a_blocks_two_convolutions():
    """JEM's block: norm -> LeakyReLU -> conv1 -> dropout -> norm -> LeakyReLU -> conv2: dropout takes conv1's
    output and hands it to the second norm (traced by hooks, in training mode where dropout acts)."""
    m = WideResNet(10, 1, norm="batch", dropout=0.5).train()
    block = m.blocks[1]
    seen = {}
    block.conv1.register_forward_hook(lambda mod, i, o: seen.__setitem__("conv1_out", o))
    block.dropout.register_forward_hook(lambda mod, i, o: seen.update(drop_in=i[0], drop_out=o))
    block.norm2.register_forward_hook(lambda mod, i, o: seen.__setitem__("norm2_in", i[0]))
    block.conv2.register_forward_hook(lambda mod, i, o: seen.__setitem__("conv2_in", i[0]))
    torch.manual_seed(0)
    m(torch.randn(4, 3, 16, 16))
    assert seen["drop_in"] is seen["conv1_out"] and seen["norm2_in"] is seen["drop_out"]
    assert (seen["drop_out"] == 0).float().mean() > 0.3  # dropout really acted on that tensor
    assert torch.equal(seen["conv2_in"], torch.nn.functional.leaky_relu(block.norm2(seen["drop_out"]), 0.2))


@pytest.mark.parametrize("norm,cls", [("none", nn.Identity), ("batch", nn.BatchNorm2d),
                                      ("instance", nn.InstanceNorm2d), ("layer", nn.GroupNorm)])
def test_norm_choices(norm, cls):
    m = WideResNet(10, 1, norm=norm)
    assert isinstance(m.blocks[0].norm1, cls)
    assert has_batch_norm(m) == (norm == "batch")
    assert m(torch.randn(2, 3, 16, 16)).shape == (2, 10)
    norm1 = m.blocks[0].norm1
    if norm in ("instance", "layer"):  # with a learnable per-channel scale and shift
        assert [tuple(p.shape) for p in norm1.parameters()] == [(16,), (16,)]
    if norm == "layer":  # one mean and variance per image, over all of (C, H, W)
        h = torch.randn(2, 16, 5, 5) + torch.arange(16.0).view(1, 16, 1, 1)  # channels of different means
        flat = h.flatten(1)
        whole = (flat - flat.mean(1, keepdim=True)) / (flat.var(1, unbiased=False, keepdim=True) + 1e-5).sqrt()
        torch.testing.assert_close(norm1(h).flatten(1), whole, rtol=0, atol=1e-5)


def test_batch_norm_running_statistics_mostly_follow_the_last_batch():
    """The authors' BatchNorm2d(momentum=0.9): after the x_p, x_q, x_lab forwards of an iteration, the running
    statistics are 0.9 the real x_lab batch's, not an average that gives the SGLD samples a third."""
    m = WideResNet(10, 1, norm="batch").train()
    bn = m.blocks[0].norm1
    x = torch.randn(8, 16, 8, 8) * 3 + 5
    bn(x)
    torch.testing.assert_close(bn.running_mean, 0.9 * x.mean(dim=(0, 2, 3)))
    torch.testing.assert_close(bn.running_var, 0.1 + 0.9 * x.var(dim=(0, 2, 3), unbiased=True))


def test_wrn_rejects_bad_depth_and_unknown_norms():
    with pytest.raises(ValueError, match="6n\\+4"):
        WideResNet(20, 1)
    with pytest.raises(ValueError, match="n >= 1"):  # 6 * 0 + 4: no block at all
        WideResNet(4, 1)
    with pytest.raises(ValueError, match="unknown norm 'group'"):
        WideResNet(10, 1, norm="group")


def test_nets_refuse_sizes_that_are_not_positive_integers_and_a_dropout_outside_0_1_when_built():
    """Named at construction, not at the first forward (width 0) or deep inside torch (a float width or depth)."""
    for args, kwargs, match in (((10, 0), {}, "widen_factor must be a positive integer, got 0"),
                                ((10, 1.5), {}, "widen_factor must be a positive integer, got 1.5"),
                                ((10.0, 1), {}, "depth must be a positive integer, got 10.0"),
                                ((10, 1, 0), {}, "num_classes must be a positive integer"),
                                ((10, 1), {"in_channels": True}, "in_channels must be a positive integer"),
                                ((10, 1), {"dropout": 1.0}, r"dropout is a probability in \[0, 1\)")):
        with pytest.raises(ValueError, match=match):
            WideResNet(*args, **kwargs)
    with pytest.raises(ValueError, match="ConvNet: width must be a positive integer, got 0"):
        ConvNet(10, 1, 0)
    with pytest.raises(ValueError, match="ConvNet: dropout is a probability"):
        ConvNet(dropout=-0.1)
    assert WideResNet(torch.tensor(10).item(), 1, dropout=0.5)(torch.zeros(1, 3, 8, 8)).shape == (1, 10)


def test_wrn_sample_is_independent_of_batch_without_batch_norm():
    m = WideResNet(10, 1).eval()
    x = torch.randn(4, 3, 16, 16)
    torch.testing.assert_close(m(x)[:1], m(x[:1]), rtol=1e-4, atol=1e-5)


def test_convnet_and_build_model():
    assert ConvNet(10, 1, 8)(torch.randn(3, 1, 8, 8)).shape == (3, 10)
    assert ConvNet(10, 1, 8)(torch.randn(3, 1, 28, 28)).shape == (3, 10)
    # conv(c) -> conv(2c, stride 2) -> conv(4c, stride 2), each 3x3 with padding 1, then a Linear of the 4c features
    net = ConvNet(10, 1, 8)
    convs = [c for c in net.modules() if isinstance(c, nn.Conv2d)]
    assert [(c.in_channels, c.out_channels, c.kernel_size, c.stride, c.padding) for c in convs] == [
        (1, 8, (3, 3), (1, 1), (1, 1)), (8, 16, (3, 3), (2, 2), (1, 1)), (16, 32, (3, 3), (2, 2), (1, 1))]
    assert net.fc.in_features == net.feature_dim == 32 and net.features(torch.randn(3, 1, 8, 8)).shape == (3, 32)
    wrn = build_model("wrn", 10, 3)  # the paper's WRN-28-10 by default
    assert len(wrn.blocks) == 12 and wrn.fc.in_features == 640 and not has_batch_norm(wrn)
    wrn = build_model("wrn", 10, 3, 10, 2)
    assert isinstance(wrn, WideResNet) and wrn.feature_dim == wrn.fc.in_features == 128
    assert len(wrn.blocks) == 3 and not has_dropout(wrn)  # depth 10: one block a group
    # the norm and the dropout reach either network
    for arch in ("wrn", "convnet"):
        net = build_model(arch, 10, 3, 10, 2, norm="batch", dropout=0.2)
        assert has_batch_norm(net) and has_dropout(net), arch
        assert not has_batch_norm(build_model(arch, 10, 3, 10, 2, norm="layer")), arch
    assert wrn.features(torch.randn(2, 3, 8, 8)).shape == (2, 128)
    with pytest.raises(ValueError):
        build_model("vit", 10, 3)


def test_dropout_and_batch_norm_are_seen_in_any_network():
    """What decides whether the three forwards of an iteration may run as one: dropout that draws masks (of any
    kind, at a rate above 0: a layer of rate 0 draws none, and keeps the joined forward) and batch norm of any
    dimension (a custom network's BatchNorm1d makes a sample's output depend on its batch as BatchNorm2d does)."""
    assert not has_dropout(ConvNet(10, 1, 8)) and has_dropout(ConvNet(10, 1, 8, dropout=0.1))
    assert not has_dropout(nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.0)))
    assert has_dropout(nn.Sequential(nn.Conv2d(1, 2, 3), nn.Dropout2d(0.2)))
    assert has_batch_norm(nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4)))
    assert not has_batch_norm(WideResNet(10, 1, norm="layer")) and has_batch_norm(WideResNet(10, 1, norm="batch"))


def test_global_avg_pool_is_the_mean_and_keeps_the_gradient_layout():
    from fastjem.models.wrn import global_avg_pool

    h = torch.randn(4, 8, 5, 5).contiguous(memory_format=torch.channels_last).requires_grad_(True)
    pooled = global_avg_pool(h)
    assert torch.equal(pooled, h.mean(dim=(2, 3)))  # bitwise on CPU
    (grad,) = torch.autograd.grad(pooled.sum(), h)
    assert torch.equal(grad, torch.full_like(h, 1 / 25))
    # an expanded gradient, not a materialised NCHW one (which would meet the channels_last activation
    # in a slow mixed-layout LeakyReLU backward)
    assert grad.stride()[2:] == (0, 0)


def test_convnet_uses_leaky_relu_and_norms_where_asked():
    """The conv net's activations are LeakyReLU(0.2) like the WRN's, and --norm puts a norm before each of its
    convolutions but the first, with that convolution's input channels."""
    from fastjem.models import ConvNet

    m = ConvNet(10, 3, 8, norm="batch")
    acts = [a for a in m.modules() if isinstance(a, (nn.ReLU, nn.LeakyReLU))]
    assert acts and all(isinstance(a, nn.LeakyReLU) and a.negative_slope == 0.2 for a in acts)
    norms = [n for n in m.modules() if isinstance(n, nn.BatchNorm2d)]
    assert [n.num_features for n in norms] == [8, 16]  # the channels of the convolution each one precedes
    assert m(torch.randn(2, 3, 8, 8)).shape == (2, 10)
    assert not any(isinstance(n, nn.BatchNorm2d) for n in ConvNet(10, 3, 8).modules())
    # --dropout puts one dropout of that rate in the net
    drop = [d for d in ConvNet(10, 3, 8, dropout=0.5).modules() if isinstance(d, nn.Dropout)]
    assert [d.p for d in drop] == [0.5]


@pytest.mark.parametrize("arch,least", [("wrn", 5), ("convnet", 3)])
def test_instance_norm_smallest_image_size_is_the_one_torch_can_train(arch, least):
    """--norm instance: images under 5x5 (WRN) or 3x3 (conv net) leave a norm layer 1x1 maps, which torch refuses
    at the first training forward; check_image_size refuses exactly those sizes, naming --image-size and --norm,
    and no size that trains."""
    from fastjem.errors import ConfigError
    from fastjem.models import check_image_size, min_image_size

    assert min_image_size(arch, "instance") == least
    for size in range(1, least + 3):
        net = build_model(arch, 3, 1, 10, 1, "instance").train()
        try:
            net(torch.randn(2, 1, size, size))
            trains = True
        except ValueError:
            trains = False
        assert trains == (size >= least), size
        if trains:
            check_image_size(arch, "instance", size, width=1)
        else:
            with pytest.raises(ConfigError, match=rf"--image-size {least} or more.*--norm"):
                check_image_size(arch, "instance", size, width=1)
    for norm in ("none", "batch", "layer"):  # the others take 1x1 maps
        assert min_image_size(arch, norm) == 1
        check_image_size(arch, norm, 1, width=2)


@pytest.mark.parametrize("arch", ["wrn", "convnet"])
def test_layer_norm_over_one_value_is_refused_before_training(arch, tiny_config):
    """--norm layer: the conv net of width 1 normalises one channel of the full image first, so 1x1 images give it
    one value, which it makes 0: torch refuses one image a forward, and more give logits that ignore the input;
    --image-size and the width are checked together (with the data's own size too), naming both; every other width,
    size and arch trains."""
    from fastjem.errors import ConfigError
    from fastjem.models import check_image_size

    for width in (1, 2):
        for size in (1, 2):
            net = build_model(arch, 3, 1, 10, width, "layer").train()
            try:
                net(torch.randn(1, 1, size, size))
                x = torch.randn(2, 1, size, size)
                trains = not torch.equal(net(x), net(-x))
            except ValueError:
                trains = False
            assert trains == (arch == "wrn" or width > 1 or size > 1), (width, size)
            cfg = tiny_config.replace(arch=arch, depth=10, width=width, norm="layer", image_size=size)
            if trains:
                cfg.validate()
                check_image_size(arch, "layer", size, "the size of data='s images", width=width)
            else:
                with pytest.raises(ConfigError, match=r"--norm layer with --arch convnet --width 1 needs images of at "
                                                      r"least 2x2.*1x1 images \(--image-size\).*give --width 2 or "
                                                      r"more, --image-size 2 or more, or another --norm"):
                    cfg.validate()
                with pytest.raises(ConfigError, match=r"1x1 images \(the size of data='s images\)"):
                    check_image_size(arch, "layer", size, "the size of data='s images", width=width)


@pytest.mark.parametrize("arch,least", [("wrn", 5), ("convnet", 3)])
def test_batch_norm_on_one_image_of_1x1_maps_is_refused_before_training(arch, least, tiny_config, tmp_path):
    """--norm batch with one image per forward (--batch-size 1, or one per process) and images small enough that a
    norm layer sees 1x1 maps: torch's "Expected more than 1 value per channel when training" at the first forward
    became a clear error, from the config (--image-size) and from the data's own size; a size or batch that trains
    is let through."""
    from fastjem.data import arrays_from_tensors
    from fastjem.errors import ConfigError
    from fastjem.models import check_batch_norm_batch
    from fastjem.train import Trainer

    for size in range(1, least + 2):
        for batch in (1, 2):
            try:
                build_model(arch, 3, 1, 10, 1, "batch").train()(torch.randn(batch, 1, size, size))
                trains = True
            except ValueError:
                trains = False
            assert trains == (size >= least or batch > 1), (size, batch)
            cfg = tiny_config.replace(arch=arch, depth=10, width=1, norm="batch", image_size=size, batch_size=batch)
            if trains:
                cfg.validate()
            else:
                with pytest.raises(ConfigError, match=rf"one image per forward \(--batch-size 1\).*{size}x{size} "
                                                      rf"images \(--image-size\) sees 1x1 maps.*--batch-size 2 or "
                                                      rf"more, --image-size {least} or more, or another --norm"):
                    cfg.validate()
    # one image per process of a data-parallel run: the advice counts the processes
    with pytest.raises(ConfigError, match=r"\(--batch-size 2 over 2 processes\).*give --batch-size 4 or more"):
        check_batch_norm_batch(arch, "batch", least - 1, 1, 2)
    check_batch_norm_batch(arch, "batch", least - 1, 2, 2)
    # norms without batch statistics train on one image of 1x1 maps: not refused
    for norm in ("none", "layer"):
        check_batch_norm_batch(arch, norm, 1, 1)
        build_model(arch, 3, 1, 10, 2, norm).train()(torch.randn(1, 1, 1, 1)).sum().backward()
    # images of their own size (no --image-size): refused before the run, not at its first training forward
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, 256, (40, 1, least - 1, least - 1), dtype=torch.uint8, generator=g)
    y = torch.arange(40) % 2
    data = arrays_from_tensors(x[:32], y[:32], x[32:], y[32:], pad=0)
    cfg = tiny_config.replace(arch=arch, depth=10, width=1, norm="batch", iters=1, batch_size=1, buffer_size=20,
                              sgld_steps=1, val_size=0)
    with pytest.raises(ConfigError, match=r"images \(the size of data='s images\) sees 1x1 maps"):
        Trainer(cfg, out_dir=tmp_path / "one", progress=False, data=data)
    Trainer(cfg.replace(batch_size=2), out_dir=tmp_path / "two", progress=False, data=data).train_step()


@pytest.mark.parametrize("arch,least", [("wrn", 5), ("convnet", 3)])
def test_batch_norm_on_one_image_per_process_is_refused_up_front(arch, least, tiny_config, tmp_path, monkeypatch,
                                                                  capsys):
    """Data parallel: --batch-size 2 over 2 processes is one image per forward. With --image-size, fastjem train
    under torchrun refuses it from the config, before the process group is joined or the data read (it got as far
    as the Trainer); images of their own size are refused by the Trainer, counting the processes alike."""
    import fastjem.train as train_mod
    from fastjem.cli import main
    from fastjem.data import arrays_from_tensors
    from fastjem.distributed import DistInfo
    from fastjem.errors import ConfigError

    cfg = tiny_config.replace(arch=arch, depth=10, width=1, norm="batch", image_size=least - 1, batch_size=2,
                              buffer_size=20)
    cfg.validate()
    one_each = r"one image per forward \(--batch-size 2 over 2 processes\).*give --batch-size 4 or more"
    with pytest.raises(ConfigError, match=one_each):
        cfg.validate(world=2)
    cfg.replace(batch_size=4).validate(world=2)
    # a batch the processes cannot share is said as such (not as a share of one image)
    with pytest.raises(ConfigError, match=r"with 2 processes, --batch-size \(3, the global batch\).*divisible by 2"):
        cfg.replace(batch_size=3).validate(world=2)
    # the command line under torchrun (its variables; MASTER_ADDR left out: joining the group would fail)
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "0")
    monkeypatch.delenv("MASTER_ADDR", raising=False)
    depth = ["--depth", "10"] if arch == "wrn" else []
    args = ["train", "--dataset", "digits", "--arch", arch, *depth, "--width", "1", "--norm", "batch", "--image-size",
            str(least - 1), "--batch-size", "2", "--buffer-size", "20", "--device", "cpu", "--no-compile",
            "--no-progress", "--iters", "1", "--out-dir", str(tmp_path / "cli")]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "over 2 processes" in err and "MASTER_ADDR" not in err, err
    assert not (tmp_path / "cli").exists()
    # the Trainer, for images of their own size (no --image-size)
    monkeypatch.setattr(train_mod, "init_from_env", lambda device: DistInfo(0, 2, 0))
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, 256, (40, 1, least - 1, least - 1), dtype=torch.uint8, generator=g)
    y = torch.arange(40) % 2
    data = arrays_from_tensors(x[:32], y[:32], x[32:], y[32:], pad=0)
    by_data = one_each.replace("processes\\).*", "processes\\).*the size of data='s images.*")
    with pytest.raises(ConfigError, match=by_data):
        train_mod.Trainer(cfg.replace(image_size=0, iters=1, sgld_steps=1, val_size=0), out_dir=tmp_path / "run",
                          progress=False, data=data)


def test_instance_norm_on_too_small_images_is_refused_before_training(tiny_config, tmp_path):
    """--image-size (the config, before any data is read), data= of tiny images and the sampler benchmark: a clear
    error, not torch's 'Expected more than 1 spatial element' at the first forward; one pixel more trains."""
    from fastjem.benchmark import build_sampler_call
    from fastjem.data import arrays_from_tensors
    from fastjem.errors import ConfigError
    from fastjem.train import Trainer

    with pytest.raises(ConfigError, match=r"at least 5x5.*--image-size 5"):
        tiny_config.replace(arch="wrn", depth=10, width=1, norm="instance", image_size=4).validate()
    tiny_config.replace(arch="wrn", depth=10, width=1, norm="instance", image_size=5).validate()
    cfg = tiny_config.replace(norm="instance", iters=1, batch_size=4, buffer_size=20, sgld_steps=1, val_size=0)
    g = torch.Generator().manual_seed(0)
    for size in (2, 3):
        x = torch.randint(0, 256, (40, 1, size, size), dtype=torch.uint8, generator=g)
        y = torch.arange(40) % 2
        data = arrays_from_tensors(x[:32], y[:32], x[32:], y[32:], pad=0)
        if size == 2:
            with pytest.raises(ConfigError, match=r"2x2 images \(the size of data='s images\).*--image-size 3"):
                Trainer(cfg, out_dir=tmp_path / "small", progress=False, data=data)
        else:
            Trainer(cfg, out_dir=tmp_path / "fits", progress=False, data=data).train_step()
    with pytest.raises(ConfigError, match=r"--image-size 3 or more"):
        build_sampler_call(cfg, torch.device("cpu"), 10, 1, 2)


def test_a_compiled_networks_state_dict_loses_its_prefix_with_its_modules_versions():
    """plain_state_dict renames the per-module versions (``_metadata``, which batch norm's loading reads) with the
    names, on a copy: the plain names' versions are the network's own, and the compiled state is left as it was."""
    from fastjem.models import plain_state_dict

    net = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2))
    state = torch.compile(net).state_dict()
    plain = plain_state_dict(state)
    assert list(plain) == list(net.state_dict())
    assert plain._metadata == net.state_dict()._metadata and plain._metadata["1"] == {"version": 2}
    assert all(k.startswith("_orig_mod") for k in state) and "_orig_mod.1" in state._metadata
