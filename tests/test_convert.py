"""fastjem convert: checkpoints of the authors' JEM code (github.com/wgrathwohl/JEM) to fastjem's and back.

``AuthorsCCF`` below is the authors' network as their checkpoints lay it out (module names, the unused heads, the
final avg_pool2d(8)), written here independently of fastjem.models so that a wrong renaming or a different
computation fails: converted checkpoints must give its logits.
"""

import json

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from PIL import Image
from torch import nn

from fastjem.checkpoint import load_checkpoint
from fastjem.cli import main
from fastjem.config import TrainConfig
from fastjem.convert import export_jem, import_jem, is_jem_file
from fastjem.data import load_arrays, to_float
from fastjem.errors import CheckpointError, ConfigError
from fastjem.eval.core import load_model

LEAK = 0.2


def _norm(kind, channels):
    return {None: lambda: nn.Identity(), "batch": lambda: nn.BatchNorm2d(channels, momentum=0.9),
            "instance": lambda: nn.InstanceNorm2d(channels, affine=True),
            "layer": lambda: nn.GroupNorm(1, channels)}[kind]()


class _Basic(nn.Module):
    def __init__(self, cin, cout, stride, norm):
        super().__init__()
        self.bn1, self.conv1 = _norm(norm, cin), nn.Conv2d(cin, cout, 3, padding=1)
        self.bn2, self.conv2 = _norm(norm, cout), nn.Conv2d(cout, cout, 3, stride=stride, padding=1)
        self.shortcut = nn.Sequential(*([nn.Conv2d(cin, cout, 1, stride=stride)] if stride != 1 or cin != cout else []))

    def forward(self, x):
        h = self.conv1(F.leaky_relu(self.bn1(x), LEAK))
        return self.conv2(F.leaky_relu(self.bn2(h), LEAK)) + self.shortcut(x)


class _Body(nn.Module):
    def __init__(self, depth, k, norm):
        super().__init__()
        n, widths = (depth - 4) // 6, [16, 16 * k, 32 * k, 64 * k]
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        cin = 16
        for g, stride in enumerate((1, 2, 2), start=1):
            blocks = []
            for i in range(n):
                blocks.append(_Basic(cin, widths[g], stride if i == 0 else 1, norm))
                cin = widths[g]
            setattr(self, f"layer{g}", nn.Sequential(*blocks))
        self.bn1 = _norm(norm, cin)
        self.linear = nn.Linear(cin, 10)  # built by their body, never used by CCF
        self.last_dim = cin

    def forward(self, x):
        h = self.layer3(self.layer2(self.layer1(self.conv1(x))))
        return F.avg_pool2d(F.leaky_relu(self.bn1(h), LEAK), 8).flatten(1)


class AuthorsCCF(nn.Module):
    def __init__(self, depth=10, k=1, norm=None, n_classes=10):
        super().__init__()
        self.f = _Body(depth, k, norm)
        self.energy_output = nn.Linear(self.f.last_dim, 1)
        self.class_output = nn.Linear(self.f.last_dim, n_classes)

    def classify(self, x):
        return self.class_output(self.f(x))


def _authors_file(path, depth=10, k=1, norm=None, n_classes=10, buffer=64, seed=0, prefix=""):
    torch.manual_seed(seed)
    net = AuthorsCCF(depth, k, norm, n_classes)
    with torch.no_grad():
        for p in net.parameters():  # biases and norm affines away from their 0 / 1 initial values
            p.add_(0.05 * torch.randn_like(p))
        if norm == "batch":  # running statistics away from 0 / 1
            net.train()
            net.classify(torch.randn(16, 3, 32, 32))
    net.eval()
    buf = torch.rand(buffer, 3, 32, 32) * 2 - 1 if buffer else torch.empty(0)
    torch.save({"model_state_dict": {prefix + k: v for k, v in net.state_dict().items()}, "replay_buffer": buf}, path)
    return net, buf


def _close(a, b):
    return float((a - b).abs().max()) <= 1e-5 * max(1.0, float(a.abs().max()))


@pytest.mark.parametrize("norm", [None, "batch", "instance", "layer"])
def test_authors_checkpoint_converts_to_the_same_classifier_and_back(tmp_path, norm):
    k = 100 if norm == "batch" else 10
    net, buf = _authors_file(tmp_path / "jem.pt", depth=16, k=1, norm=norm, n_classes=k)
    given = norm if norm in ("instance", "layer") else None  # the only norms a state dict cannot tell apart
    r = import_jem(tmp_path / "jem.pt", norm=given)
    assert r["path"] == str(tmp_path / "jem-fastjem.pt") and r["model"] == "WRN-16-1"
    assert r["dataset"] == ("cifar100" if k == 100 else "cifar10")
    em = load_model(r["path"], "cpu")
    assert em.config.norm == (norm or "none") and em.num_classes == k and em.config.generative
    assert torch.equal(em.buffer, buf)
    x = torch.rand(6, 3, 32, 32) * 2 - 1
    with torch.no_grad():
        want, got = net.classify(x), em.model(x)
    assert _close(want, got), float((want - got).abs().max())
    assert _close(want.logsumexp(1), got.logsumexp(1))  # the energy JEM trains: E(x) = -LSE f(x)

    back = export_jem(r["path"])
    assert back["path"] == str(tmp_path / "jem-fastjem-jem.pt")
    saved = torch.load(back["path"], weights_only=True)
    theirs = AuthorsCCF(16, 1, norm, k)
    theirs.load_state_dict(saved["model_state_dict"])  # strict, as their load does
    original = net.state_dict()
    for key, value in saved["model_state_dict"].items():
        if key.startswith(("f.linear.", "energy_output.")):
            assert not value.any()  # unused by CCF: zeros
        else:
            assert torch.equal(value, original[key]), key
    assert torch.equal(saved["replay_buffer"], buf)
    with torch.no_grad():
        assert torch.equal(theirs.eval().classify(x), want)


def test_a_half_precision_buffer_is_imported_in_fp32_and_sized_into_the_config(tmp_path):
    """The buffer is stored as fastjem keeps one (fp32) and the config's buffer size is the buffer's, not the
    paper preset's 10000; read_jem takes a path as text."""
    from fastjem.convert import read_jem

    _, buf = _authors_file(tmp_path / "half.pt", buffer=12)
    obj = torch.load(tmp_path / "half.pt", weights_only=True)
    torch.save({**obj, "replay_buffer": buf.half()}, tmp_path / "half.pt")
    assert read_jem(str(tmp_path / "half.pt"))["buffer"].dtype == torch.float16
    r = import_jem(tmp_path / "half.pt")
    saved = torch.load(r["path"], weights_only=True)
    assert saved["buffer"]["data"].dtype == torch.float32 and torch.equal(saved["buffer"]["data"], buf.half().float())
    assert r["buffer"] == (12, 3, 32, 32) and load_model(r["path"], "cpu").config.buffer_size == 12


def test_a_fastjem_key_with_no_place_in_the_authors_network_is_refused():
    from fastjem.convert import fastjem_to_jem_state
    from fastjem.models.wrn import WideResNet

    state = WideResNet(10, 1, 10, 3, "none").state_dict()
    assert "class_output.weight" in fastjem_to_jem_state(state, 10)
    with pytest.raises(CheckpointError, match=r"key 'extra\.weight' has no place in the authors' Wide-ResNet"):
        fastjem_to_jem_state({**state, "extra.weight": torch.zeros(1)}, 10)


def test_dataparallel_prefix_no_buffer_and_classifier_only(tmp_path):
    net, _ = _authors_file(tmp_path / "dp.pt", buffer=0, prefix="module.")
    # JEM++ (sndnyang/JEMPP) saves the same layout without the body's unused linear layer
    obj = torch.load(tmp_path / "dp.pt", weights_only=True)
    obj["model_state_dict"] = {k: v for k, v in obj["model_state_dict"].items() if ".f.linear." not in k}
    torch.save(obj, tmp_path / "dp.pt")
    r = import_jem(tmp_path / "dp.pt", tmp_path / "out.pt", dataset="svhn")
    em = load_model(r["path"], "cpu")
    assert em.info.name == "svhn" and not em.info.flip and em.buffer is None and r["buffer"] is None
    x = torch.rand(3, 3, 32, 32) * 2 - 1
    with torch.no_grad():
        assert _close(net.classify(x), em.model(x))
    _authors_file(tmp_path / "clf.pt")  # with a buffer of 64 chains, which a classifier-only import leaves out
    r = import_jem(tmp_path / "clf.pt", classifier_only=True)
    em = load_model(r["path"], "cpu")
    assert not em.config.generative and em.buffer is None and em.label == "classifier-only"
    assert r["buffer"] is None and "buffer" not in load_checkpoint(r["path"])


def test_an_authors_file_in_torchs_legacy_format_is_imported(tmp_path, capsys):
    """The authors' code ran on PyTorch 1.x: a file saved before torch 1.6 (or with the legacy serialisation) cannot
    be memory-mapped, and was then taken for a fastjem checkpoint, which it is not."""
    net, _ = _authors_file(tmp_path / "new.pt", buffer=8)
    torch.save(torch.load(tmp_path / "new.pt", weights_only=True), tmp_path / "old.pt",
               _use_new_zipfile_serialization=False)
    assert is_jem_file(tmp_path / "old.pt")
    assert main(["convert", str(tmp_path / "old.pt"), "--out", str(tmp_path / "out.pt")]) == 0
    assert "wrote" in capsys.readouterr().out
    em = load_model(tmp_path / "out.pt", "cpu")
    x = torch.rand(3, 3, 32, 32) * 2 - 1
    with torch.no_grad():
        assert _close(net.classify(x), em.model(x))
    assert tuple(em.buffer.shape) == (8, 3, 32, 32)


def test_a_classifier_only_run_goes_back_without_its_replay_buffer(tmp_path, monkeypatch):
    """A classifier-only run's checkpoint holds a buffer its training never sampled (uniform noise): the authors'
    file gets an empty replay_buffer, as their classifier-only checkpoints have, not that noise."""
    import fastjem.convert as convert
    from fastjem.models.wrn import WideResNet

    ckpt = {"path": str(tmp_path / "clf.pt"), "iteration": 4, "buffer": {"data": torch.rand(8, 3, 32, 32) * 2 - 1},
            "config": TrainConfig(dataset="cifar10", arch="wrn", depth=10, width=1, px_weight=0.0).to_dict(),
            "dataset": {"channels": 3, "image_size": 32}, "model": WideResNet(10, 1, 10, 3, "none").state_dict()}
    monkeypatch.setattr(convert, "load_checkpoint", lambda p: ckpt)
    r = export_jem(tmp_path / "clf.pt", tmp_path / "out.pt")
    assert r["buffer"] is None and torch.load(r["path"], weights_only=True)["replay_buffer"].numel() == 0
    ckpt["config"] = TrainConfig(dataset="cifar10", arch="wrn", depth=10, width=1).to_dict()  # a JEM run keeps it
    r = export_jem(tmp_path / "clf.pt", tmp_path / "jem.pt")
    assert r["buffer"] == (8, 3, 32, 32)


def test_a_state_dict_that_is_not_the_authors_wrn_is_refused_by_what_it_holds(tmp_path):
    """Nothing is guessed or dropped: a layer their Wide-ResNet lacks, a value that is not a tensor, groups of
    unequal depth or not three, a body without their names or a width that is not 16 k are each refused with a
    message that names it, and nothing is written; a state dict that is no dict is refused, a buffer that is no
    tensor read as none (not an AttributeError from inside)."""
    _authors_file(tmp_path / "plain.pt")
    obj = torch.load(tmp_path / "plain.pt", weights_only=True)

    def refused(edit, match):
        state = dict(obj["model_state_dict"])
        edit(state)
        torch.save({**obj, "model_state_dict": state}, tmp_path / "bad.pt")
        with pytest.raises(CheckpointError, match=match):
            import_jem(tmp_path / "bad.pt", tmp_path / "out.pt")
        assert not (tmp_path / "out.pt").exists()

    def deeper_third_group(state):
        for key in [k for k in state if k.startswith("f.layer3.0.")]:
            state[key.replace("layer3.0.", "layer3.1.")] = state[key]

    def narrower_first_group(state):
        state["f.layer1.0.conv1.weight"] = state["f.layer1.0.conv1.weight"][:15]

    refused(lambda state: state.update({"f.extra.weight": torch.zeros(3)}), "holds 'f.extra.weight', which has no")
    refused(lambda state: state.update({"f.conv1.weight": 3}), "not a state dict of tensors")
    refused(deeper_third_group, "not three of equal length")
    refused(narrower_first_group, "width is not a multiple of 16")

    def act_norm(state):  # the authors' --norm act: a location and a log-scale per channel
        state.update({"f.layer1.0.bn1.loc": torch.zeros(16), "f.layer1.0.bn1.logs": torch.zeros(16)})

    def thinner_second_group(state):  # a kernel of another shape where every name is in place
        state["f.layer2.0.conv2.weight"] = state["f.layer2.0.conv2.weight"][:, :31]

    refused(act_norm, r"unknown normalisation layer with parameters \['loc', 'logs'\] .*'act' norm is not supported")
    refused(thinner_second_group, r"bad\.pt does not fit a WRN-10-1 of the authors' layout: Error\(s\) in loading")

    def two_groups(state):  # a Wide-ResNet of two residual groups, each as deep
        for key in [k for k in state if k.startswith("f.layer3.")]:
            del state[key]

    def other_body(state):  # their head on a body of other names
        state["f.stem.weight"] = state.pop("f.conv1.weight")

    refused(two_groups, r"residual groups are not three of equal length \(\{1: 1, 2: 1\}\)")
    refused(other_body, "not the authors' CCF Wide-ResNet .*holds class_output.bias")
    # a file whose state dict or buffer is of another type (weights_only=True still reads lists and numbers)
    torch.save({**obj, "model_state_dict": list(obj["model_state_dict"].values())}, tmp_path / "bad.pt")
    with pytest.raises(CheckpointError, match="'model_state_dict' is not a state dict of tensors"):
        import_jem(tmp_path / "bad.pt", tmp_path / "out.pt")
    torch.save({**obj, "replay_buffer": [1.0, 2.0]}, tmp_path / "list.pt")
    assert import_jem(tmp_path / "list.pt", tmp_path / "out.pt")["buffer"] is None  # no buffer: as an empty one


def test_conversion_errors_say_what_to_do(tmp_path, tiny_config):
    _authors_file(tmp_path / "inst.pt", norm="instance")
    for norm in (None, "batch", "none"):  # only the two norms such a state dict can be
        with pytest.raises(ConfigError, match="--norm instance or --norm layer"):
            import_jem(tmp_path / "inst.pt", norm=norm)
    _authors_file(tmp_path / "plain.pt")
    with pytest.raises(ConfigError, match="--norm batch was given, but the network has no norm layers: drop --norm, "
                                          "which is needed only for instance or layer norm"):
        import_jem(tmp_path / "plain.pt", norm="batch")
    _authors_file(tmp_path / "bn.pt", norm="batch")
    with pytest.raises(ConfigError, match=r"--norm layer was given, but the network's norm layers are batch norm "
                                          r"\(with running statistics\): drop --norm"):
        import_jem(tmp_path / "bn.pt", norm="layer")
    # the --dataset to give, named; or, for a network of classes none of them has, that it cannot be imported
    _authors_file(tmp_path / "c100.pt", n_classes=100)
    with pytest.raises(ConfigError, match="give the --dataset it was trained on: --dataset cifar100$"):
        import_jem(tmp_path / "c100.pt", dataset="svhn")
    with pytest.raises(ConfigError, match="trained on: --dataset cifar10 or --dataset svhn$"):
        import_jem(tmp_path / "plain.pt", dataset="cifar100")
    _authors_file(tmp_path / "c3.pt", n_classes=3)
    with pytest.raises(ConfigError, match=r"the network has 3 classes .*: none of the datasets the authors' code "
                                          r"trains on matches it, so fastjem cannot import it \(cifar10: 10 classes, "
                                          r"cifar100: 100 classes, svhn: 10 classes\)$"):
        import_jem(tmp_path / "c3.pt")
    with pytest.raises(ConfigError, match="--dataset must be one the authors' code trains on"):
        import_jem(tmp_path / "plain.pt", dataset="mnist")
    with pytest.raises(CheckpointError, match="is not a file"):
        import_jem(tmp_path)
    obj = torch.load(tmp_path / "plain.pt", weights_only=True)
    torch.save({**obj, "replay_buffer": obj["replay_buffer"][:, :, :16]}, tmp_path / "small.pt")
    with pytest.raises(CheckpointError, match=r"the replay buffer has shape \(\d+, 3, 16, 32\), not \[N, 3, 32, 32\]"):
        import_jem(tmp_path / "small.pt")
    torch.save({"model_state_dict": {"conv.weight": torch.zeros(3)}}, tmp_path / "net.pt")
    with pytest.raises(CheckpointError, match="not the authors' CCF Wide-ResNet"):
        import_jem(tmp_path / "net.pt")
    torch.save({"weights": torch.zeros(3)}, tmp_path / "other.pt")
    assert is_jem_file(tmp_path / "other.pt") is False and is_jem_file(tmp_path / "plain.pt") is True
    (tmp_path / "text.pt").write_text("not a torch file")
    assert is_jem_file(tmp_path / "text.pt") is False
    with pytest.raises(CheckpointError, match=r"cannot read .*text\.pt as a checkpoint of the authors' JEM code \("):
        import_jem(tmp_path / "text.pt")
    with pytest.raises(CheckpointError, match="lacks 'model_state_dict'"):
        import_jem(tmp_path / "other.pt")
    _, buf = _authors_file(tmp_path / "nan.pt")
    obj = torch.load(tmp_path / "nan.pt", weights_only=True)
    obj["replay_buffer"][3, 0, 0, 0] = float("nan")
    torch.save(obj, tmp_path / "nan.pt")
    with pytest.raises(CheckpointError, match="NaN or infinite.*--classifier-only"):
        import_jem(tmp_path / "nan.pt")
    # the authors' file where a fastjem checkpoint is expected: said as such, with the command that converts it (not
    # the refusal of a file that is no checkpoint of either kind, which names `fastjem convert` too)
    plain = tmp_path / "plain.pt"
    with pytest.raises(CheckpointError) as refused:
        load_checkpoint(plain)
    assert str(refused.value) == (f"{plain} is a checkpoint of the authors' JEM code (model_state_dict + "
                                  f"replay_buffer): convert it first with `fastjem convert {plain}`")
    r = import_jem(tmp_path / "plain.pt")
    with pytest.raises(ConfigError, match="exists: pass --force"):
        import_jem(tmp_path / "plain.pt")
    assert import_jem(tmp_path / "plain.pt", overwrite=True)["path"] == r["path"]  # a converted one: replaced
    # never over its own input, even with --force (it converted the file in place; again, back)
    before = (tmp_path / "plain.pt").read_bytes()
    with pytest.raises(ConfigError, match="is the file being converted"):
        import_jem(tmp_path / "plain.pt", tmp_path / "plain.pt", overwrite=True)
    with pytest.raises(ConfigError, match="is the file being converted"):
        export_jem(r["path"], r["path"], overwrite=True)
    assert (tmp_path / "plain.pt").read_bytes() == before
    # --force never replaces a training checkpoint (a run's state) with a conversion, either way
    from fastjem.train import Trainer as _Trainer

    _Trainer(tiny_config.replace(iters=1), out_dir=tmp_path / "run", progress=False, log=lambda *a: None).fit()
    before = (tmp_path / "run" / "checkpoint.pt").read_bytes()
    with pytest.raises(ConfigError, match="is a training checkpoint"):
        import_jem(tmp_path / "plain.pt", tmp_path / "run" / "checkpoint.pt", overwrite=True)
    with pytest.raises(ConfigError, match="is a training checkpoint"):
        export_jem(r["path"], tmp_path / "run" / "checkpoint.pt", overwrite=True)
    assert (tmp_path / "run" / "checkpoint.pt").read_bytes() == before
    # a converted checkpoint starts runs; it cannot continue one
    from fastjem.train import Trainer, resume_config

    with pytest.raises(CheckpointError, match="cannot be resumed.*--init-weights") as refused:
        resume_config(r["path"])
    # with the options that build its network (else the run it advises is refused for another network)
    net = load_model(r["path"], "cpu").config
    assert str(refused.value).endswith(f"--init-weights {r['path']} --arch wrn --depth {net.depth} --width "
                                       f"{net.width} --norm {net.norm}"), refused.value
    with pytest.raises(CheckpointError, match="cannot be resumed"):
        Trainer(load_model(r["path"], "cpu").config, out_dir=tmp_path / "r", resume=r["path"], progress=False)
    # only a 3-channel 32 x 32 Wide-ResNet has the authors' form
    t = Trainer(tiny_config.replace(iters=1), out_dir=tmp_path / "convnet", progress=False, log=lambda *a, **k: None)
    t.save_checkpoint()
    with pytest.raises(ConfigError, match="the authors' code has the Wide-ResNet only"):
        export_jem(tmp_path / "convnet")
    wrn = Trainer(tiny_config.replace(iters=1, arch="wrn", depth=10, width=1), out_dir=tmp_path / "wrn8",
                  progress=False, log=lambda *a, **k: None)
    wrn.save_checkpoint()
    with pytest.raises(ConfigError, match="takes 3-channel 32 x 32 images"):
        export_jem(tmp_path / "wrn8")


def test_a_data_parallel_class_conditional_buffer_goes_back_in_class_blocks(tmp_path, monkeypatch):
    """Each rank's class-conditional buffer is K blocks, one per class; the authors' code draws class y from the y-th
    K-th of the whole buffer, so the blocks of class y of every rank must lie together there (the ranks' buffers were
    laid end to end: their class-0 chains drew rank 0's class-0 and class-1 chains)."""
    import fastjem.convert as convert
    from fastjem.models.wrn import WideResNet

    k, per = 10, 3
    # rank r's chain i of class y holds the value 100 r + y, so every row says where it came from
    shards = [{"data": (100 * r + torch.arange(k)).repeat_interleave(per).float()[:, None, None, None]
               .expand(-1, 3, 32, 32).clone(), "num_classes": k} for r in range(2)]
    ckpt = {"path": str(tmp_path / "ddp.pt"), "iteration": 4, "ranks": [{"buffer": b} for b in shards],
            "config": TrainConfig(dataset="cifar10", arch="wrn", depth=10, width=1, class_cond_px=True).to_dict(),
            "dataset": {"channels": 3, "image_size": 32}, "model": WideResNet(10, 1, k, 3, "none").state_dict()}
    monkeypatch.setattr(convert, "load_checkpoint", lambda p: ckpt)
    saved = torch.load(export_jem(tmp_path / "ddp.pt", tmp_path / "out.pt")["path"], weights_only=True)
    buf = saved["replay_buffer"][:, 0, 0, 0]
    assert len(buf) == 2 * k * per
    for y in range(k):  # what their sample_p_0 draws for class y: every rank's class-y chains, and only those
        assert sorted(buf[y * 2 * per:(y + 1) * 2 * per].tolist()) == [y] * per + [100 + y] * per


def test_a_100_class_network_goes_back_with_the_script_and_flag_that_load_it(tmp_path, capsys):
    """Their eval_wrn_ebm.py builds a 10-class head (its strict load refuses a 100-class network): convert named
    it for every network; for other class counts it names train_wrn_ebm.py with --n_classes."""
    _authors_file(tmp_path / "c100.pt", n_classes=100, buffer=4)
    r = import_jem(tmp_path / "c100.pt")
    assert main(["convert", r["path"]]) == 0
    out = capsys.readouterr().out
    path = tmp_path / "c100-fastjem-jem.pt"
    assert (f"  use     python train_wrn_ebm.py --load_path {path} --depth 10 --width 1 --n_classes 100  (in "
            "github.com/wgrathwohl/JEM; their eval_wrn_ebm.py takes 10 classes only)\n") in out, out
    saved = torch.load(path, weights_only=True)["model_state_dict"]
    AuthorsCCF(10, 1, None, 100).load_state_dict(saved)  # what train_wrn_ebm.py --n_classes 100 builds
    with pytest.raises(RuntimeError, match="class_output"):
        AuthorsCCF(10, 1, None, 10).load_state_dict(saved)  # what eval_wrn_ebm.py builds


def test_convert_never_unpickles_a_file_that_holds_more_than_tensors(tmp_path, capsys):
    """An authors'-layout file that also holds other objects (their args, or code a crafted file runs when
    unpickled) is refused unread: it was taken for a fastjem checkpoint and unpickled (running that code), then
    the user was told to `fastjem convert` the file they had just given it. The legacy format too."""
    import argparse

    _authors_file(tmp_path / "plain.pt", buffer=4)
    obj = torch.load(tmp_path / "plain.pt", weights_only=True)
    marker = tmp_path / "ran"

    class Runs:
        def __reduce__(self):
            return open, (str(marker), "w")

    torch.save({**obj, "args": argparse.Namespace(depth=10)}, tmp_path / "args.pt")
    torch.save({**obj, "epoch": Runs()}, tmp_path / "crafted.pt")
    torch.save({**obj, "args": argparse.Namespace(depth=10)}, tmp_path / "old.pt", _use_new_zipfile_serialization=False)
    for name, what in (("args", "argparse.Namespace"), ("crafted", "open"), ("old", "objects")):
        assert main(["convert", str(tmp_path / f"{name}.pt")]) == 1
        err = capsys.readouterr().err
        assert "holds more than tensors (" in err and what in err and "fastjem convert" not in err, err
    assert not marker.exists() and not list(tmp_path.glob("*-jem.pt"))


def _cifar_like_folder(root, n_train=4, n_test=3):
    """A folder in the layout fastjem reads for cifar10 (train/<class>/, test/<class>/), 32 x 32 RGB."""
    rng = np.random.default_rng(0)
    classes = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")
    for split, n in (("train", n_train), ("test", n_test)):
        for c in classes:
            (root / split / c).mkdir(parents=True)
            for i in range(n):
                Image.fromarray(rng.integers(0, 256, (32, 32, 3), dtype=np.uint8)).save(root / split / c / f"{i}.png")


def test_cli_convert_then_eval_sample_export_train_and_back(tmp_path, capsys):
    data = tmp_path / "cifar"
    _cifar_like_folder(data)
    net, _ = _authors_file(tmp_path / "CIFAR10_MODEL.pt", depth=10, k=1)
    assert main(["convert", str(tmp_path / "CIFAR10_MODEL.pt"), "--data-dir", str(data)]) == 0
    out = capsys.readouterr().out
    conv = tmp_path / "CIFAR10_MODEL-fastjem.pt"
    assert f"wrote {conv}: WRN-10-1" in out and "replay buffer 64 x 3 x 32 x 32" in out
    assert f"--init-weights {conv} --depth 10 --width 1" in out  # not the paper preset's WRN-28-10
    suggested = next(line for line in out.splitlines() if line.strip().startswith("train ")).split()[3:]
    # the evaluate and sample lines name the file (the data folder was given: no --data-dir needed)
    evaluate, sample = (next(line for line in out.splitlines() if line.startswith(f"  {what} ")).split()[1:]
                        for what in ("evaluate", "sample"))
    assert evaluate == ["fastjem", "eval", str(conv), "all"] and sample == ["fastjem", "sample", str(conv), "-n", "64"]

    # fastjem eval on the converted file gives what the authors' network gives on the same test images
    assert main([*evaluate[1:3], "accuracy", "--no-progress"]) == 0
    report = json.loads((tmp_path / "eval-CIFAR10_MODEL-fastjem" / "accuracy.json").read_text())
    a = load_arrays("cifar10", data)
    x, y = to_float(a.test_x), a.test_y
    with torch.no_grad():
        logits = net.classify(x)
    assert report["results"]["n"] == 30
    assert report["results"]["acc"] == pytest.approx((logits.argmax(1) == y).float().mean().item())
    assert report["results"]["nll"] == pytest.approx(F.cross_entropy(logits, y).item(), rel=1e-5)

    assert main([*sample[1:3], "-n", "4", "--n-steps", "2", "--no-progress"]) == 0
    assert main(["export", str(conv)]) == 0
    capsys.readouterr()
    # resuming it is refused with the way forward; a new run starts from its network
    assert main(["train", "--resume", str(conv)]) == 1
    assert "--init-weights" in capsys.readouterr().err
    run = tmp_path / "finetune"
    # the train command convert printed, made small
    args = ["train", *suggested, "--iters", "2", "--batch-size", "4", "--sgld-steps", "1", "--buffer-size", "8",
            "--val-size", "4", "--device", "cpu", "--no-progress", "--out-dir", str(run), "--log-every", "1",
            "--eval-every", "0", "--sample-every", "0", "--ckpt-every", "0"]
    assert main(args) == 0
    # and the fine-tuned run goes back to the authors' format, loadable by their network
    capsys.readouterr()
    assert main(["convert", str(run)]) == 0
    out = capsys.readouterr().out
    assert "in the authors' format" in out
    # their evaluation script's flags for this network (their default norm: none, so no --norm)
    assert (f"  use     python eval_wrn_ebm.py --load_path {run / 'checkpoint-jem.pt'} --depth 10 --width 1  "
            "(in github.com/wgrathwohl/JEM)\n") in out
    saved = torch.load(run / "checkpoint-jem.pt", weights_only=True)
    theirs = AuthorsCCF(10, 1)
    theirs.load_state_dict(saved["model_state_dict"])
    trained = load_model(run, "cpu").model
    with torch.no_grad():
        assert _close(theirs.eval().classify(x[:5]), trained(x[:5]))
    assert saved["replay_buffer"].shape == (8, 3, 32, 32)
    # import-only options on a fastjem checkpoint are a mistake, said so
    assert main(["convert", str(run), "--norm", "batch", "--out", str(tmp_path / "x.pt")]) == 1
    assert "is not one" in capsys.readouterr().err
