"""Checkpoints of the authors' JEM code (github.com/wgrathwohl/JEM) to fastjem checkpoints, and back.

The authors' ``train_wrn_ebm.py`` saves ``{"model_state_dict": CCF.state_dict(), "replay_buffer": [N, 3, 32, 32]}``
(their released CIFAR-10 model is such a file). CCF is a Wide-ResNet body ``f`` with two heads: ``class_output``
(the logits f(x), whose logsumexp is the energy JEM trains) and ``energy_output`` (used only by their unconditional
``--uncond`` model, ``F``). Their body is fastjem's WideResNet under other names:

    theirs                                  fastjem
    f.conv1                                 conv1
    f.layer{g}.{i}.bn1 / conv1 / bn2 / conv2   blocks.{(g-1) n + i}.norm1 / conv1 / norm2 / conv2
    f.layer{g}.{i}.shortcut.0               blocks.{(g-1) n + i}.shortcut
    f.bn1                                   norm
    class_output                            fc
    f.linear, energy_output                 (unused by CCF: dropped on import, zeros on export)

Their final average pool is ``avg_pool2d(out, 8)``, the global mean for 32 x 32 inputs, so a 32 x 32 network
computes the same logits in both (tested against an independent implementation of their module layout). Batch
norm uses their momentum, 0.9 (PyTorch's convention: the running statistics mostly follow the last batch).
"""

from __future__ import annotations

import os
import re
from dataclasses import asdict
from pathlib import Path

import torch

from fastjem.checkpoint import FORMAT, VERSION, atomic_save, beyond_tensors, load_checkpoint, output_path
from fastjem.config import TrainConfig, get_preset
from fastjem.data import DatasetInfo
from fastjem.errors import CheckpointError, ConfigError, error_line

CIFAR10_CLASSES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")
# What fastjem.data.load_arrays reports for the datasets the authors trained on (pad 4, flips but not for SVHN,
# 5000 held out); CIFAR-100's class names are the indices here (its data, when loaded, has the names)
JEM_DATASETS = {
    "cifar10": DatasetInfo("cifar10", 10, 3, 32, 4, True, 5000, CIFAR10_CLASSES),
    "cifar100": DatasetInfo("cifar100", 100, 3, 32, 4, True, 5000, tuple(str(i) for i in range(100))),
    "svhn": DatasetInfo("svhn", 10, 3, 32, 4, False, 5000, tuple(str(i) for i in range(10))),
}
_BLOCK = re.compile(r"f\.layer(\d+)\.(\d+)\.(bn1|conv1|bn2|conv2|shortcut\.0)\.(.+)")
_BLOCK_PARTS = {"bn1": "norm1", "conv1": "conv1", "bn2": "norm2", "conv2": "conv2", "shortcut.0": "shortcut"}
# Wide_ResNet's own (unused) linear layer is built with its default 10 classes
_THEIR_LINEAR_CLASSES = 10


def is_jem_checkpoint(obj) -> bool:
    """Whether ``obj`` (a loaded file) is a checkpoint of the authors' JEM code."""
    return isinstance(obj, dict) and "model_state_dict" in obj and "format" not in obj


def is_jem_file(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a file holding a checkpoint of the authors' JEM code (read as tensors only). The file is
    memory-mapped where its format allows, so telling the two directions apart does not read it all a first time."""
    if not Path(path).is_file():
        return False
    for mmap in (True, False):  # files in torch's legacy (pre-1.6) format cannot be memory-mapped
        try:
            return is_jem_checkpoint(torch.load(path, map_location="cpu", weights_only=True, mmap=mmap))
        except Exception:  # noqa: BLE001 - not a tensors-only torch file: a fastjem checkpoint, or not a checkpoint
            continue
    return False


def read_jem(path: str | os.PathLike) -> dict:
    """The authors' checkpoint at ``path`` as ``{"state": model_state_dict, "buffer": tensor or None}``, read with
    ``weights_only=True`` (their files hold tensors only, so nothing in them is executed)."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"{path} does not exist" if not path.exists() else f"{path} is not a file")
    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:
        raise CheckpointError(f"cannot read {path} as a checkpoint of the authors' JEM code "
                              f"({error_line(err)})") from err
    if not is_jem_checkpoint(obj):
        raise CheckpointError(f"{path} is not a checkpoint of the authors' JEM code: it lacks 'model_state_dict' "
                              "(their train_wrn_ebm.py saves {'model_state_dict': ..., 'replay_buffer': ...})")
    state = obj["model_state_dict"]
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise CheckpointError(f"{path}: 'model_state_dict' is not a state dict of tensors")
    # a model wrapped in DataParallel saves every key under "module."
    state = {k.removeprefix("module."): v for k, v in state.items()}
    buffer = obj.get("replay_buffer")
    if buffer is not None and not (isinstance(buffer, torch.Tensor) and buffer.numel() > 0):
        buffer = None
    return {"state": state, "buffer": buffer}


def describe_jem(state: dict, norm: str | None = None) -> dict:
    """Depth, width, norm, classes and input channels of the authors' CCF network from its state dict.

    Instance norm and layer norm (GroupNorm(1)) both hold a per-channel weight and bias and nothing else, so a
    state dict cannot tell them apart: ``norm`` must then be given."""
    if "class_output.weight" not in state or "f.conv1.weight" not in state:
        found = ", ".join(sorted(state)[:6])
        raise CheckpointError("the state dict is not the authors' CCF Wide-ResNet (no 'f.conv1.weight' or "
                              f"'class_output.weight'; it holds {found}, ...)")
    groups: dict[int, set[int]] = {}
    for key in state:
        m = _BLOCK.fullmatch(key)
        if m:
            groups.setdefault(int(m.group(1)), set()).add(int(m.group(2)))
    counts = {g: len(blocks) for g, blocks in groups.items()}
    if sorted(counts) != [1, 2, 3] or len(set(counts.values())) != 1:
        raise CheckpointError(f"the state dict's residual groups are not three of equal length ({counts}): not a "
                              "Wide-ResNet of the authors' layout")
    n = counts[1]
    width, rem = divmod(state["f.layer1.0.conv1.weight"].shape[0], 16)
    if rem:
        raise CheckpointError("the first residual group's width is not a multiple of 16: not a Wide-ResNet")
    norm_keys = {k.rsplit(".", 1)[1] for k in state if k.startswith("f.layer1.0.bn1.")}
    if not norm_keys:
        found = "none"
    elif "running_mean" in norm_keys:
        found = "batch"
    elif norm_keys == {"weight", "bias"}:
        found = None  # instance or layer
    else:
        raise CheckpointError(f"unknown normalisation layer with parameters {sorted(norm_keys)} (fastjem knows none, "
                              "batch, instance and layer; the authors' 'act' norm is not supported)")
    if found is None and norm not in ("instance", "layer"):
        raise ConfigError("the network's norm layers hold a weight and a bias only: instance norm or layer norm, "
                          "which a state dict cannot tell apart; give --norm instance or --norm layer (the "
                          "--norm the authors trained with)")
    if found is not None and norm is not None and norm != found:
        has = " has no norm layers" if found == "none" else "'s norm layers are batch norm (with running statistics)"
        raise ConfigError(f"--norm {norm} was given, but the network{has}: drop --norm, which is needed only for "
                          "instance or layer norm")
    return {"depth": 6 * n + 4, "width": width, "norm": found or norm,
            "num_classes": state["class_output.weight"].shape[0], "channels": state["f.conv1.weight"].shape[1],
            "features": state["class_output.weight"].shape[1]}


def jem_to_fastjem_state(state: dict, arch: dict) -> dict:
    """The authors' CCF state dict renamed to fastjem's WideResNet; their unused heads are dropped."""
    n = (arch["depth"] - 4) // 6
    out = {}
    for key, value in state.items():
        if key.startswith(("f.linear.", "energy_output.")):
            continue
        m = _BLOCK.fullmatch(key)
        if m:
            group, index, part, leaf = m.groups()
            out[f"blocks.{(int(group) - 1) * n + int(index)}.{_BLOCK_PARTS[part]}.{leaf}"] = value
        elif key.startswith("f.conv1."):
            out["conv1." + key.removeprefix("f.conv1.")] = value
        elif key.startswith("f.bn1."):
            out["norm." + key.removeprefix("f.bn1.")] = value
        elif key.startswith("class_output."):
            out["fc." + key.removeprefix("class_output.")] = value
        else:
            raise CheckpointError(f"the authors' state dict holds {key!r}, which has no place in the Wide-ResNet")
    return {k: v.float() if v.is_floating_point() else v for k, v in out.items()}


def fastjem_to_jem_state(state: dict, depth: int) -> dict:
    """fastjem's WideResNet state dict under the authors' CCF names, with their two unused heads as zeros (their
    ``load_state_dict`` is strict)."""
    n = (depth - 4) // 6
    parts = {v: k for k, v in _BLOCK_PARTS.items()}
    block = re.compile(r"blocks\.(\d+)\.(norm1|conv1|norm2|conv2|shortcut)\.(.+)")
    out = {}
    for key, value in state.items():
        m = block.fullmatch(key)
        if m:
            index, part, leaf = m.groups()
            group, i = divmod(int(index), n)
            out[f"f.layer{group + 1}.{i}.{parts[part]}.{leaf}"] = value
        elif key.startswith(("conv1.", "norm.", "fc.")):
            head, leaf = key.split(".", 1)
            out[{"conv1": "f.conv1", "norm": "f.bn1", "fc": "class_output"}[head] + "." + leaf] = value
        else:
            raise CheckpointError(f"fastjem state dict key {key!r} has no place in the authors' Wide-ResNet")
    features = state["fc.weight"].shape[1]
    out["f.linear.weight"] = torch.zeros(_THEIR_LINEAR_CLASSES, features)
    out["f.linear.bias"] = torch.zeros(_THEIR_LINEAR_CLASSES)
    out["energy_output.weight"] = torch.zeros(1, features)
    out["energy_output.bias"] = torch.zeros(1)
    return out


def _converted_path(src: Path, out: str | os.PathLike, overwrite: bool) -> Path:
    """Where a conversion of ``src`` may be written: never over ``src`` itself (--force converted the input in
    place, and a second run converted it back)."""
    out = output_path(out, (".pt",), "the converted checkpoint", overwrite)
    if out.exists() and src.exists() and os.path.samefile(out, src):
        raise ConfigError(f"--out {out} is the file being converted: give the converted checkpoint another name")
    return out


def import_jem(path: str | os.PathLike, out: str | os.PathLike | None = None, *, dataset: str | None = None,
               norm: str | None = None, classifier_only: bool = False, data_dir: str = "",
               overwrite: bool = False) -> dict:
    """Write the authors' checkpoint at ``path`` as a fastjem checkpoint (default ``<name>-fastjem.pt`` beside it).

    The result evaluates (``fastjem eval``), samples from its replay buffer (``fastjem sample``), exports, and starts
    new runs (``fastjem train --init-weights``); it holds no optimiser or RNG state, so it cannot be resumed.
    ``dataset`` defaults to cifar10 (cifar100 for a 100-class network); the config is the paper preset's.
    ``classifier_only`` records a network trained without the generative term (its buffer is then left out)."""
    from fastjem.models.wrn import WideResNet

    src = Path(path)
    out = _converted_path(src, out if out is not None else src.with_name(f"{src.stem}-fastjem.pt"), overwrite)
    jem = read_jem(src)
    arch = describe_jem(jem["state"], norm)
    if dataset is None:
        dataset = "cifar100" if arch["num_classes"] == 100 else "cifar10"
    if dataset not in JEM_DATASETS:
        raise ConfigError(f"--dataset must be one the authors' code trains on ({', '.join(JEM_DATASETS)}), got "
                          f"{dataset!r}")
    info = JEM_DATASETS[dataset]
    if (arch["num_classes"], arch["channels"]) != (info.num_classes, info.channels):
        fits = [name for name, d in JEM_DATASETS.items() if (d.num_classes, d.channels) == (arch["num_classes"],
                                                                                            arch["channels"])]
        # the datasets it may be, or none: the authors' code trains on these alone (a 3-class network is none)
        todo = (f"give the --dataset it was trained on: {' or '.join(f'--dataset {f}' for f in fits)}" if fits else
                "none of the datasets the authors' code trains on matches it, so fastjem cannot import it ("
                + ", ".join(f"{n}: {d.num_classes} classes" for n, d in JEM_DATASETS.items()) + ")")
        raise ConfigError(f"the network has {arch['num_classes']} classes and {arch['channels']} input channels; "
                          f"{dataset} has {info.num_classes} and {info.channels}: {todo}")
    net = WideResNet(arch["depth"], arch["width"], arch["num_classes"], arch["channels"], arch["norm"])
    try:
        net.load_state_dict(jem_to_fastjem_state(jem["state"], arch))
    except RuntimeError as err:
        raise CheckpointError(f"{src} does not fit a WRN-{arch['depth']}-{arch['width']} of the authors' layout: "
                              f"{str(err).splitlines()[0]}") from err
    cfg = get_preset("paper").replace(dataset=dataset, depth=arch["depth"], width=arch["width"], norm=arch["norm"],
                                      data_dir=str(data_dir or ""))
    if classifier_only:
        cfg = cfg.replace(px_weight=0.0)
    buffer = jem["buffer"] if not classifier_only else None
    ckpt = {"format": FORMAT, "version": VERSION, "iteration": 0, "model": net.state_dict(),
            "dataset": asdict(info), "history": [], "best": None, "custom": {"model": None, "data": False},
            "imported": {"from": str(src.resolve()), "code": "github.com/wgrathwohl/JEM (train_wrn_ebm.py, CCF)"}}
    if buffer is not None:
        buffer = buffer.detach().float().contiguous()
        shape = (arch["channels"], info.image_size, info.image_size)
        if buffer.dim() != 4 or tuple(buffer.shape[1:]) != shape:
            raise CheckpointError(f"{src}: the replay buffer has shape {tuple(buffer.shape)}, not [N, {shape[0]}, "
                                  f"{shape[1]}, {shape[2]}] ({dataset} images)")
        if not torch.isfinite(buffer).all():
            raise CheckpointError(f"{src}: the replay buffer holds NaN or infinite values (a diverged run); pass "
                                  "--classifier-only to import the network without it")
        cfg = cfg.replace(buffer_size=len(buffer))
        ckpt["buffer"] = {"data": buffer, "size": len(buffer), "num_classes": None, "reinit_prob": cfg.reinit_prob}
    ckpt["config"] = cfg.validate(new_run=False).to_dict()  # the authors' run, not one about to start
    atomic_save(ckpt, out)
    return {"path": str(out), "model": cfg.model_name, "depth": cfg.depth, "width": cfg.width, "norm": arch["norm"],
            "dataset": dataset, "num_classes": arch["num_classes"],
            "buffer": None if buffer is None else tuple(buffer.shape),
            "params": sum(p.numel() for p in net.parameters())}


def export_jem(checkpoint: str | os.PathLike, out: str | os.PathLike | None = None, overwrite: bool = False) -> dict:
    """Write a fastjem checkpoint (or a run folder's) in the authors' format, loadable by their scripts with
    ``--load_path`` (default ``<checkpoint name>-jem.pt`` beside it). Their network is a 3-channel WRN on 32 x 32
    images; the replay buffer goes along when the run has one."""
    try:
        ckpt = load_checkpoint(checkpoint)
    except CheckpointError as err:
        # a file holding more than tensors and plain values (an authors' file that also saved their args, or a
        # crafted one) was refused unread, never unpickled: said with what convert needs of an authors' file
        path = Path(checkpoint)
        path = path / "checkpoint.pt" if path.is_dir() else path
        extra = beyond_tensors(path) if path.is_file() else ""
        if not extra:
            raise
        raise CheckpointError(f"{path} holds more than tensors ({extra}): not a checkpoint fastjem writes, and "
                              "fastjem reads the authors' checkpoints as tensors only (weights_only=True), so it is "
                              "not unpickled; if it is the authors' and you trust it, save its 'model_state_dict' and "
                              "'replay_buffer' alone with torch.save, then convert that") from err
    src = Path(ckpt["path"])
    cfg = TrainConfig.from_dict(ckpt["config"])
    info = ckpt.get("dataset") or {}
    if (ckpt.get("custom") or {}).get("model") or cfg.arch != "wrn":
        raise ConfigError(f"{src} holds a {(ckpt.get('custom') or {}).get('model') or cfg.model_name}: the authors' "
                          "code has the Wide-ResNet only")
    if (info.get("channels"), info.get("image_size")) != (3, 32):
        raise ConfigError(f"{src} was trained on {info.get('channels')}-channel {info.get('image_size')}-pixel images; "
                          "the authors' network takes 3-channel 32 x 32 images (its final pool is avg_pool2d(8))")
    out = _converted_path(src, out if out is not None else src.with_name(f"{src.stem}-jem.pt"), overwrite)
    state = fastjem_to_jem_state({k: v.detach().cpu() for k, v in ckpt["model"].items()}, cfg.depth)
    # a data-parallel run's checkpoint holds each rank's shard of the buffer
    shards = [r["buffer"] for r in ckpt["ranks"]] if "ranks" in ckpt else [ckpt.get("buffer")]
    buffer = None
    if cfg.generative and all(s is not None for s in shards):
        data = [s["data"].detach().cpu().float() for s in shards]
        k = shards[0].get("num_classes")
        if k:  # class-conditional: K blocks each; their code draws class y from the y-th K-th of the whole buffer
            data = [d.view(k, -1, *d.shape[1:])[y] for y in range(k) for d in data]
        buffer = torch.cat(data)
    atomic_save({"model_state_dict": state, "replay_buffer": buffer if buffer is not None else torch.empty(0)}, out)
    return {"path": str(out), "model": cfg.model_name, "norm": cfg.norm, "iteration": int(ckpt["iteration"]),
            "num_classes": int(state["class_output.weight"].shape[0]),
            "buffer": None if buffer is None else tuple(buffer.shape)}
