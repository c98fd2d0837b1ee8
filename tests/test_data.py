import os
import re
import shutil
import warnings

import numpy as np
import pytest
import torch
from kernel_utils import assert_gaussian_moments
from PIL import Image

from fastjem.data import DeviceData, augment, load_arrays, to_float
from fastjem.errors import DataNotFoundError


def test_the_torchvision_sets_become_arrays_with_their_layout_and_defaults(tmp_path, monkeypatch):
    """What torchvision's CIFAR and SVHN classes hand over (stand-ins here: the real ones need the published files)
    becomes uint8 NCHW arrays (CIFAR's NHWC permuted), int64 labels and each set's defaults: 10 or 100 classes, 3 x
    32 x 32, crop padding 4, flips for CIFAR but not for SVHN's digits, 5000 validation images, the class names."""
    import numpy as np
    import torchvision

    from fastjem.data import DatasetInfo

    class FakeSVHN:
        def __init__(self, root, split, download):
            n = 6 if split == "train" else 4
            self.data = np.full((n, 3, 32, 32), 7 if split == "train" else 9, np.uint8)
            self.labels = np.arange(n) % 10

    class FakeCIFAR:
        classes = [f"class{k}" for k in range(10)]

        def __init__(self, root, train, download):
            n = 5 if train else 3
            self.data = np.zeros((n, 32, 32, 3), np.uint8) + np.arange(3, dtype=np.uint8)  # channel c holds c
            self.targets = [k % 10 for k in range(n)]

    class FakeCIFAR100(FakeCIFAR):
        classes = [f"class{k}" for k in range(100)]

    monkeypatch.setattr(torchvision.datasets, "SVHN", FakeSVHN)
    monkeypatch.setattr(torchvision.datasets, "CIFAR10", FakeCIFAR)
    monkeypatch.setattr(torchvision.datasets, "CIFAR100", FakeCIFAR100)
    svhn = load_arrays("svhn", tmp_path)
    assert svhn.info == DatasetInfo("svhn", 10, 3, 32, 4, False, 5000, tuple("0123456789"))
    assert svhn.train_x.shape == (6, 3, 32, 32) and svhn.test_x.shape == (4, 3, 32, 32)
    assert int(svhn.train_x.max()) == 7 and int(svhn.test_x.min()) == 9
    assert svhn.train_y.dtype == torch.int64 and svhn.train_y.tolist() == [0, 1, 2, 3, 4, 5]
    # SVHN's train_32x32.mat beside an archive of something else: still SVHN, the archive not taken for images
    (tmp_path / "svhn").mkdir()
    (tmp_path / "svhn" / "train_32x32.mat").write_bytes(b"")
    (tmp_path / "svhn" / "notes.zip").write_bytes(b"PK\x05\x06" + bytes(18))  # an empty zip
    assert torch.equal(load_arrays("svhn", tmp_path / "svhn").train_x, svhn.train_x)
    for name, k in (("cifar10", 10), ("cifar100", 100)):
        a = load_arrays(name, tmp_path)
        assert a.info == DatasetInfo(name, k, 3, 32, 4, True, 5000, tuple(f"class{i}" for i in range(k)))
        assert a.train_x.shape == (5, 3, 32, 32) and a.test_x.shape == (3, 3, 32, 32) and a.train_x.is_contiguous()
        assert all(int(a.train_x[:, c].min()) == int(a.train_x[:, c].max()) == c for c in range(3))
        assert a.test_y.dtype == torch.int64 and a.test_y.tolist() == [0, 1, 2]

    class Offline(FakeSVHN):
        def __init__(self, root, split, download):
            raise RuntimeError("no route to host" if download else "Dataset not found or corrupted.")

    monkeypatch.setattr(torchvision.datasets, "SVHN", Offline)
    with pytest.raises(DataNotFoundError) as missing:
        load_arrays("svhn", tmp_path)
    assert "svhn was not found in" in str(missing.value) and "download failed" not in str(missing.value)
    with pytest.raises(DataNotFoundError, match=r"\(download failed: no route to host\)") as failed:
        load_arrays("svhn", tmp_path, download=True)
    # --download given: not told to add it, but what failing says (no internet here?) and what to do offline
    assert "add --download" not in str(failed.value)
    assert "the download failed (below): with no internet here, fetch the files on a machine" in str(failed.value)


def test_digits_are_scikit_learns_read_without_importing_it(monkeypatch):
    """The digits come from the file scikit-learn ships, read without importing scikit-learn (0.95 s of a short
    run's start): the same images and labels as ``load_digits``; where the file is not found, ``load_digits`` gives
    the same arrays."""
    import subprocess
    import sys

    from sklearn.datasets import load_digits

    import fastjem.data as data

    digits = load_digits()
    images, target = data._digits_csv()
    assert np.array_equal(images, digits.images) and np.array_equal(target, digits.target)
    read = load_arrays("digits")
    monkeypatch.setattr(data, "_digits_csv", lambda: None)
    loaded = load_arrays("digits")
    for key in ("train_x", "train_y", "test_x", "test_y"):
        assert torch.equal(getattr(read, key), getattr(loaded, key)), key
    code = "import sys; from fastjem.data import load_arrays; load_arrays('digits'); print('sklearn' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "False", out.stdout + out.stderr


def test_digits_splits_are_fixed_and_disjoint():
    a = load_arrays("digits")
    assert a.train_x.dtype == torch.uint8 and a.train_x.shape[1:] == (1, 8, 8)
    assert len(a.train_y) + len(a.test_y) == 1797
    # scikit-learn's 0..16 ink levels spread over the whole 0..255 range; ten classes named 0-9, no flips (a
    # mirrored digit is another glyph), no crop padding on 8 pixels
    assert set(a.train_x.unique().tolist()) == {round(k * 255 / 16) for k in range(17)}  # 0, 16, 32, ..., 255
    assert a.info.classes == tuple("0123456789") and a.info.num_classes == 10
    assert not a.info.flip and a.info.pad == 0 and a.info.default_val_size == 180
    # the validation split and the labelled subset are fixed: the same whatever the run's seed
    torch.manual_seed(1)
    d1 = DeviceData(a, torch.device("cpu"), labels_per_class=10)
    torch.manual_seed(2)
    d2 = DeviceData(load_arrays("digits"), torch.device("cpu"), labels_per_class=10)
    assert len(d1.val_y) == 180 and d1.n_train == 1797 - 360 - 180
    assert torch.equal(d1.val_x, d2.val_x) and torch.equal(d1.train_x, d2.train_x)
    assert len(d1.labelled) == 100 and torch.equal(d1.labelled, d2.labelled)
    # No validation image appears in the training split.
    train_rows = {bytes(r.numpy()) for r in d1.train_x.flatten(1)}
    dup = sum(bytes(r.numpy()) in train_rows for r in d1.val_x.flatten(1))
    assert dup <= 2  # digits has a couple of exact duplicate images; a leaked split would give 180


def _class_coded_arrays(y: torch.Tensor, n_train: int, pad: int = 1):
    """8x8 images whose first channel holds their class (25 * label) and second their index (mod 256), labels ``y``
    (classes 0 .. max), the first ``n_train`` for training and the rest for test."""
    from fastjem.data import arrays_from_tensors

    n = len(y)
    x = torch.stack([y * 25, torch.arange(n) % 256, torch.zeros(n, dtype=torch.long)], 1).to(torch.uint8)
    x = x[:, :, None, None].expand(n, 3, 8, 8).contiguous()
    return arrays_from_tensors(x[:n_train], y[:n_train], x[n_train:], y[n_train:],
                               classes=[str(k) for k in range(int(y.max()) + 1)], pad=pad)


def _four_classes():
    """40 training images, 10 of each of 4 classes, and 10 test images."""
    return _class_coded_arrays(torch.arange(50) % 4, 40)


def test_each_labelled_image_is_drawn_with_its_own_label():
    """draw pairs x_lab with the label of the same training image (and x_p is drawn apart from it): images whose
    first channel encodes their class and second their index, drawn through the crops and flips, give back the
    labels drawn with them; with --labels-per-class, x_lab comes from the labelled subset only."""
    y = torch.randint(0, 10, (300,), generator=torch.Generator().manual_seed(0))
    arrays = _class_coded_arrays(y, 250, pad=2)
    for per_class in (-1, 3):
        data = DeviceData(arrays, torch.device("cpu"), val_size=0, labels_per_class=per_class, data_noise=0.0)
        x_p, x_lab, y_lab = data.draw(512, torch.Generator().manual_seed(1))
        code = ((x_lab + 1) * 255 / 2).round().long()
        assert torch.equal(code.amin((2, 3)), code.amax((2, 3)))  # still one value per image and channel
        assert torch.equal(code[:, 0, 0, 0] // 25, y_lab)
        assert not torch.equal(x_p, x_lab)
        allowed = set(data.train_x[data.labelled][:, 1, 0, 0].tolist())
        assert set(code[:, 1, 0, 0].tolist()) <= allowed and len(allowed) == (250 if per_class < 0 else 30)
    # a data-parallel rank keeps its shard of the global batch that the same generator state draws
    whole = data.draw(8, torch.Generator().manual_seed(2))
    part = data.draw(8, torch.Generator().manual_seed(2), shard=slice(2, 4))
    assert all(torch.equal(p, w[2:4]) for p, w in zip(part, whole))


def test_batches_draw_every_training_image_and_every_labelled_one_uniformly():
    """draw_indices: x_p's indices uniform over the whole training split, x_lab's over the labelled subset (with
    replacement; a chi-square test over 40 000 draws each, so a skipped first or last image fails)."""
    from scipy.stats import chisquare

    data = DeviceData(_four_classes(), torch.device("cpu"), val_size=0, labels_per_class=5, data_noise=0.0)
    assert data.n_train == 40 and len(data.labelled) == 20
    gen = torch.Generator().manual_seed(0)
    ip, il = zip(*(data.draw_indices(4000, gen) for _ in range(10)))
    ip, il = torch.cat(ip), torch.cat(il)
    counts = torch.bincount(ip, minlength=40)
    assert len(counts) == 40 and chisquare(counts.numpy()).pvalue > 1e-4, counts
    assert set(il.tolist()) <= set(data.labelled.tolist())
    counts = torch.bincount(il, minlength=40)[data.labelled]
    assert chisquare(counts.numpy()).pvalue > 1e-4, counts


def test_labels_per_class_may_take_all_of_a_class():
    """--labels-per-class up to the smallest class's training images: all of them labelled; one more is refused,
    naming the class."""
    arrays = _four_classes()  # 10 training images per class
    data = DeviceData(arrays, torch.device("cpu"), val_size=0, labels_per_class=10)
    assert sorted(data.labelled.tolist()) == list(range(40))
    with pytest.raises(DataNotFoundError, match=r"--labels-per-class 11: 4 class\(es\) have fewer training images "
                                                r"\(after the validation split\): .*\(10\), .*\(10\), .*\(10\), "
                                                r".*\(10\); give at most 10, or -1"):
        DeviceData(arrays, torch.device("cpu"), val_size=0, labels_per_class=11)


def test_without_augmentation_the_training_images_get_their_noise_alone():
    """--no-augment: no crop, no flip, the images plus N(0, data_noise^2) (JEM's data noise), nothing with noise 0."""
    data = DeviceData(_four_classes(), torch.device("cpu"), val_size=0, augment=False, data_noise=0.03)
    x_u8 = data.train_x.repeat(50, 1, 1, 1)
    diff = data.prepare(x_u8, torch.Generator().manual_seed(0)) - to_float(x_u8)
    assert_gaussian_moments(diff, 0.03)
    data.data_noise = 0.0
    assert torch.equal(data.prepare(x_u8, torch.Generator().manual_seed(0)), to_float(x_u8))


def test_the_training_data_order_follows_the_seed(tiny_config, tmp_path):
    """The batches a run draws come from its own generator seeded by --seed: the same seed, the same batches;
    another seed, other batches (the splits stay fixed either way)."""
    from fastjem.train import Trainer

    draws = {}
    for name, seed in (("a", 3), ("b", 3), ("c", 4)):
        t = Trainer(tiny_config.replace(seed=seed), out_dir=tmp_path / name, progress=False)
        torch.manual_seed(0)  # the global stream is not what orders the data
        draws[name] = t.data.draw(16, t.data_gen)
    assert all(torch.equal(u, v) for u, v in zip(draws["a"], draws["b"]))
    assert not torch.equal(draws["a"][2], draws["c"][2]) and not torch.equal(draws["a"][0], draws["c"][0])


def test_to_float_range():
    x = torch.tensor([0, 255], dtype=torch.uint8)
    assert to_float(x).tolist() == [-1.0, 1.0]


def test_random_crop_is_a_window_of_the_reflect_padded_image():
    torch.manual_seed(0)
    x = torch.randn(64, 2, 6, 6)
    out = augment(x, pad=2, flip=False, noise=0.0)
    padded = torch.nn.functional.pad(x, (2, 2, 2, 2), mode="reflect")
    offsets = set()
    for i in range(64):
        hits = [(oy, ox) for oy in range(5) for ox in range(5)
                if torch.equal(out[i], padded[i, :, oy:oy + 6, ox:ox + 6])]
        assert hits, f"image {i} is not a crop"
        offsets.update(hits)
    assert len(offsets) > 10  # crops vary
    # a pad of one crops too, at all 3 x 3 shifts
    out = augment(x, pad=1, flip=False, noise=0.0)
    padded = torch.nn.functional.pad(x, (1, 1, 1, 1), mode="reflect")
    shifts = {next((oy, ox) for oy in range(3) for ox in range(3) if torch.equal(out[i], padded[i, :, oy:oy + 6,
                                                                                               ox:ox + 6]))
              for i in range(64)}
    assert len(shifts) == 9


def test_crop_shifts_are_uniform_over_all_of_the_padding():
    """Each of the 2 pad + 1 shifts on each axis is drawn equally often, the outermost ones included, and the two
    axes independently (chi-square tests, alpha 1e-4)."""
    from scipy.stats import chisquare

    torch.manual_seed(1)
    n, pad, size = 3000, 2, 6
    x = torch.randn(n, 1, size, size)
    out = augment(x, pad=pad, flip=False, noise=0.0)
    padded = torch.nn.functional.pad(x, (pad,) * 4, mode="reflect")
    shifts = 2 * pad + 1
    counts = torch.zeros(shifts, shifts)
    for oy in range(shifts):
        for ox in range(shifts):
            window = padded[:, :, oy:oy + size, ox:ox + size]
            counts[oy, ox] = (out == window).flatten(1).all(1).sum()
    assert counts.sum() == n  # every image is one window of its padded self
    for observed in (counts.sum(1), counts.sum(0), counts.flatten()):
        assert chisquare(observed.numpy()).pvalue > 1e-4, observed


def test_device_data_built_without_options_augments_with_jems_noise():
    """DeviceData(arrays, device): the dataset's default validation split, all labels, augmentation on, and
    the training images' N(0, 0.03^2) noise (what TrainConfig gives a run)."""
    from fastjem.config import TrainConfig

    data = DeviceData(load_arrays("digits"), torch.device("cpu"))
    assert data.augment_enabled is TrainConfig().augment is True
    assert data.data_noise == TrainConfig().data_noise == 0.03
    assert len(data.val_y) == 180 and len(data.labelled) == len(data.train_y)


def test_device_data_draws_augmented_batches_unless_told_not_to():
    """draw's images are the drawn training images cropped (padded 2, shifted up to 2 pixels), flipped and noised;
    with augmentation off, the images themselves plus the noise only."""
    from fastjem.data import arrays_from_tensors

    x = torch.randint(0, 256, (600, 3, 8, 8), dtype=torch.uint8, generator=torch.Generator().manual_seed(0))
    y = torch.arange(600) % 3
    arrays = arrays_from_tensors(x, y, x[:30], y[:30], pad=2, flip=True)
    for aug, noise in ((True, 0.0), (False, 0.0), (False, 0.03)):
        data = DeviceData(arrays, torch.device("cpu"), augment=aug, data_noise=noise)
        g = torch.Generator().manual_seed(1)
        ip, il = data.draw_indices(512, torch.Generator().manual_seed(1))
        x_p, x_lab, y_lab = data.draw(512, g)
        assert torch.equal(y_lab, data.train_y[il])
        for drawn, idx in ((x_p, ip), (x_lab, il)):
            plain = to_float(data.train_x[idx])
            same = (drawn == plain).flatten(1).all(1).float().mean().item()
            if aug:
                assert same < 0.1, same  # 1 in 50 crops and flips is the image itself
            elif noise:
                assert same == 0 and abs((drawn - plain).std().item() - noise) < 0.002
            else:
                assert same == 1


def test_flip_happens_about_half_the_time_and_noise_has_the_right_std():
    torch.manual_seed(0)
    x = torch.randn(4000, 1, 4, 4)
    out = augment(x, pad=0, flip=True, noise=0.0)
    flipped = (out == x.flip(3)).flatten(1).all(1)
    same = (out == x).flatten(1).all(1)
    assert bool((flipped | same).all())
    assert abs(flipped.float().mean().item() - 0.5) < 0.04
    noisy = augment(x, pad=0, flip=False, noise=0.03)
    assert abs((noisy - x).std().item() - 0.03) < 0.001


def _write_folder(root, classes=("a", "b"), n=6, size=8):
    rng = np.random.default_rng(0)
    for c in classes:
        (root / c).mkdir(parents=True)
        for i in range(n):
            Image.fromarray(rng.integers(0, 255, (size, size, 3), dtype=np.uint8)).save(root / c / f"{i}.png")


def test_a_folder_of_one_class_is_named_as_such(tmp_path):
    """One class trains nothing of the classifier (p(y|x) = 1): said, not silent; two classes are not warned of."""
    _write_folder(tmp_path / "one", classes=("cats",))
    with pytest.warns(UserWarning, match=r"has one class \('cats'\): classification is trivial"):
        a = load_arrays("imagefolder", tmp_path / "one")
    assert a.info.num_classes == 1
    # a folder a level too high (the one an archive unpacked to, holding train/ and test/): where to point, said
    _write_folder(tmp_path / "high" / "CIFAR-10-images" / "train", ("a", "b"), n=3)
    _write_folder(tmp_path / "high" / "CIFAR-10-images" / "test", ("a", "b"), n=1)
    inner = tmp_path / "high" / "CIFAR-10-images"
    with pytest.warns(UserWarning, match=rf"has one class \('CIFAR-10-images'\): .*; {re.escape(str(inner))} holds "
                                         r"test/, train/: if those are the classes \(or train/ and test/\), give "
                                         rf"--data-dir {re.escape(str(inner))}$"):
        load_arrays("imagefolder", tmp_path / "high")
    with pytest.warns(UserWarning, match=r"per class$"):  # no folders inside 'cats': nothing more to say
        load_arrays("imagefolder", tmp_path / "one")
    _write_folder(tmp_path / "two")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_arrays("imagefolder", tmp_path / "two")


def test_imagefolder_is_decoded_once_and_cached(tmp_path, monkeypatch):
    _write_folder(tmp_path / "imgs")
    a = load_arrays("imagefolder", tmp_path / "imgs")
    assert a.info.num_classes == 2 and a.train_x.shape[1:] == (3, 8, 8)
    assert len(a.train_y) + len(a.test_y) == 12

    def no_decode(*args, **kwargs):
        raise AssertionError("decoded again instead of using the cache")

    monkeypatch.setattr("fastjem.data._decode_splits", no_decode)
    b = load_arrays("imagefolder", tmp_path / "imgs")
    assert torch.equal(a.train_x, b.train_x)


def test_a_damaged_cache_is_decoded_again_and_one_folder_has_one_cache(tmp_path, monkeypatch):
    """Bytes of the cache changed on disk (same size): torch.load read them without a check and training ran on
    wrong pixels. Now the checksum finds it and the folder is decoded again, also where the damaged file cannot
    be removed (a read-only cache folder failed the run). A folder given relative or absolute is one cache."""
    import os
    from pathlib import Path

    from fastjem.data import cache_dir

    monkeypatch.setenv("FASTJEM_CACHE", str(tmp_path / "cache"))  # this test's caches only
    _write_folder(tmp_path / "imgs")
    fresh = load_arrays("imagefolder", tmp_path / "imgs")
    (cache,) = cache_dir().glob("imagefolder-*.pt")
    data = bytearray(cache.read_bytes())
    data[len(data) // 2: len(data) // 2 + 64] = bytes(64)
    cache.write_bytes(bytes(data))
    real_unlink = Path.unlink

    def read_only(self, missing_ok=False):
        if self.parent == cache_dir():
            raise OSError(30, "Read-only file system", str(self))
        return real_unlink(self, missing_ok)

    monkeypatch.setattr(Path, "unlink", read_only)
    again = load_arrays("imagefolder", tmp_path / "imgs")
    assert torch.equal(again.train_x, fresh.train_x) and torch.equal(again.test_x, fresh.test_x)
    monkeypatch.setattr(Path, "unlink", real_unlink)

    def no_decode(*args, **kwargs):
        raise AssertionError("decoded again instead of using the cache")

    monkeypatch.setattr("fastjem.data._decode_splits", no_decode)
    monkeypatch.chdir(tmp_path)
    assert torch.equal(load_arrays("imagefolder", "imgs").train_x, fresh.train_x)
    assert torch.equal(load_arrays("imagefolder", Path(os.getcwd()) / "imgs").train_x, fresh.train_x)
    assert len(list(cache_dir().glob("imagefolder-*.pt"))) == 1


def test_decoding_bars_follow_progress(tmp_path, capsys):
    """--no-progress (progress=False) hides the bars of an image folder's first decoding, as it does training's."""
    _write_folder(tmp_path / "imgs")
    load_arrays("imagefolder", tmp_path / "imgs", progress=False)
    assert "decoding" not in capsys.readouterr().err
    (tmp_path / "imgs" / "a" / "extra.png").write_bytes((tmp_path / "imgs" / "a" / "0.png").read_bytes())
    load_arrays("imagefolder", tmp_path / "imgs")  # a changed folder: decoded again, with its bars
    assert "decoding" in capsys.readouterr().err


def test_cifar10_from_a_train_test_image_folder(tmp_path):
    classes = [f"c{i}" for i in range(10)]
    _write_folder(tmp_path / "cifar" / "train", classes, n=2, size=32)
    _write_folder(tmp_path / "cifar" / "test", classes, n=1, size=32)
    a = load_arrays("cifar10", tmp_path / "cifar")
    assert a.info.name == "cifar10" and a.info.pad == 4 and a.info.flip
    assert a.train_x.shape == (20, 3, 32, 32) and a.test_x.shape == (10, 3, 32, 32)
    # a subset of CIFAR-10 holds out a tenth of its training images, not the full set's 5000 (which refused it, or
    # left a few hundred of 5500 to train on); a --val-size too large says how to choose one
    from fastjem.data import validation_size

    assert a.info.default_val_size == 2 and validation_size(a.info, 20) == 2
    with pytest.raises(DataNotFoundError, match=r"--val-size 20 leaves no training data \(20 training images\): give "
                                                r"a smaller --val-size \(e.g. 2; 0 for none\)"):
        validation_size(a.info, 20, 20)
    svhn = load_arrays("svhn", tmp_path / "cifar")
    assert svhn.info.name == "svhn" and not svhn.info.flip
    # the torchvision layout's 4-pixel crop padding at 32 pixels, scaled with --image-size, never below 1
    assert load_arrays("cifar10", tmp_path / "cifar", image_size=16).info.pad == 2
    assert load_arrays("cifar10", tmp_path / "cifar", image_size=8).info.pad == 1
    # ten class folders are not CIFAR-100: refused, not trained on as a 10-class "cifar100"
    with pytest.raises(DataNotFoundError, match=r"cifar100 has 100 classes, but .* holds 10 \(c0, c1.*--dataset it"):
        load_arrays("cifar100", tmp_path / "cifar")
    # evaluation cannot choose another dataset: its advice names the folder option only
    with pytest.raises(DataNotFoundError, match=r"point --ood-data-dir at the cifar100 data$"):
        load_arrays("cifar100", tmp_path / "cifar", flag="--ood-data-dir", choose_dataset=False)


def test_cifar10_class_names_are_not_taken_for_another_dataset(tmp_path):
    """A folder of CIFAR-10's classes given as svhn (an OOD set read from the wrong folder, say) is refused: only
    the class count would otherwise be checked, and the report would call CIFAR-10 SVHN."""
    from fastjem.data import CIFAR10_CLASSES

    _write_folder(tmp_path / "c10" / "train", list(CIFAR10_CLASSES), n=1, size=32)
    _write_folder(tmp_path / "c10" / "test", list(CIFAR10_CLASSES), n=1, size=32)
    assert load_arrays("cifar10", tmp_path / "c10").info.classes == CIFAR10_CLASSES
    with pytest.raises(DataNotFoundError, match=r"holds CIFAR-10's classes \(airplane, .*not svhn's: point --data-dir"):
        load_arrays("svhn", tmp_path / "c10")


def test_a_folder_of_other_classes_is_refused_as_a_named_dataset_before_decoding(tmp_path, monkeypatch):
    """CIFAR-10's train/ and test/ folders given as cifar100 (or as svhn): refused from their class folders, before any
    image is decoded (its 60 000 images were decoded to be refused)."""
    import fastjem.data as data_mod
    from fastjem.data import CIFAR10_CLASSES

    _write_folder(tmp_path / "c10" / "train", list(CIFAR10_CLASSES), n=1, size=4)
    _write_folder(tmp_path / "c10" / "test", list(CIFAR10_CLASSES), n=1, size=4)
    monkeypatch.setattr(data_mod, "_decode_many", lambda *a, **k: pytest.fail("decoded before it was refused"))
    with pytest.raises(DataNotFoundError, match=r"cifar100 has 100 classes, but .* holds 10 \(airplane, "):
        load_arrays("cifar100", tmp_path / "c10")
    with pytest.raises(DataNotFoundError, match=r"holds CIFAR-10's classes \(airplane, .*not svhn's"):
        load_arrays("svhn", tmp_path / "c10")


@pytest.mark.parametrize("fmt", ["gztar", "zip"])
def test_archives_of_other_classes_are_refused_as_a_named_dataset_before_decoding(tmp_path, monkeypatch, fmt):
    """CIFAR-10's JPEG tarballs (train/<class>/ and test/<class>/ archives) given as cifar100 (or as svhn): refused
    from their members' names, before any image is decoded (its 60 000 images were decoded to be refused); archives
    of the named set's classes still load."""
    import fastjem.data as data_mod
    from fastjem.data import CIFAR10_CLASSES

    monkeypatch.setenv("FASTJEM_CACHE", str(tmp_path / "cache"))
    _write_folder(tmp_path / "c10" / "train", list(CIFAR10_CLASSES), n=1, size=4)
    _write_folder(tmp_path / "c10" / "test", list(CIFAR10_CLASSES), n=1, size=4)
    (tmp_path / "packed").mkdir()
    ext = "zip" if fmt == "zip" else "tar.gz"
    _archive(tmp_path / "c10" / "train", tmp_path / "packed" / f"cifar10-train.{ext}", "train/", fmt)
    _archive(tmp_path / "c10" / "test", tmp_path / "packed" / f"cifar10-test.{ext}", "test/", fmt)
    real = data_mod._decode_many
    monkeypatch.setattr(data_mod, "_decode_many", lambda *a, **k: pytest.fail("decoded before it was refused"))
    with pytest.raises(DataNotFoundError, match=r"cifar100 has 100 classes, but .*packed holds 10 \(airplane, .*give "
                                                r"the --dataset it holds"):
        load_arrays("cifar100", tmp_path / "packed")
    with pytest.raises(DataNotFoundError, match=r"holds CIFAR-10's classes \(airplane, .*not svhn's"):
        load_arrays("svhn", tmp_path / "packed")
    monkeypatch.setattr(data_mod, "_decode_many", real)
    a = load_arrays("cifar10", tmp_path / "packed")
    assert a.info.classes == CIFAR10_CLASSES and a.train_x.shape == (10, 3, 4, 4)


@pytest.mark.parametrize("fmt", ["gztar", "zip"])
def test_archives_given_as_a_named_dataset_are_read_once(tmp_path, monkeypatch, fmt):
    """A named dataset's archives were read twice at their first load: a pass that listed the members for the class
    check, then one that read them (a tar's stream decompressed twice: 2 to 4 s more of CIFAR-10's tarballs). One
    pass reads and lists them, refused or loaded; the images are those of the unpacked folder; a cached load reads
    none."""
    import fastjem.data as data_mod

    monkeypatch.setenv("FASTJEM_CACHE", str(tmp_path / "cache"))
    classes = [f"c{i}" for i in range(10)]
    _write_folder(tmp_path / "unpacked" / "train", classes, n=3, size=8)
    _write_folder(tmp_path / "unpacked" / "test", classes, n=1, size=8)
    (tmp_path / "packed").mkdir()
    ext = "zip" if fmt == "zip" else "tar.gz"
    _archive(tmp_path / "unpacked" / "train", tmp_path / "packed" / f"x-train.{ext}", "train/", fmt)
    _archive(tmp_path / "unpacked" / "test", tmp_path / "packed" / f"x-test.{ext}", "test/", fmt)
    real, read = data_mod._archive_members, []
    monkeypatch.setattr(data_mod, "_archive_members", lambda archive: read.append(archive.name) or real(archive))
    with pytest.raises(DataNotFoundError, match="cifar100 has 100 classes"):
        load_arrays("cifar100", tmp_path / "packed", progress=False)
    assert sorted(read) == [f"x-test.{ext}", f"x-train.{ext}"]
    read.clear()
    packed = load_arrays("cifar10", tmp_path / "packed", progress=False)
    assert sorted(read) == [f"x-test.{ext}", f"x-train.{ext}"]
    _same_arrays(packed, load_arrays("cifar10", tmp_path / "unpacked", progress=False))
    read.clear()
    _same_arrays(load_arrays("cifar10", tmp_path / "packed", progress=False), packed)
    assert read == []


@pytest.mark.parametrize("fmt", ["gztar", "zip"])
def test_torchvisions_cifar_download_under_another_name_is_named_with_what_to_do(tmp_path, monkeypatch, fmt):
    """cifar-10-python.tar.gz saved as cifar10.tar.gz (python pickles, not image files) was read as an archive of
    image folders: "no images in class folders inside it". What it is, and what to do, is said, from its members'
    names (a named dataset's before any image is decoded)."""
    import fastjem.data as data_mod

    monkeypatch.setenv("FASTJEM_CACHE", str(tmp_path / "cache"))
    src = tmp_path / "src" / "cifar-10-batches-py"
    src.mkdir(parents=True)
    for name in ("data_batch_1", "test_batch", "batches.meta", "readme.html"):
        (src / name).write_bytes(b"pickled arrays")
    (tmp_path / "data").mkdir()
    ext = "zip" if fmt == "zip" else "tar.gz"
    _archive(tmp_path / "src", tmp_path / "data" / f"cifar10.{ext}", "./", fmt)
    said = (rf"cifar10\.{re.escape(ext)} is torchvision's download of cifar10 \(cifar-10-batches-py/ inside: arrays, "
            r"not image files\) under another name: rename it cifar-10-python\.tar\.gz \(the name --dataset cifar10 "
            r"reads, its checksum checked\) and give --dataset cifar10 with the folder that holds it")
    with pytest.raises(DataNotFoundError, match=said):
        load_arrays("imagefolder", tmp_path / "data")
    monkeypatch.setattr(data_mod, "_decode_many", lambda *a, **k: pytest.fail("decoded before it was refused"))
    with pytest.raises(DataNotFoundError, match=said):
        load_arrays("cifar100", tmp_path / "data")


@pytest.mark.parametrize("name", ["cifar10", "cifar100", "svhn"])
def test_missing_dataset_says_what_to_do(name, tmp_path):
    """A folder that does not exist, or exists empty (made for the data, not yet filled), says where the data goes
    and how to fetch it."""
    (tmp_path / "made").mkdir()
    for folder in (tmp_path / "empty", tmp_path / "made"):
        with pytest.raises(DataNotFoundError) as err:
            load_arrays(name, folder)
        msg = str(err.value)
        assert "--download" in msg and "--data-dir" in msg and f"{name} was not found in {folder}" in msg
        # where the files go: the folder named, or another passed by the option
        assert f" in {folder}, or in a folder of yours and pass --data-dir FOLDER;\n" in msg
        assert "instead" not in msg
    # a folder of another set (cifar-100-python/ where cifar10 is asked for): that set named, beside the advice
    other, its_folder = {"cifar10": ("cifar100", "cifar-100-python"), "cifar100": ("cifar10", "cifar-10-batches-py"),
                         "svhn": ("cifar10", "cifar-10-batches-py")}[name]
    (tmp_path / "other" / its_folder).mkdir(parents=True)
    with pytest.raises(DataNotFoundError) as err:
        load_arrays(name, tmp_path / "other")
    assert f"{name} was not found in" in str(err.value), err.value
    assert f"({tmp_path / 'other'} holds {other} instead: another dataset" in str(err.value), err.value
    # there, but not whole (a copy cut short, a file replaced): said so, not "not found" beside the folder it names
    part = tmp_path / "part"
    first = {"cifar10": "cifar-10-batches-py/data_batch_1", "cifar100": "cifar-100-python/train",
             "svhn": "train_32x32.mat"}[name]
    (part / first).parent.mkdir(parents=True, exist_ok=True)
    (part / first).write_bytes(b"not the published file")
    there = part / first.split("/")[0]
    with pytest.raises(DataNotFoundError, match=rf"{name} in {part} is incomplete or corrupt: {there} is there, but "
                                                r"torchvision cannot read the set"):
        load_arrays(name, part)


def test_an_unknown_dataset_name_lists_the_known_ones(tmp_path):
    """load_arrays is public: a name it does not know (mnist) says which it does, not an unbound local."""
    with pytest.raises(DataNotFoundError, match=r"unknown dataset 'mnist'; choose digits, cifar10, cifar100, svhn or "
                                                r"imagefolder"):
        load_arrays("mnist", tmp_path)


def test_imagefolder_errors(tmp_path):
    with pytest.raises(DataNotFoundError, match="does not exist"):
        load_arrays("imagefolder", tmp_path / "nowhere")
    (tmp_path / "flat").mkdir()
    with pytest.raises(DataNotFoundError, match="class subfolders"):
        load_arrays("imagefolder", tmp_path / "flat")
    (tmp_path / "bare" / "a").mkdir(parents=True)
    (tmp_path / "bare" / "b").mkdir()
    with pytest.raises(DataNotFoundError, match=r"^no images \(.*\) under .*bare$"):  # not each class named empty
        load_arrays("imagefolder", tmp_path / "bare")


def test_to_uint8_inverts_to_float():
    from fastjem.data import to_float, to_uint8

    u8 = torch.arange(256, dtype=torch.uint8)
    assert torch.equal(to_uint8(to_float(u8)), u8)
    assert to_uint8(torch.tensor([-3.0, 5.0])).tolist() == [0, 255]  # clipped first


def _archive(folder, dest, prefix="", fmt="gztar"):
    """``folder``'s contents packed as ``dest`` (tar.gz or zip), under ``prefix/`` inside the archive."""
    import tarfile
    import zipfile

    files = sorted(p for p in folder.rglob("*") if p.is_file())
    if fmt == "zip":
        with zipfile.ZipFile(dest, "w") as zf:
            for p in files:
                zf.write(p, f"{prefix}{p.relative_to(folder)}")
    else:
        with tarfile.open(dest, "w:gz") as tar:
            for p in reversed(files):  # an order unlike the folder's: the loader must sort
                tar.add(p, f"{prefix}{p.relative_to(folder)}")
    return dest


def _same_arrays(a, b):
    assert a.info.classes == b.info.classes and a.info.num_classes == b.info.num_classes
    for k in ("train_x", "train_y", "test_x", "test_y"):
        assert torch.equal(getattr(a, k), getattr(b, k)), k


@pytest.mark.parametrize("fmt", ["gztar", "zip"])
def test_archives_of_train_test_folders_load_as_the_unpacked_folder(tmp_path, fmt):
    classes = ["cat", "dog", "emu", *(f"c{i}" for i in range(7))]  # ten: the named datasets below take it
    _write_folder(tmp_path / "unpacked" / "train", classes, n=4, size=8)
    _write_folder(tmp_path / "unpacked" / "test", classes, n=2, size=8)
    (tmp_path / "packed").mkdir()
    ext = "zip" if fmt == "zip" else "tar.gz"
    # one archive per split, as the JPEG copy of CIFAR-10 ships; members under a prefix folder
    _archive(tmp_path / "unpacked" / "train", tmp_path / "packed" / f"x-train.{ext}", "copy/train/", fmt)
    _archive(tmp_path / "unpacked" / "test", tmp_path / "packed" / f"x-test.{ext}", "copy/test/", fmt)
    folder = load_arrays("imagefolder", tmp_path / "unpacked")
    packed = load_arrays("imagefolder", tmp_path / "packed")
    _same_arrays(packed, folder)
    assert packed.train_x.shape == (40, 3, 8, 8) and packed.test_x.shape == (20, 3, 8, 8)
    cifar = load_arrays("cifar10", tmp_path / "packed")  # the named datasets take such a folder too
    assert cifar.info.name == "cifar10" and torch.equal(cifar.test_x, folder.test_x)


def test_reading_archives_into_a_log_file_writes_no_cursor_escapes(tmp_path, capsys):
    """stderr not a terminal (a job's log): the archive-reading bar, which a terminal shows beside the decoding
    bar, is left out; the two together wrote cursor-up escape codes ("\x1b[A") into the file."""
    classes = [f"c{i}" for i in range(3)]
    _write_folder(tmp_path / "unpacked" / "train", classes, n=2, size=8)
    _write_folder(tmp_path / "unpacked" / "test", classes, n=1, size=8)
    (tmp_path / "packed").mkdir()
    _archive(tmp_path / "unpacked" / "train", tmp_path / "packed" / "x-train.tar.gz", "train/")
    _archive(tmp_path / "unpacked" / "test", tmp_path / "packed" / "x-test.tar.gz", "test/")
    assert load_arrays("imagefolder", tmp_path / "packed", progress=True).train_x.shape[0] == 6
    err = capsys.readouterr().err
    assert "decoding" in err and "\x1b[A" not in err and "reading x-" not in err, repr(err)


def test_data_dir_may_name_one_archive(tmp_path):
    classes = [f"c{i}" for i in range(10)]
    _write_folder(tmp_path / "unpacked" / "train", classes, n=3)
    _write_folder(tmp_path / "unpacked" / "test", classes, n=1)
    archive = _archive(tmp_path / "unpacked", tmp_path / "both.zip", fmt="zip")
    _same_arrays(load_arrays("imagefolder", archive), load_arrays("imagefolder", tmp_path / "unpacked"))
    assert load_arrays("cifar10", archive).info.name == "cifar10"
    with pytest.raises(DataNotFoundError, match="does not exist"):
        load_arrays("imagefolder", tmp_path / "missing.zip")


def test_an_archive_of_class_folders_is_split_as_the_folder_is(tmp_path):
    _write_folder(tmp_path / "unpacked", ("a", "b"), n=6)
    (tmp_path / "packed").mkdir()
    _archive(tmp_path / "unpacked", tmp_path / "packed" / "imgs.tar.gz")
    _same_arrays(load_arrays("imagefolder", tmp_path / "packed"), load_arrays("imagefolder", tmp_path / "unpacked"))
    # members named ./a/0.png, as `tar czf imgs.tar.gz .` names them: "." is no hidden folder; files that are not
    # images and hidden ones (macOS's ._ files and __MACOSX/) are skipped in an archive as in the folder
    (tmp_path / "unpacked" / "a" / "notes.txt").write_text("not an image")
    (tmp_path / "unpacked" / "a" / "._0.png").write_bytes(b"AppleDouble metadata, not a PNG")
    (tmp_path / "unpacked" / "__MACOSX" / "a").mkdir(parents=True)
    (tmp_path / "unpacked" / "__MACOSX" / "a" / "._1.png").write_bytes(b"AppleDouble metadata, not a PNG")
    (tmp_path / "dotted").mkdir()
    _archive(tmp_path / "unpacked", tmp_path / "dotted" / "imgs.tar.gz", prefix="./")
    _same_arrays(load_arrays("imagefolder", tmp_path / "dotted"), load_arrays("imagefolder", tmp_path / "unpacked"))


def test_class_folders_are_read_before_archives_beside_them_and_hidden_folders_are_not_classes(tmp_path):
    """A folder of class folders is read as such, an archive beside it (a backup, say) left alone, which is said (an
    archive of one class beside the other classes' folders: that class was missing without a word); a folder whose
    only subfolder is hidden (.ipynb_checkpoints) has no class folders, so its archive is read, without a warning; a
    stray file is not an archive, nor a hidden one named as an archive."""
    _write_folder(tmp_path / "other", ("x", "y"), n=6)
    _write_folder(tmp_path / "classes", ("a", "b"), n=6)
    _archive(tmp_path / "other", tmp_path / "classes" / "backup.tar.gz")
    with pytest.warns(UserWarning, match=r"1 archive\(s\) in .*classes \(backup\.tar\.gz\) are not read: a folder of "
                                         r"class folders is read without the archives beside them; unpack them"):
        assert load_arrays("imagefolder", tmp_path / "classes").info.classes == ("a", "b")
    (tmp_path / "packed" / ".ipynb_checkpoints").mkdir(parents=True)
    (tmp_path / "packed" / "notes.txt").write_text("where these images came from")
    _archive(tmp_path / "other", tmp_path / "packed" / "imgs.tar.gz")
    # macOS's metadata beside it, copied to a USB stick: hidden, not an archive (it was read, and refused as corrupt)
    (tmp_path / "packed" / "._imgs.tar.gz").write_bytes(b"\x00\x05\x16\x07\x00\x02\x00\x00Mac OS X        ")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert load_arrays("imagefolder", tmp_path / "packed").info.classes == ("x", "y")


def test_the_decoded_folder_is_cached_where_no_cache_folder_exists_yet(tmp_path, monkeypatch):
    """A fresh machine has no ~/.cache/fastjem/cache: the first load makes the folders and keeps the decoded images
    there, and the next load reads them back."""
    import fastjem.data as data_mod

    cache = tmp_path / "home" / ".cache" / "fastjem" / "cache"
    monkeypatch.setenv("FASTJEM_CACHE", str(cache))
    _write_folder(tmp_path / "imgs", ("a", "b"), n=6)
    first = load_arrays("imagefolder", tmp_path / "imgs")
    assert len(list(cache.glob("imagefolder-*.pt"))) == 1
    monkeypatch.setattr(data_mod, "_decode_many", lambda *a, **k: pytest.fail("decoded again, not read back"))
    _same_arrays(load_arrays("imagefolder", tmp_path / "imgs"), first)


def test_archives_are_decoded_once(tmp_path, monkeypatch):
    _write_folder(tmp_path / "unpacked", ("a", "b"), n=3)
    (tmp_path / "packed").mkdir()
    _archive(tmp_path / "unpacked", tmp_path / "packed" / "imgs.zip", fmt="zip")
    a = load_arrays("imagefolder", tmp_path / "packed")

    def no_decode(*args, **kwargs):
        raise AssertionError("decoded again instead of using the cache")

    monkeypatch.setattr("fastjem.data._decode_archives", no_decode)
    assert torch.equal(load_arrays("imagefolder", tmp_path / "packed").train_x, a.train_x)


def test_bad_archives_say_what_to_do(tmp_path):
    (tmp_path / "corrupt").mkdir()
    (tmp_path / "corrupt" / "data.tar.gz").write_bytes(b"\x1f\x8b not really gzip")
    with pytest.raises(DataNotFoundError, match="corrupt download"):
        load_arrays("imagefolder", tmp_path / "corrupt")
    _write_folder(tmp_path / "unpacked" / "train", ("a", "b"), n=2)
    (tmp_path / "half").mkdir()
    _archive(tmp_path / "unpacked", tmp_path / "half" / "train-only.tar.gz")
    with pytest.raises(DataNotFoundError, match="none under test/"):
        load_arrays("cifar10", tmp_path / "half")
    _write_folder(tmp_path / "unpacked" / "test", ("a", "c"), n=1)
    (tmp_path / "unlike").mkdir()
    _archive(tmp_path / "unpacked", tmp_path / "unlike" / "both.tar.gz")
    with pytest.raises(DataNotFoundError, match=r"different class folders under train/ and test/: only in train/: "
                                                r"b/ \(give each a folder in test/ .*\); only in test/: c/ \(.*\)\. "
                                                r"train/ and test/ must hold the same class folders"):
        load_arrays("imagefolder", tmp_path / "unlike")
    (tmp_path / "empty").mkdir()
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "readme.txt").write_text("no images")
    _archive(tmp_path / "notes", tmp_path / "empty" / "docs.zip", fmt="zip")
    with pytest.raises(DataNotFoundError, match="no images"):
        load_arrays("imagefolder", tmp_path / "empty")



@pytest.mark.parametrize("damage", ["cut at a member's end", "garbled header"])
def test_a_plain_tar_cut_short_or_garbled_is_refused_not_read_short(tmp_path, damage):
    """tarfile ends a .tar's members alike at its end marker, where the file stops at a member's end and where a
    header is garbled: a plain tar (no compressed stream, whose own end check fails) cut short read as 3 of its 4
    images without a word. Refused, and of several archives the one that fails is named."""
    import tarfile

    _write_folder(tmp_path / "imgs", ("b",), n=4)
    (tmp_path / "packed").mkdir()
    _archive(tmp_path / "imgs", tmp_path / "packed" / "a.zip", prefix="a/", fmt="zip")  # a sound archive, read first
    tar = tmp_path / "packed" / "b.tar"
    with tarfile.open(tar, "w") as t:
        for i in range(4):
            t.add(tmp_path / "imgs" / "b" / f"{i}.png", f"b/{i}.png")
    whole = load_arrays("imagefolder", tmp_path / "packed")
    assert whole.info.classes == ("a", "b") and len(whole.train_y) + len(whole.test_y) == 8
    with tarfile.open(tar) as t:
        fourth = t.getmembers()[3].offset  # where the fourth member's header starts
    data = bytearray(tar.read_bytes())
    if damage == "garbled header":
        data[fourth + 10] ^= 0xFF  # its checksum no longer holds
    else:
        data = data[:fourth]
    tar.write_bytes(bytes(data))
    with pytest.raises(DataNotFoundError, match=rf"could not read the archive {re.escape(str(tar))}: ReadError: it "
                                                r"ends before a tar archive's end marker, after 3 members \(a "
                                                r"truncated or corrupt download\?"):
        load_arrays("imagefolder", tmp_path / "packed")

def _small_cifar_archive(tmp_path, monkeypatch):
    """A cifar-10-python.tar.gz of one 4-image train batch and one 4-image test batch in tmp_path/data, with
    torchvision's checksums and file list replaced by its own: (the folder, the batches)."""
    import pickle
    import tarfile

    import torchvision

    rng = np.random.default_rng(0)
    src = tmp_path / "src" / "cifar-10-batches-py"
    src.mkdir(parents=True)
    batches = {}
    for name in ["data_batch_1", "test_batch"]:
        data = rng.integers(0, 256, (4, 3072), dtype=np.uint8)
        batches[name] = {"data": data, "labels": rng.integers(0, 10, 4).tolist()}
        (src / name).write_bytes(pickle.dumps(batches[name]))
    (src / "batches.meta").write_bytes(pickle.dumps({"label_names": [f"c{i}" for i in range(10)]}))
    root = tmp_path / "data"
    root.mkdir()
    with tarfile.open(root / "cifar-10-python.tar.gz", "w:gz") as tar:
        tar.add(src, "cifar-10-batches-py")
    # the real archive's checksums and file list, replaced by this small one (md5 None: presence suffices)
    monkeypatch.setattr(torchvision.datasets.CIFAR10, "tgz_md5", None)
    monkeypatch.setattr(torchvision.datasets.CIFAR10, "train_list", [["data_batch_1", None]])
    monkeypatch.setattr(torchvision.datasets.CIFAR10, "test_list", [["test_batch", None]])
    monkeypatch.setattr(torchvision.datasets.CIFAR10, "meta", {"filename": "batches.meta", "key": "label_names",
                                                               "md5": None})
    monkeypatch.setattr(torchvision.datasets.CIFAR10, "url", "http://127.0.0.1:9/never-fetched.tar.gz")
    return root, batches


def test_torchvision_cifar_archive_is_unpacked_offline(tmp_path, monkeypatch):
    """cifar-10-python.tar.gz (torchvision's own download) in --data-dir is unpacked without --download."""
    root, batches = _small_cifar_archive(tmp_path, monkeypatch)
    a = load_arrays("cifar10", root)
    assert (root / "cifar-10-batches-py").is_dir()
    expected = torch.from_numpy(batches["data_batch_1"]["data"]).view(4, 3, 32, 32)
    assert torch.equal(a.train_x, expected) and a.train_y.tolist() == batches["data_batch_1"]["labels"]
    assert a.info.classes == tuple(f"c{i}" for i in range(10))
    assert torch.equal(load_arrays("cifar10", root / "cifar-10-python.tar.gz").train_x, expected)  # the file named
    assert torch.equal(load_arrays("cifar10", root / "cifar-10-batches-py").train_x, expected)  # the folder named
    # half unpacked (a run killed while torchvision unpacked it): unpacked again, not "not found"
    (root / "cifar-10-batches-py" / "test_batch").unlink()
    assert torch.equal(load_arrays("cifar10", root).test_x, torch.from_numpy(batches["test_batch"]["data"]).view(
        4, 3, 32, 32))
    # once whole, the folder is read and the archive is not opened again (not even its checksum checked)
    import hashlib

    import torchvision

    archive = (root / "cifar-10-python.tar.gz").read_bytes()
    monkeypatch.setattr(torchvision.datasets.CIFAR10, "tgz_md5", hashlib.md5(archive).hexdigest())
    (root / "cifar-10-python.tar.gz").write_bytes(b"not read")
    assert torch.equal(load_arrays("cifar10", root).train_x, expected)
    (root / "cifar-10-python.tar.gz").write_bytes(archive)
    # --image-size on a named dataset: the images resized, and the crop's padding with them (32 px padded 4, 16 px 2)
    half = load_arrays("cifar10", root, image_size=16)
    assert half.train_x.shape == (4, 3, 16, 16) and (a.info.pad, half.info.pad) == (4, 2)
    # torchvision's files beside an archive of something else, or beside train/ alone: torchvision's set is read;
    # beside train/ and test/ (a whole image-folder layout): the image folders are
    _write_folder(tmp_path / "notes", ("docs",), n=0)
    (tmp_path / "notes" / "docs" / "readme.txt").write_text("no images")
    _archive(tmp_path / "notes", root / "notes.zip", fmt="zip")
    assert torch.equal(load_arrays("cifar10", root).train_x, expected)
    _write_folder(root / "train", tuple(f"c{i}" for i in range(10)), n=2)
    assert torch.equal(load_arrays("cifar10", root).train_x, expected)
    _write_folder(root / "test", tuple(f"c{i}" for i in range(10)), n=1)
    folders = load_arrays("cifar10", root)
    assert folders.train_x.shape == (20, 3, 8, 8) and folders.test_x.shape == (10, 3, 8, 8)


def test_a_torchvision_archive_that_cannot_be_unpacked_says_so(tmp_path, monkeypatch):
    """The archive is there and sound, but its folder cannot be made (a file of that name in the way): the error
    names the archive and says how to unpack it, not "not found"."""
    root, _ = _small_cifar_archive(tmp_path, monkeypatch)
    (root / "cifar-10-batches-py").write_text("in the way")
    with pytest.raises(DataNotFoundError, match=r"cifar-10-python\.tar\.gz is there, but it could not be unpacked"
                       r"(.|\n)*tar xzf cifar-10-python\.tar\.gz"):
        load_arrays("cifar10", root)
    assert (root / "cifar-10-batches-py").read_text() == "in the way"


def test_a_torchvision_archive_is_unpacked_by_tarfiles_data_filter(tmp_path, monkeypatch):
    """The archive is unpacked with tarfile's "data" filter: no DeprecationWarning from Python 3.12 / 3.13 (torchvision
    unpacks with no filter), and a member that would land outside --data-dir is refused, never written."""
    import io
    import tarfile

    root, batches = _small_cifar_archive(tmp_path, monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        a = load_arrays("cifar10", root)
    assert a.train_y.tolist() == batches["data_batch_1"]["labels"]
    # the same archive with one more member, ../outside.txt
    archive = root / "cifar-10-python.tar.gz"
    with tarfile.open(archive) as tar:
        members = [(m, tar.extractfile(m).read() if m.isfile() else None) for m in tar.getmembers()]
    with tarfile.open(archive, "w:gz") as tar:
        for m, data in members:
            tar.addfile(m, io.BytesIO(data) if data is not None else None)
        extra = tarfile.TarInfo("../outside.txt")
        extra.size = 3
        tar.addfile(extra, io.BytesIO(b"out"))
    shutil.rmtree(root / "cifar-10-batches-py")
    with pytest.raises(DataNotFoundError, match=r"cifar-10-python\.tar\.gz is there, but it could not be unpacked"):
        load_arrays("cifar10", root)
    assert not (tmp_path / "outside.txt").exists()
    # a Python before the filters (3.10.11, 3.11.3): the same refusal
    monkeypatch.delattr(tarfile, "data_filter")
    shutil.rmtree(root / "cifar-10-batches-py")
    with pytest.raises(DataNotFoundError, match=r"'\.\./outside\.txt' is not a file or folder inside"):
        load_arrays("cifar10", root)
    assert not (tmp_path / "outside.txt").exists()


def test_download_fetches_the_cifar_archive_and_unpacks_it_by_the_data_filter(tmp_path, monkeypatch):
    """--download: torchvision's download helper fetches the archive (a copy of a local file here, no network) and
    fastjem unpacks it as it does an archive found in --data-dir, with tarfile's "data" filter: a member with an
    absolute path or one that climbs out with ".." is refused and never written (torchvision's own extraction, which
    --download used, passes no filter and wrote them). A folder already whole is not fetched again."""
    import io
    import tarfile
    from pathlib import Path

    import torchvision.datasets.utils as tv_utils

    root, batches = _small_cifar_archive(tmp_path, monkeypatch)
    served = tmp_path / "served.tar.gz"
    shutil.move(root / "cifar-10-python.tar.gz", served)
    fetched = []

    def fetch(url, folder, filename=None, md5=None, **kwargs):
        fetched.append(url)
        Path(folder).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(served, Path(folder) / filename)

    monkeypatch.setattr(tv_utils, "download_url", fetch)
    a = load_arrays("cifar10", root, download=True)
    assert len(fetched) == 1 and (root / "cifar-10-python.tar.gz").is_file()
    assert torch.equal(a.train_x, torch.from_numpy(batches["data_batch_1"]["data"]).view(4, 3, 32, 32))
    load_arrays("cifar10", root, download=True)
    assert len(fetched) == 1  # whole: read, not fetched again
    # an archive served with members outside the folder: refused, nothing written outside
    with tarfile.open(served) as tar:
        members = [(m, tar.extractfile(m).read() if m.isfile() else None) for m in tar.getmembers()]
    outside = tmp_path / "elsewhere" / "absolute.txt"
    with tarfile.open(served, "w:gz") as tar:
        for m, data in members:
            tar.addfile(m, io.BytesIO(data) if data is not None else None)
        for bad in ("../outside.txt", str(outside)):
            extra = tarfile.TarInfo(bad)
            extra.size = 3
            tar.addfile(extra, io.BytesIO(b"out"))
    shutil.rmtree(root / "cifar-10-batches-py")
    (root / "cifar-10-python.tar.gz").unlink()
    with pytest.raises(DataNotFoundError, match=r"cifar-10-python\.tar\.gz is there, but it could not be unpacked"):
        load_arrays("cifar10", root, download=True)
    assert len(fetched) == 2
    assert not (tmp_path / "outside.txt").exists() and not outside.exists()


def test_a_worktree_finds_the_shared_data_beside_its_main_checkout(tmp_path):
    """A git worktree made elsewhere (/work/wt/<name>) has no ../shared: the CIFAR-10 tarballs' test was skipped
    there. The main checkout is found through the worktree's .git file (an absolute or a relative gitdir), and its
    ../shared is looked in; a checkout that is no worktree is its own main one."""
    from conftest import main_checkout

    main, tree = tmp_path / "main", tmp_path / "wt" / "x"
    (main / ".git" / "worktrees" / "x").mkdir(parents=True)
    (main / ".git" / "worktrees" / "x" / "commondir").write_text("../..\n")
    tree.mkdir(parents=True)
    (tree / ".git").write_text(f"gitdir: {main / '.git' / 'worktrees' / 'x'}\n")
    assert main_checkout(tree) == main.resolve() and main_checkout(main) == main
    (tree / ".git").write_text("gitdir: ../../main/.git/worktrees/x\n")
    assert main_checkout(tree) == main.resolve()
    assert main_checkout(tmp_path / "elsewhere") == tmp_path / "elsewhere"


def test_the_jpeg_copy_of_cifar10_loads_from_its_tarballs(cifar10_tarballs):
    """The real CIFAR-10 copy (two tarballs of JPEG folders) in ../shared/data (beside the main checkout, from a
    worktree), read in place."""
    root = cifar10_tarballs
    a = load_arrays("cifar10", root)
    assert a.train_x.shape == (50000, 3, 32, 32) and a.test_x.shape == (10000, 3, 32, 32)
    assert a.info.classes == ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")
    assert a.train_y.bincount().tolist() == [5000] * 10 and a.test_y.bincount().tolist() == [1000] * 10
    assert 100 < a.train_x.float().mean() < 140  # natural images, not blank


def test_fit_size_scales_the_shorter_side_and_crops_the_centre():
    from fastjem.data import fit_size

    # 8 x 16 (H x W): left quarter red, middle half green, right quarter blue
    x = torch.zeros(3, 8, 16, dtype=torch.uint8)
    x[0, :, :4], x[1, :, 4:12], x[2, :, 12:] = 255, 255, 255
    crop = fit_size(x, 8)  # shorter side already 8: only the centre 8 columns, all green
    assert crop.shape == (3, 8, 8) and crop[1].eq(255).all() and crop[0].eq(0).all() and crop[2].eq(0).all()
    wide = torch.zeros(3, 16, 48, dtype=torch.uint8)  # red | green (32 columns) | blue
    wide[0, :, :8], wide[1, :, 8:40], wide[2, :, 40:] = 255, 255, 255
    small = fit_size(wide, 8)  # halved to 8 x 24, then the centre 8 x 8: source columns 16-31, green
    assert small.shape == (3, 8, 8) and small[1].eq(255).all() and small[[0, 2]].eq(0).all()
    flat = torch.full((2, 1, 6, 10), 77, dtype=torch.uint8)
    assert fit_size(flat, 12).shape == (2, 1, 12, 12) and fit_size(flat, 12).eq(77).all()  # enlarged, constant kept
    assert torch.equal(fit_size(flat[0, :, :6, :6], 6), flat[0, :, :6, :6])


def test_fit_size_resizes_a_large_set_a_chunk_at_a_time(monkeypatch):
    """The whole set in floats at the new size (CIFAR-10 at --image-size 224: 30 GB, four times the result) is not
    made: at most FIT_CHUNK images are interpolated at once, and the result is the one of the images resized alone."""
    import fastjem.data
    from fastjem.data import FIT_CHUNK, fit_size

    assert FIT_CHUNK <= 1024
    x = torch.randint(0, 256, (2 * FIT_CHUNK + 2, 1, 3, 5), dtype=torch.uint8)
    seen = []
    real = fastjem.data.F.interpolate
    monkeypatch.setattr(fastjem.data.F, "interpolate", lambda t, **k: seen.append(len(t)) or real(t, **k))
    for size, lead in ((2, x), (7, x.view(5, -1, 1, 3, 5))):  # shrunk, enlarged; any leading dimensions
        seen.clear()
        out = fit_size(lead, size)
        assert max(seen) <= FIT_CHUNK and sum(seen) == len(x), seen
        alone = torch.stack([fit_size(img, size) for img in x[[0, FIT_CHUNK, -1]]])
        flat = out.reshape(len(x), 1, size, size)
        assert out.shape == (*lead.shape[:-2], size, size) and torch.equal(flat[[0, FIT_CHUNK, -1]], alone)


def test_fit_size_crops_the_middle_of_the_longer_side():
    """A 4 x 10 image to 4 x 4 keeps columns 3-6, and a 10 x 4 one rows 3-6: (10 - 4) // 2 cut on each side."""
    from fastjem.data import fit_size

    wide = torch.arange(10, dtype=torch.uint8).expand(1, 4, 10)
    assert torch.equal(fit_size(wide, 4)[0, 0], torch.tensor([3, 4, 5, 6], dtype=torch.uint8))
    assert torch.equal(fit_size(wide.transpose(1, 2), 4)[0, :, 0], torch.tensor([3, 4, 5, 6], dtype=torch.uint8))


def test_fit_size_shrinks_with_an_antialiasing_filter_and_rounds_to_the_nearest_level():
    """Shrinking averages what it drops (a checkerboard of 0 and 255 shrunk 3x is mid-grey, where plain bilinear
    sampling would hit single squares and keep 0 and 255), and the uint8 result is the nearest level, not a
    truncation: the exact values of the antialiased bilinear interpolation, rounded."""
    from fastjem.data import fit_size

    board = ((torch.arange(24).view(-1, 1) + torch.arange(24)) % 2 * 255).to(torch.uint8).expand(2, 3, 24, 24)
    grey = fit_size(board, 8).float()
    assert (grey - 127.5).abs().max() <= 2
    x = torch.randint(0, 256, (2, 3, 20, 30), generator=torch.Generator().manual_seed(0), dtype=torch.uint8)
    for size in (8, 26):  # shrunk (antialiased) and enlarged
        h, w = size, round(30 * size / 20)  # the shorter side (20) scaled to size
        exact = torch.nn.functional.interpolate(x.float(), size=(h, w), mode="bilinear", align_corners=False,
                                                antialias=size < 20)
        left = (w - size) // 2
        want = exact.round().clamp(0, 255).to(torch.uint8)[..., :size, left:left + size]
        assert torch.equal(fit_size(x, size), want), size
        assert not torch.equal(fit_size(x, size), exact.to(torch.uint8)[..., :size, left:left + size])  # truncation


def test_data_that_differs_in_classes_channels_or_image_size_cannot_stand_for_the_training_data():
    from dataclasses import replace

    from fastjem.data import dataset_mismatch

    trained = load_arrays("digits").info
    assert dataset_mismatch(trained, replace(trained, name="other", classes=tuple("abcdefghij"))) is None
    for key, value in (("num_classes", 5), ("channels", 3), ("image_size", 16)):
        why = dataset_mismatch(trained, replace(trained, **{key: value}))
        assert why == ("it was trained on digits (num_classes 10, channels 1, image_size 8); data= holds digits ("
                       + ", ".join(f"{k} {value if k == key else getattr(trained, k)}"
                                   for k in ("num_classes", "channels", "image_size")) + ")"), key


def test_mixed_sizes_need_image_size_and_train_with_it(tmp_path):
    rng = np.random.default_rng(0)
    for c, sizes in (("a", [(8, 8), (12, 10), (9, 16)]), ("b", [(8, 8), (20, 20), (10, 8)])):
        (tmp_path / "mixed" / c).mkdir(parents=True)
        for i, (h, w) in enumerate(sizes * 2):
            Image.fromarray(rng.integers(0, 255, (h, w, 3), dtype=np.uint8)).save(tmp_path / "mixed" / c / f"{i}.png")
    with pytest.raises(DataNotFoundError, match="--image-size"):
        load_arrays("imagefolder", tmp_path / "mixed")
    # each split of one size, but not the same: said before a run would meet it
    _write_folder(tmp_path / "splits" / "train", ("a", "b"), n=3, size=8)
    _write_folder(tmp_path / "splits" / "test", ("a", "b"), n=1, size=12)
    with pytest.raises(DataNotFoundError, match=r"training images are 8x8 but the test images 12x12: pass "
                                                r"--image-size N"):
        load_arrays("imagefolder", tmp_path / "splits")
    assert load_arrays("imagefolder", tmp_path / "splits", image_size=8).test_x.shape[1:] == (3, 8, 8)
    a = load_arrays("imagefolder", tmp_path / "mixed", image_size=8)
    assert a.train_x.shape[1:] == (3, 8, 8) and a.info.image_size == 8 and len(a.train_y) + len(a.test_y) == 12
    assert load_arrays("imagefolder", tmp_path / "mixed", image_size=6).train_x.shape[1:] == (3, 6, 6)  # own cache

    from fastjem.config import TrainConfig
    from fastjem.eval import load_model
    from fastjem.train import Trainer

    cfg = TrainConfig(dataset="imagefolder", data_dir=str(tmp_path / "mixed"), image_size=8, arch="convnet", width=4,
                      batch_size=4, sgld_steps=2, buffer_size=20, iters=2, warmup_iters=1, val_size=2, log_every=1,
                      ckpt_every=0, device="cpu", compile=False)
    t = Trainer(cfg, out_dir=tmp_path / "run", progress=False, log=lambda *a: None)
    t.fit()
    assert t.buffer.data.shape[1:] == (3, 8, 8)
    x, _ = load_model(tmp_path / "run").test_set()  # evaluation resizes as training did
    assert x.shape[1:] == (3, 8, 8)


def test_image_size_resizes_the_named_datasets_too():
    a = load_arrays("digits", image_size=16)
    assert a.train_x.shape[1:] == (1, 16, 16) and a.info.image_size == 16 and a.info.pad == 0
    assert torch.equal(load_arrays("digits", image_size=8).train_x, load_arrays("digits").train_x)


def test_train_and_val_folders_are_the_splits(tmp_path):
    import shutil

    _write_folder(tmp_path / "tv" / "train", ("a", "b"), n=3)
    _write_folder(tmp_path / "tv" / "val", ("a", "b"), n=2)
    shutil.copytree(tmp_path / "tv" / "train", tmp_path / "tt" / "train")
    shutil.copytree(tmp_path / "tv" / "val", tmp_path / "tt" / "test")
    tv = load_arrays("imagefolder", tmp_path / "tv")
    assert tv.info.classes == ("a", "b") and len(tv.train_y) == 6 and len(tv.test_y) == 4  # not classes train, val
    _same_arrays(tv, load_arrays("imagefolder", tmp_path / "tt"))
    (tmp_path / "packed").mkdir()
    _archive(tmp_path / "tv", tmp_path / "packed" / "tv.tar.gz")
    _same_arrays(load_arrays("imagefolder", tmp_path / "packed"), tv)


def test_a_val_folder_beside_train_and_test_is_named_as_unread(tmp_path):
    """train/, val/ and test/: test/ is the test set and the validation split comes from train/, so val/'s images
    are not read; a warning says so (they were dropped without a word), folder and archive alike."""
    from fastjem.errors import FastJEMWarning

    _write_folder(tmp_path / "tvt" / "train", ("a", "b"), n=3)
    _write_folder(tmp_path / "tvt" / "val", ("a", "b"), n=2)
    _write_folder(tmp_path / "tvt" / "test", ("a", "b"), n=1)
    with pytest.warns(FastJEMWarning, match=r"val/ not read: test/ is the test set"):
        a = load_arrays("imagefolder", tmp_path / "tvt")
    assert len(a.train_y) == 6 and len(a.test_y) == 2
    (tmp_path / "packed").mkdir()
    _archive(tmp_path / "tvt", tmp_path / "packed" / "tvt.tar.gz")
    with pytest.warns(FastJEMWarning, match=r"val/ not read: test/ is the test set"):
        _same_arrays(load_arrays("imagefolder", tmp_path / "packed"), a)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FastJEMWarning)
        shutil.rmtree(tmp_path / "tvt" / "val")
        load_arrays("imagefolder", tmp_path / "tvt")  # train/ and test/ alone: nothing unread


def test_what_an_archive_leaves_unread_is_said_at_every_load_not_the_first_alone(tmp_path, monkeypatch):
    """An archive's val/ beside test/ and its HEIC photos are found as it is read, once: a later load from the cache
    said nothing of them. The warnings are kept with the cached images and said again; a cache without them (an
    older format's) is decoded again, not taken for one with nothing to say."""
    import fastjem.data as data_mod
    from fastjem.data import cache_dir
    from fastjem.errors import FastJEMWarning

    monkeypatch.setenv("FASTJEM_CACHE", str(tmp_path / "cache"))
    _write_folder(tmp_path / "tvt" / "train", ("a", "b"), n=3)
    _write_folder(tmp_path / "tvt" / "val", ("a", "b"), n=1)
    _write_folder(tmp_path / "tvt" / "test", ("a", "b"), n=1)
    (tmp_path / "tvt" / "train" / "a" / "IMG_0001.heic").write_bytes(b"\x00\x00\x00\x18ftypheic")
    (tmp_path / "packed").mkdir()
    _archive(tmp_path / "tvt", tmp_path / "packed" / "tvt.tar.gz")
    said = [r"val/ not read: test/ is the test set", r"1 image\(s\) under .*tvt\.tar\.gz are in formats that are not "
            r"read \(\.heic 1; tvt\.tar\.gz:train/a/IMG_0001\.heic\)"]

    def load_saying_so():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            a = load_arrays("imagefolder", tmp_path / "packed")
        messages = [str(w.message) for w in caught if issubclass(w.category, FastJEMWarning)]
        for pattern in said:
            assert sum(bool(re.search(pattern, m)) for m in messages) == 1, (pattern, messages)
        return a

    first = load_saying_so()
    decode = data_mod._decode_archives
    monkeypatch.setattr(data_mod, "_decode_archives", lambda *a, **k: pytest.fail("decoded again, not read back"))
    _same_arrays(load_saying_so(), first)
    (cache,) = cache_dir().glob("imagefolder-*.pt")
    blob = torch.load(cache, weights_only=True)
    del blob["notes"]
    torch.save(blob, cache)
    monkeypatch.setattr(data_mod, "_decode_archives", decode)
    _same_arrays(load_saying_so(), first)
    assert "notes" in torch.load(cache, weights_only=True)


def test_a_lone_train_folder_is_not_a_class(tmp_path):
    _write_folder(tmp_path / "only" / "train", ("a", "b"), n=3)
    with pytest.raises(DataNotFoundError, match="add the missing split"):
        load_arrays("imagefolder", tmp_path / "only")
    assert load_arrays("imagefolder", tmp_path / "only" / "train").info.classes == ("a", "b")


def test_splits_without_class_folders_are_not_two_classes(tmp_path):
    """train/ and test/ holding images directly (no class folders) are a layout mistake, not the classes 'test' and
    'train'; one split folder of images alone is a folder of one class (warned of as such)."""
    _write_folder(tmp_path / "flat", ("train", "test"), n=3)
    with pytest.raises(DataNotFoundError, match=r"test/, train/ with images directly inside(.|\n)*"
                       r"train/<class>/<image>, test/<class>/<image>"):
        load_arrays("imagefolder", tmp_path / "flat")
    (tmp_path / "packed").mkdir()
    _archive(tmp_path / "flat", tmp_path / "packed" / "flat.zip", fmt="zip")  # the same in an archive
    with pytest.raises(DataNotFoundError, match=r"flat\.zip holds test/, train/ with images directly inside"):
        load_arrays("imagefolder", tmp_path / "packed")
    _write_folder(tmp_path / "one", ("train",), n=3)
    with pytest.warns(UserWarning, match="has one class"):
        assert load_arrays("imagefolder", tmp_path / "one").info.classes == ("train",)


@pytest.mark.parametrize("spelled", [("Train", "Test"), ("Training", "Testing"), ("train", "Test")])
def test_split_folders_spelled_otherwise_are_not_two_classes(tmp_path, spelled):
    """Train/ and Test/ (or Kaggle's Training/ and Testing/) trained as two classes named after the splits, each
    holding every class's images, without a word; refused with the renames to make, in a folder, in an archive of
    one, and for a named dataset (which said its data was not found); images directly inside are refused too."""
    train, test = spelled
    classes = [f"c{i}" for i in range(10)]
    _write_folder(tmp_path / "imgs" / train, classes, n=2)
    _write_folder(tmp_path / "imgs" / test, classes, n=1)
    renames = ", ".join(f"{c}/ to {c.lower()[:-3] if c.endswith('ing') else c.lower()}/"
                        for c in sorted(spelled) if not c.islower())
    fixed = rf"in lower case, so these would be classes named after the splits: %s {re.escape(renames)}$"
    for name in ("imagefolder", "cifar10"):
        with pytest.raises(DataNotFoundError, match=rf"imgs holds {test}/, {train}/ with class folders inside: the "
                                                    r"splits are read from folders named train/ and test/ \(or val/, "
                                                    r"valid/, validation/\), " + fixed % "rename"):
            load_arrays(name, tmp_path / "imgs")
    (tmp_path / "packed").mkdir()
    _archive(tmp_path / "imgs", tmp_path / "packed" / "kaggle.zip", "data/", fmt="zip")
    with pytest.raises(DataNotFoundError, match=r"kaggle\.zip holds .* with class folders inside: .*"
                                                + fixed % r"unpack the archive\(s\) and rename"):
        load_arrays("imagefolder", tmp_path / "packed")
    _write_folder(tmp_path / "flat", spelled, n=3)
    with pytest.raises(DataNotFoundError, match=r"with images directly inside(.|\n)*\(train/<class>/<image>, "
                                                r"test/<class>/<image>\)"):
        load_arrays("imagefolder", tmp_path / "flat")

def test_a_torchvision_archive_with_the_wrong_checksum_is_refused_without_fetching(tmp_path, monkeypatch):
    import torchvision.datasets.utils as tv_utils

    (tmp_path / "cifar-10-python.tar.gz").write_bytes(b"truncated")

    def no_fetch(*args, **kwargs):
        raise AssertionError("tried to download")

    monkeypatch.setattr(tv_utils, "download_url", no_fetch)
    with pytest.raises(DataNotFoundError, match="MD5 checksum"):
        load_arrays("cifar10", tmp_path)


@pytest.mark.parametrize("kind", ["jpeg-rgb", "jpeg-gray", "jpeg-cmyk", "png-rgba", "png-la", "png-16bit", "gif",
                                  "webp", "bmp", "tiff"])
def test_decoded_pixels_are_pillows(kind):
    """torchvision's decoders where they apply, Pillow's otherwise: the pixels of Pillow's convert("RGB") (16-bit
    images rounded to 8 bits)."""
    import io

    from fastjem.data import _decoding, read_image

    base = Image.fromarray(np.linspace(0, 255, 16 * 20 * 3).reshape(16, 20, 3).astype(np.uint8))
    image, fmt, kw = {
        "jpeg-rgb": (base, "JPEG", {}), "jpeg-gray": (base.convert("L"), "JPEG", {}),
        "jpeg-cmyk": (base.convert("CMYK"), "JPEG", {}), "png-rgba": (base.convert("RGBA"), "PNG", {}),
        "png-la": (base.convert("LA"), "PNG", {}),
        "png-16bit": (Image.fromarray((np.arange(320).reshape(16, 20) * 200).astype(np.uint16)), "PNG", {}),
        "gif": (base.convert("P"), "GIF", {}), "webp": (base, "WEBP", {"lossless": True}),
        "bmp": (base, "BMP", {}), "tiff": (base, "TIFF", {}),
    }[kind]
    buf = io.BytesIO()
    image.save(buf, fmt, **kw)
    with _decoding():
        x = read_image(buf.getvalue())
    with Image.open(io.BytesIO(buf.getvalue())) as im:
        expected = torch.from_numpy(np.asarray(im.convert("RGB")).copy()).permute(2, 0, 1)
    if kind == "png-16bit":
        # rounded to 8 bits, where Pillow's convert("RGB") clips every value above 255 to white
        deep = torch.from_numpy((np.arange(320).reshape(16, 20) * 200).astype(np.int64))
        expected = ((deep * 255 + 32767) // 65535).to(torch.uint8).expand(3, 16, 20)
    assert x.dtype == torch.uint8 and x.shape == (3, 16, 20)
    assert torch.equal(x, expected)
    if kind == "png-16bit":
        # torchvision's decoder rounds it itself (it hands over uint16), not Pillow's slower path behind it
        from fastjem.data import _torchvision_decode

        assert torch.equal(_torchvision_decode(buf.getvalue()), expected)


def test_a_data_dir_that_is_a_file_is_called_one(tmp_path):
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(DataNotFoundError, match="notes.txt is a file, not a folder or an archive: pass --data-dir"):
        load_arrays("imagefolder", tmp_path / "notes.txt")
    # a named dataset: not "not found in notes.txt", to be downloaded into it
    with pytest.raises(DataNotFoundError, match=r"cifar100 was not found in .*notes\.txt, a file, not a folder\.\n"
                                                r".*add --download \(it is saved in the folder you give\);\n"
                                                r"  - offline: put cifar-100-python/ .* in a folder"):
        load_arrays("cifar100", tmp_path / "notes.txt")


def test_torchvisions_downloads_given_as_an_image_folder_name_the_dataset_that_reads_them(tmp_path):
    """cifar-10-python.tar.gz given as --dataset imagefolder was taken for a folder ("a file stands where a folder is
    needed: choose another --out-dir"); it, torchvision's unpacked folder, SVHN's .mat files, or a folder of them
    alone, are refused with the --dataset and --data-dir that read them (evaluation, whose dataset is the
    checkpoint's: a folder of class folders to give)."""
    dl = tmp_path / "dl"
    (dl / "cifar-10-batches-py").mkdir(parents=True)
    (dl / "cifar-10-python.tar.gz").write_bytes(b"torchvision's archive")
    (tmp_path / "svhn").mkdir()
    for f in ("train_32x32.mat", "test_32x32.mat"):
        (tmp_path / "svhn" / f).write_bytes(b"MATLAB")
    for given, verb, files, name, folder in (
            (dl / "cifar-10-python.tar.gz", "is", "cifar-10-python.tar.gz", "cifar10", dl),
            (dl / "cifar-10-batches-py", "is", "cifar-10-batches-py", "cifar10", dl),
            (dl, "holds", "cifar-10-batches-py, cifar-10-python.tar.gz", "cifar10", dl),
            (tmp_path / "svhn", "holds", "test_32x32.mat, train_32x32.mat", "svhn", tmp_path / "svhn")):
        with pytest.raises(DataNotFoundError, match=rf"{re.escape(str(given))} {verb} torchvision's download of {name} "
                                                    rf"\({re.escape(files)}\): arrays, not the image files --dataset "
                                                    rf"imagefolder reads: give --dataset {name} --data-dir "
                                                    rf"{re.escape(str(folder))}$"):
            load_arrays("imagefolder", given)
    with pytest.raises(DataNotFoundError, match=r"reads: point --data-dir at a folder of class folders$"):
        load_arrays("imagefolder", dl, choose_dataset=False)
    _write_folder(dl / "imgs", ("a", "b"))  # beside class folders, torchvision's files are not the data
    with pytest.raises(DataNotFoundError, match=r"cifar-10-batches-py hold no images"):
        load_arrays("imagefolder", dl)

def test_an_undecodable_image_is_named(tmp_path):
    _write_folder(tmp_path / "imgs", ("a", "b"), n=3)
    (tmp_path / "imgs" / "b" / "broken.jpg").write_bytes(b"\xff\xd8 not a jpeg")
    with pytest.raises(DataNotFoundError, match=r"broken\.jpg is not an image"):
        load_arrays("imagefolder", tmp_path / "imgs")
    # every bad file in one message (one a run took as many runs), none named by Pillow's in-memory buffer
    (tmp_path / "imgs" / "a" / "empty.png").write_bytes(b"")
    (tmp_path / "imgs" / "a" / "text.png").write_text("not an image")
    with pytest.raises(DataNotFoundError) as err:
        load_arrays("imagefolder", tmp_path / "imgs")
    message = str(err.value)
    assert message.startswith("3 file(s) could not be read as images")
    assert all(name in message for name in ("broken.jpg", "empty.png is empty", "text.png is not an image"))
    assert "BytesIO" not in message
    # the test split's bad files with the training split's (they were named only once those were fixed)
    _write_folder(tmp_path / "split" / "train", ("a", "b"), n=2)
    _write_folder(tmp_path / "split" / "test", ("a", "b"), n=1)
    (tmp_path / "split" / "train" / "a" / "empty.png").write_bytes(b"")
    (tmp_path / "split" / "test" / "b" / "text.png").write_text("not an image")
    with pytest.raises(DataNotFoundError, match=r"^2 file\(s\) could not be read as images:\n  .*train/a/empty\.png is "
                                                r"empty .*\n  .*test/b/text\.png is not an image"):
        load_arrays("imagefolder", tmp_path / "split")


def test_a_damaged_png_is_named_not_a_crash(tmp_path):
    """A PNG with a byte changed in its image data (bit rot, a damaged copy): torchvision's decoder (0.29) crashed the
    process, a segmentation fault without a word; its chunks' CRCs say it is damaged, and Pillow's error names it. (In
    a process of its own: the crash would end this one.) A damaged text chunk, which libpng drops, is no reason."""
    import struct
    import subprocess
    import sys
    import zlib
    from pathlib import Path

    import fastjem
    from fastjem.data import _png_damaged

    _write_folder(tmp_path / "imgs", ("a", "b"), n=3, size=16)
    ramp = np.tile(np.arange(64, dtype=np.uint8)[:, None, None] * 4, (1, 64, 3))  # compressible: a coded stream
    Image.fromarray(ramp).resize((16, 16)).save(tmp_path / "ramp.png")
    intact = (tmp_path / "ramp.png").read_bytes()
    damaged = bytearray(intact)
    damaged[damaged.find(b"IDAT") + 8] ^= 0xFF  # four bytes into the compressed image data
    (tmp_path / "imgs" / "b" / "damaged.png").write_bytes(bytes(damaged))
    code = "import sys; from fastjem.data import load_arrays; load_arrays('imagefolder', sys.argv[1], progress=False)"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(fastjem.__file__).parents[1]),
                                                        os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path / "imgs")], capture_output=True, text=True,
                          env=env, timeout=300)
    assert proc.returncode == 1, (proc.returncode, proc.stderr[-3000:])
    assert "damaged.png is not an image that Pillow or torchvision can decode" in proc.stderr, proc.stderr[-3000:]
    iend = intact.find(b"IEND") - 4
    text = b"tEXt" + b"Comment\x00hello"
    with_text = intact[:iend] + struct.pack(">I", len(text) - 4) + text + struct.pack(">I", zlib.crc32(text))
    bad_text = with_text[:-4] + b"\x00\x00\x00\x00" + intact[iend:]
    assert not _png_damaged(intact) and not _png_damaged(with_text + intact[iend:]) and not _png_damaged(bad_text)
    assert _png_damaged(bytes(damaged)) and _png_damaged(intact[:-20])  # its image data's CRC fails; cut short

def test_a_pngs_fault_check_walks_its_chunks_once(tmp_path, monkeypatch):
    """_png_fault walks a PNG's chunks once, checking their CRCs as it gathers the header and image data (it walked
    them in _png_damaged, then again); what it finds is unchanged: damaged, cut short, intact, another format."""
    import fastjem.data as data_mod
    from fastjem.data import _png_chunks, _png_fault

    Image.fromarray(np.tile(np.arange(16, dtype=np.uint8)[:, None, None] * 16, (1, 16, 3))).save(tmp_path / "r.png")
    intact = (tmp_path / "r.png").read_bytes()
    damaged = bytearray(intact)
    damaged[damaged.find(b"IDAT") + 8] ^= 0xFF
    walks = []
    real = data_mod._png_chunks
    monkeypatch.setattr(data_mod, "_png_chunks", lambda data: walks.append(1) or real(data))
    monkeypatch.setattr(data_mod, "_png_damaged", lambda data: pytest.fail("the chunks walked a second time"))
    crc = "its chunks fail their CRC checks"
    for data, fault in ((bytes(damaged), crc), (intact[:-20], crc), (intact, None), (b"GIF89a" + bytes(9), None)):
        walks.clear()
        found = _png_fault(data)
        assert (found and found.why) == fault and len(walks) == (data[:4] == intact[:4])
    chunks = _png_chunks(intact)
    assert not chunks.damaged and len(chunks.header) == 13 and chunks.runs == 1 and len(chunks.pieces) == 1


def _png_bytes(raw: bytes, width: int, height: int, interlace: int = 0, stream: bytes | None = None,
               split: bool = False) -> bytes:
    """An 8-bit RGB PNG of the filtered rows ``raw`` (its IDAT the zlib ``stream`` when given; ``split``: in two IDAT
    chunks with a text chunk between them), every chunk's CRC right: the file an encoder with a bug writes."""
    import zlib

    def chunk(kind: bytes, body: bytes) -> bytes:
        return len(body).to_bytes(4, "big") + kind + body + zlib.crc32(kind + body).to_bytes(4, "big")

    header = width.to_bytes(4, "big") + height.to_bytes(4, "big") + bytes([8, 2, 0, 0, interlace])
    stream = zlib.compress(raw) if stream is None else stream
    half = len(stream) // 2 if split else len(stream)
    rest = chunk(b"tEXt", b"k\x00v") + chunk(b"IDAT", stream[half:]) if split else b""
    image = chunk(b"IDAT", stream[:half]) + rest
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + image + chunk(b"IEND", b"")


def test_a_png_with_intact_chunks_but_broken_image_data_is_named_not_a_crash(tmp_path):
    """An encoder's bug: chunks whose CRCs hold around a zlib stream that is broken, short of the image's rows, with
    a row of an unknown filter type, or split by another chunk. torchvision's decoder (0.29) crashed the process on
    each (libpng's error while reading rows: a segmentation fault); each is named with the other bad files, with what
    is wrong (Pillow filled the short one's missing rows with black without a word). A stream whose rows are whole
    but which has no end decodes, through Pillow, to its pixels; and interlaced PNGs are not taken for damaged ones.
    (In a process of its own: a crash would end this one.)"""
    import json
    import subprocess
    import sys
    import zlib
    from pathlib import Path

    import fastjem
    from fastjem.data import ADAM7, _png_fault, read_image

    pixels = np.arange(12, dtype=np.uint8).reshape(4, 1, 3).repeat(4, axis=1) * 20  # rows of one colour: compressible
    raw = b"".join(b"\x00" + row.tobytes() for row in pixels)  # filter type 0 (none) before each row
    compressed = zlib.compress(raw)

    def flipped_at(k: int) -> bytes:
        return compressed[:k] + bytes([compressed[k] ^ 0xFF]) + compressed[k + 1:]

    def inflates(stream: bytes) -> bool:
        try:
            return zlib.decompress(stream) is not None
        except zlib.error:
            return False

    # a byte of the compressed data changed (the CRCs computed after): the first whose change zlib refuses
    stream = next(flipped_at(k) for k in range(2, len(compressed)) if not inflates(flipped_at(k)))
    unfiltered = bytearray(raw)
    unfiltered[2 * 13] = 9  # the third row's filter type
    flushing = zlib.compressobj()
    open_ended = flushing.compress(raw) + flushing.flush(zlib.Z_SYNC_FLUSH)  # every row, but no end to the stream
    for folder in ("bad", "good"):
        _write_folder(tmp_path / folder / "train", ("a", "b"), n=2, size=4)
        _write_folder(tmp_path / folder / "test", ("a", "b"), n=1, size=4)
    bad = {"flipped.png": _png_bytes(raw, 4, 4, stream=stream), "short.png": _png_bytes(raw[:-13], 4, 4),
           "unfiltered.png": _png_bytes(bytes(unfiltered), 4, 4), "split.png": _png_bytes(raw, 4, 4, split=True)}
    for name, data in bad.items():
        (tmp_path / "bad" / "train" / "b" / name).write_bytes(data)
    (tmp_path / "good" / "train" / "b" / "open.png").write_bytes(_png_bytes(raw, 4, 4, stream=open_ended))
    code = ("import sys, json; from fastjem.data import load_arrays, DataNotFoundError\n"
            "a = load_arrays('imagefolder', sys.argv[2], progress=False)\n"
            "print(json.dumps([x.tolist() for x in a.train_x]))\n"
            "load_arrays('imagefolder', sys.argv[1], progress=False)")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(fastjem.__file__).parents[1]),
                                                        os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path / "bad"), str(tmp_path / "good")],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 1, (proc.returncode, proc.stderr[-3000:])
    assert "4 file(s) could not be read as images" in proc.stderr, proc.stderr[-3000:]
    for name, why in (("flipped", r"its compressed image data is broken \(.+\)"),
                      ("short", "its image data ends after 39 of the 52 bytes its rows take"),
                      ("unfiltered", "row 2 has filter type 9, not one of PNG's 0-4"),
                      ("split", r"its image data \(IDAT chunks\) is split by other chunks")):
        assert re.search(rf"{name}\.png is a PNG whose image data is damaged, {why}: re-save it", proc.stderr), (
            name, proc.stderr[-3000:])
    # the open-ended stream's image among the good folder's, as its pixels
    decoded = json.loads(proc.stdout.splitlines()[-1])
    assert torch.from_numpy(pixels).permute(2, 0, 1).tolist() in decoded
    assert _png_fault(_png_bytes(raw, 4, 4, stream=open_ended)).rows_whole
    # Adam7: seven passes of sub-images, rows of each (a pass of a small image may hold none)
    image = np.random.default_rng(0).integers(0, 256, (9, 5, 3), dtype=np.uint8)
    passes = [image[y0::dy, x0::dx] for x0, y0, dx, dy in ADAM7]
    interlaced = _png_bytes(b"".join(b"\x00" + row.tobytes() for part in passes if part.size for row in part), 5, 9,
                            interlace=1)
    assert _png_fault(interlaced) is None
    assert torch.equal(read_image(interlaced), torch.from_numpy(image).permute(2, 0, 1))


def test_an_image_past_pillows_pixel_limit_is_named_not_a_traceback(tmp_path, monkeypatch):
    """A TIFF of 180 M pixels and more (a scan, a satellite tile): Pillow's DecompressionBombError, not an OSError,
    left the command as a traceback; named with the other bad files, with what to do. (The limit lowered here.)"""
    from PIL import Image as PILImage

    _write_folder(tmp_path / "imgs", ("a", "b"), n=3, size=8)
    Image.fromarray(np.zeros((16, 16, 3), np.uint8)).save(tmp_path / "imgs" / "b" / "scan.tif")
    monkeypatch.setattr(PILImage, "MAX_IMAGE_PIXELS", 100)  # twice this refused: 256 pixels are
    with pytest.raises(DataNotFoundError, match=r"1 file\(s\) could not be read as images:\n  .*scan\.tif has more "
                                                r"pixels than Pillow decodes \(Image size \(256 pixels\) exceeds limit "
                                                r".*\): shrink it first \(--image-size resizes it only once decoded\)"):
        load_arrays("imagefolder", tmp_path / "imgs", image_size=8)
    # a PNG too, which torchvision decoded whole (a small file of zeros may claim gigabytes of pixels): refused before
    # its image data is inflated
    from fastjem.data import _png_fault, read_image

    Image.fromarray(np.zeros((16, 16, 3), np.uint8)).save(tmp_path / "big.png")
    big = (tmp_path / "big.png").read_bytes()
    monkeypatch.setattr("fastjem.data.zlib.decompressobj", lambda: pytest.fail("inflated"))
    assert _png_fault(big).rows_whole
    with pytest.raises(DataNotFoundError, match=r"x\.png has more pixels than Pillow decodes \(Image size \(256 "):
        read_image(big, "x.png")

def test_a_jpeg_gif_or_webp_past_pillows_pixel_limit_is_refused_before_torchvision_decodes_it(tmp_path, monkeypatch):
    """JPEG, GIF and WebP images of 180 M pixels and more were decoded whole by torchvision (a small file may claim
    gigabytes of pixels), where Pillow refuses other formats: refused before decoding, their size read from the
    header, named with the other bad files. (The limit lowered here.)"""
    import io

    import torchvision.io
    from PIL import Image as PILImage

    from fastjem.data import _header_size, read_image

    rng = np.random.default_rng(0)
    image = Image.fromarray(rng.integers(0, 255, (12, 20, 3), dtype=np.uint8))
    exif = Image.Exif()
    exif[0x0112] = 6
    variants = {"jpg": ("JPEG", {}), "progressive.jpg": ("JPEG", {"progressive": True}),
                "exif.jpg": ("JPEG", {"exif": exif.tobytes()}), "gif": ("GIF", {}), "webp": ("WEBP", {}),
                "lossless.webp": ("WEBP", {"lossless": True}), "alpha.webp": ("WEBP", {"alpha": True}),
                "exif.webp": ("WEBP", {"exif": exif.tobytes()})}
    encoded = {}
    for name, (fmt, options) in variants.items():
        buf = io.BytesIO()
        alpha = options.pop("alpha", False)
        (image.convert("RGBA") if alpha else image).save(buf, fmt, **options)
        encoded[name] = buf.getvalue()
        assert _header_size(encoded[name]) == (20, 12), name  # the size Pillow and torchvision decode
    assert _header_size(b"\xff\xd8\xff\xd9") is None and _header_size(b"BM" + bytes(40)) is None
    monkeypatch.setattr(PILImage, "MAX_IMAGE_PIXELS", 100)  # twice this refused: 240 pixels are
    monkeypatch.setattr(torchvision.io, "decode_image", lambda *a, **k: pytest.fail("decoded by torchvision"))
    for name, data in encoded.items():
        with pytest.raises(DataNotFoundError, match=rf"{re.escape(name)} has more pixels than Pillow decodes "
                                                    r"\(Image size \(240 pixels\) exceeds limit"):
            read_image(data, name)
    # a header it does not read itself: the size from Pillow's lazy open
    monkeypatch.setattr("fastjem.data._header_size", lambda data: None)
    for name, data in encoded.items():
        with pytest.raises(DataNotFoundError, match=rf"{re.escape(name)} has more pixels than Pillow decodes"):
            read_image(data, name)
    # in a folder: named with the other bad files (the folder's PNGs decoded by torchvision)
    monkeypatch.undo()
    monkeypatch.setattr(PILImage, "MAX_IMAGE_PIXELS", 100)
    monkeypatch.setenv("FASTJEM_CACHE", str(tmp_path / "cache"))
    _write_folder(tmp_path / "imgs", ("a", "b"), n=2, size=8)
    (tmp_path / "imgs" / "b" / "photo.jpg").write_bytes(encoded["jpg"])
    with pytest.raises(DataNotFoundError, match=r"1 file\(s\) could not be read as images:\n  .*photo\.jpg has more "
                                                r"pixels than Pillow decodes"):
        load_arrays("imagefolder", tmp_path / "imgs", image_size=8)


def test_images_past_pillows_bomb_threshold_are_named_in_one_warning(tmp_path, monkeypatch):
    """An image of 90-180 M pixels: Pillow's DecompressionBombWarning printed raw, naming no file; it is decoded, and
    one fastjem warning names such images, whichever decoder read them (TIFF: Pillow; PNG: torchvision). (The
    threshold lowered here.)"""
    from PIL import Image as PILImage

    from fastjem.errors import FastJEMWarning

    _write_folder(tmp_path / "imgs", ("a", "b"), n=3, size=8)
    for name in ("scan.tif", "big.png"):
        Image.fromarray(np.full((12, 12, 3), 9, np.uint8)).save(tmp_path / "imgs" / "b" / name)
    monkeypatch.setattr(PILImage, "MAX_IMAGE_PIXELS", 100)  # 144 pixels pass it, under twice it
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        a = load_arrays("imagefolder", tmp_path / "imgs", image_size=8)
    assert len(a.train_y) + len(a.test_y) == 8
    assert not [w for w in caught if issubclass(w.category, PILImage.DecompressionBombWarning)]
    said = [str(w.message) for w in caught if issubclass(w.category, FastJEMWarning) and "bomb" in str(w.message)]
    assert len(said) <= 2 and sum(m.count(" (144 pixels)") for m in said) == 2, said  # (train and test split apart)
    assert all(re.search(r"image\(s\) of (train|test) have more than 100 pixels, Pillow's decompression-bomb "
                         r"threshold: .*(scan\.tif|big\.png) \(144 pixels\).*; each was decoded whole .* \(Pillow "
                         r"refuses images of more than 200 pixels\)", m) for m in said), said
    assert "scan.tif" in " ".join(said) and "big.png" in " ".join(said)


def test_nested_class_folders_in_an_archive_take_their_top_folder_as_the_class(tmp_path):
    """<class>/<sub>/<image>: the class is the folder below what every member shares, as the folder reads it."""
    for c in ("cat", "dog"):
        for sub in ("s1", "s2"):
            _write_folder(tmp_path / "nested" / c, (sub,), n=3)
    folder = load_arrays("imagefolder", tmp_path / "nested")
    assert folder.info.classes == ("cat", "dog")
    (tmp_path / "packed").mkdir()
    _archive(tmp_path / "nested", tmp_path / "packed" / "n.tar.gz", "top/")
    _same_arrays(load_arrays("imagefolder", tmp_path / "packed"), folder)


def test_an_archive_per_class_reads_as_the_folder_they_unpack_to(tmp_path):
    """cat.tar.gz holding cat/indoor/ and cat/outdoor/, dog.tar.gz holding dog/: the classes are cat and dog, as in
    the folder both unpack to (read archive by archive, cat's subfolders became classes); one archive a class with
    the same subfolder in each (<class>/images/) kept one class, "images", of every image."""
    for c, subs in (("cat", ("indoor", "outdoor")), ("dog", ("x",)), ("emu", ("images",))):
        for sub in subs:
            _write_folder(tmp_path / "unpacked" / c, (sub,), n=3)
    folder = load_arrays("imagefolder", tmp_path / "unpacked")
    assert folder.info.classes == ("cat", "dog", "emu")
    (tmp_path / "packed").mkdir()
    for c in ("cat", "dog", "emu"):
        _archive(tmp_path / "unpacked" / c, tmp_path / "packed" / f"{c}.tar.gz", f"{c}/")
    _same_arrays(load_arrays("imagefolder", tmp_path / "packed"), folder)
    for c in ("a", "b", "c"):
        _write_folder(tmp_path / "same" / c, ("images",), n=3)
        (tmp_path / "same-packed").mkdir(exist_ok=True)
        _archive(tmp_path / "same" / c, tmp_path / "same-packed" / f"{c}.zip", f"{c}/", fmt="zip")
    packed = load_arrays("imagefolder", tmp_path / "same-packed")
    assert packed.info.classes == ("a", "b", "c")
    _same_arrays(packed, load_arrays("imagefolder", tmp_path / "same"))


def test_one_image_path_in_two_archives_is_refused_not_read_twice(tmp_path):
    """A second download beside the first ("imgs (1).zip"), or a member appended twice to a tar: unpacked together,
    one copy replaces the other; read in place every image counted twice (validation images the network trained
    on). Refused, both copies named."""
    import tarfile

    _write_folder(tmp_path / "unpacked" / "train", ("a", "b"), n=2)
    _write_folder(tmp_path / "unpacked" / "test", ("a", "b"), n=1)
    (tmp_path / "packed").mkdir()
    _archive(tmp_path / "unpacked", tmp_path / "packed" / "imgs.zip", fmt="zip")
    assert len(load_arrays("imagefolder", tmp_path / "packed").train_y) == 4
    shutil.copy(tmp_path / "packed" / "imgs.zip", tmp_path / "packed" / "imgs (1).zip")
    with pytest.raises(DataNotFoundError, match=r"imgs \(1\)\.zip:test/a/0\.png and imgs\.zip:test/a/0\.png are one "
                                                r"image, test/a/0\.png, twice: unpacked together, one would replace "
                                                r"the other; remove the copy"):
        load_arrays("imagefolder", tmp_path / "packed")
    (tmp_path / "appended").mkdir()
    tar = tmp_path / "appended" / "imgs.tar"
    with tarfile.open(tar, "w") as t:
        t.add(tmp_path / "unpacked", ".")
    with tarfile.open(tar, "a") as t:
        t.add(tmp_path / "unpacked" / "train" / "b" / "1.png", "train/b/1.png")
    with pytest.raises(DataNotFoundError, match=r"imgs\.tar:\./train/b/1\.png and imgs\.tar:train/b/1\.png are one "
                                                r"image, train/b/1\.png, twice"):
        load_arrays("imagefolder", tmp_path / "appended")

@pytest.mark.parametrize("kind", ["hard", "symbolic", "zip symbolic"])
def test_a_link_in_an_archive_is_refused_not_dropped(tmp_path, kind):
    """A link member cannot be read in the archive's one pass (and would make one image two): refused with its
    name, where it used to vanish without a word (a class of links only then took no label, shifting the others)."""
    import tarfile
    import zipfile

    _write_folder(tmp_path / "imgs")
    archive = tmp_path / "packed" / ("imgs.zip" if kind.startswith("zip") else "imgs.tar.gz")
    archive.parent.mkdir()
    if kind.startswith("zip"):
        with zipfile.ZipFile(archive, "w") as zf:
            for p in sorted((tmp_path / "imgs").rglob("*.png")):
                zf.write(p, p.relative_to(tmp_path / "imgs").as_posix())
            link = zipfile.ZipInfo("b/link.png")
            link.external_attr = (0o120777 << 16)  # a symbolic link, its target as content
            zf.writestr(link, "../a/0.png")
    else:
        (tmp_path / "imgs" / "b" / "link.png").unlink(missing_ok=True)
        if kind == "hard":
            os.link(tmp_path / "imgs" / "a" / "0.png", tmp_path / "imgs" / "b" / "link.png")
        else:
            os.symlink("../a/0.png", tmp_path / "imgs" / "b" / "link.png")
        with tarfile.open(archive, "w:gz") as tar:
            tar.add(tmp_path / "imgs", "imgs")
    with pytest.raises(DataNotFoundError, match=r"b/link\.png is a link to .*0\.png, which is not read from an "
                                                r"archive: replace the link by a copy"):
        load_arrays("imagefolder", archive.parent)


@pytest.mark.parametrize("kind", ["encrypted", "deflate64"])
def test_a_zip_member_that_zipfile_cannot_open_is_named_not_a_traceback(tmp_path, kind):
    """A password-protected zip, or one packed by Deflate64 (Windows' own zips of large folders) or PPMd: zipfile
    raised RuntimeError or NotImplementedError out of the command, a traceback; said with the member and what to do.
    A member that is not an image is skipped as any such member is."""
    import struct

    _write_folder(tmp_path / "imgs", ("a", "b"), n=2)
    (tmp_path / "imgs" / "a" / "-notes.txt").write_text("not an image, and the zip's first member")
    (tmp_path / "packed").mkdir()
    archive = _archive(tmp_path / "imgs", tmp_path / "packed" / "imgs.zip", fmt="zip")
    data = bytearray(archive.read_bytes())
    # the flags' bit 0 (encrypted) or the method (9, Deflate64) of each member, in the central directory (flags at
    # +8, method at +10), which zipfile reads, and in the local headers (+6, +8)
    for sig, at in ((b"PK\x01\x02", 8), (b"PK\x03\x04", 6)):
        i = data.find(sig)
        while i >= 0:
            if kind == "encrypted":
                data[i + at] |= 0x1
            else:
                data[i + at + 2:i + at + 4] = struct.pack("<H", 9)
            i = data.find(sig, i + 4)
    archive.write_bytes(bytes(data))
    why = (r"it is encrypted \(a zip with a password\)" if kind == "encrypted"
           else r"That compression method is not supported \(deflate64\)")
    with pytest.raises(DataNotFoundError, match=rf"imgs\.zip: a/0\.png cannot be read: {why}; unpack the archive "
                                                r"yourself and pass the folder"):
        load_arrays("imagefolder", tmp_path / "packed")

def test_a_folder_with_one_image_a_class_says_no_test_set_can_be_held_out(tmp_path):
    _write_folder(tmp_path / "ones", n=1)
    with pytest.raises(DataNotFoundError, match=r"ones: no class holds two images or more, so none can be held "
                                                r"out as the test set"):
        load_arrays("imagefolder", tmp_path / "ones")


def test_the_cache_notices_class_folders_swapped_or_added(tmp_path):
    import os

    rng = np.random.default_rng(0)
    for c in ("a", "b"):
        (tmp_path / "imgs" / c).mkdir(parents=True)
        for i in range(3):
            path = tmp_path / "imgs" / c / f"{i}.bmp"  # one byte size for all, one mtime as an archive leaves them
            Image.fromarray(rng.integers(0, 255, (8, 8, 3), dtype=np.uint8)).save(path)
            os.utime(path, ns=(10**18, 10**18))
    before = load_arrays("imagefolder", tmp_path / "imgs")
    # swapped names: every path, label, size and mtime stays, the images behind them do not
    (tmp_path / "imgs" / "a").rename(tmp_path / "imgs" / "t")
    (tmp_path / "imgs" / "b").rename(tmp_path / "imgs" / "a")
    (tmp_path / "imgs" / "t").rename(tmp_path / "imgs" / "b")
    after = load_arrays("imagefolder", tmp_path / "imgs")
    x_before = torch.cat([before.train_x, before.test_x])
    y_before = torch.cat([before.train_y, before.test_y])
    for x, y in zip(torch.cat([after.train_x, after.test_x]), torch.cat([after.train_y, after.test_y])):
        assert y_before[(x_before == x).flatten(1).all(1)].item() == 1 - y
    (tmp_path / "imgs" / "c").mkdir()
    with pytest.raises(DataNotFoundError, match=r"c hold no images"):
        load_arrays("imagefolder", tmp_path / "imgs")


def test_sixteen_bit_images_are_rounded_not_clipped(tmp_path):
    (tmp_path / "deep" / "a").mkdir(parents=True)
    (tmp_path / "deep" / "b").mkdir()
    for c in ("a", "b"):
        for i in range(3):
            Image.fromarray(np.full((8, 8), 32896 * (i % 2), dtype=np.uint16)).save(tmp_path / "deep" / c / f"{i}.png")
    a = load_arrays("imagefolder", tmp_path / "deep")
    assert set(torch.cat([a.train_x, a.test_x]).unique().tolist()) == {0, 128}  # 32896 = 128 * 257


def test_non_square_images_need_image_size(tmp_path):
    rng = np.random.default_rng(0)
    for c in ("a", "b"):
        (tmp_path / "wide" / c).mkdir(parents=True)
        for i in range(3):
            Image.fromarray(rng.integers(0, 255, (16, 24, 3), dtype=np.uint8)).save(tmp_path / "wide" / c / f"{i}.png")
    with pytest.raises(DataNotFoundError, match="not square: pass --image-size"):
        load_arrays("imagefolder", tmp_path / "wide")
    assert load_arrays("imagefolder", tmp_path / "wide", image_size=16).train_x.shape[1:] == (3, 16, 16)


def test_named_dataset_folders_scale_the_crop_padding_with_the_image_size(tmp_path):
    classes = [f"c{i}" for i in range(10)]
    _write_folder(tmp_path / "cifar" / "train", classes, n=2, size=32)
    _write_folder(tmp_path / "cifar" / "test", classes, n=1, size=32)
    assert [load_arrays("cifar10", tmp_path / "cifar", image_size=s).info.pad for s in (16, 32, 64)] == [2, 4, 8]
    # reflect padding is less than the side: none at one pixel (torch refused padding 1 at the first batch, mid-run)
    assert [load_arrays(n, tmp_path / "cifar", image_size=1).info.pad for n in ("cifar10", "imagefolder")] == [0, 0]
    one = DeviceData(load_arrays("imagefolder", tmp_path / "cifar", image_size=1), torch.device("cpu"), val_size=0)
    assert one.draw(4)[0].shape == (4, 3, 1, 1)


def test_padding_given_with_tensors_is_less_than_the_side():
    from fastjem.data import arrays_from_tensors
    from fastjem.errors import ConfigError

    x, y = torch.zeros(6, 3, 8, 8, dtype=torch.uint8), torch.arange(6) % 2
    assert arrays_from_tensors(x, y, x, y, pad=7).info.pad == 7
    for pad in (8, -1):
        with pytest.raises(ConfigError, match=rf"pad={pad}: the reflect padding before the random crop must lie in "
                                              r"0\.\.7, less than the images' side \(8\); 0 for none"):
            arrays_from_tensors(x, y, x, y, pad=pad)


def test_an_image_folder_pads_an_eighth_flips_and_holds_out_a_tenth(tmp_path):
    """A generic folder's augmentation and split defaults: reflect padding of an eighth of the image size (at least
    one pixel), horizontal flips, a validation split of a tenth of the training images."""
    _write_folder(tmp_path / "f", ("a", "b"), n=30, size=8)
    for size, pad in ((8, 1), (32, 4), (64, 8)):
        a = load_arrays("imagefolder", tmp_path / "f", image_size=size)
        assert (a.info.image_size, a.info.pad, a.info.flip) == (size, pad, True)
        assert len(a.train_y) >= 44 and a.info.default_val_size == len(a.train_y) // 10


def test_hidden_files_and_odd_entries_are_not_data(tmp_path):
    _write_folder(tmp_path / "clean", ("a", "b"), n=6)
    clean = load_arrays("imagefolder", tmp_path / "clean")
    _write_folder(tmp_path / "messy", ("a", "b"), n=6)
    messy = tmp_path / "messy"
    (messy / "a" / "._0.png").write_bytes(b"\x00\x05\x16\x07 AppleDouble")  # macOS resource forks
    (messy / "__MACOSX" / "a").mkdir(parents=True)
    (messy / "__MACOSX" / "a" / "0.png").write_bytes((messy / "a" / "0.png").read_bytes())
    (messy / "b" / ".ipynb_checkpoints").mkdir()
    (messy / "b" / ".ipynb_checkpoints" / "0.png").write_bytes((messy / "b" / "0.png").read_bytes())
    (messy / "b" / "album.png").mkdir()  # a folder named like an image
    _same_arrays(load_arrays("imagefolder", messy), clean)
    # (a link to nothing is refused: test_dangling_links_and_unreadable_subfolders_are_refused_not_skipped)
    (messy / "a" / "empty.png").write_bytes(b"")
    with pytest.raises(DataNotFoundError, match=r"empty.png is empty \(0 bytes\)"):
        load_arrays("imagefolder", messy)


def test_images_in_formats_that_are_not_read_are_said_to_be_left_out(tmp_path):
    """A phone's HEIC photos among a class's JPEGs, an AVIF: left out (as a README.txt is, silently), which is said,
    with their formats, in a folder and in an archive; a class of such images alone is refused as one without
    images."""
    _write_folder(tmp_path / "imgs", ("a", "b"), n=6)
    clean = load_arrays("imagefolder", tmp_path / "imgs")
    for name in ("a/IMG_0001.HEIC", "a/IMG_0002.heic", "b/sub/photo.avif"):
        (tmp_path / "imgs" / name).parent.mkdir(exist_ok=True)
        (tmp_path / "imgs" / name).write_bytes(b"\x00\x00\x00\x18ftypheic")
    (tmp_path / "imgs" / "a" / "README.txt").write_text("not an image: left out without a word")
    unread = (r"3 image\(s\) under .* are in formats that are not read \(\.heic 2, \.avif 1; .*IMG_0001\.HEIC, "
              r"\.\.\.\) and ")
    with pytest.warns(UserWarning, match=unread + r"are left out: convert them to PNG or JPEG"):
        _same_arrays(load_arrays("imagefolder", tmp_path / "imgs"), clean)
    (tmp_path / "packed").mkdir()
    _archive(tmp_path / "imgs", tmp_path / "packed" / "imgs.zip", fmt="zip")
    with pytest.warns(UserWarning, match=unread.replace(".*IMG", "imgs\\.zip:a/IMG")):
        _same_arrays(load_arrays("imagefolder", tmp_path / "packed"), clean)
    (tmp_path / "imgs" / "c").mkdir()
    (tmp_path / "imgs" / "c" / "IMG_0003.heic").write_bytes(b"\x00\x00\x00\x18ftypheic")
    with pytest.warns(UserWarning, match=r"4 image\(s\)"), pytest.raises(DataNotFoundError, match=r"c hold no images"):
        load_arrays("imagefolder", tmp_path / "imgs")

def test_symlinked_folders_inside_a_class_are_read(tmp_path):
    import os

    _write_folder(tmp_path / "real", ("a", "b"), n=3)
    _write_folder(tmp_path / "extra", ("more",), n=3)
    _write_folder(tmp_path / "linked", ("a", "b"), n=3)
    os.symlink(tmp_path / "extra" / "more", tmp_path / "linked" / "a" / "more")
    a = load_arrays("imagefolder", tmp_path / "linked")
    assert len(a.train_y) + len(a.test_y) == 9 and (torch.cat([a.train_y, a.test_y]) == 0).sum() == 6


def test_an_unwritable_cache_costs_a_warning_not_the_run(tmp_path, monkeypatch):
    _write_folder(tmp_path / "imgs", ("a", "b"), n=3)
    (tmp_path / "file").write_text("not a folder")
    monkeypatch.setenv("FASTJEM_CACHE", str(tmp_path / "file" / "cache"))
    with pytest.warns(UserWarning, match="not cached"):
        a = load_arrays("imagefolder", tmp_path / "imgs")
    assert len(a.train_y) + len(a.test_y) == 6


def test_a_lone_train_folder_given_as_a_named_dataset_says_so(tmp_path):
    _write_folder(tmp_path / "only" / "train", [f"c{i}" for i in range(10)], n=1)
    with pytest.raises(DataNotFoundError, match="add the missing split"):
        load_arrays("cifar10", tmp_path / "only")


def test_data_dir_expands_the_home_folder(tmp_path, monkeypatch):
    _write_folder(tmp_path / "imgs", ("a", "b"), n=3)
    monkeypatch.setenv("HOME", str(tmp_path))
    _same_arrays(load_arrays("imagefolder", "~/imgs"), load_arrays("imagefolder", tmp_path / "imgs"))


def test_different_class_folders_are_named_with_what_to_do(tmp_path):
    """train/ and test/ must hold the same class folders: each side's extra ones named with the remedy, a class
    spelled in another case as a rename; a test set of some of the classes only is refused (they would go
    unmeasured), and so is a held-out val/ like it."""
    _write_folder(tmp_path / "d" / "train", ("a", "b", "Cat"), n=2)
    _write_folder(tmp_path / "d" / "test", ("a", "c", "cat"), n=2)
    with pytest.raises(DataNotFoundError, match=re.escape(
            "have different class folders: train/Cat/ and test/cat/ differ in case only: rename one as the other; "
            "only in train/: b/ (give each a folder in test/ with test images of the class, or remove it from train/ "
            "to leave the class out); only in test/: c/ (the network cannot learn a class without training images: "
            "move some of its images into a folder of that name in train/, or remove it from test/). train/ and "
            "test/ must hold the same class folders, named alike")):
        load_arrays("imagefolder", tmp_path / "d")
    _write_folder(tmp_path / "sub" / "train", ("a", "b"), n=2)
    _write_folder(tmp_path / "sub" / "val", ("a",), n=2)
    with pytest.raises(DataNotFoundError, match=r"different class folders: only in train/: b/ \(give each a folder "
                                                r"in val/ .*\)\. train/ and val/ must hold the same class folders"):
        load_arrays("imagefolder", tmp_path / "sub")


def test_temporary_files_of_killed_cache_writes_are_cleared(tmp_path, monkeypatch):
    import os
    import time

    monkeypatch.setenv("FASTJEM_CACHE", str(tmp_path / "cache"))
    (tmp_path / "cache").mkdir()
    old, recent = tmp_path / "cache" / ".imagefolder-a.pt.x1.tmp", tmp_path / "cache" / ".imagefolder-b.pt.x2.tmp"
    for f in (old, recent):
        f.write_bytes(b"partial")
    os.utime(old, (time.time() - 7200, time.time() - 7200))
    _write_folder(tmp_path / "imgs", ("a", "b"), n=3)
    load_arrays("imagefolder", tmp_path / "imgs")
    assert not old.exists() and recent.exists()  # an hour old goes; a write that may be under way stays


def test_a_folders_test_split_does_not_move_when_images_are_added(tmp_path, monkeypatch):
    """A folder without train/ and test/: each image's split follows from its own path, so images added to the
    folder never move an image the model trained on into the test set (a shuffle of the whole list moved 79 of
    100 there); about a sixth of every class is test, at least one image of a class of two; the archive of the
    folder splits alike."""
    monkeypatch.setenv("FASTJEM_CACHE", str(tmp_path / "cache"))
    _write_folder(tmp_path / "imgs", ("a", "b"), n=60)
    rng = np.random.default_rng(2)  # ten classes of two images: each gives one to test, keeps one
    for k in range(10):
        (tmp_path / "imgs" / f"s{k}").mkdir()
        for i in range(2):
            image = Image.fromarray(rng.integers(0, 255, (8, 8, 3), dtype=np.uint8))
            image.save(tmp_path / "imgs" / f"s{k}" / f"{i}.png")

    def pixels(x):
        return {bytes(img.numpy()) for img in x}

    before = load_arrays("imagefolder", tmp_path / "imgs")
    per_class = [int((before.test_y == k).sum()) for k in range(12)]
    assert 4 <= per_class[0] <= 18 and 4 <= per_class[1] <= 18 and per_class[2:] == [1] * 10
    rng = np.random.default_rng(1)
    for c in ("a", "b"):
        for i in range(60, 90):
            Image.fromarray(rng.integers(0, 255, (8, 8, 3), dtype=np.uint8)).save(tmp_path / "imgs" / c / f"{i}.png")
    after = load_arrays("imagefolder", tmp_path / "imgs")
    assert len(after.train_y) + len(after.test_y) == 200
    assert not pixels(before.train_x) & pixels(after.test_x)  # nothing trained on is test now
    assert pixels(before.test_x) <= pixels(after.test_x)
    (tmp_path / "packed").mkdir()
    _archive(tmp_path / "imgs", tmp_path / "packed" / "imgs.tar.gz")
    _same_arrays(load_arrays("imagefolder", tmp_path / "packed"), after)


def test_index_named_class_folders_take_their_numbers_as_labels(tmp_path, monkeypatch):
    """Folders 0..11 are labelled 0..11 (sorted as text, folder 2 took label 4), and two index-named class lists in
    different orders differ (a converted checkpoint's classes 0..99 against such a folder permuted the labels)."""
    from fastjem.data import class_names_differ

    monkeypatch.setenv("FASTJEM_CACHE", str(tmp_path / "cache"))
    for c in range(12):
        (tmp_path / "imgs" / str(c)).mkdir(parents=True)
        for i in range(6):
            Image.fromarray(np.full((4, 4, 3), 20 * c, np.uint8)).save(tmp_path / "imgs" / str(c) / f"{i}.png")
    a = load_arrays("imagefolder", tmp_path / "imgs")
    assert a.info.classes == tuple(str(c) for c in range(12))
    # every image's label is its folder's number (its pixels say which folder)
    assert torch.equal(a.train_x[:, 0, 0, 0].long(), 20 * a.train_y)
    as_text = sorted(str(c) for c in range(12))
    assert class_names_differ(a.info.classes, as_text) and not class_names_differ(a.info.classes, a.info.classes)
    # named by index on one side only: not comparable (SVHN's 0..9 against its digits' names), as before
    assert not class_names_differ([str(c) for c in range(10)], [f"c{c}" for c in range(10)])
    assert class_names_differ(["cat", "dog"], ["dog", "cat"])


def test_messages_show_the_first_five_class_names():
    from fastjem.data import shown_classes

    names = [f"c{i}" for i in range(6)]
    assert shown_classes(names[:5]) == "c0, c1, c2, c3, c4"
    assert shown_classes(names) == "c0, c1, c2, c3, c4, ..."


def test_a_link_that_makes_one_image_two_is_refused(tmp_path, monkeypatch):
    """A symbolic link up a level (a loop) or to another class's folder listed each image several times under two
    labels and in both splits (486 entries from 12 images); a folder read once, and one file reached by two paths,
    are refused with the link named."""
    import os

    monkeypatch.setenv("FASTJEM_CACHE", str(tmp_path / "cache"))
    _write_folder(tmp_path / "loop", ("a", "b"), n=3)
    os.symlink(tmp_path / "loop", tmp_path / "loop" / "a" / "up")
    with pytest.raises(DataNotFoundError, match=r"reached through a symbolic link \(.*loop/a/up/b/0.png\)"):
        load_arrays("imagefolder", tmp_path / "loop")
    _write_folder(tmp_path / "sib", ("a", "b"), n=3)
    os.symlink(tmp_path / "sib" / "b", tmp_path / "sib" / "a" / "b_link")
    with pytest.raises(DataNotFoundError, match=r"through a symbolic link \(.*b_link.*\): a link makes one image two"):
        load_arrays("imagefolder", tmp_path / "sib")
    _write_folder(tmp_path / "split" / "train", ("a", "b"), n=3)
    _write_folder(tmp_path / "split" / "test", ("a", "b"), n=1)
    os.symlink(tmp_path / "split" / "train" / "a" / "1.png", tmp_path / "split" / "test" / "a" / "x.png")
    with pytest.raises(DataNotFoundError, match=r"test/a/x.png is the training file .*train/a/1.png \(a symbolic "):
        load_arrays("imagefolder", tmp_path / "split")
    # a hard link is one file under two names too (it was read as two images: two labels, or both splits)
    _write_folder(tmp_path / "hard", ("a", "b"), n=3)
    os.link(tmp_path / "hard" / "a" / "0.png", tmp_path / "hard" / "b" / "same.png")
    with pytest.raises(DataNotFoundError, match=r"a/0.png and .*b/same.png are one file, reached through a hard "
                                                r"link: a link makes one image two"):
        load_arrays("imagefolder", tmp_path / "hard")
    (tmp_path / "split" / "test" / "a" / "x.png").unlink()
    os.link(tmp_path / "split" / "train" / "a" / "1.png", tmp_path / "split" / "test" / "a" / "x.png")
    with pytest.raises(DataNotFoundError, match=r"test/a/x.png is the training file .*train/a/1.png \(a hard link\)"):
        load_arrays("imagefolder", tmp_path / "split")


def test_a_folder_reached_again_is_not_walked_again(tmp_path, monkeypatch):
    """Two links up from a class folder: each folder is read once, its second path not walked into (walking on
    below a folder already read, to the kernel's 40-link limit, took 2^40 paths)."""
    import os

    from fastjem.data import image_files

    _write_folder(tmp_path / "loop", ("a", "b"), n=1)
    for name in ("up1", "up2"):
        os.symlink(tmp_path / "loop", tmp_path / "loop" / "a" / name)
    real, looked = os.path.realpath, []

    def counted(path, *args, **kwargs):
        looked.append(path)
        assert len(looked) < 50, "the walk went on below folders it had read"
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os.path, "realpath", counted)
    found = image_files(tmp_path / "loop" / "a")
    monkeypatch.undo()
    # b/ through whichever link the listing gave first
    assert [p.relative_to(tmp_path / "loop" / "a").as_posix() for p in found] in (["0.png", "up1/b/0.png"],
                                                                                  ["0.png", "up2/b/0.png"])


def test_a_small_class_gives_its_smallest_hash_to_the_test_set_and_keeps_its_largest():
    """A class whose images all miss the hash's one-in-six gives the image of smallest hash to the test set; one
    whose images all hit it keeps the image of largest hash for training: fixed picks, so that adding an image of a
    larger (smaller) hash moves no other image between the splits. A class of one image trains."""
    from fastjem.data import _split_off_test
    from fastjem.data import split_hash as digest

    keys = [f"c/{i}.png" for i in range(200)]
    miss = [k for k in keys if digest(k) % 6][:3]
    hit = [k for k in keys if digest(k) % 6 == 0][:3]
    train, test = _split_off_test([(k, 0) for k in miss], miss, "imgs")
    assert [k for k, _ in test] == [min(miss, key=digest)] and len(train) == 2
    train, test = _split_off_test([(k, 1) for k in hit], hit, "imgs")
    assert [k for k, _ in train] == [max(hit, key=digest)] and len(test) == 2
    # a class of one image trains, even where its hash hits
    assert _split_off_test([(hit[0], 2), *[(k, 0) for k in miss]], [hit[0], *miss], "imgs")[0][0] == (hit[0], 2)
    # and where every class has one, no test set is left: said, not an empty stack's IndexError later
    with pytest.raises(DataNotFoundError, match="imgs: no class holds two images or more"):
        _split_off_test([(hit[0], 2), (miss[0], 0)], [hit[0], miss[0]], "imgs")


def test_a_folder_of_many_classes_is_split_in_one_pass_over_its_images():
    """The test split of a folder of 1000 classes (ImageNet's layout, no train/ and test/) went over every image
    once per class: minutes. Counted in label comparisons, not seconds; the split is the one the hash fixes."""
    from fastjem.data import _split_off_test, split_hash

    compared = [0]

    class Label(int):
        def __eq__(self, other):
            compared[0] += 1
            return int(self) == int(other)

        __hash__ = int.__hash__

    n, k = 3000, 100
    keys = [f"{i % k}/{i}.png" for i in range(n)]
    items = [(key, Label(i % k)) for i, key in enumerate(keys)]
    train, test = _split_off_test(items, keys, "imgs")
    assert compared[0] < 5 * n, f"{compared[0]} comparisons for {n} images of {k} classes"
    assert len(train) + len(test) == n and train == [x for x in items if x not in test]
    assert {key for key, _ in test} == {key for key in keys if split_hash(key) % 6 == 0}
    assert [key for key, _ in test] == sorted((key for key, _ in test), key=keys.index)  # items keep their order


def test_many_images_decode_in_order_with_chunks_in_flight(monkeypatch, counted_bars):
    """More images than the chunks in flight at once (256 a chunk, two per decoding thread): each comes back in
    the order given, fitted to the size asked, and counted by the bar (the chunks taken while more are read and
    those drained at the end), and the bad ones are named at the end, ten and a count of the rest."""
    import io

    import fastjem.data as data_mod

    monkeypatch.setattr(data_mod, "_decode_threads", lambda: 1)  # so 3 chunks, 513 images, are more than in flight
    encoded = []
    for i in range(700):
        buf = io.BytesIO()
        Image.fromarray(np.full((4, 4, 3), i % 251, np.uint8)).save(buf, format="PNG")
        encoded.append((f"img{i}.png", buf.getvalue()))
    out = data_mod._decode_many(iter(encoded), "test", size=2, total=len(encoded))
    assert len(out) == 700 and all(x.shape == (3, 2, 2) for x in out)
    assert {(n, total) for n, total, _ in counted_bars} == {(700, 700)}
    assert [int(x[0, 0, 0]) for x in out] == [i % 251 for i in range(700)]
    bad = [(f"bad{i}.png", b"not an image") for i in range(11)]
    with pytest.raises(DataNotFoundError) as ten:
        data_mod._decode_many(iter(encoded[:300] + bad[:10]), "test", progress=False)
    assert str(ten.value).startswith("10 file(s) could not be read as images:\n  bad0") and "bad9" in str(ten.value)
    with pytest.raises(DataNotFoundError) as eleven:
        data_mod._decode_many(iter(encoded[:300] + bad), "test", progress=False)
    said = str(eleven.value)
    assert said.startswith("11 file(s) could not be read as images (and 1 more):\n  bad0") and "bad10" not in said


def test_exif_orientation_sixteen_bit_tiffs_and_more_extensions(tmp_path, monkeypatch):
    """A phone photo stored sideways with an EXIF orientation loads as viewers show it (it loaded rotated; a WebP did
    until it was sent to Pillow's decoder); a 16-bit TIFF or PNG is rounded to 8 bits (Pillow's fallback clipped it
    to white); .jfif and .ppm files are images (they were skipped without a word), and so are files whose suffix a
    camera wrote in capitals (.PNG)."""
    from fastjem.data import read_image

    monkeypatch.setenv("FASTJEM_CACHE", str(tmp_path / "cache"))
    stored = np.zeros((8, 16, 3), np.uint8)  # 16 wide, 8 tall: red on the top rows as stored
    stored[:3] = (255, 0, 0)
    exif = Image.Exif()
    exif[0x0112] = 6  # shown turned 90 degrees clockwise: 8 wide, 16 tall, the red rows on the right
    import io

    for fmt in ("JPEG", "PNG", "TIFF", "WEBP"):  # TIFF by Pillow; WebP too (torchvision's decoder did not turn it)
        buf = io.BytesIO()
        Image.fromarray(stored).save(buf, format=fmt, exif=exif, **({"lossless": True} if fmt == "WEBP" else {}))
        x = read_image(buf.getvalue(), fmt)
        assert tuple(x.shape) == (3, 16, 8), fmt
        assert x[0, :, -3:].float().mean() > 200 and x[0, :, :3].float().mean() < 60, fmt
    buf = io.BytesIO()
    Image.fromarray(np.full((4, 4), 32896, dtype=np.uint16)).save(buf, format="TIFF")
    assert set(read_image(buf.getvalue(), "tiff").unique().tolist()) == {128}
    buf = io.BytesIO()
    Image.fromarray(np.full((4, 4), 33096, dtype=np.uint16)).save(buf, format="PNG")  # torchvision's decoder: uint16
    assert set(read_image(buf.getvalue(), "png").unique().tolist()) == {129}  # 128.78, rounded
    # 32768 is 127.502 in 8 bits: 128, where dividing by 65536 instead of 65535 gave 127 (both decoders)
    for fmt in ("PNG", "TIFF"):
        buf = io.BytesIO()
        Image.fromarray(np.full((4, 4), 32768, dtype=np.uint16)).save(buf, format=fmt)
        x = read_image(buf.getvalue(), fmt)
        assert x.shape == (3, 4, 4) and x.dtype == torch.uint8 and set(x.unique().tolist()) == {128}, fmt
    buf = io.BytesIO()
    Image.fromarray(stored).save(buf, format="WEBP", lossless=True)  # no EXIF: torchvision's decoder, same pixels
    assert torch.equal(read_image(buf.getvalue(), "webp"), torch.from_numpy(stored).permute(2, 0, 1))
    for c in ("a", "b"):
        (tmp_path / "more" / c).mkdir(parents=True)
        for i, ext in enumerate((".jfif", ".ppm", ".PNG")):
            Image.fromarray(np.full((4, 4, 3), 50 * i, np.uint8)).save(tmp_path / "more" / c / f"{i}{ext}",
                                                                      format="JPEG" if ext == ".jfif" else None)
    a = load_arrays("imagefolder", tmp_path / "more")
    assert len(a.train_y) + len(a.test_y) == 6


def test_a_changed_folder_replaces_its_cache_file(tmp_path, monkeypatch):
    """Each change to a folder wrote one more full copy of the decoded images into the cache (9 files for one
    folder within minutes); a folder and image size keep one cache file, replaced when the folder changes."""
    monkeypatch.setenv("FASTJEM_CACHE", str(tmp_path / "cache"))
    _write_folder(tmp_path / "imgs", ("a", "b"), n=6)
    load_arrays("imagefolder", tmp_path / "imgs")
    Image.fromarray(np.zeros((8, 8, 3), np.uint8)).save(tmp_path / "imgs" / "a" / "new.png")
    again = load_arrays("imagefolder", tmp_path / "imgs")
    assert len(again.train_y) + len(again.test_y) == 13
    assert len(list((tmp_path / "cache").glob("imagefolder-*.pt"))) == 1
    load_arrays("imagefolder", tmp_path / "imgs", image_size=4)  # another size: a slot of its own
    assert len(list((tmp_path / "cache").glob("imagefolder-*.pt"))) == 2


def test_the_summary_pixel_mean_is_the_mean_over_all_training_pixels(tmp_path, monkeypatch):
    """fastjem data's per-channel pixel mean, summed a chunk at a time (no float copy of the whole set)."""
    from fastjem.data import summarize

    monkeypatch.setenv("FASTJEM_CACHE", str(tmp_path / "cache"))
    x = torch.randint(0, 256, (5000, 3, 4, 4), dtype=torch.uint8)  # more than one chunk of 4096
    arrays = load_arrays("digits")
    arrays.train_x, arrays.train_y = x, torch.zeros(5000, dtype=torch.int64)
    expected = [round(float(m), 2) for m in x.double().mean(dim=(0, 2, 3))]
    assert summarize(arrays, val_size=0)["pixel_mean"] == expected


def test_sixteen_bit_pgm_rounded_and_wide_pixels_refused(tmp_path, monkeypatch):
    """A 16-bit PGM (Pillow reads it as 32-bit mode "I", scaled to 0..65535) is rounded to 8 bits as a 16-bit PNG is
    (it was clipped to white); a float TIFF (values in [0, 1] became black) or a 32-bit integer one (white) is
    refused, the file named, where it was trained on without a word."""
    import io

    from fastjem.data import read_image

    grey = np.array([[0, 1000, 2048], [3000, 3500, 4095]], dtype=">u2")
    pgm = b"P5\n3 2\n4095\n" + grey.tobytes()
    x = read_image(pgm, "a.pgm")
    assert x.shape == (3, 2, 3) and torch.equal(x[0], x[2])
    assert x[0].tolist() == np.rint(grey.astype(float) * 255 / 4095).astype(int).tolist()
    for array in (np.linspace(0, 1, 16, dtype=np.float32).reshape(4, 4), np.arange(16, dtype=np.int32).reshape(4, 4)):
        buf = io.BytesIO()
        Image.fromarray(array).save(buf, format="TIFF")
        with pytest.raises(DataNotFoundError, match=r"wide\.tif holds .* pixels .* save it as an 8- or 16-bit"):
            read_image(buf.getvalue(), "wide.tif")
    # in a folder: the file is named among those that cannot be read, nothing is trained on
    monkeypatch.setenv("FASTJEM_CACHE", str(tmp_path / "cache"))
    for c in ("a", "b"):
        (tmp_path / "f" / c).mkdir(parents=True)
        for i in range(3):
            Image.fromarray(np.full((4, 4, 3), 40 * i, np.uint8)).save(tmp_path / "f" / c / f"{i}.png")
    Image.fromarray(np.ones((4, 4), np.float32)).save(tmp_path / "f" / "a" / "float.tif")
    with pytest.raises(DataNotFoundError, match="float.tif holds floating-point pixels"):
        load_arrays("imagefolder", tmp_path / "f", progress=False)


def test_file_names_that_are_not_utf8_are_read(tmp_path, monkeypatch):
    """A folder copied from an older system keeps file names in Latin-1 (b"caf\\xe9.png"), which Python lists with
    surrogate escapes: the split hash, the cache key and the resume fingerprint stopped at "UnicodeEncodeError:
    'utf-8' codec can't encode character '\\udce9'". They are read, in either layout; where the file system refuses
    such names, there is nothing to test."""
    from fastjem.data import data_fingerprint

    monkeypatch.setenv("FASTJEM_CACHE", str(tmp_path / "cache"))
    for layout in ("flat", "split"):
        root = tmp_path / os.fsdecode(layout.encode() + b"-\xe9")  # the folder and a class named so too
        for split in ("train", "test") if layout == "split" else ("",):
            for c in (b"a", b"\xe9t\xe9"):
                folder = os.path.join(os.fsencode(root / split), c)
                try:
                    os.makedirs(folder)
                except OSError:
                    pytest.skip("this file system takes UTF-8 names only")
                for i in range(4):
                    Image.fromarray(np.full((4, 4, 3), 40 * i, np.uint8)).save(tmp_path / "x.png")
                    try:
                        os.rename(tmp_path / "x.png", folder + b"/caf\xe9%d.png" % i)
                    except OSError:
                        pytest.skip("this file system takes UTF-8 names only")
        a = load_arrays("imagefolder", root, progress=False)
        assert len(a.train_y) + len(a.test_y) == (16 if layout == "split" else 8), layout
        assert data_fingerprint(a) == data_fingerprint(load_arrays("imagefolder", root, progress=False))  # cached


def test_dangling_links_and_unreadable_subfolders_are_refused_not_skipped(tmp_path, monkeypatch):
    """A class folder, subfolder or image that is a symbolic link to nothing (a disk not mounted), or a subfolder
    that cannot be listed, is refused, named; they were skipped without a word: a class dropped (every later label
    shifted), or part of a class's images left out."""
    monkeypatch.setenv("FASTJEM_CACHE", str(tmp_path / "cache"))
    root = tmp_path / "f"
    for c in ("a", "b"):
        (root / c / "sub").mkdir(parents=True)
        for i in range(3):
            Image.fromarray(np.full((4, 4, 3), 40 * i, np.uint8)).save(root / c / f"{i}.png")
            Image.fromarray(np.full((4, 4, 3), 40 * i + 1, np.uint8)).save(root / c / "sub" / f"{i}.png")
    a = load_arrays("imagefolder", root, progress=False)
    assert len(a.train_y) + len(a.test_y) == 12
    for link, target in ((root / "c", tmp_path / "unmounted"), (root / "a" / "more", tmp_path / "gone"),
                         (root / "b" / "9.png", tmp_path / "gone.png")):
        link.symlink_to(target)
        with pytest.raises(DataNotFoundError, match=f"{link} is a symbolic link to {target}, which does not exist"):
            load_arrays("imagefolder", root, progress=False)
        link.unlink()
    # a link to a missing file that is no image (notes.txt) takes no image away: read as before
    (root / "a" / "notes.txt").symlink_to(tmp_path / "gone.txt")
    assert len(load_arrays("imagefolder", root, progress=False).train_y) == len(a.train_y)
    (root / "a" / "notes.txt").unlink()
    # a subfolder that cannot be listed (chmod 000; root reads anything, so the listing is made to fail)
    real_scandir = os.scandir

    def scandir(path="."):
        if os.fspath(path) == str(root / "a" / "sub"):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    with pytest.raises(PermissionError, match="Permission denied"):
        load_arrays("imagefolder", root, progress=False)


def test_a_class_whose_training_images_all_went_to_validation_is_said(tmp_path, monkeypatch):
    """A rare class whose few images the random validation split took has no training image: the classifier never
    learns it, which passed without a word. The trainer's data warns, and `fastjem data` says so in its notes."""
    import io
    from contextlib import redirect_stdout

    from fastjem.cli import main
    from fastjem.data import SPLIT_SEED, arrays_from_tensors, summarize
    from fastjem.errors import FastJEMWarning

    n = 40
    y = torch.arange(n) % 2
    y[torch.randperm(n, generator=torch.Generator().manual_seed(SPLIT_SEED))[0]] = 2  # the first validation image
    x = torch.zeros(n, 3, 8, 8, dtype=torch.uint8)
    arrays = arrays_from_tensors(x, y, x[:6], torch.tensor([0, 1, 2, 0, 1, 2]), classes=["cat", "dog", "okapi"])
    with pytest.warns(FastJEMWarning, match=r"1 class\(es\) have no training images once the 4 validation images "
                                            r"are held out: okapi; .* give a smaller --val-size"):
        DeviceData(arrays, torch.device("cpu"), val_size=4)
    assert summarize(arrays, 4)["untrained"] == ["okapi"] and summarize(arrays, 0)["untrained"] == []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        DeviceData(arrays, torch.device("cpu"), val_size=0)  # with every image trained on: nothing to say
    # `fastjem data` on a folder laid out so: the note names the class
    monkeypatch.setenv("FASTJEM_CACHE", str(tmp_path / "cache"))
    for c, count in (("cat", 20), ("dog", 20)):
        (tmp_path / "f" / c).mkdir(parents=True)
        for i in range(count):
            Image.fromarray(np.full((4, 4, 3), i, np.uint8)).save(tmp_path / "f" / c / f"{i}.png")
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["data", "--dataset", "imagefolder", "--data-dir", str(tmp_path / "f"), "--val-size", "33"]) == 0
    untrained = summarize(load_arrays("imagefolder", tmp_path / "f", progress=False), 33)["untrained"]
    assert untrained and f"have no training images once the 33 validation images are held out: " \
        f"{', '.join(untrained)}" in out.getvalue()


def test_images_beside_the_class_folders_are_said_to_be_unread(tmp_path, monkeypatch):
    """An image left directly in the folder, beside its class folders, belongs to no class: it was left out without
    a word; a warning names it."""
    from fastjem.errors import FastJEMWarning

    monkeypatch.setenv("FASTJEM_CACHE", str(tmp_path / "cache"))
    _write_folder(tmp_path / "f", ("a", "b"), n=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_arrays("imagefolder", tmp_path / "f", progress=False)
    shutil.copy(tmp_path / "f" / "a" / os.listdir(tmp_path / "f" / "a")[0], tmp_path / "f" / "stray.PNG")
    with pytest.warns(FastJEMWarning, match=r"1 image\(s\) directly in .*f \(stray.PNG\) are not read"):
        a = load_arrays("imagefolder", tmp_path / "f", progress=False)
    assert len(a.train_y) + len(a.test_y) == 6


def test_a_dataset_past_the_devices_free_memory_is_refused_before_it_is_copied(monkeypatch):
    """The images are held on the training device: a set larger than its memory was an out-of-memory error (or a
    kill) naming no option; now a ConfigError says what to change, a GPU's message naming --device cpu."""
    import fastjem.memory
    from fastjem.data import arrays_from_tensors
    from fastjem.errors import ConfigError

    x = torch.zeros(100, 3, 16, 16, dtype=torch.uint8)
    arrays = arrays_from_tensors(x, torch.arange(100) % 2, x[:20], torch.arange(20) % 2)
    free = {"cuda": 100 * 768 + 20 * 768 - 1, "cpu": 100 * 768 + 20 * 768 - 1}  # both splits are copies on either
    monkeypatch.setattr(fastjem.memory, "free_bytes", lambda device: free[torch.device(device).type])
    with pytest.raises(ConfigError, match=r"the dataset \(100 training and 20 test images of 3x16x16, uint8, held on "
                                          r"the training device\) takes 90\.0 KiB on cuda, .*give a smaller "
                                          "--image-size, a smaller dataset, or train on --device cpu"):
        DeviceData(arrays, torch.device("cuda"), val_size=10)
    with pytest.raises(ConfigError, match=r"takes 90\.0 KiB on cpu, which has 90\.0 KiB free: give a smaller "
                                          "--image-size, a smaller dataset$"):
        DeviceData(arrays, torch.device("cpu"), val_size=10)
    free["cpu"] += 1  # what fits is made
    assert DeviceData(arrays, torch.device("cpu"), val_size=10).n_train == 90


def test_an_image_folder_too_large_to_decode_is_refused_at_its_first_images(tmp_path, monkeypatch):
    """200 000 images of 512 x 512 were decoded until the machine's memory was spent (a kill, or a MemoryError deep in
    the decoding); the first chunk decoded tells their size: refused then, naming --image-size and the size that
    fits. Smaller images, resized as they are decoded, are read."""
    import fastjem.data
    import fastjem.memory
    from fastjem.errors import ConfigError

    _write_folder(tmp_path / "imgs" / "train", ("a", "b"), n=400, size=16)  # chunks of 256: four
    _write_folder(tmp_path / "imgs" / "test", ("a", "b"), n=2, size=16)
    monkeypatch.setattr(fastjem.data, "_decode_threads", lambda: 1)
    decoded = []
    real = fastjem.data.read_image
    monkeypatch.setattr(fastjem.data, "read_image", lambda *a: decoded.append(1) or real(*a))
    need = 2 * 800 * 3 * 16 * 16  # every image, held twice (the list of them and their stack)
    monkeypatch.setattr(fastjem.memory, "PROC_CGROUP", tmp_path / "no-cgroup")  # the machine's limit left out
    monkeypatch.setattr(fastjem.memory, "_meminfo", lambda: {"MemAvailable": need - 1})
    with pytest.raises(ConfigError, match=r"decoding train \(800 images of 3x16x16, uint8, held twice while they are "
                                          r"stacked\) takes .* on cpu, which has .* free: pass --image-size N to "
                                          r"resize them as they are decoded \(shorter side to N, centre crop; at most "
                                          "15 fits here"):
        load_arrays("imagefolder", tmp_path / "imgs", progress=False)
    assert len(decoded) <= 3 * 256  # refused at the first chunk (three in flight), not once all were decoded
    assert load_arrays("imagefolder", tmp_path / "imgs", image_size=15, progress=False).train_x.shape[1:] == (3, 15, 15)
    monkeypatch.setattr(fastjem.memory, "_meminfo", lambda: {"MemAvailable": need})
    assert load_arrays("imagefolder", tmp_path / "imgs", progress=False).train_x.shape[1:] == (3, 16, 16)


@pytest.mark.parametrize("fmt", ["zip", "gztar"])
def test_image_archives_too_large_to_decode_are_refused_before_the_memory_is_spent(tmp_path, monkeypatch, fmt):
    """Archives read in place had no memory check (their image count is unknown until read): past the free memory
    the process was killed while decoding. A zip's central directory gives the count, refused at the first chunk
    as a folder is; a tar (no index) is refused as the images read pass the free memory. What fits is read."""
    import fastjem.data
    import fastjem.memory
    from fastjem.errors import ConfigError

    _write_folder(tmp_path / "imgs" / "train", ("a", "b"), n=400, size=16)
    _write_folder(tmp_path / "imgs" / "test", ("a", "b"), n=2, size=16)
    (tmp_path / "packed").mkdir()
    ext = "zip" if fmt == "zip" else "tar.gz"
    _archive(tmp_path / "imgs", tmp_path / "packed" / f"imgs.{ext}", "", fmt)
    monkeypatch.setattr(fastjem.data, "_decode_threads", lambda: 1)
    monkeypatch.setenv("FASTJEM_CACHE", str(tmp_path / "cache"))
    decoded = []
    real = fastjem.data.read_image
    monkeypatch.setattr(fastjem.data, "read_image", lambda *a: decoded.append(1) or real(*a))
    monkeypatch.setattr(fastjem.memory, "PROC_CGROUP", tmp_path / "no-cgroup")  # the machine's limit left out
    need = 2 * 804 * 3 * 16 * 16  # every image of both splits, held twice (the list of them and their stack)
    monkeypatch.setattr(fastjem.memory, "_meminfo", lambda: {"MemAvailable": need - 1})
    if fmt == "zip":
        match = (r"decoding imgs\.zip \(804 images of 3x16x16, uint8, held twice while they are stacked\) takes .* "
                 "at most 15 fits here")
    else:
        match = (r"decoding imgs\.tar\.gz takes more than 1\.2 MiB on cpu \(80\d images read so far, .*known only once "
                 r"it is read\), which had 1\.2 MiB free: pass --image-size N .*under 15,")
    with pytest.raises(ConfigError, match=match):
        load_arrays("imagefolder", tmp_path / "packed", progress=False)
    if fmt == "zip":
        assert len(decoded) <= 3 * 256  # refused at the first chunk (three in flight), not once all were decoded
    decoded.clear()
    monkeypatch.setattr(fastjem.memory, "_meminfo", lambda: {"MemAvailable": need // 4})
    with pytest.raises(ConfigError, match="decoding imgs"):
        load_arrays("imagefolder", tmp_path / "packed", progress=False)
    assert len(decoded) <= 3 * 256  # a quarter of them fit: refused at the first chunk past that, not at the end
    monkeypatch.setattr(fastjem.memory, "_meminfo", lambda: {"MemAvailable": need})
    packed = load_arrays("imagefolder", tmp_path / "packed", progress=False)
    assert packed.train_x.shape[1:] == (3, 16, 16) and len(packed.train_y) + len(packed.test_y) == 804


def test_device_data_holds_a_copy_of_the_callers_test_split_and_counts_it(monkeypatch):
    """On the CPU the test split was the caller's own tensor (arrays_from_tensors keeps a uint8 one as it is): an
    edit of it in a later notebook cell changed the images a run is tested on, while the training split was a copy;
    the memory check left it out."""
    import fastjem.data as data_module
    from fastjem.data import arrays_from_tensors

    images, labels = torch.randint(0, 256, (120, 3, 8, 8), dtype=torch.uint8), torch.arange(120) % 4
    test_x, test_y = images[100:].clone(), labels[100:].clone()
    arrays = arrays_from_tensors(images[:100], labels[:100], test_x, test_y)
    asked = []
    monkeypatch.setattr(data_module, "check_fits", lambda needed, *a: asked.append(needed))
    data = DeviceData(arrays, torch.device("cpu"), val_size=10)
    assert asked == [images[:100].nbytes + test_x.nbytes]
    kept_x, kept_y = test_x.clone(), test_y.clone()
    test_x.zero_()
    test_y.fill_(3)
    assert torch.equal(data.test_x, kept_x) and torch.equal(data.test_y, kept_y)
