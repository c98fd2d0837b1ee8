# ruff: noqa: E501 (the mutants quote lines of the library as they are)
"""Mutation check of the test suite: each mutant removes or breaks one feature, and some test must fail.

    python tests/mutants.py              # every mutant, one per core at a time (97 min on 2 cores); exit 1 if one survives
    python tests/mutants.py NAME ...     # the named ones
    python tests/mutants.py --touching kernels/buffer.py   # those that edit a file (after changing it)
    python tests/mutants.py --sample 100 --seed 3          # a random spot check of the whole suite
    python tests/mutants.py --jobs 1     # one at a time (each job tests in its own copy of the tree)
    python tests/mutants.py --list       # names and the tests each runs

"A test that passes with the feature removed is a defect": a mutant that survives names a feature no test
checks. Each mutant is a few exact text replacements in the library; the run copies the working tree to a
temporary folder, once per job (the checkout is never edited), imports fastjem from there (PYTHONPATH, kernels/
linked in as fastjem/kernels), applies one mutant at a time to each copy and runs the tests named for it (``pytest -x``, kernels
under TRITON_INTERPRET=1). A replacement whose text is no longer found once, exactly, is reported as stale:
update the mutant with the code it mutates. Not a pytest module (no ``test_`` prefix): CI does not run it.
"""

from __future__ import annotations

import argparse
import os
import queue
import random
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Mutant:
    name: str
    tests: str  # pytest arguments
    edits: list  # (file, text, replacement), each text found exactly once


MUTANTS = [
    Mutant('sgld-noise-half-both', 'tests/test_kernels_sgld.py tests/test_sampler.py', [
        ('kernels/sgld.py',
         'b_x = b_x + alpha * b_g + sigma * b_noise',
         'b_x = b_x + alpha * b_g + 0.5 * sigma * b_noise'),
        ('kernels/sgld.py',
         'x.copy_(x + alpha * grad.float() + sigma * noise)',
         'x.copy_(x + alpha * grad.float() + 0.5 * sigma * noise)'),
    ]),
    Mutant('reset-prob-half-both', 'tests/test_kernels_buffer.py tests/test_buffer.py', [
        ('kernels/buffer.py',
         'b_reset = (uniform_scalar(b_seed, b_offset + o_b) < reset_prob) & m_b  # [BLOCK_B]',
         'b_reset = (uniform_scalar(b_seed, b_offset + o_b) < 0.5 * reset_prob) & m_b  # [BLOCK_B]'),
        ('kernels/buffer.py',
         'out = torch.where((u_row < reset_prob)[:, None], fresh, kept)',
         'out = torch.where((u_row < 0.5 * reset_prob)[:, None], fresh, kept)'),
    ]),
    Mutant('no-freeze', 'tests/test_sampler.py tests/test_engine.py', [
        ('fastjem/sampler.py',
         '        p.requires_grad_(False)\n    try:',
         '        pass\n    try:'),
    ]),
    Mutant('no-eval-in-sampling', 'tests/test_sampler.py tests/test_engine.py tests/test_train.py', [
        ('fastjem/sampler.py',
         '    modes = [(m, m.training) for m in model.modules()]\n    model.eval()\n',
         '    modes = [(m, m.training) for m in model.modules()]\n'),
    ]),
    Mutant('swap-p-q', 'tests/test_train.py tests/test_engine.py tests/test_bench.py', [
        ('fastjem/train.py',
         'logits_p, logits_q, logits = self.forward(x_p, x_q, x_lab)',
         'logits_q, logits_p, logits = self.forward(x_p, x_q, x_lab)'),
    ]),
    Mutant('no-warmup', 'tests/test_train.py tests/test_optim.py', [
        ('fastjem/train.py',
         'warm = min(1.0, (iteration + 1) / cfg.warmup_iters) if cfg.warmup_iters > 0 else 1.0',
         'warm = 1.0'),
    ]),
    Mutant('no-flip', 'tests/test_data.py', [
        ('fastjem/data.py',
         '        x = torch.where(m, x.flip(3), x)',
         '        x = x'),
    ]),
    Mutant('sgld-sign', 'tests/test_sampler.py', [
        ('fastjem/sampler.py',
         'kernels.sgld_step_(x, grad, -self.step_size,',
         'kernels.sgld_step_(x, grad, self.step_size,'),
    ]),
    Mutant('lse-bwd-sign-ref', 'tests/test_kernels_energy.py', [
        ('kernels/energy.py',
         '    return (-g * softmax).to(logits.dtype)',
         '    return (g * softmax).to(logits.dtype)'),
    ]),
    Mutant('class-block-off', 'tests/test_buffer.py tests/test_train.py', [
        ('fastjem/buffer.py',
         '        return y.to(self.device) * self.class_block + offset',
         '        return (y.to(self.device) * self.class_block + offset + 1) % self.size'),
    ]),
    Mutant('no-sampler-rng-resume', 'tests/test_train.py tests/test_cli.py', [
        ('fastjem/train.py',
         '        self.sampler.load_state_dict(local["sampler"])',
         '        pass'),
    ]),
    Mutant('write-flip-ref', 'tests/test_buffer.py tests/test_kernels_buffer.py', [
        ('kernels/buffer.py',
         '    buffer.index_copy_(0, idx, x.to(buffer.dtype).index_select(0, last[idx]))',
         '    buffer.index_copy_(0, idx.flip(0), x.to(buffer.dtype).index_select(0, last[idx]))'),
    ]),
    Mutant('direct-write', 'tests/test_train.py', [
        ('fastjem/checkpoint.py',
         '    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)',
         '    tmp = str(path); fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)'),
    ]),
    Mutant('rename-before-write', 'tests/test_train.py', [
        ('fastjem/checkpoint.py',
         '        with os.fdopen(fd, mode) as f:\n            with contextlib.suppress(OSError):',
         '        os.replace(tmp, path)\n        tmp = str(path)\n        with os.fdopen(fd, mode) as f:\n            with contextlib.suppress(OSError):'),
    ]),
    Mutant('auroc-flip', 'tests/test_eval.py', [
        ('fastjem/eval/metrics.py',
         '    return u / (n_pos * n_neg)',
         '    return 1.0 - u / (n_pos * n_neg)'),
    ]),
    Mutant('pgd-descend', 'tests/test_eval.py', [
        ('fastjem/eval/attacks.py',
         '                step = alpha * grad.sign()',
         '                step = -alpha * grad.sign()'),
    ]),
    Mutant('pgd-l2-descend', 'tests/test_eval.py', [
        ('fastjem/eval/attacks.py',
         '                step = alpha * grad / _flat_norm(grad).clamp_min(1e-12)',
         '                step = -alpha * grad / _flat_norm(grad).clamp_min(1e-12)'),
    ]),
    Mutant('gradnorm-sign', 'tests/test_eval.py', [
        ('fastjem/eval/ood.py',
         '    return -grad.flatten(1).norm(dim=1)',
         '    return grad.flatten(1).norm(dim=1)'),
    ]),
    Mutant('guard-gap-off', 'tests/test_guard.py', [
        ('fastjem/guard.py',
         '            bad = bad | ((e_s - e_d).abs() > self.gap_bound)',
         '            bad = bad'),
    ]),
    Mutant('informative-no-cov', 'tests/test_buffer.py tests/test_train.py', [
        ('fastjem/buffer.py',
         '        rows = every[k, torch.arange(n, device=dev)] + self.mean[k]',
         '        rows = z + self.mean[k]'),
    ]),
    Mutant('eval-noise-off', 'tests/test_train.py tests/test_eval.py', [
        ('fastjem/train.py',
         '            x = x + noise * torch.randn(x.shape, generator=gen, device=x.device)',
         '            x = x'),
    ]),
    Mutant('no-decay', 'tests/test_train.py', [
        ('fastjem/train.py',
         '    return cfg.lr * warm * cfg.decay_rate**n_decays',
         '    return cfg.lr * warm'),
    ]),
    Mutant('parts-base-0', 'tests/test_parts.py tests/test_sampler.py', [
        ('fastjem/sampler.py',
         'outs.append(self._chain(energy, xk, rng, start * per_row // 4, per_step))',
         'outs.append(self._chain(energy, xk, rng, 0, per_step))'),
    ]),
    Mutant('parts-no-advance', 'tests/test_parts.py tests/test_sampler.py', [
        ('fastjem/sampler.py',
         '                    main.wait_stream(stream)\n        self._advance_(rng, per_step)\n',
         '                    main.wait_stream(stream)\n'),
    ]),
    Mutant('overlap-no-sample-energy-l2', 'tests/test_overlap.py', [
        ('fastjem/train.py',
         '            loss_sample = loss_sample + self.recovery.energy_l2 * (e_sample**2).mean()',
         '            pass'),
    ]),
    Mutant('overlap-no-data-ce', 'tests/test_overlap.py', [
        ('fastjem/train.py',
         '            loss_data = cfg.px_weight * e_data.mean() + cfg.pyx_weight * ce',
         '            loss_data = cfg.px_weight * e_data.mean()'),
    ]),
    Mutant('pxy-sign', 'tests/test_train.py tests/test_bench.py tests/test_engine.py', [
        ('fastjem/train.py',
         '            loss = loss + cfg.pxy_weight * (e_lab_y.mean() - e_qy.mean())',
         '            loss = loss + cfg.pxy_weight * (e_qy.mean() - e_lab_y.mean())'),
    ]),
    Mutant('pxy-unconditional', 'tests/test_train.py tests/test_bench.py tests/test_engine.py', [
        ('fastjem/train.py',
         '            x_qy = self.sample(b, y_lab)',
         '            x_qy = self.sample(b, None)'),
    ]),
    Mutant('semi-all-labelled', 'tests/test_train.py tests/test_data.py', [
        ('fastjem/data.py',
         '        il = self.labelled[torch.randint(0, len(self.labelled), (batch_size,), device=self.device,',
         "        il = torch.arange(len(self.labelled) * 0 + self.n_train if hasattr(self, 'n_train') else len(self.labelled), device=self.device)[torch.randint(0, len(self.labelled), (batch_size,), device=self.device,"),
    ]),
    Mutant('energy-l2-off', 'tests/test_guard.py tests/test_train.py', [
        ('fastjem/train.py',
         '                loss = loss + self.recovery.energy_l2 * ((e_data**2).mean() + (e_sample**2).mean())',
         '                pass'),
    ]),
    Mutant('set-lr-noop', 'tests/test_train.py tests/test_optim.py', [
        ('fastjem/train.py',
         '        self.lr_t.fill_(lr)  # a kernel argument, not a host sync',
         '        pass'),
    ]),
    Mutant('best-worse', 'tests/test_best.py', [
        ('fastjem/train.py',
         '        better = self.best is None or val_acc > self.best["val_acc"]',
         '        better = self.best is None or val_acc < self.best["val_acc"]'),
    ]),
    Mutant('crop-fixed', 'tests/test_data.py', [
        ('fastjem/data.py',
         '        oy = torch.randint(0, 2 * pad + 1, (b, 1), device=x.device, generator=generator)',
         '        oy = torch.full((b, 1), pad, device=x.device)'),
    ]),
    Mutant('pad-zero', 'tests/test_data.py', [
        ('fastjem/data.py',
         '        xp = F.pad(x, (pad, pad, pad, pad), mode="reflect")  # [B, C, H+2p, W+2p]',
         '        xp = F.pad(x, (pad, pad, pad, pad))  # [B, C, H+2p, W+2p]'),
    ]),
    Mutant('split-by-run-seed', 'tests/test_data.py tests/test_train.py', [
        ('fastjem/data.py',
         '    g = torch.Generator().manual_seed(SPLIT_SEED)\n    perm = torch.randperm(n_train, generator=g)',
         '    g = torch.Generator().manual_seed(torch.initial_seed() % 1000)\n    perm = torch.randperm(n_train, generator=g)'),
    ]),
    Mutant('sgd-nesterov-wrong', 'tests/test_optim.py', [
        ('fastjem/optim.py',
         'direction = torch._foreach_add(grads, bufs, alpha=group["momentum"]) if group["nesterov"] else bufs',
         'direction = bufs'),
    ]),
    Mutant('sgd-wd-off', 'tests/test_optim.py', [
        ('fastjem/optim.py',
         '                grads = torch._foreach_add(grads, params, alpha=group["weight_decay"])',
         '                pass'),
    ]),
    Mutant('ece-signed', 'tests/test_eval.py', [
        ('fastjem/eval/metrics.py',
         '    gap = (acc_b - conf_b).abs()',
         '    gap = (acc_b - conf_b)'),
    ]),
    Mutant('fid-no-trace', 'tests/test_eval.py', [
        ('fastjem/eval/metrics.py',
         '    value = diff.dot(diff) + torch.trace(cov1) + torch.trace(cov2) - 2 * trace_sqrt',
         '    value = diff.dot(diff) + torch.trace(cov1) + torch.trace(cov2) - trace_sqrt'),
    ]),
    Mutant('refine-cond-uncond', 'tests/test_eval.py', [
        ('fastjem/eval/core.py',
         '            energy = -torch.logsumexp(logits, 1) if y is None else -logits.gather(1, y.view(-1, 1)).squeeze(1)',
         '            energy = -torch.logsumexp(logits, 1)'),
    ]),
    Mutant('interp-same', 'tests/test_eval.py', [
        ('fastjem/eval/ood.py',
         '    j = (i + 1 + torch.randint(0, len(x) - 1, (n,), generator=generator)) % len(x)',
         '    j = (i + torch.randint(0, len(x) - 1, (n,), generator=generator)) % len(x)'),
    ]),
    Mutant('sweep-std-pop', 'tests/test_sweep.py', [
        ('fastjem/sweep.py',
         '    return statistics.mean(vals), (statistics.stdev(vals) if len(vals) > 1 else None)',
         '    return statistics.mean(vals), (statistics.pstdev(vals) if len(vals) > 1 else None)'),
    ]),
    Mutant('no-data-rng-resume', 'tests/test_train.py', [
        ('fastjem/train.py',
         '            self.data_gen.set_state(ckpt["data_rng"])',
         '            pass'),
    ]),
    Mutant('fill-wrong-class', 'tests/test_buffer.py tests/test_train.py', [
        ('fastjem/buffer.py',
         '            out[rows] = z @ self.factor[c].T + self.mean[c]',
         '            out[rows] = z @ self.factor[c].T + self.mean[(c + 1) % self.num_classes]'),
    ]),
    Mutant('convert-swap-norms', 'tests/test_convert.py', [
        ('fastjem/convert.py',
         '_BLOCK_PARTS = {"bn1": "norm1", "conv1": "conv1", "bn2": "norm2", "conv2": "conv2", "shortcut.0": "shortcut"}',
         '_BLOCK_PARTS = {"bn1": "norm2", "conv1": "conv1", "bn2": "norm1", "conv2": "conv2", "shortcut.0": "shortcut"}'),
    ]),
    Mutant('lse-online-rescale-off', 'tests/test_kernels_energy.py', [
        ('kernels/energy.py',
         '                b_s = b_s * tl.exp(b_m - b_m_new) + tl.sum(tl.exp(b_x - b_m_new[:, None]), axis=1)',
         '                b_s = b_s + tl.sum(tl.exp(b_x - b_m_new[:, None]), axis=1)'),
    ]),
    Mutant('lse-bwd-triton-nomax', 'tests/test_kernels_energy.py', [
        ('kernels/energy.py',
         '                b_d = tl.exp(b_x - b_m[:, None]) * b_scale[:, None]',
         '                b_d = tl.exp(b_x) * tl.exp(-b_m[:, None]) * b_scale[:, None]'),
    ]),
    Mutant('reference-ignored', 'tests/test_kernels_dispatch.py tests/test_engine.py', [
        ('kernels/_dispatch.py',
         '    if name == "reference":\n        return False',
         '    if False:\n        return False'),
    ]),
    Mutant('bf16-detect-always', 'tests/test_engine.py', [
        ('fastjem/engine.py',
         '        if "amx_bf16" in flags:',
         '        if True:'),
    ]),
    Mutant('bf16-avx512-counts', 'tests/test_engine.py', [
        ('fastjem/engine.py',
         '        if "amx_bf16" in flags:',
         '        if flags:'),
    ]),
    Mutant('kept-perturbed', 'tests/test_kernels_buffer.py', [
        ('kernels/buffer.py',
         'b_x = tl.load(p_buffer + b_row[:, None] * D + o_d[None, :], mask=m_keep, other=float("nan"))',
         'b_x = tl.load(p_buffer + b_row[:, None] * D + o_d[None, :], mask=m_keep, other=float("nan")) * 1.0000001'),
    ]),
    Mutant('sgld-ctr-pid0', 'tests/test_kernels_sgld.py', [
        ('kernels/sgld.py',
         '        o_ctr = pid * QUARTER + tl.arange(0, QUARTER).to(tl.int64) + base',
         '        o_ctr = tl.arange(0, QUARTER).to(tl.int64) + base'),
    ]),
    Mutant('sgld-base-ignored', 'tests/test_kernels_sgld.py tests/test_parts.py', [
        ('kernels/sgld.py',
         '        o_ctr = pid * QUARTER + tl.arange(0, QUARTER).to(tl.int64) + base',
         '        o_ctr = pid * QUARTER + tl.arange(0, QUARTER).to(tl.int64)'),
    ]),
    Mutant('buf-ctr-dblock0', 'tests/test_kernels_buffer.py', [
        ('kernels/buffer.py',
         '        o_ctr = b_offset + B + o_b[:, None] * ((D + 3) // 4) + pid_d * QUARTER + tl.arange(0, QUARTER)[None, :]',
         '        o_ctr = b_offset + B + o_b[:, None] * ((D + 3) // 4) + tl.arange(0, QUARTER)[None, :]'),
    ]),
    Mutant('buf-write-mask', 'tests/test_kernels_buffer.py', [
        ('kernels/buffer.py',
         '        o_d = tl.program_id(1).to(tl.int64) * BLOCK_D + tl.arange(0, BLOCK_D).to(tl.int64)',
         '        o_d = tl.arange(0, BLOCK_D).to(tl.int64)'),
    ]),
    Mutant('w-step-size', 'tests/test_train.py', [
        ('fastjem/train.py',
         '        self.sampler = SGLD(cfg.sgld_steps, cfg.sgld_step_size, cfg.sgld_noise,',
         '        self.sampler = SGLD(cfg.sgld_steps, 1.0, cfg.sgld_noise,'),
    ]),
    Mutant('w-noise', 'tests/test_train.py', [
        ('fastjem/train.py',
         '        self.sampler = SGLD(cfg.sgld_steps, cfg.sgld_step_size, cfg.sgld_noise,',
         '        self.sampler = SGLD(cfg.sgld_steps, cfg.sgld_step_size, 0.01,'),
    ]),
    Mutant('w-steps', 'tests/test_train.py', [
        ('fastjem/train.py',
         '        self.sampler = SGLD(cfg.sgld_steps, cfg.sgld_step_size, cfg.sgld_noise,',
         '        self.sampler = SGLD(3, cfg.sgld_step_size, cfg.sgld_noise,'),
    ]),
    Mutant('w-reinit', 'tests/test_train.py', [
        ('fastjem/train.py',
         '        self.buffer = ReplayBuffer(buffer_size, self.data.sample_shape, cfg.reinit_prob,',
         '        self.buffer = ReplayBuffer(buffer_size, self.data.sample_shape, 0.05,'),
    ]),
    Mutant('w-data-noise', 'tests/test_train.py', [
        ('fastjem/train.py',
         '        self.data = DeviceData(arrays, self.device, cfg.val_size, cfg.labels_per_class, cfg.augment,\n                               cfg.data_noise)',
         '        self.data = DeviceData(arrays, self.device, cfg.val_size, cfg.labels_per_class, cfg.augment,\n                               0.03)'),
    ]),
    Mutant('w-augment', 'tests/test_train.py', [
        ('fastjem/train.py',
         '        self.data = DeviceData(arrays, self.device, cfg.val_size, cfg.labels_per_class, cfg.augment,\n                               cfg.data_noise)',
         '        self.data = DeviceData(arrays, self.device, cfg.val_size, cfg.labels_per_class, True,\n                               cfg.data_noise)'),
    ]),
    Mutant('w-noaug-noise', 'tests/test_train.py', [
        ('fastjem/data.py',
         '        if self.data_noise > 0:\n            x = x + self.data_noise * torch.randn(x.shape, device=x.device, generator=generator)\n        return x',
         '        return x'),
    ]),
    Mutant('w-dropout', 'tests/test_train.py -k reach_the_network', [
        ('fastjem/train.py',
         '            self.model = build_model(cfg.arch, info.num_classes, info.channels, cfg.depth, cfg.width, cfg.norm,\n                                     cfg.dropout)',
         '            self.model = build_model(cfg.arch, info.num_classes, info.channels, cfg.depth, cfg.width, cfg.norm,\n                                     0.0)'),
    ]),
    Mutant('w-norm', 'tests/test_train.py -k reach_the_network', [
        ('fastjem/train.py',
         '            self.model = build_model(cfg.arch, info.num_classes, info.channels, cfg.depth, cfg.width, cfg.norm,\n                                     cfg.dropout)',
         '            self.model = build_model(cfg.arch, info.num_classes, info.channels, cfg.depth, cfg.width, "none",\n                                     cfg.dropout)'),
    ]),
    Mutant('w-adam-wd', 'tests/test_train.py -k reach_the_network', [
        ('fastjem/train.py',
         '            return torch.optim.Adam(params, lr=self.lr_t, weight_decay=cfg.weight_decay, **self._adam_settings)',
         '            return torch.optim.Adam(params, lr=self.lr_t, weight_decay=0.0, **self._adam_settings)'),
    ]),
    Mutant('w-sgd-momentum', 'tests/test_train.py -k scheduled_learning_rate', [
        ('fastjem/train.py',
         '        return DeviceSGD(params, self.lr_t, momentum=cfg.momentum, weight_decay=cfg.weight_decay)',
         '        return DeviceSGD(params, self.lr_t, momentum=0.9, weight_decay=cfg.weight_decay)'),
    ]),
    Mutant('w-sgd-wd', 'tests/test_train.py -k reach_the_network', [
        ('fastjem/train.py',
         '        return DeviceSGD(params, self.lr_t, momentum=cfg.momentum, weight_decay=cfg.weight_decay)',
         '        return DeviceSGD(params, self.lr_t, momentum=cfg.momentum, weight_decay=0.0)'),
    ]),
    Mutant('w-buffer-size', 'tests/test_train.py -k buffer_size', [
        ('fastjem/train.py',
         '        buffer_size = cfg.buffer_size // world',
         '        buffer_size = 200 // world'),
    ]),
    Mutant('w-guard-energy', 'tests/test_guard.py -k each_bound', [
        ('fastjem/train.py',
         '        self.guard = DivergenceGuard(self, cfg.energy_bound, cfg.gap_bound, cfg.buffer_margin) if cfg.guard else None',
         '        self.guard = DivergenceGuard(self, 1e4, cfg.gap_bound, cfg.buffer_margin) if cfg.guard else None'),
    ]),
    Mutant('w-guard-gap', 'tests/test_guard.py -k each_bound', [
        ('fastjem/train.py',
         '        self.guard = DivergenceGuard(self, cfg.energy_bound, cfg.gap_bound, cfg.buffer_margin) if cfg.guard else None',
         '        self.guard = DivergenceGuard(self, cfg.energy_bound, 1e4, cfg.buffer_margin) if cfg.guard else None'),
    ]),
    Mutant('e-bins', 'tests/test_eval.py', [
        ('fastjem/eval/cli.py',
         '        "calibration": {"n_bins": args.bins},',
         '        "calibration": {"n_bins": 20},'),
    ]),
    Mutant('e-linf-scale', 'tests/test_eval.py', [
        ('fastjem/eval/cli.py',
         '    linf = DEFAULT_LINF_EPS if args.linf_eps is None else tuple(e / 255 for e in args.linf_eps)',
         '    linf = DEFAULT_LINF_EPS if args.linf_eps is None else tuple(args.linf_eps)'),
    ]),
    Mutant('e-pgd-steps', 'tests/test_eval.py', [
        ('fastjem/eval/cli.py',
         '                       "refine_steps": tuple(args.refine_steps), "pgd_steps": args.pgd_steps,',
         '                       "refine_steps": tuple(args.refine_steps), "pgd_steps": 10,'),
    ]),
    Mutant('e-eps-half-scale', 'tests/test_eval.py', [
        ('fastjem/eval/tasks.py',
         '                    x_adv = pgd_attack(pipeline, x[sl], y[sl], 2 * eps, norm, pgd_steps, generator=gen)',
         '                    x_adv = pgd_attack(pipeline, x[sl], y[sl], eps, norm, pgd_steps, generator=gen)'),
    ]),
    Mutant('e-samples-nsteps', 'tests/test_eval.py', [
        ('fastjem/eval/cli.py',
         '        "samples": {"n_steps": 100 if args.n_steps is None else args.n_steps, "n_samples": args.n_samples,',
         '        "samples": {"n_steps": 100, "n_samples": args.n_samples,'),
    ]),
    Mutant('e-refine-a', 'tests/test_eval.py', [
        ('fastjem/eval/tasks.py',
         '            pipeline = RefineThenClassify(em.model, n, a, s)',
         '            pipeline = RefineThenClassify(em.model, n, 1.0, s)'),
    ]),
    Mutant('d-grad-sum', 'tests/test_distributed.py -k same_global_batch', [
        ('fastjem/distributed.py',
         '    dist.all_reduce(flat)\n    flat.div_(world)',
         '    dist.all_reduce(flat)'),
    ]),
    Mutant('d-metric-sum', 'tests/test_distributed.py -k same_global_batch', [
        ('fastjem/distributed.py',
         '    dist.all_reduce(t)\n    return t.div_(world)',
         '    dist.all_reduce(t)\n    return t'),
    ]),
    Mutant('d-any-rank-local', 'tests/test_distributed.py -k "divergence_on_one_rank or stop_signal_on_one_rank"', [
        ('fastjem/distributed.py',
         '    dist.all_reduce(t, op=dist.ReduceOp.MAX)\n    return bool(t.item() > 0)',
         '    return bool(t.item() > 0)'),
    ]),
    Mutant('d-group-left-at-exit', 'tests/test_distributed.py -k divergence_on_one_rank', [
        ('fastjem/distributed.py',
         '        atexit.register(_destroy_if_initialized)\n',
         ''),
    ]),
    Mutant('guard-current-energy-off', 'tests/test_guard.py', [
        ('fastjem/guard.py',
         'or max(abs(e_buf), abs(e_uni)) > self.energy_bound:',
         'or False:'),
    ]),
    Mutant('modes-restored-whole', 'tests/test_sampler.py', [
        ('fastjem/sampler.py',
         '        for m, training in modes:\n            m.training = training',
         '        model.train(modes[0][1])'),
    ]),
    Mutant('labels-strided', 'tests/test_kernels_energy.py -k strided', [
        ('kernels/energy.py',
         '    # the kernels index labels as a dense [B] array\n    labels = labels.contiguous() if labels is not None else None\n',
         ''),
    ]),
    Mutant('buffer-write-unmasked', 'tests/test_kernels_buffer.py -k outside', [
        ('kernels/buffer.py',
         '        m_b = m_b & (b_row >= 0) & (b_row < N)\n',
         ''),
    ]),
    Mutant('pgd-clamp-to-range', 'tests/test_eval.py -k pgd', [
        ('fastjem/eval/attacks.py',
         '            delta = (torch.max(torch.min(x + delta, hi_t), lo_t) - x).detach()',
         '            delta = ((x + delta).clamp(lo, hi) - x).detach()'),
    ]),
    Mutant('archive-class-innermost', 'tests/test_data.py -k archive', [
        ('fastjem/data.py',
         '        records[i] = (None, f[at], (*f[at + 1:], records[i][2][-1]), records[i][3])',
         '        pass'),
    ]),
    Mutant('cache-key-paths-only', 'tests/test_data.py -k cache', [
        ('fastjem/data.py',
         '|{st.st_ino}|{st.st_ctime_ns}',
         ''),
    ]),
    Mutant('metric-sums-not-restored', 'tests/test_train.py -k between_log', [
        ('fastjem/train.py',
         '            self._acc.copy_(local["metric_sums"])  # in place: the iteration graph holds this tensor\n            self._acc_n = int(local["metric_count"])',
         '            pass'),
    ]),
    Mutant('resume-ignores-out-dir', 'tests/test_cli.py -k another_folder', [
        ('fastjem/cli.py',
         '        cfg = cfg.replace(out_dir=str(out_dir))  # config.json names the folder the run continues in',
         '        out_dir = Path(args.resume) if Path(args.resume).is_dir() else out_dir'),
    ]),
    Mutant('no-folder-lock', 'tests/test_train.py -k in_use', [
        ('fastjem/checkpoint.py',
         '            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)\n        except OSError:',
         '            pass\n        except OSError:'),
    ]),
    Mutant('recover-same-seed-every-rank', 'tests/test_guard.py -k own_stream', [
        ('fastjem/train.py',
         '_seed_rng(cfg.seed + salt + 104_729 * self.dist.rank, self.device)',
         '_seed_rng(cfg.seed + salt, self.device)'),
    ]),
    Mutant('recover-keeps-old-snapshot', 'tests/test_guard.py -k "keeps_the_remedy or rollback_point_is_the_remedied"', [
        ('fastjem/train.py',
         '        # restores this, not the state before the remedy (which would resume into the same divergence)\n        self._take_snapshot()',
         '        # restores this, not the state before the remedy (which would resume into the same divergence)\n        pass'),
    ]),
    Mutant('pxy-energy-l2-off', 'tests/test_train.py -k only_generative', [
        ('fastjem/train.py',
         '                    loss = loss + self.recovery.energy_l2 * ((e_lab_y**2).mean() + (e_qy**2).mean())',
         '                    pass'),
    ]),
    Mutant('blocked-restart-any-class', 'tests/test_buffer.py -k blocks_class', [
        ('fastjem/buffer.py',
         '            y = idx // self.class_block  # a class block restarts from its own class\'s law',
         '            pass'),
    ]),
    Mutant('bench-validate-after', 'tests/test_cli.py -k bench_refuses', [
        ('fastjem/cli.py',
         '    if not 0 < args.seconds < math.inf:',
         '    if args.seconds <= 0:'),
    ]),
    Mutant('runs-sort-asc', 'tests/test_runs.py', [
        ('fastjem/runs.py',
         '    return sorted(rows, key=lambda r: (r[key] is None, -(r[key] or 0)))',
         '    return sorted(rows, key=lambda r: (r[key] is None, (r[key] or 0)))'),
    ]),
    Mutant('lse-functorch-through-op', 'tests/test_kernels_energy.py -k torch_func', [
        ('kernels/energy.py',
         '    if not torch.compiler.is_compiling() and _transformed(logits, labels):',
         '    if False:'),
    ]),
    Mutant('lse-double-backward-eager-constant-stats', 'tests/test_kernels_energy.py -k second_derivatives', [
        ('kernels/energy.py',
         '    if torch.is_grad_enabled():\n',
         '    if False:\n'),
    ]),
    Mutant('lse-double-backward-op-none', 'tests/test_kernels_energy.py -k second_derivatives', [
        ('kernels/energy.py',
         '_lse_energy_backward_op.register_autograd(_double_backward, setup_context=_setup_double_backward)\n',
         ''),
    ]),
    Mutant('lse-double-backward-op-no-softmax-term', 'tests/test_kernels_energy.py -k second_derivatives', [
        ('kernels/energy.py',
         '        d_logits = (-grad_energy.float()[:, None] * p * (v - pv[:, None])).to(logits.dtype)',
         '        d_logits = (-grad_energy.float()[:, None] * p * v).to(logits.dtype)'),
    ]),
    Mutant('ckpt-crc-unchecked', 'tests/test_train.py -k bytes_changed', [
        ('fastjem/checkpoint.py', '    damaged = damaged_member(path)\n', '    damaged = None\n'),
    ]),
    Mutant('force-replaces-checkpoint', 'tests/test_eval.py -k keeps_what_exists', [
        ('fastjem/checkpoint.py', '    if path.exists() and is_training_checkpoint(path):', '    if False:'),
    ]),
    Mutant('records-cut-line-kept', 'tests/test_train.py -k stop_between_log_lines', [
        ('fastjem/train.py', '            if not line.endswith("\\n"):\n                end = i  # cut short',
         '            if False:\n                end = i  # cut short'),
    ]),
    Mutant('stop-reason-local', 'tests/test_distributed.py -k stop_signal', [
        ('fastjem/train.py', '            stop["signal"] = "time limit" if code == 1 else code - 2',
         '            pass'),
    ]),
    Mutant('stopped-exits-0', 'tests/test_guard.py -k sigterm', [
        ('fastjem/cli.py', '        return stopped_status(summary.get("stopped_by"))', '        return 0'),
    ]),
    Mutant('write-error-traceback', 'tests/test_cli.py -k "full_disk or unwritable"', [
        ('fastjem/cli.py', '        if err.errno not in WRITE_ERRNOS:\n            raise\n',
         '        raise\n'),
    ]),
    Mutant('sweep-into-run-folder', 'tests/test_sweep.py -k bad_folders', [
        ('fastjem/sweep.py', '    if single and not (folder / SPEC).exists():\n', '    if False:\n'),
    ]),
    Mutant('runs-divergence-event-ignored', 'tests/test_runs.py -k divergence', [
        ('fastjem/runs.py', '    stopped_by_divergence = bool(m.events) and', '    stopped_by_divergence = False and'),
    ]),
    Mutant('branch-without-records', 'tests/test_cli.py -k another_folder', [
        ('fastjem/train.py', '        source = self._source_records()\n', '        source = None\n'),
    ]),
    Mutant('best-after-last-checkpoint', 'tests/test_train.py -k extended_keeps', [
        ('fastjem/train.py',
         '            final = None if stopping else self._final_validation()\n            ckpt_path = self.save_checkpoint()\n',
         '            ckpt_path = self.save_checkpoint()\n            final = None if stopping else self._final_validation()\n'),
    ]),
    Mutant('atomic-files-private', 'tests/test_train.py -k mode_an_ordinary', [
        ('fastjem/checkpoint.py', '                os.fchmod(f.fileno(), 0o666 & ~_umask())', '                pass'),
    ]),
    Mutant('val-size-zero-reads-zero', 'tests/test_cli.py -k no_validation', [
        ('fastjem/train.py', '            return {"acc": None, "nll": None}, False',
         '            return {"acc": 0.0, "nll": 0.0}, False'),
    ]),
    Mutant('inception-score-default-weights', 'tests/test_eval.py -k torchmetrics', [
        ('fastjem/eval/tasks.py',
         '        is_metric = InceptionScore(feature=logits, normalize=True)',
         '        is_metric = InceptionScore(normalize=True)'),
    ]),
    Mutant('convert-train-paper-network', 'tests/test_convert.py -k cli_convert_then', [
        ('fastjem/cli.py',
         '    net = "".join(f" --{k} {r[k]}" for k in ("depth", "width", "norm") if r[k] != getattr(paper, k))',
         '    net = "".join(f" --{k} {r[k]}" for k in ("norm",) if r[k] != getattr(paper, k))'),
    ]),
    Mutant('eval-class-names-unchecked', 'tests/test_eval.py -k in_distribution_folder', [
        ('fastjem/eval/core.py', 'if class_names_differ(self.info.classes, arrays.info.classes):', 'if False:'),
    ]),
    Mutant('cifar10-names-as-svhn', 'tests/test_data.py -k class_names', [
        ('fastjem/data.py', 'elif name != "cifar10" and tuple(classes) == CIFAR10_CLASSES:', 'elif False:'),
    ]),
    Mutant('decoding-bars-ignore-progress', 'tests/test_data.py -k bars', [
        ('fastjem/data.py', '               disable=not progress) as bar):', '               disable=False) as bar):'),
    ]),
    Mutant('out-dir-file-traceback', 'tests/test_cli.py -k file_gets', [
        ('fastjem/cli.py', '        if err.errno in (errno.EEXIST, errno.ENOTDIR) and err.filename and any(',
         '        if False and any('),
    ]),
    Mutant('robustness-no-caution', 'tests/test_eval.py -k cautions', [
        ('fastjem/eval/tasks.py', '    far = [n for n, m in moves.items() if m["mean_abs_change"] > FAR_MOVE]', '    far = []'),
    ]),
    Mutant('eval-settings-without-test-subset', 'tests/test_eval.py -k cli_accuracy_calibration_ood', [
        ('fastjem/eval/tasks.py', '"settings": {**common, **settings}', '"settings": settings'),
    ]),
    Mutant('quick-run-iters-not-smoke', 'tests/test_bench.py -k smoke_run_and_cpu', [
        ('bench/quick_run.py', '"smoke": args.iters > 0,', '"smoke": False,'),
    ]),
    Mutant('report-cpu-threads-unnamed', 'tests/test_bench.py -k smoke_run_and_cpu', [
        ('bench/report.py', '    threads = d.get("threads") if d.get("type") == "cpu" else None', '    threads = None'),
    ]),
    Mutant('eval-stale-summary-silent', 'tests/test_eval.py -k summary_table', [
        ('fastjem/eval/cli.py', '    stale = [f for f in ("all.json", "report.md") if (out / f).exists()]', '    stale = []'),
    ]),
    Mutant('rollback-not-checkpointed', 'tests/test_guard.py -k kill_right_after', [
        ('fastjem/train.py', '        self._take_snapshot()\n        if cfg.ckpt_every or cfg.ckpt_keep_every:\n            # and checkpoint.pt',
         '        self._take_snapshot()\n        if False:\n            # and checkpoint.pt'),
    ]),
    Mutant('rollback-event-trimmed-on-resume', 'tests/test_guard.py -k "kill_right_after or own_past or records_once"', [
        ('fastjem/train.py', 'rollback = record.get("event") == "divergence" and record.get("action") == "recover"',
         'rollback = False'),
    ]),
    Mutant('resume-ignores-the-rollback-file', 'tests/test_guard.py -k rolls_back_where', [
        ('fastjem/train.py', '            if snapshot is not None:\n                self.guard.snapshot = snapshot',
         '            if False:\n                self.guard.snapshot = snapshot'),
    ]),
    Mutant('resumed-end-keeps-the-initial-lr', 'tests/test_guard.py -k killed_after_its_last', [
        ('fastjem/train.py', '        if self.iteration > 0:\n            # the rate the last step used',
         '        if False:\n            # the rate the last step used'),
    ]),
    Mutant('resumed-end-record-not-best', 'tests/test_guard.py -k killed_after_its_last', [
        ('fastjem/train.py', 'return val, kept or (self.best is not None and self.best.get("iter") == self.iteration)',
         'return val, kept'),
    ]),
    Mutant('lost-kept-checkpoint-not-remade', 'tests/test_guard.py -k killed_after_its_last', [
        ('fastjem/train.py', '            self.keep_checkpoint(latest)', '            pass'),
    ]),
    Mutant('resumed-end-grid-from-buffer', 'tests/test_guard.py -k killed_after_its_last', [
        ('fastjem/train.py', '        if local.get("last_samples") is not None:', '        if False:'),
    ]),
    Mutant('cut-writes-left-behind', 'tests/test_guard.py -k killed_after_its_last', [
        ('fastjem/train.py', '        for pattern in (".*.tmp", "checkpoints/.*.tmp"):', '        for pattern in ():'),
    ]),
    Mutant('ddp-rollback-in-memory-only', 'tests/test_distributed.py -k rolls_back_where', [
        ('fastjem/train.py', '        snap = self.guard.snapshot\n        name = f"rollback-',
         '        if self.dist.enabled:\n            return\n        snap = self.guard.snapshot\n        name = f"rollback-'),
    ]),
    Mutant('ddp-rollback-rank0-part-for-all', 'tests/test_distributed.py -k rolls_back_where', [
        ('fastjem/train.py', 'snapshot.update(ranks[self.dist.rank])', 'snapshot.update(ranks[0])'),
    ]),
    Mutant('rollback-file-at-every-snapshot', 'tests/test_guard.py -k snapshots_on_checkpoint', [
        ('fastjem/train.py', '        if int(self.guard.snapshot["iteration"]) == self.iteration:\n            self._take_snapshot()',
         '        if False:\n            self._take_snapshot()'),
    ]),
    Mutant('checkpoint-as-rollback-point-not-retaken', 'tests/test_guard.py -k snapshots_on_checkpoint', [
        ('fastjem/train.py', '        if int(self.guard.snapshot["iteration"]) == self.iteration:\n            self._take_snapshot()',
         '        if int(self.guard.snapshot["iteration"]) == self.iteration:\n            self._snapshot_file = None'),
    ]),
    Mutant('networks-parts-not-fitted', 'tests/test_parts.py -k multiple_of_4', [
        ('fastjem/engine.py', '    engine = fit_sgld_parts(engine, sample_shape, cfg, model, rows=rows)\n', ''),
    ]),
    Mutant('energy-stat-grads-materialised', 'tests/test_energy.py -k fills_no_gradient', [
        ('kernels/energy.py', '    ctx.set_materialize_grads(False)\n', ''),
    ]),
    Mutant('sweep-reuses-runs-of-other-options', 'tests/test_sweep.py -k reused_for_another', [
        ('fastjem/sweep.py', '        if differ:\n            raise ConfigError(f"{folder / name} was trained',
         '        if False:\n            raise ConfigError(f"{folder / name} was trained'),
    ]),
    Mutant('sweep-writes-spec-before-checking-runs', 'tests/test_sweep.py -k reused_for_another', [
        ('fastjem/sweep.py', '        check_runs(folder, runs)\n        check_spec(folder, spec)\n',
         '        check_spec(folder, spec)\n        check_runs(folder, runs)\n'),
    ]),
    Mutant('sweep-clears-a-live-run', 'tests/test_sweep.py -k reused_for_another', [
        ('fastjem/sweep.py', '        if holder is not None:\n            raise ConfigError(f"{out} is in use',
         '        if False:\n            raise ConfigError(f"{out} is in use'),
    ]),
    Mutant('sweep-stops-at-a-failed-run', 'tests/test_sweep.py -k reused_for_another', [
        ('fastjem/sweep.py', '        except Exception as err:  # noqa: BLE001 - one run', '        except ZeroDivisionError as err:  # noqa: BLE001 - one run'),
    ]),
    Mutant('sweep-recoveries-of-finished-runs-only', 'tests/test_sweep.py -k diverges_beyond', [
        ('fastjem/sweep.py', 'sum(r["recoveries"] for r in mine if r is not None)',
         'sum(r["recoveries"] for r in done)'),
    ]),
    Mutant('dry-run-skips-folder-checks', 'tests/test_sweep.py -k dry_run_refuses', [
        ('fastjem/sweep.py', '    check_spec(folder, spec_of(base, grid, seeds), write=False)\n    check_runs(folder, runs)\n    check_decays',
         '    check_runs(folder, runs)\n    check_decays'),
    ]),
    Mutant('finished-run-leaves-a-rollback-file', 'tests/test_guard.py -k finished_run_leaves', [
        ('fastjem/train.py', '                elif not stopping:\n                    # a finished run',
         '                elif False:\n                    # a finished run'),
    ]),
    Mutant('two-sweeps-in-one-folder', 'tests/test_sweep.py -k reused_for_another', [
        ('fastjem/sweep.py', '    with folder_lock(folder / SWEEP_LOCK,', '    with _no_lock(folder / SWEEP_LOCK,'),
        ('fastjem/sweep.py', 'SWEEP_LOCK = ".sweep.lock"\n',
         'SWEEP_LOCK = ".sweep.lock"\n_no_lock = lambda *a: __import__("contextlib").nullcontext()\n'),
    ]),
    Mutant('overlay-legend-cut-off', 'tests/test_curves.py -k little_or_nothing', [
        ('fastjem/curves.py', '    return _save(fig, path, tight=many)', '    return _save(fig, path)'),
    ]),
    Mutant('sweep-mean-band-population-sd', 'tests/test_curves.py -k mean_curves', [
        ('fastjem/curves.py', 'statistics.stdev(v) if len(v) > 1 else 0.0', 'statistics.pstdev(v)'),
    ]),
    Mutant('folder-test-split-by-shuffle', 'tests/test_data.py -k does_not_move', [
        ('fastjem/data.py', '        test |= chosen\n',
         '        test = set(torch.randperm(len(items), generator=torch.Generator().manual_seed(SPLIT_SEED)).tolist()'
         '[:max(1, len(items) // 6)])\n'),
    ]),
    Mutant('folder-test-split-class-left-out', 'tests/test_data.py -k does_not_move', [
        ('fastjem/data.py', '        elif not chosen:\n', '        elif False:\n'),
    ]),
    Mutant('index-classes-sorted-as-text', 'tests/test_data.py -k index_named', [
        ('fastjem/data.py', '    if names and all(n.isdecimal() for n in names):', '    if False:'),
    ]),
    Mutant('index-class-order-not-compared', 'tests/test_data.py -k index_named', [
        ('fastjem/data.py', '    if by_index(trained) and by_index(given):\n        return True\n', ''),
    ]),
    Mutant('resume-on-renamed-classes', 'tests/test_train.py -k renamed_classes', [
        ('fastjem/train.py', '            if trained and class_names_differ(trained, arrays.info.classes):',
         '            if False:'),
    ]),
    Mutant('data-dir-recorded-relative', 'tests/test_train.py -k renamed_classes', [
        ('fastjem/train.py', '            cfg = cfg.replace(data_dir=str(Path(cfg.data_dir).expanduser().absolute()))',
         '            pass'),
    ]),
    Mutant('linked-image-counted-twice', 'tests/test_data.py -k link_that', [
        ('fastjem/data.py', '            if first != p:\n                raise DataNotFoundError(f"{first} and {p} are one file', '            if False:\n                raise DataNotFoundError(f"{first} and {p} are one file'),
    ]),
    Mutant('linked-image-in-both-splits', 'tests/test_data.py -k link_that', [
        ('fastjem/data.py', '            if both:\n', '            if False:\n'),
    ]),
    Mutant('exif-orientation-ignored', 'tests/test_data.py -k exif', [
        ('fastjem/data.py', '                         apply_exif_orientation=True)', '                         apply_exif_orientation=False)'),
    ]),
    Mutant('sixteen-bit-tiff-clipped', 'tests/test_data.py -k exif', [
        ('fastjem/data.py', '            sixteen = im.mode.startswith("I;16")', '            sixteen = False'),
    ]),
    Mutant('ood-folder-not-centre-cropped', 'tests/test_eval.py -k ood_image_folder', [
        ('fastjem/eval/ood.py', 'size, total=len(paths), progress=False, bad=bad)', '0, total=len(paths), progress=False, bad=bad)'),
        ('fastjem/eval/ood.py', '    x = torch.stack(images)  # uint8', '    x = torch.stack([i[:, :size, :size] for i in images])  # uint8'),
    ]),
    Mutant('cache-copies-pile-up', 'tests/test_data.py -k replaces_its_cache', [
        ('fastjem/data.py', '                if old != cache:\n                    old.unlink(missing_ok=True)',
         '                if False:\n                    old.unlink(missing_ok=True)'),
    ]),
    Mutant('named-subset-holds-out-5000', 'tests/test_data.py -k cifar10_from_a_train_test', [
        ('fastjem/data.py', '    val = min(5000, len(arrays.train_y) // 10)\n', '    val = 5000\n'),
    ]),
    Mutant('first-bad-image-only', 'tests/test_data.py -k undecodable', [
        ('fastjem/data.py', '        except DataNotFoundError as err:  # every bad file', '        except ZeroDivisionError as err:  # every bad file'),
    ]),
    Mutant('bn-momentum-pytorch-default', 'tests/test_models.py', [
        ('fastjem/models/wrn.py', 'nn.BatchNorm2d(channels, momentum=0.9)', 'nn.BatchNorm2d(channels)'),
    ]),
    Mutant('one-class-folder-silent', 'tests/test_data.py -k one_class', [
        ('fastjem/data.py', '    if len(classes) == 1:\n        # p(y|x)', '    if False:\n        # p(y|x)'),
    ]),
    Mutant('warnings-with-file-and-line', 'tests/test_cli.py -k one_line', [
        ('fastjem/cli.py', '        if issubclass(category, FastJEMWarning):\n            print(f"fastjem: warning',
         '        if False:\n            print(f"fastjem: warning'),
    ]),
    Mutant('kept-checkpoint-hard-link', 'tests/test_history.py', [
        ('fastjem/train.py', '        atomic_copy(path, dest)\n        return dest',
         '        dest.parent.mkdir(exist_ok=True)\n        dest.unlink(missing_ok=True)\n        os.link(path, dest)\n        return dest'),
    ]),
    Mutant('sample-grid-write-fatal', 'tests/test_disk.py -k sample_grid', [
        ('fastjem/train.py', '        except OSError as err:\n            self.log(f"warning: sample grid not written',
         '        except ZeroDivisionError as err:\n            self.log(f"warning: sample grid not written'),
    ]),
    Mutant('tensorboard-failure-fatal', 'tests/test_disk.py -k tensorboard', [
        ('fastjem/board.py', '        except OSError as err:\n            self.failed =',
         '        except ZeroDivisionError as err:\n            self.failed ='),
    ]),
    Mutant('tensorboard-thread-hook-not-installed', 'tests/test_disk.py -k tensorboard', [
        ('fastjem/board.py', '        _quiet_writer_thread()\n', '        pass\n'),
    ]),
    Mutant('tensorboard-thread-traceback', 'tests/test_disk.py -k thread', [
        ('fastjem/board.py', '        if type(args.thread).__name__ != "_AsyncWriterThread" or not issubclass(args.exc_type, OSError):\n            previous(args)',
         '        previous(args)'),
    ]),
    Mutant('figure-written-in-place', 'tests/test_disk.py -k whole_or_not', [
        ('fastjem/eval/plots.py', '    with atomic_file(path, "wb") as f:\n        fig.savefig(f,',
         '    with open(path, "wb") as f:\n        fig.savefig(f,'),
    ]),
    Mutant('grid-written-in-place', 'tests/test_disk.py -k whole_or_not', [
        ('fastjem/eval/plots.py', '    with atomic_file(path, "wb") as f:\n        save_image(grid,',
         '    with open(path, "wb") as f:\n        save_image(grid,'),
    ]),
    Mutant('eval-figure-failure-loses-report', 'tests/test_eval.py -k cannot_be_written', [
        ('fastjem/eval/tasks.py', '        except OSError as err:\n            self.not_written.append',
         '        except ZeroDivisionError as err:\n            self.not_written.append'),
    ]),
    Mutant('damaged-best-fails-the-end', 'tests/test_best.py -k damaged', [
        ('fastjem/train.py', '            except CheckpointError as err:\n                self.log(f"warning: the best validation',
         '            except ZeroDivisionError as err:\n                self.log(f"warning: the best validation'),
    ]),
    Mutant('damaged-cache-used', 'tests/test_data.py -k damaged_cache', [
        ('fastjem/data.py', '            if damaged_member(cache):', '            if False:'),
    ]),
    Mutant('cache-per-path-spelling', 'tests/test_data.py -k damaged_cache', [
        ('fastjem/data.py', '    root = Path(os.path.abspath(root))\n', ''),
    ]),
    Mutant('cache-unlink-fails-the-run', 'tests/test_data.py -k damaged_cache', [
        ('fastjem/data.py', '            with contextlib.suppress(OSError):\n                cache.unlink(missing_ok=True)',
         '            if True:\n                cache.unlink(missing_ok=True)'),
    ]),
    Mutant('lock-write-names-no-file', 'tests/test_disk.py -k names_the_file', [
        ('fastjem/checkpoint.py', '        with naming(lock_file):\n', '        if True:\n'),
    ]),
    Mutant('metrics-write-names-no-file', 'tests/test_disk.py -k names_the_file', [
        ('fastjem/train.py', '        with naming(path), open(path, "a") as f:', '        with open(path, "a") as f:'),
    ]),
    Mutant('bench-result-written-in-place', 'tests/test_disk.py -k benchmark_result', [
        ('fastjem/benchmark.py', '    atomic_write_text(json.dumps(r, indent=2) + "\\n", path)  #', '    path.write_text(json.dumps(r, indent=2) + "\\n")  #'),
    ]),
    Mutant('orphan-rollback-kept-on-resume', 'tests/test_guard.py -k never_written', [
        ('fastjem/train.py', '        if from_latest:\n            for old in self.out_dir.glob("rollback-*.pt"):',
         '        if False:\n            for old in self.out_dir.glob("rollback-*.pt"):'),
    ]),
    Mutant('reference-worker-pipe-kept-open', 'tests/test_bench.py -k dies_is_an_error', [
        ('bench/steps_per_sec.py', '    child.close()\n    try:\n        label, info = parent.recv()', '    try:\n        label, info = parent.recv()'),
    ]),
    Mutant('bench-out-replaces-anything', 'tests/test_cli.py -k unasked', [
        ('fastjem/cli.py', '            output_path(target, suffixes, flag, args.force, flag=flag)', '            pass'),
    ]),
    Mutant('sample-replaces-grid-beside', 'tests/test_cli.py -k unasked', [
        ('fastjem/eval/draw.py', '    output_path(path.with_suffix(".png"), (".png",), "the sample grid beside --out", overwrite)\n', ''),
    ]),
    Mutant('run-over-another-runs-files', 'tests/test_cli.py -k unasked', [
        ('fastjem/train.py', '            if held:\n', '            if False:\n'),
    ]),
    Mutant('convert-over-its-input', 'tests/test_convert.py -k errors_say', [
        ('fastjem/convert.py', '    if out.exists() and src.exists() and os.path.samefile(out, src):', '    if False:'),
    ]),
    Mutant('eval-test-noise-unchecked', 'tests/test_cli.py -k non_finite', [
        ('fastjem/eval/tasks.py', '        if test_noise is not None and not 0 <= test_noise < math.inf:', '        if False:'),
    ]),
    Mutant('decay-epochs-nan', 'tests/test_cli.py -k non_finite', [
        ('fastjem/config.py', 'or not 0 <= e < math.inf for e in self.decay_epochs', 'or e < 0 for e in self.decay_epochs'),
    ]),
    Mutant('second-grid-replaces-first', 'tests/test_sweep.py -k two_grid', [
        ('fastjem/cli.py', '    p.add_argument("--grid", nargs="+", action="extend", required=True,', '    p.add_argument("--grid", nargs="+", required=True,'),
    ]),
    Mutant('sweep-stops-at-a-runtime-error', 'tests/test_sweep.py -k failed_run', [
        ('fastjem/sweep.py', '        except Exception as err:  # noqa: BLE001 - one run', '        except FastJEMError as err:  # noqa: BLE001 - one run'),
    ]),
    Mutant('classifier-only-overrides-weights', 'tests/test_cli.py -k quietly', [
        ('fastjem/cli.py', '        if given:\n            raise ConfigError(f"--classifier-only trains', '        if False:\n            raise ConfigError(f"--classifier-only trains'),
    ]),
    Mutant('config-file-preset-ignored', 'tests/test_cli.py -k quietly', [
        ('fastjem/cli.py', '            base = get_preset(from_file["preset"])', '            pass'),
    ]),
    Mutant('unreadable-checkpoint-called-damaged', 'tests/test_cli.py -k cannot_be_read', [
        ('fastjem/checkpoint.py', "    except OSError as err:\n        if err.errno == errno.EINVAL", "    except ZeroDivisionError as err:\n        if err.errno == errno.EINVAL"),
    ]),
    Mutant('unreadable-input-gets-output-advice', 'tests/test_cli.py -k cannot_be_read', [
        ('fastjem/cli.py', '        if err.errno in (errno.EACCES, errno.EPERM):\n            # a file read', '        if False:\n            # a file read'),
    ]),
    Mutant('ints-unbounded', 'tests/test_cli.py -k 64_bits', [
        ('fastjem/cli.py', '    if value >= 2**63:', '    if False:'),
        ('fastjem/cli.py', '    if value < -(2**63):', '    if False:'),
    ]),
    Mutant('out-of-memory-traceback', 'tests/test_cli.py -k 64_bits', [
        ('fastjem/cli.py', '''        if not isinstance(err, MemoryError) and not any(s in what for s in ("can't allocate memory", "out of memory",''',
         '''        if not isinstance(err, MemoryError) and not any(s in what for s in ("can't allocate memory!", "out of memory!",'''),
    ]),
    Mutant('bench-out-file-found-after-the-work', 'tests/test_bench.py -k refuse_bad_options', [
        ('bench/env_info.py', '        path.mkdir(parents=True, exist_ok=True)\n    except OSError as err:\n        why = "a file',
         '        pass\n    except OSError as err:\n        why = "a file'),
    ]),
    Mutant('paper-decay-rate', 'tests/test_train.py -k presets_validate', [
        ('fastjem/config.py', 'decay_epochs=(50, 100), decay_rate=0.3, sgld_steps=20,', 'decay_epochs=(50, 100), decay_rate=0.1, sgld_steps=20,'),
    ]),
    Mutant('paper-warmup', 'tests/test_train.py -k presets_validate', [
        ('fastjem/config.py', 'epochs=150.0, lr=1e-4, warmup_iters=1000,', 'epochs=150.0, lr=1e-4, warmup_iters=100,'),
    ]),
    Mutant('paper-sgld-noise-and-reinit', 'tests/test_train.py -k presets_validate', [
        ('fastjem/config.py', '        sgld_step_size=1.0, sgld_noise=0.01, buffer_size=10000, reinit_prob=0.05, ckpt_every=2000,',
         '        sgld_step_size=1.0, sgld_noise=0.05, buffer_size=10000, reinit_prob=0.5, ckpt_every=2000,'),
    ]),
    Mutant('default-sgld-noise', 'tests/test_train.py -k presets_validate', [
        ('fastjem/config.py', '    sgld_noise: float = _opt(0.01, "SGLD noise std sigma", group="sampler")',
         '    sgld_noise: float = _opt(0.001, "SGLD noise std sigma", group="sampler")'),
    ]),
    Mutant('gap-sign', 'tests/test_train.py -k finite_loss_and_gap', [
        ('fastjem/train.py', '        out["gap"] = out["e_sample"] - out["e_data"]', '        out["gap"] = out["e_data"] - out["e_sample"]'),
    ]),
    Mutant('guard-sample-energy-unbounded', 'tests/test_guard.py -k flags_each_bound', [
        ('fastjem/guard.py', '            bad = bad | (e_d.abs() > self.energy_bound) | (e_s.abs() > self.energy_bound)',
         '            bad = bad | (e_d.abs() > self.energy_bound)'),
    ]),
    Mutant('fid-cov-biased', 'tests/test_eval.py -k formulas', [
        ('fastjem/eval/metrics.py', '    return mu, centred.T @ centred / (len(f) - 1)', '    return mu, centred.T @ centred / len(f)'),
    ]),
    Mutant('ood-maxprob-is-max-logit', 'tests/test_eval.py -k formulas', [
        ('fastjem/eval/ood.py', '        out["maxprob"].append(torch.softmax(logits, 1).amax(1).cpu())', '        out["maxprob"].append(logits.amax(1).cpu())'),
    ]),
    Mutant('runs-md-pipe-unescaped', 'tests/test_eval.py -k formulas', [
        ('fastjem/runs.py', '        cells = [[c.replace("|", "\\\\|") for c in r] for r in (head, *rows)]', '        cells = [list(r) for r in (head, *rows)]'),
    ]),
    Mutant('resume-allows-lr-change', 'tests/test_train.py -k refuses_every_option', [
        ('fastjem/train.py', '    "keep_best", "tensorboard", "device", "data_dir", "out_dir", "download", "cuda_graph", "iteration_graph",',
         '    "keep_best", "tensorboard", "device", "data_dir", "out_dir", "download", "cuda_graph", "iteration_graph", "lr",'),
    ]),
    Mutant('sample-cli-step-noise-ignored', 'tests/test_eval.py -k step_size_and_noise_given', [
        ('fastjem/eval/cli.py', '    drawn = draw.draw(em, args.n, classes, args.n_steps, args.init, args.step_size, args.noise,',
         '    drawn = draw.draw(em, args.n, classes, args.n_steps, args.init, None, None,'),
    ]),
    Mutant('draw-default-step-size', 'tests/test_eval.py -k step_size_and_noise_given', [
        ('fastjem/eval/draw.py', '    a = a if step_size is None else step_size', '    a = 1.0 if step_size is None else step_size'),
    ]),
    Mutant('auto-parts-always-two', 'tests/test_parts.py -k follow_the_convolutions', [
        ('fastjem/engine.py', '    return 2 if wave_tail(layers, batch, sms) >= SPLIT_TAIL else 1\n', '    return 2\n'),
    ]),
    Mutant('wave-tail-counts-sub-wave-layers', 'tests/test_parts.py -k wave_tail', [
        ('fastjem/engine.py', 'idle += layer.flops * (1 - max(waves, 1.0) / math.ceil(waves))',
         'idle += layer.flops * (1 - waves / math.ceil(waves))'),
    ]),
    Mutant('conv-layers-leave-eval-mode', 'tests/test_parts.py -k conv_layers_read', [
        ('fastjem/engine.py', '        model.train(training)\n', '        pass\n'),
    ]),
    Mutant('networks-parts-fitted-without-network', 'tests/test_parts.py -k fits_the_parts_to_its_own', [
        ('fastjem/engine.py', 'fit_sgld_parts(engine, sample_shape, cfg, model, rows=rows)',
         'fit_sgld_parts(engine, sample_shape)'),
    ]),
    Mutant('train-networks-without-rank-rows', 'tests/test_parts.py -k fits_the_parts_to_its_own', [
        ('fastjem/train.py', 'self.data.sample_shape, cfg, rows=self.local_batch)', 'self.data.sample_shape, cfg)'),
    ]),
    Mutant('steps-ablation-always-one-part', 'tests/test_bench.py -k parts_auto', [
        ('bench/steps_per_sec.py', '    if auto_sgld_parts(device, layers, batch, sms) > 1:\n', '    if True:\n'),
    ]),
    Mutant('guard-buffer-diagnosis-dropped', 'tests/test_guard.py -k far_above', [
        ('fastjem/guard.py', 'elif e_buf - e_uni > self.buffer_margin:', 'elif False:'),
    ]),
    Mutant('guard-buffer-diagnosis-reversed', 'tests/test_guard.py -k far_above', [
        ('fastjem/guard.py', 'elif e_buf - e_uni > self.buffer_margin:', 'elif e_uni - e_buf > self.buffer_margin:'),
    ]),
    Mutant('ladder-lr-not-halved', 'tests/test_guard.py -k ladder', [
        ('fastjem/train.py', 'ladder.lr_scale *= 0.5', 'ladder.lr_scale *= 1.0'),
    ]),
    Mutant('ladder-energy-l2-not-doubled', 'tests/test_guard.py -k ladder', [
        ('fastjem/train.py', 'else 2 * ladder.energy_l2', 'else ladder.energy_l2'),
    ]),
    Mutant('ladder-wraps-round', 'tests/test_guard.py -k ladder', [
        ('fastjem/train.py', 'rung = rungs[min(n, len(rungs) - 1)] if rungs', 'rung = rungs[n % len(rungs)] if rungs'),
    ]),
    Mutant('logged-lr-off-by-one', 'tests/test_train.py -k logged_learning_rate', [
        ('fastjem/train.py', 'lr=learning_rate(cfg, it - 1, self.iters_per_epoch)', 'lr=learning_rate(cfg, it, self.iters_per_epoch)'),
    ]),
    Mutant('x-lab-with-x-p-label', 'tests/test_data.py -k own_label', [
        ('fastjem/data.py', '        y_lab = self.train_y[il]\n', '        y_lab = self.train_y[ip]\n'),
    ]),
    Mutant('x-lab-from-unlabelled-images', 'tests/test_data.py -k own_label', [
        ('fastjem/data.py', 'self.labelled[torch.randint(0, len(self.labelled), (batch_size,), device=self.device,',
         'torch.arange(self.n_train)[torch.randint(0, self.n_train, (batch_size,), device=self.device,'),
    ]),
    Mutant('data-order-ignores-seed', 'tests/test_data.py -k follows_the_seed', [
        ('fastjem/train.py', 'self.data_gen = torch.Generator(device=self.device).manual_seed(cfg.seed)',
         'self.data_gen = torch.Generator(device=self.device).manual_seed(0)'),
    ]),
    Mutant('periodic-validation-without-test-noise', 'tests/test_train.py -k test_noise_reaches', [
        ('fastjem/train.py', '                    val = evaluate(self.model, self.data.val_x, self.data.val_y, noise=cfg.test_noise)\n',
         '                    val = evaluate(self.model, self.data.val_x, self.data.val_y)\n'),
    ]),
    Mutant('inception-score-pooled-marginal', 'tests/test_eval.py -k each_splits_own', [
        ('fastjem/eval/metrics.py', '        marginal = chunk.mean(0, keepdim=True)\n', '        marginal = p.mean(0, keepdim=True)\n'),
    ]),
    Mutant('inception-score-biased-std', 'tests/test_eval.py -k each_splits_own', [
        ('fastjem/eval/metrics.py', '(t.std().item() if len(t) > 1 else 0.0)', '(t.std(unbiased=False).item() if len(t) > 1 else 0.0)'),
    ]),
    Mutant('grey-by-channel-mean', 'tests/test_eval.py -k match_shape_converts', [
        ('fastjem/eval/ood.py', 'torch.tensor([0.299, 0.587, 0.114], dtype=x.dtype)', 'torch.tensor([1 / 3, 1 / 3, 1 / 3], dtype=x.dtype)'),
    ]),
    Mutant('dropout-after-second-activation', 'tests/test_models.py -k dropout_sits', [
        ('fastjem/models/wrn.py', '        h = self.conv2(self.act(self.norm2(self.dropout(h))))\n',
         '        h = self.conv2(self.dropout(self.act(self.norm2(h))))\n'),
    ]),
    Mutant('fid-weights-read-after-sampling', 'tests/test_eval.py -k reads_its_inception', [
        ('fastjem/eval/tasks.py', 'metrics = _inception_metrics(inception_weights, em.device) if inception_weights is not None else None',
         'metrics = None'),
    ]),
    Mutant('eval-ignored-options-accepted', 'tests/test_eval.py -k task_does_not_read', [
        ('fastjem/eval/cli.py', '    refuse_ignored_options(args)\n    if args.n_ood', '    if args.n_ood'),
    ]),
    Mutant('sample-class-twice-accepted', 'tests/test_eval.py -k given_twice', [
        ('fastjem/eval/draw.py', '        if c in classes:\n', '        if False:\n'),
    ]),
    Mutant('bench-convnet-depth-accepted', 'tests/test_cli.py -k bench_refuses_bad_sizes', [
        ('fastjem/cli.py', '    if args.arch == "convnet" and args.depth is not None:\n', '    if False:\n'),
    ]),
    Mutant('runs-json-beside-format-accepted', 'tests/test_runs.py -k sweeps_inside_the_folder', [
        ('fastjem/cli.py', '    if args.json and args.format not in ("text", "json"):\n', '    if False:\n'),
    ]),
    Mutant('report-empty-results-over-readme', 'tests/test_bench.py -k empty_the_readmes', [
        ('bench/report.py', '    if not any(results.values()) and not args.print:\n', '    if False:\n'),
    ]),
    Mutant('report-damaged-result-silent', 'tests/test_bench.py -k empty_the_readmes', [
        ('bench/report.py', '    for name in unreadable_results(Path(args.results)):\n', '    for name in []:\n'),
    ]),
    Mutant('device-out-dir-traceback', 'tests/test_cli.py -k output_folder_that_is_a_file', [
        ('fastjem/cli.py', 'p.exists() and not p.is_dir() for p in (Path(err.filename), *Path(err.filename).parents)',
         'p.is_file() for p in (Path(err.filename), *Path(err.filename).parents)'),
    ]),
    Mutant('bench-sigterm-leaves-temp', 'tests/test_bench.py -k terminated_benchmark', [
        ('bench/steps_per_sec.py', '    exit_on_sigterm()  # a SIGTERM still removes the temporary folders\n', ''),
    ]),
    Mutant('sgld-study-smoke-overrides-given-sizes', 'tests/test_bench.py -k sgld_study_smoke', [
        ('bench/env_info.py', '        if getattr(args, name) == parser.get_default(name):\n            setattr(args, name, value)',
         '        setattr(args, name, value)'),
    ]),
    Mutant('sgld-study-smoke-drops-variants', 'tests/test_bench.py -k refuse_bad_options', [
        ('bench/sgld_study.py', '        if dropped and args.variants != p.get_default("variants"):\n', '        if False:\n'),
    ]),
    Mutant('unread-val-folder-silent', 'tests/test_data.py -k val_folder_beside', [
        ('fastjem/data.py', '    if not unread:\n        return []\n    return [f"{where}:', '    if True:\n        return []\n    return [f"{where}:'),
    ]),
    Mutant('rng-torch-counter-high-word', 'tests/test_kernels_rng.py -k high_words', [
        ('kernels/rng.py', '    return torch.stack(philox4x32_10(counters & _MASK32, (counters >> 32) & _MASK32, zero, zero, k0, k1))', '    return torch.stack(philox4x32_10(counters & _MASK32, zero, zero, zero, k0, k1))'),
    ]),
    Mutant('rng-torch-seed-high-word', 'tests/test_kernels_rng.py -k high_words', [
        ('kernels/rng.py', '    k1 = (seed >> 32) & _MASK32\n', '    k1 = seed * 0\n'),
    ]),
    Mutant('dispatch-interpreter-only-1', 'tests/test_kernels_dispatch.py -k restored_after', [
        ('kernels/_dispatch.py', '        return bool(knobs.runtime.interpret)', '        return os.environ.get("TRITON_INTERPRET", "0") == "1"'),
    ]),
    Mutant('dispatch-block-not-restored-on-error', 'tests/test_kernels_dispatch.py -k restored_after', [
        ('kernels/_dispatch.py', '    try:\n        yield\n    finally:\n        with _lock:\n            _default[0] = previous', '    yield\n    with _lock:\n        _default[0] = previous'),
    ]),
    Mutant('dispatch-set-backend-unchecked', 'tests/test_kernels_dispatch.py -k restored_after', [
        ('kernels/_dispatch.py', '        _default[0] = _check(name)', '        _default[0] = name'),
    ]),
    Mutant('sgld-grad-not-contiguous', 'tests/test_kernels_sgld.py -k strided_gradient', [
        ('kernels/sgld.py', '    grad = grad.contiguous()\n', ''),
    ]),
    Mutant('sgld-float-state-accepted', 'tests/test_kernels_sgld.py -k float_state', [
        ('kernels/sgld.py', 'if rng_state.shape != (2,) or rng_state.dtype != torch.int64 or rng_state.device != x.device:', 'if rng_state.shape != (2,) or rng_state.device != x.device:'),
    ]),
    Mutant('sgld-grad-shape-unchecked', 'tests/test_kernels_sgld.py -k float_state', [
        ('kernels/sgld.py', '    if grad.shape != x.shape or not grad.is_floating_point() or grad.device != x.device:', '    if not grad.is_floating_point() or grad.device != x.device:'),
    ]),
    Mutant('buffer-write-x-not-contiguous', 'tests/test_kernels_buffer.py -k strided_rows', [
        ('kernels/buffer.py', '_buffer_write_kernel[grid](buffer, idx, x.contiguous(), last,', '_buffer_write_kernel[grid](buffer, idx, x, last,'),
    ]),
    Mutant('buffer-fresh-not-contiguous', 'tests/test_kernels_buffer.py -k strided_rows', [
        ('kernels/buffer.py', 'out if fresh is None else fresh.contiguous()', 'out if fresh is None else fresh'),
    ]),
    Mutant('buffer-sample-idx-not-contiguous', 'tests/test_kernels_buffer.py -k strided_rows', [
        ('kernels/buffer.py', '                buffer, idx.contiguous(), out, rng_state.contiguous(),', '                buffer, idx, out, rng_state.contiguous(),'),
    ]),
    Mutant('lse-fwd-row-stride-as-K', 'tests/test_kernels_energy.py -k row_strided', [
        ('kernels/energy.py', 'logits, p_labels, energy, p_max, p_sumexp, B, K, logits.stride(0),', 'logits, p_labels, energy, p_max, p_sumexp, B, K, K,'),
    ]),
    Mutant('lse-bwd-row-stride-as-K', 'tests/test_kernels_energy.py -k row_strided', [
        ('kernels/energy.py', 'grad_energy, logits, p_labels, p_max, p_sumexp, grad_logits, B, K, logits.stride(0),', 'grad_energy, logits, p_labels, p_max, p_sumexp, grad_logits, B, K, K,'),
    ]),
    Mutant('log-py-not-fp32', 'tests/test_energy.py -k fp32_from_bf16', [
        ('fastjem/energy.py', '    return torch.log_softmax(logits.float(), dim=1)', '    return torch.log_softmax(logits, dim=1)'),
    ]),
    Mutant('weights-pre-hooks-ignored', 'tests/test_weights.py -k pre_hook', [
        ('fastjem/weights.py', '        if m._forward_hooks or m._forward_pre_hooks:', '        if m._forward_hooks:'),
    ]),
    Mutant('export-check-never-fails', 'tests/test_export.py -k computes_something_else', [
        ('fastjem/export.py', '    if not worst <= 1e-5:', '    if False:'),
    ]),
    Mutant('export-meta-range', 'tests/test_export.py -k computes_something_else', [
        ('fastjem/export.py', '"range": [-1.0, 1.0]', '"range": [0.0, 1.0]'),
    ]),
    Mutant('convnet-relu', 'tests/test_models.py -k convnet_uses', [
        ('fastjem/models/convnet.py', 'nn.Conv2d(in_channels, c, 3, padding=1), nn.LeakyReLU(LEAK),', 'nn.Conv2d(in_channels, c, 3, padding=1), nn.ReLU(),'),
    ]),
    Mutant('convnet-second-norm-dropped', 'tests/test_models.py -k convnet_uses', [
        ('fastjem/models/convnet.py', 'make_norm(norm, 2 * c), nn.Conv2d(2 * c', 'nn.Identity(), nn.Conv2d(2 * c'),
    ]),
    Mutant('history-nan-in-group-mean', 'tests/test_history.py -k diverged_seed', [
        ('fastjem/eval/history.py', 'if k in m and math.isfinite(m[k])', 'if k in m'),
    ]),
    Mutant('curves-pxy-only-not-generative', 'tests/test_curves.py -k pxy_term', [
        ('fastjem/curves.py', '    return cfg.get("px_weight", 1.0) > 0 or cfg.get("pxy_weight", 0.0) > 0', '    return cfg.get("px_weight", 1.0) > 0'),
    ]),
    Mutant('ref-sgld-no-noise', 'tests/test_bench.py -k papers_algorithm_in_its_parts', [
        ('bench/reference_eager.py', '        x.data += step_size * grad + noise * torch.randn_like(x)', '        x.data += step_size * grad'),
    ]),
    Mutant('ref-sgld-leaves-eval-mode', 'tests/test_bench.py -k papers_algorithm_in_its_parts', [
        ('bench/reference_eager.py', '    model.train(was_training)\n', ''),
    ]),
    Mutant('ref-reset-inverted', 'tests/test_bench.py -k papers_algorithm_in_its_parts', [
        ('bench/reference_eager.py', '< cfg.reinit_prob).float()', '> cfg.reinit_prob).float()'),
    ]),
    Mutant('ref-buffer-write-dropped', 'tests/test_bench.py -k papers_algorithm_in_its_parts', [
        ('bench/reference_eager.py', '        self.buffer[idx] = x.cpu()', '        pass'),
    ]),
    Mutant('ref-augment-range', 'tests/test_bench.py -k papers_algorithm_in_its_parts', [
        ('bench/reference_eager.py', '        x = x_u8.float() / 127.5 - 1.0', '        x = x_u8.float() / 255.0'),
    ]),
    Mutant('ref-ieee-keeps-tf32', 'tests/test_bench.py -k papers_algorithm_in_its_parts', [
        ('bench/reference_eager.py', '        torch.backends.cudnn.allow_tf32 = False', '        torch.backends.cudnn.allow_tf32 = True'),
    ]),
    Mutant('ref-warmup-off-by-one', 'tests/test_bench.py -k papers_algorithm_in_its_parts', [
        ('bench/reference_eager.py', 'warm = min(1.0, (self.iteration + 1) / self.cfg.warmup_iters)', 'warm = min(1.0, self.iteration / self.cfg.warmup_iters)'),
    ]),
    Mutant('export-nan-difference-passes', 'tests/test_export.py -k computes_something_else', [
        ('fastjem/export.py', 'worst = max(worst, diff if math.isfinite(diff) else math.inf)', 'worst = max(worst, diff)'),
    ]),
    Mutant('history-sorted-by-name', 'tests/test_history.py -k iteration_order', [
        ('fastjem/eval/history.py', '    return sorted(files, key=lambda p: (iteration(p), p.name))', '    return sorted(files, key=lambda p: p.name)'),
    ]),
    Mutant('history-stray-pt-iteration-0', 'tests/test_history.py -k iteration_order', [
        ('fastjem/eval/history.py', '        return int(load_checkpoint(p)["iteration"])', '        return 0'),
    ]),
    Mutant('history-samples-headline-missing', 'tests/test_history.py -k iteration_order', [
        ('fastjem/eval/history.py', '        out["conditional samples classified as their class"] = r["conditional"]["fraction_classified_as_target"]', '        pass'),
    ]),
    Mutant('curves-same-named-runs-merged', 'tests/test_curves.py -k one_name', [
        ('fastjem/curves.py', '    if len(set(labels)) < len(labels):', '    if False:'),
    ]),
    Mutant('curves-best-marker-first', 'tests/test_curves.py -k one_name', [
        ('fastjem/curves.py', '            kept = [e for e in val if e.get("best")]', '            kept = [e for e in val if e.get("best")][:1]'),
    ]),
    Mutant('tasks-checkpoint-test-noise-ignored', 'tests/test_contracts.py', [
        ('fastjem/eval/tasks.py', '        self.test_noise = self.em.config.test_noise if test_noise is None else test_noise', '        self.test_noise = 0.0 if test_noise is None else test_noise'),
    ]),
    Mutant('tasks-accuracy-step-size-ignored', 'tests/test_contracts.py', [
        ('fastjem/eval/tasks.py', '    step_size = a if step_size is None else step_size', '    step_size = a'),
    ]),
    Mutant('tasks-accuracy-noise-ignored', 'tests/test_contracts.py', [
        ('fastjem/eval/tasks.py', '    noise = s if noise is None else noise', '    noise = s'),
    ]),
    Mutant('tasks-calibration-compare-other-dataset', 'tests/test_contracts.py', [
        ('fastjem/eval/tasks.py', '    if other.info.name != em.info.name:', '    if False:'),
    ]),
    Mutant('tasks-fid-source-fresh-ignored', 'tests/test_contracts.py', [
        ('fastjem/eval/tasks.py', '    use_buffer = em.buffer is not None and source != "fresh"', '    use_buffer = em.buffer is not None'),
    ]),
    Mutant('tasks-fid-images-not-rescaled', 'tests/test_contracts.py', [
        ('fastjem/eval/tasks.py', '    to01 = lambda t: ((t.clamp(-1, 1) + 1) / 2).expand(-1, 3, -1, -1)', '    to01 = lambda t: t.clamp(0, 1).expand(-1, 3, -1, -1)'),
    ]),
    Mutant('export-ddp-rank0-buffer-only', 'tests/test_contracts.py', [
        ('fastjem/convert.py', 'shards = [r["buffer"] for r in ckpt["ranks"]] if "ranks" in ckpt else [ckpt.get("buffer")]', 'shards = [ckpt["ranks"][0]["buffer"]] if "ranks" in ckpt else [ckpt.get("buffer")]'),
    ]),
    Mutant('convert-buffer-shape-unchecked', 'tests/test_contracts.py', [
        ('fastjem/convert.py', '        if buffer.dim() != 4 or tuple(buffer.shape[1:]) != shape:', '        if False:'),
    ]),
    Mutant('export-custom-model-accepted', 'tests/test_contracts.py', [
        ('fastjem/convert.py', '    if (ckpt.get("custom") or {}).get("model") or cfg.arch != "wrn":', '    if cfg.arch != "wrn":'),
    ]),
    Mutant('convert-buffer-size-not-recorded', 'tests/test_contracts.py', [
        ('fastjem/convert.py', '        cfg = cfg.replace(buffer_size=len(buffer))', '        pass'),
    ]),
    Mutant('tasks-by-class-least-confident', 'tests/test_contracts.py', [
        ('fastjem/eval/tasks.py', '            top = members[conf[members].argsort(descending=True)[:per_class]]', '            top = members[conf[members].argsort()[:per_class]]'),
    ]),
    Mutant('bench-chains-per-s', 'tests/test_contracts.py', [
        ('fastjem/benchmark.py', '"chains_per_s": cfg.batch_size / call_s,', '"chains_per_s": 1 / call_s,'),
    ]),
    Mutant('fid-single-test-image-accepted', 'tests/test_contracts.py -k single_test_image', [
        ('fastjem/eval/tasks.py', '    if len(real) < 2:\n        raise ConfigError(f"FID compares', '    if False:\n        raise ConfigError(f"FID compares'),
    ]),
    Mutant('config-labels-per-class-zero', 'tests/test_contracts.py -k more_bad', [
        ('fastjem/config.py', '        if self.labels_per_class == 0 or self.labels_per_class < -1:', '        if False:'),
    ]),
    Mutant('config-val-size-negative', 'tests/test_contracts.py -k more_bad', [
        ('fastjem/config.py', '        if self.val_size < -1:', '        if False:'),
    ]),
    Mutant('config-unknown-remedy', 'tests/test_contracts.py -k more_bad', [
        ('fastjem/config.py', '        if unknown or not self.remedies:', '        if not self.remedies:'),
    ]),
    Mutant('config-imagefolder-no-dir', 'tests/test_contracts.py -k more_bad', [
        ('fastjem/config.py', '        if self.dataset == "imagefolder" and not self.data_dir:', '        if False:'),
    ]),
    Mutant('config-file-out-dir-kept', 'tests/test_contracts.py -k config_file_keeps', [
        ('fastjem/config.py', '    options.pop("out_dir", None)', '    pass'),
    ]),
    Mutant('config-file-bool-as-int', 'tests/test_contracts.py -k config_file_keeps', [
        ('fastjem/config.py', '    if type(value) is not kind:\n        return False', '    if not isinstance(value, kind):\n        return False'),
    ]),
    Mutant('steps-budget-ignores-slowest', 'tests/test_bench.py -k slowest', [
        ('bench/steps_per_sec.py', 'budget - elapsed >= max(slowest, 0.0) and elapsed <= budget',
         'elapsed <= budget'),
    ]),
    Mutant('report-ignores-noted-bf16', 'tests/test_bench.py -k apart', [
        ('bench/report.py', 'set(d.get("bf16_flags") or ()) or _noted_bf16_flags(rep)', 'set(d.get("bf16_flags") or ())'),
    ]),
    Mutant('env-cpu-no-bf16-flags', 'tests/test_bench.py -k apart', [
        ('bench/env_info.py', ' bf16_flags=cpu_bf16_flags(),', ''),
    ]),
    Mutant('generative-ignores-pxy', 'tests/test_train.py -k pxy_samples_as_a_jem', [
        ('fastjem/config.py', '        return self.px_weight > 0 or self.pxy_weight > 0', '        return self.px_weight > 0'),
    ]),
    Mutant('cpu-cores-counts-threads', 'tests/test_bench.py -k physical_cores', [
        ('bench/cpu_topology.py', '"physical_cores": len(cores)}', '"physical_cores": sum(map(len, cores.values()))}'),
    ]),
    Mutant('report-hides-shared-cores', 'tests/test_bench.py -k physical_cores', [
        ('bench/report.py', '    cores = d.get("physical_cores") if threads else None', '    cores = None'),
    ]),
    Mutant('cpu-bars-pins-hardware-threads', 'tests/test_bench.py -k cpu_bars', [
        ('bench/cpu_topology.py', 'firsts = sorted(cpus[0] for cpus in cores.values())',
         'firsts = sorted(n for cpus in cores.values() for n in cpus)'),
    ]),
    Mutant('board-rewind-keeps-purged-images', 'tests/test_board.py -k rollback_and_a_resume', [
        ('fastjem/board.py', '        self._images = {tag: step for tag, step in self._images.items() if step < iteration}\n', ''),
    ]),
    Mutant('runs-val-first', 'tests/test_runs.py -k "latest or csv"', [
        ('fastjem/runs.py', '        "val_acc": val[-1]["val_acc"] if val else None,', '        "val_acc": val[0]["val_acc"] if val else None,'),
    ]),
    Mutant('runs-train-acc-first', 'tests/test_runs.py -k "latest or csv"', [
        ('fastjem/runs.py', '        "train_acc": m.train[-1].get("acc") if m.train else None,', '        "train_acc": m.train[0].get("acc") if m.train else None,'),
    ]),
    Mutant('runs-recoveries-all-events', 'tests/test_runs.py -k "latest or csv"', [
        ('fastjem/runs.py', '        "recoveries": sum(1 for e in m.events if e.get("action") == "recover"),', '        "recoveries": len(m.events),'),
    ]),
    Mutant('runs-best-first-kept', 'tests/test_runs.py -k "latest or csv"', [
        ('fastjem/runs.py', "            row[\"best\"] = f\"{kept[-1]['iter']}: {kept[-1]['val_acc']:.4f} / -\"", "            row[\"best\"] = f\"{kept[0]['iter']}: {kept[0]['val_acc']:.4f} / -\""),
    ]),
    Mutant('runs-csv-no-head', 'tests/test_runs.py -k "latest or csv"', [
        ('fastjem/runs.py', '.writerows([head, *rows])', '.writerows(rows)'),
    ]),
    Mutant('runs-diverged-txt-ignored', 'tests/test_runs.py -k "latest or csv"', [
        ('fastjem/runs.py', '    if not done and ((folder / "diverged.txt").exists() or stopped_by_divergence):', '    if not done and stopped_by_divergence:'),
    ]),
    Mutant('runs-done-if-summary', 'tests/test_runs.py -k "latest or csv"', [
        ('fastjem/runs.py', '    done = summary is not None and summary.get("iteration", -1) >= iteration', '    done = summary is not None'),
    ]),
    Mutant('pgd-l2-onto-sphere', 'tests/test_contracts.py -k pgd', [
        ('fastjem/eval/attacks.py', '    scale = (eps / _flat_norm(delta).clamp_min(1e-12)).clamp(max=1.0)', '    scale = eps / _flat_norm(delta).clamp_min(1e-12)'),
    ]),
    Mutant('pgd-default-step-small', 'tests/test_contracts.py -k pgd', [
        ('fastjem/eval/attacks.py', '    alpha = 2.5 * eps / steps if step_size is None else step_size', '    alpha = eps / steps if step_size is None else step_size'),
    ]),
    Mutant('pgd-step-size-ignored', 'tests/test_contracts.py -k pgd', [
        ('fastjem/eval/attacks.py', '    alpha = 2.5 * eps / steps if step_size is None else step_size', '    alpha = 2.5 * eps / steps'),
    ]),
    Mutant('pgd-no-random-start', 'tests/test_contracts.py -k pgd', [
        ('fastjem/eval/attacks.py', '    if random_start:', '    if False:'),
    ]),
    Mutant('pgd-l2-radius-full', 'tests/test_contracts.py -k pgd', [
        ('fastjem/eval/attacks.py', '* torch.rand(len(x), generator=generator).to(', '* torch.ones(len(x)).to('),
    ]),
    Mutant('pgd-bad-norm-accepted', 'tests/test_contracts.py -k pgd', [
        ('fastjem/eval/attacks.py', '    if norm not in NORMS:\n', '    if False:\n'),
    ]),
    Mutant('ood-own-dataset-allowed', 'tests/test_contracts.py -k ood_sets', [
        ('fastjem/eval/ood.py', '        if name == em.config.dataset:', '        if False:'),
    ]),
    Mutant('ood-dataset-n-ignored', 'tests/test_contracts.py -k ood_sets', [
        ('fastjem/eval/ood.py', '        if len(x) > n:\n            x = x[torch.randperm', '        if False:\n            x = x[torch.randperm'),
    ]),
    Mutant('ood-dataset-first-n', 'tests/test_contracts.py -k ood_sets', [
        ('fastjem/eval/ood.py', '            x = x[torch.randperm(len(x), generator=gen)[:n]]', '            x = x[:n]'),
    ]),
    Mutant('ood-folder-first-n', 'tests/test_contracts.py -k ood_sets', [
        ('fastjem/eval/ood.py', '        keep = torch.randperm(len(paths), generator=generator)[:n].sort().values.tolist()', '        keep = list(range(n))'),
    ]),
    Mutant('ood-seed-ignored', 'tests/test_contracts.py -k ood_sets', [
        ('fastjem/eval/ood.py', '    gen = torch.Generator().manual_seed(seed)\n    shape = em.sample_shape', '    gen = torch.Generator().manual_seed(0)\n    shape = em.sample_shape'),
    ]),
    Mutant('ood-no-antialias', 'tests/test_contracts.py -k shrinking', [
        ('fastjem/eval/ood.py', 'align_corners=False, antialias=shrink)', 'align_corners=False, antialias=False)'),
    ]),
    Mutant('grid-rows-mixed', 'tests/test_contracts.py -k conditional_grid', [
        ('fastjem/eval/draw.py', '    rows = drawn.x.view(k, n, *drawn.x.shape[1:])[:, :per_row]', '    rows = drawn.x.view(n, k, *drawn.x.shape[1:]).transpose(0, 1)[:, :per_row]'),
    ]),
    Mutant('grid-conditional-all', 'tests/test_contracts.py -k conditional_grid', [
        ('fastjem/eval/draw.py', '    per_row = min(n, max(1, max_images // k))', '    per_row = n'),
    ]),
    Mutant('grid-unconditional-all', 'tests/test_contracts.py -k conditional_grid', [
        ('fastjem/eval/draw.py', '        return plots.image_grid(drawn.x[:max_images], path)', '        return plots.image_grid(drawn.x, path)'),
    ]),
    Mutant('draw-auto-ignores-informative', 'tests/test_contracts.py -k drawing_starts', [
        ('fastjem/eval/draw.py', '    return "buffer" if em.buffer is not None else ("informative" if em.config.buffer_init == "informative"', '    return "buffer" if em.buffer is not None else ("noise" if em.config.buffer_init == "informative"'),
    ]),
    Mutant('draw-all-classes-unnamed', 'tests/test_contracts.py -k drawing_starts', [
        ('fastjem/eval/draw.py', '    if classes == list(range(em.num_classes)):', '    if False:'),
    ]),
    Mutant('draw-negative-step', 'tests/test_contracts.py -k drawing_starts', [
        ('fastjem/eval/draw.py', '           if v is not None and not 0 <= v < math.inf]', '           if v is not None and not v < math.inf]'),
    ]),
    Mutant('sqrtm-no-clip', 'tests/test_contracts.py -k fid_and', [
        ('fastjem/eval/metrics.py', '    return (v * w.clamp_min(0).sqrt()) @ v.T', '    return (v * w.sqrt()) @ v.T'),
    ]),
    Mutant('calib-edges-shifted', 'tests/test_contracts.py -k fid_and', [
        ('fastjem/eval/metrics.py', '    edges = [b / n_bins for b in range(n_bins + 1)]', '    edges = [b / n_bins for b in range(1, n_bins + 2)]'),
    ]),
    Mutant('auroc-empty-unchecked', 'tests/test_contracts.py -k fid_and', [
        ('fastjem/eval/metrics.py', '    if len(pos) == 0 or len(neg) == 0:', '    if False:'),
    ]),
    Mutant('ckpt-lock-no-pid', 'tests/test_contracts.py -k checkpoint_refusals', [
        ('fastjem/checkpoint.py', '            f.write(f"pid {os.getpid()}")', '            pass'),
    ]),
    Mutant('ckpt-newer-version-read', 'tests/test_contracts.py -k checkpoint_refusals', [
        ('fastjem/checkpoint.py', '    if ckpt.get("version", 0) > VERSION:', '    if False:'),
    ]),
    Mutant('ckpt-incomplete-read', 'tests/test_contracts.py -k checkpoint_refusals', [
        ('fastjem/checkpoint.py', '    for key in ("config", "model", "iteration"):', '    for key in ():'),
    ]),
    Mutant('ckpt-dir-lacking-ckpt', 'tests/test_contracts.py -k checkpoint_refusals', [
        ('fastjem/checkpoint.py', '            raise CheckpointError(f"{path} is a folder without checkpoint.pt in it")', '            pass'),
    ]),
    Mutant('guard-probe-not-eval', 'tests/test_guard.py -k batch_norm', [
        ('fastjem/guard.py', '            with eval_mode(t.model), t.engine.autocast():', '            with t.engine.autocast():'),
    ]),
    Mutant('guard-loss-nan-unflagged', 'tests/test_guard.py -k loss_alone', [
        ('fastjem/guard.py', '        bad = ~torch.isfinite(parts["loss"])', '        bad = torch.zeros((), dtype=torch.bool, device=parts["loss"].device)'),
    ]),
    Mutant('buffer-uint8-scale', 'tests/test_buffer.py -k "uint8 or settings_and"', [
        ('fastjem/buffer.py', 'x = x.float() / 127.5 - 1.0', 'x = x.float() / 255.0'),
    ]),
    Mutant('buffer-fill-no-clamp', 'tests/test_buffer.py -k "uint8 or settings_and"', [
        ('fastjem/buffer.py', '        return out.clamp_(-1.0, 1.0).reshape(n, *self.sample_shape)', '        return out.reshape(n, *self.sample_shape)'),
    ]),
    Mutant('buffer-reinit-over-one', 'tests/test_buffer.py -k "uint8 or settings_and"', [
        ('fastjem/buffer.py', 'if not 0.0 <= reinit_prob <= 1.0:', 'if not 0.0 <= reinit_prob:'),
    ]),
    Mutant('buffer-size-zero', 'tests/test_buffer.py -k "uint8 or settings_and"', [
        ('fastjem/buffer.py', '        if size <= 0:\n', '        if size < 0:\n'),
    ]),
    Mutant('buffer-init-shape-unchecked', 'tests/test_buffer.py -k "uint8 or settings_and or init_without"', [
        ('fastjem/buffer.py', '    if not isinstance(got, torch.Tensor) or tuple(got.shape) != (n, *sample_shape):', '    if False:'),
    ]),
    Mutant('buffer-fresh-not-fp32', 'tests/test_buffer.py -k "uint8 or settings_and"', [
        ('fastjem/buffer.py', 'fresh = fresh.detach().to(self.device, torch.float32)', 'fresh = fresh.detach().to(self.device)'),
    ]),
    Mutant('buffer-init-not-fp32', 'tests/test_buffer.py -k "uint8 or settings_and"', [
        ('fastjem/buffer.py', 'filled.detach().to(self.device, torch.float32)', 'filled.detach().to(self.device)'),
    ]),
    Mutant('buffer-divisible-hint', 'tests/test_buffer.py -k "uint8 or settings_and"', [
        ('fastjem/buffer.py', '{(size // num_classes + 1) * num_classes}', '{size // num_classes * num_classes}'),
    ]),
    Mutant('engine-kernels-auto-triton-on-cpu', 'tests/test_engine.py -k cpu_paths', [
        ('fastjem/engine.py', 'kernels = "triton" if device.type == "cuda" and triton is not None else "reference"', 'kernels = "triton" if triton is not None else "reference"'),
    ]),
    Mutant('engine-tf32-for-fp32', 'tests/test_engine.py -k cpu_paths', [
        ('fastjem/engine.py', '        allow = self.precision == "tf32"', '        allow = self.precision != "bf16"'),
    ]),
    Mutant('engine-malloc-not-applied', 'tests/test_engine.py -k cpu_paths', [
        ('fastjem/engine.py', '        if self.cpu_malloc:\n            tune_cpu_malloc()', '        if self.cpu_malloc:\n            pass'),
    ]),
    Mutant('engine-compile-unchecked', 'tests/test_engine.py -k cpu_paths', [
        ('fastjem/engine.py', '    if compiled:\n        ok, why = compile_available(device)', '    if False:\n        ok, why = compile_available(device)'),
    ]),
    Mutant('engine-assume-no-bf16-ignored', 'tests/test_engine.py -k cpu_paths', [
        ('fastjem/engine.py', '    if os.environ.get("FASTJEM_ASSUME_NO_BF16"):', '    if False:'),
    ]),
    Mutant('engine-no-onednn-check', 'tests/test_engine.py -k cpu_paths', [
        ('fastjem/engine.py', '        if not torch.backends.mkldnn.is_available():', '        if False:'),
    ]),
    Mutant('engine-cpuinfo-flags-never', 'tests/test_engine.py -k cpu_paths', [
        ('fastjem/engine.py', '                if line.startswith("flags"):', '                if line.startswith("Flags"):'),
    ]),
    Mutant('sampler-clip-one-sided', 'tests/test_sampler.py', [
        ('fastjem/sampler.py', 'grad = grad.clamp(-self.grad_clip, self.grad_clip)', 'grad = grad.clamp(max=self.grad_clip)'),
    ]),
    Mutant('sampler-negative-step-size', 'tests/test_sampler.py', [
        ('fastjem/sampler.py', '0 <= step_size < math.inf and', 'step_size < math.inf and'),
    ]),
    Mutant('sampler-negative-noise', 'tests/test_sampler.py', [
        ('fastjem/sampler.py', '0 <= noise < math.inf)', 'noise < math.inf)'),
    ]),
    Mutant('sampler-negative-steps', 'tests/test_sampler.py', [
        ('fastjem/sampler.py', 'if n_steps < 0 or not', 'if not'),
    ]),
    Mutant('sampler-parts-not-frozen', 'tests/test_sampler.py', [
        ('fastjem/sampler.py', '        with sampling_mode(model), torch.enable_grad():\n            for k,', '        with torch.enable_grad():\n            for k,'),
    ]),
    Mutant('sampler-sample-not-fp32', 'tests/test_sampler.py', [
        ('fastjem/sampler.py', 'x = x0.detach().to(torch.float32).clone(memory_format=torch.contiguous_format)', 'x = x0.detach().clone(memory_format=torch.contiguous_format)'),
    ]),
    Mutant('sampler-parts-not-fp32', 'tests/test_sampler.py', [
        ('fastjem/sampler.py', '        x = x0.detach().to(torch.float32)\n        n = x.numel()', '        x = x0.detach()\n        n = x.numel()'),
    ]),
    Mutant('sampler-load-no-clone', 'tests/test_sampler.py', [
        ('fastjem/sampler.py', 'self.rng_state = saved.clone()', 'self.rng_state = saved'),
    ]),
    Mutant('optim-load-drops-buffers', 'tests/test_optim.py', [
        ('fastjem/optim.py', '                group["lr"] = lr\n        self.ensure_state()', '                group["lr"] = lr'),
    ]),
    Mutant('optim-load-replaces-lr', 'tests/test_optim.py', [
        ('fastjem/optim.py', '                group["lr"] = lr\n', ''),
    ]),
    Mutant('optim-negative-momentum', 'tests/test_optim.py', [
        ('fastjem/optim.py', 'if momentum < 0 or weight_decay < 0:', 'if weight_decay < 0:'),
    ]),
    Mutant('optim-negative-wd', 'tests/test_optim.py', [
        ('fastjem/optim.py', 'if momentum < 0 or weight_decay < 0:', 'if momentum < 0:'),
    ]),
    Mutant('optim-closure-loss-dropped', 'tests/test_optim.py', [
        ('fastjem/optim.py', '                loss = closure()', '                closure()'),
    ]),
    Mutant('cpu-ceiling-one-precision', 'tests/test_bench.py -k cpu_ceiling', [
        ('bench/steps_per_sec.py',
         '        e["matmul_flops_per_s"] = rates[e["precision"]]',
         '        e["matmul_flops_per_s"] = rates["fp32"]'),
    ]),
    Mutant('cpu-ceiling-not-measured', 'tests/test_bench.py -k smoke_run_reports', [
        ('bench/steps_per_sec.py',
         'matmul = cpu_matmul_ceiling(engines, device, 256 if args.smoke else 2048) if device.type == "cpu" else None',
         'matmul = None'),
    ]),
    Mutant('report-cpu-mfu-not-of-matmul', 'tests/test_bench.py -k report_renders_table', [
        ('bench/report.py',
         'if default.get("of_matmul") is None',
         'if True'),
    ]),
    Mutant('report-kernels-no-copy-floor', 'tests/test_bench.py -k kernels_table', [
        ('bench/report.py',
         '+ f" {_num(k.get(\'copy_graph_ms\', k.get(\'copy_ms\')), \'{:.2f}\', scale=1e3)} |"',
         '+ f" {_num(k.get(\'copy_graph_ms\'), \'{:.2f}\', scale=1e3)} |"'),
    ]),
    Mutant('profile-warmup-unprofiled', 'tests/test_bench.py -k warms_up_under', [
        ('bench/profile_step.py',
         '    with torch_profile(activities=activities):\n        for _ in range(2):',
         '    if True:\n        for _ in range(2):'),
    ]),
    Mutant('cpu-bars-no-profile', 'tests/test_bench.py -k cpu_bars', [
        ('bench/cpu_bars.sh',
         'run env OMP_NUM_THREADS="$CORES" taskset -c "$CPUS" "$PY" bench/profile_step.py',
         'true env OMP_NUM_THREADS="$CORES" taskset -c "$CPUS" "$PY" bench/profile_step.py'),
    ]),
    Mutant('mutants-nothing-run-kills', 'tests/test_mutants_harness.py', [
        # split in two literals: this entry must not hold the text it mutates in one piece
        ('tests/mutants.py',
         '        if not any(line.startswith(("FAILED ", "ERROR ")) ' 'for line in lines):',
         '        if False:'),
    ]),
    Mutant('cpu-sgld-compile-any-size', 'tests/test_engine.py -k sgld_gradient', [
        ('fastjem/engine.py',
         '    elif flops >= SGLD_COMPILE_FLOPS:',
         '    elif True:'),
    ]),
    Mutant('cpu-sgld-compile-forward-only-flops', 'tests/test_engine.py -k sgld_gradient', [
        ('fastjem/engine.py',
         '    flops = 2 * rows * sum(layer.flops for layer in conv_layers(model, sample_shape))',
         '    flops = rows * sum(layer.flops for layer in conv_layers(model, sample_shape))'),
    ]),
    Mutant('sgld-ignores-input-grad', 'tests/test_sampler.py -k input_grad', [
        ('fastjem/sampler.py',
         '        input_grad = getattr(energy_fn, "input_grad", None)',
         '        input_grad = None'),
    ]),
    Mutant('input-grad-drops-labels', 'tests/test_sampler.py -k input_grad', [
        ('fastjem/sampler.py',
         '        energy.input_grad = lambda x: input_grad(x, y)',
         '        energy.input_grad = lambda x: input_grad(x, None)'),
    ]),
    Mutant('networks-sample-without-compiled-grad',
           'tests/test_engine.py -k "trainer_samples_with_the_compiled or bench_sampler_samples"', [
        ('fastjem/engine.py', 'input_grad=self.sgld_grad)', 'input_grad=None)'),
    ]),
    Mutant('sgld-compiled-update-ignored', 'tests/test_sampler.py -k compiled_update', [
        ('fastjem/sampler.py',
         '        if self.compiled_update and x.device.type == "cpu":',
         '        if False:'),
    ]),
    Mutant('trainer-update-not-compiled', 'tests/test_engine.py -k trainer_samples_with_the_compiled', [
        ('fastjem/train.py',
         '                            compiled_update=self.engine.compile_sgld)',
         '                            compiled_update=False)'),
    ]),
    Mutant('compiled-step-ignores-base', 'tests/test_kernels_sgld.py -k compiled_step', [
        ('kernels/sgld.py',
         'rng_state, torch.tensor(int(base), dtype=torch.int64),',
         'rng_state, torch.tensor(0, dtype=torch.int64),'),
    ]),
    Mutant('bench-own-sgld-parts-help', 'tests/test_cli.py -k bench_explains', [
        ('fastjem/cli.py', 'metavar="N", help=config_help("sgld_parts"))', 'metavar="N", help="N blocks of rows")'),
    ]),
    Mutant('suite-cpu-bars-not-pinned-apart', 'tests/test_bench.py -k cpu_bars_beside', [
        ('bench/gpu_suite.sh', '    PIN=(taskset -c "$BESIDE")\n', '    PIN=()\n'),
    ]),
    Mutant('suite-does-not-wait-for-cpu-bars', 'tests/test_bench.py -k cpu_bars_beside', [
        ('bench/gpu_suite.sh', '  wait "$BARS_PID"\n', '  true\n'),
    ]),
    Mutant('suite-cpu-steps-not-packed', 'tests/test_bench.py -k cpu_bars_beside', [
        ('bench/gpu_suite.sh', 'CPU_STEPS_JSON=$(newest "steps-*.json" "$WORK/cpu_bars")', 'CPU_STEPS_JSON='),
    ]),
    Mutant('env-cpus-beside-the-pinned-too', 'tests/test_bench.py -k cpu_bars_beside', [
        ('bench/cpu_topology.py', 'if not pinned & set(cpus) for n in cpus)', 'for n in cpus)'),
    ]),
    Mutant('suite-skip-cifar-keeps-its-reserve', 'tests/test_bench.py -k cpu_bars_beside', [
        ('bench/gpu_suite.sh', '[[ -n ${SKIP_CIFAR:-} ]] && STEPS_RESERVE=15\n', ''),
    ]),
    Mutant('suite-skip-cifar-kernels-keep-its-reserve', 'tests/test_bench.py -k cpu_bars_beside', [
        ('bench/gpu_suite.sh', '[[ -n ${SKIP_CIFAR:-} ]] && KERNELS_RESERVE=205\n', ''),
    ]),
    Mutant('report-unpack-skips-cpu-steps', 'tests/test_bench.py -k cpu_bars_beside', [
        ('bench/report.py', '"profile", "cpu_steps", "cpu_sgld_study",', '"profile", "cpu_sgld_study",'),
    ]),
    Mutant('profile-smoke-named-as-a-measurement', 'tests/test_bench.py -k profile_step_smoke', [
        ('bench/profile_step.py', '"engines": {},\n              "smoke": args.smoke}', '"engines": {},\n              "smoke": False}'),
    ]),
    Mutant('sweep-eta-ignores-iterations-done', 'tests/test_sweep.py -k how_long', [
        ('fastjem/sweep.py', '    left = max(0, length - done_so_far)\n', '    left = length\n'),
    ]),
    Mutant('sweep-eta-from-other-combinations', 'tests/test_sweep.py -k how_long', [
        ('fastjem/sweep.py', 'mine = [n for n, c, _ in runs if c == combo and n in rows]', 'mine = [n for n, c, _ in runs if n in rows]'),
    ]),
    Mutant('sweep-eta-total-not-summed', 'tests/test_sweep.py -k how_long', [
        ('fastjem/sweep.py', '                total += seconds\n', ''),
    ]),
    Mutant('cpu-compile-warning-not-quieted', 'tests/test_engine.py -k no_cuda_runtime', [
        ('fastjem/engine.py', '    if engine.device.type == "cpu" and (engine.compile or engine.compile_sgld):\n        quiet_cpu_compile()\n', ''),
    ]),
    Mutant('cpu-compile-quiets-every-warning', 'tests/test_engine.py -k no_cuda_runtime', [
        ('fastjem/engine.py', '        return not str(record.msg).startswith("No CUDA runtime is found")', '        return False'),
    ]),
    Mutant('bf16-probe-ignored', 'tests/test_engine.py -k "bf16_probe or auto_precision"', [
        ('fastjem/engine.py', '            if fp32_ms >= BF16_PROBE_SPEEDUP * bf16_ms:', '            if True:'),
    ]),
    Mutant('bf16-probe-no-margin', 'tests/test_engine.py -k "bf16_probe or auto_precision"', [
        ('fastjem/engine.py', 'BF16_PROBE_SPEEDUP = 1.1\n', 'BF16_PROBE_SPEEDUP = 1.0\n'),
    ]),
    Mutant('bf16-probe-cache-not-read', 'tests/test_engine.py -k "bf16_probe or auto_precision"', [
        ('fastjem/engine.py', '            return BF16Probe(fp32_ms, bf16_ms, f"probe cached in {path}")', '            pass'),
    ]),
    Mutant('bf16-probe-cache-not-written', 'tests/test_engine.py -k "bf16_probe or auto_precision"', [
        ('fastjem/engine.py', '        atomic_write_text(json.dumps(known, indent=1) + "\\n", path)\n', '        pass\n'),
    ]),
    Mutant('bf16-probe-key-without-threads', 'tests/test_engine.py -k "bf16_probe or auto_precision"', [
        ('fastjem/engine.py', ' | {threads} threads"', '"'),
    ]),
    Mutant('bf16-probe-bad-entry-trusted', 'tests/test_engine.py -k "bf16_probe or auto_precision"', [
        ('fastjem/engine.py', '        if min(fp32_ms, bf16_ms) > 0 and math.isfinite(fp32_ms + bf16_ms) and "other_cores" in entry:', '        if True:'),
    ]),
    Mutant('bf16-probe-draws-global-rng', 'tests/test_engine.py -k "bf16_probe or auto_precision"', [
        ('fastjem/engine.py', 'x = torch.randn(BF16_PROBE_SHAPE, generator=gen)', 'x = torch.randn(BF16_PROBE_SHAPE)'),
    ]),
    Mutant('bf16-probe-autocast-off', 'tests/test_engine.py -k "bf16_probe or auto_precision"', [
        ('fastjem/engine.py', '    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):\n        h = F.leaky_relu', '    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=False):\n        h = F.leaky_relu'),
    ]),
    Mutant('sgld-study-cpu-default-eager', 'tests/test_bench.py -k sgld_study_smoke', [
        ('bench/sgld_study.py', '        compile_step = fit_cpu_sgld_compile(engine, tuple(x0.shape[1:]), cfg, model).compile_sgld\n', '        compile_step = False\n'),
    ]),
    Mutant('sgld-study-compiled-grad-unused', 'tests/test_bench.py -k sgld_study_smoke', [
        ('bench/sgld_study.py', 'backend=args.kernels, input_grad=grad)', 'backend=args.kernels)'),
    ]),
    Mutant('sgld-study-compiled-update-unused', 'tests/test_bench.py -k sgld_study_smoke', [
        ('bench/sgld_study.py', 'backend=args.kernels, compiled_update=compile_step)', 'backend=args.kernels)'),
    ]),
    Mutant('sgld-study-cpu-variant-on-cuda', 'tests/test_bench.py -k refuse_bad_options', [
        ('bench/sgld_study.py', '    if cuda and any(n in CPU_ONLY for n in names):', '    if False:'),
    ]),
    Mutant('sgld-study-cpu-malloc-untuned', 'tests/test_bench.py -k sgld_study_smoke', [
        ('bench/sgld_study.py', '    cpu_malloc = not cuda and tune_cpu_malloc()\n', '    cpu_malloc = False\n'),
    ]),
    Mutant('bf16-probe-under-callers-grad-mode', 'tests/test_engine.py -k bf16_probe', [
        ('fastjem/engine.py', '    with torch.inference_mode(False), torch.enable_grad():\n        x = torch.randn', '    if True:\n        x = torch.randn'),
    ]),
    Mutant('sgld-chain-advances-each-step', 'tests/test_sampler.py -k chain_is_the_op', [
        ('fastjem/sampler.py',
         'x = self.step_(energy_fn, x, rng, base + t * per_step, 0)',
         'x = self.step_(energy_fn, x, rng, base, None)'),
        ('fastjem/sampler.py',
         '        if self.n_steps:\n            rng[1:].add_(self.n_steps * per_step)',
         '        if False:\n            rng[1:].add_(self.n_steps * per_step)'),
    ]),
    Mutant('sgld-chain-base-fixed', 'tests/test_sampler.py -k chain_is_the_op', [
        ('fastjem/sampler.py',
         'x = self.step_(energy_fn, x, rng, base + t * per_step, 0)',
         'x = self.step_(energy_fn, x, rng, base, 0)'),
    ]),
    Mutant('sgld-advance-0-advances', 'tests/test_kernels_sgld.py -k advance_0', [
        ('kernels/sgld.py',
         '    if advance != 0:\n        rng_state[1:].add_(counters_for(n) if advance is None else advance)',
         '    if True:\n        rng_state[1:].add_(counters_for(n) if not advance else advance)'),
    ]),
    Mutant('sgld-advance-0-refused', 'tests/test_kernels_sgld.py -k advance_0', [
        ('kernels/sgld.py',
         'advance not in (None, 0) and advance <',
         'advance is not None and advance <'),
    ]),
    Mutant('compiled-step-base-constant', 'tests/test_sampler.py -k compiles_its_update_once', [
        ('kernels/sgld.py',
         'rng_state, torch.tensor(int(base), dtype=torch.int64),',
         'rng_state, int(base),'),
    ]),
    Mutant('cast-copy-not-compiled', 'tests/test_weights.py -k compiled_where', [
        ('fastjem/weights.py', 'torch.compile(cast_copy.module, dynamic=False) if compiled else cast_copy.module', 'cast_copy.module'),
    ]),
    Mutant('bench-cast-copy-not-refreshed', 'tests/test_cli.py -k training_makes', [
        ('fastjem/benchmark.py', '        if cast_copy is not None:\n            cast_copy.refresh_()\n', '        pass\n'),
    ]),
    Mutant('bench-parts-ignored', 'tests/test_cli.py -k training_makes', [
        ('fastjem/benchmark.py', '    parts = min(engine.sgld_parts, cfg.batch_size)', '    parts = 1'),
    ]),
    Mutant('bench-no-warmup', 'tests/test_cli.py -k training_makes', [
        ('fastjem/benchmark.py', '    for _ in range(max(1, warmup)):\n        call()\n', ''),
    ]),
    Mutant('eval-model-not-frozen', 'tests/test_eval.py -k eval_mode_and_frozen', [
        ('fastjem/eval/core.py', '    for p in model.parameters():\n        p.requires_grad_(False)\n    buffer = None', '    buffer = None'),
    ]),
    Mutant('eval-model-train-mode', 'tests/test_eval.py -k eval_mode_and_frozen', [
        ('fastjem/eval/core.py', '    model.to(dev).eval()', '    model.to(dev)'),
    ]),
    Mutant('refined-logits-unrefined', 'tests/test_eval.py -k refined_logits_are', [
        ('fastjem/eval/core.py', '        xr = sgld_refine(model, x[s], n_steps, step_size, noise)', '        xr = x[s]'),
    ]),
    Mutant('augment-crop-misses-last-shift', 'tests/test_data.py -k uniform_over_all', [
        ('fastjem/data.py', '        ox = torch.randint(0, 2 * pad + 1, (b, 1), device=x.device, generator=generator)', '        ox = torch.randint(0, 2 * pad, (b, 1), device=x.device, generator=generator)'),
    ]),
    Mutant('convert-unknown-key-dropped', 'tests/test_convert.py -k not_the_authors_wrn', [
        ('fastjem/convert.py', '            raise CheckpointError(f"the authors\' state dict holds {key!r}, which has no place in the Wide-ResNet")', '            continue'),
    ]),
    Mutant('convert-non-tensor-values-read', 'tests/test_convert.py -k not_the_authors_wrn', [
        ('fastjem/convert.py', '    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):', '    if not isinstance(state, dict):'),
    ]),
    Mutant('convert-unequal-groups-unchecked', 'tests/test_convert.py -k not_the_authors_wrn', [
        ('fastjem/convert.py', '    if sorted(counts) != [1, 2, 3] or len(set(counts.values())) != 1:', '    if sorted(counts) != [1, 2, 3]:'),
    ]),
    Mutant('convert-width-unchecked', 'tests/test_convert.py -k not_the_authors_wrn', [
        ('fastjem/convert.py', '    if rem:\n        raise CheckpointError("the first residual', '    if False:\n        raise CheckpointError("the first residual'),
    ]),
    Mutant('class-gaussians-biased-covariance', 'tests/test_buffer.py -k bessel', [
        ('fastjem/buffer.py', '            cov = centred.T @ centred / (len(xk) - 1)', '            cov = centred.T @ centred / len(xk)'),
    ]),
    Mutant('eval-runs-population-sd', 'tests/test_history.py -k diverged_seed', [
        ('fastjem/eval/history.py', 'statistics.stdev(v) if len(v) > 1 else None', 'statistics.pstdev(v) if len(v) > 1 else None'),
    ]),
    Mutant('guard-gap-one-sign', 'tests/test_guard.py -k flags_each_bound', [
        ('fastjem/guard.py', '            bad = bad | ((e_s - e_d).abs() > self.gap_bound)', '            bad = bad | ((e_s - e_d) > self.gap_bound)'),
    ]),
    Mutant('output-path-folder-unchecked', 'tests/test_export.py -k wrong_suffix', [
        ('fastjem/checkpoint.py', '    if path.is_dir():  # a folder (a run\'s, say) given for the file: said as such, whatever its name ends in\n        raise ConfigError(f"{path} is a folder: give', '    if False:\n        raise ConfigError(f"{path} is a folder: give'),
    ]),
    Mutant('fid-fresh-chains-not-matched', 'tests/test_contracts.py -k scores_the_samples', [
        ('fastjem/eval/tasks.py', '        x0 = torch.rand((min(n_fid, len(real)), *em.sample_shape), device=em.device) * 2 - 1', '        x0 = torch.rand((n_fid, *em.sample_shape), device=em.device) * 2 - 1'),
    ]),
    Mutant('fid-source-buffer-falls-back', 'tests/test_contracts.py -k scores_the_samples', [
        ('fastjem/eval/tasks.py', '    if source == "buffer" and em.buffer is None:', '    if False:'),
    ]),
    Mutant('fid-classifier-score-of-real', 'tests/test_contracts.py -k scores_the_samples', [
        ('fastjem/eval/tasks.py', '        probs = torch.softmax(predict_logits(em.model, fake, run.batch_size), 1)', '        probs = torch.softmax(predict_logits(em.model, real, run.batch_size), 1)'),
    ]),
    Mutant('accuracy-headline-refined', 'tests/test_contracts.py -k step_size_and_noise_given', [
        ('fastjem/eval/tasks.py', '    results["acc"], results["nll"] = results["plain"]["acc"], results["plain"]["nll"]', '    results["acc"], results["nll"] = results[key]["acc"], results[key]["nll"]'),
    ]),
    Mutant('sweep-grid-key-twice', 'tests/test_sweep.py -k each_options_type', [
        ('fastjem/sweep.py', '        if name in grid:\n            raise ConfigError(f"--grid {key} is given twice")', '        if False:\n            raise ConfigError(f"--grid {key} is given twice")'),
    ]),
    Mutant('sweep-seeds-repeated', 'tests/test_sweep.py -k keeps_its_seeds', [
        ('fastjem/sweep.py', '    if not seeds or len(set(seeds)) != len(seeds):', '    if not seeds:'),
    ]),
    Mutant('sweep-other-seeds-unnoticed', 'tests/test_sweep.py -k keeps_its_seeds', [
        ('fastjem/sweep.py', '    if saved.get("seeds") != spec["seeds"]:', '    if False:'),
    ]),
    Mutant('wrn-depth-4-accepted', 'tests/test_models.py -k bad_depth', [
        ('fastjem/models/wrn.py', ' or depth < 10', ''),
    ]),
    Mutant('wrn-unknown-norm-identity', 'tests/test_models.py -k bad_depth', [
        ('fastjem/models/wrn.py', '    raise ValueError(f"unknown norm', '    return nn.Identity()\n    raise ValueError(f"unknown norm'),
    ]),
    Mutant('curves-no-config-generative', 'tests/test_curves.py -k classifier_only', [
        ('fastjem/curves.py', '        return any(r.get("e_sample", 0.0) != 0.0 for r in train)', '        return True'),
    ]),
    Mutant('curves-title-no-setup', 'tests/test_curves.py -k title', [
        ('fastjem/curves.py', '        title += f": {cfg.get(\'dataset\')}, {cfg.get(\'arch\')}, batch {cfg.get(\'batch_size\')}"', '        pass'),
    ]),
    Mutant('curves-mean-test-of-some-seeds', 'tests/test_curves.py -k until_every_seed', [
        ('fastjem/curves.py', '        if all(tests):', '        if any(tests):'),
    ]),
    Mutant('board-config-at-each-resume', 'tests/test_board.py -k rollback', [
        ('fastjem/board.py', '            if iteration == 0 and config is not None:', '            if config is not None:'),
    ]),
    Mutant('grid-not-square', 'tests/test_eval.py -k figures_grid', [
        ('fastjem/eval/plots.py', '    nrow = nrow or int(math.ceil(math.sqrt(len(x))))', '    nrow = nrow or 8'),
    ]),
    Mutant('robustness-linf-axis-unscaled', 'tests/test_eval.py -k figures_grid', [
        ('fastjem/eval/plots.py', 'eps = [p[0] * (255 if norm == "linf" else 1) for p in pts]', 'eps = [p[0] for p in pts]'),
    ]),
    Mutant('image-unknown-suffix-as-png', 'tests/test_eval.py -k figures_grid', [
        ('fastjem/eval/plots.py', '        return Image.registered_extensions()[path.suffix.lower()]', '        return Image.registered_extensions().get(path.suffix.lower(), "PNG")'),
    ]),
    Mutant('bench-windows-not-alternated', 'tests/test_bench.py -k alternates_the_windows', [
        ('bench/steps_per_sec.py', '    for w in range(args.windows):\n        for r in runners if w % 2 == 0 else runners[::-1]:', '    for w in range(args.windows):\n        for r in runners:'),
    ]),
    Mutant('bench-sgld-step-with-buffer', 'tests/test_bench.py -k alternates_the_windows', [
        ('bench/steps_per_sec.py', '"sgld_step": (c["sample"] - c["buffer"]) / max(1, args.sgld_steps),', '"sgld_step": c["sample"] / max(1, args.sgld_steps),'),
    ]),
    Mutant('bench-train-rest-with-data', 'tests/test_bench.py -k alternates_the_windows', [
        ('bench/steps_per_sec.py', '"train_step_rest": iter_ms - c["sample"] - c["data"],', '"train_step_rest": iter_ms - c["sample"],'),
    ]),
    Mutant('bench-window-from-compiling-call', 'tests/test_bench.py -k alternates_the_windows', [
        ('bench/steps_per_sec.py', 'round(args.window_s / warm[-1])', 'round(args.window_s / warm[0])'),
    ]),
    Mutant('bench-spread-not-relative', 'tests/test_bench.py -k alternates_the_windows', [
        ('bench/steps_per_sec.py', '"it_per_s_spread_pct": 100 * (max(ips) - min(ips)) / med,', '"it_per_s_spread_pct": 100 * (max(ips) - min(ips)),'),
    ]),
    Mutant('bench-overhead-whole-first-call', 'tests/test_bench.py -k alternates_the_windows', [
        ('bench/steps_per_sec.py', '"compile_and_warmup_overhead_s": r.result["first_iter_s"] - iter_ms / 1e3,', '"compile_and_warmup_overhead_s": r.result["first_iter_s"],'),
    ]),
    Mutant('bench-gate-passes-unmoved-chains', 'tests/test_bench.py -k vacuous', [
        ('bench/steps_per_sec.py', '        if not out["sgld_moved"] > 0:', '        if False:'),
    ]),
    Mutant('bench-gate-ignores-chains', 'tests/test_bench.py -k vacuous', [
        ('bench/steps_per_sec.py', '        if not out["sgld_max_abs_diff"] <= 1e-4:', '        if False:'),
    ]),
    Mutant('bench-gate-ignores-gradients', 'tests/test_bench.py -k vacuous', [
        ('bench/steps_per_sec.py', '        if not normwise <= 1e-3:', '        if False:'),
    ]),
    Mutant('bench-window-without-its-flags', 'tests/test_bench.py -k alternates_the_windows', [
        ('bench/steps_per_sec.py', '            r.enter()\n            n = r.result["iters_per_window"]', '            n = r.result["iters_per_window"]'),
    ]),
    Mutant('bench-table-ratio-not-ratio', 'tests/test_bench.py -k table_sets', [
        ('bench/steps_per_sec.py', "x{e['it_per_s_median'] / ref:.2f}", "x{e['it_per_s_median']:.2f}"),
    ]),
    Mutant('bench-components-unwarmed', 'tests/test_bench.py -k alternates_the_windows', [
        ('bench/steps_per_sec.py', '        for fn in (r.sample, r.buffer_roundtrip, r.draw):\n            timed(fn, 1, device)', '        for fn in ():\n            timed(fn, 1, device)'),
    ]),
    Mutant('bench-components-without-flags', 'tests/test_bench.py -k alternates_the_windows', [
        ('bench/steps_per_sec.py', '            r.enter()\n            comp[r.name]["sample"]', '            comp[r.name]["sample"]'),
    ]),
    Mutant('data-fit-no-antialias', 'tests/test_data.py -k fit_size', [
        ('fastjem/data.py', 'antialias=scale < 1)', 'antialias=False)'),
    ]),
    Mutant('data-fit-truncates', 'tests/test_data.py -k fit_size', [
        ('fastjem/data.py', 'part.round_().clamp_(0, 255)[..., top', 'part.clamp_(0, 255)[..., top'),
    ]),
    Mutant('data-pad-not-rescaled', 'tests/test_data.py -k unpacked_offline', [
        ('fastjem/data.py', 'pad=round(arrays.info.pad * image_size / old)))', 'pad=arrays.info.pad))'),
    ]),
    Mutant('data-mismatch-ignores-size', 'tests/test_data.py -k stand_for', [
        ('fastjem/data.py', '    keys = ("num_classes", "channels", "image_size")\n    if all', '    keys = ("num_classes", "channels")\n    if all'),
    ]),
    Mutant('data-webp-exif-unturned', 'tests/test_data.py -k exif', [
        ('fastjem/data.py', '    if _webp_with_exif(data) or (not png_checked and _png_fault(data) is not None):',
         '    if not png_checked and _png_fault(data) is not None:'),
    ]),
    Mutant('data-pillow-exif-unturned', 'tests/test_data.py -k exif', [
        ('fastjem/data.py', '            im = ImageOps.exif_transpose(im)\n', ''),
    ]),
    Mutant('data-16bit-png-floored', 'tests/test_data.py -k exif', [
        ('fastjem/data.py', '        x = ((x.int() * 255 + 32767) // 65535).to(torch.uint8)', '        x = (x.int() * 255 // 65535).to(torch.uint8)'),
    ]),
    Mutant('data-suffix-case-sensitive', 'tests/test_data.py -k exif', [
        ('fastjem/data.py', 'for f in files if f.lower().endswith(IMAGE_SUFFIXES) and', 'for f in files if f.endswith(IMAGE_SUFFIXES) and'),
    ]),
    Mutant('config-width-zero-ok', 'tests/test_train.py -k "bad_hyper or unknown_key"', [
        ('fastjem/config.py', 'positive = ["batch_size", "buffer_size", "lr", "log_every", "width"]', 'positive = ["batch_size", "buffer_size", "lr", "log_every"]'),
    ]),
    Mutant('config-image-size-negative-ok', 'tests/test_train.py -k "bad_hyper or unknown_key"', [
        ('fastjem/config.py', '"epochs", "image_size", "sgld_parts"]', '"epochs", "sgld_parts"]'),
    ]),
    Mutant('config-dropout-one-ok', 'tests/test_train.py -k "bad_hyper or unknown_key"', [
        ('fastjem/config.py', '        if self.dropout >= 1.0:', '        if self.dropout > 1.0:'),
    ]),
    Mutant('config-no-length-ok', 'tests/test_train.py -k "bad_hyper or unknown_key"', [
        ('fastjem/config.py', '        if self.epochs <= 0 and self.iters <= 0:', '        if False:'),
    ]),
    Mutant('config-no-loss-ok', 'tests/test_train.py -k "bad_hyper or unknown_key"', [
        ('fastjem/config.py', '        if self.pyx_weight == 0 and self.px_weight == 0 and self.pxy_weight == 0:', '        if False:'),
    ]),
    Mutant('config-depth-4-ok', 'tests/test_train.py -k "bad_hyper or unknown_key"', [
        ('fastjem/config.py', 'if self.arch == "wrn" and ((self.depth - 4) % 6 != 0 or self.depth < 10):', 'if self.arch == "wrn" and (self.depth - 4) % 6 != 0:'),
    ]),
    Mutant('config-labels-per-class-zero-ok', 'tests/test_train.py -k "bad_hyper or unknown_key"', [
        ('fastjem/config.py', '        if self.labels_per_class == 0 or self.labels_per_class < -1:', '        if False:'),
    ]),
    Mutant('config-val-size-minus-2-ok', 'tests/test_train.py -k "bad_hyper or unknown_key"', [
        ('fastjem/config.py', '        if self.val_size < -1:', '        if False:'),
    ]),
    Mutant('config-negative-guard-counts-ok', 'tests/test_train.py -k "bad_hyper or unknown_key"', [
        ('fastjem/config.py', '        for name in ("snapshot_every", "max_recoveries", "buffer_margin"):', '        for name in ():'),
    ]),
    Mutant('config-no-remedies-ok', 'tests/test_train.py -k "bad_hyper or unknown_key"', [
        ('fastjem/config.py', '        if unknown or not self.remedies:', '        if unknown:'),
    ]),
    Mutant('config-imagefolder-without-dir-ok', 'tests/test_train.py -k "bad_hyper or unknown_key"', [
        ('fastjem/config.py', '        if self.dataset == "imagefolder" and not self.data_dir:', '        if False:'),
    ]),
    Mutant('config-unknown-key-dropped', 'tests/test_train.py -k "bad_hyper or unknown_key"', [
        ('fastjem/config.py', '        if unknown:\n            raise ConfigError(f"unknown config keys', '        if False:\n            raise ConfigError(f"unknown config keys'),
    ]),
    Mutant('convert-import-flags-on-other-file-ok', 'tests/test_cli.py -k "mistakes_are_refused or torchrun"', [
        ('fastjem/cli.py', '        if given:\n            raise ConfigError(f"{\' \'.join(given)} describe(s) an authors\' checkpoint being imported; {src} is not one")', '        if False:\n            raise ConfigError(f"{\' \'.join(given)} describe(s) an authors\' checkpoint being imported; {src} is not one")'),
    ]),
    Mutant('runs-json-beside-csv-ok', 'tests/test_cli.py -k "mistakes_are_refused or torchrun"', [
        ('fastjem/cli.py', '    if args.json and args.format not in ("text", "json"):\n        raise ConfigError(f"--json is --format json: it cannot be given with --format {args.format}")', '    if False:\n        raise ConfigError(f"--json is --format json: it cannot be given with --format {args.format}")'),
    ]),
    Mutant('runs-combinations-of-non-sweeps-ok', 'tests/test_cli.py -k "mistakes_are_refused or torchrun"', [
        ('fastjem/cli.py', '        if missing:\n            raise ConfigError(f"--combinations takes sweep folders', '        if False:\n            raise ConfigError(f"--combinations takes sweep folders'),
    ]),
    Mutant('runs-combinations-json-as-a-table', 'tests/test_sweep.py -k every_combination', [
        ('fastjem/cli.py', '        if fmt == "json":\n            # a list, one summary a sweep', '        if False:\n            # a list, one summary a sweep'),
    ]),
    Mutant('data-negative-image-size-ok', 'tests/test_cli.py -k "mistakes_are_refused or torchrun"', [
        ('fastjem/cli.py', '    if args.image_size < 0:\n        raise ConfigError("--image-size must be >= 0")', '    if False:\n        raise ConfigError("--image-size must be >= 0")'),
    ]),
    Mutant('bench-zero-sgld-steps-ok', 'tests/test_cli.py -k "mistakes_are_refused or torchrun"', [
        ('fastjem/cli.py', '        if getattr(args, name) is not None and getattr(args, name) <= 0:\n            raise ConfigError(f"--{name.replace(\'_\', \'-\')} must be > 0")', '        if False:\n            raise ConfigError(f"--{name.replace(\'_\', \'-\')} must be > 0")'),
    ]),
    Mutant('bench-precision-twice-ok', 'tests/test_cli.py -k "mistakes_are_refused or torchrun"', [
        ('fastjem/cli.py', '    if len(set(args.precision)) < len(args.precision):\n        raise ConfigError(f"--precision lists a precision twice: {\' \'.join(args.precision)}")', '    if False:\n        raise ConfigError(f"--precision lists a precision twice: {\' \'.join(args.precision)}")'),
    ]),
    Mutant('train-resume-with-preset-ok', 'tests/test_cli.py -k "mistakes_are_refused or torchrun"', [
        ('fastjem/cli.py', '    if args.resume and args.preset:\n        raise ConfigError("--preset starts a new run; --resume continues a saved one with its own config: give one "', '    if False:\n        raise ConfigError("--preset starts a new run; --resume continues a saved one with its own config: give one "'),
    ]),
    Mutant('torchrun-without-out-dir-ok', 'tests/test_cli.py -k "mistakes_are_refused or torchrun"', [
        ('fastjem/cli.py', '        if int(os.environ.get("WORLD_SIZE", "1")) > 1 and not cfg.out_dir:\n            raise ConfigError("under torchrun every process must write to the same folder: pass --out-dir")', '        if False:\n            raise ConfigError("under torchrun every process must write to the same folder: pass --out-dir")'),
    ]),
    Mutant('sweep-resume-or-print-config-ok', 'tests/test_cli.py -k "mistakes_are_refused or torchrun"', [
        ('fastjem/cli.py', '    if args.resume or args.print_config:\n        raise ConfigError("fastjem sweep continues itself (run the same command again) and has no --print-config; "', '    if False:\n        raise ConfigError("fastjem sweep continues itself (run the same command again) and has no --print-config; "'),
    ]),
    Mutant('sweep-seed-option-ok', 'tests/test_cli.py -k "mistakes_are_refused or torchrun"', [
        ('fastjem/cli.py', '    if "seed" in overrides:\n        raise ConfigError("a sweep takes its seeds from --seeds, not --seed")', '    if False:\n        raise ConfigError("a sweep takes its seeds from --seeds, not --seed")'),
    ]),
    Mutant('plot-mean-of-two-folders-ok', 'tests/test_cli.py -k "mistakes_are_refused or torchrun"', [
        ('fastjem/cli.py', '        if len(args.runs) != 1:\n            raise ConfigError("--mean takes one sweep folder")', '        if False:\n            raise ConfigError("--mean takes one sweep folder")'),
    ]),
    Mutant('plot-runs-without-out-ok', 'tests/test_cli.py -k "mistakes_are_refused or torchrun"', [
        ('fastjem/cli.py', '        elif out is None:\n            raise ConfigError("several runs go into one figure: pass --out FILE.png")', '        elif False:\n            raise ConfigError("several runs go into one figure: pass --out FILE.png")'),
    ]),
    Mutant('buffer-labels-without-classes-ok', 'tests/test_buffer.py -k one_label_per_chain', [
        ('fastjem/buffer.py', '        if self.num_classes is None:\n            raise ConfigError("class-conditional draws need a buffer built with num_classes")', '        if False:\n            raise ConfigError("class-conditional draws need a buffer built with num_classes")'),
    ]),
    Mutant('grid-bool-other-word-ok', 'tests/test_sweep.py -k grid_values', [
        ('fastjem/sweep.py', '            if low not in ("true", "false", "on", "off", "1", "0", "yes", "no"):\n                raise ValueError(text)', '            if False:\n                raise ValueError(text)'),
    ]),
    Mutant('grid-empty-ok', 'tests/test_sweep.py -k grid_values', [
        ('fastjem/sweep.py', '    if not grid:\n        raise ConfigError("--grid needs at least one OPTION=V1,V2,...")', '    if False:\n        raise ConfigError("--grid needs at least one OPTION=V1,V2,...")'),
    ]),
    Mutant('sweep-json-without-grid-ok', 'tests/test_sweep.py -k seeds_are', [
        ('fastjem/sweep.py', '        if not isinstance(saved, dict) or not isinstance(saved.get("grid"), dict):\n            raise ConfigError(f"{path} is not a sweep description (no grid): give another --out-dir")', '        if False:\n            raise ConfigError(f"{path} is not a sweep description (no grid): give another --out-dir")'),
    ]),
    Mutant('runs-unknown-sort-key-ok', 'tests/test_runs.py -k sorting', [
        ('fastjem/runs.py', '    if key not in SORT_KEYS:\n        raise ConfigError(f"--sort must be one of {\', \'.join(SORT_KEYS)}; got {key!r}")', '    if False:\n        raise ConfigError(f"--sort must be one of {\', \'.join(SORT_KEYS)}; got {key!r}")'),
    ]),
    Mutant('convert-folder-read-as-file', 'tests/test_convert.py -k conversion_errors', [
        ('fastjem/convert.py', '    if not path.is_file():\n        raise CheckpointError(f"{path} does not exist" if not path.exists() else f"{path} is not a file")', '    if False:\n        raise CheckpointError(f"{path} does not exist" if not path.exists() else f"{path} is not a file")'),
    ]),
    Mutant('convert-other-net-described', 'tests/test_convert.py -k conversion_errors', [
        ('fastjem/convert.py', '    if "class_output.weight" not in state or "f.conv1.weight" not in state:\n        found = ", ".join(sorted(state)[:6])\n        raise CheckpointError("the state dict is not the authors\' CCF Wide-ResNet (no \'f.conv1.weight\' or "', '    if False:\n        found = ", ".join(sorted(state)[:6])\n        raise CheckpointError("the state dict is not the authors\' CCF Wide-ResNet (no \'f.conv1.weight\' or "'),
    ]),
    Mutant('convert-unknown-dataset-ok', 'tests/test_convert.py -k conversion_errors', [
        ('fastjem/convert.py', '    if dataset not in JEM_DATASETS:\n        raise ConfigError(f"--dataset must be one the authors\' code trains on ({\', \'.join(JEM_DATASETS)}), got "', '    if False:\n        raise ConfigError(f"--dataset must be one the authors\' code trains on ({\', \'.join(JEM_DATASETS)}), got "'),
    ]),
    Mutant('convert-buffer-shape-unchecked-by-convert', 'tests/test_convert.py -k conversion_errors', [
        ('fastjem/convert.py', '        if buffer.dim() != 4 or tuple(buffer.shape[1:]) != shape:\n            raise CheckpointError(f"{src}: the replay buffer has shape {tuple(buffer.shape)}, not [N, {shape[0]}, "', '        if False:\n            raise CheckpointError(f"{src}: the replay buffer has shape {tuple(buffer.shape)}, not [N, {shape[0]}, "'),
    ]),
    Mutant('auroc-empty-side-ok', 'tests/test_eval.py -k metrics_refuse', [
        ('fastjem/eval/metrics.py', '    if len(pos) == 0 or len(neg) == 0:\n        raise ValueError("AUROC needs at least one positive and one negative score")', '    if False:\n        raise ValueError("AUROC needs at least one positive and one negative score")'),
    ]),
    Mutant('ece-zero-bins-ok', 'tests/test_eval.py -k metrics_refuse', [
        ('fastjem/eval/metrics.py', '    if n_bins < 1:\n        raise ValueError("n_bins must be >= 1")', '    if False:\n        raise ValueError("n_bins must be >= 1")'),
    ]),
    Mutant('ece-unequal-lengths-ok', 'tests/test_eval.py -k metrics_refuse', [
        ('fastjem/eval/metrics.py', '    if len(conf) != len(hit) or len(conf) == 0:\n        raise ValueError("confidence and correct must be non-empty and of equal length")', '    if False:\n        raise ValueError("confidence and correct must be non-empty and of equal length")'),
    ]),
    Mutant('feature-statistics-of-one-ok', 'tests/test_eval.py -k metrics_refuse', [
        ('fastjem/eval/metrics.py', '    if len(f) < 2:\n        raise ValueError("feature statistics need at least 2 samples")', '    if False:\n        raise ValueError("feature statistics need at least 2 samples")'),
    ]),
    Mutant('eval-no-ood-images-ok', 'tests/test_eval.py -k negative_test_count', [
        ('fastjem/eval/cli.py', '    if args.n_ood <= 0 or args.n_test < 0:\n', '    if False:\n'),
    ]),
    Mutant('eval-zero-batch-ok', 'tests/test_eval.py -k before_loading', [
        ('fastjem/eval/tasks.py', '        if batch_size <= 0:\n            raise ConfigError(f"--batch-size must be > 0, got {batch_size}")', '        if False:\n            raise ConfigError(f"--batch-size must be > 0, got {batch_size}")'),
    ]),
    Mutant('eval-negative-test-noise-ok', 'tests/test_eval.py -k before_loading', [
        ('fastjem/eval/tasks.py', '        if test_noise is not None and not 0 <= test_noise < math.inf:\n            raise ConfigError(f"--test-noise must be a finite number >= 0, got {test_noise}")', '        if False:\n            raise ConfigError(f"--test-noise must be a finite number >= 0, got {test_noise}")'),
    ]),
    Mutant('eval-accuracy-negative-steps-ok', 'tests/test_eval.py -k before_loading', [
        ('fastjem/eval/tasks.py', '    if n_steps < 0:\n        raise ConfigError(f"--n-steps must be >= 0, got {n_steps}")', '    if False:\n        raise ConfigError(f"--n-steps must be >= 0, got {n_steps}")'),
    ]),
    Mutant('eval-calibration-bins-unbounded', 'tests/test_eval.py -k before_loading', [
        ('fastjem/eval/tasks.py', '    if not 1 <= n_bins <= 1000:\n        raise ConfigError(f"--bins must be between 1 and 1000, got {n_bins} (15 to 20 bins is usual)")', '    if False:\n        raise ConfigError(f"--bins must be between 1 and 1000, got {n_bins} (15 to 20 bins is usual)")'),
    ]),
    Mutant('eval-ood-without-sets-ok', 'tests/test_eval.py -k before_loading', [
        ('fastjem/eval/tasks.py', '    if not sets:\n        raise ConfigError("--ood needs at least one OOD set")', '    if False:\n        raise ConfigError("--ood needs at least one OOD set")'),
    ]),
    Mutant('eval-samples-counts-unchecked', 'tests/test_eval.py -k before_loading', [
        ('fastjem/eval/tasks.py', '    if n_steps < 0 or n_samples <= 0 or per_class <= 0:\n        raise ConfigError("--n-steps must be >= 0 and --n-samples, --per-class > 0, got "', '    if False:\n        raise ConfigError("--n-steps must be >= 0 and --n-samples, --per-class > 0, got "'),
    ]),
    Mutant('eval-samples-unknown-init-ok', 'tests/test_eval.py -k before_loading', [
        ('fastjem/eval/tasks.py', '    if init not in INITS:\n        raise ConfigError(f"--init must be one of {\', \'.join(INITS)}, got {init!r}")', '    if False:\n        raise ConfigError(f"--init must be one of {\', \'.join(INITS)}, got {init!r}")'),
    ]),
    Mutant('eval-robustness-unknown-norm-ok', 'tests/test_eval.py -k before_loading', [
        ('fastjem/eval/tasks.py', '        if norm not in NORMS:\n            raise ConfigError(f"unknown norm {norm!r}; choose from {\', \'.join(NORMS)}")', '        if False:\n            raise ConfigError(f"unknown norm {norm!r}; choose from {\', \'.join(NORMS)}")'),
    ]),
    Mutant('eval-robustness-bad-eps-ok', 'tests/test_eval.py -k before_loading', [
        ('fastjem/eval/tasks.py', '    if bad:\n        raise ConfigError("epsilons must be finite numbers >= 0, refinement steps >= 0 and --pgd-steps >= 1; got "', '    if False:\n        raise ConfigError("epsilons must be finite numbers >= 0, refinement steps >= 0 and --pgd-steps >= 1; got "'),
    ]),
    Mutant('eval-fid-unknown-source-ok', 'tests/test_eval.py -k before_loading', [
        ('fastjem/eval/tasks.py', '    if source not in ("auto", "buffer", "fresh"):\n        raise ConfigError(f"--source must be auto, buffer or fresh, got {source!r}")', '    if False:\n        raise ConfigError(f"--source must be auto, buffer or fresh, got {source!r}")'),
    ]),
    Mutant('cuda-without-cuda-ok', "tests/test_custom.py -k 'named_parts or cuda_without'", [
        ('fastjem/train.py', '    if name == "cuda" and not torch.cuda.is_available():\n        raise ConfigError("--device cuda was asked for but CUDA is not available; use --device cpu or auto")', '    if False:\n        raise ConfigError("--device cuda was asked for but CUDA is not available; use --device cpu or auto")'),
    ]),
    Mutant('resume-with-model-for-config-network-ok', "tests/test_custom.py -k 'named_parts or cuda_without'", [
        ('fastjem/train.py', '    if model is not None and not custom.get("model"):\n        raise CheckpointError(f"{path} trained the network its config describes; resume it without model=")', '    if False:\n        raise CheckpointError(f"{path} trained the network its config describes; resume it without model=")'),
    ]),
    Mutant('trainer-without-folder-ok', "tests/test_custom.py -k 'named_parts or cuda_without'", [
        ('fastjem/train.py', '        if self.out_dir is None:\n            raise ConfigError("an output folder is needed (--out-dir)")', '        if False:\n            raise ConfigError("an output folder is needed (--out-dir)")'),
    ]),
    Mutant('data-of-other-size-than-asked-ok', "tests/test_custom.py -k 'named_parts or cuda_without'", [
        ('fastjem/train.py', '            if cfg.image_size and cfg.image_size != data.info.image_size:\n                raise ConfigError(f"--image-size {cfg.image_size} asked, but data= holds {data.info.image_size}-pixel "', '            if False:\n                raise ConfigError(f"--image-size {cfg.image_size} asked, but data= holds {data.info.image_size}-pixel "'),
    ]),
    Mutant('eval-python-data-reloaded-by-name', 'tests/test_custom.py -k data_given_in_python', [
        ('fastjem/eval/core.py', '        if self.custom_data:\n            raise ConfigError(f"{self.path} was trained on data given in Python (\\"{self.info.name}\\"): pass it again "', '        if False:\n            raise ConfigError(f"{self.path} was trained on data given in Python (\\"{self.info.name}\\"): pass it again "'),
    ]),
    Mutant('eval-buffer-rows-without-buffer', 'tests/test_custom.py -k data_given_in_python', [
        ('fastjem/eval/core.py', '        if self.buffer is None:\n            raise ConfigError(f"{self.path} has no replay buffer ({self.label})")', '        if False:\n            raise ConfigError(f"{self.path} has no replay buffer ({self.label})")'),
    ]),
    Mutant('interpolations-of-one-image-ok', 'tests/test_eval.py -k metrics_refuse', [
        ('fastjem/eval/ood.py', '    if len(x) < 2:\n        raise ValueError("interpolations need at least two images")', '    if False:\n        raise ValueError("interpolations need at least two images")'),
    ]),
    Mutant('eval-checkpoint-without-dataset-ok', 'tests/test_eval.py -k more_bad_eval_input', [
        ('fastjem/eval/core.py', '    if "dataset" not in ckpt:\n        raise CheckpointError(f"checkpoint {ckpt[\'path\']} lacks the dataset description: it is incomplete")', '    if False:\n        raise CheckpointError(f"checkpoint {ckpt[\'path\']} lacks the dataset description: it is incomplete")'),
    ]),
    Mutant('compiled-sgld-grad-x-ok', 'tests/test_kernels_sgld.py -k compiled_step_is', [
        ('kernels/sgld.py', '    if x.requires_grad and torch.is_grad_enabled():\n        raise ValueError("sgld_step_compiled_: x requires grad and is updated in place: pass x.detach()")', '    if False:\n        raise ValueError("sgld_step_compiled_: x requires grad and is updated in place: pass x.detach()")'),
    ]),
    Mutant('buffer-op-any-buffer-ok', 'tests/test_kernels_buffer.py -k bad_reset', [
        ('kernels/buffer.py', '    if buffer.dtype != torch.float32 or not buffer.is_contiguous() or buffer.dim() < 1:\n', '    if False:\n'),
    ]),
    Mutant('buffer-op-any-idx-ok', 'tests/test_kernels_buffer.py -k bad_reset', [
        ('kernels/buffer.py', '    if idx.dim() != 1 or idx.dtype != torch.int64 or idx.device != buffer.device:\n', '    if False:\n'),
    ]),
    Mutant('buffer-write-any-shape-ok', 'tests/test_kernels_buffer.py -k bad_reset', [
        ('kernels/buffer.py', '    if rows is not None and rows.shape != (idx.shape[0], *buffer.shape[1:]):\n        raise ValueError(f"buffer_write_: x must be [B, *S] = {(idx.shape[0], *buffer.shape[1:])}, got {rows.shape}")', '    if False:\n        raise ValueError(f"buffer_write_: x must be [B, *S] = {(idx.shape[0], *buffer.shape[1:])}, got {rows.shape}")'),
    ]),
    Mutant('lse-energy-int-logits-ok', 'tests/test_kernels_energy.py -k integer_dtype', [
        ('kernels/energy.py', '    if logits.dtype not in _DTYPES:\n', '    if False:\n'),
    ]),
    Mutant('lse-energy-any-labels-ok', 'tests/test_kernels_energy.py -k integer_dtype', [
        ('kernels/energy.py', '    if labels is not None and (labels.shape != logits.shape[:1] or labels.dtype != torch.int64):\n', '    if False:\n'),
    ]),
    Mutant('graphed-sgld-on-cpu-ok', 'tests/test_iteration_graph.py -k cpu_tensors', [
        ('fastjem/graphs.py', '        if not x0.is_cuda:\n            raise RuntimeError("GraphedSGLD needs CUDA tensors; use SGLD.sample on other devices")', '        if False:\n            raise RuntimeError("GraphedSGLD needs CUDA tensors; use SGLD.sample on other devices")'),
    ]),
    Mutant('graphed-iteration-on-cpu-ok', 'tests/test_iteration_graph.py -k cpu_tensors', [
        ('fastjem/graphs.py', '        if device.type != "cuda":\n            raise RuntimeError("GraphedIteration needs a CUDA device; call the iteration eagerly elsewhere")', '        if False:\n            raise RuntimeError("GraphedIteration needs a CUDA device; call the iteration eagerly elsewhere")'),
    ]),
    Mutant('world-indivisible-batch-ok', 'tests/test_train.py -k cannot_share', [
        ('fastjem/config.py', '        if self.batch_size % world or self.buffer_size % world:\n            raise ConfigError(f"with {world} processes, --batch-size ({self.batch_size}, the global batch) and "', '        if False:\n            raise ConfigError(f"with {world} processes, --batch-size ({self.batch_size}, the global batch) and "'),
    ]),
    Mutant('resume-on-another-world-ok', 'tests/test_train.py -k would_not_train', [
        ('fastjem/train.py', '        if saved_world != self.dist.world:\n            raise CheckpointError(f"checkpoint {ckpt.get(\'path\', \'\')} was written by {saved_world} process(es); "', '        if False:\n            raise CheckpointError(f"checkpoint {ckpt.get(\'path\', \'\')} was written by {saved_world} process(es); "'),
    ]),
    Mutant('any-fault-kind-ok', 'tests/test_train.py -k fault_injection', [
        ('fastjem/train.py', '        if kind not in ("nan", "lr"):\n            raise ValueError("fault kind must be \'nan\' or \'lr\'")', '        if False:\n            raise ValueError("fault kind must be \'nan\' or \'lr\'")'),
    ]),
    Mutant('ece-bin-accuracy-over-two', 'tests/test_eval.py -k right_closed', [
        ('fastjem/eval/metrics.py', '    acc_b = torch.where(nonempty, sum_hit / count.clamp_min(1), torch.full_like(count, float("nan")))', '    acc_b = torch.where(nonempty, sum_hit / count.clamp_min(2), torch.full_like(count, float("nan")))'),
    ]),
    Mutant('feature-stats-refuse-two', 'tests/test_eval.py -k metrics_refuse', [
        ('fastjem/eval/metrics.py', '    if len(f) < 2:', '    if len(f) < 3:'),
    ]),
    Mutant('inception-one-split-std-1', 'tests/test_eval.py -k inception_score_takes', [
        ('fastjem/eval/metrics.py', '    return t.mean().item(), (t.std().item() if len(t) > 1 else 0.0)', '    return t.mean().item(), (t.std().item() if len(t) > 1 else 1.0)'),
    ]),
    Mutant('calibration-report-numbers-nulled', 'tests/test_eval.py -k constructed_predictions', [
        ('fastjem/eval/metrics.py', '        nan_to_none = lambda v: [None if x != x else x for x in v]', '        nan_to_none = lambda v: [None if x == x else x for x in v]'),
    ]),
    Mutant('device-sgd-default-weight-decay', 'tests/test_optim.py -k defaults', [
        ('fastjem/optim.py', '                 weight_decay: float = 0.0, nesterov: bool = False):', '                 weight_decay: float = 1.0, nesterov: bool = False):'),
    ]),
    Mutant('device-sgd-default-nesterov', 'tests/test_optim.py -k defaults', [
        ('fastjem/optim.py', '                 weight_decay: float = 0.0, nesterov: bool = False):', '                 weight_decay: float = 0.0, nesterov: bool = True):'),
    ]),
    Mutant('device-sgd-default-momentum', 'tests/test_optim.py -k defaults', [
        ('fastjem/optim.py', 'lr: torch.Tensor, momentum: float = 0.0,', 'lr: torch.Tensor, momentum: float = 0.9,'),
    ]),
    Mutant('class-gaussians-refuse-two', 'tests/test_buffer.py -k fit_each_class', [
        ('fastjem/buffer.py', '            if len(xk) < 2:', '            if len(xk) <= 2:'),
    ]),
    Mutant('sgld-default-21-steps', 'tests/test_contracts.py -k jems_settings', [
        ('fastjem/sampler.py', 'n_steps: int = 20', 'n_steps: int = 21'),
    ]),
    Mutant('sgld-default-step-2', 'tests/test_contracts.py -k jems_settings', [
        ('fastjem/sampler.py', 'step_size: float = 1.0', 'step_size: float = 2.0'),
    ]),
    Mutant('sgld-default-noise-doubled', 'tests/test_contracts.py -k jems_settings', [
        ('fastjem/sampler.py', 'noise: float = 0.01', 'noise: float = 0.02'),
    ]),
    Mutant('buffer-default-reinit-doubled', 'tests/test_contracts.py -k jems_settings', [
        ('fastjem/buffer.py', 'reinit_prob: float = 0.05', 'reinit_prob: float = 0.1'),
    ]),
    Mutant('wrn-default-depth-34', 'tests/test_contracts.py -k jems_settings', [
        ('fastjem/models/wrn.py', 'depth: int = 28', 'depth: int = 34'),
    ]),
    Mutant('wrn-default-widen-11', 'tests/test_contracts.py -k jems_settings', [
        ('fastjem/models/wrn.py', 'widen_factor: int = 10', 'widen_factor: int = 11'),
    ]),
    Mutant('wrn-default-11-classes', 'tests/test_contracts.py -k jems_settings', [
        ('fastjem/models/wrn.py', 'num_classes: int = 10', 'num_classes: int = 11'),
    ]),
    Mutant('wrn-default-4-channels', 'tests/test_contracts.py -k jems_settings', [
        ('fastjem/models/wrn.py', 'in_channels: int = 3', 'in_channels: int = 4'),
    ]),
    Mutant('wrn-default-dropout', 'tests/test_contracts.py -k jems_settings', [
        ('fastjem/models/wrn.py', 'dropout: float = 0.0', 'dropout: float = 0.5'),
    ]),
    Mutant('convnet-default-11-classes', 'tests/test_contracts.py -k jems_settings', [
        ('fastjem/models/convnet.py', 'num_classes: int = 10', 'num_classes: int = 11'),
    ]),
    Mutant('convnet-default-2-channels', 'tests/test_contracts.py -k jems_settings', [
        ('fastjem/models/convnet.py', 'in_channels: int = 1', 'in_channels: int = 2'),
    ]),
    Mutant('convnet-default-width-33', 'tests/test_contracts.py -k jems_settings', [
        ('fastjem/models/convnet.py', 'width: int = 32', 'width: int = 33'),
    ]),
    Mutant('convnet-default-dropout', 'tests/test_contracts.py -k jems_settings', [
        ('fastjem/models/convnet.py', 'dropout: float = 0.0', 'dropout: float = 0.5'),
    ]),
    Mutant('ece-default-21-bins', 'tests/test_contracts.py -k jems_settings', [
        ('fastjem/eval/metrics.py', 'n_bins: int = 20', 'n_bins: int = 21'),
    ]),
    Mutant('inception-default-11-splits', 'tests/test_contracts.py -k jems_settings', [
        ('fastjem/eval/metrics.py', 'splits: int = 10', 'splits: int = 11'),
    ]),
    Mutant('pgd-default-11-steps', 'tests/test_contracts.py -k jems_settings', [
        ('fastjem/eval/attacks.py', 'steps: int = 10', 'steps: int = 11'),
    ]),
    Mutant('pgd-default-no-random-start', 'tests/test_contracts.py -k jems_settings', [
        ('fastjem/eval/attacks.py', 'random_start: bool = True', 'random_start: bool = False'),
    ]),
    Mutant('pgd-default-hi-2', 'tests/test_contracts.py -k jems_settings', [
        ('fastjem/eval/attacks.py', 'hi: float = 1.0', 'hi: float = 2.0'),
    ]),
    Mutant('wrn-default-batch-norm', 'tests/test_contracts.py -k jems_settings', [
        ('fastjem/models/wrn.py', '                 norm: str = "none", dropout: float = 0.0):', '                 norm: str = "batch", dropout: float = 0.0):'),
    ]),
    Mutant('convnet-default-batch-norm', 'tests/test_contracts.py -k jems_settings', [
        ('fastjem/models/convnet.py', 'width: int = 32, norm: str = "none",', 'width: int = 32, norm: str = "batch",'),
    ]),
    Mutant('pgd-default-l2', 'tests/test_contracts.py -k jems_settings', [
        ('fastjem/eval/attacks.py', 'norm: str = "linf", steps: int = 10', 'norm: str = "l2", steps: int = 10'),
    ]),
    Mutant('sgld-default-clamp', 'tests/test_contracts.py -k jems_settings', [
        ('fastjem/sampler.py', 'clamp: tuple[float, float] | None = None', 'clamp: tuple[float, float] | None = (-1.0, 1.0)'),
    ]),
    Mutant('buffer-of-one-chain-refused', 'tests/test_buffer.py -k checks_its_settings', [
        ('fastjem/buffer.py', '        if size <= 0:', '        if size <= 1:'),
    ]),
    Mutant('buffer-of-one-class-refused', 'tests/test_buffer.py -k checks_its_settings', [
        ('fastjem/buffer.py', '        if num_classes is not None and num_classes <= 0:', '        if num_classes is not None and num_classes <= 1:'),
    ]),
    Mutant('unconditional-init-restarts-one-class', 'tests/test_buffer.py -k restarts_from_its_init', [
        ('fastjem/buffer.py', '        if self.init is not None and y is None and self.num_classes is not None:', '        if self.init is not None or y is None and self.num_classes is not None:'),
    ]),
    Mutant('counters-for-one-extra', 'tests/test_kernels_rng.py -k four_values', [
        ('kernels/rng.py', '    return (n + 3) // 4', '    return (n + 4) // 4'),
    ]),
    Mutant('wrapping-multiply-high-word-shifted', 'tests/test_kernels_rng.py -k four_values', [
        ('kernels/rng.py', '    return (p >> 32) & _MASK32, p & _MASK32', '    return (p >> 33) & _MASK32, p & _MASK32'),
    ]),
    Mutant('wrap-probe-inverted', 'tests/test_kernels_rng.py -k four_values', [
        ('kernels/rng.py', '    return all(h == (_ROUND_A * v) >> 32 and l_ == (_ROUND_A * v) & _MASK32', '    return all(h != (_ROUND_A * v) >> 32 and l_ == (_ROUND_A * v) & _MASK32'),
    ]),
    Mutant('instance-norm-without-affine', 'tests/test_models.py -k norm_choices', [
        ('fastjem/models/wrn.py', '        return nn.InstanceNorm2d(channels, affine=True)', '        return nn.InstanceNorm2d(channels, affine=False)'),
    ]),
    Mutant('layer-norm-two-groups', 'tests/test_models.py -k norm_choices', [
        ('fastjem/models/wrn.py', '        return nn.GroupNorm(1, channels)', '        return nn.GroupNorm(2, channels)'),
    ]),
    Mutant('wrn-no-shortcut-at-stride-1', 'tests/test_models.py -k branch_to_its', [
        ('fastjem/models/wrn.py', '        if stride != 1 or in_ch != out_ch:', '        if stride != 1 and in_ch != out_ch:'),
    ]),
    Mutant('wrn-residual-subtracted', 'tests/test_models.py -k branch_to_its', [
        ('fastjem/models/wrn.py', '        return h + (x if self.shortcut is None else self.shortcut(x))', '        return h - (x if self.shortcut is None else self.shortcut(x))'),
    ]),
    Mutant('wrn-stem-as-wide-as-stage-1', 'tests/test_models.py -k branch_to_its', [
        ('fastjem/models/wrn.py', '        self.conv1 = nn.Conv2d(in_channels, widths[0], 3, padding=1, bias=True)', '        self.conv1 = nn.Conv2d(in_channels, widths[1], 3, padding=1, bias=True)'),
    ]),
    Mutant('wrn-stem-4x4', 'tests/test_models.py -k block_structure', [
        ('fastjem/models/wrn.py', '        self.conv1 = nn.Conv2d(in_channels, widths[0], 3, padding=1, bias=True)', '        self.conv1 = nn.Conv2d(in_channels, widths[0], 4, padding=1, bias=True)'),
    ]),
    Mutant('wrn-stem-padding-2', 'tests/test_models.py -k block_structure', [
        ('fastjem/models/wrn.py', '        self.conv1 = nn.Conv2d(in_channels, widths[0], 3, padding=1, bias=True)', '        self.conv1 = nn.Conv2d(in_channels, widths[0], 3, padding=2, bias=True)'),
    ]),
    Mutant('wrn-first-group-strided', 'tests/test_models.py -k block_structure', [
        ('fastjem/models/wrn.py', '        for group, stride in zip(range(3), (1, 2, 2)):', '        for group, stride in zip(range(3), (2, 2, 2)):'),
    ]),
    Mutant('convnet-first-conv-4x4', 'tests/test_models.py -k convnet_and_build', [
        ('fastjem/models/convnet.py', '            nn.Conv2d(in_channels, c, 3, padding=1), nn.LeakyReLU(LEAK),', '            nn.Conv2d(in_channels, c, 4, padding=1), nn.LeakyReLU(LEAK),'),
    ]),
    Mutant('convnet-second-conv-3c', 'tests/test_models.py -k convnet_and_build', [
        ('fastjem/models/convnet.py', '            make_norm(norm, c), nn.Conv2d(c, 2 * c, 3, stride=2, padding=1), nn.LeakyReLU(LEAK),', '            make_norm(norm, c), nn.Conv2d(c, 3 * c, 3, stride=2, padding=1), nn.LeakyReLU(LEAK),'),
    ]),
    Mutant('convnet-dropout-off', 'tests/test_models.py -k norms_where_asked', [
        ('fastjem/models/convnet.py', '            nn.Dropout(dropout) if dropout > 0 else nn.Identity(),', '            nn.Dropout(dropout) if dropout > 1 else nn.Identity(),'),
    ]),
    Mutant('convnet-second-norm-too-wide', 'tests/test_models.py -k norms_where_asked', [
        ('fastjem/models/convnet.py', '            make_norm(norm, 2 * c), nn.Conv2d(2 * c, 4 * c, 3, stride=2, padding=1), nn.LeakyReLU(LEAK),', '            make_norm(norm, 3 * c), nn.Conv2d(2 * c, 4 * c, 3, stride=2, padding=1), nn.LeakyReLU(LEAK),'),
    ]),
    Mutant('convnet-fc-5c', 'tests/test_models.py -k convnet_and_build', [
        ('fastjem/models/convnet.py', '        self.fc = nn.Linear(4 * c, num_classes)', '        self.fc = nn.Linear(5 * c, num_classes)'),
    ]),
    Mutant('sgld-default-compiled-update', 'tests/test_contracts.py -k jems_settings', [
        ('fastjem/sampler.py', '                 clamp: tuple[float, float] | None = None, compiled_update: bool = False):', '                 clamp: tuple[float, float] | None = None, compiled_update: bool = True):'),
    ]),
    Mutant('sgld-zero-steps-refused', 'tests/test_sampler.py -k negative_step', [
        ('fastjem/sampler.py', '        if n_steps < 0 or not (0 <= step_size < math.inf and 0 <= noise < math.inf):', '        if n_steps <= 0 or not (0 <= step_size < math.inf and 0 <= noise < math.inf):'),
    ]),
    Mutant('sgld-clamp-of-a-point-ok', 'tests/test_sampler.py -k bad_clip', [
        ('fastjem/sampler.py', '            if not clamp[0] < clamp[1]:', '            if not clamp[0] <= clamp[1]:'),
    ]),
    Mutant('sgld-rng-stays-behind', 'tests/test_sampler.py -k follows_the_chains', [
        ('fastjem/sampler.py', '        elif self.rng_state.device != torch.device(device):', '        elif self.rng_state.device == torch.device(device):'),
    ]),
    Mutant('sgld-kernel-writes-past-the-end', 'tests/test_kernels_sgld.py -k own_elements', [
        ('kernels/sgld.py', '        m_x = o_x < n', '        m_x = o_x <= n'),
    ]),
    Mutant('buffer-fresh-of-another-dtype-ok', 'tests/test_kernels_buffer.py -k fresh_rows', [
        ('kernels/buffer.py', '                              or fresh.device != buffer.device):', '                              and fresh.device != buffer.device):'),
    ]),
    Mutant('buffer-sample-kernel-skips-one-row', 'tests/test_kernels_buffer.py -k batch_of_one', [
        ('kernels/buffer.py', '    out = torch.empty((B, *buffer.shape[1:]), dtype=buffer.dtype, device=buffer.device)  # [B, *S]\n    if B > 0 and D > 0:', '    out = torch.empty((B, *buffer.shape[1:]), dtype=buffer.dtype, device=buffer.device)  # [B, *S]\n    if B > 1 and D > 0:'),
    ]),
    Mutant('buffer-write-kernel-skips-one-row', 'tests/test_kernels_buffer.py -k batch_of_one', [
        ('kernels/buffer.py', '    B, D = idx.shape[0], _row_size(buffer)\n    if B == 0 or D == 0:', '    B, D = idx.shape[0], _row_size(buffer)\n    if B == 1 or D == 0:'),
    ]),
    Mutant('pgd-zero-steps-random-start', 'tests/test_contracts.py -k pgd_steps_start', [
        ('fastjem/eval/attacks.py', '    if eps <= 0 or steps <= 0:', '    if eps <= 0 and steps <= 0:'),
    ]),
    Mutant('pgd-random-start-off-centre', 'tests/test_contracts.py -k pgd_steps_start', [
        ('fastjem/eval/attacks.py', '        noise = torch.rand(x.shape, generator=generator).to(x.device) * 2 - 1  # U(-1, 1)', '        noise = torch.rand(x.shape, generator=generator).to(x.device) * 3 - 1  # U(-1, 1)'),
    ]),
    Mutant('pgd-start-mirrored', 'tests/test_contracts.py -k pgd_steps_start', [
        ('fastjem/eval/attacks.py', '    lo_t, hi_t = x.clamp(max=lo), x.clamp(min=hi)\n    delta = (torch.max(torch.min(x + delta, hi_t), lo_t) - x).detach()', '    lo_t, hi_t = x.clamp(max=lo), x.clamp(min=hi)\n    delta = (torch.max(torch.min(x - delta, hi_t), lo_t) - x).detach()'),
    ]),
    Mutant('pgd-start-offset-by-x', 'tests/test_contracts.py -k pgd_steps_start', [
        ('fastjem/eval/attacks.py', '    lo_t, hi_t = x.clamp(max=lo), x.clamp(min=hi)\n    delta = (torch.max(torch.min(x + delta, hi_t), lo_t) - x).detach()', '    lo_t, hi_t = x.clamp(max=lo), x.clamp(min=hi)\n    delta = (torch.max(torch.min(x + delta, hi_t), lo_t) + x).detach()'),
    ]),
    Mutant('guard-probe-beyond-the-range', 'tests/test_guard.py -k papers_diagnosis', [
        ('fastjem/guard.py', '        self.probe = (torch.rand(shape, generator=gen) * 2 - 1).to(trainer.device)', '        self.probe = (torch.rand(shape, generator=gen) * 3 - 1).to(trainer.device)'),
    ]),
    Mutant('guard-nan-buffer-energy-healthy', 'tests/test_guard.py -k papers_diagnosis', [
        ('fastjem/guard.py', '            if not (math.isfinite(e_buf) and math.isfinite(e_uni)) or max(abs(e_buf), abs(e_uni)) > self.energy_bound:', '            if not (math.isfinite(e_buf) or math.isfinite(e_uni)) or max(abs(e_buf), abs(e_uni)) > self.energy_bound:'),
    ]),
    Mutant('constant-images-off-range', 'tests/test_eval.py -k synthetic_ood', [
        ('fastjem/eval/ood.py', '    colour = torch.rand((n, c, 1, 1), generator=generator) * 2 - 1', '    colour = torch.rand((n, c, 1, 1), generator=generator) / 2 - 1'),
    ]),
    Mutant('interpolations-of-two-images-refused', 'tests/test_eval.py -k synthetic_ood', [
        ('fastjem/eval/ood.py', '    if len(x) < 2:', '    if len(x) < 3:'),
    ]),
    Mutant('interpolations-never-start-at-0', 'tests/test_eval.py -k synthetic_ood', [
        ('fastjem/eval/ood.py', '    i = torch.randint(0, len(x), (n,), generator=generator)', '    i = torch.randint(1, len(x), (n,), generator=generator)'),
    ]),
    Mutant('match-shape-rgba-to-grey-by-luma', 'tests/test_eval.py -k match_shape', [
        ('fastjem/eval/ood.py', '        if channels == 1 and x.shape[1] == 3:', '        if channels == 1 or x.shape[1] == 3:'),
    ]),
    Mutant('match-shape-corners-aligned', 'tests/test_eval.py -k match_shape', [
        ('fastjem/eval/ood.py', '        x = F.interpolate(x, size=(size, size), mode="bilinear", align_corners=False, antialias=shrink)', '        x = F.interpolate(x, size=(size, size), mode="bilinear", align_corners=True, antialias=shrink)'),
    ]),
    Mutant('match-shape-no-floor', 'tests/test_eval.py -k match_shape', [
        ('fastjem/eval/ood.py', '    return x.clamp(-1, 1).contiguous()', '    return x.clamp(-2, 1).contiguous()'),
    ]),
    Mutant('ood-folder-luma-red-weight-off-by-one', 'tests/test_eval.py -k ood_image_folder_is_decoded', [
        ('fastjem/eval/ood.py', '        x = ((x[:, 0].int() * 19595 + x[:, 1].int()', '        x = ((x[:, 0].int() * 19596 + x[:, 1].int()'),
    ]),
    Mutant('ood-set-of-the-same-shape-refused', 'tests/test_contracts.py -k ood_sets_follow', [
        ('fastjem/eval/ood.py', '        if any(a.test_x.shape == arrays.test_x.shape and torch.equal(a.test_x, arrays.test_x)', '        if any(a.test_x.shape == arrays.test_x.shape or torch.equal(a.test_x, arrays.test_x)'),
    ]),
    Mutant('runs-unfinished-run-without-model', 'tests/test_runs.py -k what_each_run_wrote', [
        ('fastjem/runs.py', '        "model": (summary or {}).get("model") or model, "kind": kind,', '        "model": (summary or {}).get("model") and model, "kind": kind,'),
    ]),
    Mutant('runs-markdown-rule-after-first-row', 'tests/test_runs.py -k markdown', [
        ('fastjem/runs.py', '        lines.insert(1, "|" + "|".join("---" for _ in head) + "|")', '        lines.insert(2, "|" + "|".join("---" for _ in head) + "|")'),
    ]),
    Mutant('curves-loss-in-the-energy-panel', 'tests/test_curves.py -k each_panel', [
        ('fastjem/curves.py', 'axes[0, 0].plot(it, col("loss")', 'axes[1, 0].plot(it, col("loss")'),
    ]),
    Mutant('curves-lr-axis-for-overlays', 'tests/test_curves.py -k "each_panel or overlay_of_more"', [
        ('fastjem/curves.py', 'single = len(runs) == 1', 'single = len(runs) != 1'),
    ]),
    Mutant('curves-no-classifier-only-note', 'tests/test_curves.py -k each_panel', [
        ('fastjem/curves.py', '    generative = False\n', '    generative = True\n'),
    ]),
    Mutant('curves-four-runs-one-legend', 'tests/test_curves.py -k overlay_of_more', [
        ('fastjem/curves.py', 'many = len(runs) > 4', 'many = len(runs) >= 4'),
    ]),
    Mutant('curves-six-runs-take-tab20', 'tests/test_curves.py -k overlay_of_more', [
        ('fastjem/curves.py', 'COLOURS if len(runs) <= len(COLOURS)', 'COLOURS if len(runs) < len(COLOURS)'),
    ]),
    Mutant('curves-reads-lines-without-iter', 'tests/test_curves.py -k keeps_the_iterations', [
        ('fastjem/curves.py', 'if not isinstance(r, dict) or "iter" not in r:', 'if not isinstance(r, dict) and "iter" not in r:'),
    ]),
    Mutant('curves-no-records-needs-both-files', 'tests/test_curves.py -k errors_say', [
        ('fastjem/curves.py', '.exists() or (path.parent / "config.json").exists()', '.exists() and (path.parent / "config.json").exists()'),
    ]),
    Mutant('curves-missing-sample-energy-is-generative', 'tests/test_curves.py -k classifier_only_runs', [
        ('fastjem/curves.py', 'r.get("e_sample", 0.0) != 0.0', 'r.get("e_sample", 1.0) != 0.0'),
    ]),
    Mutant('curves-sd-of-one-seed', 'tests/test_curves.py -k one_seed', [
        ('fastjem/curves.py', 'if len(v) > 1 else 0.0', 'if len(v) >= 1 else 0.0'),
    ]),
    Mutant('curves-sweep-speed-in-energy-panel', 'tests/test_curves.py -k one_seed', [
        ('fastjem/curves.py', '(axes[1, 1], "it_per_s", "-")', '(axes[1, 0], "it_per_s", "-")'),
    ]),
    Mutant('curves-sweep-no-classifier-only-note', 'tests/test_curves.py -k one_seed', [
        ('fastjem/curves.py', 'drawn, generative = [], False', 'drawn, generative = [], True'),
    ]),
    Mutant('curves-sweep-six-take-tab20', 'tests/test_curves.py -k palette_takes', [
        ('fastjem/curves.py', 'COLOURS if len(groups) <= len(COLOURS)', 'COLOURS if len(groups) < len(COLOURS)'),
    ]),
    Mutant('curves-overlay-always-by-path', 'tests/test_curves.py -k by_their_folders', [
        ('fastjem/curves.py', 'if len(set(labels)) < len(labels):', 'if len(set(labels)) <= len(labels):'),
    ]),
    Mutant('config-guard-off-by-default', 'tests/test_train.py -k bare_config', [
        ('fastjem/config.py', 'guard: bool = _opt(True,', 'guard: bool = _opt(False,'),
    ]),
    Mutant('config-check-every-default', 'tests/test_train.py -k bare_config', [
        ('fastjem/config.py', 'check_every: int = _opt(25,', 'check_every: int = _opt(26,'),
    ]),
    Mutant('config-fused-forward-off-by-default', 'tests/test_train.py -k bare_config', [
        ('fastjem/config.py', 'fused_forward: bool = _opt(True,', 'fused_forward: bool = _opt(False,'),
    ]),
    Mutant('curves-divergence-key-in-energy-panel', 'tests/test_curves.py -k each_panel', [
        ('fastjem/curves.py', 'axes[0, 0].plot([], [], color=colour, ls=":"', 'axes[1, 0].plot([], [], color=colour, ls=":"'),
    ]),
    Mutant('config-iters-zero-taken', 'tests/test_train.py -k bad_hyperparameters', [
        ('fastjem/config.py', 'if self.iters == 0 or self.iters < -1:', 'if self.iters == 0 and self.iters < -1:'),
    ]),
    Mutant('config-momentum-one-taken', 'tests/test_train.py -k bad_hyperparameters', [
        ('fastjem/config.py', 'if not self.momentum < 1:', 'if not self.momentum <= 1:'),
    ]),
    Mutant('config-quick-preset-unmeasured', 'tests/test_readme.py -k quick_preset', [
        ('fastjem/config.py', 'warmup_iters=100, lr=1e-3,', 'warmup_iters=100, lr=2e-3,'),
    ]),
    Mutant('config-file-takes-boolean-epochs', 'tests/test_contracts.py -k boolean_integers', [
        ('fastjem/config.py', 'isinstance(v, element) and not isinstance(v, bool)', 'isinstance(v, element) or not isinstance(v, bool)'),
    ]),
    Mutant('engine-bf16-needs-hopper', 'tests/test_engine.py -k tensor_cores', [
        ('fastjem/engine.py', 'if major >= 8:', 'if major > 8:'),
    ]),
    Mutant('engine-iteration-graph-by-default', 'tests/test_engine.py -k by_hand', [
        ('fastjem/engine.py', '    iteration_graph: bool = False', '    iteration_graph: bool = True'),
    ]),
    Mutant('engine-cudnn-autotune-off', 'tests/test_engine.py -k by_hand', [
        ('fastjem/engine.py', '        return allow, allow, True', '        return allow, allow, False'),
    ]),
    Mutant('engine-compile-needs-every-compiler', 'tests/test_engine.py -k by_hand', [
        ('fastjem/engine.py', 'shutil.which("g++") or shutil.which("c++")', 'shutil.which("g++") and shutil.which("c++")'),
    ]),
    Mutant('engine-cuda-compiles-without-triton', 'tests/test_engine.py -k by_hand', [
        ('fastjem/engine.py', 'return False, "triton is not installed"', 'return True, ""'),
    ]),
    Mutant('data-shows-six-classes', 'tests/test_data.py -k first_five', [
        ('fastjem/data.py', 'classes[:5]', 'classes[:6]'),
    ]),
    Mutant('engine-square-kernels-assumed', 'tests/test_parts.py -k conv_layers', [
        ('fastjem/engine.py', 'k = conv.kernel_size[0] * conv.kernel_size[1]', 'k = conv.kernel_size[1] * conv.kernel_size[1]'),
    ]),
    Mutant('engine-square-outputs-assumed', 'tests/test_parts.py -k conv_layers', [
        ('fastjem/engine.py', 'pixels = out.shape[2] * out.shape[3]', 'pixels = out.shape[3] * out.shape[3]'),
    ]),
    Mutant('engine-fractional-tiles', 'tests/test_parts.py -k wave_tail', [
        ('fastjem/engine.py', 'waves = -(-batch * layer.pixels // rows)', 'waves = -(-batch * layer.pixels / rows)'),
    ]),
    Mutant('engine-split-above-the-tenth', 'tests/test_parts.py -k tenth', [
        ('fastjem/engine.py', 'return 2 if wave_tail(layers, batch, sms) >= SPLIT_TAIL else 1', 'return 2 if wave_tail(layers, batch, sms) > SPLIT_TAIL else 1'),
    ]),
    Mutant('engine-parts-note-says-split-for-one', 'tests/test_parts.py -k auto_parts_follow', [
        ('fastjem/engine.py', '("(a second block fills them)" if parts > 1 else', '("(a second block fills them)" if parts < 1 else'),
    ]),
    Mutant('engine-parts-off-noted-for-one-part', 'tests/test_parts.py -k multiple_of_4', [
        ('fastjem/engine.py', 'if engine.sgld_parts <= 1 or sample_numel % 4 == 0:', 'if engine.sgld_parts < 1 or sample_numel % 4 == 0:'),
    ]),
    Mutant('data-crop-off-centre', 'tests/test_data.py -k middle_of', [
        ('fastjem/data.py', 'top, left = (h - size) // 2, (w - size) // 2', 'top, left = (h - size) // 2, (w - size) // 3'),
    ]),
    Mutant('engine-cuda-compiles-the-cpu-sgld-step', 'tests/test_engine.py -k only_what', [
        ('fastjem/engine.py', 'if engine.device.type != "cpu" or cfg.compile == "off":', 'if engine.device.type != "cpu" and cfg.compile == "off":'),
    ]),
    Mutant('engine-sgld-compile-above-the-threshold', 'tests/test_engine.py -k only_what', [
        ('fastjem/engine.py', 'elif flops >= SGLD_COMPILE_FLOPS:', 'elif flops > SGLD_COMPILE_FLOPS:'),
    ]),
    Mutant('engine-notes-a-graph-turned-off-by-hand', 'tests/test_engine.py -k only_what', [
        ('fastjem/engine.py', 'if graph and device.type != "cuda":', 'if graph or device.type != "cuda":'),
    ]),
    Mutant('engine-notes-an-iteration-graph-turned-off-by-hand', 'tests/test_engine.py -k only_what', [
        ('fastjem/engine.py', 'if whole and not graph:', 'if whole or not graph:'),
    ]),
    Mutant('engine-iteration-graph-off-says-why-backwards', 'tests/test_engine.py -k only_what', [
        ('fastjem/engine.py', 'why = "not on a CUDA device" if device.type != "cuda" else', 'why = "not on a CUDA device" if device.type == "cuda" else'),
    ]),
    Mutant('data-tensors-unflipped-by-default', 'tests/test_custom.py -k defaults_and_edges', [
        ('fastjem/data.py', 'name: str = "tensors", flip: bool = True', 'name: str = "tensors", flip: bool = False'),
    ]),
    Mutant('data-tensors-hold-out-5001', 'tests/test_custom.py -k defaults_and_edges', [
        ('fastjem/data.py', 'min(5000, len(train_y) // 10)', 'min(5001, len(train_y) // 10)'),
    ]),
    Mutant('data-tensors-pad-a-ninth', 'tests/test_custom.py -k defaults_and_edges', [
        ('fastjem/data.py', 'size // 8 if pad is None', 'size // 9 if pad is None'),
    ]),
    Mutant('data-tensors-classes-from-train-only', 'tests/test_custom.py -k defaults_and_edges', [
        ('fastjem/data.py', 'int(max(train_y.max(), test_y.max())) + 1', 'int(train_y.max()) + 1'),
    ]),
    Mutant('engine-iteration-graph-kept-without-a-graph', 'tests/test_engine.py -k device_allows', [
        ('fastjem/engine.py', '        notes.append(f"iteration graph off: {why} (the same iteration runs eagerly)")\n        whole = False', '        notes.append(f"iteration graph off: {why} (the same iteration runs eagerly)")\n        whole = True'),
    ]),
    Mutant('engine-iteration-graph-off-everywhere', 'tests/test_engine.py -k device_allows', [
        ('fastjem/engine.py', 'elif whole and distributed:', 'elif whole or distributed:'),
    ]),
    Mutant('engine-cpu-triton-without-the-interpreter', 'tests/test_engine.py -k device_allows', [
        ('fastjem/engine.py', 'elif kernels == "triton" and (triton is None or (device.type != "cuda" and not interpreter_on())):', 'elif kernels == "triton" and (triton is None and (device.type != "cuda" and not interpreter_on())):'),
    ]),
    Mutant('engine-malloc-tuned-off-cpu', 'tests/test_engine.py -k device_allows', [
        ('fastjem/engine.py', 'malloc = cfg.cpu_malloc and device.type == "cpu"', 'malloc = cfg.cpu_malloc and device.type != "cpu"'),
    ]),
    Mutant('engine-fused-forward-always-off', 'tests/test_engine.py -k device_allows', [
        ('fastjem/engine.py', 'if fused and has_batch_norm:', 'if fused or has_batch_norm:'),
    ]),
    Mutant('engine-one-part-noted-as-blocks', 'tests/test_engine.py -k device_allows', [
        ('fastjem/engine.py', 'if cfg.sgld_parts > 1 and device.type != "cuda":', 'if cfg.sgld_parts >= 1 and device.type != "cuda":'),
    ]),
    Mutant('engine-iteration-graph-kept-under-data-parallelism', 'tests/test_engine.py -k device_allows', [
        ('fastjem/engine.py', '"loop is still graphed")\n        whole = False', '"loop is still graphed")\n        whole = True'),
    ]),
    Mutant('engine-mallopt-parameters-swapped', 'tests/test_engine.py -k three_thresholds', [
        ('fastjem/engine.py', 'M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_THRESHOLD = -1, -2, -3', 'M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_THRESHOLD = -1, -3, -2'),
    ]),
    Mutant('engine-malloc-tuned-without-glibc', 'tests/test_engine.py -k three_thresholds', [
        ('fastjem/engine.py', 'return libc is not None and all(', 'return libc is not None or all('),
    ]),
    Mutant('engine-malloc-tuned-when-mallopt-fails', 'tests/test_engine.py -k three_thresholds', [
        ('fastjem/engine.py', 'libc.mallopt(param, value) == 1', 'libc.mallopt(param, value) != 1'),
    ]),
    Mutant('engine-glibc-only-off-linux', 'tests/test_engine.py -k three_thresholds', [
        ('fastjem/engine.py', 'if platform.system() != "Linux":', 'if platform.system() == "Linux":'),
    ]),
    Mutant('data-device-data-unaugmented-by-default', 'tests/test_data.py -k jems_noise', [
        ('fastjem/data.py', 'augment: bool = True, data_noise: float = 0.03):', 'augment: bool = False, data_noise: float = 0.03):'),
    ]),
    Mutant('data-device-data-noise-default', 'tests/test_data.py -k jems_noise', [
        ('fastjem/data.py', 'augment: bool = True, data_noise: float = 0.03):', 'augment: bool = True, data_noise: float = 0.06):'),
    ]),
    Mutant('data-pad-of-one-uncropped', 'tests/test_data.py -k window_of', [
        ('fastjem/data.py', 'if pad > 0:', 'if pad > 1:'),
    ]),
    Mutant('engine-probe-first-conv-takes-the-second-weight', 'tests/test_engine.py -k probe_times', [
        ('fastjem/engine.py', 'F.leaky_relu(F.conv2d(x, weights[0], padding=1), 0.2)', 'F.leaky_relu(F.conv2d(x, weights[1], padding=1), 0.2)'),
    ]),
    Mutant('engine-probe-pads-two', 'tests/test_engine.py -k probe_times', [
        ('fastjem/engine.py', 'F.leaky_relu(F.conv2d(x, weights[0], padding=1), 0.2)', 'F.leaky_relu(F.conv2d(x, weights[0], padding=2), 0.2)'),
    ]),
    Mutant('engine-cpu-model-without-a-fallback', 'tests/test_engine.py -k platforms_names', [
        ('fastjem/engine.py', 'return platform.processor() or platform.machine()', 'return platform.processor() and platform.machine()'),
    ]),
    Mutant('engine-probe-times-swapped', 'tests/test_engine.py -k milliseconds_per_step', [
        ('fastjem/engine.py', 'return statistics.median(times[False]), statistics.median(times[True])', 'return statistics.median(times[True]), statistics.median(times[False])'),
    ]),
    Mutant('engine-probe-times-per-call', 'tests/test_engine.py -k milliseconds_per_step', [
        ('fastjem/engine.py', 'times[bf16].append((time.perf_counter() - start) * 1e3 / reps)', 'times[bf16].append((time.perf_counter() - start) * 1e3)'),
    ]),
    Mutant('train-agreement-of-other-sizes', 'tests/test_train.py -k cosine_and_norm', [
        ('fastjem/train.py', 'if a.numel() != b.numel():', 'if a.numel() == b.numel():'),
    ]),
    Mutant('train-agreement-of-one-zero-vector', 'tests/test_train.py -k cosine_and_norm', [
        ('fastjem/train.py', 'if a.numel() == 0 or na == nb == 0.0:', 'if a.numel() == 0 or na == 0.0:'),
    ]),
    Mutant('train-agreement-ratio-inverted', 'tests/test_train.py -k cosine_and_norm', [
        ('fastjem/train.py', 'nb / na if na > 0 else float("inf")', 'na / nb if nb > 0 else float("inf")'),
    ]),
    Mutant('train-agreement-zero-start-ratio', 'tests/test_train.py -k cosine_and_norm', [
        ('fastjem/train.py', 'nb / na if na > 0 else float("inf")', 'nb / na if na > 0 else 0.0'),
    ]),
    Mutant('train-flat-of-nothing-is-one-zero', 'tests/test_train.py -k cosine_and_norm', [
        ('fastjem/train.py', '        return torch.zeros(0)', '        return torch.zeros(1)'),
    ]),
    Mutant('train-evaluate-counts-misses', 'tests/test_train.py -k noiseless_unless', [
        ('fastjem/train.py', 'correct += (logits.argmax(1) == y[i:i + batch_size]).sum()', 'correct += (logits.argmax(1) != y[i:i + batch_size]).sum()'),
    ]),
    Mutant('train-evaluate-noisy-by-default', 'tests/test_train.py -k noiseless_unless', [
        ('fastjem/train.py', 'noise: float = 0.0, seed: int = 0) -> dict:', 'noise: float = 0.03, seed: int = 0) -> dict:'),
    ]),
    Mutant('train-sgld-batch-of-channels', 'tests/test_train.py -k class_conditional_and_pxy', [
        ('fastjem/train.py', '        b = x_lab.shape[0]\n        parts = {}', '        b = x_lab.shape[1]\n        parts = {}'),
    ]),
    Mutant('train-class-cond-px-from-class-zero', 'tests/test_train.py -k class_conditional_and_pxy', [
        ('fastjem/train.py', '            y_q = torch.randint(0, self.num_classes, (b,), device=self.device) if cfg.class_cond_px else None\n            if x_q is None:', '            y_q = torch.randint(0, 1, (b,), device=self.device) if cfg.class_cond_px else None\n            if x_q is None:'),
    ]),
    Mutant('sgld-grad-python-wrapper', 'tests/test_sampler.py -k cpp_wrapper', [
        ('fastjem/sampler.py',
         '                        cpp_wrapper: bool = True) -> InputGrad:',
         '                        cpp_wrapper: bool = False) -> InputGrad:'),
    ]),
    Mutant('engine-networks-ignores-cpp-wrapper', 'tests/test_engine.py -k bench_sampler_samples_with_the_compiled', [
        ('fastjem/engine.py',
         '    grad = compiled_input_grad(sgld_model, autocast=engine.autocast, cpp_wrapper=cpp_wrapper) \\\n',
         '    grad = compiled_input_grad(sgld_model, autocast=engine.autocast, cpp_wrapper=True) \\\n'),
    ]),
    Mutant('profile-step-cpp-wrapper', 'tests/test_bench.py -k compiled_gradients_conv', [
        ('bench/profile_step.py',
         'call, engine = build_sampler_call(cfg, device, cpp_wrapper=False)',
         'call, engine = build_sampler_call(cfg, device, cpp_wrapper=True)'),
    ]),
    Mutant('probe-cache-max-time', 'tests/test_engine.py -k cached_probe', [
        ('fastjem/engine.py',
         '        if min(fp32_ms, bf16_ms) > 0 and math.isfinite(fp32_ms + bf16_ms) and "other_cores" in entry:',
         '        if max(fp32_ms, bf16_ms) > 0 and math.isfinite(fp32_ms + bf16_ms) and "other_cores" in entry:'),
    ]),
    Mutant('probe-cache-zero-time', 'tests/test_engine.py -k cached_probe', [
        ('fastjem/engine.py',
         '        if min(fp32_ms, bf16_ms) > 0 and math.isfinite(fp32_ms + bf16_ms) and "other_cores" in entry:',
         '        if min(fp32_ms, bf16_ms) >= 0 and math.isfinite(fp32_ms + bf16_ms) and "other_cores" in entry:'),
    ]),
    Mutant('probe-cache-sub-ms-timed-over', 'tests/test_engine.py -k cached_probe', [
        ('fastjem/engine.py',
         '        if min(fp32_ms, bf16_ms) > 0 and math.isfinite(fp32_ms + bf16_ms) and "other_cores" in entry:',
         '        if min(fp32_ms, bf16_ms) > 1 and math.isfinite(fp32_ms + bf16_ms) and "other_cores" in entry:'),
    ]),
    Mutant('probe-cache-infinite-time', 'tests/test_engine.py -k cached_probe', [
        ('fastjem/engine.py',
         '        if min(fp32_ms, bf16_ms) > 0 and math.isfinite(fp32_ms + bf16_ms) and "other_cores" in entry:',
         '        if min(fp32_ms, bf16_ms) > 0 or math.isfinite(fp32_ms + bf16_ms) and "other_cores" in entry:'),
    ]),
    Mutant('cpu-adam-fused', 'tests/test_train.py -k bitwise_as_with_a_float', [
        ('fastjem/train.py',
         '{"capturable": cuda, "foreach": False, "fused": cuda}',
         '{"capturable": cuda, "foreach": False, "fused": True}'),
    ]),
    Mutant('cpu-trainer-thinks-cuda', 'tests/test_train.py -k bitwise_as_with_a_float', [
        ('fastjem/train.py',
         '        cuda = self.device.type == "cuda"\n        self.lr_t',
         '        cuda = self.device.type != "cuda"\n        self.lr_t'),
    ]),
    Mutant('buffer-init-informative-inverted', 'tests/test_train.py -k informative_buffer', [
        ('fastjem/train.py',
         'if self.cfg.buffer_init != "informative":',
         'if self.cfg.buffer_init == "informative":'),
    ]),
    Mutant('metrics-summed-not-averaged', 'tests/test_train.py -k logged_metrics_are_the_means', [
        ('fastjem/train.py',
         'acc = self._acc / max(1, self._acc_n)',
         'acc = self._acc / min(1, self._acc_n)'),
    ]),
    Mutant('metrics-window-not-reset', 'tests/test_train.py -k logged_metrics_are_the_means', [
        ('fastjem/train.py',
         '        self._acc.zero_()\n        self._acc_n = 0\n        return out',
         '        self._acc.zero_()\n        self._acc_n = 1\n        return out'),
    ]),
    Mutant('old-checkpoint-two-processes', 'tests/test_train.py -k resumed_at_its_end_holds', [
        ('fastjem/train.py',
         'saved_world = int(ckpt.get("world_size", 1))',
         'saved_world = int(ckpt.get("world_size", 2))'),
    ]),
    Mutant('resume-drops-last-samples', 'tests/test_train.py -k resumed_at_its_end_holds', [
        ('fastjem/train.py',
         '        if local.get("last_samples") is not None:',
         '        if local.get("last_samples") is None:'),
    ]),
    Mutant('resume-at-iteration-1-keeps-peak-lr', 'tests/test_train.py -k resumed_at_its_end_holds', [
        ('fastjem/train.py',
         '        if self.iteration > 0:\n            # the rate the last step used',
         '        if self.iteration > 1:\n            # the rate the last step used'),
    ]),
    Mutant('resume-lr-of-next-step', 'tests/test_train.py -k resumed_at_its_end_holds', [
        ('fastjem/train.py',
         'learning_rate(self.cfg, self.iteration - 1, self.iters_per_epoch)',
         'learning_rate(self.cfg, self.iteration + 1, self.iters_per_epoch)'),
    ]),
    Mutant('resume-keeps-best-of-a-gone-best-pt', 'tests/test_best.py -k keeps_its_best_record', [
        ('fastjem/train.py',
         'self.best = ckpt.get("best") if same_folder and (self.out_dir / "best.pt").exists() else None',
         'self.best = ckpt.get("best") if same_folder or (self.out_dir / "best.pt").exists() else None'),
    ]),
    Mutant('replica-warning-when-equal', 'tests/test_distributed.py -k per_rank_buffers', [
        ('fastjem/train.py',
         'if len(set(state["replica_checksums"])) != 1:',
         'if len(set(state["replica_checksums"])) == 1:'),
    ]),
    Mutant('digits-ink-scale-doubled', 'tests/test_data.py -k digits_splits', [
        ('fastjem/data.py',
         'np.rint(images * (255.0 / 16.0))',
         'np.rint(images * (510.0 / 16.0))'),
    ]),
    Mutant('digits-flipped', 'tests/test_data.py -k digits_splits', [
        ('fastjem/data.py',
         'info = DatasetInfo("digits", 10, 1, 8, 0, False, 180,',
         'info = DatasetInfo("digits", 10, 1, 8, 0, True, 180,'),
    ]),
    Mutant('svhn-flipped', 'tests/test_data.py -k torchvision_sets_become', [
        ('fastjem/data.py',
         'info = DatasetInfo("svhn", 10, 3, 32, 4, False, 5000,',
         'info = DatasetInfo("svhn", 10, 3, 32, 4, True, 5000,'),
    ]),
    Mutant('svhn-no-crop-padding', 'tests/test_data.py -k torchvision_sets_become', [
        ('fastjem/data.py',
         'info = DatasetInfo("svhn", 10, 3, 32, 4, False, 5000,',
         'info = DatasetInfo("svhn", 10, 3, 32, 0, False, 5000,'),
    ]),
    Mutant('named-folder-pad-at-least-2', 'tests/test_data.py', [
        ('fastjem/data.py',
         'pad = min(info.image_size - 1, max(1, round(4 * info.image_size / 32)))',
         'pad = min(info.image_size - 1, max(2, round(4 * info.image_size / 32)))'),
    ]),
    Mutant('cifar-not-flipped', 'tests/test_data.py -k torchvision_sets_become', [
        ('fastjem/data.py',
         'info = DatasetInfo(name, k, 3, 32, 4, True, 5000, tuple(train.classes))',
         'info = DatasetInfo(name, k, 3, 32, 4, False, 5000, tuple(train.classes))'),
    ]),
    Mutant('cifar100-ten-classes', 'tests/test_data.py -k torchvision_sets_become', [
        ('fastjem/data.py',
         'k = 10 if name == "cifar10" else 100',
         'k = 10'),
    ]),
    Mutant('download-hint-inverted', 'tests/test_data.py -k torchvision_sets_become', [
        ('fastjem/data.py',
         'hint = "" if not download else',
         'hint = "" if download else'),
    ]),
    Mutant('lone-split-any-folder', 'tests/test_data.py -k missing_dataset_says', [
        ('fastjem/data.py',
         '    return root.is_dir() and any(_split_name(s.name) and s.is_dir()',
         '    return root.is_dir() or any(_split_name(s.name) and s.is_dir()'),
    ]),
    Mutant('hidden-folders-are-classes', 'tests/test_data.py -k read_before_archives', [
        ('fastjem/data.py',
         '    return any(p.is_dir() and not _hidden(p.name) for p in root.iterdir())',
         '    return any(p.is_dir() and _hidden(p.name) for p in root.iterdir())'),
    ]),
    Mutant('any-file-is-an-archive', 'tests/test_data.py -k read_before_archives', [
        ('fastjem/data.py',
         'if p.is_file() and p.name.lower().endswith(ARCHIVE_SUFFIXES)\n',
         'if p.is_file() or p.name.lower().endswith(ARCHIVE_SUFFIXES)\n'),
    ]),
    Mutant('png16-divides-by-65536', 'tests/test_data.py -k sixteen_bit', [
        ('fastjem/data.py',
         'x = ((x.int() * 255 + 32767) // 65535).to(torch.uint8)',
         'x = ((x.int() * 255 + 32767) // 65536).to(torch.uint8)'),
    ]),
    Mutant('tiff16-divides-by-65536', 'tests/test_data.py -k sixteen_bit', [
        ('fastjem/data.py',
         'grey = (np.asarray(im).astype(np.int64) * 255 + 32767) // 65535',
         'grey = (np.asarray(im).astype(np.int64) * 255 + 32767) // 65536'),
    ]),
    Mutant('tiff16-four-channels', 'tests/test_data.py -k sixteen_bit', [
        ('fastjem/data.py',
         '.unsqueeze(0).expand(3, -1, -1).contiguous()',
         '.unsqueeze(0).expand(4, -1, -1).contiguous()'),
    ]),
    Mutant('decode-drops-chunks-in-flight', 'tests/test_data.py -k chunks_in_flight', [
        ('fastjem/data.py',
         '                    take(pending.popleft().result())\n            while pending:',
         '                    bar.update(len(pending.popleft().result()))\n            while pending:'),
    ]),
    Mutant('bad-files-more-at-ten', 'tests/test_data.py -k chunks_in_flight', [
        ('fastjem/data.py',
         'more = f" (and {len(bad) - 10} more)" if len(bad) > 10 else ""',
         'more = f" (and {len(bad) - 10} more)" if len(bad) >= 10 else ""'),
    ]),
    Mutant('bad-files-eleven-named', 'tests/test_data.py -k chunks_in_flight', [
        ('fastjem/data.py',
         '"\\n  ".join(bad[:10]))',
         '"\\n  ".join(bad[:11]))'),
    ]),
    Mutant('split-test-takes-largest-hash', 'tests/test_data.py -k smallest_hash', [
        ('fastjem/data.py',
         'chosen = {min(members, key=digest.__getitem__)}',
         'chosen = {max(members, key=digest.__getitem__)}'),
    ]),
    Mutant('split-train-keeps-smallest-hash', 'tests/test_data.py -k smallest_hash', [
        ('fastjem/data.py',
         'chosen.discard(max(members, key=digest.__getitem__))',
         'chosen.discard(min(members, key=digest.__getitem__))'),
    ]),
    Mutant('archive-dot-member-hidden', 'tests/test_data.py -k archive_of_class_folders_is_split', [
        ('fastjem/data.py',
         'parts = [q for q in name.split("/") if q and q != "."]',
         'parts = [q for q in name.split("/") if q or q != "."]'),
    ]),
    Mutant('archive-reads-non-images', 'tests/test_data.py -k archive_of_class_folders_is_split', [
        ('fastjem/data.py',
         'if len(parts) < 2 or not parts[-1].lower().endswith(IMAGE_SUFFIXES) or any(map(_hidden, parts)):',
         'if len(parts) < 2 and not parts[-1].lower().endswith(IMAGE_SUFFIXES) or any(map(_hidden, parts)):'),
    ]),
    Mutant('archive-reads-hidden-members', 'tests/test_data.py -k archive_of_class_folders_is_split', [
        ('fastjem/data.py',
         'if len(parts) < 2 or not parts[-1].lower().endswith(IMAGE_SUFFIXES) or any(map(_hidden, parts)):',
         'if len(parts) < 2 or not parts[-1].lower().endswith(IMAGE_SUFFIXES) or False:'),
    ]),
    Mutant('imagefolder-cache-needs-its-parent', 'tests/test_data.py -k no_cache_folder_exists', [
        ('fastjem/data.py',
         '            cache.parent.mkdir(parents=True, exist_ok=True)\n            # temporary files',
         '            cache.parent.mkdir(parents=False, exist_ok=True)\n            # temporary files'),
    ]),
    Mutant('cast-refused-engine-keeps-flag', 'tests/test_weights.py -k unsupported', [
        ('fastjem/engine.py',
         'engine = replace(engine, cast_weights_once=False, notes=engine.notes + (why,))',
         'engine = replace(engine, notes=engine.notes + (why,))'),
    ]),
    Mutant('cast-refused-no-note', 'tests/test_weights.py -k unsupported', [
        ('fastjem/engine.py',
         'engine = replace(engine, cast_weights_once=False, notes=engine.notes + (why,))',
         'engine = replace(engine, cast_weights_once=False)'),
    ]),
    Mutant('quiet-compile-only-when-both', 'tests/test_engine.py -k no_cuda_runtime', [
        ('fastjem/engine.py',
         '(engine.compile or engine.compile_sgld):\n        quiet_cpu_compile()',
         '(engine.compile and engine.compile_sgld):\n        quiet_cpu_compile()'),
    ]),
    Mutant('folder-pad-at-most-one', 'tests/test_data.py -k an_eighth', [
        ('fastjem/data.py',
         'info = DatasetInfo("imagefolder", len(classes), tx.shape[1], size, min(size - 1, max(1, size // 8)), True,\n                       min(5000, len(ty) // 10), tuple(classes))',
         'info = DatasetInfo("imagefolder", len(classes), tx.shape[1], size, min(size - 1, min(1, size // 8)), True,\n                       min(5000, len(ty) // 10), tuple(classes))'),
    ]),
    Mutant('folder-pad-at-least-two', 'tests/test_data.py -k an_eighth', [
        ('fastjem/data.py',
         'info = DatasetInfo("imagefolder", len(classes), tx.shape[1], size, min(size - 1, max(1, size // 8)), True,\n                       min(5000, len(ty) // 10), tuple(classes))',
         'info = DatasetInfo("imagefolder", len(classes), tx.shape[1], size, min(size - 1, max(2, size // 8)), True,\n                       min(5000, len(ty) // 10), tuple(classes))'),
    ]),
    Mutant('folder-pad-a-ninth', 'tests/test_data.py -k an_eighth', [
        ('fastjem/data.py',
         'info = DatasetInfo("imagefolder", len(classes), tx.shape[1], size, min(size - 1, max(1, size // 8)), True,\n                       min(5000, len(ty) // 10), tuple(classes))',
         'info = DatasetInfo("imagefolder", len(classes), tx.shape[1], size, min(size - 1, max(1, size // 9)), True,\n                       min(5000, len(ty) // 10), tuple(classes))'),
    ]),
    Mutant('folder-no-flip', 'tests/test_data.py -k an_eighth', [
        ('fastjem/data.py',
         'info = DatasetInfo("imagefolder", len(classes), tx.shape[1], size, min(size - 1, max(1, size // 8)), True,\n                       min(5000, len(ty) // 10), tuple(classes))',
         'info = DatasetInfo("imagefolder", len(classes), tx.shape[1], size, min(size - 1, max(1, size // 8)), False,\n                       min(5000, len(ty) // 10), tuple(classes))'),
    ]),
    Mutant('folder-val-at-least-5000', 'tests/test_data.py -k an_eighth', [
        ('fastjem/data.py',
         'info = DatasetInfo("imagefolder", len(classes), tx.shape[1], size, min(size - 1, max(1, size // 8)), True,\n                       min(5000, len(ty) // 10), tuple(classes))',
         'info = DatasetInfo("imagefolder", len(classes), tx.shape[1], size, min(size - 1, max(1, size // 8)), True,\n                       max(5000, len(ty) // 10), tuple(classes))'),
    ]),
    Mutant('folder-val-an-eleventh', 'tests/test_data.py -k an_eighth', [
        ('fastjem/data.py',
         'info = DatasetInfo("imagefolder", len(classes), tx.shape[1], size, min(size - 1, max(1, size // 8)), True,\n                       min(5000, len(ty) // 10), tuple(classes))',
         'info = DatasetInfo("imagefolder", len(classes), tx.shape[1], size, min(size - 1, max(1, size // 8)), True,\n                       min(5000, len(ty) // 11), tuple(classes))'),
    ]),
    Mutant('draw-never-first-image', 'tests/test_data.py -k uniformly', [
        ('fastjem/data.py',
         'ip = torch.randint(0, self.n_train,',
         'ip = torch.randint(1, self.n_train,'),
    ]),
    Mutant('draw-never-last-image', 'tests/test_data.py -k uniformly', [
        ('fastjem/data.py',
         'ip = torch.randint(0, self.n_train,',
         'ip = torch.randint(0, self.n_train - 1,'),
    ]),
    Mutant('draw-never-first-labelled', 'tests/test_data.py -k uniformly', [
        ('fastjem/data.py',
         'il = self.labelled[torch.randint(0, len(self.labelled),',
         'il = self.labelled[torch.randint(1, len(self.labelled),'),
    ]),
    Mutant('labels-per-class-needs-one-spare', 'tests/test_data.py -k all_of_a_class', [
        ('fastjem/data.py',
         'if min(counts) < per_class:',
         'if min(counts) <= per_class:'),
    ]),
    Mutant('noaug-noise-divided', 'tests/test_data.py -k noise_alone', [
        ('fastjem/data.py',
         'x = x + self.data_noise * torch.randn(x.shape, device=x.device, generator=generator)',
         'x = x + self.data_noise / torch.randn(x.shape, device=x.device, generator=generator)'),
    ]),
    Mutant('noaug-noise-only-above-one', 'tests/test_data.py -k noise_alone', [
        ('fastjem/data.py',
         'if self.data_noise > 0:',
         'if self.data_noise > 1:'),
    ]),
    Mutant('noaug-noise-uniform', 'tests/test_data.py -k noise_alone', [
        ('fastjem/data.py',
         'x = x + self.data_noise * torch.randn(x.shape, device=x.device, generator=generator)',
         'x = x + self.data_noise * torch.rand(x.shape, device=x.device, generator=generator)'),
    ]),
    Mutant('dist-time-limit-coded-as-a-signal', 'tests/test_distributed.py -k time_limit', [
        ('fastjem/train.py',
         'code = max_over_ranks(0 if mine is None else 1 if mine == "time limit" else 2 + int(mine),',
         'code = max_over_ranks(0 if mine is None else 2 if mine == "time limit" else 2 + int(mine),'),
    ]),
    Mutant('dist-time-limit-does-not-stop', 'tests/test_distributed.py -k time_limit', [
        ('fastjem/train.py',
         'return code > 0\n',
         'return code > 1\n'),
    ]),
    Mutant('dist-time-limit-read-as-a-signal', 'tests/test_distributed.py -k time_limit', [
        ('fastjem/train.py',
         'stop["signal"] = "time limit" if code == 1 else code - 2',
         'stop["signal"] = "time limit" if code == 2 else code - 2'),
    ]),
    Mutant('train-bar-counts-two-a-step', 'tests/test_train.py -k windows_speed', [
        ('fastjem/train.py',
         '                bar.update(1)\n',
         '                bar.update(2)\n'),
    ]),
    Mutant('logged-speed-counts-from-zero', 'tests/test_train.py -k windows_speed', [
        ('fastjem/train.py',
         'it_per_s=(it - it_window) / (now - t_window),',
         'it_per_s=it / (now - t_window),'),
    ]),
    Mutant('logged-speed-window-not-reset', 'tests/test_train.py -k windows_speed', [
        ('fastjem/train.py',
         '                    t_window, it_window = now, it\n',
         '                    it_window = it\n'),
    ]),
    Mutant('last-iteration-unchecked-off-the-grid', 'tests/test_guard.py -k off_the_check_grid', [
        ('fastjem/train.py',
         'check_due = on_grid or ckpt_due or it == self.total_iters',
         'check_due = on_grid or ckpt_due'),
    ]),
    Mutant('best-off-says-kept', 'tests/test_best.py -k switched_off', [
        ('fastjem/train.py',
         '        if not (self.cfg.keep_best and self.cfg.eval_every):\n            return False',
         '        if not (self.cfg.keep_best and self.cfg.eval_every):\n            return True'),
    ]),
    Mutant('board-left-open-on-an-error', 'tests/test_board.py -k fails_still', [
        ('fastjem/train.py',
         'if self.board is not None and (stopping or self.iteration < self.total_iters):',
         'if self.board is not None and stopping:'),
    ]),
    Mutant('recover-sampler-not-reseeded', 'tests/test_guard.py -k new_sgld_and_buffer', [
        ('fastjem/train.py',
         '        self.sampler.rng_state[0] += salt\n',
         ''),
    ]),
    Mutant('recover-buffer-not-reseeded', 'tests/test_guard.py -k new_sgld_and_buffer', [
        ('fastjem/train.py',
         '        self.buffer.rng_state[0] += salt\n',
         ''),
    ]),
    Mutant('recover-sampler-offset-shifted', 'tests/test_guard.py -k new_sgld_and_buffer', [
        ('fastjem/train.py',
         '        self.sampler.rng_state[0] += salt\n',
         '        self.sampler.rng_state[1] += salt\n'),
    ]),
    Mutant('recover-buffer-offset-shifted', 'tests/test_guard.py -k new_sgld_and_buffer', [
        ('fastjem/train.py',
         '        self.buffer.rng_state[0] += salt\n',
         '        self.buffer.rng_state[1] += salt\n'),
    ]),
    Mutant('recover-keeps-the-metric-window', 'tests/test_guard.py -k new_sgld_and_buffer', [
        ('fastjem/train.py',
         '        self._acc.zero_()\n        self._acc_n = 0\n        desc',
         '        desc'),
    ]),
    Mutant('recover-window-count-off-by-one', 'tests/test_guard.py -k new_sgld_and_buffer', [
        ('fastjem/train.py',
         '        self._acc.zero_()\n        self._acc_n = 0\n        desc',
         '        self._acc.zero_()\n        self._acc_n = 1\n        desc'),
    ]),
    Mutant('no-validation-says-best-kept', 'tests/test_cli.py -k no_validation_set', [
        ('fastjem/train.py',
         '            return {"acc": None, "nll": None}, False',
         '            return {"acc": None, "nll": None}, True'),
    ]),
    Mutant('summary-names-the-module-not-the-class', 'tests/test_custom.py -k own_network_and_data', [
        ('fastjem/train.py',
         '"model": self.custom["model"].rsplit(".", 1)[-1] if',
         '"model": self.custom["model"].rsplit(".", 1)[0] if'),
    ]),
    Mutant('classifier-only-draws-a-grid-at-the-end', 'tests/test_train.py -k classifier_only_never', [
        ('fastjem/train.py',
         '            if cfg.generative and self.dist.is_main:\n                samples = self.save_samples("samples.png")',
         '            if self.dist.is_main:\n                samples = self.save_samples("samples.png")'),
    ]),
    Mutant('resume-keeps-a-give-up-record', 'tests/test_guard.py -k gives_up', [
        ('fastjem/train.py',
         'after = not rollback and (record.get("iter", 0)',
         'after = not rollback and record.get("event") != "divergence" and (record.get("iter", 0)'),
    ]),
    Mutant('branch-from-a-kept-checkpoint-loses-its-records', 'tests/test_cli.py -k kept_checkpoint_starts', [
        ('fastjem/train.py',
         'if folder.name == "checkpoints" and not (folder / "metrics.jsonl").exists():',
         'if folder.name != "checkpoints" and not (folder / "metrics.jsonl").exists():'),
    ]),
    Mutant('branch-from-any-subfolder-takes-its-parents-records', 'tests/test_cli.py -k kept_checkpoint_starts', [
        ('fastjem/train.py',
         'if folder.name == "checkpoints" and not (folder / "metrics.jsonl").exists():',
         'if folder.name == "checkpoints" or not (folder / "metrics.jsonl").exists():'),
    ]),
    Mutant('time-limit-in-seconds-not-minutes', 'tests/test_guard.py -k time_limit_stops_after', [
        ('fastjem/train.py',
         'deadline = time.monotonic() + 60 * cfg.max_minutes if cfg.max_minutes > 0 else math.inf',
         'deadline = time.monotonic() + cfg.max_minutes if cfg.max_minutes > 0 else math.inf'),
    ]),
    Mutant('time-limit-reached-one-step-late', 'tests/test_guard.py -k time_limit_stops_after', [
        ('fastjem/train.py',
         'if time.monotonic() >= deadline and stop["signal"] is None:',
         'if time.monotonic() > deadline and stop["signal"] is None:'),
    ]),
    Mutant('time-limit-under-a-minute-ignored', 'tests/test_guard.py -k time_limit_stops_after', [
        ('fastjem/train.py',
         'deadline = time.monotonic() + 60 * cfg.max_minutes if cfg.max_minutes > 0 else math.inf',
         'deadline = time.monotonic() + 60 * cfg.max_minutes if cfg.max_minutes > 1 else math.inf'),
    ]),
    Mutant('resume-keeps-the-next-steps-tensorboard-values', 'tests/test_board.py -k one_value_per_iteration', [
        ('fastjem/train.py',
         'self.iteration + 1 if resumed else 0',
         'self.iteration + 2 if resumed else 0'),
    ]),
    Mutant('bar-takes-a-custom-log', 'tests/test_guard.py -k custom_log_gets', [
        ('fastjem/train.py',
         '                    with type(bar).external_write_mode():\n                        log(*parts)',
         '                    bar.write(line)'),
    ]),
    Mutant('custom-log-written-through-the-bar', 'tests/test_guard.py -k start_their_own_line', [
        ('fastjem/train.py',
         '                    with type(bar).external_write_mode():\n                        log(*parts)',
         '                    if True:\n                        log(*parts)'),
    ]),
    Mutant('branch-from-a-bare-checkpoint-reads-missing-records', 'tests/test_cli.py -k kept_checkpoint_starts', [
        ('fastjem/train.py',
         'return records if records.exists() and folder != self.out_dir.resolve() else None',
         'return records if folder != self.out_dir.resolve() else None'),
    ]),
    Mutant('keep-every-keeps-the-wrong-iterations', 'tests/test_cli.py -k kept_checkpoint_starts', [
        ('fastjem/train.py',
         'keep_due = bool(cfg.ckpt_keep_every) and it % cfg.ckpt_keep_every == 0',
         'keep_due = bool(cfg.ckpt_keep_every) and it % cfg.ckpt_keep_every == 1'),
    ]),
    Mutant('history-of-a-run-folder', 'tests/test_history.py -k iteration_order', [
        ('fastjem/eval/history.py',
         'if not path.is_dir() or (path / "checkpoint.pt").exists():',
         'if not path.is_dir() and (path / "checkpoint.pt").exists():'),
    ]),
    Mutant('history-reads-any-digits-as-the-iteration', 'tests/test_history.py -k iteration_order', [
        ('fastjem/eval/history.py',
         'if p.stem.startswith("iter_") and digits:',
         'if digits:'),
    ]),
    Mutant('comparison-keys-of-the-second-run', 'tests/test_eval.py -k one_run_per_combination', [
        ('fastjem/eval/history.py',
         'keys = [k for k in rows[0] if k not in ("run", "dataset")] if rows else []',
         'keys = [k for k in rows[-1] if k not in ("run", "dataset")] if len(rows) > 1 else []'),
    ]),
    Mutant('comparison-spread-of-one-run', 'tests/test_eval.py -k one_run_per_combination', [
        ('fastjem/eval/history.py',
         'statistics.stdev(v) if len(v) > 1 else None',
         'statistics.stdev(v) if len(v) > 1 else 0.0'),
    ]),
    Mutant('comparison-table-drops-numbers', 'tests/test_eval.py -k how_many_more', [
        ('fastjem/eval/history.py',
         '*(f"{r[k]:.4f}" if k in r else "-" for k in keys)] for r in result["rows"]]',
         '*("-" for k in keys)] for r in result["rows"]]'),
    ]),
    Mutant('comparison-says-more-when-none', 'tests/test_eval.py -k how_many_more', [
        ('fastjem/eval/history.py',
         'return table + (f"\\n(+{more} more in the JSON)" if more > 0 else "")',
         'return table + f"\\n(+{more} more in the JSON)"'),
    ]),
    Mutant('history-headline-without-robustness', 'tests/test_history.py -k headlines', [
        ('fastjem/eval/history.py',
         'elif task == "robustness":',
         'elif task != "robustness":'),
    ]),
    Mutant('history-headline-without-fid', 'tests/test_history.py -k headlines', [
        ('fastjem/eval/history.py',
         'elif task == "fid":',
         'elif task == "FID":'),
    ]),
    Mutant('history-keys-of-the-second-checkpoint', 'tests/test_history.py -k history_plot', [
        ('fastjem/eval/history.py',
         'keys = [k for k in rows[0] if k not in ("iteration", "checkpoint")] if rows else []',
         'keys = [k for k in rows[-1] if k not in ("iteration", "checkpoint")] if len(rows) > 1 else []'),
    ]),
    Mutant('history-plot-panel-cap', 'tests/test_history.py -k history_plot', [
        ('fastjem/eval/history.py',
         'keys = history["keys"][:12]',
         'keys = history["keys"][:13]'),
    ]),
    Mutant('history-plot-one-row', 'tests/test_history.py -k history_plot', [
        ('fastjem/eval/history.py',
         'cols = min(3, max(1, len(keys)))',
         'cols = max(1, len(keys))'),
    ]),
    Mutant('history-plot-flattens-a-moving-number', 'tests/test_history.py -k history_plot', [
        ('fastjem/eval/history.py',
         'if finite and max(finite) - min(finite) < 0.01:',
         'if finite and max(finite) - min(finite) < 0.02:'),
    ]),
    Mutant('history-plot-flat-number-off-centre', 'tests/test_history.py -k history_plot', [
        ('fastjem/eval/history.py',
         'mid = (max(finite) + min(finite)) / 2',
         'mid = min(finite)'),
    ]),
    Mutant('history-plot-all-nan-number', 'tests/test_history.py -k history_plot', [
        ('fastjem/eval/history.py',
         'if finite and max(finite) - min(finite) < 0.01:',
         'if max(finite) - min(finite) < 0.01:'),
    ]),
    Mutant('history-plot-offset-labels', 'tests/test_history.py -k history_plot', [
        ('fastjem/eval/history.py',
         'ax.ticklabel_format(axis="y", useOffset=False, style="plain")',
         'ax.ticklabel_format(axis="y", style="plain")'),
    ]),
    Mutant('history-table-drops-numbers', 'tests/test_history.py -k history_table', [
        ('fastjem/eval/history.py',
         'rows = [[str(r["iteration"]), *(f"{r[k]:.4f}" if k in r else "-" for k in keys)] for r in history["rows"]]',
         'rows = [[str(r["iteration"]), *("-" for k in keys)] for r in history["rows"]]'),
    ]),
    Mutant('history-table-says-more-when-none', 'tests/test_history.py -k history_table', [
        ('fastjem/eval/history.py',
         'f"\\n(+{more} more in the JSON and the plot)" if more > 0 else "")',
         'f"\\n(+{more} more in the JSON and the plot)" if more >= 0 else "")'),
    ]),
    Mutant('history-table-left-aligned', 'tests/test_history.py -k history_table', [
        ('fastjem/eval/history.py',
         'return text_table(["iteration", *keys], rows, right=True) + (',
         'return text_table(["iteration", *keys], rows) + ('),
    ]),
    Mutant('refine-climbs-the-unconditional-energy', 'tests/test_eval.py -k climbs', [
        ('fastjem/eval/core.py',
         'energy = -torch.logsumexp(logits, 1) if y is None else -logits.gather(1, y.view(-1, 1)).squeeze(1)',
         'energy = torch.logsumexp(logits, 1) if y is None else -logits.gather(1, y.view(-1, 1)).squeeze(1)'),
    ]),
    Mutant('sample-count-default-not-as-said', 'tests/test_cli.py::test_every_help_default_is_the_parsers_own', [
        ('fastjem/eval/cli.py',
         'p.add_argument("-n", "--n", type=int64, default=100,',
         'p.add_argument("-n", "--n", type=int64, default=101,'),
    ]),
    Mutant('sample-steps-default-not-as-said', 'tests/test_cli.py::test_every_help_default_is_the_parsers_own', [
        ('fastjem/eval/cli.py',
         'p.add_argument("--n-steps", type=int64, default=100,',
         'p.add_argument("--n-steps", type=int64, default=10,'),
    ]),
    Mutant('fid-count-default-not-as-said', 'tests/test_cli.py::test_every_help_default_is_the_parsers_own', [
        ('fastjem/eval/cli.py',
         'g.add_argument("--n-fid", type=int64, default=10000,',
         'g.add_argument("--n-fid", type=int64, default=5000,'),
    ]),
    Mutant('sample-progress-inverted', 'tests/test_eval.py::test_cli_sample_shows_its_progress_unless_told_not_to', [
        ('fastjem/eval/cli.py',
         'args.batch_size, args.device, args.seed, progress=not args.no_progress,',
         'args.batch_size, args.device, args.seed, progress=args.no_progress,'),
    ]),
    Mutant('export-check-smallest-difference', 'tests/test_export.py::test_export_refuses_a_program_that_computes_something_else', [
        ('fastjem/export.py',
         'diff = float((want - got).abs().max() / ',
         'diff = float((want - got).abs().mean() / '),
    ]),
    Mutant('board-failed-writer-left-open', 'tests/test_board.py::test_the_log_purges_from_any_later_step_logs_numbers_only_and_rewrites_purged_images', [
        ('fastjem/board.py',
         '            if self.writer is not None:\n                with contextlib.suppress(Exception):',
         '            if self.writer is None:\n                with contextlib.suppress(Exception):'),
    ]),
    Mutant('board-no-purge-from-iteration-1', 'tests/test_board.py::test_the_log_purges_from_any_later_step_logs_numbers_only_and_rewrites_purged_images', [
        ('fastjem/board.py',
         'purge_step=iteration if iteration > 0 else None',
         'purge_step=iteration if iteration > 1 else None'),
    ]),
    Mutant('board-any-value-a-scalar', 'tests/test_board.py::test_the_log_purges_from_any_later_step_logs_numbers_only_and_rewrites_purged_images', [
        ('fastjem/board.py',
         'if tag is not None and isinstance(value, (int, float)) and not isinstance(value, bool):',
         'if tag is not None and not isinstance(value, bool):'),
    ]),
    Mutant('board-purged-image-not-rewritten', 'tests/test_board.py::test_the_log_purges_from_any_later_step_logs_numbers_only_and_rewrites_purged_images', [
        ('fastjem/board.py',
         'if step < iteration}',
         'if step <= iteration}'),
    ]),
    Mutant('reliability-bars-overlap', 'tests/test_eval.py::test_reliability_diagram_and_score_histograms_draw_the_numbers', [
        ('fastjem/eval/plots.py',
         'left = [e + width * k / n for e in r.edges[:-1]]',
         'left = [e - width * k / n for e in r.edges[:-1]]'),
    ]),
    Mutant('reliability-empty-bin-nan', 'tests/test_eval.py::test_reliability_diagram_and_score_histograms_draw_the_numbers', [
        ('fastjem/eval/plots.py',
         'acc = [a if a == a else 0.0 for a in r.accuracy]',
         'acc = list(r.accuracy)'),
    ]),
    Mutant('histogram-range-to-the-top-only', 'tests/test_eval.py::test_reliability_diagram_and_score_histograms_draw_the_numbers', [
        ('fastjem/eval/plots.py',
         'lo, hi = (finite.min().item(), finite.max().item()) if len(finite)',
         'lo, hi = (finite.min().item(), finite[0].item()) if len(finite)'),
    ]),
    Mutant('histogram-flat-bins-of-width-0', 'tests/test_eval.py::test_reliability_diagram_and_score_histograms_draw_the_numbers', [
        ('fastjem/eval/plots.py',
         '        lo, hi = lo - 0.5, hi + 0.5\n    bins = torch.linspace(lo, hi, 51, dtype=torch.float64).tolist()',
         '        hi = lo + 1e-6\n    bins = torch.linspace(lo, hi, 51).tolist()'),
    ]),
    Mutant('grid-not-mapped-to-0-1', 'tests/test_eval.py::test_figures_grid_layout_robustness_axis_and_image_formats', [
        ('fastjem/eval/plots.py',
         'return make_grid(x, nrow=nrow, normalize=True,',
         'return make_grid(x, nrow=nrow, normalize=False,'),
    ]),
    Mutant('dist-nccl-on-a-cpu-run', 'tests/test_distributed.py::test_joining_the_group_picks_the_backend_and_the_local_gpu', [
        ('fastjem/distributed.py',
         'use_cuda = device_name != "cpu" and torch.cuda.is_available()',
         'use_cuda = torch.cuda.is_available()'),
    ]),
    Mutant('dist-gpu-not-the-local-rank', 'tests/test_distributed.py::test_joining_the_group_picks_the_backend_and_the_local_gpu', [
        ('fastjem/distributed.py',
         'local_rank = int(os.environ.get("LOCAL_RANK", "0"))',
         'local_rank = int(os.environ.get("LOCAL_RANK", "0")) * 0'),
    ]),
    Mutant('dist-group-not-destroyed-at-exit', 'tests/test_distributed.py::test_joining_the_group_picks_the_backend_and_the_local_gpu', [
        ('fastjem/distributed.py',
         '        atexit.register(_destroy_if_initialized)\n',
         ''),
    ]),
    Mutant('release-missing-minor-not-0', 'tests/test_kernels_dispatch.py::test_version_release_and_power_of_2_helpers', [
        ('kernels/_dispatch.py',
         'return (numbers + [0, 0])[0], (numbers + [0, 0])[1]',
         'return (numbers + [0, 0])[0], (numbers + [1, 1])[1]'),
    ]),
    Mutant('power-of-2-one-too-far', 'tests/test_kernels_dispatch.py::test_version_release_and_power_of_2_helpers', [
        ('kernels/_dispatch.py',
         'return 1 if n <= 1 else 1 << (n - 1).bit_length()',
         'return 1 if n <= 1 else 1 << n.bit_length()'),
    ]),
    Mutant('sample-one-chain-refused', 'tests/test_eval.py -k batches_of_one', [
        ('fastjem/eval/draw.py',
         '    if n <= 0 or n_steps < 0 or batch_size <= 0:',
         '    if n <= 1 or n_steps < 0 or batch_size <= 0:'),
    ]),
    Mutant('sample-zero-batch-accepted', 'tests/test_eval.py -k bad_input_is', [
        ('fastjem/eval/draw.py',
         '    if n <= 0 or n_steps < 0 or batch_size <= 0:',
         '    if n <= 0 or n_steps < 0 or batch_size < 0:'),
    ]),
    Mutant('sample-negative-steps-alone-accepted', 'tests/test_eval.py -k bad_input_is', [
        ('fastjem/eval/draw.py',
         '    if n <= 0 or n_steps < 0 or batch_size <= 0:',
         '    if n <= 0 or n_steps < 0 and batch_size <= 0:'),
    ]),
    Mutant('sample-buffer-skips-first-row', 'tests/test_eval.py -k batches_of_one', [
        ('fastjem/eval/draw.py',
         '        return em.buffer[torch.randint(0, len(em.buffer), (n,), device=em.device)]',
         '        return em.buffer[torch.randint(1, len(em.buffer), (n,), device=em.device)]'),
    ]),
    Mutant('draw-default-steps-differ', 'tests/test_eval.py -k draw_defaults', [
        ('fastjem/eval/draw.py',
         '         n_steps: int = 100, init',
         '         n_steps: int = 50, init'),
    ]),
    Mutant('draw-default-seed-differs', 'tests/test_eval.py -k draw_defaults', [
        ('fastjem/eval/draw.py',
         'device: str = "auto", seed: int = 0,',
         'device: str = "auto", seed: int = 1,'),
    ]),
    Mutant('sample-infinite-step-accepted', 'tests/test_eval.py -k bad_input_is', [
        ('fastjem/eval/draw.py',
         '           if v is not None and not 0 <= v < math.inf]',
         '           if v is not None and not 0 <= v <= math.inf]'),
    ]),
    Mutant('sample-step-checked-after-output', 'tests/test_eval.py -k bad_step_size_before', [
        ('fastjem/eval/cli.py',
         '    draw.check_sgld(args.step_size, args.noise)\n',
         ''),
    ]),
    Mutant('grid-two-per-class-when-crowded', 'tests/test_contracts.py -k conditional_grid', [
        ('fastjem/eval/draw.py',
         '    per_row = min(n, max(1, max_images // k))',
         '    per_row = min(n, max(2, max_images // k))'),
    ]),
    Mutant('grid-rows-shape-from-channels', 'tests/test_contracts.py -k conditional_grid', [
        ('fastjem/eval/draw.py',
         '    rows = drawn.x.view(k, n, *drawn.x.shape[1:])[:, :per_row]',
         '    rows = drawn.x.view(k, n, *drawn.x.shape[2:])[:, :per_row]'),
    ]),
    Mutant('sweep-mean-test-of-earlier-end', 'tests/test_curves.py -k test_mark', [
        ('fastjem/curves.py',
         '        tests = [[e["test_acc"] for e in m.evals if "test_acc" in e][-1:] for m in ms]',
         '        tests = [[e["test_acc"] for e in m.evals if "test_acc" in e][:1] for m in ms]'),
    ]),
    Mutant('sweep-mean-test-at-first-iteration', 'tests/test_curves.py -k test_mark', [
        ('fastjem/curves.py',
         '            axes[0, 1].errorbar([max(its)], mean',
         '            axes[0, 1].errorbar([min(its)], mean'),
    ]),
    Mutant('curves-waiting-named-diverged', 'tests/test_curves.py -k little_or_nothing', [
        ('fastjem/curves.py',
         '    waiting = [label for label in empty if label not in diverged]',
         '    waiting = [label for label in empty if label in diverged]'),
    ]),
    Mutant('curves-classifier-note-off-panel', 'tests/test_curves.py -k each_panel', [
        ('fastjem/curves.py',
         '        axes[1, 0].text(0.5, 0.5, "classifier only: no samples", ha="center", va="center",\n                        transform=axes[1, 0].transAxes)\n    axes[0, 0].set_ylabel("loss")',
         '        axes[1, 0].text(0.5, 0.5, "classifier only: no samples", ha="center", va="center",\n                        transform=axes[1, 1].transAxes)\n    axes[0, 0].set_ylabel("loss")'),
    ]),
    Mutant('eval-library-fid-default-differs', 'tests/test_eval.py -k defaults_are', [
        ('fastjem/eval/tasks.py',
         '        n_fid: int = 10000, n_steps: int = 100, **common) -> dict:',
         '        n_fid: int = 5000, n_steps: int = 100, **common) -> dict:'),
    ]),
    Mutant('eval-library-pgd-default-differs', 'tests/test_eval.py -k defaults_are', [
        ('fastjem/eval/tasks.py',
         '               pgd_steps: int = 10, n_attack: int = 500, **common) -> dict:',
         '               pgd_steps: int = 20, n_attack: int = 500, **common) -> dict:'),
    ]),
    Mutant('eval-library-batch-default-differs', 'tests/test_eval.py -k defaults_are', [
        ('fastjem/eval/tasks.py',
         '    def __init__(self, task: str, checkpoint, out_dir=None, batch_size: int = 500,',
         '    def __init__(self, task: str, checkpoint, out_dir=None, batch_size: int = 256,'),
    ]),
    Mutant('sweep-empty-values-message', 'tests/test_sweep.py -k each_options_type', [
        ('fastjem/sweep.py',
         '        if not sep or not values or not name:',
         '        if not sep and not values or not name:'),
    ]),
    Mutant('sweep-spec-ignores-base', 'tests/test_sweep.py -k holds_one_grid', [
        ('fastjem/sweep.py',
         '    options = {k: v for k, v in base.to_dict().items() if k not in ("out_dir", "seed", *MACHINE_OPTIONS)}',
         '    options = {k: v for k, v in base.to_dict().items() if k in ("out_dir", "seed", *MACHINE_OPTIONS)}'),
    ]),
    Mutant('sweep-spec-keeps-machine', 'tests/test_sweep.py -k holds_one_grid', [
        ('fastjem/sweep.py',
         '    options = {k: v for k, v in base.to_dict().items() if k not in ("out_dir", "seed", *MACHINE_OPTIONS)}',
         '    options = {k: v for k, v in base.to_dict().items() if k not in ("out_dir", "seed")}'),
    ]),
    Mutant('sweep-epoch-length-from-second', 'tests/test_sweep.py -k epoch_based', [
        ('fastjem/sweep.py',
         '    length = cfg.iters if cfg.iters > 0 else (finished[0]["iteration"] if finished else None)',
         '    length = cfg.iters if cfg.iters > 0 else (finished[-1]["iteration"] if len(finished) > 1 else None)'),
    ]),
    Mutant('sweep-folder-parent-not-made', 'tests/test_sweep.py -k max_minutes', [
        ('fastjem/sweep.py',
         '    try:\n        folder.mkdir(parents=True, exist_ok=True)',
         '    try:\n        folder.mkdir(parents=False, exist_ok=True)'),
    ]),
    Mutant('sweep-delete-hint-on-done', 'tests/test_sweep.py -k diverges_beyond', [
        ('fastjem/sweep.py',
         '                                                                  if state == "diverged" else ""))',
         '                                                                  if state != "diverged" else ""))'),
    ]),
    Mutant('sweep-starts-a-run-with-no-time-left', 'tests/test_sweep.py -k max_minutes', [
        ('fastjem/sweep.py',
         '        if left <= 0:',
         '        if left < 0:'),
    ]),
    Mutant('sweep-pace-from-clock-sum', 'tests/test_sweep.py -k max_minutes', [
        ('fastjem/sweep.py',
         '        took.append(time.monotonic() - t0)',
         '        took.append(time.monotonic())'),
    ]),
    Mutant('sweep-duration-hour-boundary', 'tests/test_sweep.py -k durations', [
        ('fastjem/sweep.py',
         '    if seconds >= 3600:',
         '    if seconds > 3600:'),
    ]),
    Mutant('sweep-mean-of-missing-numbers', 'tests/test_sweep.py -k one_seed', [
        ('fastjem/sweep.py',
         '    vals = [r[key] for r in rows if r.get(key) is not None and math.isfinite(r[key])]',
         '    vals = [r[key] for r in rows if key in r and r[key] is not None]'),
    ]),
    Mutant('samples-task-one-sample-refused', 'tests/test_eval.py -k network_says', [
        ('fastjem/eval/tasks.py',
         '    if n_steps < 0 or n_samples <= 0 or per_class <= 0:',
         '    if n_steps < 0 or n_samples <= 1 or per_class <= 0:'),
    ]),
    Mutant('samples-by-class-least-confident-first', 'tests/test_eval.py -k network_says', [
        ('fastjem/eval/tasks.py',
         '            top = members[conf[members].argsort(descending=True)[:per_class]]',
         '            top = members[conf[members].argsort(descending=False)[:per_class]]'),
    ]),
    Mutant('samples-by-class-other-members', 'tests/test_eval.py -k network_says', [
        ('fastjem/eval/tasks.py',
         '            members = torch.nonzero(pred == c).squeeze(1)',
         '            members = torch.nonzero(pred != c).squeeze(1)'),
    ]),
    Mutant('samples-padding-too-long', 'tests/test_eval.py -k network_says', [
        ('fastjem/eval/tasks.py',
         '                row = torch.cat([row, torch.ones(per_class - len(row), *shape, device=dev)])',
         '                row = torch.cat([row, torch.ones(per_class - len(row) + 1, *shape, device=dev)])'),
    ]),
    Mutant('samples-kept-confidence-of-least', 'tests/test_eval.py -k network_says', [
        ('fastjem/eval/tasks.py',
         '                                      "mean_confidence_kept": [conf[pred == c].sort(descending=True).values[',
         '                                      "mean_confidence_kept": [conf[pred == c].sort(descending=False).values['),
    ]),
    Mutant('samples-mean-max-prob-is-min', 'tests/test_eval.py -k network_says', [
        ('fastjem/eval/tasks.py',
         '             "mean_max_prob": probs.max(1).values.mean().item(),',
         '             "mean_max_prob": probs.min(1).values.mean().item(),'),
    ]),
    Mutant('samples-target-fraction-inverted', 'tests/test_eval.py -k network_says', [
        ('fastjem/eval/tasks.py',
         '            d["fraction_classified_as_target"] = (probs.argmax(1) == target).float().mean().item()',
         '            d["fraction_classified_as_target"] = (probs.argmax(1) != target).float().mean().item()'),
    ]),
    Mutant('samples-fresh-starts-off-range', 'tests/test_eval.py -k network_says', [
        ('fastjem/eval/tasks.py',
         '    x0 = torch.rand((n_samples, *shape), device=dev) * 2 - 1',
         '    x0 = torch.rand((n_samples, *shape), device=dev) * 2 - 0.9'),
    ]),
    Mutant('samples-has-buffer-inverted', 'tests/test_eval.py -k network_says', [
        ('fastjem/eval/tasks.py',
         '                "init": init, "has_buffer": em.buffer is not None}',
         '                "init": init, "has_buffer": em.buffer is None}'),
    ]),
    Mutant('accuracy-one-step-not-refined', 'tests/test_eval.py -k accuracy_and_calibration_report', [
        ('fastjem/eval/tasks.py',
         '    steps = [0] + ([n_steps] if n_steps > 0 else [])',
         '    steps = [0] + ([n_steps] if n_steps > 1 else [])'),
    ]),
    Mutant('accuracy-counts-the-wrong', 'tests/test_eval.py -k accuracy_and_calibration_report', [
        ('fastjem/eval/tasks.py',
         '        results[key] = {"n_steps": k, "acc": (logits.argmax(1) == y).float().mean().item(),',
         '        results[key] = {"n_steps": k, "acc": (logits.argmax(1) != y).float().mean().item(),'),
    ]),
    Mutant('calibration-one-bin-refused', 'tests/test_eval.py -k accuracy_and_calibration_report', [
        ('fastjem/eval/tasks.py',
         '    if not 1 <= n_bins <= 1000:',
         '    if not 1 < n_bins <= 1000:'),
    ]),
    Mutant('calibration-least-confidence', 'tests/test_eval.py -k accuracy_and_calibration_report', [
        ('fastjem/eval/tasks.py',
         '        conf, pred = probs.max(1)\n        r = expected_calibration_error(',
         '        conf, pred = probs.min(1)\n        r = expected_calibration_error('),
    ]),
    Mutant('calibration-ece-of-the-wrong', 'tests/test_eval.py -k accuracy_and_calibration_report', [
        ('fastjem/eval/tasks.py',
         '        r = expected_calibration_error(conf, pred == y, n_bins)',
         '        r = expected_calibration_error(conf, pred != y, n_bins)'),
    ]),
    Mutant('calibration-headline-of-the-compared', 'tests/test_eval.py -k accuracy_and_calibration_report', [
        ('fastjem/eval/tasks.py',
         '    results = {"n": len(y), "ece": entries[0]["ece"], "models": entries}',
         '    results = {"n": len(y), "ece": entries[-1]["ece"], "models": entries}'),
    ]),
    Mutant('summary-accuracy-rows-acc-twice', 'tests/test_eval.py -k summary_table_has', [
        ('fastjem/eval/tasks.py',
         '                    rows.append((task, f"{key} acc / NLL", f"{v[\'acc\']:.4f} / {v[\'nll\']:.4f}"))',
         '                    rows.append((task, f"{key} acc / NLL", f"{v[\'acc\']:.4f} / {v[\'acc\']:.4f}"))'),
    ]),
    Mutant('summary-ece-not-percent', 'tests/test_eval.py -k summary_table_has', [
        ('fastjem/eval/tasks.py',
         'f"{100 * m[\'ece\']:.2f}%"',
         'f"{m[\'ece\']:.2f}%"'),
    ]),
    Mutant('summary-ood-skip-reason-repeats-set', 'tests/test_eval.py -k summary_table_has', [
        ('fastjem/eval/tasks.py',
         '"skipped: " + why.removeprefix(f"OOD set {name}: ")',
         '"skipped: " + why'),
    ]),
    Mutant('summary-grids-list-every-file', 'tests/test_eval.py -k summary_table_has', [
        ('fastjem/eval/tasks.py',
         '", ".join(Path(f).name for f in rep["files"] if f.endswith(".png"))',
         '", ".join(Path(f).name for f in rep["files"])'),
    ]),
    Mutant('summary-linf-eps-raw', 'tests/test_eval.py -k summary_table_has', [
        ('fastjem/eval/tasks.py',
         'f"{_eps_text(norm, p[\'eps\'])}:{p[\'acc\']:.2f}" for p in pts)))',
         'f"{p[\'eps\']:.3g}:{p[\'acc\']:.2f}" for p in pts)))'),
    ]),
    Mutant('summary-no-inception-score', 'tests/test_eval.py -k summary_table_has', [
        ('fastjem/eval/tasks.py',
         '            if "inception_score" in r:',
         '            if "inception_score" not in r:'),
    ]),
    Mutant('summary-table-metric-width-of-values', 'tests/test_eval.py -k summary_table_has', [
        ('fastjem/eval/tasks.py',
         '    w1 = max([len(r[1]) for r in rows] + [6])',
         '    w1 = max([len(r[2]) for r in rows] + [6])'),
    ]),
    Mutant('summary-table-empty-header-narrow', 'tests/test_eval.py -k summary_table_has', [
        ('fastjem/eval/tasks.py',
         '    w0 = max([len(r[0]) for r in rows] + [4])',
         '    w0 = max([len(r[0]) for r in rows] + [0])'),
    ]),
    Mutant('d-dynamo-after-group', 'tests/test_distributed.py -k divergence_on_one_rank', [
        ('fastjem/distributed.py',
         '        importlib.import_module("torch._dynamo")\n',
         ''),
    ]),
    Mutant('eval-ood-skips-by-default', 'tests/test_eval.py -k missing_set_unless', [
        ('fastjem/eval/tasks.py',
         '        skip_missing: bool = False, **common) -> dict:',
         '        skip_missing: bool = True, **common) -> dict:'),
    ]),
    Mutant('eval-ood-skip-reason-second-line', 'tests/test_eval.py -k missing_set_unless', [
        ('fastjem/eval/tasks.py',
         'skipped[name] = f"{str(err).splitlines()[0]',
         'skipped[name] = f"{str(err).splitlines()[-1]'),
    ]),
    Mutant('eval-ood-skip-reason-without-its-remedy', 'tests/test_eval.py -k missing_set_unless', [
        ('fastjem/eval/tasks.py', '''.rstrip('.')}; --ood {name} alone says how to get it"''', '''.rstrip('.')}"'''),
    ]),
    Mutant('eval-ood-std-needs-three', 'tests/test_eval.py -k missing_set_unless', [
        ('fastjem/eval/tasks.py',
         'v.std().item() if v.numel() > 1 else math.nan',
         'v.std().item() if v.numel() > 2 else math.nan'),
    ]),
    Mutant('eval-robust-n-attack-one-means-all', 'tests/test_eval.py -k robustness_task_reports', [
        ('fastjem/eval/tasks.py',
         '    if 0 < n_attack < len(y):',
         '    if 1 < n_attack < len(y):'),
    ]),
    Mutant('eval-robust-n-attack-zero-subsets', 'tests/test_eval.py -k robustness_task_reports', [
        ('fastjem/eval/tasks.py',
         '    if 0 < n_attack < len(y):',
         '    if 0 <= n_attack < len(y):'),
    ]),
    Mutant('eval-robust-counts-misses', 'tests/test_eval.py -k robustness_task_reports', [
        ('fastjem/eval/tasks.py',
         'correct += (pipeline(x_adv).argmax(1) == y[sl]).sum().item()',
         'correct += (pipeline(x_adv).argmax(1) != y[sl]).sum().item()'),
    ]),
    Mutant('eval-robust-count-starts-at-one', 'tests/test_eval.py -k robustness_task_reports', [
        ('fastjem/eval/tasks.py',
         '                correct = 0\n',
         '                correct = 1\n'),
    ]),
    Mutant('eval-robust-moves-of-no-refinement', 'tests/test_eval.py -k robustness_task_reports', [
        ('fastjem/eval/tasks.py',
         '        if n > 0 and str(n) not in moves:',
         '        if n >= 0 and str(n) not in moves:'),
    ]),
    Mutant('eval-robust-max-move-is-min', 'tests/test_eval.py -k robustness_task_reports', [
        ('fastjem/eval/tasks.py',
         '"max_abs_change": change.max().item()',
         '"max_abs_change": change.min().item()'),
    ]),
    Mutant('eval-robust-report-no-random-start', 'tests/test_eval.py -k robustness_task_reports', [
        ('fastjem/eval/tasks.py',
         '"random_start": True,',
         '"random_start": False,'),
    ]),
    Mutant('eval-robust-inf-eps-accepted', 'tests/test_eval.py -k refuse_bad_options_before', [
        ('fastjem/eval/tasks.py',
         '    bad = [f"--linf-eps {e * 255:.4g}/255" for e in linf_eps if not 0 <= e < math.inf]',
         '    bad = [f"--linf-eps {e * 255:.4g}/255" for e in linf_eps if not 0 <= e <= math.inf]'),
        ('fastjem/eval/tasks.py',
         '    bad += [f"--l2-eps {e:g}" for e in l2_eps if not 0 <= e < math.inf]',
         '    bad += [f"--l2-eps {e:g}" for e in l2_eps if not 0 <= e <= math.inf]'),
    ]),
    Mutant('eval-fid-module-spec-ignored', 'tests/test_eval.py -k fid_features_from_a_module', [
        ('fastjem/eval/tasks.py',
         '    if ":" in spec:',
         '    if ":" not in spec:'),
    ]),
    Mutant('eval-fid-module-spec-splits-twice', 'tests/test_eval.py -k fid_features_from_a_module', [
        ('fastjem/eval/tasks.py',
         'module_name, attr = spec.split(":", 1)',
         'module_name, attr = spec.split(":", 2)'),
    ]),
    Mutant('eval-fid-instance-taken-for-class', 'tests/test_eval.py -k fid_features_from_a_module', [
        ('fastjem/eval/tasks.py',
         'if isinstance(obj, type) and issubclass(obj, torch.nn.Module):',
         'if isinstance(obj, type) or issubclass(obj, torch.nn.Module):'),
    ]),
    Mutant('eval-fid-torchscript-not-loaded', 'tests/test_eval.py -k fid_features_from_a_module', [
        ('fastjem/eval/tasks.py',
         '            return torch.jit.load(spec, map_location=em.device).eval()',
         '            raise RuntimeError(spec)'),
    ]),
    Mutant('eval-fid-fresh-starts-half-range', 'tests/test_eval.py -k fid_features_from_a_module', [
        ('fastjem/eval/tasks.py',
         'device=em.device) * 2 - 1\n        fake = _chains(',
         'device=em.device) - 1\n        fake = _chains('),
    ]),
    Mutant('eval-fid-two-samples-refused', 'tests/test_eval.py -k fid_features_from_a_module', [
        ('fastjem/eval/tasks.py',
         '    if n_fid < 2 or n_steps < 0:',
         '    if n_fid <= 2 or n_steps < 0:'),
    ]),
    Mutant('eval-fid-one-sample-with-no-steps', 'tests/test_eval.py -k fid_features_from_a_module', [
        ('fastjem/eval/tasks.py',
         '    if n_fid < 2 or n_steps < 0:',
         '    if n_fid < 2 and n_steps < 0:'),
    ]),
    Mutant('eval-fid-two-test-images-refused', 'tests/test_eval.py -k fid_features_from_a_module', [
        ('fastjem/eval/tasks.py',
         '    if len(real) < 2:',
         '    if len(real) <= 2:'),
    ]),
    Mutant('eval-fid-inception-unclipped', 'tests/test_contracts.py -k torchmetrics_gets', [
        ('fastjem/eval/tasks.py',
         'to01 = lambda t: ((t.clamp(-1, 1) + 1) / 2)',
         'to01 = lambda t: ((t + 1) / 2)'),
    ]),
    Mutant('eval-all-task-options-dropped', 'tests/test_eval.py -k run_all_runs_each', [
        ('fastjem/eval/tasks.py',
         '    opts = task_options or {}\n',
         '    opts = task_options and {}\n'),
    ]),
    Mutant('eval-all-sets-all-not-expanded', 'tests/test_eval.py -k run_all_runs_each', [
        ('fastjem/eval/tasks.py',
         '    if "all" in sets:\n',
         '    if "all" not in sets:\n'),
    ]),
    Mutant('eval-all-sets-folder-dropped', 'tests/test_eval.py -k run_all_runs_each', [
        ('fastjem/eval/tasks.py',
         'if s != "all" and s not in every)',
         'if s != "all" and s in every)'),
    ]),
    Mutant('eval-all-sets-keep-all', 'tests/test_eval.py -k run_all_runs_each', [
        ('fastjem/eval/tasks.py',
         'if s != "all" and s not in every)',
         'if s != "all" or s not in every)'),
    ]),
    Mutant('eval-all-folder-unknown', 'tests/test_eval.py -k run_all_runs_each', [
        ('fastjem/eval/tasks.py',
         'if s not in OOD_SETS and not Path(s).is_dir()]',
         'if s not in OOD_SETS and Path(s).is_dir()]'),
    ]),
    Mutant('eval-all-fid-skipped-with-extractor', 'tests/test_eval.py -k run_all_runs_each', [
        ('fastjem/eval/tasks.py',
         'if task == "fid" and inception_weights is None and features_model is None:',
         'if task == "fid" and inception_weights is None and features_model is not None:'),
    ]),
    Mutant('eval-all-fid-skip-reason-last-line', 'tests/test_eval.py -k run_all_runs_each', [
        ('fastjem/eval/tasks.py',
         '            reports[task] = {"skipped": str(err).splitlines()[0]}',
         '            reports[task] = {"skipped": str(err).splitlines()[-1]}'),
    ]),
    Mutant('eval-all-log-done-for-skipped', 'tests/test_eval.py -k run_all_runs_each', [
        ('fastjem/eval/tasks.py',
         'if "skipped" not in reports[task] else',
         'if "skipped" in reports[task] else'),
    ]),
    Mutant('cli-data-width-shortest-name', 'tests/test_cli.py -k tabulates_classes', [
        ('fastjem/cli.py',
         'width = max(len(c) for c in r["classes"]) if r["classes"] else 5',
         'width = min(len(c) for c in r["classes"]) if r["classes"] else 5'),
    ]),
    Mutant('cli-data-truncates-24-classes', 'tests/test_cli.py -k tabulates_classes', [
        ('fastjem/cli.py',
         'if i == 20 and r["num_classes"] > 24:',
         'if i == 20 and r["num_classes"] >= 24:'),
    ]),
    Mutant('cli-data-truncates-after-21', 'tests/test_cli.py -k tabulates_classes', [
        ('fastjem/cli.py',
         'if i == 20 and r["num_classes"] > 24:',
         'if i == 21 and r["num_classes"] > 24:'),
    ]),
    Mutant('cli-data-unnamed-class-indexed', 'tests/test_cli.py -k tabulates_classes', [
        ('fastjem/cli.py',
         'name = r["classes"][i] if i < len(r["classes"]) else str(i)',
         'name = r["classes"][i] if i <= len(r["classes"]) else str(i)'),
    ]),
    Mutant('cli-data-imbalance-at-twice', 'tests/test_cli.py -k tabulates_classes', [
        ('fastjem/cli.py',
         'elif max(counts) > 2 * min(counts):',
         'elif max(counts) >= 2 * min(counts):'),
    ]),
    Mutant('cli-data-imbalance-never', 'tests/test_cli.py -k tabulates_classes', [
        ('fastjem/cli.py',
         'elif max(counts) > 2 * min(counts):',
         'elif max(counts) > 3 * min(counts):'),
    ]),
    Mutant('cli-data-grid-other-classes', 'tests/test_cli.py -k tabulates_classes', [
        ('fastjem/cli.py',
         'rows = [arrays.train_x[arrays.train_y == c][:8]',
         'rows = [arrays.train_x[arrays.train_y != c][:8]'),
    ]),
    Mutant('cli-data-grid-every-class', 'tests/test_cli.py -k tabulates_classes', [
        ('fastjem/cli.py',
         'for c in range(min(10, r["num_classes"]))]',
         'for c in range(max(10, r["num_classes"]))]'),
    ]),
    Mutant('cli-env-no-gpu-line-missing', 'tests/test_cli.py -k test_env_reports', [
        ('fastjem/cli.py',
         '    if not r["gpus"]:\n        print("GPU     none',
         '    if r["gpus"]:\n        print("GPU     none'),
    ]),
    Mutant('cli-env-no-amx-without-flags', 'tests/test_cli.py -k test_env_reports', [
        ('fastjem/cli.py',
         '(" (no AMX)" if flags and "amx_bf16" not in flags else "")',
         '(" (no AMX)" if flags or "amx_bf16" not in flags else "")'),
    ]),
    Mutant('cli-env-triton-installed-inverted', 'tests/test_cli.py -k test_env_reports', [
        ('fastjem/cli.py',
         '"triton": {"installed": triton is not None,',
         '"triton": {"installed": triton is None,'),
    ]),
    Mutant('cli-export-ten-classes-trailed', 'tests/test_export.py -k free_batch_size', [
        ('fastjem/cli.py',
         '+ (" ..." if len(m["classes"]) > 10 else ""))',
         '+ (" ..." if len(m["classes"]) >= 10 else ""))'),
    ]),
    Mutant('cli-convert-norm-none-passed', 'tests/test_convert.py -k cli_convert_then', [
        ('fastjem/cli.py',
         '(f" --norm {r[\'norm\']}" if r["norm"] != "none" else "")',
         '(f" --norm {r[\'norm\']}" if r["norm"] == "none" else "")'),
    ]),
    Mutant('cli-plot-sweep-ignores-out', 'tests/test_curves.py', [
        ('fastjem/cli.py',
         '            if out is None and len(args.runs) == 1:',
         '            if out is None or len(args.runs) == 1:'),
    ]),
    Mutant('fid-export-not-chunked', 'tests/test_eval.py -k torch_export', [
        ('fastjem/eval/tasks.py',
         '        step = self.max_batch or len(x)\n',
         '        step = len(x)\n'),
    ]),
    Mutant('fid-export-short-chunk-not-padded', 'tests/test_eval.py -k torch_export', [
        ('fastjem/eval/tasks.py',
         '            if n < self.min_batch:\n',
         '            if False:\n'),
    ]),
    Mutant('fid-export-padding-kept', 'tests/test_eval.py -k torch_export', [
        ('fastjem/eval/tasks.py',
         '            features.append(torch.as_tensor(self.module(chunk))[:n])\n',
         '            features.append(torch.as_tensor(self.module(chunk)))\n'),
    ]),
    Mutant('fid-export-read-as-torchscript', 'tests/test_eval.py -k torch_export', [
        ('fastjem/eval/tasks.py',
         '        if _is_exported_program(spec):\n',
         '        if False:\n'),
    ]),
    Mutant('fid-export-upper-bound-ignored', 'tests/test_eval.py -k torch_export', [
        ('fastjem/eval/tasks.py',
         '            self.max_batch = int(upper) if math.isfinite(upper) else None\n',
         '            self.max_batch = None\n'),
    ]),
    Mutant('fid-export-lower-bound-ignored', 'tests/test_eval.py -k torch_export', [
        ('fastjem/eval/tasks.py',
         '            self.min_batch = max(int(bounds.lower), 1)\n',
         '            self.min_batch = 1\n'),
    ]),
    Mutant('train-depth-error-names-wrong-source', 'tests/test_cli.py -k bad_input_gets', [
        ('fastjem/cli.py',
         '        source = ("--arch" if "arch" in overrides else',
         '        source = ("--arch" if "arch" not in overrides else'),
    ]),
    Mutant('train-resume-print-config-blanks-folder', 'tests/test_cli.py -k round_trip', [
        ('fastjem/cli.py',
         '        if not args.resume and "out_dir" not in overrides:\n',
         '        if "out_dir" not in overrides:\n'),
    ]),
    Mutant('train-progress-flag-inverted', 'tests/test_cli.py -k end_to_end_in_a_subprocess', [
        ('fastjem/cli.py',
         '    trainer = Trainer(cfg, out_dir=out_dir, resume=args.resume, progress=not args.no_progress)\n',
         '    trainer = Trainer(cfg, out_dir=out_dir, resume=args.resume, progress=args.no_progress)\n'),
    ]),
    Mutant('train-elapsed-time-wrong', 'tests/test_cli.py -k end_to_end_in_a_subprocess', [
        ('fastjem/cli.py',
         '    elapsed = time.perf_counter() - start\n',
         '    elapsed = time.perf_counter() + start\n'),
    ]),
    Mutant('sweep-grid-not-required', 'tests/test_cli.py -k without_a_grid', [
        ('fastjem/cli.py',
         'p.add_argument("--grid", nargs="+", action="extend", required=True,',
         'p.add_argument("--grid", nargs="+", action="extend", required=False,'),
    ]),
    Mutant('sweep-progress-flag-inverted', 'tests/test_sweep.py -k progress_bar', [
        ('fastjem/cli.py',
         '    result = run_sweep(base, grid, args.seeds, folder, progress=not args.no_progress)\n',
         '    result = run_sweep(base, grid, args.seeds, folder, progress=args.no_progress)\n'),
    ]),
    Mutant('cli-broken-pipe-status-1', 'tests/test_cli.py -k goes_away', [
        ('fastjem/cli.py',
         '            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - the interpreter\'s final flush goes here\n        return 0\n',
         '            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - the interpreter\'s final flush goes here\n        return 1\n'),
    ]),
    Mutant('cli-broken-pipe-not-caught', 'tests/test_cli.py -k goes_away', [
        ('fastjem/cli.py',
         '    except BrokenPipeError:\n',
         '    except ZeroDivisionError:\n'),
    ]),
    Mutant('cli-eexist-on-a-folder-called-a-file', 'tests/test_cli.py -k output_folder_that_is_a_file', [
        ('fastjem/cli.py',
         '                p.exists() and not p.is_dir() for p in',
         '                p.exists() for p in'),
    ]),
    Mutant('cli-ctrl-c-status', 'tests/test_cli.py -k ctrl_c', [
        ('fastjem/cli.py',
         '        print("fastjem: interrupted", file=sys.stderr)\n        return 130\n',
         '        print("fastjem: interrupted", file=sys.stderr)\n        return 1\n'),
    ]),
    Mutant('version-drops-cuda-build', 'tests/test_cli.py -k version_names', [
        ('fastjem/cli.py',
         'cuda = torch.version.cuda or "none"',
         'cuda = torch.version.cuda and "none"'),
    ]),
    Mutant('no-command-not-an-error', 'tests/test_cli.py -k no_command', [
        ('fastjem/cli.py',
         'sub = parser.add_subparsers(dest="command", required=True)',
         'sub = parser.add_subparsers(dest="command", required=False)'),
    ]),
    Mutant('env-gpu-memory-not-gib', 'tests/test_cli.py -k env_lists_every_gpu', [
        ('fastjem/cli.py',
         '"memory_gib": round(props.total_memory / 2**30, 1)',
         '"memory_gib": round(props.total_memory / 10**9, 1)'),
    ]),
    Mutant('env-engine-for-second-gpu', 'tests/test_cli.py -k env_lists_every_gpu', [
        ('fastjem/cli.py',
         '([torch.device("cuda", 0)] if cuda else [])',
         '([torch.device("cuda", 1)] if cuda else [])'),
    ]),
    Mutant('env-engine-assumes-batch-norm', 'tests/test_cli.py -k env_lists_every_gpu', [
        ('fastjem/cli.py',
         'engine = resolve_engine(cfg, device, has_batch_norm(model), has_dropout=has_dropout(model))',
         'engine = resolve_engine(cfg, device, True, has_dropout=has_dropout(model))'),
    ]),
    Mutant('export-ellipsis-after-eleven', 'tests/test_export.py -k marks_more', [
        ('fastjem/cli.py',
         '(" ..." if len(m["classes"]) > 10 else "")',
         '(" ..." if len(m["classes"]) > 11 else "")'),
    ]),
    Mutant('bench-default-steps-not-twenty', 'tests/test_cli.py -k bench_defaults', [
        ('fastjem/cli.py',
         'p.add_argument("--sgld-steps", type=int64, default=20,',
         'p.add_argument("--sgld-steps", type=int64, default=10,'),
    ]),
    Mutant('bench-cpu-defaults-are-cudas', 'tests/test_cli.py -k bench_defaults', [
        ('fastjem/cli.py',
         'get_preset("quick").width if args.arch == "convnet" else pick(None, 10, 2))',
         'get_preset("quick").width if args.arch == "convnet" else pick(None, 10, 10))'),
    ]),
    Mutant('bench-cuda-default-batch-is-cpus', 'tests/test_cli.py -k bench_defaults', [
        ('fastjem/cli.py',
         'pick(args.batch_size, [64], [16])',
         'pick(args.batch_size, [16], [16])'),
    ]),
    Mutant('bench-times-the-iteration-graph', 'tests/test_cli.py -k bench_defaults', [
        ('fastjem/cli.py',
         'iteration_graph=False,  # the sampler alone: its own graph',
         'iteration_graph=True,  # the sampler alone: its own graph'),
    ]),
    Mutant('bench-size-one-refused', 'tests/test_cli.py -k bench_defaults', [
        ('fastjem/cli.py',
         'if getattr(args, name) is not None and getattr(args, name) <= 0:',
         'if getattr(args, name) is not None and getattr(args, name) <= 1:'),
    ]),
    Mutant('bench-out-parents-not-made', 'tests/test_cli.py -k bench_defaults', [
        ('fastjem/cli.py',
         'Path(target).parent.mkdir(parents=True, exist_ok=True)',
         'Path(target).parent.mkdir(parents=False, exist_ok=True)'),
    ]),
    Mutant('bench-zero-seconds-accepted', 'tests/test_cli.py -k mistakes', [
        ('fastjem/cli.py',
         'if not 0 < args.seconds < math.inf:',
         'if not 0 <= args.seconds <= math.inf:'),
    ]),
    Mutant('bench-batch-checked-after-output', 'tests/test_cli.py -k mistakes', [
        ('fastjem/cli.py',
         'if args.batch_size is not None and min(args.batch_size) <= 0:',
         'if args.batch_size is not None and max(args.batch_size) <= 0:'),
    ]),
    Mutant('eval-cli-batch-not-the-librarys', 'tests/test_eval.py -k librarys', [
        ('fastjem/eval/cli.py',
         'g.add_argument("--batch-size", type=int64, default=500, help="evaluation batch size (default: 500)")',
         'g.add_argument("--batch-size", type=int64, default=256, help="evaluation batch size (default: 500)")'),
    ]),
    Mutant('eval-cli-refine-steps-not-the-librarys', 'tests/test_eval.py -k librarys', [
        ('fastjem/eval/cli.py',
         'default=[0, 1, 10], metavar="N"',
         'default=[0, 10], metavar="N"'),
    ]),
    Mutant('eval-cli-fid-chain-length-not-the-librarys', 'tests/test_eval.py -k librarys', [
        ('fastjem/eval/cli.py',
         '"n_steps": 100 if args.n_steps is None else args.n_steps},',
         '"n_steps": 20 if args.n_steps is None else args.n_steps},'),
    ]),
    Mutant('eval-one-ood-image-refused', 'tests/test_eval.py -k librarys', [
        ('fastjem/eval/cli.py',
         'if args.n_ood <= 0 or args.n_test < 0:',
         'if args.n_ood <= 1 or args.n_test < 0:'),
    ]),
    Mutant('sample-cli-steps-not-the-librarys', 'tests/test_eval.py -k sample_command_defaults', [
        ('fastjem/eval/cli.py',
         'p.add_argument("--n-steps", type=int64, default=100, help="SGLD steps per chain (default: 100)")',
         'p.add_argument("--n-steps", type=int64, default=50, help="SGLD steps per chain (default: 100)")'),
    ]),
    Mutant('int64-minimum-refused', 'tests/test_cli.py -k beyond_64', [
        ('fastjem/cli.py',
         'if value < -(2**63):',
         'if value <= -(2**63):'),
    ]),
    Mutant('preset-table-lists-every-option', 'tests/test_cli.py -k explains_every', [
        ('fastjem/cli.py',
         'if getattr(cfg, f.name) != getattr(base, f.name) and f.name != "preset"}',
         'if f.name != "preset"}'),
    ]),
    Mutant('step-alone-without-state', 'tests/test_sampler.py -k step_alone', [
        ('fastjem/sampler.py',
         '        rng = self.rng_for(x.device) if rng is None else rng\n',
         '        rng = rng\n'),
    ]),
    Mutant('class-gaussians-to-stays', 'tests/test_buffer.py -k move_to_a_device', [
        ('fastjem/buffer.py',
         '        self.mean, self.factor = self.mean.to(device), self.factor.to(device)\n',
         '        pass\n'),
    ]),
    Mutant('buffer-state-load-keeps-own-rng', 'tests/test_buffer.py -k round_trip', [
        ('fastjem/buffer.py',
         '            self.rng_state.copy_(state["rng_state"])\n',
         '            pass\n'),
    ]),
    Mutant('naming-swallows-a-named-error', 'tests/test_disk.py -k small_parts', [
        ('fastjem/checkpoint.py',
         '        if err.filename is not None:\n            raise\n',
         '        if err.filename is not None:\n            pass\n'),
    ]),
    Mutant('atomic-file-leaves-folder-fd-open', 'tests/test_disk.py -k small_parts', [
        ('fastjem/checkpoint.py',
         '    finally:\n        os.close(dir_fd)\n',
         '    finally:\n        pass\n'),
    ]),
    Mutant('run-lock-appends-its-holder', 'tests/test_disk.py -k small_parts', [
        ('fastjem/checkpoint.py',
         '            f.seek(0)\n            f.truncate()\n',
         '            f.seek(0)\n'),
    ]),
    Mutant('checkpoint-missing-not-said', 'tests/test_contracts.py -k lock_naming', [
        ('fastjem/checkpoint.py',
         '        raise CheckpointError(f"checkpoint {path} does not exist")\n',
         '        pass  # not said\n'),
    ]),
    Mutant('checkpoint-stranger-not-refused', 'tests/test_contracts.py -k lock_naming', [
        ('fastjem/checkpoint.py',
         '        raise CheckpointError(f"{path} is not a fastjem checkpoint: it holds {holds}, where fastjem train writes a "\n',
         '        pass  # not refused\n'),
    ]),
    Mutant('guard-snapshot-keeps-the-flag', 'tests/test_guard.py -k flag_clear', [
        ('fastjem/guard.py',
         '        self.snapshot = _clone(self.trainer.state_dict())\n        self.flag.zero_()\n',
         '        self.snapshot = _clone(self.trainer.state_dict())\n'),
    ]),
    Mutant('guard-rollback-keeps-the-flag', 'tests/test_guard.py -k flag_clear', [
        ('fastjem/guard.py',
         '        self.trainer.load_state(_clone(self.snapshot))\n        self.flag.zero_()\n',
         '        self.trainer.load_state(_clone(self.snapshot))\n'),
    ]),
    Mutant('pgd-start-not-clamped', 'tests/test_eval.py -k valid_images', [
        ('fastjem/eval/attacks.py',
         '    lo_t, hi_t = x.clamp(max=lo), x.clamp(min=hi)\n    delta = (torch.max(torch.min(x + delta, hi_t), lo_t) - x).detach()\n',
         '    lo_t, hi_t = x.clamp(max=lo), x.clamp(min=hi)\n'),
    ]),
    Mutant('pgd-input-not-detached', 'tests/test_eval.py -k valid_images', [
        ('fastjem/eval/attacks.py',
         '    x = x.detach()\n',
         '    pass  # x kept as given\n'),
    ]),
    Mutant('ece-bool-confidence-not-converted', 'tests/test_eval.py -k own_edges', [
        ('fastjem/eval/metrics.py',
         '        raw = raw.double()\n',
         '        pass  # bool or integer kept\n'),
    ]),
    Mutant('fid-statistics-kept-in-their-dtype', 'tests/test_contracts.py -k fid_and_cal', [
        ('fastjem/eval/metrics.py',
         '    mu1, mu2, cov1, cov2 = (t.double() for t in (mu1, mu2, cov1, cov2))\n',
         '    pass  # kept in their dtype\n'),
    ]),
    Mutant('ood-empty-folder-not-said', 'tests/test_eval.py -k decoded_and_resized', [
        ('fastjem/eval/ood.py',
         '        raise OODSetError(f"no images ({\', \'.join(IMAGE_SUFFIXES)}) found under {folder}")\n',
         '        pass  # not said\n'),
    ]),
    Mutant('ood-interp-without-images-not-said', 'tests/test_eval.py -k refuse_inputs_they_cannot', [
        ('fastjem/eval/ood.py',
         '            raise ValueError("the interp set needs the in-distribution test images")\n',
         '            pass  # not said\n'),
    ]),
    Mutant('trainer-energy-ignores-the-label', 'tests/test_train.py -k trainers_energy', [
        ('fastjem/train.py',
         '        return model_energy(self.net, y, autocast=self.engine.autocast, backend=self.engine.kernels)\n',
         '        return model_energy(self.net, None, autocast=self.engine.autocast, backend=self.engine.kernels)\n'),
    ]),
    Mutant('iteration-keeps-the-mode-it-finds', 'tests/test_train.py -k whatever_mode', [
        ('fastjem/train.py',
         '        loss, backward, optimiser step, divergence flag, metric sums."""\n        self.model.train()\n',
         '        loss, backward, optimiser step, divergence flag, metric sums."""\n'),
    ]),
    Mutant('iteration-not-observed-by-the-guard', 'tests/test_guard.py -k reports_its_loss', [
        ('fastjem/train.py',
         '        if self.guard is not None:\n            self.guard.observe(parts)\n',
         '        if self.guard is not None:\n            pass  # not observed\n'),
    ]),
    Mutant('nan-fault-loss-not-reported', 'tests/test_guard.py -k reports_its_loss', [
        ('fastjem/train.py',
         '                loss = loss * float("nan")\n                parts["loss"] = loss.detach()\n',
         '                loss = loss * float("nan")\n'),
    ]),
    Mutant('sgld-graph-key-ignores-conditioning', 'tests/test_train.py -k captured_once', [
        ('fastjem/train.py',
         '            key = (tuple(x0.shape), y is not None)\n',
         '            key = tuple(x0.shape)\n'),
    ]),
    Mutant('sgld-graph-captured-every-call', 'tests/test_train.py -k captured_once', [
        ('fastjem/train.py',
         '            if key not in self._graphs:\n                self._graphs[key] = self.nets.graphed(',
         '            if True:\n                self._graphs[key] = self.nets.graphed('),
    ]),
    Mutant('overlap-keeps-stale-last-samples', 'tests/test_overlap.py -k one_backward', [
        ('fastjem/train.py',
         '        x_q = self.sample(b, y_q)\n        self.last_samples = x_q\n',
         '        x_q = self.sample(b, y_q)\n'),
    ]),
    Mutant('iteration-check-ignores-metrics', 'tests/test_iteration_graph.py -k one_thing_alone', [
        ('fastjem/train.py', '                problems.append(f"{k} {float(v):.6g} (eager) vs {float(replayed[\'parts\'][k]):.6g} (graph)")', '                pass  # metrics not compared'),
    ]),
    Mutant('iteration-check-ignores-optimiser-state', 'tests/test_iteration_graph.py -k one_thing_alone', [
        ('fastjem/train.py', '                problems.append(f"optimiser state {kind} differs (cosine {s_cos:.4f}, norm ratio {s_ratio:.4f})")', '                pass  # state not compared'),
    ]),
    Mutant('iteration-check-optimiser-state-in-one-vector', 'tests/test_iteration_graph.py -k one_thing_alone', [
        ('fastjem/train.py', '                    kinds.setdefault(kind, []).append(v)', '                    kinds.setdefault("exp_avg", []).append(v)'),
    ]),
    Mutant('iteration-check-ignores-buffer', 'tests/test_iteration_graph.py -k one_thing_alone', [
        ('fastjem/train.py', '            problems.append(f"replay buffer differs ({buf_diff:.3g} of its change)")', '            pass  # buffer not compared'),
    ]),
    Mutant('iteration-check-ignores-rng', 'tests/test_iteration_graph.py -k one_thing_alone', [
        ('fastjem/train.py', '            problems.append("device RNG states advanced differently")', '            pass  # rng not compared'),
    ]),
    Mutant('resume-forgets-the-rollback-file-name', 'tests/test_guard.py -k rolls_back_where', [
        ('fastjem/train.py', '                self._snapshot_file = name\n', '                pass  # name not kept\n'),
    ]),
    Mutant('state-load-keeps-stale-graphs', 'tests/test_train.py -k captured_again', [
        ('fastjem/train.py', '        self.sampler.n_steps = self.recovery.sgld_steps\n        self._graphs.clear()\n', '        self.sampler.n_steps = self.recovery.sgld_steps\n        pass  # graphs kept\n'),
    ]),
    Mutant('cross-device-resume-not-reseeded', 'tests/test_train.py -k another_kind_of_device', [
        ('fastjem/train.py', '                self.data_gen.manual_seed(self.cfg.seed + 1_000_003 * (int(ckpt["iteration"]) + 1))\n', '                pass  # not reseeded\n'),
    ]),
    Mutant('summary-without-the-samples-path', 'tests/test_train.py -k short_run_has', [
        ('fastjem/train.py', '            return None\n        return path\n\n    def _log_jsonl', '            return None\n        return None\n\n    def _log_jsonl'),
    ]),
    Mutant('keep-checkpoint-says-not-where', 'tests/test_train.py -k short_run_has', [
        ('fastjem/train.py', '        atomic_copy(path, dest)\n        return dest\n', '        atomic_copy(path, dest)\n        return None\n'),
    ]),
    Mutant('run-log-without-engine-notes', 'tests/test_train.py -k names_the_engine', [
        ('fastjem/train.py', '            self.log(f"engine: {note}")\n', '            pass  # notes not said\n'),
    ]),
    Mutant('run-log-without-engine-description', 'tests/test_train.py -k names_the_engine', [
        ('fastjem/train.py', '        self.log(f"engine: {self.engine.describe()}")\n', '        pass  # engine not said\n'),
    ]),
    Mutant('metrics-speed-over-the-whole-run', 'tests/test_train.py -k windows_speed', [
        ('fastjem/train.py', '                    t_window, it_window = now, it\n', '                    pass  # window not restarted\n'),
    ]),
    Mutant('bar-without-the-gap', 'tests/test_train.py -k windows_speed', [
        ('fastjem/train.py', '                        post["gap"] = f"{m[\'gap\']:.3f}"\n', '                        pass  # no gap shown\n'),
    ]),
    Mutant('bar-without-metrics', 'tests/test_train.py -k windows_speed', [
        ('fastjem/train.py', '                    bar.set_postfix(post, refresh=False)\n', '                    pass  # no postfix\n'),
    ]),
    Mutant('validation-line-not-shown', 'tests/test_train.py -k windows_speed', [
        ('fastjem/train.py', '                    bar.write(f"iter {it}: val acc {val[\'acc\']:.4f}" + (" (best so far: best.pt)" if kept else ""))\n', '                    pass  # not shown\n'),
    ]),
    Mutant('stopped-unhealthy-state-saved', 'tests/test_guard.py -k keeps_the_remedy', [
        ('fastjem/train.py', "                    self.recover()\n                elif unhealthy:\n",
         '                    pass  # not rolled back\n                elif unhealthy:\n'),
    ]),
    Mutant('fit-keeps-the-bar-log', 'tests/test_train.py -k gives_back', [
        ('fastjem/train.py', '            bar.close()\n            self.log = log\n', '            bar.close()\n            pass  # log not given back\n'),
    ]),
    Mutant('fit-keeps-its-signal-handlers', 'tests/test_train.py -k gives_back', [
        ('fastjem/train.py', '            for sig, handler in previous.items():\n                signal.signal(sig, handler)\n', '            for sig, handler in previous.items():\n                pass  # handlers not given back\n'),
    ]),
    Mutant('best-unhealthy-says-null', 'tests/test_best.py -k unhealthy_state_never', [
        ('fastjem/train.py', '            if unhealthy:\n                return False\n        self.best = {"iter": it, "val_acc": val_acc}', '            if unhealthy:\n                return None\n        self.best = {"iter": it, "val_acc": val_acc}'),
    ]),
    Mutant('curves-failure-unsaid', 'tests/test_curves.py -k fail_to_draw', [
        ('fastjem/train.py', '            self.log(f"warning: training curves not drawn: {type(err).__name__}: {err}")\n', '            pass  # not said\n'),
    ]),
    Mutant('data-unknown-name-unbound', 'tests/test_data.py -k unknown_dataset_name', [
        ('fastjem/data.py', '        raise DataNotFoundError(f"unknown dataset {name!r}; choose digits, cifar10, cifar100, svhn or imagefolder")', '        pass  # not said'),
    ]),
    Mutant('data-svhn-files-not-seen', 'tests/test_data.py -k torchvision_sets', [
        ('fastjem/data.py', '        return (root / "train_32x32.mat").is_file()', '        return None  # not looked'),
    ]),
    Mutant('data-cifar-files-not-seen', 'tests/test_data.py -k unpacked_offline', [
        ('fastjem/data.py', '    return (root / TORCHVISION_FOLDERS[name]).is_dir() or (root / TORCHVISION_ARCHIVES[name]).is_file()', '    return None  # not looked'),
    ]),
    Mutant('data-split-folders-not-first', 'tests/test_data.py -k unpacked_offline', [
        ('fastjem/data.py', '    return _split_folders(root) is not None', '    return None  # not looked'),
    ]),
    Mutant('data-16bit-left-to-pillow', 'tests/test_data.py -k pillows', [
        ('fastjem/data.py', '        x = ((x.int() * 255 + 32767) // 65535).to(torch.uint8)', '        pass  # not rounded'),
    ]),
    Mutant('data-decoding-bar-drain-uncounted', 'tests/test_data.py -k chunks_in_flight', [
        ('fastjem/data.py', '            while pending:\n                take(pending.popleft().result())', '            while pending:\n                out.extend(pending.popleft().result())'),
    ]),
    Mutant('data-decoding-bar-flight-uncounted', 'tests/test_data.py -k chunks_in_flight', [
        ('fastjem/data.py', '                    take(pending.popleft().result())\n            while pending:', '                    out.extend(pending.popleft().result())\n            while pending:'),
    ]),
    Mutant('data-lone-image-tested', 'tests/test_data.py -k small_class_gives', [
        ('fastjem/data.py', '        if len(members) == 1:\n            chosen = set()', '        if len(members) == 1:\n            pass  # kept as hashed'),
    ]),
    Mutant('data-walk-below-read-folders', 'tests/test_data.py -k reached_again', [
        ('fastjem/data.py', '        if real in seen:\n            dirs[:] = []', '        if real in seen:\n            pass  # walked on'),
    ]),
    Mutant('data-bare-folder-per-class', 'tests/test_data.py -k imagefolder_errors', [
        ('fastjem/data.py', '        raise DataNotFoundError(f"no images ({\', \'.join(IMAGE_SUFFIXES)}) under {folder}")', '        pass  # each class said empty'),
    ]),
    Mutant('data-split-sizes-unchecked', 'tests/test_data.py -k mixed_sizes', [
        ('fastjem/data.py', '        if tx.shape[1:] != vx.shape[1:]:', '        if False:'),
    ]),
    Mutant('data-shard-not-kept', 'tests/test_data.py -k own_label', [
        ('fastjem/data.py', '            return x_p[shard], x_lab[shard], y_lab[shard]', '            pass  # the whole batch'),
    ]),
    Mutant('samples-no-test-data-line', 'tests/test_eval.py -k reports_what_the_network_says_of_each', [
        ('fastjem/eval/tasks.py', '    results["test_data"] = describe(x_test)', '    pass  # not described'),
    ]),
    Mutant('eval-task-unseeded', 'tests/test_eval.py -k reports_what_the_network_says_of_each', [
        ('fastjem/eval/tasks.py', '        torch.default_generator.manual_seed(seed)\n        default_generator(self.em.device).manual_seed(seed)\n', '        pass  # not seeded\n'),
    ]),
    Mutant('eval-report-no-version', 'tests/test_eval.py -k strict_json', [
        ('fastjem/eval/tasks.py', '    return __version__', '    return None  # unknown'),
    ]),
    Mutant('eval-report-no-cpu-named', 'tests/test_eval.py -k strict_json', [
        ('fastjem/eval/tasks.py', '    return f"cpu ({cpu_model()}, {os.cpu_count()} cores, {torch.get_num_threads()} threads)"', '    return "cpu"'),
    ]),
    Mutant('eval-json-tensor-raw', 'tests/test_eval.py -k hold_what_json', [
        ('fastjem/checkpoint.py', '        return finite_json(obj.tolist())', '        return obj.tolist()'),
    ]),
    Mutant('eval-json-path-raw', 'tests/test_eval.py -k hold_what_json', [
        ('fastjem/checkpoint.py', '    if isinstance(obj, Path):\n        return str(obj)\n    return obj', '    return obj'),
    ]),
    Mutant('robustness-figure-label-uncautioned', 'tests/test_eval.py -k cautions_when', [
        ('fastjem/eval/tasks.py', '                label += f" (inputs moved {moves[str(n)][\'mean_abs_change\']:.2g}/px: not robustness)"', '                pass  # not said'),
    ]),
    Mutant('robustness-figure-without-curves', 'tests/test_eval.py -k cautions_when', [
        ('fastjem/eval/tasks.py', '            curves[norm][label] = pts', '            pass  # not drawn'),
    ]),
    Mutant('fid-classifier-without-features', 'tests/test_eval.py -k fixed_dynamic_or_bounded', [
        ('fastjem/eval/tasks.py', '            raise FIDUnavailableError("this network has no .features(); pass another --features-model")', '            pass  # not said'),
    ]),
    Mutant('fid-buffer-source-without-buffer', 'tests/test_contracts.py -k fid_scores', [
        ('fastjem/eval/tasks.py', '        raise ConfigError(f"{em.path} has no replay buffer ({em.label}): use --source fresh")', '        pass  # not said'),
    ]),
    Mutant('report-md-without-headings', 'tests/test_eval.py -k test_cli_all_prints', [
        ('fastjem/eval/tasks.py', '            lines += ["", f"## {task}", ""]', '            pass  # no heading'),
    ]),
    Mutant('fid-inception-beside-features-dropped', 'tests/test_contracts.py -k fid_scores', [
        ('fastjem/eval/tasks.py', '            results["inception"] = inc', '            pass  # dropped'),
    ]),
    Mutant('eval-help-accuracy-group-merged', 'tests/test_eval.py -k under_its_heading', [
        ('fastjem/eval/cli.py', '    g = p.add_argument_group("accuracy and samples")', '    pass  # the group before'),
    ]),
    Mutant('eval-help-calibration-group-merged', 'tests/test_eval.py -k under_its_heading', [
        ('fastjem/eval/cli.py', '    g = p.add_argument_group("calibration")', '    pass  # the group before'),
    ]),
    Mutant('eval-help-ood-group-merged', 'tests/test_eval.py -k under_its_heading', [
        ('fastjem/eval/cli.py', '    g = p.add_argument_group("ood")', '    pass  # the group before'),
    ]),
    Mutant('eval-help-robustness-group-merged', 'tests/test_eval.py -k under_its_heading', [
        ('fastjem/eval/cli.py', '    g = p.add_argument_group("robustness")', '    pass  # the group before'),
    ]),
    Mutant('eval-help-fid-group-merged', 'tests/test_eval.py -k under_its_heading', [
        ('fastjem/eval/cli.py', '    g = p.add_argument_group("fid")', '    pass  # the group before'),
    ]),
    Mutant('sample-summary-no-logpx', 'tests/test_eval.py -k unconditional_writes', [
        ('fastjem/eval/cli.py', '    print(f"  mean log p~(x)  {drawn.logpx.mean().item():.3f}")', '    pass  # not said'),
    ]),
    Mutant('sample-summary-no-histogram', 'tests/test_eval.py -k unconditional_writes', [
        ('fastjem/eval/cli.py', '''        print(f"  samples per predicted class  {', '.join(f'{name}: {n}' for name, n in zip(names, hist))}")''', '        pass  # not said'),
    ]),
    Mutant('sample-summary-no-target-rate', 'tests/test_eval.py -k class_conditional_pt', [
        ('fastjem/eval/cli.py', '        print(f"  classified as their target class: {(drawn.pred == drawn.target).float().mean().item():.3f}")', '        pass  # not said'),
    ]),
    Mutant('sample-output-checked-late', 'tests/test_eval.py -k before_it_loads', [
        ('fastjem/eval/cli.py', '    if args.out is not None:\n        draw.check_output(args.out, args.force)', '    if args.out is not None:\n        pass  # after loading'),
    ]),
    Mutant('eval-runs-progress-unsaid', 'tests/test_eval.py -k folder_of_runs_compares', [
        ('fastjem/eval/cli.py', '        print(f"[{k + 1}/{len(paths)}] {path.name}", flush=True)', '        pass  # not said'),
    ]),
    Mutant('eval-runs-table-unprinted', 'tests/test_eval.py -k folder_of_runs_compares', [
        ('fastjem/eval/cli.py', '    print(format_comparison(result))', '    pass  # not printed'),
    ]),
    Mutant('eval-history-progress-unsaid', 'tests/test_history.py', [
        ('fastjem/eval/cli.py', '        print(f"[{k + 1}/{len(paths)}] {path.name}", flush=True)', '        pass  # not said'),
    ]),
    Mutant('eval-history-where-unsaid', 'tests/test_history.py', [
        ('fastjem/eval/cli.py', '    print(f"\\nper checkpoint: {out_root}/<checkpoint>/; history: {history[\'json\']}, {history[\'png\']}")', '    pass  # not said'),
    ]),
    Mutant('history-folder-as-text', 'tests/test_history.py -k history_plot_draws', [
        ('fastjem/eval/history.py', '''the reports of one task over checkpoints; returns the history."""
    out_dir = Path(out_dir)''', '''the reports of one task over checkpoints; returns the history."""
    pass  # taken as given'''),
    ]),
    Mutant('runs-folder-as-text', 'tests/test_history.py -k diverged_seed', [
        ('fastjem/eval/history.py', '''    import statistics

    out_dir = Path(out_dir)''', '''    import statistics

    pass  # taken as given'''),
    ]),
    Mutant('draw-counts-unchecked', 'tests/test_eval.py -k library_draw_checks', [
        ('fastjem/eval/draw.py', '    where the training images of ``init="informative"`` are read (default: the folder the run trained on)."""\n    check_counts(n, n_steps, batch_size)', '    where the training images of ``init="informative"`` are read (default: the folder the run trained on)."""\n    pass  # unchecked'),
    ]),
    Mutant('draw-init-checked-after-loading', 'tests/test_eval.py -k library_draw_checks', [
        ('fastjem/eval/draw.py', '    if init not in INITS:\n        raise ConfigError(f"--init must be one of {\', \'.join(INITS)}, got {init!r}")\n    em = load_model(checkpoint, device)', '    em = load_model(checkpoint, device)'),
    ]),
    Mutant('resolve-init-unchecked', 'tests/test_eval.py -k library_draw_checks', [
        ('fastjem/eval/draw.py', '    if init not in INITS:\n        raise ConfigError(f"--init must be one of {\', \'.join(INITS)}, got {init!r}")\n    if init == "buffer" and em.buffer is None:', '    if init == "buffer" and em.buffer is None:'),
    ]),
    Mutant('draw-sgld-unchecked', 'tests/test_eval.py -k library_draw_checks', [
        ('fastjem/eval/draw.py', '    s = s if noise is None else noise\n    check_sgld(a, s)', '    s = s if noise is None else noise'),
    ]),
    Mutant('draw-all-classes-named-by-list', 'tests/test_eval.py -k library_draw_checks', [
        ('fastjem/eval/draw.py', '        return em.output_dir("sampled") / "all-classes.npz"', '        pass  # named below'),
    ]),
    Mutant('draw-save-replaces', 'tests/test_eval.py -k library_draw_checks', [
        ('fastjem/eval/draw.py', '    path = check_output(path, overwrite)\n    if path.suffix.lower() == ".pt":',
         '    path = Path(path)\n    if path.suffix.lower() == ".pt":'),
    ]),
    Mutant('eval-refine-pipeline-skips-refinement', 'tests/test_eval.py::test_refinement_is_differentiable_and_its_gradient_is_exact', [
        ('fastjem/eval/core.py', '            x = sgld_refine(self.model, x, self.n_steps, self.step_size, self.noise, create_graph=keep_graph)', '            pass'),
    ]),
    Mutant('eval-run-chains-bar-not-counted', 'tests/test_eval.py::test_run_chains_is_sgld_refine_in_batches', [
        ('fastjem/eval/core.py', '                bar.update(1)', '                pass'),
    ]),
    Mutant('eval-batches-bar-missing', 'tests/test_eval.py::test_refined_logits_are_the_logits_of_the_refined_inputs', [
        ('fastjem/eval/core.py', '        starts = progress_bar(iterable=starts, desc=desc, unit="batch", leave=False, dynamic_ncols=True)',
         '        pass'),
    ]),
    Mutant('reliability-no-diagonal', 'tests/test_eval.py::test_reliability_diagram_and_score_histograms_draw_the_numbers', [
        ('fastjem/eval/plots.py', '    ax.plot([0, 1], [0, 1], "k--", lw=1, label="perfect calibration")\n', ''),
    ]),
    Mutant('reliability-axes-unlabelled', 'tests/test_eval.py::test_reliability_diagram_and_score_histograms_draw_the_numbers', [
        ('fastjem/eval/plots.py', '    ax.set_ylabel("accuracy")\n', ''),
        ('fastjem/eval/plots.py', '    axc.set_ylabel("count")\n', ''),
    ]),
    Mutant('reliability-count-axis-linear', 'tests/test_eval.py::test_reliability_diagram_and_score_histograms_draw_the_numbers', [
        ('fastjem/eval/plots.py', '    axc.set_yscale("log")\n', ''),
    ]),
    Mutant('reliability-no-legend', 'tests/test_eval.py::test_reliability_diagram_and_score_histograms_draw_the_numbers', [
        ('fastjem/eval/plots.py', '    fig.legend(*ax.get_legend_handles_labels(), loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=2, '
         'fontsize=8)\n', ''),
    ]),
    Mutant('reliability-legend-over-the-bars', 'tests/test_eval.py::test_reliability_diagram_and_score_histograms_draw_the_numbers', [
        ('fastjem/eval/plots.py', 'loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=2', 'loc="upper left", ncol=2'),
    ]),
    Mutant('reliability-axis-not-0-1', 'tests/test_eval.py::test_reliability_diagram_and_score_histograms_draw_the_numbers', [
        ('fastjem/eval/plots.py', '    ax.set_xlim(0, 1)\n    ax.set_ylim(0, 1)\n', ''),
    ]),
    Mutant('histogram-untitled', 'tests/test_eval.py::test_reliability_diagram_and_score_histograms_draw_the_numbers', [
        ('fastjem/eval/plots.py', '    ax.set_title(f"OOD score {title}: higher = more in-distribution", fontsize=10)\n', ''),
        ('fastjem/eval/plots.py', '    ax.set_xlabel(title)\n', ''),
    ]),
    Mutant('robustness-no-legend', 'tests/test_eval.py::test_figures_grid_layout_robustness_axis_and_image_formats', [
        ('fastjem/eval/plots.py', '        ax.legend(fontsize=8)\n', ''),
    ]),
    Mutant('robustness-untitled', 'tests/test_eval.py::test_figures_grid_layout_robustness_axis_and_image_formats', [
        ('fastjem/eval/plots.py', '    fig.suptitle(title, fontsize=10)\n', ''),
        ('fastjem/eval/plots.py', '        ax.set_ylabel("accuracy under PGD")\n', ''),
    ]),
    Mutant('robustness-accuracy-axis-free', 'tests/test_eval.py::test_figures_grid_layout_robustness_axis_and_image_formats', [
        ('fastjem/eval/plots.py', '        ax.set_ylim(0, 1)\n', ''),
    ]),
    Mutant('figure-text-path-refused', 'tests/test_eval.py::test_figures_take_text_paths_return_the_file_and_close_what_they_drew', [
        ('fastjem/eval/plots.py', '    path = Path(path)\n    fmt = path.suffix', '    fmt = path.suffix'),
    ]),
    Mutant('grid-image-returns-none', 'tests/test_eval.py::test_figures_take_text_paths_return_the_file_and_close_what_they_drew', [
        ('fastjem/eval/plots.py', '        save_image(grid, f, format=pil_format(path))\n    return path', '        save_image(grid, f, format=pil_format(path))\n    return None'),
    ]),
    Mutant('figure-left-open', 'tests/test_eval.py::test_figures_take_text_paths_return_the_file_and_close_what_they_drew', [
        ('fastjem/eval/plots.py', '        fig = Figure(**fig_kw)\n', '        import matplotlib.pyplot\n\n        fig = matplotlib.pyplot.figure(**fig_kw)\n'),
    ]),
    Mutant('fid-sqrtm-not-symmetrised', 'tests/test_eval.py::test_fid_of_a_set_with_itself_is_zero_and_matches_the_diagonal_case', [
        ('fastjem/eval/metrics.py', '    a = (a + a.T) / 2\n', ''),
    ]),
    Mutant('fid-statistics-in-their-own-dtype', 'tests/test_eval.py::test_fid_of_a_set_with_itself_is_zero_and_matches_the_diagonal_case', [
        ('fastjem/eval/metrics.py', '    mu1, mu2, cov1, cov2 = (t.double() for t in (mu1, mu2, cov1, cov2))\n', ''),
    ]),
    Mutant('cast-copy-forgets-its-source', 'tests/test_weights.py::test_cast_copy_holds_autocasts_casts_and_keeps_the_rest', [
        ('fastjem/weights.py', '        self.source = source\n', ''),
    ]),
    Mutant('export-output-checked-after-loading', 'tests/test_export.py::test_export_refuses_its_output_before_loading_the_checkpoint', [
        ('fastjem/export.py', '    if out is not None:\n        out = _check_output(Path(out), overwrite)\n', ''),
    ]),
    Mutant('export-trace-failure-unexplained', 'tests/test_export.py::test_export_refuses_a_wrong_suffix_and_a_network_it_cannot_build', [
        ('fastjem/export.py', '    except Exception as err:  # noqa: BLE001 - say which network did not export, and why, in one line\n        raise ConfigError(', '    except ImportError as err:\n        raise ConfigError('),
    ]),
    Mutant('board-writer-unset-before-open', 'tests/test_board.py::test_a_tensorboard_folder_that_cannot_be_made_warns_once_and_the_log_stays_quiet', [
        ('fastjem/board.py', '        self.writer = None\n        self.closed = False', '        self.closed = False'),
    ]),
    Mutant('runs-torn-checkpoint-breaks-the-row', 'tests/test_runs.py::test_a_run_stopped_between_log_lines_shows_its_checkpoints_iteration', [
        ('fastjem/runs.py', "    except Exception:  # noqa: BLE001 - a torn or foreign file: the log's iteration stands\n        return 0", "    except Exception:  # noqa: BLE001 - a torn or foreign file: the log's iteration stands\n        return None"),
    ]),
    Mutant('runs-row-refuses-text-path', 'tests/test_runs.py::test_a_run_stopped_between_log_lines_shows_its_checkpoints_iteration', [
        ('fastjem/runs.py', '    """What one run folder says about its run (None where it does not say)."""\n    folder = Path(folder)\n', '    """What one run folder says about its run (None where it does not say)."""\n'),
    ]),
    Mutant('runs-unknown-table-format-empty', 'tests/test_runs.py::test_csv_keeps_its_header_row', [
        ('fastjem/runs.py', '    raise ConfigError(f"--format must be one of {\', \'.join(TABLE_FORMATS)} (or json); got {fmt!r}")', '    return ""'),
    ]),
    Mutant('runs-label-refuses-text-path', 'tests/test_runs.py::test_runs_of_sweeps_inside_the_folder_are_listed_with_their_sweeps_name', [
        ('fastjem/runs.py', '    folder = Path(folder)\n    roots =', '    roots ='),
    ]),
    Mutant('convert-buffer-kept-in-its-dtype', 'tests/test_convert.py::test_a_half_precision_buffer_is_imported_in_fp32_and_sized_into_the_config', [
        ('fastjem/convert.py', '        buffer = buffer.detach().float().contiguous()\n', ''),
    ]),
    Mutant('convert-buffer-size-left-at-the-preset', 'tests/test_convert.py::test_a_half_precision_buffer_is_imported_in_fp32_and_sized_into_the_config', [
        ('fastjem/convert.py', '        cfg = cfg.replace(buffer_size=len(buffer))\n', ''),
    ]),
    Mutant('convert-read-jem-refuses-text-path', 'tests/test_convert.py::test_a_half_precision_buffer_is_imported_in_fp32_and_sized_into_the_config', [
        ('fastjem/convert.py', '    ``weights_only=True`` (their files hold tensors only, so nothing in them is executed)."""\n    path = Path(path)\n', '    ``weights_only=True`` (their files hold tensors only, so nothing in them is executed)."""\n'),
    ]),
    Mutant('convert-unplaced-key-dropped', 'tests/test_convert.py::test_a_fastjem_key_with_no_place_in_the_authors_network_is_refused', [
        ('fastjem/convert.py', '            raise CheckpointError(f"fastjem state dict key {key!r} has no place in the authors\' Wide-ResNet")', '            pass'),
    ]),
    Mutant('convert-unreadable-file-says-none', 'tests/test_convert.py::test_conversion_errors_say_what_to_do', [
        ('fastjem/convert.py', '            continue\n    return False', '            continue\n    return None'),
    ]),
    Mutant('philox-words-not-broadcast', 'tests/test_kernels_rng.py::test_philox_words_of_different_shapes_broadcast', [
        ('kernels/rng.py', '    c0, c1, c2, c3 = torch.broadcast_tensors(c0, c1, c2, c3)\n', ''),
    ]),
    Mutant('kernels-without-triton-unbound', 'tests/test_kernels_dispatch.py::test_without_triton_the_package_imports_and_runs_the_references', [
        ('kernels/_dispatch.py', '    triton = None\n    tl = None\n', '    pass\n'),
    ]),
    Mutant('bench-result-lines-missing', 'tests/test_cli.py::test_bench_prints_and_plots_what_it_measured', [
        ('fastjem/benchmark.py', '    print(f"  engine          {r[\'engine\']}")\n', ''),
        ('fastjem/benchmark.py', '        print(f"                  ({note})")\n', '        pass\n'),
    ]),
    Mutant('bench-warm-up-and-throughput-unsaid', 'tests/test_cli.py::test_bench_prints_and_plots_what_it_measured', [
        ('fastjem/benchmark.py', '    print(f"  warm-up         {r[\'warmup_s\']:.1f} s (compilation, autotuning, graph capture)")\n', ''),
        ('fastjem/benchmark.py', '    print(f"  throughput      {r[\'chains_per_s\']:.1f} chains/s advanced by {r[\'sgld_steps\']} steps")\n', ''),
    ]),
    Mutant('bench-scaling-heading-missing', 'tests/test_cli.py::test_bench_prints_and_plots_what_it_measured', [
        ('fastjem/benchmark.py', '    print(f"\\n{results[0][\'model\']}, {results[0][\'sgld_steps\']} SGLD steps, on {results[0][\'device\']}:")\n', ''),
    ]),
    Mutant('bench-plot-throughput-line-missing', 'tests/test_cli.py::test_bench_prints_and_plots_what_it_measured', [
        ('fastjem/benchmark.py', '        ax1.plot(x, [r["chains_per_s"] for r in line], "o-", label=label)\n', ''),
    ]),
    Mutant('bench-plot-step-time-line-missing', 'tests/test_cli.py::test_bench_prints_and_plots_what_it_measured', [
        ('fastjem/benchmark.py', '        ax2.plot(x, [r["sgld_step_ms"] for r in line], "o-", label=label)\n', ''),
    ]),
    Mutant('bench-plot-unlabelled', 'tests/test_cli.py::test_bench_prints_and_plots_what_it_measured', [
        ('fastjem/benchmark.py', '    ax1.set(ylabel=f"chains/s advanced by {rs[0][\'sgld_steps\']} steps", title="throughput")\n', ''),
        ('fastjem/benchmark.py', '        ax.set_xlabel("batch size (chains)")\n', ''),
    ]),
    Mutant('bench-plot-no-legend', 'tests/test_cli.py::test_bench_prints_and_plots_what_it_measured', [
        ('fastjem/benchmark.py', '        ax1.legend(title="precision")\n', '        pass\n'),
    ]),
    Mutant('bench-plot-linear-batch-axis', 'tests/test_cli.py::test_bench_prints_and_plots_what_it_measured', [
        ('fastjem/benchmark.py', '        ax.set_xscale("log", base=2)\n', ''),
    ]),
    Mutant('bench-plot-ticks-not-the-sizes', 'tests/test_cli.py::test_bench_prints_and_plots_what_it_measured', [
        ('fastjem/benchmark.py', '        ax.set_xticks(b, [str(x) for x in b])\n', ''),
    ]),
    Mutant('bench-plot-axis-not-from-0', 'tests/test_cli.py::test_bench_prints_and_plots_what_it_measured', [
        ('fastjem/benchmark.py', '        ax.set_ylim(bottom=0)\n', ''),
    ]),
    Mutant('bench-plot-untitled', 'tests/test_cli.py::test_bench_prints_and_plots_what_it_measured', [
        ('fastjem/benchmark.py', '    fig.suptitle(f"fastjem bench: {rs[0][\'model\']} on {rs[0][\'device\']} ({what})", fontsize=9)\n', ''),
    ]),
    Mutant('bench-write-result-returns-none', 'tests/test_cli.py::test_bench_prints_and_plots_what_it_measured', [
        ('fastjem/benchmark.py', '    atomic_write_text(json.dumps(r, indent=2) + "\\n", path)  # its folder made; a failed write leaves the old file whole\n    return path', '    atomic_write_text(json.dumps(r, indent=2) + "\\n", path)  # its folder made; a failed write leaves the old file whole\n    return None'),
    ]),
    Mutant('dist-replica-drift-unsaid', 'tests/test_distributed.py::test_rank_0_warns_when_the_replicas_differ_at_a_save', [
        ('fastjem/train.py', '            if len(set(state["replica_checksums"])) != 1:\n', '            if False:\n'),
    ]),
    Mutant('wrn-feature-dim-missing', 'tests/test_models.py::test_convnet_and_build_model', [
        ('fastjem/models/wrn.py', '        self.feature_dim = in_ch\n', ''),
    ]),
    Mutant('curves-missing-run-unsaid', 'tests/test_curves.py::test_plot_errors_say_what_to_give', [
        ('fastjem/curves.py', '        raise ConfigError(f"{path} does not exist: give a fastjem run folder (the --out-dir of fastjem train)")', '        pass'),
    ]),
    Mutant('curves-iteration-axis-unlabelled', 'tests/test_curves.py::test_each_panel_draws_its_own_records', [
        ('fastjem/curves.py', '    axes[1, 1].set_ylabel("iterations / s")\n    for ax in axes[1]:\n        ax.set_xlabel("iteration")', '    axes[1, 1].set_ylabel("iterations / s")'),
    ]),
    Mutant('curves-mean-counts-runs-without-records', 'tests/test_curves.py::test_a_sweep_of_one_seed_has_its_mean_without_a_band', [
        ('fastjem/curves.py', '        ms = [m for m in ms if m.train]\n', ''),
    ]),
    Mutant('curves-mean-unlabelled', 'tests/test_curves.py::test_a_sweep_of_one_seed_has_its_mean_without_a_band', [
        ('fastjem/curves.py', '        ax.set_ylabel(name, fontsize=9)\n', '        pass\n'),
    ]),
    Mutant('curves-mean-untitled', 'tests/test_curves.py::test_a_sweep_of_one_seed_has_its_mean_without_a_band', [
        ('fastjem/curves.py', '    fig.suptitle(f"{folder.name}: each combination\'s mean over its seeds, band ± 1 sample sd", fontsize=10)\n', ''),
    ]),
    Mutant('buffer-kernel-empty-rows-skip-their-draws', 'tests/test_kernels_buffer.py::test_empty_batches_and_empty_rows_advance_the_state_as_the_reference', [
        ('kernels/buffer.py', '    rng_state[1:].add_(B + B * counters_for(D))\n    return out\n', '    rng_state[1:].add_(B + B * counters_for(D) if D else 0)\n    return out\n'),
    ]),
    Mutant('sgld-kernel-empty-part-keeps-its-advance', 'tests/test_kernels_sgld.py::test_an_empty_part_moves_the_state_as_the_reference', [
        ('kernels/sgld.py', '        _advance_(rng_state, n, advance)\n        return\n', '        return\n'),
    ]),
    Mutant('config-decay-epochs-unchecked', 'tests/test_train.py::test_bad_hyperparameters_are_refused', [
        ('fastjem/config.py', '        if any(not isinstance(e, (int, float)) or not 0 <= e < math.inf for e in self.decay_epochs):\n', '        if False:\n'),
    ]),
    Mutant('config-lists-kept', 'tests/test_train.py::test_a_config_dict_from_json_gets_tuples_and_stays_as_given', [
        ('fastjem/config.py', 'value = tuple(_plain_number(v) for v in value)', 'value = value'),
    ]),
    Mutant('config-compile-bool-kept', 'tests/test_train.py::test_compile_takes_a_boolean_from_python', [
        ('fastjem/config.py', '            object.__setattr__(self, "compile", "on" if self.compile else "off")\n', '            pass\n'),
    ]),
    Mutant('config-unknown-preset-keyerror', 'tests/test_train.py::test_presets_validate', [
        ('fastjem/config.py', '        raise ConfigError(f"unknown preset {name!r}; choose one of: {\', \'.join(PRESETS)}")\n', '        pass\n'),
    ]),
    Mutant('config-model-name-wrn-for-all', 'tests/test_train.py::test_presets_validate', [
        ('fastjem/config.py', 'return f"WRN-{self.depth}-{self.width}" if self.arch == "wrn" else f"ConvNet(width {self.width})"', 'return f"WRN-{self.depth}-{self.width}"'),
    ]),
    Mutant('config-generative-ignores-pxy', 'tests/test_train.py::test_a_run_samples_when_a_generative_term_has_weight', [
        ('fastjem/config.py', '        return self.px_weight > 0 or self.pxy_weight > 0\n', '        return self.px_weight > 0\n'),
    ]),
    Mutant('atomic-file-fsyncs-before-flush', 'tests/test_disk.py::test_a_write_is_on_disk_whole_and_its_folder_synced_before_it_counts', [
        ('fastjem/checkpoint.py', '            f.flush()\n            os.fsync(f.fileno())\n', '            os.fsync(f.fileno())\n'),
    ]),
    Mutant('atomic-file-folder-not-synced', 'tests/test_disk.py::test_a_write_is_on_disk_whole_and_its_folder_synced_before_it_counts', [
        ('fastjem/checkpoint.py', '        os.fsync(dir_fd)\n', '        dir_fd + 0\n'),
    ]),
    Mutant('atomic-file-unmade-folder-unnamed', 'tests/test_disk.py::test_a_write_is_on_disk_whole_and_its_folder_synced_before_it_counts', [
        ('fastjem/checkpoint.py', '        raise OSError(err.errno, err.strerror, str(path)) from err\n    try:\n        with os.fdopen', '        raise\n    try:\n        with os.fdopen'),
    ]),
    Mutant('lock-holder-read-from-the-end', 'tests/test_disk.py::test_a_held_lock_names_its_holder', [
        ('fastjem/checkpoint.py', '            f.seek(0)\n            raise ConfigError(', '            raise ConfigError('),
    ]),
    Mutant('cpu-bf16-flags-none-without-flags-line', 'tests/test_engine.py::test_the_cpus_name_and_flags_from_cpuinfo_with_and_without_their_lines', [
        ('fastjem/engine.py', '                    return sorted(flags & {"amx_bf16", "avx512_bf16"})\n    except OSError:\n        pass\n    return []\n', '                    return sorted(flags & {"amx_bf16", "avx512_bf16"})\n    except OSError:\n        pass\n    return None\n'),
    ]),
    Mutant('sweep-plan-bad-run-unnamed', 'tests/test_sweep.py::test_a_bad_value_names_its_run_and_a_plan_takes_a_text_folder', [
        ('fastjem/sweep.py', '                raise ConfigError(f"run {name}: {err}") from err\n', '                raise\n'),
    ]),
    Mutant('sweep-describe-plan-text-folder', 'tests/test_sweep.py::test_a_bad_value_names_its_run_and_a_plan_takes_a_text_folder', [
        ('fastjem/sweep.py', '    """What ``run_sweep`` would do with each run, without doing it (the sweep\'s spec is checked, not written)."""\n    folder = Path(folder)\n', '    """What ``run_sweep`` would do with each run, without doing it (the sweep\'s spec is checked, not written)."""\n'),
    ]),
    Mutant('glibc-missing-libc-raises', 'tests/test_engine.py::test_the_cpu_malloc_tuning_sets_glibcs_three_thresholds', [
        ('fastjem/engine.py', '        return None, "no libc.so.6"\n', '        raise\n'),
    ]),
    Mutant('glibc-any-c-library-taken', 'tests/test_engine.py::test_the_cpu_malloc_tuning_sets_glibcs_three_thresholds', [
        ('fastjem/engine.py', '    if not hasattr(libc, "gnu_get_libc_version"):\n', '    if False:\n'),
    ]),
    Mutant('cpu-model-ignores-model-name', 'tests/test_engine.py::test_the_cpus_name_and_flags_from_cpuinfo_with_and_without_their_lines', [
        ('fastjem/engine.py', '                if line.startswith("model name"):\n', '                if False:\n'),
    ]),
    Mutant('cli-version-without-triton-raises', 'tests/test_cli.py::test_version_names_fastjem_torch_and_triton', [
        ('fastjem/cli.py', '    except ImportError:\n        triton_version = "not installed"\n', '    except ImportError:\n        raise\n'),
    ]),
    Mutant('cli-preset-table-without-its-note', 'tests/test_cli.py::test_train_help_explains_every_option', [
        ('fastjem/cli.py', '    lines.append("each option\'s (default: ...) above is its own default, before a preset applies.")\n', ''),
    ]),
    Mutant('cli-env-without-version-line', 'tests/test_cli.py::test_env_reports_the_machine_and_the_default_engine_with_why', [
        ('fastjem/cli.py', '    print(r["version"])\n', ''),
    ]),
    Mutant('cli-export-without-its-use-line', 'tests/test_export.py::test_export_writes_a_program_with_free_batch_size_and_its_metadata', [
        ('fastjem/cli.py', '    print(f"  use     net = torch.export.load({str(r[\'path\'])!r}).module()")\n', ''),
    ]),
    Mutant('cli-convert-without-its-sample-line', 'tests/test_convert.py::test_cli_convert_then_eval_sample_export_train_and_back', [
        ('fastjem/cli.py', '    print(f"  sample    fastjem sample {path} -n 64")\n', ''),
    ]),
    Mutant('cli-convert-evaluate-line-data-dir-twice', 'tests/test_convert.py::test_cli_convert_then_eval_sample_export_train_and_back', [
        ('fastjem/cli.py', 'all{\'\' if args.data_dir else data}")', 'all{data}")'),
    ]),
    Mutant('energy-backward-always-reference', 'tests/test_kernels_energy.py::test_the_backward_runs_the_backward_kernel_on_the_triton_backend', [
        ('kernels/energy.py', '    if use_triton(logits, backend):\n        return lse_energy_bwd(', '    if False:\n        return lse_energy_bwd('),
    ]),
    Mutant('sgd-momentum-buffers-without-momentum', 'tests/test_optim.py::test_defaults_are_torch_sgds_plain_descent', [
        ('fastjem/optim.py', '            if group["momentum"] == 0:\n                continue\n            for p in group["params"]:\n                state = self.state[p]', '            for p in group["params"]:\n                state = self.state[p]'),
    ]),
    Mutant('cifar-unpack-failure-not-named', 'tests/test_data.py -k cannot_be_unpacked', [
        ('fastjem/data.py', '        except (tarfile.TarError, OSError) as err:\n            raise DataNotFoundError(f"{root / archive} is there, but it could not be unpacked',
         '        except tarfile.TarError as err:\n            raise DataNotFoundError(f"{root / archive} is there, but it could not be unpacked'),
    ]),
    Mutant('cifar-whole-folder-unpacked-again', 'tests/test_data.py -k unpacked_offline', [
        ('fastjem/data.py', '    return all((folder / f).is_file() for f, _ in files)', '    return False and all((folder / f).is_file() for f, _ in files)'),
    ]),
    Mutant('split-folders-need-class-folders', 'tests/test_data.py -k splits_without_class_folders', [
        ('fastjem/data.py', '    if not (train.is_dir() and any(p.is_dir() for p in train.iterdir())):\n        return None', '    if not train.is_dir():\n        return None'),
    ]),
    Mutant('flat-splits-taken-as-classes', 'tests/test_data.py -k splits_without_class_folders', [
        ('fastjem/data.py', '    if "train" in splits and len(classes) > 1 and all(splits):', '    if False:'),
    ]),
    Mutant('mean-draws-recordless-combinations', 'tests/test_curves.py -k waits_for_records', [
        ('fastjem/curves.py', '        ms = [m for m in ms if m.train]\n        if not ms:\n            continue', '        ms = [m for m in ms if m.train]\n        if False:\n            continue'),
    ]),
    Mutant('mean-without-records-not-said', 'tests/test_curves.py -k waits_for_records', [
        ('fastjem/curves.py', '    if not drawn:\n        raise ConfigError(f"no training records to plot yet in {folder} (the first', '    if False:\n        raise ConfigError(f"no training records to plot yet in {folder} (the first'),
    ]),
    Mutant('archive-splits-class-mismatch-unchecked', 'tests/test_data.py -k bad_archives', [
        ('fastjem/data.py', '        if class_order(found[held_out]) != classes:', '        if False:'),
    ]),
    Mutant('unreadable-authors-file-not-said', 'tests/test_convert.py -k conversion_errors', [
        ('fastjem/convert.py', '        raise CheckpointError(f"cannot read {path} as a checkpoint of the authors\' JEM code "\n                              f"({error_line(err)})") from err', '        raise ValueError("unreadable") from err'),
    ]),
    Mutant('device-data-never-augments', 'tests/test_data.py -k draws_augmented', [
        ('fastjem/data.py', '        if self.augment_enabled:\n            return augment(', '        if False:\n            return augment('),
    ]),
    Mutant('device-data-always-augments', 'tests/test_data.py -k draws_augmented', [
        ('fastjem/data.py', '        if self.augment_enabled:\n            return augment(', '        if True:\n            return augment('),
    ]),
    Mutant('sweep-failed-runs-not-said', 'tests/test_sweep.py -k reused_for_another', [
        ('fastjem/cli.py', '        print(f"{counted(len(result[\'failed\']), \'run\')} failed (above): mend the cause and run the same command "\n              "again" + (', '        print("" + ('),
    ]),
    Mutant('sweep-where-to-read-again-not-said', 'tests/test_sweep.py -k reused_for_another', [
        ('fastjem/cli.py', '    print(f"\\nper run and again: fastjem runs {shlex.quote(str(folder))}; summary: {folder / \'results.json\'}")', '    pass'),
    ]),
    Mutant('train-tensorboard-line-not-printed', 'tests/test_board.py -k says_where', [
        ('fastjem/cli.py', '        print(f"  tensorboard     {board} (tensorboard --logdir {shlex.quote(board)})")', '        pass'),
    ]),
    Mutant('train-curves-line-not-printed', 'tests/test_board.py -k says_where', [
        ('fastjem/cli.py', '        print(f"  curves          {summary[\'curves\']}")', '        pass'),
    ]),
    Mutant('dist-best-health-not-shared', 'tests/test_distributed.py -k health_verdict', [
        ('fastjem/train.py', '            unhealthy = not self.guard.healthy()\n            if self.dist.enabled:\n                unhealthy = any_rank(unhealthy, self.device)\n            if unhealthy:\n                return False', '            unhealthy = not self.guard.healthy()\n            if unhealthy:\n                return False'),
    ]),
    Mutant('dist-end-health-not-shared', 'tests/test_distributed.py -k health_verdict', [
        ('fastjem/train.py', '                unhealthy = not self.guard.healthy()\n                if self.dist.enabled:\n                    unhealthy = any_rank(unhealthy, self.device)\n                if unhealthy and stopping:\n',
         '                unhealthy = not self.guard.healthy()\n                if unhealthy and stopping:\n'),
    ]),
    Mutant('flat-splits-in-archives-taken-as-classes', 'tests/test_data.py -k splits_without_class_folders', [
        ('fastjem/data.py', '    _check_not_flat_splits(names, classes)\n', ''),
    ]),
    Mutant('bench-cast-weights-not-refreshed', 'tests/test_cli.py -k times_the_sampling_call', [
        ('fastjem/benchmark.py', '        if cast_copy is not None:\n            cast_copy.refresh_()\n        return run(x0)', '        return run(x0)'),
    ]),
    Mutant('dist-initial-weights-not-broadcast', 'tests/test_distributed.py -k health_verdict', [
        ('fastjem/distributed.py', '    for t in list(module.parameters()) + list(module.buffers()):\n        dist.broadcast(t.data, src=0)', '    pass'),
    ]),
    Mutant('resume-kept-checkpoint-continues-in-checkpoints', 'tests/test_cli.py -k continued_from_a_kept', [
        ('fastjem/train.py', '    if folder.name == "checkpoints" and any((folder.parent / n).exists() for n in ("checkpoint.pt", "metrics.jsonl")):', '    if False:'),
    ]),
    Mutant('auroc-takes-nan', 'tests/test_eval.py -k refuse_inputs_they_cannot', [
        ('fastjem/eval/metrics.py', '    if torch.isnan(pos).any() or torch.isnan(neg).any():', '    if False:'),
    ]),
    Mutant('ece-takes-bad-confidences', 'tests/test_eval.py -k refuse_inputs_they_cannot', [
        ('fastjem/eval/metrics.py', '    if not (torch.isfinite(conf).all() and (conf >= 0).all() and (conf <= 1).all()):', '    if not (conf >= 0).all():'),
    ]),
    Mutant('fid-classifier-features-unchecked', 'tests/test_eval.py -k module_class_instance', [
        ('fastjem/eval/tasks.py', '        if not hasattr(em.model, "features"):', '        if False:'),
    ]),
    Mutant('sweep-unreadable-run-options-unnamed', 'tests/test_sweep.py -k options_cannot_be_read', [
        ('fastjem/sweep.py', '        except (OSError, ValueError, TypeError, ConfigError) as err:\n            raise ConfigError(f"{path} is not a run\'s options', '        except ZeroDivisionError as err:\n            raise ConfigError(f"{path} is not a run\'s options'),
    ]),
    Mutant('sweep-unwritable-folder-unsaid', 'tests/test_sweep.py -k one_grid_in_its_order', [
        ('fastjem/sweep.py', '    except OSError as err:\n        raise ConfigError(f"cannot write the sweep into {folder}', '    except ZeroDivisionError as err:\n        raise ConfigError(f"cannot write the sweep into {folder}'),
    ]),
    Mutant('sweep-unmakeable-folder-unsaid', 'tests/test_sweep.py -k cannot_be_made', [
        ('fastjem/sweep.py', '    except OSError as err:\n        raise ConfigError(f"cannot make the sweep folder', '    except ZeroDivisionError as err:\n        raise ConfigError(f"cannot make the sweep folder'),
    ]),
    Mutant('sweep-start-line-unsaid', 'tests/test_sweep.py -k reused_for_another', [
        ('fastjem/sweep.py', '    log(f"sweep: {counted(len(runs), \'run\')} ({sizes} combination{\'s\' * (combos != 1)} x "\n        f"{counted(len(seeds), \'seed\')}) in {folder}")', '    pass'),
    ]),
    Mutant('resume-misfit-network-unsaid', 'tests/test_custom.py -k own_network_and_data', [
        ('fastjem/train.py', '        except RuntimeError as err:\n            raise CheckpointError(f"checkpoint {ckpt.get(\'path\', \'\')} does not fit this network: "', '        except ZeroDivisionError as err:\n            raise CheckpointError(f"checkpoint {ckpt.get(\'path\', \'\')} does not fit this network: "'),
    ]),
    Mutant('init-weights-misfit-unsaid', 'tests/test_custom.py -k own_network_and_data', [
        ('fastjem/train.py', '        except RuntimeError as err:\n            raise CheckpointError(f"--init-weights {source[\'path\']} does not fit this network: "', '        except ZeroDivisionError as err:\n            raise CheckpointError(f"--init-weights {source[\'path\']} does not fit this network: "'),
    ]),
    Mutant('resume-folder-continues-beside-it', 'tests/test_cli.py -k resume_into_another_folder', [
        ('fastjem/train.py', '    path = Path(path)\n    if path.is_dir():\n        return path\n    folder = path.resolve().parent', '    path = Path(path)\n    folder = path.resolve().parent'),
    ]),
    Mutant('eval-empty-folder-is-an-empty-history', 'tests/test_history.py -k without_checkpoints', [
        ('fastjem/eval/history.py', '    if not files:\n        return None\n\n    def iteration', '\n    def iteration'),
    ]),
    Mutant('eval-history-counts-hidden-partial-writes', 'tests/test_history.py -k without_checkpoints', [
        ('fastjem/eval/history.py', 'files = [p for p in path.glob("*.pt") if not p.name.startswith(".")]', 'files = list(path.glob("*.pt"))'),
    ]),
    Mutant('runs-csv-gets-a-second-table', 'tests/test_sweep.py -k every_combination', [
        ('fastjem/cli.py', '    if fmt != "csv":  # one table per CSV', '    if True:  # one table per CSV'),
    ]),
    Mutant('calibration-compares-across-datasets', 'tests/test_eval.py -k another_dataset', [
        ('fastjem/eval/tasks.py', '    if other.info.name != em.info.name:\n        return other.info.name, em.info.name', '    if False:\n        return other.info.name, em.info.name'),
    ]),
    Mutant('ood-nan-scores-raise-valueerror', 'tests/test_eval.py -k one_image_fid', [
        ('fastjem/eval/tasks.py', '        except ValueError as err:\n            raise ConfigError(f"OOD scores of {label}', '        except ZeroDivisionError as err:\n            raise ConfigError(f"OOD scores of {label}'),
    ]),
    Mutant('fid-one-test-image-not-said', 'tests/test_eval.py -k one_image_fid', [
        ('fastjem/eval/tasks.py', '    if len(real) < 2:\n        raise ConfigError(f"FID compares', '    if False:\n        raise ConfigError(f"FID compares'),
    ]),
    Mutant('history-plot-x-axis-unlabelled', 'tests/test_history.py -k three_panels', [
        ('fastjem/eval/history.py', '    for ax in axes[-1]:\n        ax.set_xlabel("iteration")\n', ''),
    ]),
    Mutant('failed-run-leaves-tensorboard-open', 'tests/test_board.py -k still_writes', [
        ('fastjem/train.py', '            if self.board is not None and (stopping or self.iteration < self.total_iters):\n                self.board.close()', '            if False:\n                self.board.close()'),
    ]),
    Mutant('sweep-one-run-said-runs', 'tests/test_sweep.py -k reused_for_another_sweep', [
        ('fastjem/runs.py', '    return f"{n} {word}{\'s\' * (n != 1)}"', '    return f"{n} {word}s"'),
    ]),
    Mutant('sweep-all-known-said-n-of-n', 'tests/test_sweep.py -k how_long_each_run', [
        ('fastjem/sweep.py', '            which = f"the {counted(known, \'run\')}" if known == len(to_go) else \\\n                f"{known} of the {counted(len(to_go), \'run\')}"', '            which = f"{known} of the {counted(len(to_go), \'run\')}"'),
    ]),
    Mutant('resume-rollback-point-every-rank-kept', 'tests/test_distributed.py -k rolls_back_where', [
        ('fastjem/train.py', '            if snapshot is not None and "ranks" in snapshot:\n                # data-parallel: the file holds every rank\'s local state; this rank keeps its own\n                ranks = snapshot.pop("ranks")\n                if len(ranks) == self.dist.world:\n                    snapshot.update(ranks[self.dist.rank])\n                else:\n                    self.log(f"resume: the rollback point {source.name} holds {len(ranks)} processes\' states, not "\n                             f"{self.dist.world}; the divergence guard rolls back to this checkpoint instead")\n                    snapshot = None\n', ''),
    ]),
    Mutant('runs-one-epoch-said-epochs', 'tests/test_runs.py -k length_in_epochs', [
        ('fastjem/runs.py', "epoch{'s' * (epochs != 1)}", 'epochs'),
    ]),
    Mutant('fid-feature-module-left-training', 'tests/test_eval.py -k features_from_a_module', [
        ('fastjem/eval/tasks.py', '            return obj.to(em.device).eval()', '            return obj.to(em.device)'),
    ]),
    Mutant('fid-torchmetrics-missing-unsaid', 'tests/test_eval.py -k too_old_for_local', [
        ('fastjem/eval/tasks.py', '    except ImportError as err:\n        raise FIDUnavailableError(\n            "FID with Inception weights uses torchmetrics, which is not installed: pip install \'torchmetrics[image]\' "\n            "(or compute FID from any feature extractor with --features-model, which needs nothing extra)") from err\n', '    except ImportError:\n        raise\n'),
    ]),
    Mutant('fid-old-torchmetrics-unsaid', 'tests/test_eval.py -k too_old_for_local', [
        ('fastjem/eval/tasks.py', '    except TypeError as err:\n        raise FIDUnavailableError(f"this torchmetrics cannot load local Inception weights ({err}); upgrade it: "\n                                  "pip install -U \'torchmetrics[image]\'") from err\n', ''),
    ]),
    Mutant('fid-buffer-source-without-buffer-silent', 'tests/test_eval.py -k "one_clear_error and fid-no-buffer"', [
        ('fastjem/eval/tasks.py', '    if source == "buffer" and em.buffer is None:\n        raise ConfigError(f"{em.path} has no replay buffer ({em.label}): use --source fresh")\n', ''),
    ]),
    Mutant('eval-all-unknown-ood-set-found-late', 'tests/test_eval.py -k typo_is_an_error', [
        ('fastjem/eval/tasks.py', '    if unknown:  # before the other tasks run, not after\n        raise OODSetError(', '    if False:\n        raise OODSetError('),
    ]),
    Mutant('export-input-line-unsaid', 'tests/test_export.py -k free_batch', [
        ('fastjem/cli.py', '    print(f"  input   images [B, {\', \'.join(map(str, m[\'input\'][\'shape\'][1:]))}] in [-1, 1] "\n          f"({m[\'input\'][\'pixels\']})")\n', ''),
    ]),
    Mutant('cli-list-options-left-lists', 'tests/test_cli.py -k same_list_options', [
        ('fastjem/cli.py', '    for key in ("decay_epochs", "remedies"):\n        if key in overrides:\n            overrides[key] = tuple(overrides[key])\n', ''),
    ]),
    Mutant('sweep-signal-exits-zero', 'tests/test_sweep.py -k signal_stopped', [
        ('fastjem/cli.py', '    if result["interrupted"]:\n        return stopped_status(result["stopped_by"])\n', ''),
    ]),
    Mutant('ddp-every-rank-sums-up', 'tests/test_distributed.py -k per_rank_buffers', [
        ('fastjem/cli.py', '    if not trainer.dist.is_main:\n        return 0\n    elapsed', '    elapsed'),
    ]),
    Mutant('readme-figure-typed', 'tests/test_readme.py -k benchmarks_wrote', [
        ('README.md', '| 10.5 (bf16) | 11.1 (bf16) |', '| 10.5 (bf16) | 11.9 (bf16) |'),
    ]),
    Mutant('report-drops-a-results-file', 'tests/test_readme.py -k benchmarks_wrote', [
        ('bench/report.py', '            data["_file"] = path.name\n', '            if "H200" in path.name and kind == "cifar":\n                continue\n            data["_file"] = path.name\n'),
    ]),
    Mutant('readme-cites-a-missing-result', 'tests/test_readme.py -k cites', [
        ('README.md', '| `bench/results/steps-2026-12-04T162455-NVIDIA-H200.json`, git e1ce37d |', '| `bench/results/steps-2026-12-04T162456-NVIDIA-H200.json`, git e1ce37d |'),
    ]),
    Mutant('report-takes-a-renamed-smoke-run', 'tests/test_bench.py -k renders_table', [
        ('bench/report.py', '            if data.get("smoke") and not include_smoke:\n                continue\n', ''),
    ]),
    Mutant('bench-drops-engine-notes', 'tests/test_bench.py -k resolved_is_recorded', [
        ('bench/steps_per_sec.py', '        out["notes"] = list(engine.notes)', '        pass'),
    ]),
    Mutant('bench-precision-as-asked', 'tests/test_bench.py -k resolved_is_recorded', [
        ('bench/steps_per_sec.py', '    if resolved:\n        return resolved\n', ''),
    ]),
    Mutant('bench-gate-missing-gradient-unnamed', 'tests/test_bench.py -k other_chains_other_gradients', [
        ('bench/steps_per_sec.py', '            if p.grad is None:\n                raise AssertionError(f"fastjem\'s loss gave no gradient for {k}")\n', ''),
    ]),
    Mutant('bench-cuda-ablations-not-timed', 'tests/test_bench.py -k ablations_and_the_asked', [
        ('bench/steps_per_sec.py', '    if device.type == "cuda":\n        candidates += [', '    if False:\n        candidates += ['),
    ]),
    Mutant('bench-asked-parts-not-timed', 'tests/test_bench.py -k ablations_and_the_asked', [
        ('bench/steps_per_sec.py', '        if sgld_parts > 0:\n            # candidate', '        if False:\n            # candidate'),
    ]),
    Mutant('bench-overlap-not-timed', 'tests/test_bench.py -k ablations_and_the_asked', [
        ('bench/steps_per_sec.py', '        if overlap:\n            # candidate', '        if False:\n            # candidate'),
    ]),
    Mutant('bench-bar-engine-failure-recorded-as-optional', 'tests/test_bench.py -k bar_engine_that_fails', [
        ('bench/steps_per_sec.py', "            except Exception as err:  # noqa: BLE001 - a candidate's failure is recorded, not fatal\n                if engine not in OPTIONAL_ENGINES:\n                    raise\n", "            except Exception as err:  # noqa: BLE001 - a candidate's failure is recorded, not fatal\n"),
    ]),
    Mutant('plot-panel-from-a-run-that-measured-nothing', 'tests/test_bench.py -k plot_draws', [
        ('bench/report.py', '        if any(c.get("engines") for c in rep.get("configs", [])):\n            latest[_device(rep)] = rep', '        latest[_device(rep)] = rep'),
    ]),
    Mutant('plot-bars-without-values', 'tests/test_bench.py -k plot_draws', [
        ('bench/report.py', '                ax.bar_label(bars, fmt="%.3g", fontsize=7)', '                pass'),
    ]),
    Mutant('plot-always-linear', 'tests/test_bench.py -k plot_draws', [
        ('bench/report.py', '        if values and max(values) / max(min(values), 1e-12) > 20:', '        if False:'),
    ]),
    Mutant('report-readme-without-markers-overwritten', 'tests/test_bench.py -k refuses_what_would_empty', [
        ('bench/report.py', '    if BEGIN not in text or END not in text or text.index(BEGIN) > text.index(END):\n        raise SystemExit', '    if BEGIN not in text and False:\n        raise SystemExit'),
    ]),
    Mutant('report-failed-cifar-run-row', 'tests/test_bench.py -k failed_cifar', [
        ('bench/report.py', '        if r.get("status") != "ok":\n            continue\n        rows.append(((_device(r), r["model"]', '        rows.append(((_device(r), r["model"]'),
    ]),
    Mutant('bench-bar-engine-warmup-failure-optional', 'tests/test_bench.py -k candidates_that_work', [
        ('bench/steps_per_sec.py', '        except Exception as err:\n            if r.name not in OPTIONAL_ENGINES:\n                raise\n            # a candidate', '        except Exception as err:\n            # a candidate'),
    ]),
    Mutant('bench-failed-candidate-worker-left-open', 'tests/test_bench.py -k candidates_that_work', [
        ('bench/steps_per_sec.py', '            runners.remove(r)\n            r.close()\n            continue', '            runners.remove(r)\n            continue'),
    ]),
    Mutant('bench-parts-candidate-gain-left-out', 'tests/test_bench.py -k candidates_that_work', [
        ('bench/steps_per_sec.py', '        if candidate:\n            wanted["parts_candidate_gain"]', '        if False:\n            wanted["parts_candidate_gain"]'),
    ]),
    Mutant('cifar-run-steady-none-crashes', 'tests/test_bench.py -k cifar_run_trains', [
        ('bench/cifar_run.py', '        print(f"cifar_it_per_s_steady: {steady:.3f}" if steady else "cifar_it_per_s_steady: not measured (the run "\n              f"ended within its {args.warmup} warm-up iterations: give it more --minutes, or a smaller --warmup)")', '        print(f"cifar_it_per_s_steady: {steady:.3f}")'),
    ]),
    Mutant('report-cifar-steady-none-crashes', 'tests/test_bench.py -k cifar_run_trains', [
        ('bench/report.py', "{_num(r['it_per_s_steady'], '{:.2f}')}", "{r['it_per_s_steady']:.2f}"),
    ]),
    Mutant('cifar-run-no-steady-clock', 'tests/test_bench.py -k cifar_run_trains', [
        ('bench/cifar_run.py', '                if it == args.warmup:\n                    sync(device)', '                if False:\n                    sync(device)'),
    ]),
    Mutant('cifar-run-ignores-its-minutes', 'tests/test_bench.py -k cifar_run_trains', [
        ('bench/cifar_run.py', '            rep["train_budget_seconds"] = budget', '            budget = 0.0\n            rep["train_budget_seconds"] = budget'),
    ]),
    Mutant('buffer-init-order-not-rotated', 'tests/test_bench.py -k buffer_init_quality_trains', [
        ('bench/buffer_init_quality.py', '        shift = k % len(args.variants)', '        shift = 0'),
    ]),
    Mutant('buffer-init-population-std', 'tests/test_bench.py -k buffer_init_quality_trains', [
        ('bench/buffer_init_quality.py', 'statistics.stdev(r["test_acc"] for r in mine)', 'statistics.pstdev(r["test_acc"] for r in mine)'),
    ]),
    Mutant('precision-quality-diff-reversed', 'tests/test_bench.py -k precision_quality_sets', [
        ('bench/precision_quality.py', '    diffs = [acc[s, low] - acc[s, base] for s', '    diffs = [acc[s, base] - acc[s, low] for s'),
    ]),
    Mutant('precision-quality-smoke-as-measurement', 'tests/test_bench.py -k precision_quality_sets', [
        ('bench/precision_quality.py', 'smoke=args.iters > 0)', 'smoke=False)'),
    ]),
    Mutant('precision-quality-iters-off-by-one', 'tests/test_bench.py -k precision_quality_sets', [
        ('bench/precision_quality.py', 'configs.append((cfg.replace(iters=args.iters) if args.iters else cfg).validate())', 'configs.append((cfg.replace(iters=args.iters + 1) if args.iters else cfg).validate())'),
    ]),
    Mutant('bench-ratio-lines-per-config-dropped', 'tests/test_bench.py -k ratio_lines_give', [
        ('bench/steps_per_sec.py', '        for key, value in c.get("ratios", {}).items():\n            lines.append', '        for key, value in {}.items():\n            lines.append'),
    ]),
    Mutant('bench-ratio-lines-mfu-dropped', 'tests/test_bench.py -k ratio_lines_give', [
        ('bench/steps_per_sec.py', '        if mfu is not None:\n            lines.append(f"mfu_{key}: {mfu:.4f}{tag}")', '        if False:\n            lines.append(f"mfu_{key}: {mfu:.4f}{tag}")'),
    ]),
    Mutant('bench-ratio-lines-refused-said-measured', 'tests/test_bench.py -k ratio_lines_give', [
        ('bench/steps_per_sec.py', '    if bar is None or not bar.get("ratios"):', '    if bar is None:'),
    ]),
    Mutant('report-markdown-file-not-written', 'tests/test_bench.py -k report_writes_readme_history', [
        ('bench/report.py', '    if args.markdown:\n        atomic_write_text(markdown', '    if False:\n        atomic_write_text(markdown'),
    ]),
    Mutant('report-unpack-silent', 'tests/test_bench.py -k report_unpacks', [
        ('bench/report.py', '        for name in unpacked:\n            print(f"unpacked {name}")', '        for name in ():\n            print(f"unpacked {name}")'),
    ]),
    Mutant('bench-unknown-config-accepted', 'tests/test_bench.py -k refuse_bad_options', [
        ('bench/steps_per_sec.py', '    if unknown:\n        p.error(f"unknown config(s)', '    if False:\n        p.error(f"unknown config(s)'),
    ]),
    Mutant('bench-compile-option-not-passed', 'tests/test_bench.py -k compile_options_reach', [
        ('bench/steps_per_sec.py', '    if args.compile is not None and not args.no_compile:\n        args.fastjem_overrides = {"compile": args.compile}', '    if False:\n        args.fastjem_overrides = {"compile": args.compile}'),
    ]),
    Mutant('bench-cuda-candidates-dropped-silently', 'tests/test_bench.py -k bar_engine_that_fails', [
        ('bench/steps_per_sec.py', '    if device.type != "cuda" and ignored:', '    if False:'),
    ]),
    Mutant('bench-skipped-config-left-out', 'tests/test_bench.py -k past_the_time_budget', [
        ('bench/steps_per_sec.py', '                report["configs"].append({"name": name, "batch_size": args.batch_size,\n                                          "status": "skipped: time budget"})\n                continue', '                continue'),
    ]),
    Mutant('sgld-study-negative-warmup-accepted', 'tests/test_bench.py -k refuse_bad_options', [
        ('bench/sgld_study.py', '    if args.warmup < 0:\n        p.error(f"--warmup must be >= 0, got {args.warmup}")', '    if False:\n        p.error(f"--warmup must be >= 0, got {args.warmup}")'),
    ]),
    Mutant('profile-negative-size-message-lost', 'tests/test_bench.py -k refuse_bad_options', [
        ('bench/profile_step.py', '        if getattr(args, name) < 0:\n            p.error(f"--{name.replace(\'_\', \'-\')} must be > 0 (or 0 for the device\'s default)")', '        if False:\n            p.error(f"--{name.replace(\'_\', \'-\')} must be > 0 (or 0 for the device\'s default)")'),
    ]),
    Mutant('bench-kernels-write-check-excuses-repeats', 'tests/test_bench.py -k kernel_benchmark_checks', [
        ('bench/bench_kernels.py', '        write()\n        assert torch.equal(buf, b_ref)\n',
         '        write()\n        assert torch.equal(buf, b_ref) or idx.unique().numel() < B\n'),
    ]),
    Mutant('bench-kernels-sample-check-skipped', 'tests/test_bench.py -k kernel_benchmark_checks', [
        ('bench/bench_kernels.py', '        assert torch.equal(out, kernels.buffer_sample_ref(buf, idx, 0.5, s_ref)) and torch.equal(s0, s_ref)', '        assert out.shape == kernels.buffer_sample_ref(buf, idx, 0.5, s_ref).shape'),
    ]),
    Mutant('bench-kernels-disabled-benchmark-crashes', 'tests/test_bench.py -k cpu_kernel_benchmark', [
        ('bench/bench_kernels.py', '    if benchmark.stats is not None:  # None under --benchmark-disable (each function runs once, untimed)\n        benchmark.extra_info["GBps"]', '    if True:\n        benchmark.extra_info["GBps"]'),
    ]),
    Mutant('bench-kernels-cpu-report-gbps-wrong', 'tests/test_bench.py -k cpu_kernel_benchmark', [
        ('bench/bench_kernels.py', '"fused_GBps": case.bytes_moved / s_fused / 1e9, "fraction_of_peak_bandwidth": None,', '"fused_GBps": case.bytes_moved / s_eager / 1e9, "fraction_of_peak_bandwidth": None,'),
    ]),
    Mutant('bench-kernels-in-loop-case-dropped', 'tests/test_bench.py -k full_size', [
        ('bench/bench_kernels.py', '        cases.append(_sgld_case((64, 3, 32, 32), device, backend, in_loop=True))', '        pass'),
    ]),
    Mutant('sgld-study-failed-variant-stops-the-study', 'tests/test_bench.py -k failed_variant', [
        ('bench/sgld_study.py', '            save()\n            print(f"{name}: failed ({type(err).__name__}: {err})")\n            continue', '            raise'),
    ]),
    Mutant('sgld-study-samples-against-the-previous-variant', 'tests/test_bench.py -k failed_variant', [
        ('bench/sgld_study.py', '        if reference is None:\n            reference = samples', '        reference = samples'),
    ]),
    Mutant('sgld-study-variant-line-unprinted', 'tests/test_bench.py -k failed_variant', [
        ('bench/sgld_study.py', '        print(f"{name:<20} SGLD step', '        (f"{name:<20} SGLD step'),
    ]),
    Mutant('cpu-compile-study-smoke-overrides-given-sizes', 'tests/test_bench.py -k cpu_compile_study_smoke', [
        ('bench/cpu_compile_study.py', '        smoke_sizes(p, args, {"depth": 10, "width": 1, "batch_size": 2, "calls": 2, "windows": 1, "sgld_steps": 2})', '        args.depth, args.width, args.batch_size, args.calls, args.windows, args.sgld_steps = 10, 1, 2, 2, 1, 2'),
    ]),
    Mutant('cpu-compile-study-sizes-unchecked', 'tests/test_bench.py -k refuse_bad_options', [
        ('bench/cpu_compile_study.py', '    check_sizes(p, args.depth, args.width, batch_size=args.batch_size, calls=args.calls, windows=args.windows)', '    check_sizes(p, None, args.width, calls=args.calls)'),
    ]),
    Mutant('cpu-compile-study-negative-sgld-steps', 'tests/test_bench.py -k refuse_bad_options', [
        ('bench/cpu_compile_study.py', '    if args.sgld_steps < 0:', '    if args.sgld_steps < -1:'),
    ]),
    Mutant('mutants-never-stale', 'tests/test_readme.py -k every_mutant', [
        ('tests/mutants.py', '        if current.count(text) != 1:\n            return f"{file}', '        if False:\n            return f"{file}'),
    ]),
    Mutant('sgld-kernel-no-offset', 'tests/test_kernels_sgld.py -k launch_configuration', [
        ('kernels/sgld.py', '        b_noise = normal_block(tl.load(p_rng), o_ctr + tl.load(p_rng + 1), QUARTER)  # [BLOCK]', '        b_noise = normal_block(tl.load(p_rng), o_ctr, QUARTER)  # [BLOCK]'),
    ]),
    Mutant('sgld-kernel-grad-unscaled', 'tests/test_kernels_sgld.py -k launch_configuration', [
        ('kernels/sgld.py', '        b_g = tl.load(p_grad + o_x, mask=m_x, other=0.0).to(tl.float32)\n        b_noise', '        b_g = 2 * tl.load(p_grad + o_x, mask=m_x, other=0.0).to(tl.float32)\n        b_noise'),
    ]),
    Mutant('bench-kernels-gbps-extra-info-mean', 'tests/test_bench.py -k cpu_kernel_benchmark', [
        ('bench/bench_kernels.py', 'benchmark.extra_info["GBps"] = case.bytes_moved / benchmark.stats.stats.median / 1e9', 'benchmark.extra_info["GBps"] = case.bytes_moved / benchmark.stats.stats.min / 1e9'),
    ]),
    Mutant('bench-kernels-cpu-table-unprinted', 'tests/test_bench.py -k cpu_kernel_benchmark', [
        ('bench/bench_kernels.py', '        print(f"{r[\'op\']:<40} fused {r[\'fused_ms\'] * 1e3:8.1f} us  eager {r[\'eager_ms\'] * 1e3:8.1f} us"\n              f"  x{r[\'speedup_vs_eager\']:.2f}  {r[\'fused_GBps\']:6.2f} GB/s  copy {r[\'copy_ms\'] * 1e3:8.1f} us")', '        pass'),
    ]),
    Mutant('bench-kernels-peak-first-key', 'tests/test_bench.py -k kernel_benchmark_checks', [
        ('bench/bench_kernels.py', 'PEAK_BANDWIDTH = {"H200": 4.8e12, "H100 PCIe": 2.0e12, "H100": 3.35e12}', 'PEAK_BANDWIDTH = {"H200": 4.8e12, "H100": 3.35e12, "H100 PCIe": 2.0e12}'),
    ]),
    Mutant('sgld-kernel-interpreter-only-python', 'tests/test_kernels_compile.py', [
        ('kernels/sgld.py', '        b_x = b_x + alpha * b_g + sigma * b_noise', '        b_x = b_x + alpha * b_g + sigma * b_noise * float(n > 0)'),
    ]),
    Mutant('buffer-kernel-interpreter-only-python', 'tests/test_kernels_compile.py', [
        ('kernels/buffer.py', '        b_x = tl.load(p_x + o_b[:, None] * D + o_d[None, :], mask=m_bd)', '        b_x = tl.load(p_x + o_b[:, None] * D + o_d[None, :], mask=m_bd) * int(D > 0)'),
    ]),
    Mutant('energy-kernel-interpreter-only-python', 'tests/test_kernels_compile.py', [
        ('kernels/energy.py', '                b_d = tl.exp(b_x - b_m[:, None]) * b_scale[:, None]', '                b_d = tl.exp(b_x - b_m[:, None]) * b_scale[:, None] * float(K > 0)'),
    ]),
    Mutant('bench-kernels-sgld-fused-times-nothing', 'tests/test_bench.py -k kernel_benchmark_checks', [
        ('bench/bench_kernels.py', '    def fused():\n        step(x, grad, ALPHA, SIGMA, state)', '    def fused():\n        pass'),
    ]),
    Mutant('bench-kernels-sgld-eager-no-noise', 'tests/test_bench.py -k kernel_benchmark_checks', [
        ('bench/bench_kernels.py', '        x.add_(ALPHA * grad).add_(SIGMA * torch.randn_like(x))', '        x.add_(ALPHA * grad)'),
    ]),
    Mutant('bench-kernels-lse-eager-no-backward', 'tests/test_bench.py -k kernel_benchmark_checks', [
        ('bench/bench_kernels.py', '        return e, (-torch.softmax(x, dim=1) * upstream[:, None]).to(dtype)', '        return e, x.to(dtype)'),
    ]),
    Mutant('bench-kernels-sample-eager-no-gather', 'tests/test_bench.py -k kernel_benchmark_checks', [
        ('bench/bench_kernels.py', '        x = buf[idx]\n        reset', '        x = buf[:B]\n        reset'),
    ]),
    Mutant('bench-kernels-write-eager-nothing', 'tests/test_bench.py -k kernel_benchmark_checks', [
        ('bench/bench_kernels.py', '    def write_eager():\n        _scatter_eager(buf, idx, rows)', '    def write_eager():\n        pass'),
    ]),
    Mutant('bench-kernels-sample-fused-other-prob', 'tests/test_bench.py -k kernel_benchmark_checks', [
        ('bench/bench_kernels.py', '        return kernels.buffer_sample(buf, idx, RESET_PROB, state, backend=backend)', '        return kernels.buffer_sample(buf, idx, 0.0, state, backend=backend)'),
    ]),
    Mutant('bench-kernels-lse-energy-unchecked', 'tests/test_bench.py -k kernel_benchmark_checks', [
        ('bench/bench_kernels.py', '            torch.testing.assert_close(e, e_ref.detach(), atol=1e-4, rtol=1e-5)\n', ''),
    ]),
    Mutant('bench-kernels-sgld-state-unchecked', 'tests/test_bench.py -k kernel_benchmark_checks', [
        ('bench/bench_kernels.py', '        assert torch.equal(state, s_ref)\n        # the eager sequence: the same drift', '        # the eager sequence: the same drift'),
    ]),
    Mutant('bench-kernels-write-untouched-rows-unchecked', 'tests/test_bench.py -k kernel_benchmark_checks', [
        ('bench/bench_kernels.py', '        assert torch.equal(buf[once], b_ref[once])\n', ''),
    ]),
    Mutant('bench-kernels-pytest-benchmark-ungated', 'tests/test_bench.py -k time_only_what_passes', [
        ('bench/bench_kernels.py', '    # correctness gate: no number is reported for an op that disagrees with its reference\n    case.check()', '    # correctness gate: no number is reported for an op that disagrees with its reference'),
    ]),
    Mutant('cpu-compile-study-patched-sgld-draws-nothing', 'tests/test_bench.py -k cpu_compile_study_smoke', [
        ('bench/cpu_compile_study.py', '        kernels.sgld_step_(x, grad(x), -sampler.step_size, sampler.noise, rng, backend=sampler.backend, base=base,\n                           advance=advance)', '        pass'),
    ]),
    Mutant('cpu-compile-study-summary-unprinted', 'tests/test_bench.py -k cpu_compile_study_smoke', [
        ('bench/cpu_compile_study.py', '            print(f"  {what:6s} {name:19s} {r[\'ms\']:8.2f} ms   {r[\'max_abs_diff\']:.1e}   "', '            (f"  {what:6s} {name:19s} {r[\'ms\']:8.2f} ms   {r[\'max_abs_diff\']:.1e}   "'),
    ]),
    Mutant('bench-kernels-eager-sgld-unchecked', 'tests/test_bench.py -k kernel_benchmark_checks', [
        ('bench/bench_kernels.py', '        assert abs(float(z.mean())) < 0.1 and abs(float(z.std()) - 1) < 0.1, (float(z.mean()), float(z.std()))\n', ''),
    ]),
    Mutant('bench-kernels-eager-sample-unchecked', 'tests/test_bench.py -k kernel_benchmark_checks', [
        ('bench/bench_kernels.py', '        assert 2 * int(kept.sum()) > B, int(kept.sum())\n', ''),
    ]),
    Mutant('bench-kernels-write-repeats-unchecked', 'tests/test_bench.py -k kernel_benchmark_checks', [
        ('bench/bench_kernels.py', '        write()\n        assert torch.equal(buf, b_ref)\n', '        write()\n'),
    ]),
    Mutant('bench-kernels-cuda-fraction-of-graph-time', 'tests/test_bench.py -k dry_run', [
        ('bench/bench_kernels.py', '                "fraction_of_peak_bandwidth": gbps * 1e9 / peak if peak else None,', '                "fraction_of_peak_bandwidth": gbps_graph * 1e9 / peak if peak else None,'),
    ]),
    Mutant('bench-kernels-cuda-copy-fraction-of-fused', 'tests/test_bench.py -k dry_run', [
        ('bench/bench_kernels.py', '                "copy_graph_fraction_of_peak_bandwidth": gbps_copy * 1e9 / peak if peak else None,', '                "copy_graph_fraction_of_peak_bandwidth": gbps_graph * 1e9 / peak if peak else None,'),
    ]),
    Mutant('bench-kernels-sweep-best-is-slowest', 'tests/test_bench.py -k dry_run', [
        ('bench/bench_kernels.py', '        if key not in best or r["graph_us"] < best[key]["graph_us"]:', '        if key not in best or r["graph_us"] > best[key]["graph_us"]:'),
    ]),
    Mutant('bench-kernels-sweep-orders-unprinted', 'tests/test_bench.py -k dry_run', [
        ('bench/bench_kernels.py', '            if first is not None:\n                print(', '            if False:\n                print('),
    ]),
    Mutant('bench-kernels-cuda-graph-speedup-unreplayed', 'tests/test_bench.py -k dry_run', [
        ('bench/bench_kernels.py', '                "graph_speedup_vs_eager": ms_eager_graph / ms_fused_graph,', '                "graph_speedup_vs_eager": ms_eager / ms_fused,'),
    ]),
    Mutant('bench-kernels-sweep-gather-configs-for-write', 'tests/test_bench.py -k dry_run', [
        ('bench/bench_kernels.py', 'moved, WRITE_CONFIGS, run_write, check_write, peak)', 'moved, SAMPLE_CONFIGS, run_write, check_write, peak)'),
    ]),
    Mutant('sgld-study-precision-unresolved', 'tests/test_bench.py -k sgld_study_smoke', [
        ('bench/sgld_study.py', '    args.precision = args.precision or ("bf16" if cuda else "fp32")\n', ''),
    ]),
    Mutant('cpu-compile-study-patch-not-applied', 'tests/test_bench.py -k cpu_compile_study_smoke', [
        ('bench/cpu_compile_study.py', '    sampler.step_ = step_\n', ''),
    ]),
    Mutant('cpu-compile-study-race-trains-nothing', 'tests/test_bench.py -k cpu_compile_study_smoke', [
        ('bench/cpu_compile_study.py', 'out = _race({"eager": eager.train_step, "compiled-sgld-gradient": patched.train_step}, None, n, windows)', 'out = _race({"eager": lambda: None, "compiled-sgld-gradient": lambda: None}, None, n, windows)'),
    ]),
    Mutant('peak-flops-never-known', 'tests/test_bench.py -k datasheet', [
        ('bench/env_info.py', '            return peaks.get(precision)', '            return peaks.get("no such precision")'),
    ]),
    Mutant('peak-flops-h100-before-pcie', 'tests/test_bench.py -k datasheet', [
        ('bench/env_info.py', '    "H100 PCIe": {"bf16": 756e12, "tf32": 378e12, "fp32": 51e12},\n', ''),
        ('bench/env_info.py', '    "H200": {"bf16"', '    "H100 PCIe": {"bf16": 756e12, "tf32": 378e12, "fp32": 51e12},\n    "H200": {"bf16"'),
    ]),
    Mutant('sgld-kernel-mask-hides-alignment', 'tests/test_kernels_compile.py -k 16_bytes', [
        ('kernels/sgld.py', '        m_x = o_x < n\n', '        m_x = o_x <= n - 1\n'),
    ]),
    Mutant('buffer-sample-kernel-mask-hides-alignment', 'tests/test_kernels_compile.py -k 16_bytes', [
        ('kernels/buffer.py', '        m_bd = m_b[:, None] & (o_d < D)[None, :]\n        if ROWS_FIRST:', '        m_bd = m_b[:, None] & (o_d <= D - 1)[None, :]\n        if ROWS_FIRST:'),
    ]),
    Mutant('buffer-write-kernel-mask-hides-alignment', 'tests/test_kernels_compile.py -k 16_bytes', [
        ('kernels/buffer.py', '        m_bd = m_b[:, None] & (o_d < D)[None, :]\n        b_x', '        m_bd = m_b[:, None] & (o_d <= D - 1)[None, :]\n        b_x'),
    ]),
    Mutant('convert-unknown-norm-taken-for-none', 'tests/test_convert.py -k refused_by_what', [
        ('fastjem/convert.py', '        raise CheckpointError(f"unknown normalisation layer with parameters {sorted(norm_keys)} (fastjem knows none, "\n                              "batch, instance and layer; the authors\' \'act\' norm is not supported)")', '        found = "none"  # unknown layers ignored'),
    ]),
    Mutant('convert-misfit-raw-error', 'tests/test_convert.py -k refused_by_what', [
        ('fastjem/convert.py', '    except RuntimeError as err:\n        raise CheckpointError(f"{src} does not fit', '    except KeyError as err:\n        raise CheckpointError(f"{src} does not fit'),
    ]),
    Mutant('load-model-given-net-misfit-blames-checkpoint', 'tests/test_custom.py -k own_network', [
        ('fastjem/eval/core.py', '        if given:\n', '        if False:\n'),
    ]),
    Mutant('load-model-misfit-raw-error', 'tests/test_eval.py -k more_bad_eval_input', [
        ('fastjem/eval/core.py', '    except RuntimeError as err:\n        why = str(err)', '    except KeyError as err:\n        why = str(err)'),
    ]),
    Mutant('bench-write-failure-traceback', 'tests/test_cli.py -k compares_precisions', [
        ('fastjem/cli.py', '    except OSError as err:\n        raise ConfigError(f"cannot write the results', '    except KeyError as err:\n        raise ConfigError(f"cannot write the results'),
    ]),
    Mutant('legacy-checkpoint-called-damaged', 'tests/test_train.py -k bytes_changed', [
        ('fastjem/checkpoint.py', '        return None  # not a zip (a legacy torch file): nothing to check against', '        return "the whole file"  # not a zip'),
    ]),
    Mutant('runs-old-config-crashes-the-table', 'tests/test_runs.py -k without_its_config', [
        ('fastjem/runs.py', '        except (FastJEMError, TypeError):\n            pass', '        except KeyError:\n            pass'),
    ]),
    Mutant('quick-run-precision-not-passed-on', 'tests/test_bench.py -k shortened_quick_run', [
        ('bench/quick_run.py', '        cfg = cfg.replace(precision=args.precision)', '        cfg = cfg.replace()'),
    ]),
    Mutant('quick-run-classifier-only-not-passed-on', 'tests/test_bench.py -k shortened_quick_run', [
        ('bench/quick_run.py', '        cfg = cfg.replace(px_weight=0.0, pxy_weight=0.0)', '        cfg = cfg.replace(pxy_weight=0.0)'),
    ]),
    Mutant('precision-quality-same-precision-twice', 'tests/test_bench.py -k refuse_bad_options', [
        ('bench/precision_quality.py', ' or args.precisions[0] == args.precisions[1]:', ' or args.precisions[0] is None:'),
    ]),
    Mutant('buffer-init-quality-unknown-init-accepted', 'tests/test_bench.py -k refuse_bad_options', [
        ('bench/buffer_init_quality.py', '    if init not in BUFFER_INITS or not steps.isdigit():', '    if not steps.isdigit():'),
    ]),
    Mutant('buffer-sample-rows-first-not-passed-on', 'tests/test_kernels_buffer.py -k launcher_passes_the_order', [
        ('kernels/buffer.py', 'ROWS_FIRST=bool(rows_first)', 'ROWS_FIRST=False'),
    ]),
    Mutant('buffer-sample-rows-first-reads-past-the-buffer', 'tests/test_kernels_buffer.py -k outside_the_buffer', [
        ('kernels/buffer.py', '                          mask=m_bd & ((b_row >= 0) & (b_row < N))[:, None], other=float("nan"))', '                          mask=m_bd, other=float("nan"))'),
    ]),
    Mutant('bench-buffer-launch-drops-the-order', 'tests/test_bench.py -k buffer_launch', [
        ('bench/bench_kernels.py', ', **{ORDERS[order][0]: True for order in cfg[2:]}}', ', **{ORDERS[order][0]: False for order in cfg[2:]}}'),
    ]),
    Mutant('buffer-sample-rows-first-resets-half', 'tests/test_kernels_buffer.py -k every_launch_configuration', [
        ('kernels/buffer.py', '            b_reset = (uniform_scalar(b_seed, b_offset + o_b) < reset_prob) & m_b\n        else:', '            b_reset = (uniform_scalar(b_seed, b_offset + o_b) < 0.5 * reset_prob) & m_b\n        else:'),
    ]),
    Mutant('box-muller-cosine-sign-quadrant', 'tests/test_kernels_sgld.py -k reference_stream', [
        ('kernels/rng.py', 'tl.where(((b_q + 1) & 2) != 0, -b_cos, b_cos)', 'tl.where((b_q & 2) != 0, -b_cos, b_cos)'),
    ]),
    Mutant('box-muller-sine-cosine-not-swapped', 'tests/test_kernels_sgld.py -k reference_stream', [
        ('kernels/rng.py', 'b_odd = (b_q & 1) != 0', 'b_odd = (b_q & 1) == 2'),
    ]),
    Mutant('box-muller-sine-coefficient-off', 'tests/test_kernels_rng.py -k two_ulps', [
        ('kernels/rng.py', 'b_z * -0.5890125036239624', 'b_z * -0.5790125036239624'),
    ]),
    Mutant('box-muller-cosine-coefficient-off', 'tests/test_kernels_rng.py -k two_ulps', [
        ('kernels/rng.py', 'b_z * 0.2312610149383545', 'b_z * 0.2412610149383545'),
    ]),
    Mutant('box-muller-log-reduction-range', 'tests/test_kernels_rng.py -k two_ulps', [
        ('kernels/rng.py', 'b_e = (b_i - 0x3F2AAAAB) & -8388608', 'b_e = (b_i - 0x3F000000) & -8388608'),
    ]),
    Mutant('box-muller-log-coefficient-off', 'tests/test_kernels_rng.py -k two_ulps', [
        ('kernels/rng.py', 'b_p = 0.9999986886978149 + b_f', 'b_p = 0.9999886886978149 + b_f'),
    ]),
    Mutant('box-muller-log-exponent-scale', 'tests/test_kernels_sgld.py -k reference_stream', [
        ('kernels/rng.py', 'b_e.to(tl.float32) * -1.6525916635146132e-07', 'b_e.to(tl.float32) * -0.8262958317573066e-07'),
    ]),
    Mutant('box-muller-library-log', 'tests/test_kernels_compile.py -k straight_line', [
        ('kernels/rng.py', '        b_rad = tl.sqrt(_minus_two_log(b_ua))', '        b_rad = tl.sqrt(-2.0 * tl.log(b_ua))'),
    ]),
    Mutant('box-muller-library-sin-cos', 'tests/test_kernels_compile.py -k straight_line', [
        ('kernels/rng.py', '        b_sin, b_cos = _sincospi(b_ub * 2.0 - 1.0)', '        b_sin, b_cos = tl.sin(3.141592653589793 * (b_ub * 2.0 - 1.0)), tl.cos(3.141592653589793 * (b_ub * 2.0 - 1.0))'),
    ]),
    Mutant('buffer-sample-rows-first-loads-after-the-decision', 'tests/test_kernels_compile.py -k reset_a_row', [
        ('kernels/buffer.py', '            b_x = tl.load(p_buffer + b_row[:, None] * D + o_d[None, :],\n                          mask=m_bd & ((b_row >= 0) & (b_row < N))[:, None], other=float("nan"))\n            b_reset = (uniform_scalar(b_seed, b_offset + o_b) < reset_prob) & m_b\n', '            b_reset = (uniform_scalar(b_seed, b_offset + o_b) < reset_prob) & m_b\n            b_x = tl.load(p_buffer + b_row[:, None] * D + o_d[None, :],\n                          mask=m_bd & (b_reset == 0)[:, None] & ((b_row >= 0) & (b_row < N))[:, None], other=float("nan"))\n'),
    ]),
    Mutant('buffer-sample-rows-first-reads-the-wrong-rows', 'tests/test_kernels_buffer.py -k every_launch_configuration', [
        ('kernels/buffer.py', '            b_x = tl.load(p_buffer + b_row[:, None] * D + o_d[None, :],\n                          mask=m_bd &', '            b_x = tl.load(p_buffer + o_b[:, None] * D + o_d[None, :],\n                          mask=m_bd &'),
    ]),
    Mutant('buffer-sample-draws-in-every-tile', 'tests/test_kernels_compile.py -k reset_a_row', [
        ('kernels/buffer.py', '        if tl.max(b_reset.to(tl.int32), axis=0) != 0:', '        if tl.max(b_reset.to(tl.int32), axis=0) >= 0:'),
    ]),
    Mutant('buffer-sample-draws-only-where-no-row-resets', 'tests/test_kernels_buffer.py', [
        ('kernels/buffer.py', '        if tl.max(b_reset.to(tl.int32), axis=0) != 0:', '        if tl.max(b_reset.to(tl.int32), axis=0) == 0:'),
    ]),
    Mutant('sgld-kernel-loads-wait-for-the-noise', 'tests/test_kernels_compile.py -k loads_before', [
        ('kernels/sgld.py', '        b_x = tl.load(p_x + o_x, mask=m_x, other=0.0)\n        b_g = tl.load(p_grad + o_x, mask=m_x, other=0.0).to(tl.float32)\n        b_noise = normal_block(tl.load(p_rng), o_ctr + tl.load(p_rng + 1), QUARTER)  # [BLOCK]\n', '        b_noise = normal_block(tl.load(p_rng), o_ctr + tl.load(p_rng + 1), QUARTER)  # [BLOCK]\n        b_x = tl.load(p_x + o_x, mask=m_x & (b_noise == b_noise), other=0.0)\n        b_g = tl.load(p_grad + o_x, mask=m_x & (b_noise == b_noise), other=0.0).to(tl.float32)\n'),
    ]),
    Mutant('buffer-sample-fwd-advances-regardless', 'tests/test_kernels_buffer.py -k every_launch_configuration', [
        ('kernels/buffer.py', '    if advance:\n        # rows of no elements', '    if True:\n        # rows of no elements'),
    ]),
    Mutant('bench-gather-alone-dropped', 'tests/test_bench.py -k checks_each_op_against_its_reference', [
        ('bench/bench_kernels.py', '    if gather_alone:\n        cases.append(', '    if False:\n        cases.append('),
    ]),
    Mutant('bench-gather-alone-not-in-the-gpu-suite', 'tests/test_bench.py -k gpu_cases_pass_their_checks', [
        ('bench/bench_kernels.py', 'gather_alone=full and backend == "triton"),', 'gather_alone=False),'),
    ]),
    Mutant('bench-gather-alone-advances', 'tests/test_bench.py -k checks_each_op_against_its_reference', [
        ('bench/bench_kernels.py', 'return buffer_sample_fwd(buf, idx, RESET_PROB, state, advance=False)', 'return buffer_sample_fwd(buf, idx, RESET_PROB, state)'),
    ]),
    Mutant('bench-gather-alone-unchecked-at-half', 'tests/test_bench.py -k checks_each_op_against_its_reference', [
        ('bench/bench_kernels.py', '        assert torch.equal(half, kernels.buffer_sample_ref(buf, idx, 0.5, state.clone()))\n', '        assert torch.equal(half, half)\n'),
    ]),
    Mutant('mutants-jobs-share-one-tree', 'tests/test_mutants_harness.py -k tree_of_its_own', [
        # split literals, here and below: an entry must not hold the text it mutates in one piece
        ('tests/mutants.py', '        for i in range(min(jobs, ' 'len(chosen)) or 1):', '        for i in range(1):'),
    ]),
    Mutant('mutants-sample-unseeded', 'tests/test_mutants_harness.py -k seeded_sample', [
        ('tests/mutants.py', 'picked = {m.name for m in random.Random(' 'seed).sample(', 'picked = {m.name for m in random.Random().sample('),
    ]),
    Mutant('mutants-touching-ignored', 'tests/test_mutants_harness.py -k seeded_sample', [
        ('tests/mutants.py', '        chosen = [m for m in chosen if wanted & ' '{file for', '        chosen = [m for m in chosen if True or wanted & {file for'),
    ]),
    Mutant('buffer-init-not-moved', 'tests/test_buffer.py -k another_device', [
        ('fastjem/buffer.py', '            init = init.to(self.device)  # its draws', '            init = init  # its draws'),
    ]),
    Mutant('buffer-init-draw-stays-where-made', 'tests/test_buffer.py -k another_device', [
        ('fastjem/buffer.py', 'fresh = fresh.detach().to(self.device, torch.float32)', 'fresh = fresh.detach().to(torch.float32)'),
    ]),
    Mutant('trainer-custom-parts-checked-after-arch', 'tests/test_custom.py -k own_network', [
        ('fastjem/train.py', '            _check_same_custom_parts(ckpt, model, data)\n            saved = TrainConfig', '            saved = TrainConfig'),
        ('fastjem/train.py', '\n        self._rng = _seeded_rng_states(cfg.seed, self.device)\n', '\n        if ckpt is not None:\n            _check_same_custom_parts(ckpt, model, data)\n        self._rng = _seeded_rng_states(cfg.seed, self.device)\n'),
    ]),
    Mutant('sgld-step-flags-callers-tensor', 'tests/test_sampler.py -k callers_tensor', [
        ('fastjem/sampler.py', '        x = x.detach()  # an alias: the update below', '        x = x.requires_grad_(False) if x.is_leaf else x  # an alias: the update below'),
        ('fastjem/sampler.py', '                leaf = x.detach().requires_grad_(True)', '                leaf = x.requires_grad_(True)'),
        ('fastjem/sampler.py', '                (grad,) = torch.autograd.grad(energy.sum(), leaf, allow_unused=True)\n', '                (grad,) = torch.autograd.grad(energy.sum(), leaf, allow_unused=True)\n            x = x.detach()\n'),
    ]),
    Mutant('sgld-step-needs-grad-mode', 'tests/test_sampler.py -k callers_tensor', [
        ('fastjem/sampler.py', '            with torch.enable_grad():\n                leaf = x', '            with contextlib.nullcontext():\n                leaf = x'),
    ]),
    Mutant('dispatch-interpreter-after-import-unchecked', 'tests/test_kernels_dispatch.py -k after_the_import', [
        ('kernels/_dispatch.py', '        if not KERNELS_INTERPRETED:\n', '        if False:\n'),
    ]),
    Mutant('lse-kernel-max-uncapped', 'tests/test_kernels_energy.py -k plus_inf', [
        ('kernels/energy.py', 'b_m_new = tl.minimum(tl.maximum(b_m, tl.max(b_x, axis=1)), 3.4028234663852886e38)', 'b_m_new = tl.maximum(b_m, tl.max(b_x, axis=1))'),
    ]),
    Mutant('lse-reference-backend-max-uncapped', 'tests/test_kernels_energy.py -k plus_inf', [
        ('kernels/energy.py', 'row_max = x.amax(dim=1).clamp(-1.0e38, torch.finfo(torch.float32).max)', 'row_max = x.amax(dim=1).clamp_min(-1.0e38)'),
    ]),
    Mutant('nets-sizes-unchecked', 'tests/test_models.py -k positive_integers', [
        ('fastjem/models/wrn.py', '        if isinstance(value, bool) or not hasattr(value, "__index__") or operator.index(value) < 1:', '        if False:'),
    ]),
    Mutant('nets-dropout-unchecked', 'tests/test_models.py -k positive_integers', [
        ('fastjem/models/wrn.py', '    if not 0.0 <= dropout < 1.0:', '    if False:'),
    ]),
    Mutant('records-keep-rollbacks-the-checkpoint-never-made', 'tests/test_guard.py -k "records_once or own_past"', [
        ('fastjem/train.py', '                if seen == made:\n                    end = i\n', '                if False:\n                    end = i\n'),
    ]),
    Mutant('records-cut-abandoned-attempts-too', 'tests/test_guard.py -k "records_once or own_past or kill_right_after"', [
        ('fastjem/train.py', '            elif seen == made and after:', '            elif after:'),
    ]),
    Mutant('histogram-edges-from-infinite-scores', 'tests/test_eval.py::test_reliability_diagram_and_score_histograms_draw_the_numbers', [
        ('fastjem/eval/plots.py', '    finite = values[torch.isfinite(values)]\n', '    finite = values\n'),
    ]),
    Mutant('histogram-infinite-scores-not-said', 'tests/test_eval.py::test_reliability_diagram_and_score_histograms_draw_the_numbers', [
        ('fastjem/eval/plots.py', '            label += f", {len(v) - len(kept)} of {len(v)} infinite, not drawn"', '            pass'),
    ]),
    Mutant('ood-folder-named-like-a-set-replaced', 'tests/test_eval.py -k "ood_sets_go_by or named_like_the_dataset"', [
        ('fastjem/eval/tasks.py', 'if Path(n).is_dir() and (own.count(o) > 1 or o == in_name) else o', 'if Path(n).is_dir() and o == in_name else o'),
    ]),
    Mutant('ood-set-twice-not-refused', 'tests/test_eval.py -k ood_sets_go_by', [
        ('fastjem/eval/tasks.py', '    if twice:\n        raise ConfigError(f"OOD set(s)', '    if False:\n        raise ConfigError(f"OOD set(s)'),
    ]),
    Mutant('metrics-lists-in-fp32', 'tests/test_eval.py -k python_lists', [
        ('fastjem/eval/metrics.py', '    return torch.as_tensor(values, dtype=torch.float64)\n', '    return torch.as_tensor(values)\n'),
    ]),
    Mutant('inception-splits-by-chunk', 'tests/test_eval.py -k inception_score_takes', [
        ('fastjem/eval/metrics.py', '        chunk = p[k * n // splits:(k + 1) * n // splits]', '        chunk = p.chunk(splits)[min(k, len(p.chunk(splits)) - 1)]'),
    ]),
    Mutant('fid-classifier-score-splits-unrecorded', 'tests/test_eval.py -k cli_samples_robustness_fid', [
        ('fastjem/eval/tasks.py', '        results["classifier_score_splits"] = splits\n', ''),
    ]),
    Mutant('archives-classes-read-archive-by-archive', 'tests/test_data.py -k archive_per_class', [
        ('fastjem/data.py', '    folders = [f for _, f in listing.loose]\n    common = len(os.path.commonprefix(folders)) if folders else 0\n    for i, f in listing.loose:\n',
         '    for i, f in listing.loose:\n        folders = [g for _, g in listing.loose if records[_][3].split(":")[0] == records[i][3].split(":")[0]]\n        common = len(os.path.commonprefix(folders))\n'),
    ]),
    Mutant('archive-links-dropped', 'tests/test_data.py -k link_in_an_archive', [
        ('fastjem/data.py', '            if link is not None:\n                # read in one pass', '            if link is not None:\n                continue\n                # read in one pass'),
    ]),
    Mutant('zip-symlinks-read-as-images', 'tests/test_data.py -k link_in_an_archive', [
        ('fastjem/data.py', '                    if stat.S_ISLNK(info.external_attr >> 16):', '                    if False:'),
    ]),
    Mutant('empty-test-split-unsaid', 'tests/test_data.py -k "one_image_a_class or smallest_hash"', [
        ('fastjem/data.py', '    if not test:\n        raise DataNotFoundError(f"{where}: no class', '    if False:\n        raise DataNotFoundError(f"{where}: no class'),
    ]),
    Mutant('torchvision-partial-said-missing', 'tests/test_data.py -k missing_dataset_says', [
        ('fastjem/data.py', '        if there and not download:\n', '        if False:\n'),
    ]),
    Mutant('data-val-size-below-minus-one', 'tests/test_cli.py -k reports_what_is_wrong_with_a_folder', [
        ('fastjem/data.py', '    if val_size < -1:\n        raise ConfigError', '    if False:\n        raise ConfigError'),
    ]),
    Mutant('cifar-dir-typo-falls-back', 'tests/test_bench.py -k cifar_run_uses', [
        ('bench/cifar_run.py', '        if not _holds_cifar(Path(explicit)):', '        if False:'),
    ]),
    Mutant('steps-warmup-zero-accepted', 'tests/test_bench.py -k refuse_bad_options', [
        ('bench/steps_per_sec.py', '("buffer_size", 1), ("warmup", 1),', '("buffer_size", 1), ("warmup", 0),'),
    ]),
    Mutant('folder-hard-links-read-as-two-images', 'tests/test_data.py -k makes_one_image_two', [
        ('fastjem/data.py', '    st = os.stat(p)\n    return st.st_dev, st.st_ino\n', '    return os.path.realpath(p), 0\n'),
    ]),
    Mutant('ood-sets-without-test-noise', 'tests/test_eval.py -k test_noise_goes_on', [
        ('fastjem/eval/tasks.py', '        if run.test_noise > 0 and name not in NOISELESS_SETS:', '        if False:'),
    ]),
    Mutant('ood-test-noise-on-synthetic-sets', 'tests/test_eval.py -k test_noise_goes_on', [
        ('fastjem/eval/tasks.py', '        if run.test_noise > 0 and name not in NOISELESS_SETS:', '        if run.test_noise > 0:'),
    ]),
    Mutant('fused-forward-ignores-dropout', 'tests/test_engine.py -k dropout', [
        ('fastjem/engine.py', '    elif fused and dropout:\n', '    elif False:\n'),
    ]),
    Mutant('trainer-dropout-of-the-network-unseen', 'tests/test_engine.py -k dropout_turns', [
        ('fastjem/train.py', 'self.dist.enabled, has_dropout(self.model),\n', 'self.dist.enabled, False,\n'),
    ]),
    Mutant('overlap-pxy-alone-called-no-generative-term', 'tests/test_overlap.py -k refused_where', [
        ('fastjem/engine.py', '        if cfg.pxy_weight > 0:\n            why = "the p(x, y) term', '        if cfg.pxy_weight > 0 and cfg.px_weight > 0:\n            why = "the p(x, y) term'),
    ]),
    Mutant('sgld-parts-both-notes', 'tests/test_engine.py -k say_so_once', [
        ('fastjem/engine.py', '    kept = tuple(n for n in engine.notes if not n.startswith("SGLD parts: the "))\n', '    kept = engine.notes\n'),
    ]),
    Mutant('env-engine-not-fitted-to-preset-network', 'tests/test_cli.py -k env_reports', [
        ('fastjem/cli.py', '    engine = fit_cpu_sgld_compile(engine, (channels, size, size), cfg, model)\n', ''),
    ]),
    Mutant('env-sgld-parts-not-fitted', 'tests/test_cli.py -k env_lists_every_gpu', [
        ('fastjem/cli.py', '    engine = fit_sgld_parts(engine, (channels, size, size), cfg, model)\n', ''),
    ]),
    Mutant('env-notes-said-twice', 'tests/test_cli.py -k env_reports', [
        ('fastjem/cli.py', '            said.update(e["notes"])\n', ''),
    ]),
    Mutant('env-default-config-not-preset', 'tests/test_cli.py -k env_reports', [
        ('fastjem/cli.py', 'cfg = get_preset(name).replace(device=device.type)', 'cfg = TrainConfig(device=device.type)'),
    ]),
    Mutant('sweep-imagefolder-read-back-validated', 'tests/test_sweep.py -k image_folder', [
        ('fastjem/sweep.py', 'folder, check=False)', 'folder, check=True)'),
    ]),
    Mutant('sweep-grid-takes-max-minutes', 'tests/test_sweep.py -k each_options_type', [
        ('fastjem/sweep.py', '"init_weights", "max_minutes"}', '"init_weights"}'),
    ]),
    Mutant('sweep-depth-refused-beside-arch-grid', 'tests/test_sweep.py -k depth_goes', [
        ('fastjem/cli.py', ' and "wrn" not in (grid or {}).get("arch", ())', ''),
    ]),
    Mutant('sweep-classifier-only-grid-unnamed', 'tests/test_sweep.py -k classifier_only', [
        ('fastjem/cli.py', '    if args.classifier_only and varied:', '    if False:'),
    ]),
    Mutant('sweep-trainer-kept-alive', 'tests/test_sweep.py -k freed', [
        ('fastjem/sweep.py', '            trainer = given = None\n            gc.collect()\n', '            pass\n'),
    ]),
    Mutant('sweep-trainer-no-collect', 'tests/test_sweep.py -k freed', [
        ('fastjem/sweep.py', '            gc.collect()\n', '            pass\n'),
    ]),
    Mutant('plot-mean-nan-crashes', 'tests/test_curves.py -k nan_or_inf', [
        ('fastjem/curves.py', 'rows = [v if all(map(math.isfinite, v)) else None for v in zip(*columns)]', 'rows = list(zip(*columns))'),
    ]),
    Mutant('plot-mean-one-point-no-marker', 'tests/test_curves.py -k first_record', [
        ('fastjem/curves.py', 'dot = {"marker": "o", "ms": 4} if len(its) == 1 else {}', 'dot = {}'),
    ]),
    Mutant('dist-world-size-alone-traceback', 'tests/test_distributed.py -k clear_error', [
        ('fastjem/distributed.py', '    if missing:\n', '    if False:\n'),
    ]),
    Mutant('dist-master-addr-unchecked', 'tests/test_distributed.py -k clear_error', [
        ('fastjem/distributed.py', '"MASTER_ADDR", "MASTER_PORT")))', ')))'),
    ]),
    Mutant('dist-every-rank-prints-val', 'tests/test_distributed.py -k per_rank_buffers', [
        ('fastjem/train.py', 'if self.dist.is_main:  # rank 0 logs (tqdm.write prints even where the bar is disabled)', 'if True:  # rank 0 logs'),
    ]),
    Mutant('board-resume-at-end-duplicates-step', 'tests/test_board.py -k resumed_at_its_end', [
        ('fastjem/train.py', 'start = self.iteration if at_end else self.iteration + 1 if resumed else 0', 'start = self.iteration + 1 if resumed else 0'),
    ]),
    Mutant('board-resume-at-end-drops-records', 'tests/test_board.py -k resumed_at_its_end', [
        ('fastjem/train.py', 'if record["iter"] == self.iteration:', 'if False:'),
    ]),
    Mutant('convert-unpickles-extra-objects', 'tests/test_convert.py -k unpickles', [
        ('fastjem/convert.py', '        extra = beyond_tensors(path) if path.is_file() else ""', '        extra = ""'),
    ]),
    Mutant('convert-beyond-tensors-inverted', 'tests/test_convert.py -k unpickles', [
        ('fastjem/checkpoint.py', '            if "weights only" not in str(err).lower():\n                continue', '            if "weights only" in str(err).lower():\n                continue'),
    ]),
    Mutant('export-batch-capped', 'tests/test_export.py -k free_batch', [
        ('fastjem/export.py', 'batch = torch.export.Dim("batch", min=1)', 'batch = torch.export.Dim("batch", min=1, max=1 << 16)'),
    ]),
    Mutant('convert-back-always-eval-script', 'tests/test_convert.py -k 100_class', [
        ('fastjem/cli.py', '        if r["num_classes"] == 10:', '        if True:'),
    ]),
    Mutant('convert-back-num-classes-ten', 'tests/test_convert.py -k 100_class', [
        ('fastjem/convert.py', '"num_classes": int(state["class_output.weight"].shape[0]),', '"num_classes": 10,'),
    ]),
    Mutant('convert-back-ranks-end-to-end', 'tests/test_convert.py -k class_blocks', [
        ('fastjem/convert.py', '        if k:  # class-conditional', '        if False:  # class-conditional'),
    ]),
    Mutant('resume-python-config-unchecked', 'tests/test_train.py -k python_refuses', [
        ('fastjem/train.py', '{f: v for f, v in cfg.to_dict().items()', '{f: v for f, v in saved.to_dict().items()'),
    ]),
    Mutant('resume-python-allows-lr-change', 'tests/test_train.py -k python_refuses', [
        ('fastjem/train.py', '"iters", "epochs", "max_minutes",', '"iters", "epochs", "lr", "sgld_steps", "seed", "preset", "max_minutes",'),
    ]),
    Mutant('resume-kept-checkpoint-without-run-checkpoint', 'tests/test_train.py -k would_not_train_or_mix', [
        ('fastjem/train.py', 'for n in ("checkpoint.pt", "metrics.jsonl"))', 'for n in ("checkpoint.pt",))'),
    ]),
    Mutant('checkpoint-newer-config-unnamed', 'tests/test_train.py -k newer_fastjem', [
        ('fastjem/checkpoint.py', '    if unknown:\n        raise CheckpointError(', '    if False:\n        raise CheckpointError('),
    ]),
    Mutant('classifier-only-logs-zero-energies', 'tests/test_board.py -k classifier_only_run_logs', [
        ('fastjem/train.py', '            del out["e_data"], out["e_sample"]\n', '            out["gap"] = 0.0\n'),
    ]),
    Mutant('plot-stop-labelled-rolled-back', 'tests/test_curves.py -k stopped_at_a_divergence', [
        ('fastjem/curves.py', '"diverged, stopped" if e.get("action") == "stop" else "divergence, rolled back"', '"divergence, rolled back"'),
    ]),
    Mutant('sweep-grid-flag-unexplained', 'tests/test_sweep.py -k each_options_type', [
        ('fastjem/sweep.py', '(flags[name] if name in flags else', '(flags[name] if False else'),
    ]),
    Mutant('sweep-grid-no-flag-unexplained', 'tests/test_sweep.py -k each_options_type', [
        ('fastjem/sweep.py', 'if name.startswith("no_") and name[3:] in names:', 'if False:'),
    ]),
    Mutant('sgld-study-saves-only-at-end', 'tests/test_bench.py -k cut_short', [
        ('bench/sgld_study.py', '        save()\n        mfu = ', '        mfu = '),
    ]),
    Mutant('profile-saves-only-at-end', 'tests/test_bench.py -k cut_short', [
        ('bench/profile_step.py', '        path = write_result(report, "profile", device, started, args.out, path)\n        shares', '        shares'),
        ('bench/profile_step.py', '        torch._dynamo.reset()\n', '        torch._dynamo.reset()\n    path = write_result(report, "profile", device, started, args.out, path)\n'),
    ]),
    Mutant('gpu-suite-no-kernels-link', 'tests/test_bench.py -k install_fallback', [
        ('bench/gpu_suite.sh', '[[ -e $ROOT/fastjem/kernels ]] || ln -s ../kernels "$ROOT/fastjem/kernels"', 'true'),
    ]),
    Mutant('gpu-suite-json-no-device', 'tests/test_bench.py -k records_the_device_versions', [
        ('bench/gpu_suite.sh', '    combined.update(json.load(open(env_path)))  # device, versions', '    pass'),
    ]),
    Mutant('gpu-suite-json-no-git', 'tests/test_bench.py -k records_the_device_versions', [
        ('bench/gpu_suite.sh', '"git": {"sha": sha or None, "dirty": bool(dirty) if sha else None},', '"git": {"sha": None, "dirty": None},'),
    ]),
    Mutant('gpu-suite-out-only-at-end', 'tests/test_bench.py -k cut_off_mid_stage', [
        ('bench/gpu_suite.sh', '    "$name" "$rc" "$dt" "$budget" "$status" >>"$STAGES"\n  collect >/dev/null 2>&1\n', '    "$name" "$rc" "$dt" "$budget" "$status" >>"$STAGES"\n'),
    ]),
    Mutant('board-reopen-same-second', 'tests/test_board.py -k same_second', [
        ('fastjem/board.py', '        if wait > 0:\n            time.sleep(wait)\n', ''),
    ]),
    Mutant('precision-help-threshold', 'tests/test_cli.py -k precision_help', [
        ('fastjem/config.py', 'a probe times bf16 convolutions at least 1.1x as fast as fp32', 'a probe times bf16 convolutions faster than fp32'),
    ]),
    Mutant('precision-help-no-avx512', 'tests/test_cli.py -k precision_help', [
        ('fastjem/config.py', '(CUDA tensor cores; a CPU with AMX-BF16, or with AVX512-BF16 where "', '(CUDA tensor cores; a CPU with AMX-BF16, or where "'),
    ]),
    Mutant('checkpoint-unpickled', 'tests/test_train.py -k holding_other_objects', [
        ('fastjem/checkpoint.py', 'ckpt = torch.load(path, map_location=map_location, weights_only=True)', 'ckpt = torch.load(path, map_location=map_location, weights_only=False)'),
    ]),
    Mutant('checkpoint-garbage-said-to-hold-objects', 'tests/test_train.py -k unreadable_checkpoint_is_refused', [
        ('fastjem/checkpoint.py', '    if not (zipfile.is_zipfile(path) or head.startswith(b"\\x80")):\n        return ""\n', ''),
    ]),
    Mutant('guard-nan-log-line-ends-run', 'tests/test_guard.py -k logged_between_checks', [
        ('fastjem/train.py', '                    if self.guard is not None and not math.isfinite(m["loss"]):', '                    if False:'),
    ]),
    Mutant('guard-nan-log-line-not-recovered', 'tests/test_guard.py -k logged_between_checks', [
        ('fastjem/train.py', '                        self.guard.healthy()  # the reasons\n                        self.recover()\n', '                        pass\n'),
    ]),
    Mutant('guard-rollback-file-looked-up-in-new-folder', 'tests/test_guard.py -k continued_in_another_folder', [
        ('fastjem/train.py', '            source = home / name if name else None', '            source = self.out_dir / name if name and same_folder else None'),
    ]),
    Mutant('guard-rollback-file-not-rewritten-in-new-folder', 'tests/test_guard.py -k continued_in_another_folder', [
        ('fastjem/train.py', '                    self._snapshot_file = None  # continued in another folder: its next checkpoint writes it there', '                    pass'),
    ]),
    Mutant('guard-recovery-replays-batches', 'tests/test_guard.py -k replay_the_divergence', [
        ('fastjem/train.py', '        self.data_gen.manual_seed(cfg.seed + salt)', '        pass  # batches not reseeded'),
    ]),
    Mutant('checkpoint-stranger-holdings-unsaid', 'tests/test_contracts.py -k lock_naming', [
        ('fastjem/checkpoint.py', '        keys = sorted(map(str, ckpt))[:6] if isinstance(ckpt, dict) else []', '        keys = []'),
    ]),
    Mutant('sample-settings-without-batch-size', 'tests/test_eval.py -k sample_is_seeded', [
        ('fastjem/eval/draw.py', '"batch_size": batch_size, "device": str(em.device)}', '}'),
    ]),
    Mutant('sweep-time-to-go-from-last-log-line', 'tests/test_sweep.py -k epoch_based_runs_time_to_go', [
        ('fastjem/sweep.py', 'done_so_far = (rows[name]["resumes_at"] or 0) if name in rows else 0',
         'done_so_far = rows[name]["iteration"] if name in rows else 0'),
    ]),
    Mutant('runs-resumes-at-not-the-checkpoint', 'tests/test_runs.py -k stopped_between_log_lines', [
        ('fastjem/runs.py', '"resumes_at": None if done else saved,', '"resumes_at": None if done else iteration,'),
    ]),
    Mutant('guard-classifier-only-climbs-sgld-rungs', 'tests/test_guard.py -k classifier_only', [
        ('fastjem/train.py', 'rungs = cfg.remedies if cfg.generative else tuple(r for r in cfg.remedies if r == "lr")',
         'rungs = cfg.remedies'),
    ]),
    Mutant('guard-classifier-only-no-lr-rung-doubles-sgld', 'tests/test_guard.py -k classifier_only', [
        ('fastjem/train.py', 'rung = rungs[min(n, len(rungs) - 1)] if rungs else "reseed"',
         'rung = rungs[min(n, len(rungs) - 1)] if rungs else "sgld_steps"'),
    ]),
    Mutant('sgld-strided-state-read-as-storage', 'tests/test_kernels_sgld.py -k strided_state', [
        ('kernels/sgld.py', 'grad, rng_state.contiguous(), n, base,', 'grad, rng_state, n, base,'),
    ]),
    Mutant('buffer-strided-state-read-as-storage', 'tests/test_kernels_buffer.py -k strided_state', [
        ('kernels/buffer.py', '                buffer, idx.contiguous(), out, rng_state.contiguous(),', '                buffer, idx.contiguous(), out, rng_state,'),
    ]),
    Mutant('buffer-sample-takes-buffers-requiring-grad', 'tests/test_kernels_buffer.py -k require_grad', [
        ('kernels/buffer.py', '    if torch.is_grad_enabled() and (buffer.requires_grad or (fresh is not None and fresh.requires_grad)):', '    if False:'),
    ]),
    Mutant('buffer-write-into-a-leaf-requiring-grad', 'tests/test_kernels_buffer.py -k require_grad', [
        ('kernels/buffer.py', '    if buffer.requires_grad and torch.is_grad_enabled():', '    if False:'),
    ]),
    Mutant('replay-buffer-init-draw-kept-requiring-grad', 'tests/test_buffer.py -k init_that_requires_grad', [
        ('fastjem/buffer.py', 'fresh = fresh.detach().to(self.device, torch.float32)', 'fresh = fresh.to(self.device, torch.float32)'),
    ]),
    Mutant('replay-buffer-init-fill-kept-requiring-grad', 'tests/test_buffer.py -k init_that_requires_grad', [
        ('fastjem/buffer.py', 'filled.detach().to(', 'filled.to('),
    ]),
    Mutant('sgld-energy-shape-unchecked', 'tests/test_sampler.py -k not_one_value', [
        ('fastjem/sampler.py', '    if energy.dim() and tuple(energy.shape) not in ((rows,), (rows, 1)):', '    if False:'),
    ]),
    Mutant('sgld-energy-without-grad-unchecked', 'tests/test_sampler.py -k not_one_value', [
        ('fastjem/sampler.py', '    if not energy.requires_grad:\n        raise ValueError(NOT_DIFFERENTIABLE)', '    if False:\n        raise ValueError(NOT_DIFFERENTIABLE)'),
    ]),
    Mutant('sgld-energy-unused-x-left-to-autograd', 'tests/test_sampler.py -k not_one_value', [
        ('fastjem/sampler.py', 'torch.autograd.grad(energy.sum(), leaf, allow_unused=True)', 'torch.autograd.grad(energy.sum(), leaf)'),
    ]),
    Mutant('buffer-int-shape-refused', 'tests/test_buffer.py -k int_shape', [
        ('fastjem/buffer.py', '    dims = (given,) if hasattr(given, "__index__") else given', '    dims = given'),
    ]),
    Mutant('buffer-batch-size-unchecked', 'tests/test_buffer.py -k int_shape', [
        ('fastjem/buffer.py', '        if isinstance(batch_size, bool) or not hasattr(batch_size, "__index__") or batch_size < 0:', '        if False:'),
    ]),
    Mutant('sgld-chain-draws-one-noise-for-every-step', 'tests/test_sampler.py -k discretised', [
        ('fastjem/sampler.py', 'x = self.step_(energy_fn, x, rng, base + t * per_step, 0)', 'x = self.step_(energy_fn, x, rng, base, 0)'),
    ]),
    Mutant('buffer-view-refusal-silent-on-strides', 'tests/test_kernels_buffer.py -k bad_reset', [
        ('kernels/buffer.py', 'shape = f"{tuple(buffer.shape)} with strides {buffer.stride()}"', 'shape = tuple(buffer.shape)'),
    ]),
    Mutant('energy-logits-shape-unchecked', 'tests/test_energy.py -k b_by_k', [
        ('fastjem/energy.py', '    if logits.dim() != 2:', '    if False:'),
    ]),
    Mutant('part-state-keys-unchecked', 'tests/test_part_state.py -k refused', [
        ('fastjem/checkpoint.py', '    if not missing and not unknown:\n        return\n', '    if True:\n        return\n'),
    ]),
    Mutant('part-state-rng-unchecked', 'tests/test_part_state.py -k refused', [
        ('fastjem/checkpoint.py',
         '    if not isinstance(rng, torch.Tensor) or rng.dtype != torch.int64 or tuple(rng.shape) != (2,):',
         '    if not isinstance(rng, torch.Tensor):'),
    ]),
    Mutant('buffer-load-data-unchecked', 'tests/test_part_state.py -k refused', [
        ('fastjem/buffer.py', '        if not isinstance(data, torch.Tensor) or not data.is_floating_point():',
         '        if False:'),
    ]),
    Mutant('buffer-load-drops-chains', 'tests/test_part_state.py -k continue', [
        ('fastjem/buffer.py', '        self.data.copy_(data)\n', '        pass\n'),
    ]),
    Mutant('sampler-load-replaces-its-state', 'tests/test_part_state.py -k own_state_tensor', [
        ('fastjem/sampler.py', '            self.rng_state.copy_(saved)', '            self.rng_state = saved.clone()'),
    ]),
    Mutant('sampler-load-of-unused-state-ignored', 'tests/test_part_state.py -k before_the_first_draw', [
        ('fastjem/sampler.py', '        if saved is None:\n            if self.rng_state is not None:',
         '        if saved is None:\n            if False:'),
    ]),
    Mutant('buffer-to-stays', 'tests/test_part_state.py -k moves', [
        ('fastjem/buffer.py', '        self.data, self.rng_state = self.data.to(device), self.rng_state.to(device)\n',
         '        pass\n'),
    ]),
    Mutant('config-python-types-unchecked', 'tests/test_train.py -k "bad_hyperparameters or checks_its_config"', [
        ('fastjem/config.py', '            if not has_option_type(f, value):\n                raise ConfigError(f"--{_flag(f.name)} must be {option_type_name(f)}', '            if False:\n                raise ConfigError(f"--{_flag(f.name)} must be {option_type_name(f)}'),
    ]),
    Mutant('config-python-path-not-made-text', 'tests/test_train.py -k python_spellings', [
        ('fastjem/config.py', '            elif kind is str and isinstance(value, os.PathLike):', '            elif False:'),
    ]),
    Mutant('config-python-numpy-int-not-made-int', 'tests/test_train.py -k python_spellings', [
        ('fastjem/config.py', '            elif kind is int and isinstance(value, numbers.Integral):', '            elif False:'),
    ]),
    Mutant('trainer-takes-a-dict', 'tests/test_train.py -k checks_its_config', [
        ('fastjem/train.py', '        if not isinstance(cfg, TrainConfig):\n            raise ConfigError(f"Trainer takes a TrainConfig', '        if False:\n            raise ConfigError(f"Trainer takes a TrainConfig'),
    ]),
    Mutant('trainer-validates-after-using-the-config', 'tests/test_train.py -k checks_its_config', [
        ('fastjem/train.py', '        cfg.validate(new_run=resume is None)  # before any work: a wrong type failed deep inside the setup\n', ''),
    ]),
    Mutant('config-seed-beyond-64-bits-taken', 'tests/test_train.py -k bad_hyperparameters', [
        ('fastjem/config.py', '        if not -SEED_LIMIT < self.seed < SEED_LIMIT:', '        if False:'),
    ]),
    Mutant('config-lr-bound-one-step-inside', 'tests/test_train.py -k edge_of_their_range', [
        ('fastjem/config.py', '        if self.lr > MAX_LR:', '        if self.lr >= MAX_LR:'),
    ]),
    Mutant('config-huge-lr-taken', 'tests/test_train.py -k bad_hyperparameters', [
        ('fastjem/config.py', '        if self.lr > MAX_LR:', '        if False:'),
    ]),
    Mutant('config-sgld-steps-zero-taken-with-pxy', 'tests/test_train.py -k bad_hyperparameters', [
        ('fastjem/config.py', '        if self.generative and self.sgld_steps == 0:', '        if self.px_weight > 0 and self.sgld_steps == 0:'),
    ]),
    Mutant('config-sgld-steps-zero-refused-for-a-classifier', 'tests/test_train.py -k edge_of_their_range', [
        ('fastjem/config.py', '        if self.generative and self.sgld_steps == 0:', '        if self.sgld_steps == 0:'),
    ]),
    Mutant('cli-epochs-beside-iters-taken', 'tests/test_cli.py -k mistakes_are_refused', [
        ('fastjem/config.py', '    if "epochs" in given and cfg.iters > 0 and "iters" not in varied:', '    if False:'),
    ]),
    Mutant('cli-eval-every-without-validation-taken', 'tests/test_cli.py -k mistakes_are_refused', [
        ('fastjem/config.py', '    if "eval_every" in given and cfg.eval_every > 0 and cfg.val_size == 0 and "val_size" not in varied:', '    if False:'),
    ]),
    Mutant('cli-data-dir-beside-digits-taken', 'tests/test_cli.py -k mistakes_are_refused', [
        ('fastjem/config.py', '    if cfg.dataset == "digits" and unread and "dataset" not in varied:', '    if False:'),
    ]),
    Mutant('cli-classifier-sampler-options-unsaid', 'tests/test_cli.py -k run_reads_or_given', [
        ('fastjem/cli.py', '        for said in warned:\n            warnings.warn(said, FastJEMWarning, stacklevel=2)', '        pass'),
    ]),
    Mutant('cli-grid-of-unread-sampler-options-only-said', 'tests/test_cli.py -k mistakes_are_refused', [
        ('fastjem/config.py', '        (refused if set(unread) & set(varied) else warned).append(', '        warned.append('),
    ]),
    Mutant('cli-option-at-its-value-counts-as-given', 'tests/test_cli.py -k run_reads_or_given', [
        ('fastjem/cli.py', '        changed = {k for k, v in overrides.items() if v != getattr(base, k)} | set(grid or ())', '        changed = set(overrides) | set(grid or ())'),
    ]),
    Mutant('cli-grid-varying-the-weights-still-judged', 'tests/test_cli.py -k run_reads_or_given', [
        ('fastjem/config.py', '    if not cfg.generative and unread and not {"px_weight", "pxy_weight"} & set(varied):', '    if not cfg.generative and unread:'),
    ]),
    Mutant('cli-storage-overflow-traceback', 'tests/test_cli.py -k beyond_64_bits', [
        ('fastjem/cli.py', ',\n                                                                            "Storage size calculation overflowed")', ')'),
    ]),
    Mutant('train-warmup-longer-than-run-unsaid', 'tests/test_train.py -k warm_up_longer', [
        ('fastjem/train.py', '        if self._resumed_from is None and cfg.warmup_iters > self.total_iters:', '        if False:'),
    ]),
    Mutant('train-warmup-as-long-as-run-said', 'tests/test_train.py -k warm_up_longer', [
        ('fastjem/train.py', '        if self._resumed_from is None and cfg.warmup_iters > self.total_iters:', '        if self._resumed_from is None and cfg.warmup_iters >= self.total_iters:'),
    ]),
    Mutant('eval-robust-negative-n-attack-taken', 'tests/test_eval.py -k refuse_bad_options_before_loading', [
        ('fastjem/eval/tasks.py', '    if n_attack < 0:', '    if False:'),
    ]),
    Mutant('sample-diverged-chains-unsaid', 'tests/test_eval.py -k chains_diverged', [
        ('fastjem/eval/cli.py', '    if bad:  # saved as drawn, but not without a word', '    if False:  # saved as drawn, but not without a word'),
    ]),
    Mutant('config-new-run-rules-on-every-run', 'tests/test_train.py -k new_run_rules', [
        ('fastjem/config.py', '        if new_run:\n            self._validate_new_run()', '        if True:\n            self._validate_new_run()'),
    ]),
    Mutant('trainer-resume-judged-as-new-run-first', 'tests/test_train.py -k new_run_rules', [
        ('fastjem/train.py', 'cfg.validate(new_run=resume is None)  # before any work', 'cfg.validate()  # before any work'),
    ]),
    Mutant('trainer-resume-judged-as-new-run-again', 'tests/test_train.py -k new_run_rules', [
        ('fastjem/train.py', 'self.cfg = cfg.validate(new_run=resume is None, world=world)', 'self.cfg = cfg.validate(world=world)'),
    ]),
    Mutant('cli-resume-judged-as-new-run', 'tests/test_train.py -k new_run_rules', [
        ('fastjem/cli.py', 'cfg.validate(new_run=not args.resume, world=world_from_env())', 'cfg.validate(world=world_from_env())'),
    ]),
    Mutant('sweep-started-run-judged-as-new', 'tests/test_train.py -k new_run_rules', [
        ('fastjem/sweep.py', 'cfg.validate(new_run=not (folder / name / "checkpoint.pt").exists())', 'cfg.validate()'),
    ]),
    Mutant('sweep-new-run-judged-as-started', 'tests/test_train.py -k new_run_rules', [
        ('fastjem/sweep.py', 'cfg.validate(new_run=not (folder / name / "checkpoint.pt").exists())', 'cfg.validate(new_run=False)'),
    ]),
    Mutant('cli-epochs-at-its-default-taken', 'tests/test_cli.py -k mistakes_are_refused', [
        ('fastjem/cli.py', 'unread_options(cfg, set(overrides) | set(grid or ()), varied', 'unread_options(cfg, changed, varied'),
    ]),
    Mutant('eval-all-robustness-options-checked-late', 'tests/test_eval.py -k robustness_options_before', [
        ('fastjem/eval/tasks.py', '    check_robustness_options(**opts.get("robustness", {}))  # before the other tasks run, not after\n', ''),
    ]),
    Mutant('runs-checkpoint-read-only-without-summary', 'tests/test_runs.py -k columns_are_the_runs_latest', [
        ('fastjem/runs.py', '    if (folder / "checkpoint.pt").exists():\n        # its checkpoint', '    if summary is None and (folder / "checkpoint.pt").exists():\n        # its checkpoint'),
    ]),
    Mutant('config-numpy-in-tuples-kept', 'tests/test_train.py -k python_spellings', [
        ('fastjem/config.py', 'value = tuple(_plain_number(v) for v in value)', 'value = tuple(value)'),
    ]),
    Mutant('make-folder-enoent-raw', 'tests/test_cli.py -k will_not_make', [
        ('fastjem/checkpoint.py', '    except FileNotFoundError as err:\n        raise ConfigError(f"cannot make the folder', '    except KeyError as err:\n        raise ConfigError(f"cannot make the folder'),
    ]),
    Mutant('make-folder-dangling-link-raw', 'tests/test_cli.py -k will_not_make', [
        ('fastjem/checkpoint.py', '            if link.is_symlink() and not link.exists():', '            if False:'),
    ]),
    Mutant('train-out-dir-plain-mkdir', 'tests/test_cli.py -k will_not_make', [
        ('fastjem/train.py', '        make_folder(self.out_dir)', '        self.out_dir.mkdir(parents=True, exist_ok=True)'),
    ]),
    Mutant('eval-out-dir-plain-mkdir', 'tests/test_cli.py -k will_not_make', [
        ('fastjem/eval/tasks.py', '        make_folder(self.out_dir)', '        self.out_dir.mkdir(parents=True, exist_ok=True)'),
    ]),
    Mutant('lse-energy-ref-backward-transposed', 'tests/test_kernels_energy.py -k transposed_logits_has_the_strides', [
        ('kernels/energy.py', '    return (-g * softmax).to(logits.dtype).contiguous()', '    return (-g * softmax).to(logits.dtype)'),
    ]),
    Mutant('buffer-sample-ref-transposed-fresh', 'tests/test_kernels_buffer.py -k opcheck', [
        ('kernels/buffer.py', '    return buffer_sample_ref(buffer, idx, reset_prob, rng_state, fresh=fresh).contiguous()', '    return buffer_sample_ref(buffer, idx, reset_prob, rng_state, fresh=fresh)'),
    ]),
    Mutant('lse-energy-backward-op-any-args-ok', 'tests/test_kernels_energy.py -k refuses_arguments_not_of_the_batch', [
        ('kernels/energy.py', '    _check_backward_inputs(grad_energy, logits, labels, row_max, row_sumexp)\n    return _bwd_impl(', '    return _bwd_impl('),
    ]),
    Mutant('sgld-step-sizes-plain-float', 'tests/test_kernels_sgld.py -k told_what_to_pass', [
        ('kernels/sgld.py', '    alpha, sigma = as_number("sgld_step_", "alpha", alpha), as_number("sgld_step_", "sigma", sigma)', '    alpha, sigma = float(alpha), float(sigma)'),
    ]),
    Mutant('buffer-sample-ref-index-error-raw', 'tests/test_kernels_buffer.py -k told_what_to_pass', [
        ('kernels/buffer.py', '    _check_rows_in_buffer("buffer_sample", buffer, idx)\n', ''),
    ]),
    Mutant('buffer-write-overlapping-rows-ok', 'tests/test_kernels_buffer.py -k view_of_the_buffer', [
        ('kernels/buffer.py', '    if rows is not None and _memory_overlaps(rows, buffer):\n', '    if False:\n'),
    ]),
    Mutant('sgld-overlapping-grad-read-late', 'tests/test_kernels_sgld.py -k overlapping_x', [
        ('kernels/sgld.py', '        grad = grad.clone()\n', '        pass\n'),
    ]),
    Mutant('rng-state-seed-overflow-raw', 'tests/test_kernels_rng.py -k beyond_int64', [
        ('kernels/rng.py', '    if not -(2**63) <= seed < 2**63:\n', '    if False:\n'),
    ]),
    Mutant('sixteen-bit-pgm-clipped', 'tests/test_data.py -k sixteen_bit_pgm', [
        ('fastjem/data.py', ' or (im.mode == "I" and im.format == "PPM")', ''),
    ]),
    Mutant('wide-pixels-clipped', 'tests/test_data.py -k sixteen_bit_pgm', [
        ('fastjem/data.py', '            if im.mode in ("I", "F"):', '            if False:'),
    ]),
    Mutant('dangling-class-link-skipped', 'tests/test_data.py -k dangling_links', [
        ('fastjem/data.py', '    for p in entries:\n        _check_not_dangling(p)\n', ''),
    ]),
    Mutant('dangling-image-link-skipped', 'tests/test_data.py -k dangling_links', [
        ('fastjem/data.py', '                _check_not_dangling(Path(top) / f)\n', '                pass\n'),
    ]),
    Mutant('unlistable-subfolder-skipped', 'tests/test_data.py -k dangling_links', [
        ('fastjem/data.py', 'os.walk(folder, followlinks=True, onerror=unreadable)', 'os.walk(folder, followlinks=True)'),
    ]),
    Mutant('resume-on-changed-images', 'tests/test_train.py -k images_changed', [
        ('fastjem/train.py', '        if saved_data and any(saved_data[k] != self.data_fingerprint[k] for k in ("train", "digest")):', '        if False:'),
    ]),
    Mutant('data-fingerprint-not-saved', 'tests/test_train.py -k images_changed', [
        ('fastjem/train.py', '            "data_fingerprint": self.data_fingerprint,\n', ''),
    ]),
    Mutant('data-fingerprint-without-names', 'tests/test_train.py -k images_changed', [
        ('fastjem/data.py', '.tobytes() + b"|" + arrays.files.encode())', '.tobytes() + b"|")'),
    ]),
    Mutant('data-fingerprint-without-labels', 'tests/test_train.py -k images_changed', [
        ('fastjem/data.py', 'hashlib.sha1(arrays.train_y.numpy().astype("<i8").tobytes() + b"|" + arrays.files', 'hashlib.sha1(b"|" + arrays.files'),
    ]),
    Mutant('untrained-class-not-warned', 'tests/test_data.py -k all_went_to_validation', [
        ('fastjem/data.py', '        if missing:\n            # a rare class', '        if False:\n            # a rare class'),
    ]),
    Mutant('data-note-misses-untrained', 'tests/test_data.py -k all_went_to_validation', [
        ('fastjem/cli.py', '    if r["untrained"]:', '    if False:'),
    ]),
    Mutant('untrained-classes-before-the-split', 'tests/test_data.py -k all_went_to_validation', [
        ('fastjem/data.py', 'arrays.train_y[validation_split(len(arrays.train_y), val)[1]]', 'arrays.train_y'),
    ]),
    Mutant('stray-images-unsaid', 'tests/test_data.py -k beside_the_class', [
        ('fastjem/data.py', '    if classes and loose:', '    if False:'),
    ]),
    Mutant('torchvision-other-set-unsaid', 'tests/test_data.py -k missing_dataset_says', [
        ('fastjem/data.py', '        if others:\n            # (cifar10 asked', '        if False:\n            # (cifar10 asked'),
    ]),
    Mutant('rng-state-float-seed-truncated', 'tests/test_kernels_rng.py -k no_integer', [
        ('kernels/rng.py', '    seed = as_integer(f"{owner}: seed", seed, advice=": pass int(seed) if truncating it is meant")', '    seed = int(seed)'),
    ]),
    Mutant('calibration-compare-other-classes', 'tests/test_eval.py -k folder_run_of_other_classes', [
        ('fastjem/eval/tasks.py', '    if other.num_classes != em.num_classes or class_names_differ(em.info.classes, other.info.classes):', '    if False:'),
    ]),
    Mutant('calibration-compare-other-image-size', 'tests/test_eval.py -k folder_run_of_other_classes', [
        ('fastjem/eval/tasks.py', '    if other.sample_shape != em.sample_shape:', '    if False:'),
    ]),
    Mutant('samples-task-informative-ignores-data-dir', 'tests/test_eval.py -k informative_chains_read', [
        ('fastjem/eval/tasks.py', '    x0 = chain_starts(em, start, len(y), y, run.data_dir, run.download)', '    x0 = chain_starts(em, start, len(y), y)'),
    ]),
    Mutant('sample-cli-data-dir-dropped', 'tests/test_eval.py -k informative_chains_read', [
        ('fastjem/eval/cli.py', '                      data_dir=args.data_dir, download=args.download)', '                      data_dir="", download=args.download)'),
    ]),
    Mutant('class-gaussians-read-the-training-folder', 'tests/test_eval.py -k informative_chains_read', [
        ('fastjem/eval/draw.py', '    split = DeviceData(em.arrays(data_dir, download),', '    split = DeviceData(em.arrays(),'),
    ]),
    Mutant('init-weights-options-unsaid', 'tests/test_train.py -k init_weights_refusals', [
        ('fastjem/train.py', 'f"{saved.model_name} norm={saved.norm}); give {flags} to build its network, or a "', 'f"{saved.model_name} norm={saved.norm}); give a "'),
    ]),
    Mutant('init-weights-convnet-depth-compared', 'tests/test_train.py -k init_weights_refusals', [
        ('fastjem/train.py', 'if saved.arch == "wrn" else ("arch", "width", "norm")', 'if True else ("arch", "width", "norm")'),
    ]),
    Mutant('init-weights-images-unchecked', 'tests/test_train.py -k init_weights_refusals', [
        ('fastjem/train.py', '        if theirs != mine:\n            shape = lambda', '        if False:\n            shape = lambda'),
    ]),
    Mutant('init-weights-resize-unsaid', 'tests/test_train.py -k init_weights_refusals', [
        ('fastjem/train.py', 'resize = f" (--image-size {theirs[2]} resizes these)" if theirs[:2] == mine[:2] else ""', 'resize = ""'),
    ]),
    Mutant('class-gaussians-every-training-image', 'tests/test_eval.py -k runs_own_class_gaussians', [
        ('fastjem/eval/draw.py', '    labelled = split.labelled\n', '    labelled = slice(None)\n'),
    ]),
    Mutant('class-gaussians-validation-included', 'tests/test_eval.py -k runs_own_class_gaussians', [
        ('fastjem/eval/draw.py', 'torch.device("cpu"), cfg.val_size, cfg.labels_per_class,', 'torch.device("cpu"), 0, cfg.labels_per_class,'),
    ]),
    Mutant('sample-class-names-not-passed', 'tests/test_eval.py -k named_class', [
        ('fastjem/eval/cli.py', 'draw.parse_classes(args.classes, em.num_classes, tuple(em.info.classes))', 'draw.parse_classes(args.classes, em.num_classes)'),
    ]),
    Mutant('sample-class-names-ignored', 'tests/test_eval.py -k class_names_beside', [
        ('fastjem/eval/draw.py', '    named = dict(zip(names, range(num_classes))) if len(names) == num_classes else {}', '    named = {}'),
    ]),
    Mutant('sample-data-dir-ignored-unsaid', 'tests/test_eval.py -k would_not_read', [
        ('fastjem/eval/cli.py', '    if (args.data_dir or args.download) and start != "informative":', '    if False:'),
    ]),
    Mutant('imported-resume-advice-without-network', 'tests/test_convert.py', [
        ('fastjem/train.py', 'f"start a run from its network with --init-weights {ckpt[\'path\']}{net}")', 'f"start a run from its network with --init-weights {ckpt[\'path\']}")'),
    ]),
    Mutant('resume-fingerprint-compares-test-images', 'tests/test_train.py -k only_the_test_images', [
        ('fastjem/train.py', 'for k in ("train", "digest")):', 'for k in ("train", "test", "digest")):'),
    ]),
    Mutant('train-fingerprint-with-test-names', 'tests/test_train.py -k only_the_test_images', [
        ('fastjem/data.py', '            files = _names_digest(((split[0], train_items),), classes)', '            files = _names_digest(((split[0], train_items), (split[1], test_items)), classes)'),
    ]),
    Mutant('train-fingerprint-without-names', 'tests/test_train.py -k "images_changed or only_the_test_images"', [
        ('fastjem/data.py', '    return Arrays(tx, ty, vx, vy, info, files)', '    return Arrays(tx, ty, vx, vy, info)'),
    ]),
    Mutant('names-digest-not-utf8-raises', 'tests/test_data.py -k not_utf8', [
        ('fastjem/data.py', 'return hashlib.sha1("\\n".join(names).encode(errors="surrogateescape"))', 'return hashlib.sha1("\\n".join(names).encode())'),
    ]),
    Mutant('split-hash-not-utf8-raises', 'tests/test_data.py -k not_utf8', [
        ('fastjem/data.py', 'hashlib.sha1(f"{SPLIT_SEED}:{key}".encode(errors="surrogateescape"))', 'hashlib.sha1(f"{SPLIT_SEED}:{key}".encode())'),
    ]),
    Mutant('cache-key-not-utf8-raises', 'tests/test_data.py -k not_utf8', [
        ('fastjem/data.py', '{st.st_ctime_ns}".encode(\n            errors="surrogateescape"))', '{st.st_ctime_ns}".encode())'),
    ]),
    Mutant('cache-slot-not-utf8-raises', 'tests/test_data.py -k not_utf8', [
        ('fastjem/data.py', 'f"{os.path.abspath(root)}|{size}".encode(errors="surrogateescape")', 'f"{os.path.abspath(root)}|{size}".encode()'),
    ]),
    Mutant('atomic-file-plain-mkdir', 'tests/test_cli.py -k will_not_make', [
        ('fastjem/checkpoint.py', '        make_folder(path.parent)\n', '        path.parent.mkdir(parents=True, exist_ok=True)\n'),
    ]),
    Mutant('lse-energy-backward-fake-any-args-ok', 'tests/test_kernels_energy.py -k refuses_arguments_not_of_the_batch', [
        ('kernels/energy.py', 'def _(grad_energy, logits, labels, row_max, row_sumexp, backend):\n    _check_backward_inputs(grad_energy, logits, labels, row_max, row_sumexp)', 'def _(grad_energy, logits, labels, row_max, row_sumexp, backend):\n    pass'),
    ]),
    Mutant('sgld-compiled-step-sizes-unchecked', 'tests/test_kernels_sgld.py -k told_what_to_pass', [
        ('kernels/sgld.py', '    alpha, sigma = as_number("sgld_step_compiled_", "alpha", alpha), as_number("sgld_step_compiled_", "sigma", sigma)\n', ''),
    ]),
    Mutant('dangling-non-image-link-refused', 'tests/test_data.py -k dangling', [
        ('fastjem/data.py', '            if f.lower().endswith(IMAGE_SUFFIXES) or not Path(f).suffix:\n', '            if True:\n'),
    ]),
    Mutant('resume-hint-path-unquoted', 'tests/test_cli.py -k printed_resume_command', [
        ('fastjem/train.py', 'self.log(f"resume with: {self.resume_hint.format(checkpoint=shlex.quote(str(ckpt_path)))}")',
         'self.log(f"resume with: {self.resume_hint.format(checkpoint=ckpt_path)}")'),
    ]),
    Mutant('metrics-jsonl-writes-bare-nan', 'tests/test_guard.py -k strict_json', [
        ('fastjem/train.py', '            f.write(strict_json(record) + "\\n")', '            f.write(json.dumps(record) + "\\n")'),
    ]),
    Mutant('strict-json-keeps-nan', 'tests/test_guard.py -k strict_json', [
        ('fastjem/checkpoint.py', '    if isinstance(obj, float) and not math.isfinite(obj):\n        return None',
         '    if False:\n        return None'),
    ]),
    Mutant('metrics-null-not-read-as-nan', 'tests/test_guard.py -k strict_json', [
        ('fastjem/curves.py', '        r = {k: math.nan if v is None and k in NUMBERS else v for k, v in r.items()}',
         '        r = dict(r)'),
    ]),
    Mutant('console-warnings-to-stdout', 'tests/test_cli.py -k cautions_go_to_stderr', [
        ('fastjem/console.py', '    print(line, file=sys.stderr if line.startswith("warning:") else sys.stdout)',
         '    print(line)'),
    ]),
    Mutant('bar-warnings-to-stdout', 'tests/test_cli.py -k cautions_go_to_stderr', [
        ('fastjem/train.py', 'bar.write(line, file=sys.stderr if line.startswith("warning:") else sys.stdout)',
         'bar.write(line, file=sys.stdout)'),
    ]),
    Mutant('progress-bar-redraws-a-log-file', 'tests/test_console.py -k log_file', [
        ('fastjem/console.py', 'kwargs["mininterval"] = tty_interval if tty else 30.0',
         'kwargs["mininterval"] = tty_interval'),
    ]),
    Mutant('sgld-bar-plain-tqdm', 'tests/test_console.py -k log_file', [
        ('fastjem/eval/core.py', '    from fastjem.console import progress_bar\n\n    out = []',
         '    from tqdm import tqdm as progress_bar\n\n    out = []'),
    ]),
    Mutant('progress-bar-blank-on-a-sizeless-terminal', 'tests/test_console.py -k no_size', [
        ('fastjem/console.py', '    if size is not None and size.columns == 0:', '    if False:'),
    ]),
    Mutant('train-help-tuple-default-as-python', 'tests/test_cli.py -k help_defaults_read', [
        ('fastjem/cli.py', """        text += f" (default: {' '.join(map(str, default))})\"""",
         """        text += f" (default: {default})\""""),
    ]),
    Mutant('train-help-empty-default', 'tests/test_cli.py -k help_defaults_read', [
        ('fastjem/cli.py', '        text += "" if "default" in text else " (default: none)"',
         '        text += f" (default: {default})"'),
    ]),
    Mutant('resumed-done-line-counts-all-iterations', 'tests/test_cli.py -k end_to_end_in_a_subprocess', [
        ('fastjem/cli.py', """    here = f" ({summary['iteration'] - resumed_at} here, resumed at iteration {resumed_at})\"""",
         '    here = ""'),
    ]),
    Mutant('resumed-start-line-silent', 'tests/test_cli.py -k end_to_end_in_a_subprocess', [
        ('fastjem/train.py', '+ (f", resuming at iteration {self.iteration}" if self._resumed_from is not None else "")', '+ ""'),
    ]),
    Mutant('metrics-field-the-readme-does-not-name', 'tests/test_readme.py -k names_every_field', [
        ('fastjem/train.py', '"rolled_back_to": back_to,', '"rolled_back": back_to,'),
    ]),
    Mutant('archive-reading-bar-in-a-log-file', 'tests/test_data.py -k cursor_escapes', [
        ('fastjem/data.py', 'disable=not progress or not sys.stderr.isatty()):', 'disable=not progress):'),
    ]),
    Mutant('rollback-bar-keeps-its-old-count', 'tests/test_guard.py -k goes_on_drawing', [
        ('fastjem/train.py', '    bar.n = bar.last_print_n = iteration', '    bar.n = iteration'),
    ]),
    Mutant('final-validation-without-the-stop-handler', 'tests/test_guard.py -k final_validation_still', [
        ('fastjem/train.py', '            if not ended:  # an error', '            if True:  # an error'),
    ]),
    Mutant('signal-during-final-validation-ignored', 'tests/test_guard.py -k final_validation_still', [
        ('fastjem/train.py', 'stopping = self._agree_on_stop(stop) if self.dist.enabled else stop["signal"] is not None',
         'stopping = self._agree_on_stop(stop) if self.dist.enabled else False'),
    ]),
    Mutant('sweep-eval-comparison-writes-bare-nan', 'tests/test_history.py -k diverged_seed', [
        ('fastjem/eval/history.py', 'atomic_write_text(strict_json(result, indent=2)', 'atomic_write_text(json.dumps(result, indent=2)'),
    ]),
    Mutant('runs-unreadable-summary-unsaid', 'tests/test_runs.py -k summary_cannot_be_read', [
        ('fastjem/runs.py', '    elif summary is None and state == "stopped" and (folder / "summary.json").exists():', '    elif False:'),
    ]),
    Mutant('trainer-leaves-its-rng-in-the-callers-generator', 'tests/test_process.py -k leaves_torchs_global', [
        ('fastjem/train.py', '            _set_rng_states(self.device, outer)', '            pass'),
    ]),
    Mutant('trainer-draws-from-the-callers-generator', 'tests/test_process.py -k whatever_the_process_drew', [
        ('fastjem/train.py', '        _set_rng_states(self.device, self._rng)\n        self._rng_depth += 1',
         '        self._rng_depth += 1'),
    ]),
    Mutant('trainer-step-by-hand-draws-from-the-callers-generator', 'tests/test_process.py -k steps_outside_fit', [
        ('fastjem/train.py', '    @_drawing\n    def train_step(self) -> dict:', '    def train_step(self) -> dict:'),
    ]),
    Mutant('draw-reseeds-the-callers-generator', 'tests/test_process.py -k draw_repeats', [
        ('fastjem/eval/draw.py', '    with torch.random.fork_rng(devices=[em.device] if em.device.type == "cuda" else []):',
         '    if True:'),
    ]),
    Mutant('eval-task-reseeds-the-callers-generator', 'tests/test_process.py -k eval_tasks', [
        ('fastjem/eval/tasks.py', '        with torch.random.fork_rng(devices=[torch.cuda.current_device()] if cuda else []):\n            return task(', '        if True:\n            return task('),
    ]),
    Mutant('trainer-engine-flags-not-set', 'tests/test_process.py',
           [('fastjem/train.py', """        if flags is not None:
            set_backend_flags(flags)
        _set_rng_states(self.device, self._rng)""", """        _set_rng_states(self.device, self._rng)""")]),
    Mutant('trainer-callers-flags-not-restored', 'tests/test_process.py',
           [('fastjem/train.py', """            _set_rng_states(self.device, outer)
            set_backend_flags(outer_flags)""", """            _set_rng_states(self.device, outer)""")]),
    Mutant('sweep-results-grid-as-text', 'tests/test_sweep.py -k results_json',
           [('fastjem/sweep.py', """        groups.append({**{k: _typed(v) for k, v in combo.items()},""",
             """        groups.append({**{k: show_value(v) for k, v in combo.items()},""")]),
    Mutant('sweep-table-shows-raw-values', 'tests/test_sweep.py -k results_json',
           [('fastjem/sweep.py', """        return render_table(head, [[show_value(g[k]) for k in keys]""",
             """        return render_table(head, [[str(g[k]) for k in keys]""")]),
    Mutant('compare-groups-values-as-text', 'tests/test_sweep.py -k results_json',
           [('fastjem/eval/history.py', """            {**{k: json.loads(v) for k, v in zip(grid, combo)},""",
             """            {**{k: v for k, v in zip(grid, combo)},""")]),
    Mutant('compare-table-shows-raw-values', 'tests/test_sweep.py -k results_json',
           [('fastjem/eval/history.py', """        rows = [[*(show_value(g[k]) for k in grid),""",
             """        rows = [[*(str(g[k]) for k in grid),""")]),
    Mutant('metrics-lines-without-time', 'tests/test_train.py -k says_when_it_was_written',
           [('fastjem/train.py', """        record = {**record, "time": round(time.time(), 3)}""", """        record = {**record}""")]),
    Mutant('data-command-reads-digits-beside-a-data-dir', 'tests/test_cli.py -k "refused_before_any_work and data"', [
        ('fastjem/cli.py', '    if args.dataset == "digits" and unread:', '    if False and unread:'),
    ]),
    Mutant('sweep-help-is-trains', 'tests/test_cli.py -k sweep_help', [
        ('fastjem/cli.py', '    add_train_arguments(p, sweep=True)', '    add_train_arguments(p)'),
    ]),
    Mutant('sweep-help-lists-what-it-refuses', 'tests/test_cli.py -k sweep_help', [
        ('fastjem/cli.py', '    "resume": None, "print_config": None, "seed": None,', ''),
    ]),
    Mutant('bench-seed-help-dropped', 'tests/test_cli.py -k every_option_of_every', [
        ('fastjem/cli.py', 'help="random seed of the network\'s weights and the chains "\n                                                         "(default: 0)")', ')'),
    ]),
    Mutant('bench-steps-help-without-its-default', 'tests/test_cli.py -k every_option_of_every', [
        ('fastjem/cli.py', 'help="SGLD steps per sampling call (default: 20)"', 'help="SGLD steps per sampling call"'),
    ]),
    Mutant('ood-grad-norm-score-keeps-fp64', 'tests/test_eval.py -k score_and_statistic', [
        ('fastjem/eval/ood.py', 'grad_norm_score(model, xb).float().cpu()', 'grad_norm_score(model, xb).cpu()'),
    ]),
    Mutant('trainer-keeps-the-compile-wrapper', 'tests/test_custom.py -k compiled', [
        ('fastjem/train.py', '            if plain_module(model) is not model:', '            if False:'),
    ]),
    Mutant('load-model-keeps-the-compile-wrapper', 'tests/test_custom.py -k compiled', [
        ('fastjem/eval/core.py', '        model = plain_module(model)  # a torch.compile', '        pass  # a torch.compile'),
    ]),
    Mutant('load-model-keeps-the-compiled-prefix', 'tests/test_custom.py -k compiled', [
        ('fastjem/eval/core.py', '        model.load_state_dict(plain_state_dict(ckpt["model"]))', '        model.load_state_dict(ckpt["model"])'),
    ]),
    Mutant('init-weights-keeps-the-compiled-prefix', 'tests/test_custom.py -k compiled', [
        ('fastjem/train.py', '            self.model.load_state_dict(plain_state_dict(source["model"]))', '            self.model.load_state_dict(source["model"])'),
    ]),
    Mutant('plain-state-dict-strips-a-partial-prefix', 'tests/test_custom.py -k compiled', [
        ('fastjem/models/__init__.py', 'if not (state and all(isinstance(k, str) and k.startswith(COMPILED_PREFIX) for k in state)):', 'if not (state and any(isinstance(k, str) and k.startswith(COMPILED_PREFIX) for k in state)):'),
    ]),
    Mutant('lse-energy-takes-a-tuple-of-logits', 'tests/test_energy.py -k several_outputs', [
        ('kernels/energy.py', '    _check_tensor("lse_energy", logits, labels)\n', ''),
    ]),
    Mutant('energies-take-a-tuple-of-logits', 'tests/test_energy.py -k several_outputs', [
        ('fastjem/energy.py', '    if not isinstance(logits, torch.Tensor):\n        raise TypeError', '    if False:\n        raise TypeError'),
    ]),
    Mutant('engine-keeps-channels-last-a-view-refuses', 'tests/test_custom.py -k views_its_activations', [
        ('fastjem/engine.py', '        why = channels_last_failure(model, sample_shape)', '        why = None'),
    ]),
    Mutant('engine-leaves-a-failed-channels-last-conversion', 'tests/test_custom.py -k views_its_activations', [
        ('fastjem/engine.py', '    model.to(memory_format=torch.contiguous_format)\n    return f"channels_last', '    return f"channels_last'),
    ]),
    Mutant('engine-never-converts-to-channels-last', 'tests/test_custom.py -k views_its_activations', [
        ('fastjem/engine.py', '        model.to(memory_format=torch.channels_last)\n        why =', '        why ='),
    ]),
    Mutant('engine-fails-on-a-5d-parameter', 'tests/test_custom.py -k views_its_activations', [
        ('fastjem/engine.py', '    except RuntimeError as err:  # a 5-d parameter', '    except ValueError as err:  # a 5-d parameter'),
    ]),
    Mutant('resume-at-iteration-0-keeps-the-killed-attempts-records', 'tests/test_guard.py -k rolled_back_to_its_start_and_killed', [
        ('fastjem/train.py', '            if self.dist.is_main and (self.iteration > 0 or self._resumed_from is not None):\n                self._continue_records()',
         '            if self.dist.is_main and self.iteration > 0:\n                self._continue_records()'),
    ]),
    Mutant('resume-at-iteration-0-purges-no-tensorboard-step', 'tests/test_board.py -k resume_at_iteration_0', [
        ('fastjem/train.py', 'start = self.iteration if at_end else self.iteration + 1 if resumed else 0',
         'start = self.iteration if at_end else self.iteration + 1 if self.iteration else 0'),
    ]),
    Mutant('stop-at-a-rollback-to-the-start-keeps-iteration-0', 'tests/test_guard.py -k keeps_no_checkpoint_of_iteration_0', [
        ('fastjem/train.py', 'if cfg.ckpt_keep_every and self.iteration == self.total_iters and self.iteration % cfg.ckpt_keep_every == 0:',
         'if cfg.ckpt_keep_every and self.iteration % cfg.ckpt_keep_every == 0:'),
    ]),
    Mutant('config-file-epochs-overridden-by-the-presets-iters', 'tests/test_cli.py -k epochs_alone', [
        ('fastjem/cli.py', '        if ("epochs" in from_file and "iters" not in from_file and "iters" not in overrides',
         '        if (False and "epochs" in from_file and "iters" not in from_file and "iters" not in overrides'),
    ]),
    Mutant('config-file-epochs-refused-beside-iters-on-the-command-line', 'tests/test_cli.py -k epochs_alone', [
        ('fastjem/cli.py', '        if ("epochs" in from_file and "iters" not in from_file and "iters" not in overrides',
         '        if ("epochs" in from_file and "iters" not in from_file'),
    ]),
    Mutant('epochs-length-from-the-float-product', 'tests/test_train.py -k first_iteration_whose_epoch', [
        ('fastjem/train.py', '    while n > 1 and (n - 1) / iters_per_epoch >= epochs:\n        n -= 1',
         '    while False:\n        n -= 1'),
    ]),
    Mutant('curves-read-quadratic', 'tests/test_curves.py -k "long_log or keeps_the_iterations"', [
        ('fastjem/curves.py', '    while records and records[-1]["iter"] >= it:\n        records.pop()', '    records[:] = [r for r in records if r["iter"] < it]'),
    ]),
    Mutant('buffer-memory-unchecked', 'tests/test_buffer.py -k past_the_free', [
        ('fastjem/buffer.py', '        check_fits(size * chain, self.device,', '        check_fits(0, self.device,'),
    ]),
    Mutant('informative-init-memory-unchecked', 'tests/test_buffer.py -k past_the_free', [
        ('fastjem/buffer.py', '        check_fits(num_classes * d * d * 4 + 2 * d * d * 8, x.device,', '        check_fits(0, x.device,'),
    ]),
    Mutant('dataset-memory-unchecked', 'tests/test_data.py -k past_the_devices', [
        ('fastjem/data.py', '        check_fits(needed, device, f"the dataset', '        check_fits(0, device, f"the dataset'),
    ]),
    Mutant('dataset-memory-test-split-left-out-on-gpu', 'tests/test_data.py -k past_the_devices', [
        ('fastjem/data.py', '        needed = arrays.train_x.nbytes + arrays.test_x.nbytes\n', '        needed = arrays.train_x.nbytes\n'),
    ]),
    Mutant('free-memory-without-swap', 'tests/test_buffer.py -k "free_memory or past_the_free"', [
        ('fastjem/memory.py', '        host = info["MemAvailable"] + swap if', '        host = info["MemAvailable"] if'),
    ]),
    Mutant('free-gpu-memory-without-the-cache', 'tests/test_buffer.py -k free_memory', [
        ('fastjem/memory.py', '            return int(free + torch.cuda.memory_reserved(index) - torch.cuda.memory_allocated(index))', '            return int(free)'),
    ]),
    Mutant('imagefolder-split-a-pass-per-class', 'tests/test_data.py -k "many_classes or small_class"', [
        ('fastjem/data.py', '    for members in by_class.values():', '    for members in ([i for i, item in enumerate(items) if item[1] == label] for label in by_class):'),
    ]),
    Mutant('imagefolder-decode-memory-unchecked', 'tests/test_data.py -k too_large_to_decode', [
        ('fastjem/data.py', '            check_fits(2 * total * c * h * w, "cpu",', '            check_fits(0, "cpu",'),
    ]),
    Mutant('data-fit-whole-set-in-floats', 'tests/test_data.py -k fit_size', [
        ('fastjem/data.py', '    for i in range(0, flat.shape[0], FIT_CHUNK):', '    for i in range(0, flat.shape[0], flat.shape[0] or 1):'),
        ('fastjem/data.py', '        part = F.interpolate(flat[i:i + FIT_CHUNK].float()', '        part = F.interpolate(flat.float()'),
        ('fastjem/data.py', '        out[i:i + FIT_CHUNK] = part', '        out[:] = part'),
    ]),
    Mutant('instance-norm-size-unchecked-in-config', 'tests/test_models.py -k too_small_images_is_refused', [
        ('fastjem/config.py', '            check_image_size(self.arch, self.norm, self.image_size, width=self.width)', '            pass'),
    ]),
    Mutant('instance-norm-size-unchecked-in-trainer', 'tests/test_models.py -k too_small_images_is_refused', [
        ('fastjem/train.py', '            check_image_size(cfg.arch, cfg.norm, arrays.info.image_size, given, width=cfg.width)',
         '            pass'),
    ]),
    Mutant('instance-norm-size-unchecked-in-bench', 'tests/test_models.py -k too_small_images_is_refused', [
        ('fastjem/benchmark.py', '        check_image_size(cfg.arch, cfg.norm, size, width=cfg.width)', '        pass'),
    ]),
    Mutant('instance-norm-wrn-halved-once', 'tests/test_models.py -k instance_norm', [
        ('fastjem/models/__init__.py', '    for _ in range(2 if arch == "wrn" else 1):', '    for _ in range(1):'),
    ]),
    Mutant('instance-norm-needs-one-pixel', 'tests/test_models.py -k instance_norm', [
        ('fastjem/models/__init__.py', '    while smallest_norm_size(arch, side) < 2:', '    while smallest_norm_size(arch, side) < 1:'),
    ]),
    Mutant('cgroup-limit-ignored', 'tests/test_buffer.py -k cgroup', [
        ('fastjem/memory.py', '        cgroup = _cgroup_free(swap)', '        cgroup = None'),
    ]),
    Mutant('cgroup-parents-ignored', 'tests/test_buffer.py -k cgroup', [
        ('fastjem/memory.py', '    return [folder, *[p for p in folder.parents if p == root or root in p.parents]]', '    return [folder]'),
    ]),
    Mutant('cgroup-namespace-root-not-read', 'tests/test_buffer.py -k cgroup', [
        ('fastjem/memory.py', '    if ".." in Path(path).parts or not folder.is_dir():\n        return [root]', '    if ".." in Path(path).parts or not folder.is_dir():\n        return []'),
    ]),
    Mutant('cgroup-page-cache-not-free', 'tests/test_buffer.py -k cgroup', [
        ('fastjem/memory.py', 'take(limit - used + stat.get("active_file", 0) + stat.get("inactive_file", 0) + swap)', 'take(limit - used + swap)'),
    ]),
    Mutant('cgroup-v1-no-limit-read-as-a-limit', 'tests/test_buffer.py -k cgroup', [
        ('fastjem/memory.py', 'return int(text) if text.isdecimal() and int(text) < NO_LIMIT else None', 'return int(text) if text.isdecimal() else None'),
    ]),
    Mutant('cgroup-swap-limit-ignored', 'tests/test_buffer.py -k cgroup', [
        ('fastjem/memory.py', '                swap = min(swap, max(0, swap_limit - swap_used))', '                pass'),
    ]),
    Mutant('cgroup-swap-not-counted', 'tests/test_buffer.py -k cgroup', [
        ('fastjem/memory.py', '            swap = swap_free\n', '            swap = 0\n'),
    ]),
    Mutant('cgroup-v1-memsw-ignored', 'tests/test_buffer.py -k cgroup', [
        ('fastjem/memory.py', '                free = min(free, both - both_used + cache)', '                pass'),
    ]),
    Mutant('cgroup-v1-not-read', 'tests/test_buffer.py -k cgroup', [
        ('fastjem/memory.py', '        elif "memory" in controllers.split(","):', '        elif False:'),
    ]),
    Mutant('zip-image-count-unused', 'tests/test_data.py -k archives_too_large', [
        ('fastjem/data.py', '                                              _archive_image_count(archives), progress=progress))',
         '                                              None, progress=progress))'),
    ]),
    Mutant('tar-decoding-unchecked', 'tests/test_data.py -k archives_too_large', [
        ('fastjem/data.py', '            if free is not None and 2 * held["bytes"] > free:', '            if False:'),
    ]),
    Mutant('sample-number-is-an-index-first', 'tests/test_eval.py -k "class_names_beside or number_as_the_class"', [
        ('fastjem/eval/draw.py', '        if s in named:\n            c = named[s]', '        if s in named and not s.isdecimal():\n            c = named[s]'),
    ]),
    Mutant('sample-classes-drawn-not-printed', 'tests/test_eval.py -k number_as_the_class', [
        ('fastjem/eval/cli.py', "        print(f\"  classes         {', '.join(draw.class_label(c, names) for c in classes[:20])}{more}\")", '        pass'),
    ]),
    Mutant('sample-class-names-not-saved', 'tests/test_eval.py -k number_as_the_class', [
        ('fastjem/eval/draw.py', '"class_names": ([em.info.classes[c] for c in classes]', '"class_names": ([em.info.classes[0] for c in classes]'),
    ]),
    Mutant('data-grid-rows-unnamed', 'tests/test_cli.py -k data_command_tabulates', [
        ('fastjem/cli.py', '        shown = [r["classes"][c] if c < len(r["classes"]) else str(c) for c in range(len(rows))]', '        shown = [str(c) for c in range(len(rows))]'),
    ]),
    Mutant('resumed-at-0-start-line-silent', 'tests/test_train.py -k resumed_at_iteration_0', [
        ('fastjem/train.py', '+ (f", resuming at iteration {self.iteration}" if self._resumed_from is not None else "")',
         '+ (f", resuming at iteration {self.iteration}" if self.iteration else "")'),
    ]),
    Mutant('resumed-at-0-warm-up-warned-again', 'tests/test_train.py -k resumed_at_iteration_0', [
        ('fastjem/train.py', '        if self._resumed_from is None and cfg.warmup_iters > self.total_iters:',
         '        if self.iteration == 0 and cfg.warmup_iters > self.total_iters:'),
    ]),
    Mutant('resumed-at-0-done-line-unsaid', 'tests/test_cli.py -k resumed_at_iteration_0', [
        ('fastjem/cli.py', "resumed at iteration {resumed_at})\" if args.resume else \"\"", "resumed at iteration {resumed_at})\" if resumed_at else \"\""),
    ]),
    Mutant('schedule-line-unsaid', 'tests/test_train.py -k schedule_in_iterations', [
        ('fastjem/train.py', '        self.log(schedule_description(cfg, self.iters_per_epoch, self.total_iters)',
         '        (schedule_description(cfg, self.iters_per_epoch, self.total_iters)'),
    ]),
    Mutant('schedule-unreached-decays-listed-as-reached', 'tests/test_train.py -k schedule_in_iterations', [
        ('fastjem/train.py', '    reached = [m for m in milestones if m[0] < total_iters]',
         '    reached = milestones'),
    ]),
    Mutant('schedule-decay-one-iteration-early', 'tests/test_train.py -k schedule_in_iterations', [
        ('fastjem/train.py', '    return [(epoch_iterations(e, iters_per_epoch) if e > 0 else 0, e) for e in sorted(cfg.decay_epochs)]',
         '    return [(epoch_iterations(e, iters_per_epoch) - 1 if e > 0 else 0, e) for e in sorted(cfg.decay_epochs)]'),
    ]),
    Mutant('schedule-line-a-warning', 'tests/test_train.py -k schedule_in_iterations', [
        ('fastjem/train.py', '    text = f"schedule: learning rate {cfg.lr:g}"', '    text = f"warning: schedule: learning rate {cfg.lr:g}"'),
    ]),
    Mutant('schedule-line-hides-the-guards-rate', 'tests/test_train.py -k schedule_in_iterations', [
        ('fastjem/train.py', '        scaled = self.recovery.lr_scale != 1', '        scaled = False'),
    ]),
    Mutant('rollback-not-checkpointed-by-a-run-that-keeps-checkpoints', 'tests/test_guard.py -k checkpointed_at_once_by_a_run_that_keeps', [
        ('fastjem/train.py', '        if cfg.ckpt_every or cfg.ckpt_keep_every:\n            # and checkpoint.pt holds it',
         '        if cfg.ckpt_every:\n            # and checkpoint.pt holds it'),
    ]),
    Mutant('resume-takes-options-it-would-not-read', 'tests/test_train.py -k options_the_run_would_not_read', [
        ('fastjem/train.py', '    unread, _ = unread_options(saved.replace(**changed), set(changed), resumed=True)',
         '    unread = []'),
    ]),
    Mutant('resume-eval-every-advice-of-a-new-run', 'tests/test_train.py -k options_the_run_would_not_read', [
        ('fastjem/config.py', '        if resumed:  # (the held-out split is fixed when a run starts)',
         '        if False:  # (the held-out split is fixed when a run starts)'),
    ]),
    Mutant('resume-digits-data-dir-advice-of-a-new-run', 'tests/test_train.py -k options_the_run_would_not_read', [
        ('fastjem/config.py', '(f"this run trains on it: drop {them}" if resumed else', '(f"this run trains on it: drop {them}" if False else'),
    ]),
    Mutant('best-kept-before-a-resume-reported-as-this-runs', 'tests/test_best.py -k kept_until', [
        ('fastjem/train.py', '            elif "kept_until" not in self.best:', '            elif False:'),
    ]),
    Mutant('best-kept-until-moved-by-each-resume', 'tests/test_best.py -k kept_until', [
        ('fastjem/train.py', '            elif "kept_until" not in self.best:', '            else:'),
    ]),
    Mutant('best-kept-until-kept-by-a-keeping-resume', 'tests/test_best.py -k kept_until', [
        ('fastjem/train.py', '                self.best = {k: v for k, v in self.best.items() if k != "kept_until"}', '                pass'),
    ]),
    Mutant('best-kept-until-unprinted', 'tests/test_best.py -k kept_until', [
        ('fastjem/cli.py', '        unkept = "" if best.get("kept_until") is None else (', '        unkept = "" if True else ('),
    ]),
    Mutant('batch-larger-than-the-data-unsaid', 'tests/test_train.py -k larger_than_the_training_set', [
        ('fastjem/train.py', '        if self._resumed_from is None and cfg.batch_size > n_train:', '        if False:'),
    ]),
    Mutant('batch-as-large-as-the-data-warned', 'tests/test_train.py -k larger_than_the_training_set', [
        ('fastjem/train.py', '        if self._resumed_from is None and cfg.batch_size > n_train:',
         '        if self._resumed_from is None and cfg.batch_size >= n_train:'),
    ]),
    Mutant('lse-eager-binds-signature-every-call', 'tests/test_kernels_energy.py -k binds_no_signature', [
        ('kernels/energy.py',
         '        eager = _LseEnergyTransformable if torch._C._are_functorch_transforms_active() else _LseEnergyEager',
         '        eager = _LseEnergyTransformable'),
    ]),
    Mutant('lse-eager-ctx-form-under-a-transform', 'tests/test_kernels_energy.py -k plain_tensor_inside', [
        ('kernels/energy.py',
         '        eager = _LseEnergyTransformable if torch._C._are_functorch_transforms_active() else _LseEnergyEager',
         '        eager = _LseEnergyEager'),
    ]),
    Mutant('dist-final-validation-without-the-stop-handler', 'tests/test_distributed.py -k final_validation', [
        ('fastjem/train.py', '            if not ended:  # an error', '            if not ended or self.dist.enabled:  # an error'),
    ]),
    Mutant('dist-signal-during-final-validation-not-agreed', 'tests/test_distributed.py -k final_validation', [
        ('fastjem/train.py', 'stopping = self._agree_on_stop(stop) if self.dist.enabled else stop["signal"] is not None',
         'stopping = stop["signal"] is not None'),
    ]),
    Mutant('start-line-says-1-iterations', 'tests/test_cli.py -k one_iteration_says', [
        ('fastjem/train.py', """f"{counted(self.total_iters, 'iteration')} ({self.iters_per_epoch} per epoch)\"""",
         """f"{self.total_iters} iterations ({self.iters_per_epoch} per epoch)\""""),
    ]),
    Mutant('warmup-warning-says-1-iterations', 'tests/test_cli.py -k one_iteration_says', [
        ('fastjem/train.py', """f"({counted(self.total_iters, 'iteration')}): the learning rate""",
         """f"({self.total_iters} iterations): the learning rate"""),
    ]),
    Mutant('too-short-resume-says-1-iterations', 'tests/test_cli.py -k one_iteration_says', [
        ('fastjem/train.py', """f"{counted(self.total_iters, 'iteration')} long: give""",
         """f"{self.total_iters} iterations long: give"""),
    ]),
    Mutant('done-line-says-1-iterations', 'tests/test_cli.py -k one_iteration_says', [
        ('fastjem/cli.py', """done: {counted(summary['iteration'], 'iteration')}{here}""",
         """done: {summary['iteration']} iterations{here}"""),
    ]),
    Mutant('sweep-dry-run-says-1-iterations', 'tests/test_sweep.py -k 1_iteration_not', [
        ('fastjem/sweep.py', """({counted(iters, 'iteration')} at {rate:.3g}""", """({iters} iterations at {rate:.3g}"""),
    ]),
    Mutant('quick-run-says-1-iterations', 'tests/test_bench.py -k shortened_quick_run', [
        ('bench/quick_run.py', """f"{counted(summary['iteration'], 'iteration')} \"""", """f"{summary['iteration']} iterations \""""),
    ]),
    Mutant('batch-norm-one-image-config-unchecked', 'tests/test_models.py -k batch_norm_on_one', [
        ('fastjem/config.py', '            check_batch_norm_batch(self.arch, self.norm, self.image_size, self.batch_size // world, world)\n', ''),
    ]),
    Mutant('batch-norm-one-image-data-unchecked', 'tests/test_models.py -k batch_norm_on_one', [
        ('fastjem/train.py', '            check_batch_norm_batch(cfg.arch, cfg.norm, arrays.info.image_size, cfg.batch_size // world, world, given)\n', ''),
    ]),
    Mutant('batch-norm-one-image-advice-ignores-processes', 'tests/test_models.py -k batch_norm_on_one', [
        ('fastjem/models/__init__.py', 'give --batch-size {2 * world} or more', 'give --batch-size 2 or more'),
    ]),
    Mutant('sample-default-name-by-index', 'tests/test_eval.py -k "number_as_the_class or default_sample_file"', [
        ('fastjem/eval/draw.py', '"-".join(safe[c] if names else str(c) for c in classes)', '"-".join(str(c) for c in classes)'),
    ]),
    Mutant('sample-default-name-characters-kept', 'tests/test_eval.py -k default_sample_file', [
        ('fastjem/eval/draw.py', 'safe = [re.sub(r"[^\\w.+-]+", "_", n) for n in names]', 'safe = list(names)'),
    ]),
    Mutant('sample-default-name-not-cut', 'tests/test_eval.py -k default_sample_file', [
        ('fastjem/eval/draw.py', '    if len(name.encode()) > 120:', '    if False:'),
    ]),
    Mutant('cifar-archive-unpacked-by-torchvision', 'tests/test_data.py -k "torchvision_archive"', [
        ('fastjem/data.py', '            _unpack_tar(root / archive, root)', '            download = True'),
    ]),
    Mutant('cifar-archive-unpacked-without-filter', 'tests/test_data.py -k data_filter', [
        ('fastjem/data.py', '            tar.extractall(dest, filter="data")', '            tar.extractall(dest)'),
    ]),
    Mutant('cifar-archive-unchecked-before-filters', 'tests/test_data.py -k data_filter', [
        ('fastjem/data.py', '            if not (m.isfile() or m.isdir()) or (inside != top and top not in inside.parents):',
         '            if not (m.isfile() or m.isdir()):'),
    ]),
    Mutant('log-file-bar-redrawn-by-tqdm-monitor', 'tests/test_console.py -k 30_s', [
        ('fastjem/console.py', '        kwargs["maxinterval"] = 30.0', '        pass'),
    ]),
    Mutant('figures-switch-the-callers-backend', 'tests/test_eval.py -k callers_matplotlib', [
        ('fastjem/eval/plots.py', '    return _Figures()', '    import matplotlib\n\n    matplotlib.use("Agg", force=False)\n    return _Figures()'),
    ]),
    Mutant('evalmodel-repr-prints-buffer-and-network', 'tests/test_notebook.py -k evaluated_model', [
        ('fastjem/eval/core.py',
         '    def __repr__(self) -> str:\n        # what was loaded, in one line',
         '    def _unused_repr(self) -> str:\n        # what was loaded, in one line'),
    ]),
    Mutant('replay-buffer-repr-default', 'tests/test_notebook.py -k constructors_take_them', [
        ('fastjem/buffer.py',
         '    def __repr__(self) -> str:\n        # the settings, never the chains',
         '    def _unused_repr(self) -> str:\n        # the settings, never the chains'),
    ]),
    Mutant('class-gaussians-repr-default', 'tests/test_notebook.py -k constructors_take_them', [
        ('fastjem/buffer.py',
         '    def __repr__(self) -> str:\n        # the settings and the size, never the factors',
         '    def _unused_repr(self) -> str:\n        # the settings and the size, never the factors'),
    ]),
    Mutant('sgld-repr-default', 'tests/test_notebook.py -k constructors_take_them', [
        ('fastjem/sampler.py',
         "    def __repr__(self) -> str:\n        # the constructor's settings",
         "    def _unused_repr(self) -> str:\n        # the constructor's settings"),
    ]),
    Mutant('arrays-repr-prints-tensors', 'tests/test_notebook.py -k sizes_not_contents', [
        ('fastjem/data.py',
         '    def __repr__(self) -> str:\n        # the sizes, not the images',
         '    def _unused_repr(self) -> str:\n        # the sizes, not the images'),
    ]),
    Mutant('metrics-repr-prints-every-record', 'tests/test_notebook.py -k sizes_not_contents', [
        ('fastjem/curves.py',
         '    def __repr__(self) -> str:\n        # counts and the span',
         '    def _unused_repr(self) -> str:\n        # counts and the span'),
    ]),
    Mutant('drawn-repr-prints-pixels', 'tests/test_notebook.py -k sizes_not_contents', [
        ('fastjem/eval/draw.py',
         '    def __repr__(self) -> str:\n        # shapes, not values',
         '    def _unused_repr(self) -> str:\n        # shapes, not values'),
    ]),
    Mutant('trainer-repr-default', 'tests/test_notebook.py -k one_line_each', [
        ('fastjem/train.py',
         '    def __repr__(self) -> str:\n        # (a Trainer whose __init__ failed has no data yet)',
         '    def _unused_repr(self) -> str:\n        # (a Trainer whose __init__ failed has no data yet)'),
    ]),
    Mutant('device-data-repr-default', 'tests/test_notebook.py -k one_line_each', [
        ('fastjem/data.py',
         '    def __repr__(self) -> str:\n        shape = "x".join(map(str, self.train_x.shape[1:]))',
         '    def _unused_repr(self) -> str:\n        shape = "x".join(map(str, self.train_x.shape[1:]))'),
    ]),
    Mutant('fit-trusts-the-folder-checked-when-built', 'tests/test_notebook.py -k "one_folder or another_wrote"', [
        ('fastjem/train.py', '                self._check_unchanged()', '                pass'),
    ]),
    Mutant('fit-new-run-folder-not-checked-again', 'tests/test_notebook.py -k one_folder', [
        ('fastjem/train.py', '            self._check_out_dir()  # a new run: the folder still holds no run',
         '            pass  # a new run: the folder still holds no run'),
    ]),
    Mutant('fit-ignores-checkpoint-written-by-another-run', 'tests/test_notebook.py -k another_wrote', [
        ('fastjem/train.py', '        if now is not None and now != self._latest_seen:', '        if False:'),
    ]),
    Mutant('own-checkpoint-taken-for-another-runs', 'tests/test_notebook.py -k another_wrote', [
        ('fastjem/train.py', '            self._latest_seen = _file_stamp(path)', '            pass'),
    ]),
    Mutant('notebook-bar-drawn-as-a-log-files', 'tests/test_notebook.py -k notebook_cell', [
        ('fastjem/console.py', '    return out.isatty() or type(out).__module__.partition(".")[0] == "ipykernel"',
         '    return out.isatty()'),
    ]),
    Mutant('second-fit-says-nothing-of-why', 'tests/test_notebook.py -k fit_called_again', [
        ('fastjem/train.py', '        if self._finished:\n            # a notebook', '        if False:\n            # a notebook'),
    ]),
    Mutant('finished-fit-not-recorded', 'tests/test_notebook.py -k fit_called_again', [
        ('fastjem/train.py', '        cfg = self.cfg\n        self._finished = True\n', '        cfg = self.cfg\n'),
    ]),
    Mutant('trainer-data-unchecked', 'tests/test_notebook.py -k by_hand', [
        ('fastjem/train.py', '            check_arrays(data)\n', '            pass\n'),
    ]),
    Mutant('load-model-data-unchecked', 'tests/test_notebook.py -k by_hand', [
        ('fastjem/eval/core.py', '        why = dataset_mismatch(info, check_arrays(data).info)',
         '        why = dataset_mismatch(info, data.info)'),
    ]),
    Mutant('hand-made-arrays-float-images-pass', 'tests/test_notebook.py -k "by_hand and float"', [
        ('fastjem/data.py', 'if not torch.is_tensor(x) or x.dtype != torch.uint8 or tuple(x.shape[1:]) != shape or x.dim() != 4:',
         'if not torch.is_tensor(x) or tuple(x.shape[1:]) != shape or x.dim() != 4:'),
    ]),
    Mutant('hand-made-arrays-labels-unchecked', 'tests/test_notebook.py -k "by_hand and labels"', [
        ('fastjem/data.py', '        if len(y) and (int(y.min()) < 0 or int(y.max()) >= info.num_classes):',
         '        if False:'),
    ]),
    Mutant('second-ctrl-c-waits-for-the-iteration', 'tests/test_notebook.py -k second_ctrl', [
        ('fastjem/train.py', '            if signum == signal.SIGINT and stop["signal"] == signal.SIGINT:', '            if False:'),
    ]),
    Mutant('second-ctrl-c-tears-the-update', 'tests/test_notebook.py -k during_the_update', [
        ('fastjem/train.py', '                if self._updating or stop["writing"]:\n                    stop["abort"] = True\n                    return\n', ''),
    ]),
    Mutant('second-ctrl-c-during-update-forgotten', 'tests/test_notebook.py -k during_the_update', [
        ('fastjem/train.py', '                if stop.get("abort"):\n                    raise KeyboardInterrupt  # a second', '                if False:\n                    raise KeyboardInterrupt  # a second'),
    ]),
    Mutant('frozen-model-trained-anyway', 'tests/test_notebook.py -k readme_example', [
        ('fastjem/train.py', '        if model is not None and not any(p.requires_grad for p in model.parameters()):',
         '        if False:'),
    ]),
    Mutant('shared-model-not-warned-of', 'tests/test_notebook.py -k readme_example', [
        ('fastjem/train.py', '            _GIVEN_MODELS.add(model)\n', ''),
    ]),
    Mutant('fresh-model-warned-of', 'tests/test_notebook.py -k readme_example', [
        ('fastjem/train.py', '            if model in _GIVEN_MODELS and ckpt is None and not cfg.init_weights:',
         '            if ckpt is None and not cfg.init_weights:'),
    ]),
    Mutant('guard-check-reads-each-value', 'tests/test_guard.py -k one_host_read', [
        ('fastjem/guard.py', 'flag, params_finite, *energies = torch.stack(values).tolist()', 'flag, params_finite, *energies = [float(v) for v in values]'),
    ]),
    Mutant('guard-energies-of-non-finite-parameters-judged', 'tests/test_guard.py -k "one_host_read or non_finite_parameter"', [
        ('fastjem/guard.py', '        if energies and params_finite:', '        if energies:'),
    ]),
    Mutant('end-signal-left-to-python', 'tests/test_guard.py -k "after_the_final_checkpoint or stopped_after_its_final"', [
        ('fastjem/train.py', '        left = self._end_outputs()\n        try:', '        left = self._end_outputs()\n        restore_handlers()\n        try:'),
    ]),
    Mutant('end-record-cut-by-signal', 'tests/test_guard.py -k after_the_final_checkpoint', [
        ('fastjem/train.py', 'stop["writing"] = True', 'stop["writing"] = False'),
    ]),
    Mutant('end-stop-names-no-command', 'tests/test_guard.py -k "after_the_final_checkpoint or stopped_after_its_final"', [
        ('fastjem/train.py', '            if self.resume_hint:\n                # a run resumed at its end trains no further', '            if False:\n                # a run resumed at its end trains no further'),
    ]),
    Mutant('end-stop-reads-as-finished', 'tests/test_guard.py -k "after_the_final_checkpoint or stopped_after_its_final"', [
        ('fastjem/train.py', '            return {"interrupted": True, "stopped_by": name,', '            return {"interrupted": False, "stopped_by": name,'),
    ]),
    Mutant('end-stop-forgets-what-was-written', 'tests/test_guard.py -k after_the_final_checkpoint', [
        ('fastjem/train.py', '            written(END_CURVES)', '            pass'),
    ]),
    Mutant('end-signal-before-the-outputs-ignored', 'tests/test_guard.py -k after_the_final_checkpoint', [
        ('fastjem/train.py', '            if stop["signal"] is not None:  # come since the agreement above', '            if False:  # come since the agreement above'),
    ]),
    Mutant('stop-after-the-final-checkpoint-keeps-the-runs-handler', 'tests/test_guard.py -k final_validation_still', [
        ('fastjem/train.py', '            # (a run that finishes keeps them through the end\'s outputs, below)\n            restore_handlers()\n', ''),
    ]),
    Mutant('config-batch-norm-ignores-processes', 'tests/test_models.py -k one_image_per_process', [
        ('fastjem/config.py', 'check_batch_norm_batch(self.arch, self.norm, self.image_size, self.batch_size // world, world)', 'check_batch_norm_batch(self.arch, self.norm, self.image_size, self.batch_size)'),
    ]),
    Mutant('cli-validates-for-one-process', 'tests/test_models.py -k one_image_per_process', [
        ('fastjem/cli.py', 'cfg.validate(new_run=not args.resume, world=world_from_env())', 'cfg.validate(new_run=not args.resume)'),
    ]),
    Mutant('trainer-batch-norm-ignores-processes', 'tests/test_models.py -k one_image_per_process', [
        ('fastjem/train.py', 'check_batch_norm_batch(cfg.arch, cfg.norm, arrays.info.image_size, cfg.batch_size // world, world, given)', 'check_batch_norm_batch(cfg.arch, cfg.norm, arrays.info.image_size, cfg.batch_size, world, given)'),
    ]),
    Mutant('sample-default-names-collide', 'tests/test_eval.py -k get_files_of_their_own', [
        ('fastjem/eval/draw.py', '    elif ambiguous:', '    elif False:'),
    ]),
    Mutant('sample-default-names-collide-by-case', 'tests/test_eval.py -k get_files_of_their_own', [
        ('fastjem/eval/draw.py', 'len({s.lower() for s in safe}) < len(safe)', 'len(set(safe)) < len(safe)'),
    ]),
    Mutant('sample-default-names-ambiguous-join', 'tests/test_eval.py -k get_files_of_their_own', [
        ('fastjem/eval/draw.py', ' or any("-" in s for s in safe))', ')'),
    ]),
    Mutant('pillow-undeclared', 'tests/test_packaging.py -k declared', [
        ('pyproject.toml', '    "matplotlib",\n    "pillow",\n', '    "matplotlib",\n'),
    ]),
    Mutant('download-unpacked-by-torchvision', 'tests/test_data.py -k download_fetches', [
        ('fastjem/data.py', '            train = cls(str(root), train=True, download=False)\n            test = cls(str(root), train=False, download=False)', '            train = cls(str(root), train=True, download=download)\n            test = cls(str(root), train=False, download=download)'),
        ('fastjem/data.py', '    if archive is not None and (download or (root / archive).is_file()) and', '    if archive is not None and (not download and (root / archive).is_file()) and'),
    ]),
    Mutant('download-whole-folder-fetched-again', 'tests/test_data.py -k download_fetches', [
        ('fastjem/data.py', '        return all(check_integrity(str(folder / f), md5) for f, md5 in files)', '        return False'),
    ]),
    Mutant('second-ctrl-c-tears-the-ends-record', 'tests/test_guard.py -k second_ctrl_c_while', [
        ('fastjem/train.py', '                if self._updating or stop["writing"]:', '                if self._updating:'),
    ]),
    Mutant('recovery-lr-scale-not-applied', 'tests/test_train.py::test_a_recoverys_learning_rate_scale_is_the_rate_the_optimiser_steps_with', [
        ('fastjem/train.py', '        lr = learning_rate(self.cfg, self.iteration, self.iters_per_epoch) * self.recovery.lr_scale', '        lr = learning_rate(self.cfg, self.iteration, self.iters_per_epoch)'),
    ]),
    Mutant('wrn-head-skips-its-activation', 'tests/test_models.py::test_the_head_is_norm_leaky_relu_global_average_pool_then_linear', [
        ('fastjem/models/wrn.py', '        h = self.act(self.norm(h))\n        return global_avg_pool(h)', '        h = self.norm(h)\n        return global_avg_pool(h)'),
    ]),
    Mutant('eval-task-moves-the-callers-generator', 'tests/test_eval.py::test_a_task_leaves_the_callers_generator_where_it_was', [
        ('fastjem/eval/tasks.py', '        with torch.random.fork_rng(devices=[torch.cuda.current_device()] if cuda else []):', '        if True:'),
    ]),
    Mutant('logged-px-energies-swapped', 'tests/test_train.py::test_the_logged_energies_are_the_data_batchs_and_the_sampled_batchs', [
        ('fastjem/train.py', '            parts["e_data"], parts["e_sample"] = e_data.mean().detach(), e_sample.mean().detach()', '            parts["e_sample"], parts["e_data"] = e_data.mean().detach(), e_sample.mean().detach()'),
    ]),
    Mutant('logged-pxy-energies-swapped', 'tests/test_train.py::test_the_logged_energies_are_the_data_batchs_and_the_sampled_batchs', [
        ('fastjem/train.py', '                parts["e_data"], parts["e_sample"] = e_lab_y.mean().detach(), e_qy.mean().detach()', '                parts["e_sample"], parts["e_data"] = e_lab_y.mean().detach(), e_qy.mean().detach()'),
    ]),
    Mutant('ood-logpx-is-the-top-logit', 'tests/test_eval.py::test_ood_scores_are_log_p_x_the_top_class_probability_and_the_gradient_norm', [
        ('fastjem/eval/ood.py', '        out["logpx"].append(torch.logsumexp(logits, 1).cpu())', '        out["logpx"].append(logits.amax(1).cpu())'),
    ]),
    Mutant('train-batch-past-memory-drawn', 'tests/test_cli.py -k batch_past_the_free_memory', [
        ('fastjem/train.py', '        check_fits(self.local_batch * row, self.device,', '        (lambda *a: None)(self.local_batch * row, self.device,'),
    ]),
    Mutant('cli-config-misspelt-preset-taken', 'tests/test_cli.py -k quietly_overridden', [
        ('fastjem/cli.py', '        elif (from_file.get("preset", "custom") != "custom"', '        elif (False'),
    ]),
    Mutant('cli-config-whole-file-own-preset-refused', 'tests/test_cli.py -k quietly_overridden', [
        ('fastjem/cli.py', '              and not {f.name for f in fields(TrainConfig)} - {"out_dir"} <= set(from_file)):', '              and True):'),
    ]),
    Mutant('cli-empty-path-taken', 'tests/test_cli.py -k empty_path', [
        ('fastjem/cli.py', '        if "" in (values if isinstance(values, list) else [values]):', '        if None in (values if isinstance(values, list) else [values]):'),
    ]),
    Mutant('cli-empty-positional-worded-as-option', 'tests/test_cli.py -k empty_path', [
        ('fastjem/cli.py', '        if option_string is None:  # a positional: it has no default to fall back on', '        if False:'),
    ]),
    Mutant('train-empty-out-dir-taken', 'tests/test_cli.py -k empty_path', [
        ('fastjem/cli.py', '        elif f.name in PATH_OPTIONS:\n            g.add_argument(flag, action=PathArgument, **kw)\n', ''),
    ]),
    Mutant('eval-empty-compare-taken', 'tests/test_cli.py -k empty_path', [
        ('fastjem/eval/cli.py', '    g.add_argument("--compare", metavar="CHECKPOINT", default=None, action=PathArgument,', '    g.add_argument("--compare", metavar="CHECKPOINT", default=None,'),
    ]),
    Mutant('sweep-under-torchrun-runs', 'tests/test_cli.py -k sweep_under_torchrun', [
        ('fastjem/cli.py', '    world = world_from_env()\n    if world > 1:\n        # each of torchrun', '    world = world_from_env()\n    if False:\n        # each of torchrun'),
    ]),
    Mutant('sweep-world-from-world-size-alone', 'tests/test_cli.py -k sweep_under_torchrun', [
        ('fastjem/cli.py', '    world = world_from_env()\n    if world > 1:', '    world = int(os.environ.get("WORLD_SIZE", "1"))\n    if world > 1:'),
    ]),
    Mutant('config-repr-every-option', 'tests/test_notebook.py -k config_prints', [
        ('fastjem/config.py', '                            if getattr(self, f.name) != (getattr(base, f.name) if base is not None else f.default))', '                            if True)'),
    ]),
    Mutant('config-repr-from-defaults-not-preset', 'tests/test_notebook.py -k config_prints', [
        ('fastjem/config.py', '        base = PRESETS.get(self.preset)\n', '        base = None\n'),
    ]),
    Mutant('train-decay-rate-zero-taken', 'tests/test_train.py -k decay_rate_of_0', [
        ('fastjem/train.py', 'if m[0] < total_iters] if cfg.decay_rate == 0 else []', '] if False else []'),
    ]),
    Mutant('cli-decay-rate-zero-taken', 'tests/test_cli.py -k decay_rate_of_0', [
        ('fastjem/train.py', 'if m[0] < total_iters] if cfg.decay_rate == 0 else []', '] if False else []'),
    ]),
    Mutant('train-decay-rate-zero-refused-past-the-end', 'tests/test_train.py -k decay_rate_of_0', [
        ('fastjem/train.py', 'if m[0] < total_iters] if cfg.decay_rate == 0 else []',
         '] if cfg.decay_rate == 0 else []'),
    ]),
    Mutant('train-decay-rate-zero-resume-advice', 'tests/test_train.py -k decay_rate_of_0', [
        ('fastjem/train.py', 'self.total_iters, resumed=ckpt is not None)', 'self.total_iters)'),
    ]),
    Mutant('data-cpu-test-split-aliased', 'tests/test_data.py -k copy_of_the_callers', [
        ('fastjem/data.py', '        self.test_x = arrays.test_x.to(device, copy=True)', '        self.test_x = arrays.test_x.to(device)'),
    ]),
    Mutant('data-cpu-test-split-not-counted', 'tests/test_data.py -k copy_of_the_callers', [
        ('fastjem/data.py', '        needed = arrays.train_x.nbytes + arrays.test_x.nbytes\n', '        needed = arrays.train_x.nbytes + (arrays.test_x.nbytes if device.type != "cpu" else 0)\n'),
    ]),
    Mutant('buffer-write-fake-checks-nothing', "tests/test_kernels_buffer.py -k 'meta_tensors or compiled_wrong'", [
        ('kernels/buffer.py', '    _check_inputs(buffer, idx, x)\n    return None\n', '    return None\n'),
    ]),
    Mutant('buffer-sample-fake-checks-nothing', 'tests/test_kernels_buffer.py -k meta_tensors', [
        ('kernels/buffer.py', '    _check_inputs(buffer, idx, fresh=fresh, reset_prob=reset_prob, rng_state=rng_state)\n    return buffer.new_empty(',
         '    return buffer.new_empty('),
    ]),
    Mutant('buffer-overlap-by-storage-address', 'tests/test_kernels_buffer.py -k meta_tensors', [
        ('kernels/buffer.py', 'not torch._C._is_alias_of(a, b)', 'a.untyped_storage().data_ptr() != b.untyped_storage().data_ptr()'),
    ]),
    Mutant('dispatch-meta-tensors-run-directly', 'tests/test_kernels_buffer.py -k meta_tensors', [
        ('kernels/_dispatch.py', '\n                             and not t.is_meta)', ')'),
    ]),
    Mutant('convnet-width-1-layer-norm-on-1x1-taken', 'tests/test_models.py -k layer_norm_over', [
        ('fastjem/models/__init__.py', '    return 2 if norm == "layer" and arch == "convnet" and width == 1 else 1\n', '    return 1\n'),
    ]),
    Mutant('readme-eval-example-fid-loses-the-means', 'tests/test_readme.py -k eval_example', [
        ('fastjem/eval/metrics.py', '    value = diff.dot(diff) + torch.trace(cov1)', '    value = 0 * diff.dot(diff) + torch.trace(cov1)'),
    ]),
    Mutant('readme-eval-example-auroc-ties-lost', 'tests/test_readme.py -k eval_example', [
        ('fastjem/eval/metrics.py', '    u = ranks[:n_pos].sum().item() - n_pos * (n_pos + 1) / 2.0\n',
         '    u = ranks[:n_pos].floor().sum().item() - n_pos * (n_pos + 1) / 2.0\n'),
    ]),
    Mutant('refuse-raises-while-compiling', "tests/test_kernels_buffer.py -k same_error_when_compiled", [
        ('kernels/_dispatch.py', '    if not torch.compiler.is_compiling():\n        raise ValueError(message)\n',
         '    raise ValueError(message)\n'),
    ]),
    Mutant('refuse-op-raises-nothing', "tests/test_kernels_sgld.py -k same_error_when_compiled", [
        ('kernels/_dispatch.py', 'def _refuse_op(anchor: torch.Tensor, message: str) -> None:\n    raise ValueError(message)\n',
         'def _refuse_op(anchor: torch.Tensor, message: str) -> None:\n    pass\n'),
    ]),
    Mutant('buffer-sample-compiled-refusal-gathers', "tests/test_kernels_buffer.py -k same_error_when_compiled", [
        ('kernels/buffer.py', '        return buffer.new_empty((idx.shape[0], *buffer.shape[1:]))  # compiling', '        pass  # compiling'),
    ]),
    Mutant('sgld-fake-checks-nothing', 'tests/test_kernels_sgld.py -k bad_samples_and_gradients', [
        ('kernels/sgld.py', '    _check_inputs(x, grad, rng_state, base, advance)\n    return None\n', '    return None\n'),
    ]),
    Mutant('lse-energy-fake-checks-nothing', 'tests/test_kernels_energy.py -k labels_on_another_device', [
        ('kernels/energy.py', '    # the eager op\'s checks: meta tensors (meta labels beside CPU logits dispatch here), compile and export\n'
         '    _check_inputs(logits, labels)\n', ''),
    ]),
    Mutant('lse-energy-cpu-label-range-unchecked', 'tests/test_kernels_energy.py -k labels_outside_the_classes_are_refused', [
        ('kernels/energy.py', '    _check_label_range(labels, logits.shape[1])\n', ''),
    ]),
    Mutant('lse-energy-label-list-taken', 'tests/test_kernels_energy.py -k labels_that_are_not_a_tensor', [
        ('kernels/energy.py', '    if labels is not None and not isinstance(labels, torch.Tensor):', '    if False:'),
    ]),
    Mutant('lse-energy-ref-unchecked', 'tests/test_kernels_energy.py -k "spec_refuses or under_a_transform"', [
        ('kernels/energy.py', '    _check_inputs(logits, labels)\n    x = logits.float()', '    x = logits.float()'),
    ]),
    Mutant('lse-energy-fake-unchecked', 'tests/test_kernels_dispatch.py -k meta_tensors', [
        ('kernels/energy.py', '    # the eager op\'s checks: meta tensors (meta labels beside CPU logits dispatch here), compile and export\n    _check_inputs(logits, labels)\n', ''),
    ]),
    Mutant('meta-tensors-run-the-kernels', 'tests/test_kernels_dispatch.py -k meta_tensors', [
        ('kernels/_dispatch.py', '\n                             and not t.is_meta)', ')'),
    ]),
    Mutant('joint-energy-labels-unchecked', 'tests/test_energy.py -k joint_energy_labels', [
        ('fastjem/energy.py', '    _check_labels("joint_energy", logits, y)\n', ''),
    ]),
    Mutant('joint-energy-label-range-unchecked', 'tests/test_energy.py -k joint_energy_labels', [
        ('fastjem/energy.py', '    if y.device.type == "cpu" and y.numel():', '    if False:'),
    ]),
    Mutant('energies-take-no-classes', 'tests/test_energy.py -k no_classes', [
        ('fastjem/energy.py', '    if logits.shape[1] == 0:', '    if False:'),
    ]),
    Mutant('sgld-n-steps-type-unchecked', 'tests/test_sampler.py -k wrong_type', [
        ('fastjem/sampler.py', '        n_steps = as_integer("SGLD n_steps (the number of steps, e.g. 20)", n_steps)\n', ''),
    ]),
    Mutant('sgld-step-size-and-noise-types-unchecked', 'tests/test_sampler.py -k wrong_type', [
        ('fastjem/sampler.py', '        step_size = as_real("SGLD step_size (e.g. 1.0)", step_size)\n', ''),
        ('fastjem/sampler.py', '        noise = as_real("SGLD noise (the standard deviation of the noise, e.g. 0.01)", noise)\n', ''),
    ]),
    Mutant('arg-number-takes-bool', 'tests/test_sampler.py -k wrong_type', [
        ('fastjem/errors.py', '    if not isinstance(value, (bool, str, bytes)) and value is not None:', '    if not isinstance(value, (str, bytes)) and value is not None:'),
    ]),
    Mutant('arg-integer-takes-bool', 'tests/test_sampler.py -k wrong_type', [
        ('kernels/_dispatch.py', '    if not isinstance(value, bool):\n        try:\n            return operator.index(value)', '    if True:\n        try:\n            return operator.index(value)'),
    ]),
    Mutant('sgld-clamp-shape-unchecked', 'tests/test_sampler.py -k wrong_type', [
        ('fastjem/sampler.py', '            if isinstance(clamp, (str, bytes)) or not hasattr(clamp, "__len__") or len(clamp) != 2:', '            if False:'),
    ]),
    Mutant('sgld-clamp-ends-unchecked', 'tests/test_sampler.py -k wrong_type', [
        ('fastjem/sampler.py', '            clamp = (as_real("SGLD clamp\'s low", clamp[0]), as_real("SGLD clamp\'s high", clamp[1]))', '            clamp = (float(clamp[0]), float(clamp[1]))'),
    ]),
    Mutant('sgld-grad-clip-type-unchecked', 'tests/test_sampler.py -k wrong_type', [
        ('fastjem/sampler.py', '        if grad_clip is not None and not as_real("SGLD grad_clip (or None)", grad_clip) > 0:', '        if grad_clip is not None and not grad_clip > 0:'),
    ]),
    Mutant('sgld-compiled-update-any-truthy', 'tests/test_sampler.py -k wrong_type', [
        ('fastjem/sampler.py', '        if not isinstance(compiled_update, bool):', '        if False:'),
    ]),
    Mutant('sgld-seed-checked-late', 'tests/test_sampler.py -k wrong_type', [
        ('fastjem/sampler.py', '            seed = check_seed("SGLD", seed)', '            pass'),
    ]),
    Mutant('sgld-backend-checked-late', 'tests/test_sampler.py -k backend_is_refused', [
        ('fastjem/sampler.py', '        if backend is not None and backend not in kernels.BACKENDS:', '        if False:'),
    ]),
    Mutant('sample-parts-count-type-unchecked', 'tests/test_parts.py -k refuse', [
        ('fastjem/sampler.py', '        parts = as_integer("SGLD parts (a number of blocks of rows)", parts)\n', ''),
    ]),
    Mutant('rng-seed-takes-bool', 'tests/test_kernels_rng.py -k bool_seed', [
        ('kernels/_dispatch.py', '    if not isinstance(value, bool):\n        try:\n            return operator.index(value)', '    if True:\n        try:\n            return operator.index(value)'),
    ]),
    Mutant('buffer-size-and-prob-types-unchecked', 'tests/test_buffer.py -k checks_its_settings', [
        ('fastjem/buffer.py', '        size = as_integer("ReplayBuffer size (the number of chains)", size, ConfigError)\n', ''),
        ('fastjem/buffer.py', '        reinit_prob = as_real("ReplayBuffer reinit_prob (a probability, e.g. 0.05)", reinit_prob, ConfigError)\n', ''),
    ]),
    Mutant('buffer-reinit-prob-type-unchecked', 'tests/test_buffer.py -k checks_its_settings', [
        ('fastjem/buffer.py', '        reinit_prob = as_real("ReplayBuffer reinit_prob (a probability, e.g. 0.05)", reinit_prob, ConfigError)\n', ''),
    ]),
    Mutant('buffer-num-classes-type-unchecked', 'tests/test_buffer.py -k checks_its_settings', [
        ('fastjem/buffer.py', '            num_classes = as_integer("ReplayBuffer num_classes (or None)", num_classes, ConfigError)\n', '            pass\n'),
    ]),
    Mutant('buffer-backend-checked-late', 'tests/test_buffer.py -k checks_its_settings', [
        ('fastjem/buffer.py', '        if backend is not None and backend not in kernels.BACKENDS:', '        if False:'),
    ]),
    Mutant('buffer-seed-named-new-rng-state', 'tests/test_buffer.py -k checks_its_settings', [
        ('fastjem/buffer.py', 'else check_seed("ReplayBuffer", seed)', 'else seed'),
    ]),
    Mutant('buffer-sample-shape-sizes-unchecked', 'tests/test_buffer.py -k checks_its_settings', [
        ('fastjem/buffer.py', '    if sizes is None or any(d < 1 for d in sizes):', '    if sizes is None:'),
    ]),
    Mutant('buffer-sample-shape-scalars-refused', 'tests/test_buffer.py -k checks_its_settings', [
        ('fastjem/buffer.py', '    if sizes is None or any(d < 1 for d in sizes):', '    if not sizes or any(d < 1 for d in sizes):'),
    ]),
    Mutant('class-gaussians-labels-unchecked', 'tests/test_buffer.py -k one_class_per_image', [
        ('fastjem/buffer.py', '        check_class_labels("ClassGaussians", y, x.shape[0], num_classes, "N")\n', ''),
    ]),
    Mutant('class-gaussians-num-classes-unchecked', 'tests/test_buffer.py -k one_class_per_image', [
        ('fastjem/buffer.py', '        num_classes = as_integer("ClassGaussians num_classes", num_classes, ConfigError)\n        if num_classes < 1:', '        if False:'),
    ]),
    Mutant('class-gaussians-label-range-unchecked', 'tests/test_buffer.py -k one_class_per_image', [
        ('fastjem/buffer.py', '    if range_ and y.numel() and (on_device or y.device.type == "cpu"):', '    if False:'),
    ]),
    Mutant('class-gaussians-draw-labels-unchecked', 'tests/test_buffer.py -k one_class_per_image', [
        ('fastjem/buffer.py', '            check_class_labels("ClassGaussians.draw", y, n, self.num_classes, on_device=False, range_=check_range)\n', '            pass\n'),
    ]),
    Mutant('class-gaussians-fill-labels-unchecked', 'tests/test_buffer.py -k one_class_per_image', [
        ('fastjem/buffer.py', '            check_class_labels("ClassGaussians.fill", y, n, self.num_classes)\n', '            pass\n'),
    ]),
    Mutant('buffer-ops-cpu-rows-unchecked', 'tests/test_kernels_buffer.py -k indices_outside_the_buffer', [
        ('kernels/buffer.py', '    if low < 0 or high >= buffer.shape[0]:', '    if False:'),
    ]),
    Mutant('buffer-write-cpu-rows-unchecked', 'tests/test_kernels_buffer.py -k indices_outside_the_buffer', [
        ('kernels/buffer.py', '    _check_rows_in_buffer("buffer_write_", buffer, idx)\n', ''),
    ]),
    Mutant('op-number-takes-bool', 'tests/test_kernels_sgld.py -k told_what_to_pass', [
        ('kernels/_dispatch.py', '        if isinstance(value, bool):\n            raise TypeError\n        return float(value)', '        return float(value)'),
    ]),
    Mutant('buffer-class-draw-list-taken', 'tests/test_buffer.py -k one_label_per_chain', [
        ('fastjem/buffer.py', '        if not isinstance(y, torch.Tensor) or y.dtype != torch.int64 or tuple(y.shape) != (batch_size,):', '        if y.dtype != torch.int64 or tuple(y.shape) != (batch_size,):'),
    ]),
    Mutant('sgld-start-list-taken', 'tests/test_sampler.py -k start_that_is_not', [
        ('fastjem/sampler.py', '    if not isinstance(x0, torch.Tensor):\n        raise TypeError(f"SGLD: x0', '    if False:\n        raise TypeError(f"SGLD: x0'),
    ]),
    Mutant('export-single-image-unchecked', 'tests/test_export.py::test_export_refuses_a_program_that_computes_something_else', [
        ('fastjem/export.py', '    for b in (1, 7):', '    for b in (7,):'),
    ]),
    Mutant('sweep-table-speed-mean', 'tests/test_sweep.py -k mean_sd_and_median', [
        ('fastjem/sweep.py', '"it_per_s": statistics.median(speeds) if speeds else None,', '"it_per_s": statistics.mean(speeds) if speeds else None,'),
    ]),
    Mutant('sweep-table-accuracy-median', 'tests/test_sweep.py -k mean_sd_and_median', [
        ('fastjem/sweep.py', '    return statistics.mean(vals), (statistics.stdev', '    return statistics.median(vals), (statistics.stdev'),
    ]),
    Mutant('sweep-table-sd-shows-mean', 'tests/test_sweep.py -k mean_sd_and_median', [
        ('fastjem/sweep.py', '("" if sd is None else f" ± {sd:.4f}")', '("" if sd is None else f" ± {mean:.4f}")'),
    ]),
    Mutant('sweep-table-val-sd-is-test-sd', 'tests/test_sweep.py -k mean_sd_and_median', [
        ('fastjem/sweep.py', 'pm(g["val_acc"], g["val_acc_std"]),', 'pm(g["val_acc"], g["test_acc_std"]),'),
    ]),
    Mutant('sweep-csv-test-sd-is-val-sd', 'tests/test_sweep.py -k mean_sd_and_median', [
        ('fastjem/sweep.py', 'num(g["test_acc"]), num(g["test_acc_std"]), num(g["val_acc"]),', 'num(g["test_acc"]), num(g["val_acc_std"]), num(g["val_acc"]),'),
    ]),
    Mutant('sweep-csv-speed-two-digits', 'tests/test_sweep.py -k mean_sd_and_median', [
        ('fastjem/sweep.py', 'num(g["it_per_s"], 4)', 'num(g["it_per_s"], 2)'),
    ]),
    Mutant('sweep-time-to-go-mean-speed', 'tests/test_sweep.py -k median_speed_of_its', [
        ('fastjem/sweep.py', '            rate = statistics.median(rates)', '            rate = statistics.mean(rates)'),
    ]),
    Mutant('sweep-pace-of-the-last-run', 'tests/test_sweep.py -k mean_pace', [
        ('fastjem/sweep.py', '{_duration(statistics.mean(took) * to_go)}', '{_duration(took[-1] * to_go)}'),
    ]),
    Mutant('sweep-pace-median', 'tests/test_sweep.py -k mean_pace', [
        ('fastjem/sweep.py', '{_duration(statistics.mean(took) * to_go)}', '{_duration(statistics.median(took) * to_go)}'),
    ]),
    Mutant('convert-classifier-only-keeps-buffer', 'tests/test_convert.py::test_dataparallel_prefix_no_buffer_and_classifier_only', [
        ('fastjem/convert.py', '    buffer = jem["buffer"] if not classifier_only else None', '    buffer = jem["buffer"]'),
    ]),
    Mutant('convert-back-classifier-run-with-its-buffer', 'tests/test_convert.py::test_a_classifier_only_run_goes_back_without_its_replay_buffer', [
        ('fastjem/convert.py', '    if cfg.generative and all(s is not None for s in shards):', '    if all(s is not None for s in shards):'),
    ]),
    Mutant('graph-snapshot-without-guard-flag', 'tests/test_iteration_graph.py -k guard_flag', [
        ('fastjem/train.py', '            tensors.append(self.guard.flag)\n', '            pass\n'),
    ]),
    Mutant('buffer-unseeded-restarts-fixed', 'tests/test_buffer.py -k without_a_seed', [
        ('fastjem/buffer.py', '        seed = int(torch.randint(0, 2**62, ()).item()) if seed is None else', '        seed = 0 if seed is None else'),
    ]),
    Mutant('eval-ood-empty-set-taken', 'tests/test_cli.py -k empty_ood_set', [
        ('fastjem/eval/cli.py', 'metavar="SET", action=NameArgument, names="no OOD set",\n                   expected=f"{\', \'.join(OOD_SETS)}, all or a folder of images, or drop --ood for the default "\n                            f"({\' \'.join(SYNTHETIC_SETS)})",\n',
         'metavar="SET",\n'),
    ]),
    Mutant('eval-features-model-empty-taken', 'tests/test_cli.py -k empty_ood_set', [
        ('fastjem/eval/cli.py', 'metavar="SPEC", action=NameArgument, names="no feature model",\n                   expected="\'classifier\', a torch.export or TorchScript file, or \'module.path:name\' (or "\n                            "--inception-weights PATH instead)",\n',
         'metavar="SPEC",\n'),
    ]),
    Mutant('name-argument-worded-as-path', 'tests/test_cli.py -k empty_ood_set', [
        ('fastjem/cli.py', '        return f"an empty name (\'\', an unset shell variable?) names {self.names}: give {self.expected}"',
         '        return super().refusal(option_string)'),
    ]),
    Mutant('eval-ood-api-empty-set-taken', 'tests/test_eval.py -k empty_string', [
        ('fastjem/eval/tasks.py', '    if "" in sets:\n        # Path("") is the current folder',
         '    if False:\n        # Path("") is the current folder'),
    ]),
    Mutant('sweep-decay-rate-0-not-refused-up-front', 'tests/test_sweep.py -k decay_rate_0_that', [
        ('fastjem/sweep.py', '    checked = _CheckedData(check_decays(runs, folder, progress))\n', '    checked = _CheckedData(None)\n'),
    ]),
    Mutant('sweep-dry-run-decay-rate-0-not-refused', 'tests/test_sweep.py -k decay_rate_0_that', [
        ('fastjem/sweep.py', '    check_decays(runs, folder)\n', ''),
    ]),
    Mutant('sweep-decay-check-ignores-val-split', 'tests/test_sweep.py -k decay_rate_0_that', [
        ('fastjem/sweep.py', '            n_train = images - validation_size(info, images, cfg.val_size)',
         '            n_train = images * 2'),
    ]),
    Mutant('sweep-refused-run-said-retried', 'tests/test_sweep.py -k refused_for_its', [
        ('fastjem/sweep.py', '            if isinstance(err, ConfigError):\n                # options the sweep',
         '            if False:\n                # options the sweep'),
    ]),
    Mutant('sweep-refused-runs-end-line-says-same-command', 'tests/test_sweep.py -k refused_for_its', [
        ('fastjem/cli.py', 'keeps its options)" if refused else ""', 'keeps its options)" if False else ""'),
    ]),
    Mutant('sgld-base-truncated', 'tests/test_kernels_sgld.py -k no_integer', [
        ('kernels/sgld.py', '    base = as_integer("sgld_step_: base", base)\n    advance = None if advance is None else as_integer("sgld_step_: advance", advance)\n',
         '    base = int(base)\n    advance = None if advance is None else int(advance)\n'),
    ]),
    Mutant('sgld-compiled-base-truncated', 'tests/test_kernels_sgld.py -k no_integer', [
        ('kernels/sgld.py', '    base = as_integer("sgld_step_compiled_: base", base)\n', '    base = int(base)\n'),
    ]),
    Mutant('kernel-index-takes-bool', 'tests/test_kernels_sgld.py -k no_integer', [
        ('kernels/_dispatch.py', '    if not isinstance(value, bool):\n        try:\n            return operator.index(value)',
         '    if True:\n        try:\n            return operator.index(value)'),
    ]),
    Mutant('sgld-non-tensor-not-named', 'tests/test_kernels_sgld.py -k no_tensors', [
        ('kernels/sgld.py', '    check_tensors("sgld_step_", x=x, grad=grad, rng_state=rng_state)\n', ''),
    ]),
    Mutant('buffer-sample-list-idx-not-named', 'tests/test_kernels_buffer.py -k no_tensor', [
        ('kernels/buffer.py', '    check_tensors("buffer_sample", buffer=buffer, idx=idx, rng_state=rng_state)\n', ''),
    ]),
    Mutant('buffer-sample-list-fresh-not-named', 'tests/test_kernels_buffer.py -k no_tensor', [
        ('kernels/buffer.py', '        check_tensors("buffer_sample", fresh=fresh)\n', '        pass\n'),
    ]),
    Mutant('buffer-write-list-idx-not-named', 'tests/test_kernels_buffer.py -k no_tensor', [
        ('kernels/buffer.py', '    check_tensors("buffer_write_", buffer=buffer, idx=idx, x=x)\n', ''),
    ]),
    Mutant('replay-buffer-device-not-named', 'tests/test_buffer.py -k no_device', [
        ('fastjem/buffer.py', '        self.device = as_device("ReplayBuffer", device)', '        self.device = torch.device(device)'),
    ]),
    Mutant('replay-buffer-to-device-not-named', 'tests/test_buffer.py -k no_device', [
        ('fastjem/buffer.py', '        device = as_device("ReplayBuffer.to", device)', '        device = torch.device(device)'),
    ]),
    Mutant('class-gaussians-draw-count-unchecked', 'tests/test_buffer.py -k no_count', [
        ('fastjem/buffer.py', '        n = sample_count("ClassGaussians.draw", n)\n', ''),
    ]),
    Mutant('class-gaussians-fill-count-unchecked', 'tests/test_buffer.py -k no_count', [
        ('fastjem/buffer.py', '        n = sample_count("ClassGaussians.fill", n)\n', ''),
    ]),
    Mutant('sample-count-takes-negative', 'tests/test_buffer.py -k no_count', [
        ('fastjem/buffer.py', '    if n < 0:\n        raise ConfigError(f"{what}: n is a number', '    if False:\n        raise ConfigError(f"{what}: n is a number'),
    ]),
    Mutant('sgld-fake-skips-checks', 'tests/test_kernels_dispatch.py -k bad_inputs', [
        ('kernels/sgld.py', "compile and export\n    _check_inputs(x, grad, rng_state, base, advance)\n", "compile and export\n"),
    ]),
    Mutant('buffer-sample-fake-skips-checks', 'tests/test_kernels_dispatch.py -k bad_inputs', [
        ('kernels/buffer.py', "export refuse what it refuses\n    _check_inputs(buffer, idx, fresh=fresh, reset_prob=reset_prob, rng_state=rng_state)\n",
         "export refuse what it refuses\n"),
    ]),
    Mutant('buffer-write-fake-skips-checks', 'tests/test_kernels_dispatch.py -k bad_inputs', [
        ('kernels/buffer.py', "def _(buffer, idx, x, backend):\n    _check_inputs(buffer, idx, x)\n", "def _(buffer, idx, x, backend):\n"),
    ]),
    Mutant('lse-energy-fake-skips-checks', 'tests/test_kernels_dispatch.py -k bad_inputs', [
        ('kernels/energy.py', "compile and export\n    _check_inputs(logits, labels)\n", "compile and export\n"),
    ]),
    Mutant('bench-scaling-chain-ms', 'tests/test_cli.py -k cost_per_chain', [
        ('fastjem/benchmark.py', "f\"{r['sgld_step_ms'] / r['batch_size']:>14.4f}", "f\"{r['sgld_step_ms'] * r['batch_size']:>14.4f}"),
    ]),
    Mutant('bench-precisions-ratio-inverted', 'tests/test_cli.py -k cost_per_chain', [
        ('fastjem/benchmark.py', "x{first['sgld_step_ms'] / r['sgld_step_ms']:.2f}", "x{r['sgld_step_ms'] / first['sgld_step_ms']:.2f}"),
    ]),
    Mutant('bench-precisions-fastest-is-slowest', 'tests/test_cli.py -k cost_per_chain', [
        ('fastjem/benchmark.py', 'fastest = min(rows, key=lambda r: r["sgld_step_ms"])', 'fastest = max(rows, key=lambda r: r["sgld_step_ms"])'),
    ]),
    Mutant('bench-windows-uncapped', 'tests/test_cli.py -k sizes_its_windows', [
        ('fastjem/benchmark.py', 'and len(windows) < 50)', 'and len(windows) < 10**9)'),
    ]),
    Mutant('bench-window-of-one-call', 'tests/test_cli.py -k sizes_its_windows', [
        ('fastjem/benchmark.py', 'per_window = max(1, round(seconds / 10 / max(one, 1e-9)))', 'per_window = 1'),
    ]),
    Mutant('bench-warmup-time-counts-sizing-call', 'tests/test_cli.py -k sizes_its_windows', [
        ('fastjem/benchmark.py', '    warmup_s = time.perf_counter() - t0\n    # size the windows', '    # size the windows'),
        ('fastjem/benchmark.py', '    one = time.perf_counter() - t1\n', '    one = time.perf_counter() - t1\n    warmup_s = time.perf_counter() - t0\n'),
    ]),
    Mutant('bench-forward-flops-halved-step', 'tests/test_cli.py -k sizes_its_windows', [
        ('fastjem/benchmark.py', '"flops_per_forward": flops["forward"]', '"flops_per_forward": flops["sgld_step"] / 2'),
    ]),
    Mutant('bench-call-ms-slowest-window', 'tests/test_cli.py -k sizes_its_windows', [
        ('fastjem/benchmark.py', 'call_s = statistics.median(windows)', 'call_s = max(windows)'),
    ]),
    Mutant('report-paired-ratio-inverted', 'tests/test_bench.py -k report_rows_show', [
        ('bench/report.py', 'pairs = [f / r for f, r in zip(', 'pairs = [r / f for f, r in zip('),
    ]),
    Mutant('report-paired-ratio-mean', 'tests/test_bench.py -k report_rows_show', [
        ('bench/report.py', 'return statistics.median(pairs) if pairs else None', 'return statistics.fmean(pairs) if pairs else None'),
    ]),
    Mutant('report-steps-ratio-columns-swapped', 'tests/test_bench.py -k report_rows_show', [
        ('bench/report.py', "f\" | {_num(ratios.get('matched'), 'x{:.2f}')} | {_num(ratios.get('default'), 'x{:.2f}')} | \"",
         "f\" | {_num(ratios.get('default'), 'x{:.2f}')} | {_num(ratios.get('matched'), 'x{:.2f}')} | \""),
    ]),
    Mutant('report-reference-process-always-own', 'tests/test_bench.py -k report_rows_show', [
        ('bench/report.py', "{'own' if rep.get('args', {}).get('reference_process') else 'shared'}", "{'own'}"),
    ]),
    Mutant('report-results-not-sorted-by-date', 'tests/test_bench.py -k report_rows_show', [
        ('bench/report.py', 'out[kind].sort(key=lambda d: d.get("date", ""))', 'pass'),
    ]),
    Mutant('report-quick-wall-seconds-dropped', 'tests/test_bench.py -k report_rows_show', [
        ('bench/report.py', "{_num(r.get('wall_seconds'), '{:.0f}')} | \"\n                     f\"{_num(r.get('it_per_s_median'), '{:.2f}')}",
         "{_num(None)} | \"\n                     f\"{_num(r.get('it_per_s_median'), '{:.2f}')}"),
    ]),
    Mutant('report-precision-diff-unsigned', 'tests/test_bench.py -k report_rows_show', [
        ('bench/report.py', "{_num(r.get('mean_diff_points'), '{:+.2f}')}", "{_num(r.get('mean_diff_points'), '{:.2f}')}"),
    ]),
    Mutant('report-buffer-init-std-is-mean', 'tests/test_bench.py -k report_rows_show', [
        ('bench/report.py', "± {_num(m.get('test_acc_std'), '{:.4f}')}", "± {_num(m.get('test_acc'), '{:.4f}')}"),
    ]),
    Mutant('report-bars-stacked-on-the-tick', 'tests/test_bench.py -k plot_draws', [
        ('bench/report.py', 'xs.append(i + (j - (len(engines) - 1) / 2) * width)', 'xs.append(i)'),
    ]),
    Mutant('cast-copy-pairing-unchecked', 'tests/test_weights.py -k do_not_pair', [
        ('fastjem/weights.py', 'if len(self._dst) != len(self._src):', 'if False:'),
    ]),
    Mutant('export-load-ignores-device', 'tests/test_export.py -k free_batch_size', [
        ('fastjem/export.py', 'return program.module().to(device)', 'return program.module()'),
    ]),
    Mutant('runs-sweep-with-config-is-a-run', 'tests/test_runs.py -k inside_the_folder', [
        ('fastjem/runs.py', 'return (folder / "metrics.jsonl").exists() or ((folder / "config.json").exists() and not (folder / "sweep.json")\n                                                   .exists())',
         'return (folder / "metrics.jsonl").exists() or (folder / "config.json").exists()'),
    ]),
    Mutant('runs-speed-keeps-non-finite-windows', 'tests/test_runs.py -k finite_windows', [
        ('fastjem/runs.py', 'rates = [r["it_per_s"] for r in m.train[1:] if math.isfinite(r.get("it_per_s", math.nan))]', 'rates = [r.get("it_per_s", math.nan) for r in m.train[1:]]'),
    ]),
    Mutant('runs-one-window-no-speed', 'tests/test_runs.py -k finite_windows', [
        ('fastjem/runs.py', '(m.train[0].get("it_per_s") if m.train else None)', 'None'),
    ]),
    Mutant('checkpoint-crc-0-members-checked', 'tests/test_train.py -k bytes_changed', [
        ('fastjem/checkpoint.py', '                if info.CRC == 0:\n                    continue\n', ''),
    ]),
    Mutant('authors-checkpoint-not-named', 'tests/test_convert.py -k conversion_errors', [
        ('fastjem/checkpoint.py',
         'if isinstance(ckpt, dict) and "model_state_dict" in ckpt and "format" not in ckpt:',
         'if False:'),
    ]),
    Mutant('sgld-parts-not-capped-at-rows', 'tests/test_engine.py -k smaller_than_the_sgld_parts', [
        ('fastjem/train.py', 'return min(self.engine.sgld_parts, x0.shape[0])', 'return self.engine.sgld_parts'),
    ]),
    Mutant('conv-layers-in-training-mode', 'tests/test_engine.py -k counting_the_convolutions', [
        ('fastjem/engine.py', '        model.eval()\n        with torch.no_grad():\n            model(x)',
         '        with torch.no_grad():\n            model(x)'),
    ]),
    Mutant('wave-tail-of-no-convolutions', 'tests/test_engine.py -k without_convolutions', [
        ('fastjem/engine.py', '    if total == 0:\n        return 0.0\n', ''),
    ]),
    Mutant('buffer-restarts-read-their-class-range', 'tests/test_iteration_graph.py -k never_reads', [
        ('fastjem/buffer.py', 'checks = {"check_range": False} if isinstance(self.init, ClassGaussians) else {}', 'checks = {}'),
    ]),
    Mutant('resume-drops-the-validation-history', 'tests/test_train.py -k resumed_at_its_end', [
        ('fastjem/train.py', '        self.history = list(ckpt.get("history", []))', '        self.history = []'),
    ]),
    Mutant('ddp-ranks-precision-unagreed', 'tests/test_distributed.py -k agree_on_the_precision', [
        ('fastjem/engine.py', '            if max_over_ranks(0 if ok else 1, device) and ok:', '            if False:'),
    ]),
    Mutant('bf16-probe-cached-beside-other-work', 'tests/test_engine.py -k beside_other_work', [
        ('fastjem/engine.py', '    if others is not None and others > max(0, cores - threads) + PROBE_OTHER_CORES:', '    if False:'),
    ]),
    Mutant('bf16-probe-busy-threshold-ignores-own-threads', 'tests/test_engine.py -k beside_other_work', [
        ('fastjem/engine.py', 'others > max(0, cores - threads) + PROBE_OTHER_CORES', 'others > cores + PROBE_OTHER_CORES'),
    ]),
    Mutant('other-cpu-load-counts-own-time', 'tests/test_engine.py -k other_cpu_load', [
        ('fastjem/engine.py', '(after - machine - own) / wall', '(after - machine) / wall'),
    ]),
    Mutant('busy-cpu-seconds-reads-idle', 'tests/test_engine.py -k other_cpu_load', [
        ('fastjem/engine.py', '                    ticks += user + nice + system + irq + softirq + steal', '                    ticks += _idle + _iowait'),
    ]),
    Mutant('bf16-probe-entry-from-before-the-load-check-kept', 'tests/test_engine.py -k both_times_are_positive', [
        ('fastjem/engine.py', ' and math.isfinite(fp32_ms + bf16_ms) and "other_cores" in entry:', ' and math.isfinite(fp32_ms + bf16_ms):'),
    ]),
    Mutant('resume-probes-precision-again', 'tests/test_train.py -k keeps_the_precision_auto', [
        ('fastjem/train.py', '                           started_in=started_in),', '                           started_in=None),'),
    ]),
    Mutant('resume-keeps-precision-of-another-device-kind', 'tests/test_train.py -k keeps_the_precision_auto', [
        ('fastjem/train.py', '        same_kind = isinstance(started, dict) and started.get("device") == self.device.type', '        same_kind = isinstance(started, dict)'),
    ]),
    Mutant('checkpoint-records-no-engine-precision', 'tests/test_train.py -k keeps_the_precision_auto', [
        ('fastjem/train.py', '            "engine": {"precision": self.engine.precision, "device": self.device.type},\n', ''),
    ]),
    Mutant('resume-keeps-an-unknown-precision', 'tests/test_engine.py -k started_in_only', [
        ('fastjem/engine.py', '    if precision == "auto" and started_in in ("bf16", "fp32"):', '    if precision == "auto" and started_in:'),
    ]),
    Mutant('digits-read-through-sklearn-import', 'tests/test_data.py -k without_importing', [
        ('fastjem/data.py', '    digits = _digits_csv()\n    if digits is None:', '    digits = None\n    if digits is None:'),
    ]),
    Mutant('digits-csv-label-column-wrong', 'tests/test_data.py -k without_importing', [
        ('fastjem/data.py', '    return data[:, :-1].reshape(-1, 8, 8), data[:, -1].astype(np.int64)', '    return data[:, 1:].reshape(-1, 8, 8), data[:, 0].astype(np.int64)'),
    ]),
    Mutant('busy-cpu-seconds-ignores-the-cpus-asked', 'tests/test_engine.py -k other_cpu_load', [
        ('fastjem/engine.py', '                if name != "cpu" and (cpus is None or int(name[3:]) in cpus):', '                if name != "cpu":'),
    ]),
    Mutant('busy-cpu-seconds-counts-the-sum-line-too', 'tests/test_engine.py -k other_cpu_load', [
        ('fastjem/engine.py', '                if name != "cpu" and (cpus is None or int(name[3:]) in cpus):', '                if cpus is None or name == "cpu" or int(name[3:]) in cpus:'),
    ]),
    Mutant('bf16-probe-load-on-every-cpu-of-the-machine', 'tests/test_engine.py -k beside_other_work', [
        ('fastjem/engine.py', '    with other_cpu_load(cpus) as load:', '    with other_cpu_load(None) as load:'),
    ]),
    Mutant('bf16-probe-spare-cores-of-the-machine', 'tests/test_engine.py -k beside_other_work', [
        ('fastjem/engine.py', '    others, cores = load["cores"], len(cpus) if cpus else os.cpu_count() or 1', '    others, cores = load["cores"], os.cpu_count() or 1'),
    ]),
    Mutant('bf16-probe-beside-other-work-trusted', 'tests/test_engine.py -k auto_precision_follows', [
        ('fastjem/engine.py', '            if not steady:', '            if False:'),
    ]),
    Mutant('bf16-probe-beside-other-work-said-steady', 'tests/test_engine.py -k beside_other_work', [
        ('fastjem/engine.py', '"it may run on, not cached: the next run times it again", steady=False)',
         '"it may run on, not cached: the next run times it again")'),
    ]),
    Mutant('curves-test-star-hides-validation', 'tests/test_curves.py -k star', [
        ('fastjem/curves.py', 'color=colour, ms=12, zorder=1.5,', 'color=colour, ms=12,'),
    ]),
    Mutant('new-run-into-running-folder-not-said-in-use', 'tests/test_train.py -k in_use', [
        ('fastjem/train.py',
         'if holder is not None and holder != f"pid {os.getpid()}":',
         'if False:'),
    ]),
    Mutant('custom-model-of-another-dtype-taken', 'tests/test_custom.py -k does_not_fit', [
        ('fastjem/train.py', '    if other:\n        raise ConfigError(f"model= holds', '    if False:\n        raise ConfigError(f"model= holds'),
    ]),
    Mutant('custom-model-buffers-not-checked', 'tests/test_custom.py -k does_not_fit', [
        ('fastjem/train.py', 'itertools.chain(model.parameters(), model.buffers())', 'itertools.chain(model.parameters())'),
    ]),
    Mutant('plot-says-live-run-stopped', 'tests/test_curves.py -k still_training', [
        ('fastjem/curves.py', '            if holder is not None:\n                # not "stopped"',
         '            if False:\n                # not "stopped"'),
    ]),
    Mutant('data-grid-replaces-file-unasked', 'tests/test_cli.py -k existing_grid', [
        ('fastjem/cli.py', 'output_path(args.grid, IMAGE_SUFFIXES, "--grid", args.force, flag="--grid")',
         'output_path(args.grid, IMAGE_SUFFIXES, "--grid", True, flag="--grid")'),
    ]),
    Mutant('bench-plot-refusal-names-out', 'tests/test_cli.py -k no_saved_file_is_replaced_unasked', [
        ('fastjem/cli.py', 'output_path(target, suffixes, flag, args.force, flag=flag)',
         'output_path(target, suffixes, flag, args.force)'),
    ]),
    Mutant('live-run-without-checkpoint-not-said-training', 'tests/test_cli.py -k first_checkpoint_is_said', [
        ('fastjem/checkpoint.py', '            if holder is not None:\n                # a run training there now',
         '            if False:\n                # a run training there now'),
    ]),
    Mutant('overlap-sample-half-px-weight-dropped', 'tests/test_overlap.py -k one_backward', [
        ('fastjem/train.py', '        loss_sample = -cfg.px_weight * e_sample.mean()', '        loss_sample = -e_sample.mean()'),
    ]),
    Mutant('overlap-data-half-px-weight-dropped', 'tests/test_overlap.py -k one_backward', [
        ('fastjem/train.py', '            loss_data = cfg.px_weight * e_data.mean() + cfg.pyx_weight * ce',
         '            loss_data = e_data.mean() + cfg.pyx_weight * ce'),
    ]),
    Mutant('overlap-data-half-pyx-weight-dropped', 'tests/test_overlap.py -k one_backward', [
        ('fastjem/train.py', '            loss_data = cfg.px_weight * e_data.mean() + cfg.pyx_weight * ce',
         '            loss_data = cfg.px_weight * e_data.mean() + ce'),
    ]),
    Mutant('class-cond-px-misses-last-class', 'tests/test_train.py -k jem_objective_with_every_term', [
        ('fastjem/train.py',
         '            y_q = torch.randint(0, self.num_classes, (b,), device=self.device) if cfg.class_cond_px else None\n            if x_q is None:',
         '            y_q = torch.randint(0, self.num_classes - 1, (b,), device=self.device) if cfg.class_cond_px else None\n            if x_q is None:'),
    ]),
    Mutant('trainer-samples-in-train-mode', 'tests/test_train.py -k eval_mode_from_the_classes', [
        ('fastjem/train.py', 'x0, self._sgld_parts(x0), model=self.sgld_model)', 'x0, self._sgld_parts(x0), model=None)'),
    ]),
    Mutant('trainer-conditional-chains-on-marginal-energy', 'tests/test_train.py -k eval_mode_from_the_classes', [
        ('fastjem/train.py', '        x = self.run_sgld(x0, y)', '        x = self.run_sgld(x0, None)'),
    ]),
    Mutant('trainer-conditional-chains-from-whole-buffer', 'tests/test_train.py -k eval_mode_from_the_classes', [
        ('fastjem/train.py', '        x0, idx = self.buffer.sample(batch_size, y)', '        x0, idx = self.buffer.sample(batch_size, None)'),
    ]),
    Mutant('bench-gate-noise-unchecked', 'tests/test_bench.py -k noise_is_not_the_references', [
        ('bench/steps_per_sec.py', '            if not (abs(std / expected - 1) <= GATE_NOISE_TOLERANCE and abs(mean) <= mean_bound):',
         '            if False:'),
    ]),
    Mutant('bench-gate-noise-mean-only', 'tests/test_bench.py -k noise_is_not_the_references', [
        ('bench/steps_per_sec.py', '            if not (abs(std / expected - 1) <= GATE_NOISE_TOLERANCE and abs(mean) <= mean_bound):',
         '            if not abs(mean) <= mean_bound:'),
    ]),
    Mutant('batch-norm-forwards-end-on-samples', 'tests/test_train.py -k whatever_mode_it_was_left_in', [
        ('fastjem/train.py', '            logits_p, logits_q, logits = self.forward(x_p, x_q, x_lab)',
         '            logits, logits_p, logits_q = self.forward(x_lab, x_p, x_q)'),
    ]),
    Mutant('stop-between-checks-rolls-back-without-remedy', 'tests/test_guard.py -k between_a_divergence', [
        ('fastjem/train.py', "                    self.recover()\n                elif unhealthy:\n",
         '                    self.guard.restore_snapshot()\n                elif unhealthy:\n'),
    ]),
    Mutant('stop-keeps-its-rolled-back-state-over-the-kept-copy', 'tests/test_guard.py -k between_a_divergence', [
        ('fastjem/train.py', 'self.iteration == self.total_iters and self.iteration % cfg.ckpt_keep_every == 0',
         'self.iteration > 0 and self.iteration % cfg.ckpt_keep_every == 0'),
    ]),
    Mutant('truncated-checkpoint-said-unreadable', 'tests/test_train.py -k truncated_checkpoint', [
        ('fastjem/checkpoint.py', 'if err.errno == errno.EINVAL and _cut_short(path):', 'if False:'),
    ]),
    Mutant('truncated-checkpoint-not-told-by-its-zip-end', 'tests/test_train.py -k truncated_checkpoint', [
        ('fastjem/checkpoint.py', '        return not zipfile.is_zipfile(path)\n', '        return False\n'),
    ]),
    Mutant('snapshot-at-a-checkpoints-check', 'tests/test_guard.py -k does_not_follow_ckpt_every', [
        ('fastjem/train.py', 'if on_grid and it - self.guard.snapshot["iteration"] >= cfg.snapshot_every:',
         'if it - self.guard.snapshot["iteration"] >= cfg.snapshot_every:'),
    ]),
    Mutant('board-rewind-after-close-leaves-it-open', 'tests/test_board.py -k "rewind_after_close or stop_that_meets"', [
        ('fastjem/board.py', '            if self.closed:\n                # a run that stopped', '            if False:\n                # a run that stopped'),
    ]),
    Mutant('board-close-not-remembered', 'tests/test_board.py -k "rewind_after_close or stop_that_meets"', [
        ('fastjem/board.py', '    def close(self) -> None:\n        self.closed = True\n', '    def close(self) -> None:\n'),
    ]),
    Mutant('plot-out-replaces-any-file', 'tests/test_curves.py -k replaces_its_own', [
        ('fastjem/cli.py', '            if not drawn_by_fastjem(out):\n', '            if False:\n'),
    ]),
    Mutant('plot-force-ignored', 'tests/test_curves.py -k replaces_its_own', [
        ('fastjem/cli.py', '        if Path(out).exists() and not args.force:\n', '        if Path(out).exists():\n'),
    ]),
    Mutant('figure-png-unmarked', 'tests/test_curves.py -k replaces_its_own', [
        ('fastjem/eval/plots.py', '        return {"metadata": {"Software": FIGURE_MARK}}', '        return {}'),
    ]),
    Mutant('figure-vector-unmarked', 'tests/test_curves.py -k replaces_its_own', [
        ('fastjem/eval/plots.py', '        return {"metadata": {"Creator": FIGURE_MARK}}', '        return {}'),
    ]),
    Mutant('figure-exif-unmarked', 'tests/test_curves.py -k replaces_its_own', [
        ('fastjem/eval/plots.py', '        exif[0x0131] = FIGURE_MARK  # Software\n', ''),
    ]),
    Mutant('png-broken-image-data-to-torchvision', 'tests/test_data.py -k intact_chunks', [
        ('fastjem/data.py', '    fault = _png_fault(data)\n',
         '    fault = PngFault("its chunks fail their CRC checks", True) if _png_damaged(data) else None\n'),
    ]),
    Mutant('png-short-image-data-to-pillow', 'tests/test_data.py -k intact_chunks', [
        ('fastjem/data.py', '    if fault is not None and not fault.rows_whole:', '    if False:'),
    ]),
    Mutant('png-filter-types-unchecked', 'tests/test_data.py -k intact_chunks', [
        ('fastjem/data.py', '                    if len(kinds) and int(kinds.max()) > 4:', '                    if False:'),
    ]),
    Mutant('png-split-image-data-unchecked', 'tests/test_data.py -k intact_chunks', [
        ('fastjem/data.py', '    if runs > 1:\n', '    if False:\n'),
    ]),
    Mutant('png-open-ended-stream-refused', 'tests/test_data.py -k intact_chunks', [
        ('fastjem/data.py', '"its compressed image data does not end (cut short after its rows?)", True)',
         '"its compressed image data does not end (cut short after its rows?)", False)'),
    ]),
    Mutant('png-interlaced-rows-miscounted', 'tests/test_data.py -k intact_chunks', [
        ('fastjem/data.py', '    for x0, y0, dx, dy in ADAM7 if interlace else ((0, 0, 1, 1),):',
         '    for x0, y0, dx, dy in ((0, 0, 1, 1),):'),
    ]),
    Mutant('class-difference-case-unpaired', 'tests/test_data.py -k different_class_folders', [
        ('fastjem/data.py', '    cased = [(n, folded[n.lower()]) for n in only_train if n.lower() in folded]', '    cased = []'),
    ]),
    Mutant('class-difference-without-remedy', 'tests/test_data.py -k different_class_folders', [
        ('fastjem/data.py', '    return "; ".join(parts) + f". train/ and {held}/ must hold the same class folders, named alike"',
         '    return "; ".join(parts)'),
    ]),
    Mutant('class-difference-val-called-test', 'tests/test_data.py -k different_class_folders', [
        ('fastjem/data.py', '_class_difference(classes, test_classes, split[1].name)', '_class_difference(classes, test_classes)'),
    ]),
    Mutant('archive-class-difference-held-out-unnamed', 'tests/test_data.py -k bad_archives_say', [
        ('fastjem/data.py', '_class_difference(classes, class_order(found[held_out]), held_out)',
         '_class_difference(classes, class_order(found[held_out]), "the held-out split")'),
    ]),
    Mutant('pillow-bomb-warning-printed-raw', 'tests/test_data.py -k bomb_threshold', [
        ('fastjem/data.py', '        warnings.filterwarnings("ignore", category=Image.DecompressionBombWarning)\n', ''),
    ]),
    Mutant('large-images-not-named', 'tests/test_data.py -k bomb_threshold', [
        ('fastjem/data.py', '        if limit is not None and x.shape[-2] * x.shape[-1] > limit:', '        if False:'),
    ]),
    Mutant('archive-warnings-not-cached', 'tests/test_data.py -k every_load_not_the_first', [
        ('fastjem/data.py', '                         "notes": list(notes)}, cache)', '                         "notes": []}, cache)'),
    ]),
    Mutant('archive-warnings-not-said', 'tests/test_data.py -k every_load_not_the_first', [
        ('fastjem/data.py', '    for note in notes:\n        # (an archive', '    for note in []:\n        # (an archive'),
    ]),
    Mutant('cache-without-warnings-taken-as-silent', 'tests/test_data.py -k every_load_not_the_first', [
        ('fastjem/data.py', '            notes = list(blob["notes"])', '            notes = list(blob.get("notes", []))'),
    ]),
    Mutant('named-split-folder-classes-checked-after-decoding', 'tests/test_data.py -k before_decoding', [
        ('fastjem/data.py', '            if check_classes is not None:\n                check_classes(classes)\n            files =',
         '            if False:\n                check_classes(classes)\n            files ='),
    ]),
    Mutant('worktree-main-checkout-not-found', 'tests/test_data.py -k worktree_finds', [
        ('tests/conftest.py', '            if common.name == ".git":\n                return common.parent\n', ''),
    ]),
    Mutant('worktree-relative-gitdir-not-found', 'tests/test_data.py -k worktree_finds', [
        ('tests/conftest.py', '            gitdir = gitdir if gitdir.is_absolute() else repo / gitdir\n', ''),
    ]),
    Mutant('bad-files-of-one-split-at-a-time', 'tests/test_data.py -k undecodable_image_is_named', [
        ('fastjem/data.py', '    if failed and bad is None:\n', '    if failed:\n'),
    ]),
    Mutant('png-past-pillows-pixel-limit-to-torchvision', 'tests/test_data.py -k pixel_limit', [
        ('fastjem/data.py', '    if limit is not None and int.from_bytes(header[:4], "big") * int.from_bytes(header[4:8], "big") > 2 * limit:',
         '    if False:'),
    ]),
    Mutant('buffer-init-variants-checked-when-their-turn-comes', 'tests/test_bench.py -k refuses_a_bad_variant', [
        ('bench/buffer_init_quality.py', 'configs[seed, init, steps] = (cfg.replace(iters=args.iters) if args.iters > 0 else cfg).validate()', 'configs[seed, init, steps] = cfg.replace(iters=args.iters) if args.iters > 0 else cfg'),
        ('bench/buffer_init_quality.py', 'summary, trainer, seconds = train_timed(configs[seed, init, steps])', 'summary, trainer, seconds = train_timed(configs[seed, init, steps].validate())'),
    ]),
    Mutant('report-readme-written-in-place', 'tests/test_bench.py -k leaves_the_readme_and_history_whole', [
        ('bench/report.py', '    atomic_write_text(f"{head}{BEGIN}\\n{markdown.strip()}\\n{END}{tail}", readme)', '    Path(readme).write_text(f"{head}{BEGIN}\\n{markdown.strip()}\\n{END}{tail}")'),
    ]),
    Mutant('report-markdown-written-in-place', 'tests/test_bench.py -k leaves_the_readme_and_history_whole', [
        ('bench/report.py', '        atomic_write_text(markdown + "\\n", args.markdown)', '        Path(args.markdown).write_text(markdown + "\\n")'),
    ]),
    Mutant('report-history-written-in-place', 'tests/test_bench.py -k leaves_the_readme_and_history_whole', [
        ('bench/report.py', '        atomic_write_text("# Every measured run', '        (lambda text, path: Path(path).write_text(text))("# Every measured run'),
    ]),
    Mutant('report-unpack-written-in-place', 'tests/test_bench.py -k cut_short_leaves_no_half_file', [
        ('bench/report.py', '        atomic_write_text(json.dumps(body, indent=2) + "\\n", target)', '        target.parent.mkdir(parents=True, exist_ok=True)\n        target.write_text(json.dumps(body, indent=2) + "\\n")'),
    ]),
    Mutant('report-plot-written-in-place', 'tests/test_bench.py -k cut_short_leaves_no_half_file', [
        ('bench/report.py', '    png = io.BytesIO()\n    fig.savefig(png, dpi=120, format=path.suffix[1:].lower() or "png")\n    plt.close(fig)\n    atomic_write_bytes(png.getvalue(), path)\n', '    fig.savefig(path, dpi=120)\n    plt.close(fig)\n'),
    ]),
    Mutant('report-result-that-is-a-list-read-as-one', 'tests/test_bench.py -k skips_and_names', [
        ('bench/report.py', '            if not isinstance(data, dict):\n                skipped.append', '            if False:\n                skipped.append'),
    ]),
    Mutant('report-result-missing-a-field-not-skipped', 'tests/test_bench.py -k skips_and_names', [
        ('bench/report.py', '                TABLES[kind]([data])\n', '                pass\n'),
    ]),
    Mutant('report-skipped-results-not-said', 'tests/test_bench.py -k skips_and_names', [
        ('bench/report.py', '        print(f"report: skipped {why}", file=sys.stderr)', '        pass'),
    ]),
    Mutant('report-plot-suffix-not-checked', 'tests/test_bench.py -k plot_or_markdown_path', [
        ('bench/report.py', '    if args.plot and Path(args.plot).suffix.lower() not in PLOT_SUFFIXES:', '    if False:'),
    ]),
    Mutant('report-markdown-folder-not-checked', 'tests/test_bench.py -k plot_or_markdown_path', [
        ('bench/report.py', '    if args.markdown and Path(args.markdown).is_dir():', '    if False:'),
    ]),
    Mutant('report-results-file-said-missing', 'tests/test_bench.py -k plot_or_markdown_path', [
        ('bench/report.py', '        what = "a file, not a folder" if Path(args.results).exists() else "no such folder"', '        what = "no such folder"'),
    ]),
    Mutant('report-plot-format-by-case', 'tests/test_bench.py -k plot_or_markdown_path', [
        ('bench/report.py', 'format=path.suffix[1:].lower() or "png"', 'format="png"'),
    ]),
    Mutant('kernel-benchmark-script-runs-nothing', 'tests/test_bench.py -k run_as_a_script', [
        ('bench/bench_kernels.py', '    sys.exit(run_script(main))', '    pass'),
    ]),
    Mutant('bench-ctrl-c-a-traceback', 'tests/test_bench.py -k "run_script or interrupted_end_quietly"', [
        ('bench/env_info.py', '    except KeyboardInterrupt:\n        print(interrupted_line(', '    except UnicodeError:\n        print(interrupted_line('),
    ]),
    Mutant('bench-ctrl-c-status-1', 'tests/test_bench.py -k "run_script or interrupted_end_quietly"', [
        ('bench/env_info.py', 'interrupted_line(SAVED[first:]), file=sys.stderr, flush=True)\n        return 130', 'interrupted_line(SAVED[first:]), file=sys.stderr, flush=True)\n        return 1'),
    ]),
    Mutant('bench-ctrl-c-names-nothing-saved', 'tests/test_bench.py -k "run_script or interrupted_end_quietly"', [
        ('bench/env_info.py', '            os.link(tmp, path)\n            return saved(path)', '            os.link(tmp, path)\n            return path'),
    ]),
    Mutant('bench-ctrl-c-names-an-earlier-runs-files', 'tests/test_bench.py -k run_script', [
        ('bench/env_info.py', '    first = len(SAVED)\n', '    first = 0\n'),
    ]),
    Mutant('bench-quick-run-ctrl-c-in-training-a-message-and-status-1', 'tests/test_bench.py -k interrupted_end_quietly', [
        ('bench/quick_run.py', '        if summary.get("stopped_by") == "SIGINT":', '        if False:'),
    ]),
    Mutant('bench-kernels-ctrl-c-pytest-status-2', 'tests/test_bench.py -k ends_a_ctrl_c_as', [
        ('bench/bench_kernels.py', '    if any(interrupted):\n        raise KeyboardInterrupt', '    if False:\n        raise KeyboardInterrupt'),
    ]),
    Mutant('bench-kernels-pytest-exit-taken-for-ctrl-c', 'tests/test_bench.py -k ends_a_ctrl_c_as', [
        ('bench/bench_kernels.py', '            interrupted.append(excinfo.errisinstance(KeyboardInterrupt))', '            interrupted.append(True)'),
    ]),
    Mutant('sgld-study-cpu-runs-the-gpu-model', 'tests/test_bench.py -k defaults_to_the_cpu_bar_model', [
        ('bench/sgld_study.py', '            setattr(args, name, on_cuda if cuda else on_cpu)', '            setattr(args, name, on_cuda)'),
    ]),
    Mutant('sgld-study-smoke-sizes-not-set', 'tests/test_bench.py -k defaults_to_the_cpu_bar_model', [
        ('bench/sgld_study.py', '    if args.smoke:\n        smoke_sizes(p, args, {"depth": 10,', '    if False:\n        smoke_sizes(p, args, {"depth": 10,'),
    ]),
    Mutant('claim-result-replaces-a-taken-name', 'tests/test_bench.py -k same_second', [
        ('bench/env_info.py', '        if path.exists():\n            continue\n        tmp = folder', '        tmp = folder'),
        ('bench/env_info.py', '            os.link(tmp, path)\n', '            os.replace(tmp, path)\n'),
    ]),
    Mutant('steps-save-claims-at-every-write', 'tests/test_bench.py -k same_second', [
        ('bench/steps_per_sec.py', '        path = write_result(report, "steps", device, started, out, path)\n', '        path = write_result(report, "steps", device, started, out)\n'),
    ]),
    Mutant('sgld-study-save-claims-at-every-write', 'tests/test_bench.py -k same_second', [
        ('bench/sgld_study.py', '        path = write_result(report, "sgld-study", device, started, args.out, path)\n', '        path = write_result(report, "sgld-study", device, started, args.out)\n'),
    ]),
    Mutant('profile-claims-at-every-write', 'tests/test_bench.py -k same_second', [
        ('bench/profile_step.py', '        path = write_result(report, "profile", device, started, args.out, path)\n', '        path = write_result(report, "profile", device, started, args.out)\n'),
    ]),
    Mutant('kernels-report-replaces-a-same-second-run', 'tests/test_bench.py -k same_second', [
        ('bench/bench_kernels.py', '    return claim_result(', '    return (lambda text, folder, name: (folder / name).write_text(text) and folder / name)('),
    ]),
    Mutant('steps-config-listed-twice-runs-twice', 'tests/test_bench.py -k listed_twice', [
        ('bench/steps_per_sec.py', 'refuse_repeats(p, "--configs", args.configs,', 'refuse_repeats(p, "--configs", [],'),
    ]),
    Mutant('sgld-study-variant-listed-twice-runs-twice', 'tests/test_bench.py -k listed_twice', [
        ('bench/sgld_study.py', 'refuse_repeats(p, "--variants", names,', 'refuse_repeats(p, "--variants", [],'),
    ]),
    Mutant('profile-engine-listed-twice-runs-twice', 'tests/test_bench.py -k listed_twice', [
        ('bench/profile_step.py', 'refuse_repeats(p, "--engines", engines,', 'refuse_repeats(p, "--engines", [],'),
    ]),
    Mutant('claim-result-needs-hard-links', 'tests/test_bench.py -k same_second', [
        ('bench/env_info.py', '        except OSError:  # a file system without hard links: created exclusively, then filled\n            try:', '        except OSError:  # a file system without hard links: created exclusively, then filled\n            raise\n            try:'),
    ]),
    Mutant('report-kernel-cpu-rows-without-threads', 'tests/test_bench.py -k kernel_runs_rows_name', [
        ('bench/report.py', '        d = {"name": str(d), "type": "cpu" if rep.get("threads") else "cuda", "threads": rep.get("threads")}', '        return str(d)'),
    ]),
    Mutant('report-one-threads', 'tests/test_bench.py -k physical_cores_their_threads', [
        ('bench/report.py', "thread{'s' if threads > 1 else ''}{shared}", 'threads{shared}'),
    ]),
    Mutant('precision-quality-written-at-the-end', 'tests/test_bench.py -k cut_short_keeps_the_runs', [
        ('bench/precision_quality.py', '        path = write_result(rep, "precision-quality", trainer.device, started, args.out, path)\n', '    path = write_result(rep, "precision-quality", trainer.device, started, args.out, path)\n'),
    ]),
    Mutant('buffer-init-written-at-the-end', 'tests/test_bench.py -k cut_short_keeps_the_runs', [
        ('bench/buffer_init_quality.py', '            path = write_result(rep, "buffer-init", trainer.device, started, args.out, path)\n', '    path = write_result(rep, "buffer-init", trainer.device, started, args.out, path)\n'),
    ]),
    Mutant('cpu-compile-study-written-at-the-end', 'tests/test_bench.py -k cut_short_keeps_the_runs', [
        ('bench/cpu_compile_study.py', '            report[section][name] = race\n            path = write_result(report, "cpu-compile", device, when, args.out, path)\n', '            report[section][name] = race\n'),
    ]),
    Mutant('quality-means-over-every-asked-run', 'tests/test_bench.py -k cut_short_keeps_the_runs', [
        ('bench/buffer_init_quality.py', '        if not mine:\n            continue\n', ''),
    ]),
    Mutant('cifar-grid-not-named-after-its-json', 'tests/test_bench.py -k two_cifar_runs', [
        ('bench/cifar_run.py', 'path.name.removeprefix("cifar-").removesuffix(".json")', 'path.name.removeprefix("cifar-").removesuffix("-2.json").removesuffix(".json")'),
    ]),
    Mutant('steps-other-config-passed-for-the-bar', 'tests/test_bench.py -k ratio_lines', [
        ('bench/steps_per_sec.py', '    other = (bar["name"], bar["batch_size"]) != want\n', '    other = False\n'),
    ]),
    Mutant('sgld-study-tflops-two-decimals', 'tests/test_bench.py -k records_a_failed_variant', [
        ('bench/sgld_study.py', "{three_figures(row['tflops_per_s']):>7} \"", "{row['tflops_per_s']:7.2f} \""),
    ]),
    Mutant('reference-worker-interrupt-traceback', 'tests/test_bench.py -k interrupted_ends_quietly', [
        ('bench/steps_per_sec.py', '    except KeyboardInterrupt:\n        print(f"{name} worker process: interrupted"', '    except ArithmeticError:\n        print(f"{name} worker process: interrupted"'),
    ]),
    Mutant('package-imports-torch-at-load', 'tests/test_cli.py -k without_importing_torch', [
        ('fastjem/__init__.py',
         'import importlib\n',
         'import importlib\n\nimport torch  # noqa: F401\n'),
    ]),
    Mutant('errors-import-the-kernels-at-load', 'tests/test_cli.py -k without_importing_torch', [
        ('fastjem/errors.py',
         '"""Errors that the CLI turns into one clear message and a non-zero exit."""\n',
         '"""Errors that the CLI turns into one clear message and a non-zero exit."""\n\nfrom fastjem.kernels._dispatch import as_integer  # noqa: F401\n'),
    ]),
    Mutant('config-imports-the-networks-at-load', 'tests/test_cli.py -k without_importing_torch', [
        ('fastjem/config.py',
         'from fastjem.errors import ConfigError\n',
         'from fastjem.errors import ConfigError\nfrom fastjem.models import check_image_size  # noqa: F401\n'),
    ]),
    Mutant('runs-module-imports-checkpoint-at-load', 'tests/test_cli.py -k without_importing_torch', [
        ('fastjem/runs.py',
         'from fastjem.config import TrainConfig\n',
         'from fastjem.checkpoint import RUN_LOCK  # noqa: F401\nfrom fastjem.config import TrainConfig\n'),
    ]),
    Mutant('eval-options-built-for-every-command', 'tests/test_cli.py -k without_importing_torch', [
        ('fastjem/cli.py',
         '    if command in (None, "eval", "sample"):\n',
         '    if True:\n'),
    ]),
    Mutant('main-builds-every-command', 'tests/test_cli.py -k without_importing_torch', [
        ('fastjem/cli.py',
         'parser = build_parser(next((a for a in argv if not a.startswith("-")), ""))',
         'parser = build_parser()'),
    ]),
    Mutant('sample-options-not-built-for-sample', 'tests/test_cli.py -k without_importing_torch', [
        ('fastjem/cli.py',
         '    if command in (None, "eval", "sample"):\n',
         '    if command in (None, "eval"):\n'),
    ]),
    Mutant('main-builds-no-eval-options', 'tests/test_cli.py -k without_importing_torch', [
        ('fastjem/cli.py',
         'parser = build_parser(next((a for a in argv if not a.startswith("-")), ""))',
         'parser = build_parser("")'),
    ]),
    Mutant('named-archive-classes-checked-after-decoding', 'tests/test_data.py -k archives_of_other_classes', [
        ('fastjem/data.py', '    if check_classes is None:\n        images = reading(', '    if True:\n        images = reading('),
    ]),
    Mutant('named-archives-read-twice', 'tests/test_data.py -k archives_given_as_a_named_dataset_are_read_once', [
        ('fastjem/data.py', '        members = reading(lambda: list(_archive_images(archives, listing, progress)))\n',
         '        reading(lambda: list(_archive_images(archives, _ArchiveListing(reading=archives[:1]), progress)))\n'
         '        members = reading(lambda: list(_archive_images(archives, listing, progress)))\n'),
    ]),
    Mutant('ood-folder-decoded-image-by-image', 'tests/test_eval.py -k ood_folders_images_past', [
        ('fastjem/eval/ood.py', '        images = _decode_many(paths, f"the OOD folder {folder}", size, total=len(paths), progress=False, bad=bad)',
         '        from fastjem.data import fit_size, read_image\n        images = [fit_size(read_image(p.read_bytes(), str(p)), size) for p in paths]'),
    ]),
    Mutant('jpeg-past-pixel-limit-to-torchvision', 'tests/test_data.py -k jpeg_gif_or_webp', [
        ('fastjem/data.py', 'fault is not None or _past_pixel_limit(data) else', 'fault is not None else'),
    ]),
    Mutant('pixel-limit-unread-header-not-asked-of-pillow', 'tests/test_data.py -k jpeg_gif_or_webp', [
        ('fastjem/data.py', '    if size is None:\n        if not (data[:3]', '    if size is None:\n        return False\n        if not (data[:3]'),
    ]),
    Mutant('jpeg-header-size-swapped', 'tests/test_data.py -k jpeg_gif_or_webp', [
        ('fastjem/data.py', 'return int.from_bytes(data[at + 7:at + 9], "big"), int.from_bytes(data[at + 5:at + 7], "big")',
         'return int.from_bytes(data[at + 5:at + 7], "big"), int.from_bytes(data[at + 7:at + 9], "big")'),
    ]),
    Mutant('webp-lossless-header-size-misread', 'tests/test_data.py -k jpeg_gif_or_webp', [
        ('fastjem/data.py', 'return 1 + (bits & 0x3FFF), 1 + (bits >> 14 & 0x3FFF)', 'return 1 + (bits & 0x3FFF), 1 + (bits >> 16 & 0x3FFF)'),
    ]),
    Mutant('png-fault-walks-the-chunks-twice', 'tests/test_data.py -k walks_its_chunks_once', [
        ('fastjem/data.py', '    chunks = _png_chunks(data)\n', '    chunks = _png_chunks(data) if _png_damaged(data) or True else None\n'),
    ]),
    Mutant('sweep-first-run-loads-the-checked-data-again', 'tests/test_sweep.py -k loads_is_trained_on', [
        ('fastjem/sweep.py', 'progress=progress, log=run_log, loaded=given)', 'progress=progress, log=run_log, loaded=None)'),
    ]),
    Mutant('trainer-loaded-data-loaded-again', 'tests/test_sweep.py -k loads_is_trained_on', [
        ('fastjem/train.py', '        elif loaded is not None:\n            arrays = check_arrays(loaded, "loaded=")\n', ''),
    ]),
    Mutant('sweep-checked-data-held-for-the-whole-sweep', 'tests/test_sweep.py -k loads_is_trained_on', [
        ('fastjem/sweep.py', '        loaded, self._loaded = self._loaded, None\n', '        loaded = self._loaded\n'),
    ]),
    Mutant('renamed-torchvision-archive-unnamed', 'tests/test_data.py -k torchvisions_cifar_download_under', [
        ('fastjem/data.py', '        for dataset, archive in list(listing.torchvision.items())[:1]:', '        for dataset, archive in []:'),
    ]),
    Mutant('optim-nesterov-without-momentum-taken', 'tests/test_optim.py', [
        ('fastjem/optim.py',
         '        if nesterov and momentum <= 0:\n            raise',
         '        if False:\n            raise'),
    ]),
    Mutant('optim-float-lr-taken', 'tests/test_optim.py tests/test_iteration_graph.py -k "optim or sgd or learning_rate"', [
        ('fastjem/optim.py',
         '        if not isinstance(lr, torch.Tensor) or lr.dim() != 0:\n            raise',
         '        if False:\n            raise'),
    ]),
    Mutant('optim-load-keeps-its-own-lr-value', 'tests/test_optim.py', [
        ('fastjem/optim.py',
         '                    lr.copy_(torch.as_tensor(saved, dtype=lr.dtype))',
         '                    pass'),
    ]),
    Mutant('cast-copy-without-layers-taken', 'tests/test_weights.py', [
        ('fastjem/weights.py',
         '    if not any(isinstance(m, CAST_MODULES) for m in model.modules()):',
         '    if False:'),
    ]),
    Mutant('cast-copy-parametrized-taken', 'tests/test_weights.py', [
        ('fastjem/weights.py',
         '        if parametrize.is_parametrized(m):',
         '        if False:'),
    ]),
    Mutant('cast-copy-counts-every-parameter', 'tests/test_weights.py tests/test_engine.py -k "cast"', [
        ('fastjem/weights.py',
         'return sum(p.numel() for p in self.module.parameters() if p.dtype == self.dtype)',
         'return sum(p.numel() for p in self.module.parameters())'),
    ]),
    Mutant('cast-copy-casts-norm-layers-too', 'tests/test_weights.py', [
        ('fastjem/weights.py',
         '            if isinstance(m, CAST_MODULES):\n                for p in m.parameters(recurse=False):',
         '            if True:\n                for p in m.parameters(recurse=False):'),
    ]),
    Mutant('sampling-network-cast-always', 'tests/test_weights.py', [
        ('fastjem/weights.py',
         '    if not cast:\n        return model, net, None, None',
         '    if False:\n        return model, net, None, None'),
    ]),
    Mutant('export-default-name-always-model', 'tests/test_export.py', [
        ('fastjem/export.py',
         'name = "model.pt2" if em.path.name == "checkpoint.pt" else f"model-{em.path.stem}.pt2"',
         'name = "model.pt2"'),
    ]),
    Mutant('export-meta-iteration-zero', 'tests/test_export.py', [
        ('fastjem/export.py',
         '"iteration": em.iteration,',
         '"iteration": 0,'),
    ]),
    Mutant('export-meta-no-classes', 'tests/test_export.py', [
        ('fastjem/export.py',
         '"classes": list(em.info.classes),',
         '"classes": [],'),
    ]),
    Mutant('meminfo-kb-read-as-bytes', 'tests/test_data.py tests/test_buffer.py tests/test_cli.py -k "memory or free or fit or cgroup or meminfo"', [
        ('fastjem/memory.py',
         'int(parts[0]) * (1024 if parts[1:] == ["kB"] else 1)',
         'int(parts[0])'),
    ]),
    Mutant('free-memory-looser-of-host-and-cgroup', 'tests/test_data.py tests/test_buffer.py tests/test_cli.py -k "memory or free or fit or cgroup or meminfo"', [
        ('fastjem/memory.py',
         'else min(host, cgroup)',
         'else max(host, cgroup)'),
    ]),
    Mutant('check-fits-advice-function-not-called', 'tests/test_data.py tests/test_buffer.py tests/test_cli.py -k "memory or free or fit or cgroup or meminfo"', [
        ('fastjem/memory.py',
         'said = advice(free) if callable(advice) else advice',
         'said = advice'),
    ]),
    Mutant('size-text-gib-in-mib', 'tests/test_data.py tests/test_buffer.py tests/test_cli.py -k "memory or free or fit or cgroup or meminfo"', [
        ('fastjem/memory.py',
         '("GiB", 2**30)',
         '("GiB", 2**20)'),
    ]),
    Mutant('cgroup-dotdot-path-followed', 'tests/test_buffer.py -k cgroup', [
        ('fastjem/memory.py',
         '    if ".." in Path(path).parts or not folder.is_dir():',
         '    if not folder.is_dir():'),
    ]),
    Mutant('world-from-env-without-rank', 'tests/test_distributed.py -k clear_error', [
        ('fastjem/distributed.py',
         '    return world if world > 1 and "RANK" in os.environ else 1',
         '    return world'),
    ]),
    Mutant('build-model-unknown-arch-is-a-convnet', 'tests/test_models.py tests/test_cli.py -k "arch or build"', [
        ('fastjem/models/__init__.py',
         '    raise ValueError(f"unknown arch {arch!r}; expected wrn or convnet")',
         '    return ConvNet(num_classes, in_channels, width, norm, dropout)'),
    ]),
    Mutant('has-dropout-counts-rate-zero', 'tests/test_models.py -k batch_norm_are_seen', [
        ('fastjem/models/__init__.py',
         'and m.p > 0 for m in model.modules())',
         'for m in model.modules())'),
    ]),
    Mutant('runs-kind-always-jem', 'tests/test_runs.py', [
        ('fastjem/runs.py',
         'kind = config.model_name, ("JEM" if config.generative else "classifier")',
         'kind = config.model_name, "JEM"'),
    ]),
    Mutant('runs-running-shown-stopped', 'tests/test_runs.py', [
        ('fastjem/runs.py',
         'state = "running" if lock_holder(folder / RUN_LOCK) else "stopped"',
         'state = "stopped"'),
    ]),
    Mutant('runs-sweeps-runs-not-found', 'tests/test_runs.py', [
        ('fastjem/runs.py',
         '                elif (q / "sweep.json").exists():\n                    found += sorted(r for r in q.iterdir() if is_run(r))',
         '                elif False:\n                    pass'),
    ]),
    Mutant('runs-file-taken-as-no-run', 'tests/test_runs.py', [
        ('fastjem/runs.py',
         '            raise ConfigError(f"{p} is not a run folder (no metrics.jsonl) nor a folder of runs")',
         '            pass'),
    ]),
    Mutant('runs-label-drops-the-sweep', 'tests/test_runs.py tests/test_sweep.py -k "runs or label"', [
        ('fastjem/runs.py',
         '    return f"{folder.parent.name}/{folder.name}"',
         '    return folder.name'),
    ]),
    Mutant('runs-json-list-taken-as-config', 'tests/test_runs.py -k summary', [
        ('fastjem/runs.py',
         '    return data if isinstance(data, dict) else None',
         '    return data'),
    ]),
    Mutant('runs-done-iteration-from-the-log', 'tests/test_runs.py -k summary', [
        ('fastjem/runs.py',
         '        "iteration": summary["iteration"] if done else iteration,',
         '        "iteration": iteration,'),
    ]),
    Mutant('runs-progress-without-total', 'tests/test_runs.py', [
        ('fastjem/runs.py',
         'status = "done" if done else (f"{state} ({iteration}/{total})" if total else state)',
         'status = "done" if done else state'),
    ]),
    Mutant('runs-best-of-summary-ignored', 'tests/test_runs.py', [
        ('fastjem/runs.py',
         '    best = (summary or {}).get("best") if done else None',
         '    best = None'),
    ]),
    Mutant('convert-dataparallel-prefix-kept', 'tests/test_convert.py', [
        ('fastjem/convert.py',
         '    state = {k.removeprefix("module."): v for k, v in state.items()}',
         '    state = dict(state)'),
    ]),
    Mutant('convert-empty-buffer-kept', 'tests/test_convert.py', [
        ('fastjem/convert.py',
         '    if buffer is not None and not (isinstance(buffer, torch.Tensor) and buffer.numel() > 0):\n        buffer = None',
         '    if False:\n        buffer = None'),
    ]),
    Mutant('convert-given-norm-over-the-files', 'tests/test_convert.py', [
        ('fastjem/convert.py',
         '    if found is not None and norm is not None and norm != found:',
         '    if False:'),
    ]),
    Mutant('convert-100-classes-default-cifar10', 'tests/test_convert.py', [
        ('fastjem/convert.py',
         '        dataset = "cifar100" if arch["num_classes"] == 100 else "cifar10"',
         '        dataset = "cifar10"'),
    ]),
    Mutant('convert-dataset-misfit-taken', 'tests/test_convert.py', [
        ('fastjem/convert.py',
         '    if (arch["num_classes"], arch["channels"]) != (info.num_classes, info.channels):',
         '    if False:'),
    ]),
    Mutant('convert-diverged-buffer-taken', 'tests/test_convert.py', [
        ('fastjem/convert.py',
         '        if not torch.isfinite(buffer).all():',
         '        if False:'),
    ]),
    Mutant('convert-back-image-size-unchecked', 'tests/test_convert.py', [
        ('fastjem/convert.py',
         '    if (info.get("channels"), info.get("image_size")) != (3, 32):',
         '    if False:'),
    ]),
    Mutant('convert-classifier-only-keeps-px', 'tests/test_convert.py', [
        ('fastjem/convert.py',
         '        cfg = cfg.replace(px_weight=0.0)',
         '        pass'),
    ]),
    Mutant('convert-legacy-file-not-read', 'tests/test_convert.py -k legacy', [
        ('fastjem/convert.py',
         '    for mmap in (True, False):',
         '    for mmap in (True,):'),
    ]),
    Mutant('convert-back-heads-not-ten', 'tests/test_convert.py', [
        ('fastjem/convert.py',
         '_THEIR_LINEAR_CLASSES = 10',
         '_THEIR_LINEAR_CLASSES = 11'),
    ]),
    Mutant('state-snapshot-aliases-its-tensors', 'tests/test_iteration_graph.py -k "snapshot or restore"', [
        ('fastjem/graphs.py',
         '        self.saved = [t.detach().clone() for t in self.tensors]',
         '        self.saved = [t.detach() for t in self.tensors]'),
    ]),
    Mutant('state-snapshot-generators-not-restored', 'tests/test_iteration_graph.py -k "snapshot or restore"', [
        ('fastjem/graphs.py',
         '            g.set_state(state)',
         '            pass'),
    ]),
    Mutant('error-line-keeps-every-line', 'tests/test_convert.py tests/test_export.py tests/test_cli.py -k "error or refuse or unreadable"', [
        ('fastjem/errors.py',
         '''return f"{type(err).__name__}: {text.splitlines()[0] if text else ''}"''',
         '''return f"{type(err).__name__}: {text}"'''),
    ]),
    Mutant('as-real-error-type-ignored', 'tests/test_buffer.py -k checks_its_settings', [
        ('fastjem/errors.py',
         '    raise error(f"{what} must be a number, got {value!r} ({type(value).__name__})")',
         '    raise TypeError(f"{what} must be a number, got {value!r} ({type(value).__name__})")'),
    ]),
    Mutant('has-dropout-plain-dropout-only', 'tests/test_models.py -k batch_norm_are_seen', [
        ('fastjem/models/__init__.py',
         'isinstance(m, nn.modules.dropout._DropoutNd)',
         'isinstance(m, nn.Dropout)'),
    ]),
    Mutant('has-batch-norm-2d-only', 'tests/test_models.py -k batch_norm_are_seen', [
        ('fastjem/models/__init__.py',
         'isinstance(m, nn.modules.batchnorm._BatchNorm)',
         'isinstance(m, nn.BatchNorm2d)'),
    ]),
    Mutant('optim-closure-without-grad', 'tests/test_optim.py', [
        ('fastjem/optim.py',
         '            with torch.enable_grad():\n                loss = closure()',
         '            if True:\n                loss = closure()'),
    ]),
    Mutant('optim-frozen-parameters-decayed', 'tests/test_optim.py', [
        ('fastjem/optim.py',
         '            params = [p for p in group["params"] if p.grad is not None]',
         '            params = list(group["params"])'),
        ('fastjem/optim.py',
         '            grads = [p.grad for p in params]',
         '            grads = [torch.zeros_like(p) if p.grad is None else p.grad for p in params]'),
    ]),
    Mutant('optim-lr-of-one-element-taken', 'tests/test_optim.py', [
        ('fastjem/optim.py',
         '        if not isinstance(lr, torch.Tensor) or lr.dim() != 0:',
         '        if not isinstance(lr, torch.Tensor):'),
    ]),
    Mutant('cgroup-loosest-level-taken', 'tests/test_buffer.py -k cgroup', [
        ('fastjem/memory.py',
         'best = max(0, free) if best is None else min(best, max(0, free))',
         'best = max(0, free) if best is None else max(best, max(0, free))'),
    ]),
    Mutant('free-gpu-memory-without-cuda-raises', 'tests/test_buffer.py -k free_memory', [
        ('fastjem/memory.py',
         '        except (RuntimeError, AssertionError):',
         '        except RuntimeError:'),
    ]),
    Mutant('dist-callers-group-needs-master-addr', 'tests/test_distributed.py -k "clear_error or joining or caller_made"', [
        ('fastjem/distributed.py',
         '    missing = [v for v in ("RANK", *(() if dist.is_initialized() else ("MASTER_ADDR", "MASTER_PORT")))',
         '    missing = [v for v in ("RANK", "MASTER_ADDR", "MASTER_PORT")'),
    ]),
    Mutant('runs-started-run-not-found', 'tests/test_runs.py -k stopped_between', [
        ('fastjem/runs.py',
         'return (folder / "metrics.jsonl").exists() or ((folder / "config.json").exists() and not (folder / "sweep.json")\n',
         'return (folder / "metrics.jsonl").exists() or (False and not (folder / "sweep.json")\n'),
    ]),
    Mutant('convert-data-dir-dropped', 'tests/test_convert.py', [
        ('fastjem/convert.py',
         '                                      data_dir=str(data_dir or ""))',
         '                                      data_dir="")'),
    ]),
    Mutant('dist-callers-group-joined-again', 'tests/test_distributed.py -k "clear_error or joining or caller_made"', [
        ('fastjem/distributed.py',
         '    if not dist.is_initialized():\n        if use_cuda:',
         '    if True:\n        if use_cuda:'),
    ]),
    Mutant('error-line-of-no-text-fails', 'tests/test_export.py -k without_a_message', [
        ('fastjem/errors.py',
         '''return f"{type(err).__name__}: {text.splitlines()[0] if text else ''}"''',
         '''return f"{type(err).__name__}: {text.splitlines()[0]}"'''),
    ]),
    Mutant('convert-imported-mark-dropped', 'tests/test_convert.py -k cli_convert', [
        ('fastjem/convert.py',
         '            "imported": {"from": str(src.resolve()), "code": "github.com/wgrathwohl/JEM (train_wrn_ebm.py, CCF)"}}',
         '            }'),
    ]),
    Mutant('runs-checkpoint-iteration-ignored', 'tests/test_runs.py -k stopped_between', [
        ('fastjem/runs.py',
         '        iteration = max(iteration, saved)',
         '        pass'),
    ]),
    Mutant('runs-missing-value-shown-none', 'tests/test_runs.py -k dash', [
        ('fastjem/runs.py',
         '[["-" if r[k] is None else fmt_.format(r[k])',
         '[["None" if r[k] is None else fmt_.format(r[k])'),
    ]),
    Mutant('progress-bar-tty-interval-ignored', 'tests/test_console.py -k as_often', [
        ('fastjem/console.py',
         'kwargs["mininterval"] = tty_interval if tty else 30.0',
         'kwargs["mininterval"] = 0.1 if tty else 30.0'),
    ]),
    Mutant('progress-bar-ignores-its-file', 'tests/test_console.py', [
        ('fastjem/console.py',
         '    out = kwargs.setdefault("file", sys.stderr)',
         '    out = kwargs["file"] = sys.stderr'),
    ]),
    Mutant('cast-copy-buffers-not-refreshed', 'tests/test_weights.py', [
        ('fastjem/weights.py',
         '        self._dst = list(self.module.parameters()) + list(self.module.buffers())\n        self._src = list(source.parameters()) + list(source.buffers())',
         '        self._dst = list(self.module.parameters())\n        self._src = list(source.parameters())'),
    ]),
    Mutant('convert-back-class-blocks-interleaved-by-rank', 'tests/test_convert.py -k class_blocks', [
        ('fastjem/convert.py',
         'data = [d.view(k, -1, *d.shape[1:])[y] for y in range(k) for d in data]',
         'data = [d.view(k, -1, *d.shape[1:])[y] for d in data for y in range(k)]'),
    ]),
    Mutant('export-traced-at-batch-one', 'tests/test_export.py', [
        ('fastjem/export.py',
         '    example = torch.zeros(2, c, s, s, device=em.device)',
         '    example = torch.zeros(1, c, s, s, device=em.device)'),
    ]),
    Mutant('d-max-over-ranks-is-the-min', 'tests/test_distributed.py -k precision', [
        ('fastjem/distributed.py',
         '    dist.all_reduce(t, op=dist.ReduceOp.MAX)\n    return int(t.item())',
         '    dist.all_reduce(t, op=dist.ReduceOp.MIN)\n    return int(t.item())'),
    ]),
    Mutant('leaky-relu-slope-0.1', 'tests/test_models.py', [
        ('fastjem/models/wrn.py',
         'LEAK = 0.2',
         'LEAK = 0.1'),
    ]),
    Mutant('runs-finished-run-marked-diverged', 'tests/test_runs.py -k divergence', [
        ('fastjem/runs.py',
         '    if not done and ((folder / "diverged.txt").exists() or stopped_by_divergence):',
         '    if ((folder / "diverged.txt").exists() or stopped_by_divergence):'),
    ]),
    Mutant('cgroup-v1-swap-not-counted', 'tests/test_buffer.py -k cgroup', [
        ('fastjem/memory.py',
         '            free = limit - used + cache + swap_free',
         '            free = limit - used + cache'),
    ]),
    Mutant('cast-copy-linear-not-cast', 'tests/test_weights.py', [
        ('fastjem/weights.py',
         '                nn.Linear)',
         '                )'),
    ]),
    Mutant('cgroup-mount-root-limit-ignored', 'tests/test_buffer.py -k cgroup', [
        ('fastjem/memory.py',
         '    return [folder, *[p for p in folder.parents if p == root or root in p.parents]]',
         '    return [folder, *[p for p in folder.parents if root in p.parents]]'),
    ]),
    Mutant('runs-label-given-run-prefixed', 'tests/test_runs.py', [
        ('fastjem/runs.py',
         '    if folder.resolve() in roots or folder.parent.resolve() in roots:',
         '    if folder.parent.resolve() in roots:'),
    ]),
    Mutant('convert-back-convnet-accepted', 'tests/test_convert.py', [
        ('fastjem/convert.py',
         '    if (ckpt.get("custom") or {}).get("model") or cfg.arch != "wrn":',
         '    if (ckpt.get("custom") or {}).get("model"):'),
    ]),
    Mutant('joint-energy-empty-batch-fails', 'tests/test_energy.py -k labels', [
        ('fastjem/energy.py',
         '    if y.device.type == "cpu" and y.numel():',
         '    if y.device.type == "cpu":'),
    ]),
    Mutant('layer-norm-wrn-width-1-refused', 'tests/test_models.py', [
        ('fastjem/models/__init__.py',
         '    return 2 if norm == "layer" and arch == "convnet" and width == 1 else 1',
         '    return 2 if norm == "layer" and width == 1 else 1'),
    ]),
    Mutant('convert-body-conv-unchecked', 'tests/test_convert.py -k not_the_authors_wrn', [
        ('fastjem/convert.py',
         '    if "class_output.weight" not in state or "f.conv1.weight" not in state:',
         '    if "class_output.weight" not in state:'),
    ]),
    Mutant('convert-two-groups-taken', 'tests/test_convert.py -k not_the_authors_wrn', [
        ('fastjem/convert.py',
         '    if sorted(counts) != [1, 2, 3] or len(set(counts.values())) != 1:',
         '    if len(set(counts.values())) != 1:'),
    ]),
    Mutant('convert-batch-given-for-affine-only-norms', 'tests/test_convert.py -k say_what_to_do', [
        ('fastjem/convert.py',
         '    if found is None and norm not in ("instance", "layer"):',
         '    if found is None and norm is None:'),
    ]),
    Mutant('convert-state-not-a-dict-read', 'tests/test_convert.py -k not_the_authors_wrn', [
        ('fastjem/convert.py',
         '    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):',
         '    if not all(isinstance(v, torch.Tensor) for v in state.values()):'),
    ]),
    Mutant('convert-buffer-not-a-tensor-read', 'tests/test_convert.py -k not_the_authors_wrn', [
        ('fastjem/convert.py',
         '    if buffer is not None and not (isinstance(buffer, torch.Tensor) and buffer.numel() > 0):',
         '    if buffer is not None and not buffer.numel() > 0:'),
    ]),
    Mutant('batch-one-image-check-for-every-norm', 'tests/test_models.py -k one_image_of_1x1', [
        ('fastjem/models/__init__.py',
         '    if norm != "batch" or batch > 1 or smallest_norm_size(arch, image_size) > 1:',
         '    if batch > 1 or smallest_norm_size(arch, image_size) > 1:'),
    ]),
    Mutant('cast-copy-default-fp16', 'tests/test_weights.py', [
        ('fastjem/weights.py',
         '    def __init__(self, source: nn.Module, dtype: torch.dtype = torch.bfloat16):',
         '    def __init__(self, source: nn.Module, dtype: torch.dtype = torch.float16):'),
    ]),
    Mutant('build-model-default-wrn-16', 'tests/test_models.py -k build_model', [
        ('fastjem/models/__init__.py',
         'def build_model(arch: str, num_classes: int, in_channels: int, depth: int = 28, width: int = 10,',
         'def build_model(arch: str, num_classes: int, in_channels: int, depth: int = 16, width: int = 10,'),
    ]),
    Mutant('sampling-network-default-fp16', 'tests/test_weights.py', [
        ('fastjem/weights.py',
         '                     dtype: torch.dtype = torch.bfloat16) -> tuple',
         '                     dtype: torch.dtype = torch.float16) -> tuple'),
    ]),
    Mutant('sampling-network-freezes-the-trained-model', 'tests/test_weights.py', [
        ('fastjem/weights.py',
         '    return cast_copy.module, sgld_net, cast_copy, None',
         '    return model, sgld_net, cast_copy, None'),
    ]),
    Mutant('runs-best-any-validation', 'tests/test_runs.py', [
        ('fastjem/runs.py',
         '        kept = [e for e in val if e.get("best")]',
         '        kept = val'),
    ]),
    Mutant('runs-summary-fields-unchecked', 'tests/test_runs.py -k cannot_be_read', [
        ('fastjem/runs.py',
         '    return summary if fits else None\n',
         '    return summary\n'),
    ]),
    Mutant('runs-summary-best-fields-unchecked', 'tests/test_runs.py -k cannot_be_read', [
        ('fastjem/runs.py',
         'good_best = not best or isinstance(best, dict) and all(',
         'good_best = not best or isinstance(best, dict) or all('),
    ]),
    Mutant('runs-config-length-unchecked', 'tests/test_runs.py -k cannot_be_read', [
        ('fastjem/runs.py',
         '(cfg.get(k) if _number(cfg.get(k)) else 0 for k in ("iters", "epochs"))',
         '(cfg.get(k) or 0 for k in ("iters", "epochs"))'),
    ]),
    Mutant('dispatch-auto-without-triton', 'tests/test_kernels_dispatch.py -k forced_triton_without_triton_is', [
        ('kernels/_dispatch.py',
         '        return runnable and triton is not None',
         '        return runnable'),
    ]),
    Mutant('interpreter-read-unlike-triton', 'tests/test_kernels_dispatch.py -k interpreter_is_on', [
        ('kernels/_dispatch.py',
         '        return bool(knobs.runtime.interpret)',
         '        return os.environ.get("TRITON_INTERPRET", "0").strip().lower() in ("1", "true", "on", "yes")'),
    ]),
    Mutant('dispatch-missing-triton-said-as-device', 'tests/test_kernels_dispatch.py -k names_the_missing', [
        ('kernels/_dispatch.py',
         '    if triton is None:\n        raise RuntimeError(\n            "fastjem.kernels: backend \'triton\' was requested but triton is not installed; "',
         '    if triton is None and runnable:\n        raise RuntimeError(\n            "fastjem.kernels: backend \'triton\' was requested but triton is not installed; "'),
    ]),
    Mutant('direct-call-while-compiling', 'tests/test_kernels_dispatch.py -k inductor_smoke', [
        ('kernels/_dispatch.py',
         '    if torch.compiler.is_compiling() or _dispatch_modes_active():',
         '    if _dispatch_modes_active():'),
    ]),
    Mutant('direct-call-tensor-subclasses', 'tests/test_kernels_dispatch.py -k subclasses_see', [
        ('kernels/_dispatch.py',
         '(type(t) is torch.Tensor and',
         '(isinstance(t, torch.Tensor) and'),
    ]),
    Mutant('direct-call-wrapped-tensors', 'tests/test_kernels_energy.py -k torch_func_transforms', [
        ('kernels/_dispatch.py',
         ' and not is_wrapped(t)\n',
         '\n'),
    ]),
    Mutant('dispatch-modes-one-ignored', 'tests/test_kernels_dispatch.py -k plain_eager_lse_energy', [
        ('kernels/_dispatch.py',
         'stack_len() > 0',
         'stack_len() > 1'),
    ]),
    Mutant('as-number-tensor-error-raw', 'tests/test_kernels_dispatch.py -k cannot_make_a_float', [
        ('kernels/_dispatch.py',
         '    except (TypeError, ValueError, RuntimeError):\n        got = f"a tensor',
         '    except (TypeError, ValueError):\n        got = f"a tensor'),
    ]),
    Mutant('check-tensors-idx-advice-lost', 'tests/test_kernels_buffer.py -k indices_that_are_no_tensor', [
        ('kernels/_dispatch.py',
         '", dtype=torch.int64" if name == "idx"',
         '", dtype=torch.int64" if name == "x"'),
    ]),
    Mutant('rng-state-device-ignored', 'tests/test_kernels_dispatch.py -k meta_tensors', [
        ('kernels/rng.py',
         '0], dtype=torch.int64, device=device)',
         '0], dtype=torch.int64)'),
    ]),
    Mutant('rng-kernel-uniform-can-be-zero', 'tests/test_kernels_sgld.py -k kernel_matches_reference', [
        ('kernels/rng.py',
         'return ((b_bits >> 9) * 2 + 1).to(tl.float32)',
         'return ((b_bits >> 9) * 2).to(tl.float32)'),
    ]),
    Mutant('rng-interleave4-order', 'tests/test_kernels_sgld.py -k kernel_matches_reference', [
        ('kernels/rng.py',
         'tl.join(tl.join(b_0, b_2), tl.join(b_1, b_3))',
         'tl.join(tl.join(b_0, b_1), tl.join(b_2, b_3))'),
    ]),
    Mutant('rng-uniform-rows-order', 'tests/test_kernels_buffer.py -k sample_kernel_matches_reference_bit_exactly', [
        ('kernels/rng.py',
         'tl.join(tl.join(_uniform(b_r0), _uniform(b_r2)), tl.join(_uniform(b_r1), _uniform(b_r3)))',
         'tl.join(tl.join(_uniform(b_r0), _uniform(b_r1)), tl.join(_uniform(b_r2), _uniform(b_r3)))'),
    ]),
    Mutant('rng-uniform-scalar-word-1', 'tests/test_kernels_buffer.py -k sample_kernel_matches_reference_bit_exactly', [
        ('kernels/rng.py',
         '    b_r0, _, _, _ = tl.randint4x(b_seed, b_ctr)\n        return _uniform(b_r0)',
         '    _, b_r0, _, _ = tl.randint4x(b_seed, b_ctr)\n        return _uniform(b_r0)'),
    ]),
    Mutant('rng-normal-block-pair-swapped', 'tests/test_kernels_sgld.py -k kernel_matches_reference', [
        ('kernels/rng.py',
         'b_n0, b_n1 = _normal_pair(_uniform(b_r0), _uniform(b_r1))',
         'b_n0, b_n1 = _normal_pair(_uniform(b_r1), _uniform(b_r0))'),
    ]),
    Mutant('rng-stream-offset-ignored', 'tests/test_kernels_rng.py -k counter_words_in_order', [
        ('kernels/rng.py',
         '    return rng_state[1] + base + torch.arange(',
         '    return base + torch.arange('),
    ]),
    Mutant('rng-numpy-seed-high-word-lost', 'tests/test_kernels_rng.py -k split_into_32_bit', [
        ('kernels/rng.py',
         '    k0, k1 = seed & _MASK32, (seed >> 32) & _MASK32\n',
         '    k0, k1 = seed & _MASK32, 0\n'),
    ]),
    Mutant('rng-reference-theta-unshifted', 'tests/test_kernels_sgld.py -k kernel_matches_reference', [
        ('kernels/rng.py',
         '    theta = u_b * _TWO_PI - _PI\n',
         '    theta = u_b * _TWO_PI\n'),
    ]),
    Mutant('lse-fwd-row-mask-one-past', 'tests/test_kernels_energy.py -k write_nothing_past', [
        ('kernels/energy.py',
         '        m_b = o_b < B\n        if HAS_LABELS:\n            b_label = tl.load(p_labels + o_b, mask=m_b, other=0)',
         '        m_b = o_b <= B\n        if HAS_LABELS:\n            b_label = tl.load(p_labels + o_b, mask=m_b, other=0)'),
    ]),
    Mutant('lse-bwd-row-mask-one-past', 'tests/test_kernels_energy.py -k write_nothing_past', [
        ('kernels/energy.py',
         '        m_b = o_b < B\n        b_g = tl.load(',
         '        m_b = o_b <= B\n        b_g = tl.load('),
    ]),
    Mutant('lse-bwd-column-mask-lost', 'tests/test_kernels_energy.py -k write_nothing_past', [
        ('kernels/energy.py',
         '            m_bk = m_b[:, None] & (o_k < K)[None, :]\n            if HAS_LABELS:',
         '            m_bk = m_b[:, None] & (o_k >= 0)[None, :]\n            if HAS_LABELS:'),
    ]),
    Mutant('lse-bwd-writes-at-row-stride', 'tests/test_kernels_energy.py -k row_strided', [
        ('kernels/energy.py',
         'p_d = p_grad_logits + o_b[:, None] * K + o_k[None, :]',
         'p_d = p_grad_logits + o_b[:, None] * stride_b + o_k[None, :]'),
    ]),
    Mutant('lse-backend-resolved-at-backward', 'tests/test_kernels_energy.py -k backend_of_its_forward', [
        ('kernels/energy.py',
         '    ctx.backend = resolve_backend(backend)',
         '    ctx.backend = backend'),
    ]),
    Mutant('lse-fake-energy-in-logits-dtype', 'tests/test_kernels_energy.py -k fake_gives_fp32', [
        ('kernels/energy.py',
         '    return logits.new_empty(B, dtype=f32), ',
         '    return logits.new_empty(B), '),
    ]),
    Mutant('lse-fake-joint-aux-of-batch', 'tests/test_kernels_energy.py -k opcheck', [
        ('kernels/energy.py',
         '    n_aux = B if labels is None else 0\n    f32 = torch.float32',
         '    n_aux = B\n    f32 = torch.float32'),
    ]),
    Mutant('lse-launcher-joint-aux-of-batch', 'tests/test_kernels_energy.py -k opcheck', [
        ('kernels/energy.py',
         '    n_aux = B if labels is None else 0\n    energy = torch.empty',
         '    n_aux = B\n    energy = torch.empty'),
    ]),
    Mutant('lse-bwd-fake-keeps-strides', 'tests/test_kernels_energy.py -k transposed_logits', [
        ('kernels/energy.py',
         '    return torch.empty_like(logits, memory_format=torch.contiguous_format)',
         '    return torch.empty_like(logits)'),
    ]),
    Mutant('lse-differentiable-joint-sign', 'tests/test_kernels_energy.py -k second_derivatives', [
        ('kernels/energy.py',
         '        return (-g * onehot.scatter_(1, labels[:, None], 1.0)).to(logits.dtype)',
         '        return (g * onehot.scatter_(1, labels[:, None], 1.0)).to(logits.dtype)'),
    ]),
    Mutant('lse-differentiable-softmax-dim', 'tests/test_kernels_energy.py -k second_derivatives', [
        ('kernels/energy.py',
         '    return (-g * torch.softmax(logits.float(), dim=1)).to(logits.dtype)',
         '    return (-g * torch.softmax(logits.float(), dim=0)).to(logits.dtype)'),
    ]),
    Mutant('lse-double-backward-joint-sign', 'tests/test_kernels_energy.py -k second_derivatives', [
        ('kernels/energy.py',
         '        d_energy = -v.gather(1, labels[:, None]).squeeze(1)',
         '        d_energy = v.gather(1, labels[:, None]).squeeze(1)'),
    ]),
    Mutant('lse-labels-only-transformed', 'tests/test_kernels_energy.py -k labels_alone', [
        ('kernels/energy.py',
         'if not torch.compiler.is_compiling() and _transformed(logits, labels):',
         'if not torch.compiler.is_compiling() and _transformed(logits):'),
    ]),
    Mutant('lse-bwd-upstream-strided', 'tests/test_kernels_energy.py -k noncontiguous_and_expanded', [
        ('kernels/energy.py',
         '    grad_energy = grad_energy.to(torch.float32).contiguous()',
         '    grad_energy = grad_energy.to(torch.float32)'),
    ]),
    Mutant('lse-bwd-launcher-column-strided', 'tests/test_kernels_energy.py -k noncontiguous_and_expanded', [
        ('kernels/energy.py',
         '    if logits.stride(1) != 1:\n        logits = logits.contiguous()\n    labels = labels.contiguous()',
         '    labels = labels.contiguous()'),
    ]),
    Mutant('lse-fwd-impl-unchecked', 'tests/test_kernels_energy.py -k integer_dtype', [
        ('kernels/energy.py',
         '    _check_inputs(logits, labels)\n    _check_label_range(',
         '    _check_label_range('),
    ]),
    Mutant('eval-arrays-reloaded', 'tests/test_eval.py -k loaded_once_per_folder', [
        ('fastjem/eval/core.py',
         '        if key not in self._arrays:',
         '        if True:'),
    ]),
    Mutant('eval-load-model-of-evalmodel', 'tests/test_eval.py -k cli_all_prints_a_summary_table', [
        ('fastjem/eval/core.py',
         '    if isinstance(checkpoint, EvalModel):\n        return checkpoint',
         '    if False:\n        return checkpoint'),
    ]),
    Mutant('eval-classifier-gets-buffer', 'tests/test_eval.py -k bad_input_gets_one_clear_error', [
        ('fastjem/eval/core.py',
         'if ckpt.get("buffer") is not None and cfg.generative:',
         'if ckpt.get("buffer") is not None:'),
    ]),
    Mutant('eval-predict-logits-low-precision', 'tests/test_eval.py -k low_precision_network', [
        ('fastjem/eval/core.py',
         'torch.cat([model(x[s]).float() for s in',
         'torch.cat([model(x[s]) for s in'),
    ]),
    Mutant('eval-fp64-logits-downcast', 'tests/test_eval.py -k refinement_is_differentiable', [
        ('fastjem/eval/core.py',
         '    return logits if logits.dtype == torch.float64 else logits.float()',
         '    return logits.float()'),
    ]),
    Mutant('eval-refine-marks-callers-tensor', 'tests/test_eval.py -k leaves_the_callers_tensor', [
        ('fastjem/eval/core.py',
         '            x = x.detach().requires_grad_(True)',
         '            x = x.requires_grad_(True)'),
    ]),
    Mutant('eval-refine-graph-dropped', 'tests/test_eval.py -k refinement_is_differentiable', [
        ('fastjem/eval/core.py',
         '    return x if create_graph else x.detach()',
         '    return x.detach()'),
    ]),
    Mutant('eval-run-chains-empty-fails', 'tests/test_eval.py -k low_precision_network', [
        ('fastjem/eval/core.py',
         '    return torch.cat(out) if out else x0[:0].detach()',
         '    return torch.cat(out)'),
    ]),
    Mutant('eval-refined-logits-low-precision', 'tests/test_eval.py -k low_precision_network', [
        ('fastjem/eval/core.py',
         '            out.append(model(xr).float())',
         '            out.append(model(xr))'),
    ]),
    Mutant('eval-energy-params-swapped', 'tests/test_eval.py -k robustness_options_reach', [
        ('fastjem/eval/core.py',
         '        return self.config.sgld_step_size, self.config.sgld_noise',
         '        return self.config.sgld_noise, self.config.sgld_step_size'),
    ]),
    Mutant('eval-loaded-arrays-forget-data', 'tests/test_eval.py -k loaded_once_per_folder', [
        ('fastjem/eval/core.py',
         '        return [self.data] if self.data is not None else list(self._arrays.values())',
         '        return list(self._arrays.values())'),
    ]),
    Mutant('eval-refine-without-noise', 'tests/test_eval.py -k cautions_when_the_refinement_leaves', [
        ('fastjem/eval/core.py',
         '        x = x - step_size * grad + noise * torch.randn_like(x)',
         '        x = x - step_size * grad'),
    ]),
    # gaps2 audit (kernels/buffer.py, kernels/sgld.py, board, guard, memory, models)
    Mutant('gaps2-buffer-sample-stores-past-its-rows', 'tests/test_kernels_buffer.py -k write_nothing_past', [
        ('kernels/buffer.py', '        tl.store(p_out + o_b[:, None] * D + o_d[None, :], b_x, mask=m_bd)',
         '        tl.store(p_out + o_b[:, None] * D + o_d[None, :], b_x, mask=m_b[:, None])'),
    ]),
    Mutant('gaps2-buffer-sample-one-row-past-b', 'tests/test_kernels_buffer.py -k write_nothing_past', [
        ('kernels/buffer.py', '        m_b = o_b < B\n        b_seed', '        m_b = o_b <= B\n        b_seed'),
    ]),
    # (the write kernel's own row mask one past B is harmless since each row's last position is looked up: a position
    # B is nobody's; its table is built one past B here)
    Mutant('gaps2-buffer-last-position-one-row-past-b', 'tests/test_kernels_buffer.py', [
        ('kernels/buffer.py', 'mask=o_b < B, other=-1)\n        tl.atomic_max(p_last + b_row, o_b, mask=(o_b < B)',
         'mask=o_b <= B, other=-1)\n        tl.atomic_max(p_last + b_row, o_b, mask=(o_b <= B)'),
    ]),
    Mutant('gaps2-buffer-kernel-resets-at-equal-prob', 'tests/test_kernels_buffer.py -k equals_the_reset', [
        ('kernels/buffer.py', 'b_reset = (uniform_scalar(b_seed, b_offset + o_b) < reset_prob) & m_b  # [BLOCK_B]',
         'b_reset = (uniform_scalar(b_seed, b_offset + o_b) <= reset_prob) & m_b  # [BLOCK_B]'),
    ]),
    Mutant('gaps2-buffer-both-reset-at-equal-prob', 'tests/test_kernels_buffer.py -k equals_the_reset', [
        ('kernels/buffer.py', 'b_reset = (uniform_scalar(b_seed, b_offset + o_b) < reset_prob) & m_b  # [BLOCK_B]',
         'b_reset = (uniform_scalar(b_seed, b_offset + o_b) <= reset_prob) & m_b  # [BLOCK_B]'),
        ('kernels/buffer.py', 'b_reset = (uniform_scalar(b_seed, b_offset + o_b) < reset_prob) & m_b\n        else:',
         'b_reset = (uniform_scalar(b_seed, b_offset + o_b) <= reset_prob) & m_b\n        else:'),
        ('kernels/buffer.py', 'out = torch.where((u_row < reset_prob)[:, None], fresh, kept)',
         'out = torch.where((u_row <= reset_prob)[:, None], fresh, kept)'),
    ]),
    Mutant('gaps2-buffer-rows-first-resets-at-equal-prob', 'tests/test_kernels_buffer.py -k equals_the_reset', [
        ('kernels/buffer.py', 'b_reset = (uniform_scalar(b_seed, b_offset + o_b) < reset_prob) & m_b\n        else:',
         'b_reset = (uniform_scalar(b_seed, b_offset + o_b) <= reset_prob) & m_b\n        else:'),
    ]),
    Mutant('gaps2-buffer-ref-resets-at-equal-prob', 'tests/test_kernels_buffer.py -k equals_the_reset', [
        ('kernels/buffer.py', 'out = torch.where((u_row < reset_prob)[:, None], fresh, kept)',
         'out = torch.where((u_row <= reset_prob)[:, None], fresh, kept)'),
    ]),
    Mutant('gaps2-buffer-reset-prob-0-refused', 'tests/test_kernels_buffer.py', [
        ('kernels/buffer.py', 'not 0.0 <= reset_prob <= 1.0', 'not 0.0 < reset_prob <= 1.0'),
    ]),
    Mutant('gaps2-buffer-reset-prob-1-refused', 'tests/test_kernels_buffer.py', [
        ('kernels/buffer.py', 'not 0.0 <= reset_prob <= 1.0', 'not 0.0 <= reset_prob < 1.0'),
    ]),
    Mutant('gaps2-buffer-restart-counters-floor', 'tests/test_kernels_buffer.py', [
        ('kernels/buffer.py', 'o_b[:, None] * ((D + 3) // 4)', 'o_b[:, None] * (D // 4)'),
    ]),
    Mutant('gaps2-buffer-restarts-on-decision-counters', 'tests/test_kernels_buffer.py', [
        ('kernels/buffer.py', 'o_ctr = b_offset + B + o_b[:, None]', 'o_ctr = b_offset + o_b[:, None]'),
    ]),
    Mutant('gaps2-buffer-advance-skips-decisions', 'tests/test_kernels_buffer.py', [
        ('kernels/buffer.py', '        rng_state[1:].add_(B + B * counters_for(D))', '        rng_state[1:].add_(B * counters_for(D))'),
        ('kernels/buffer.py', '    rng_state[1:].add_(B + B * d4)', '    rng_state[1:].add_(B * d4)'),
    ]),
    Mutant('gaps2-buffer-tiles-block-d-2-ok', 'tests/test_kernels_buffer.py -k tiles_below', [
        ('kernels/buffer.py', 'block_d < 4 or block_d', 'block_d < 2 or block_d'),
    ]),
    Mutant('gaps2-buffer-overlap-adjacent-refused', 'tests/test_kernels_buffer.py', [
        ('kernels/buffer.py', '    return a0 < b1 and b0 < a1', '    return a0 <= b1 and b0 <= a1'),
    ]),
    Mutant('gaps2-buffer-row-n-accepted', 'tests/test_kernels_buffer.py', [
        ('kernels/buffer.py', '    if low < 0 or high >= buffer.shape[0]:', '    if low < 0 or high > buffer.shape[0]:'),
    ]),
    Mutant('gaps2-buffer-row-minus-1-accepted', 'tests/test_kernels_buffer.py', [
        ('kernels/buffer.py', '    if low < 0 or high >= buffer.shape[0]:', '    if low < -1 or high >= buffer.shape[0]:'),
    ]),
    Mutant('gaps2-buffer-write-refused-under-no-grad', 'tests/test_kernels_buffer.py', [
        ('kernels/buffer.py', '    if buffer.requires_grad and torch.is_grad_enabled():', '    if buffer.requires_grad:'),
    ]),
    Mutant('gaps2-buffer-sample-refused-under-no-grad', 'tests/test_kernels_buffer.py', [
        ('kernels/buffer.py', '    if torch.is_grad_enabled() and (buffer.requires_grad or', '    if (buffer.requires_grad or'),
    ]),
    Mutant('gaps2-buffer-sample-fresh-requiring-grad-ok', 'tests/test_kernels_buffer.py', [
        ('kernels/buffer.py', '(fresh is not None and fresh.requires_grad)', 'False'),
    ]),
    Mutant('gaps2-buffer-write-integer-rows-ok', 'tests/test_kernels_buffer.py', [
        ('kernels/buffer.py', '(rows.device != buffer.device or not rows.is_floating_point())', '(rows.device != buffer.device)'),
    ]),
    Mutant('gaps2-sgld-negative-base-ok', 'tests/test_kernels_sgld.py -k negative_base', [
        ('kernels/sgld.py', '    if base < 0 or (', '    if base < -1 or ('),
    ]),
    Mutant('gaps2-sgld-advance-one-short-ok', 'tests/test_kernels_sgld.py', [
        ('kernels/sgld.py', 'advance < base + counters_for(x.numel()))', 'advance < base + counters_for(x.numel()) - 1)'),
    ]),
    Mutant('gaps2-sgld-block-2-ok', 'tests/test_kernels_sgld.py -k launch_configuration', [
        ('kernels/sgld.py', '    if block < 4 or block & (block - 1):', '    if block < 2 or block & (block - 1):'),
    ]),
    Mutant('gaps2-sgld-block-not-power-of-2-ok', 'tests/test_kernels_sgld.py', [
        ('kernels/sgld.py', '    if block < 4 or block & (block - 1):', '    if block < 4:'),
    ]),
    Mutant('gaps2-sgld-kernel-bf16-grad-not-widened', 'tests/test_kernels_sgld.py', [
        ('kernels/sgld.py', '        b_g = tl.load(p_grad + o_x, mask=m_x, other=0.0).to(tl.float32)\n',
         '        b_g = tl.load(p_grad + o_x, mask=m_x, other=0.0)\n'),
    ]),
    Mutant('gaps2-sgld-ref-bf16-grad-not-widened', 'tests/test_kernels_sgld.py', [
        ('kernels/sgld.py', 'x.copy_(x + alpha * grad.float() + sigma * noise)', 'x.copy_(x + alpha * grad + sigma * noise)'),
    ]),
    Mutant('gaps2-sgld-refused-under-no-grad', 'tests/test_kernels_sgld.py', [
        ('kernels/sgld.py', '    if x.requires_grad and torch.is_grad_enabled():\n        refuse(', '    if x.requires_grad:\n        refuse('),
    ]),
    Mutant('gaps2-sgld-advance-ignored', 'tests/test_kernels_sgld.py', [
        ('kernels/sgld.py', 'rng_state[1:].add_(counters_for(n) if advance is None else advance)', 'rng_state[1:].add_(counters_for(n))'),
    ]),
    Mutant('gaps2-sgld-ref-backend-unchecked', 'tests/test_kernels_sgld.py', [
        ('kernels/sgld.py', '        _check_inputs(x, grad, rng_state, base, advance)\n        sgld_step_ref(', '        sgld_step_ref('),
    ]),
    Mutant('gaps2-guard-energy-bound-inclusive', 'tests/test_guard.py -k "flags_each_bound or stays_flagged or flag_clear or non_finite_parameter or papers_diagnosis or outlives or noise_energy_alone"', [
        ('fastjem/guard.py', '(e_d.abs() > self.energy_bound) | (e_s.abs() > self.energy_bound)',
         '(e_d.abs() >= self.energy_bound) | (e_s.abs() >= self.energy_bound)'),
    ]),
    Mutant('gaps2-guard-data-energy-unbounded', 'tests/test_guard.py -k "flags_each_bound or stays_flagged or flag_clear or non_finite_parameter or papers_diagnosis or outlives or noise_energy_alone"', [
        ('fastjem/guard.py', 'bad = bad | (e_d.abs() > self.energy_bound) | (e_s.abs()', 'bad = bad | (e_s.abs()'),
    ]),
    Mutant('gaps2-guard-data-energy-nan-ok', 'tests/test_guard.py -k "flags_each_bound or stays_flagged or flag_clear or non_finite_parameter or papers_diagnosis or outlives or noise_energy_alone"', [
        ('fastjem/guard.py', 'bad = bad | ~torch.isfinite(e_d) | ~torch.isfinite(e_s)', 'bad = bad | ~torch.isfinite(e_s)'),
    ]),
    Mutant('gaps2-guard-sample-energy-nan-ok', 'tests/test_guard.py -k "flags_each_bound or stays_flagged or flag_clear or non_finite_parameter or papers_diagnosis or outlives or noise_energy_alone"', [
        ('fastjem/guard.py', 'bad = bad | ~torch.isfinite(e_d) | ~torch.isfinite(e_s)', 'bad = bad | ~torch.isfinite(e_d)'),
    ]),
    Mutant('gaps2-guard-flag-forgets', 'tests/test_guard.py -k "flags_each_bound or stays_flagged or flag_clear or non_finite_parameter or papers_diagnosis or outlives or noise_energy_alone"', [
        ('fastjem/guard.py', '        self.flag |= bad', '        self.flag.copy_(bad)'),
    ]),
    Mutant('gaps2-guard-nan-parameters-unreported', 'tests/test_guard.py -k "flags_each_bound or stays_flagged or flag_clear or non_finite_parameter or papers_diagnosis or outlives or noise_energy_alone"', [
        ('fastjem/guard.py', '        if not params_finite:\n            self.reasons', '        if False:\n            self.reasons'),
    ]),
    Mutant('gaps2-guard-snapshot-aliases-the-state', 'tests/test_guard.py -k "flags_each_bound or stays_flagged or flag_clear or non_finite_parameter or papers_diagnosis or outlives or noise_energy_alone"', [
        ('fastjem/guard.py', '        self.snapshot = _clone(self.trainer.state_dict())', '        self.snapshot = self.trainer.state_dict()'),
    ]),
    Mutant('gaps2-guard-rollback-hands-out-the-snapshot', 'tests/test_guard.py -k "flags_each_bound or stays_flagged or flag_clear or non_finite_parameter or papers_diagnosis or outlives or noise_energy_alone"', [
        ('fastjem/guard.py', '        self.trainer.load_state(_clone(self.snapshot))', '        self.trainer.load_state(self.snapshot)'),
    ]),
    Mutant('gaps2-guard-clone-shares-tensors', 'tests/test_guard.py -k "flags_each_bound or stays_flagged or flag_clear or non_finite_parameter or papers_diagnosis or outlives or noise_energy_alone"', [
        ('fastjem/guard.py', '        return obj.detach().clone()', '        return obj.detach()'),
    ]),
    Mutant('gaps2-guard-margin-inclusive', 'tests/test_guard.py -k "flags_each_bound or stays_flagged or flag_clear or non_finite_parameter or papers_diagnosis or outlives or noise_energy_alone"', [
        ('fastjem/guard.py', 'elif e_buf - e_uni > self.buffer_margin:', 'elif e_buf - e_uni >= self.buffer_margin:'),
    ]),
    Mutant('gaps2-guard-current-noise-energy-unbounded', 'tests/test_guard.py -k "flags_each_bound or stays_flagged or flag_clear or non_finite_parameter or papers_diagnosis or outlives or noise_energy_alone"', [
        ('fastjem/guard.py', 'or max(abs(e_buf), abs(e_uni)) > self.energy_bound:', 'or abs(e_buf) > self.energy_bound:'),
    ]),
    Mutant('gaps2-board-scalar-step-off', 'tests/test_board.py', [
        ('fastjem/board.py', 'self.writer.add_scalar(tag, value, iteration)', 'self.writer.add_scalar(tag, value, iteration + 1)'),
    ]),
    Mutant('gaps2-board-image-step-off', 'tests/test_board.py', [
        ('fastjem/board.py', 'self.writer.add_image(tag, grid, iteration)', 'self.writer.add_image(tag, grid, iteration + 1)'),
    ]),
    Mutant('gaps2-board-image-twice-a-step', 'tests/test_board.py', [
        ('fastjem/board.py', 'if self.writer is None or self._images.get(tag) == iteration:', 'if self.writer is None:'),
    ]),
    Mutant('gaps2-board-rewind-event-at-0', 'tests/test_board.py', [
        ('fastjem/board.py', 'self.writer.add_text("events", why, iteration)', 'self.writer.add_text("events", why, 0)'),
    ]),
    Mutant('gaps2-board-newest-second-misread', 'tests/test_board.py', [
        ('fastjem/board.py', 'int(path.name.split(".")[3])', 'int(path.name.split(".")[4])'),
    ]),
    Mutant('gaps2-check-fits-refuses-exact-fit', 'tests/test_data.py tests/test_buffer.py tests/test_cli.py -k "memory or free or fit or cgroup or meminfo"', [
        ('fastjem/memory.py', '    if free is not None and nbytes > free:', '    if free is not None and nbytes >= free:'),
    ]),
    Mutant('gaps2-size-text-1-gib-in-mib', 'tests/test_buffer.py -k read_from_the_device', [
        ('fastjem/memory.py', '        if nbytes >= scale:', '        if nbytes > scale:'),
    ]),
    Mutant('gaps2-cgroup-first-level-negative', 'tests/test_buffer.py -k cgroup', [
        ('fastjem/memory.py', 'best = max(0, free) if best is None', 'best = free if best is None'),
    ]),
    Mutant('gaps2-cgroup-v1-memsw-without-cache', 'tests/test_buffer.py -k cgroup', [
        ('fastjem/memory.py', 'free = min(free, both - both_used + cache)', 'free = min(free, both - both_used)'),
    ]),
    Mutant('gaps2-free-memory-cgroup-lost-without-meminfo', 'tests/test_buffer.py -k "cgroup or free_memory or meminfo"', [
        ('fastjem/memory.py', 'else cgroup if host is None else', 'else host if host is None else'),
    ]),
    Mutant('gaps2-build-wrn-depth-ignored', 'tests/test_models.py -k build_model', [
        ('fastjem/models/__init__.py', 'return WideResNet(depth, width,', 'return WideResNet(28, width,'),
    ]),
    Mutant('gaps2-build-wrn-dropout-ignored', 'tests/test_models.py -k build_model', [
        ('fastjem/models/__init__.py', 'return WideResNet(depth, width, num_classes, in_channels, norm, dropout)',
         'return WideResNet(depth, width, num_classes, in_channels, norm, 0.0)'),
    ]),
    Mutant('gaps2-build-convnet-dropout-ignored', 'tests/test_models.py -k build_model', [
        ('fastjem/models/__init__.py', 'return ConvNet(num_classes, in_channels, width, norm, dropout)\n    raise',
         'return ConvNet(num_classes, in_channels, width, norm, 0.0)\n    raise'),
    ]),
    Mutant('gaps2-build-wrn-norm-ignored', 'tests/test_models.py', [
        ('fastjem/models/__init__.py', 'return WideResNet(depth, width, num_classes, in_channels, norm, dropout)',
         'return WideResNet(depth, width, num_classes, in_channels, "none", dropout)'),
    ]),
    Mutant('gaps2-plain-state-dict-versions-dropped', 'tests/test_models.py -k modules_versions', [
        ('fastjem/models/__init__.py', '        plain._metadata = OrderedDict(state._metadata)', '        pass'),
    ]),
    Mutant('gaps2-layer-norm-least-size-refused', 'tests/test_models.py', [
        ('fastjem/models/__init__.py', 'if norm == "layer" and image_size < least:', 'if norm == "layer" and image_size <= least:'),
    ]),
    Mutant('gaps2-batch-norm-two-images-refused', 'tests/test_models.py', [
        ('fastjem/models/__init__.py', 'or batch > 1 or smallest_norm_size', 'or batch > 2 or smallest_norm_size'),
    ]),
    Mutant('eval-n-test-past-the-set-says-subset', 'tests/test_eval.py -k n_test_past', [
        ('fastjem/eval/tasks.py',
         '        subset = 0 < self.n_test < (self.test_total or math.inf)',
         '        subset = 0 < self.n_test'),
    ]),
    Mutant('checkpoint-folder-without-hint', 'tests/test_cli.py -k folder_of_checkpoints_or_of_runs', [
        ('fastjem/checkpoint.py',
         '            hint = _folder_hint(path)\n',
         '            hint = ""\n'),
    ]),
    Mutant('ood-missing-folder-said-unknown', 'tests/test_eval.py -k ood_folder_that_is_not_there', [
        ('fastjem/eval/ood.py',
         '    if "/" in name or os.sep in name:',
         '    if False:'),
    ]),
    Mutant('features-model-missing-file-unsaid', 'tests/test_eval.py -k fid_features_from_a_module_class', [
        ('fastjem/eval/tasks.py',
         '    if ":" not in spec:  # meant as a file',
         '    if False:  # meant as a file'),
    ]),
    Mutant('robustness-error-without-values', 'tests/test_eval.py -k before_loading', [
        ('fastjem/eval/tasks.py',
         '                          + ", ".join(bad))',
         '                          + "")'),
    ]),
    Mutant('samples-error-without-values', 'tests/test_eval.py -k before_loading', [
        ('fastjem/eval/tasks.py',
         '                          f"--n-steps {n_steps}, --n-samples {n_samples}, --per-class {per_class}")',
         '                          "")'),
    ]),
    Mutant('output-folder-said-wrong-suffix', 'tests/test_export.py -k refuses_a_wrong_suffix', [
        ('fastjem/checkpoint.py',
         '    path = Path(path)\n    if path.is_dir():  # a folder',
         '    path = Path(path)\n    if path.suffix.lower() not in suffixes:\n        raise ConfigError(f"{what}\'s name must end in {\' or \'.join(suffixes)}, got {path.name!r}")\n    if path.is_dir():  # a folder'),
    ]),
    Mutant('eval-compare-path-unchecked', 'tests/test_eval.py -k before_loading_anything', [
        ('fastjem/eval/tasks.py',
         '    if compare is not None and not isinstance(compare, EvalModel) and not Path(compare).exists():',
         '    if False:'),
    ]),
    Mutant('eval-digits-data-dir-unsaid', 'tests/test_eval.py -k data_dir_given_for_a_digits_run', [
        ('fastjem/eval/tasks.py',
         '        if data_dir and task != "ood" and self.em.config.dataset == "digits":',
         '        if False:'),
    ]),
    Mutant('eval-digits-data-dir-said-for-ood', 'tests/test_eval.py -k data_dir_given_for_a_digits_run', [
        ('fastjem/eval/tasks.py',
         '        if data_dir and task != "ood" and self.em.config.dataset == "digits":',
         '        if data_dir and self.em.config.dataset == "digits":'),
    ]),
    Mutant('eval-runs-stop-at-a-bad-run', 'tests/test_eval.py -k cannot_be_evaluated_does_not_stop', [
        ('fastjem/eval/cli.py', '            if len(paths) == 1:\n                raise\n', '            raise\n'),
    ]),
    Mutant('sample-start-said-by-its-option-value', 'tests/test_eval.py -k test_cli_sample_unconditional_writes', [
        ('fastjem/eval/cli.py', "SGLD steps from {start.get(s['init'], s['init'])}, ", "SGLD steps from the {s['init']}, "),
    ]),
    Mutant('eval-all-earlier-skipped-report-unsaid', 'tests/test_eval.py -k test_cli_all_prints_a_summary_table', [
        ('fastjem/eval/cli.py', 'earlier = [t for t, r in reports.items() if "skipped" in r and (out / f"{t}.json").exists()]',
         'earlier = []'),
    ]),
    Mutant('missing-data-offline-step-ambiguous', 'tests/test_data.py -k missing_dataset_says_what_to_do', [
        ('fastjem/data.py', 'f"put {layouts[name]} in {root}, or in a folder of yours and pass {flag} FOLDER"',
         'f"put {layouts[name]} in that folder and pass {flag} FOLDER"'),
    ]),
    Mutant('buffer-write-first-of-repeats-wins', 'tests/test_kernels_buffer.py -k last_of_their_rows', [
        ('kernels/buffer.py', 'tl.atomic_max(p_last + b_row, o_b,', 'tl.atomic_min(p_last + b_row, o_b,'),
    ]),
    Mutant('buffer-write-ref-first-of-repeats-wins', 'tests/test_kernels_buffer.py -k last_of_their_rows', [
        ('kernels/buffer.py', 'torch.arange(idx.shape[0], device=idx.device), "amax")',
         'torch.arange(idx.shape[0], device=idx.device), "amin", include_self=False)'),
    ]),
    Mutant('history-stops-at-an-unreadable-checkpoint', 'tests/test_history.py -k unreadable', [
        ('fastjem/eval/cli.py', '        except FastJEMError as err:\n            # one that cannot be evaluated',
         '        except ZeroDivisionError as err:\n            # one that cannot be evaluated'),
    ]),
    Mutant('history-unevaluated-checkpoints-exit-0', 'tests/test_history.py -k unreadable', [
        ('fastjem/eval/cli.py', 'f"are above; the {holder} holds the others", file=sys.stderr)\n        return 1',
         'f"are above; the {holder} holds the others", file=sys.stderr)\n        return 0'),
    ]),
    Mutant('fid-summary-without-sample-counts', 'tests/test_eval.py -k summary_table', [
        ('fastjem/eval/tasks.py', """            counts = f" ({r['n_fake']} samples {drawn} against {r['n_real']} test images)" if "n_fake" in r else \"\"\n""",
         '            counts = ""\n'),
    ]),
    Mutant('bench-ctrl-c-while-importing-torch-traceback', 'tests/test_bench.py -k imports_torch', [
        ('bench/interrupted.py', '        signal.signal(signal.SIGINT, _end_while_importing)', '        pass'),
    ]),
    Mutant('bench-ctrl-c-while-importing-set-by-an-import', 'tests/test_bench.py -k imports_torch', [
        ('bench/interrupted.py', 'if module_name == "__main__" and signal', 'if signal'),
    ]),
    Mutant('bench-ctrl-c-in-main-ends-as-while-importing', 'tests/test_bench.py -k run_script_ends', [
        ('bench/env_info.py', '        python_handler_back()\n        return main()', '        return main()'),
    ]),
    Mutant('bench-profile-printed-before-written', 'tests/test_bench.py -k figure_is_printed', [
        ('bench/profile_step.py', '        path = write_result(report, "profile", device, started, args.out, path)\n        shares',
         '        shares'),
        ('bench/profile_step.py', "{shares}\", flush=True)\n",
         "{shares}\", flush=True)\n        path = write_result(report, \"profile\", device, started, args.out, path)\n"),
    ]),
    Mutant('bench-sgld-study-printed-before-written', 'tests/test_bench.py -k figure_is_printed', [
        ('bench/sgld_study.py', '        save()\n        mfu = ', '        mfu = '),
        ('bench/sgld_study.py', ":.2e}\", flush=True)\n", ":.2e}\", flush=True)\n        save()\n"),
    ]),
    Mutant('bench-sgld-study-failure-printed-before-written', 'tests/test_bench.py -k figure_is_printed', [
        ('bench/sgld_study.py', '            save()\n            print(f"{name}: failed ({type(err).__name__}: {err})")\n',
         '            print(f"{name}: failed ({type(err).__name__}: {err})")\n            save()\n'),
    ]),
    Mutant('bench-steps-config-printed-before-written', 'tests/test_bench.py -k figure_is_printed', [
        ('bench/steps_per_sec.py', "            save()\n            print(f\"{name}: {result['status']} ({result['seconds']:.0f} s)\", flush=True)\n",
         "            print(f\"{name}: {result['status']} ({result['seconds']:.0f} s)\", flush=True)\n            save()\n"),
    ]),
    Mutant('bench-steps-gate-printed-before-written', 'tests/test_bench.py -k figure_is_printed', [
        ('bench/steps_per_sec.py', '        save()\n        print(f"equivalence check: ', '        print(f"equivalence check: '),
        ('bench/steps_per_sec.py', "({report['gate']['detail']})\",\n              flush=True)\n",
         "({report['gate']['detail']})\",\n              flush=True)\n        save()\n"),
    ]),
    Mutant('bench-cifar-ctrl-c-file-says-started', 'tests/test_bench.py -k stopped_by_ctrl_c', [
        ('bench/cifar_run.py', '            write_result(rep, "cifar", device, started, out, path)\n            raise\n',
         '            raise\n'),
    ]),
    Mutant('bench-cifar-ctrl-c-file-says-not-when', 'tests/test_bench.py -k stopped_by_ctrl_c', [
        ('bench/cifar_run.py', '            rep["interrupted_at"] = now_utc().isoformat(timespec="seconds")\n', ''),
    ]),
    Mutant('bench-cifar-not-found-after-the-claim', 'tests/test_bench.py -k holds_no_cifar', [
        ('bench/cifar_run.py', '    data_dir = find_cifar(args.cifar_dir)  # fastjem reads the tarballs in place\n    started = now_utc()',
         '    started = now_utc()'),
        ('bench/cifar_run.py', '            t0 = time.perf_counter()\n            cfg = get_preset',
         '            t0 = time.perf_counter()\n            data_dir = find_cifar(args.cifar_dir)\n            cfg = get_preset'),
    ]),
    Mutant('bench-claim-without-links-leaves-an-empty-file', 'tests/test_bench.py -k claim_cut_short', [
        ('bench/env_info.py', '                path.unlink(missing_ok=True)\n                raise', '                raise'),
    ]),
    Mutant('bench-quick-stop-names-its-removed-checkpoint', 'tests/test_bench.py -k names_no_checkpoint', [
        ('bench/quick_run.py', '        trainer.checkpoint_kept = False\n', ''),
    ]),
    Mutant('train-stop-names-a-checkpoint-not-kept', 'tests/test_bench.py -k names_no_checkpoint', [
        ('fastjem/train.py', 'if self.checkpoint_kept else ""', 'if True else ""'),
    ]),
    Mutant('train-end-stop-names-a-checkpoint-not-kept', 'tests/test_bench.py -k names_no_checkpoint', [
        ('fastjem/train.py', 'saved" if self.checkpoint_kept else', 'saved" if True else'),
    ]),
    Mutant('sample-digits-data-dir-unsaid', 'tests/test_eval.py -k digits_run_is_not_read', [
        ('fastjem/eval/cli.py', '    if unread and em.config.dataset == "digits":', '    if False:'),
    ]),
    Mutant('export-suffix-format-unsaid', 'tests/test_export.py -k refuses_a_wrong_suffix', [
        ('fastjem/export.py', ', overwrite, form=" (torch.export\'s format)")', ', overwrite)'),
    ]),
    Mutant('output-suffix-example-unsaid', 'tests/test_export.py -k refuses_a_wrong_suffix', [
        ('fastjem/checkpoint.py', '{form}; give e.g. {flag} {example}")', '{form}")'),
    ]),
    Mutant('output-suffix-example-appended', 'tests/test_export.py -k refuses_a_wrong_suffix', [
        ('fastjem/checkpoint.py', 'example = path.with_suffix(suffixes[0]) if path.suffix else',
         'example = path.with_name(path.name + suffixes[0]) if path.suffix else'),
    ]),
    Mutant('output-force-offered-over-a-training-checkpoint', 'tests/test_eval.py -k unconditional_writes_arrays_grid', [
        ('fastjem/checkpoint.py',
         '    if path.exists() and is_training_checkpoint(path):\n        raise ConfigError(f"{path} is a training '
         'checkpoint, which --force does not replace with {what}: give "\n                          f"{flag} another '
         'file")\n    if path.exists() and not overwrite:\n        raise ConfigError(f"{path} exists: pass --force to '
         'replace it, or give {flag} another file")\n',
         '    if path.exists() and not overwrite:\n        raise ConfigError(f"{path} exists: pass --force to replace it, '
         'or give {flag} another file")\n    if path.exists() and is_training_checkpoint(path):\n        raise '
         'ConfigError(f"{path} is a training checkpoint, which --force does not replace with {what}: give "\n'
         '                          f"{flag} another file")\n'),
    ]),
    Mutant('convert-dataset-to-give-unnamed', 'tests/test_convert.py -k errors_say_what_to_do', [
        ('fastjem/convert.py', '''        todo = (f"give the --dataset it was trained on: {' or '.join(f'--dataset {f}' for f in fits)}" if fits else''',
         '''        todo = ("give the --dataset it was trained on" if fits else'''),
    ]),
    Mutant('convert-no-dataset-fits-unsaid', 'tests/test_convert.py -k errors_say_what_to_do', [
        ('fastjem/convert.py', '" if fits else\n', '" if True else\n'),
    ]),
    Mutant('convert-norm-mismatch-without-advice', 'tests/test_convert.py -k errors_say_what_to_do', [
        ('fastjem/convert.py', 'the network{has}: drop --norm, which is needed only for "', 'the network{has}"'),
    ]),
    Mutant('sample-upper-case-pt-written-as-npz', 'tests/test_eval.py -k in_any_case', [
        ('fastjem/eval/draw.py', '    if path.suffix.lower() == ".pt":  # X.PT too', '    if path.suffix == ".pt":  # X.PT too'),
    ]),
    Mutant('checkpoint-exported-program-called-corrupted', 'tests/test_export.py -k as_checkpoint_are_named', [
        ('fastjem/checkpoint.py', '            if meta is not None:\n', '            if False:\n'),
    ]),
    Mutant('checkpoint-exported-program-source-unnamed', 'tests/test_export.py -k as_checkpoint_are_named', [
        ('fastjem/checkpoint.py', "f\"checkpoint it was exported from{f', {source}' if source else ''}\")",
         '"checkpoint it was exported from")'),
    ]),
    Mutant('checkpoint-npz-samples-called-corrupted', 'tests/test_export.py -k as_checkpoint_are_named', [
        ('fastjem/checkpoint.py', '            if names and all(n.endswith(".npy") for n in names):',
         '            if False:'),
    ]),
    Mutant('eval-data-of-another-size-taken', 'tests/test_eval.py -k another_size_than', [
        ('fastjem/eval/core.py', '            if got != want:\n', '            if False:\n'),
    ]),
    Mutant('sample-output-folder-made-after-sampling', 'tests/test_eval.py -k folder_it_cannot_make', [
        ('fastjem/eval/cli.py', '    out = draw.check_output(args.out or draw.default_output(em, classes), args.force)\n    make_folder(out.parent)\n',
         '    out = draw.check_output(args.out or draw.default_output(em, classes), args.force)\n'),
    ]),
    Mutant('sweep-run-says-train-resume', 'tests/test_sweep.py -k stopped_inside', [
        ('fastjem/sweep.py', '            trainer.resume_hint = None  # a stopped', '            pass  # a stopped'),
    ]),
    Mutant('tar-cut-short-read-short', 'tests/test_data.py -k plain_tar', [
        ('fastjem/data.py', 'if not getattr(tar, "reached_end_marker", False):', 'if False:'),
    ]),
    Mutant('archive-error-names-the-first-archive', 'tests/test_data.py -k plain_tar', [
        ('fastjem/data.py', 'reading[:] = [archive]', 'pass'),
    ]),
    Mutant('archive-path-twice-read-twice', 'tests/test_data.py -k two_archives', [
        ('fastjem/data.py', '        if first != i:\n            path = "/".join(', '        if False:\n            path = "/".join('),
    ]),
    Mutant('archives-beside-class-folders-unsaid', 'tests/test_data.py -k archives_beside', [
        ('fastjem/data.py', '    if beside:\n        # an archive per class', '    if False:\n        # an archive per class'),
    ]),
    Mutant('split-folders-spelled-otherwise-in-a-folder-said-lone', 'tests/test_data.py -k spelled_otherwise', [
        ('fastjem/data.py', '        _check_split_names(root, classes)\n', ''),
    ]),
    Mutant('split-folders-spelled-otherwise-in-an-archive-read', 'tests/test_data.py -k spelled_otherwise', [
        ('fastjem/data.py', 'if split_at is not None and parts[split_at] != _split_name(parts[split_at]):', 'if False:'),
    ]),
    Mutant('split-names-case-sensitive', 'tests/test_data.py -k spelled_otherwise', [
        ('fastjem/data.py', 'name = SPLIT_SPELLINGS.get(name.lower(), name.lower())', 'name = SPLIT_SPELLINGS.get(name, name)'),
    ]),
    Mutant('named-dataset-misses-split-folders-spelled-otherwise', 'tests/test_data.py -k spelled_otherwise', [
        ('fastjem/data.py', 'return root.is_dir() and any(_split_name(s.name) and s.is_dir()',
         'return root.is_dir() and any(s.name in ("train", *HELD_OUT) and s.is_dir()'),
    ]),
    Mutant('flat-splits-spelled-otherwise-are-classes', 'tests/test_data.py -k spelled_otherwise', [
        ('fastjem/data.py', '    splits = [_split_name(c) for c in classes]\n    if "train" in splits',
         '    splits = list(classes)\n    if "train" in splits'),
    ]),
    Mutant('failed-download-told-to-add-download', 'tests/test_data.py -k torchvision_sets_become', [
        ('fastjem/data.py', '           if download else f"  - on a machine with internet', '           if False else f"  - on a machine with internet'),
    ]),
    Mutant('named-dataset-file-dir-not-called-a-file', 'tests/test_data.py -k file_is_called_one', [
        ('fastjem/data.py', '    where = f"{root}, a file, not a folder" if root.is_file() else root', '    where = root'),
    ]),
    Mutant('hidden-archives-read', 'tests/test_data.py -k archives_beside', [
        ('fastjem/data.py', ' and p.name not in TORCHVISION_ARCHIVES.values() and not _hidden(p.name))', ' and p.name not in TORCHVISION_ARCHIVES.values())'),
    ]),
    Mutant('unread-image-formats-in-a-folder-unsaid', 'tests/test_data.py -k formats_that_are_not_read', [
        ('fastjem/data.py', '    _warn_unread_formats(folder, unread)\n', ''),
    ]),
    Mutant('unread-image-formats-in-an-archive-unsaid', 'tests/test_data.py -k formats_that_are_not_read', [
        ('fastjem/data.py', '    notes = _unread_formats(names, listing.unread)\n', '    notes = []\n'),
    ]),
    Mutant('imagefolder-pad-past-a-one-pixel-side', 'tests/test_data.py -k crop_padding', [
        ('fastjem/data.py', 'min(size - 1, max(1, size // 8)), True,', 'max(1, size // 8), True,'),
    ]),
    Mutant('named-folder-pad-past-a-one-pixel-side', 'tests/test_data.py -k crop_padding', [
        ('fastjem/data.py', '    pad = min(info.image_size - 1, max(1, round(4 * info.image_size / 32)))', '    pad = max(1, round(4 * info.image_size / 32))'),
    ]),
    Mutant('tensors-pad-unchecked', 'tests/test_data.py -k padding_given', [
        ('fastjem/data.py', '    if pad is not None and not 0 <= pad < size:', '    if False:'),
    ]),
    Mutant('one-class-folder-a-level-too-high-unsaid', 'tests/test_data.py -k one_class_is_named', [
        ('fastjem/data.py', 'f"for a classifier, give a folder with a subfolder per class{above}"', 'f"for a classifier, give a folder with a subfolder per class"'),
    ]),
    Mutant('torchvision-download-taken-for-an-image-folder', 'tests/test_data.py -k torchvisions_downloads', [
        ('fastjem/data.py', '        _check_not_torchvision_download(root, flag, choose_dataset)\n', ''),
    ]),
    Mutant('torchvision-download-folder-not-recognised', 'tests/test_data.py -k torchvisions_downloads', [
        ('fastjem/data.py', 'there, folder = (names, root) if names and all(n in own for n in names) else ([], root)', 'there, folder = [], root'),
    ]),
    Mutant('zip-member-unopenable-a-traceback', 'tests/test_data.py -k zipfile_cannot_open', [
        ('fastjem/data.py', '                except (RuntimeError, NotImplementedError) as err:\n                    # password-protected', '                except OSError as err:\n                    # password-protected'),
    ]),
    Mutant('zip-unopenable-non-image-refused', 'tests/test_data.py -k zipfile_cannot_open', [
        ('fastjem/data.py', '                    if _image_member(info.filename) is None:\n                        continue\n                    why =', '                    if False:\n                        continue\n                    why ='),
    ]),
    Mutant('pillow-pixel-limit-a-traceback', 'tests/test_data.py -k pixel_limit', [
        ('fastjem/data.py', '    except Image.DecompressionBombError as err:', '    except UnicodeError as err:'),
    ]),
    Mutant('damaged-png-to-torchvision', 'tests/test_data.py -k damaged_png', [
        ('fastjem/data.py', '    if chunks.damaged:\n        return PngFault(', '    if False:\n        return PngFault('),
    ]),
    Mutant('png-ancillary-crc-taken-for-damage', 'tests/test_data.py -k damaged_png', [
        ('fastjem/data.py', '        if kind[:1].isupper() and zlib.crc32(', '        if zlib.crc32('),
    ]),
    Mutant('png-cut-short-taken-for-whole', 'tests/test_data.py -k damaged_png', [
        ('fastjem/data.py', '        if end + 4 > len(data):\n            return PngChunks(True)', '        if end + 4 > len(data):\n            return PngChunks(False)'),
    ]),    Mutant('sgld-model-of-another-kind-a-traceback', 'tests/test_sampler.py -k wrong_place', [
        ('fastjem/sampler.py', '    check_model(model)\n    flags = [(p, p.requires_grad) for p in model.parameters()]', '    flags = [(p, p.requires_grad) for p in model.parameters()]'),
    ]),
    Mutant('sgld-energy-value-a-traceback', 'tests/test_sampler.py -k wrong_place', [
        ('fastjem/sampler.py', '        check_energy_fn(energy_fn)\n        check_start(x0)', '        check_start(x0)'),
    ]),
    Mutant('sgld-parts-energy-of-x-a-traceback', 'tests/test_sampler.py -k wrong_place', [
        ('fastjem/sampler.py', '        check_energy_for(energy_for, rows)\n', ''),
    ]),
    Mutant('sgld-float64-network-unexplained', 'tests/test_sampler.py -k float64_network', [
        ('fastjem/sampler.py', '    if "double" in str(err).lower():', '    if False:'),
    ]),
    Mutant('buffer-init-without-methods-a-traceback', 'tests/test_buffer.py -k init_without', [
        ('fastjem/buffer.py', '    missing = [name for name in ("fill", "draw") if not callable(getattr(init, name, None))]', '    missing = []'),
    ]),
    Mutant('buffer-init-of-other-classes-taken', 'tests/test_buffer.py -k init_without', [
        ('fastjem/buffer.py', '    if num_classes is not None and isinstance(classes, int) and classes != num_classes:', '    if False:'),
    ]),
    Mutant('class-gaussians-of-0-255-floats-fitted', 'tests/test_buffer.py -k outside_the_chains', [
        ('fastjem/buffer.py', '            if not (low >= -2.0 and high <= 2.0):', '            if False:'),
    ]),
    Mutant('buffer-classes-outside-told-as-indices', 'tests/test_buffer.py -k naming_y', [
        ('fastjem/buffer.py', '            if y is not None:\n                check_class_labels("ReplayBuffer.sample"', '            if False:\n                check_class_labels("ReplayBuffer.sample"'),
    ]),
    Mutant('buffer-size-named-as-an-option-only', 'tests/test_buffer.py -k settings_and', [
        ('fastjem/buffer.py', 'f"its size {size} (--buffer-size) is not divisible by {num_classes}; use e.g. "', 'f"--buffer-size {size} is not divisible by {num_classes}; use e.g. "'),
    ]),
    Mutant('buffer-write-rows-not-a-tensor-a-traceback', 'tests/test_buffer.py -k write_refuses_rows', [
        ('fastjem/buffer.py', '        check_tensors("ReplayBuffer.write_", idx=idx, x=x)\n', ''),
    ]),
    Mutant('lse-energy-of-an-energy-no-advice', 'tests/test_kernels_energy.py -k told_what_to_pass', [
        ('kernels/energy.py', '"(SGLD.sample(net, x0, model=net)), not through model_energy") if logits.dim() == 1 else ""', '"(SGLD.sample(net, x0, model=net)), not through model_energy") if False else ""'),
    ]),
    Mutant('graphed-iteration-device-string-a-traceback', 'tests/test_iteration_graph.py -k cpu_tensors_are_refused', [
        ('fastjem/graphs.py', '        device = torch.device(device)\n', ''),
    ]),
    Mutant('graphed-sgld-start-not-a-tensor-a-traceback', 'tests/test_iteration_graph.py -k cpu_tensors_are_refused', [
        ('fastjem/graphs.py', '        check_start(x0)\n        if not x0.is_cuda:', '        if not x0.is_cuda:'),
    ]),
    Mutant('cast-copy-of-a-function-a-traceback', 'tests/test_weights.py -k unsupported_models', [
        ('fastjem/weights.py', '        if not isinstance(source, nn.Module):', '        if False:'),
    ]),
    Mutant('trainer-model-not-a-module-a-traceback', 'tests/test_custom.py -k model_that_is_not', [
        ('fastjem/train.py', '        if model is not None and not isinstance(model, torch.nn.Module):', '        if False:'),
    ]),
    Mutant('tensors-channels-last-told-to-resize', 'tests/test_custom.py -k bad_tensors', [
        ('fastjem/data.py', '        if x.shape[1] == x.shape[2] and x.shape[3] in (1, 3, 4) and x.shape[1] not in (1, 3, 4):', '        if False:'),
    ]),
    Mutant('tensors-nan-pixels-taken-as-0', 'tests/test_custom.py -k bad_tensors', [
        ('fastjem/data.py', '            if math.isnan(lo) or math.isnan(hi):', '            if False:'),
    ]),
    Mutant('tensors-numpy-names-no-fix', 'tests/test_custom.py -k bad_tensors', [
        ('fastjem/data.py', '            advice = ": pass torch.from_numpy(x)" if type(x).__module__ == "numpy" else ""', '            advice = ""'),
    ]),
]


def copy_tree(dst: Path, root: Path = REPO) -> None:
    """The tree at ``root`` into ``dst``, kernels/ linked in as fastjem/kernels (a link the tree has already, as a
    checkout run with PYTHONPATH may, is made anew: copied, it would point back into the tree)."""
    common = shutil.ignore_patterns(".git", "build", "runs", "*.egg-info", "__pycache__", ".data", ".pytest_cache")

    def ignore(folder: str, names: list[str]) -> set[str]:
        link = {"kernels"} if Path(folder) == root / "fastjem" else set()
        return set(common(folder, names)) | link

    shutil.copytree(root, dst, ignore=ignore, dirs_exist_ok=True)
    (dst / "fastjem" / "kernels").symlink_to(dst / "kernels", target_is_directory=True)


def stale(mutant: Mutant, root: Path = REPO) -> str | None:
    """Why ``mutant`` cannot be applied to the tree at ``root`` (an edit's text not found exactly once in what the
    edits before it left), or None."""
    texts = {}
    for file, text, replacement in mutant.edits:
        current = texts.setdefault(file, (root / file).read_text())
        if current.count(text) != 1:
            return f"{file}: the text to mutate is found {current.count(text)} times, not once"
        texts[file] = current.replace(text, replacement)
    return None


def run(mutant: Mutant, root: Path) -> tuple[str, str]:
    """("killed" | "survived" | "stale" | "broken", detail): apply, test, restore. Killed only where pytest reports a
    test failing or erring; broken where it reports none (no test selected, a usage error, no pytest)."""
    why = stale(mutant, root)
    if why:
        return "stale", why
    originals = {}
    try:
        for file, text, replacement in mutant.edits:
            path = root / file
            originals.setdefault(path, path.read_text())
            path.write_text(path.read_text().replace(text, replacement))
        env = {**os.environ, "PYTHONPATH": str(root), "TRITON_INTERPRET": "1"}
        cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *shlex.split(mutant.tests)]
        proc = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True)
        lines = [line for line in proc.stdout.splitlines() if line.strip()]
        failed = next((line for line in lines if line.startswith(("FAILED ", "ERROR "))), lines[-1] if lines else "")
        if proc.returncode == 0:
            return "survived", lines[-1] if lines else ""
        if not any(line.startswith(("FAILED ", "ERROR ")) for line in lines):
            said = (proc.stderr.strip().splitlines() or lines or [""])[-1]
            return "broken", f"pytest exit {proc.returncode}, no test failed: {said}"
        return "killed", failed
    finally:
        for path, source in originals.items():
            path.write_text(source)


def cores() -> int:
    """The cores this process may run on, at most 8 (each job holds a pytest process and its memory)."""
    n = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, min(8, n))


def run_all(chosen: list, jobs: int = 1, copy=copy_tree) -> dict:
    """Run each mutant of ``chosen`` (``jobs`` at a time, each in its own copy of the tree made by ``copy``), print a
    line for each in the list's order, and return {name: outcome}."""
    with tempfile.TemporaryDirectory(prefix="fastjem-mutants-") as tmp:
        trees = queue.SimpleQueue()
        for i in range(min(jobs, len(chosen)) or 1):
            copy(Path(tmp) / f"tree{i}")
            trees.put(Path(tmp) / f"tree{i}")

        def one(mutant):
            root = trees.get()
            try:
                start = time.perf_counter()
                return run(mutant, root) + (time.perf_counter() - start,)
            finally:
                trees.put(root)

        outcomes = {}
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            for m, (outcome, detail, seconds) in zip(chosen, pool.map(one, chosen)):
                outcomes[m.name] = outcome
                print(f"{m.name:<28} {outcome:<8} {seconds:5.0f} s  {detail[:100]}", flush=True)
    return outcomes


def select(mutants: list, names=(), touching=(), sample: int | None = None, seed: int = 0) -> list:
    """The mutants to run, in the order of ``mutants``: those named (all where none is), of those the ones that edit
    a file in ``touching`` (where given), of those a random ``sample`` drawn with ``seed``. ValueError names what
    matches nothing."""
    by_name = {m.name: m for m in mutants}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise ValueError(f"unknown mutant(s) {', '.join(unknown)}; --list names them")
    chosen = [by_name[n] for n in names] if names else list(mutants)
    if touching:
        wanted = {Path(f).as_posix().removeprefix("./") for f in touching}
        edited = {file for m in mutants for file, _, _ in m.edits}
        if wanted - edited:
            raise ValueError(f"no mutant edits {', '.join(sorted(wanted - edited))} "
                             "(paths from the repository root, as kernels/sgld.py)")
        chosen = [m for m in chosen if wanted & {file for file, _, _ in m.edits}]
    if sample is not None:
        if sample < 1:
            raise ValueError(f"--sample must be at least 1, got {sample}")
        picked = {m.name for m in random.Random(seed).sample(chosen, min(sample, len(chosen)))}
        chosen = [m for m in chosen if m.name in picked]
    return chosen


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("names", nargs="*", help="mutants to run (default: all)")
    p.add_argument("--touching", nargs="+", metavar="FILE", default=[],
                   help="only the mutants that edit one of these files (paths from the repository root)")
    p.add_argument("--sample", type=int, metavar="N", help="a random N of the mutants chosen so far")
    p.add_argument("--seed", type=int, default=0, help="the seed of --sample (default: 0)")
    n_cores = cores()
    p.add_argument("--jobs", type=int, default=n_cores, metavar="N",
                   help=f"mutants tested at once, each in its own copy of the tree (default: the cores, {n_cores})")
    p.add_argument("--list", action="store_true", help="list the mutants (those chosen) and the tests each runs")
    args = p.parse_args(argv)
    if args.jobs < 1:
        p.error(f"--jobs must be at least 1, got {args.jobs}")
    try:
        chosen = select(MUTANTS, args.names, args.touching, args.sample, args.seed)
    except ValueError as e:
        p.error(str(e))
    if args.list:
        for m in chosen:
            print(f"{m.name:<28} {m.tests}")
        return 0
    if args.sample is not None or args.touching:
        print(f"{len(chosen)} of {len(MUTANTS)} mutants chosen", flush=True)
    start = time.perf_counter()
    outcomes = run_all(chosen, args.jobs)
    bad = [n for n, o in outcomes.items() if o != "killed"]
    print(f"\n{len(outcomes) - len(bad)} of {len(outcomes)} mutants killed"
          + (f"; not killed: {', '.join(bad)}" if bad else "")
          + f" ({time.perf_counter() - start:.0f} s, {args.jobs} job{'s' if args.jobs > 1 else ''})")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
