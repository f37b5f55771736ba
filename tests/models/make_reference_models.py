#!/usr/bin/python3
"""Builds the reference models that Kiln's end-to-end tests and bench/models compare against.

    /usr/bin/python3 tests/models/make_reference_models.py OUT_DIR [--models M ...]
                                                           [--opsets 13 17]

--models defaults to MODELS, the ones Kiln's tests run; WIDER_MODELS (bench/models' wider set)
may be named too, and bert_hf and gpt2_decoder need the transformers package (bench/models runs
this script in its venv, which has it). For each model: randomly initialised weights
(torch.manual_seed(0), nothing is downloaded), eval mode, batch 1, static shapes. Writes

    OUT_DIR/<model>_opset<N>.onnx   the model exported by torch.onnx (input "input",
                                    output "output"), checked with onnx.checker
    OUT_DIR/<model>.npz             "input": a fixed input from a seeded numpy generator,
                                    "output": what PyTorch computes for it (in float64,
                                    rounded to float32), "output_float32": what PyTorch
                                    computes in float32, whose distance from "output" is
                                    float32's own rounding error (all arrays float32)

Every file is written to a temporary name and renamed, so a crash never leaves a half-written
model that a later run would take for finished. A file is regenerated only when it is missing
or was made by another recipe: OUT_DIR/<model>.stamp.json records, per file, a fingerprint of
this script and of the torch/torchvision/onnx/numpy versions. Re-running is therefore cheap.

Nothing generated here belongs in git.
"""

import argparse
import hashlib
import json
import os
import sys
import time

SEED = 0
INPUT_NAME = "input"
OUTPUT_NAME = "output"
DEFAULT_OPSETS = (13, 17)

CNN_INPUT_SHAPE = (1, 3, 224, 224)
ENCODER_INPUT_SHAPE = (1, 128, 256)  # batch, sequence, d_model


# ---- the models -----------------------------------------------------------------------------
# Each builder returns a torch.nn.Module in eval mode; weights come from the global torch RNG,
# which build_model seeds first, so the same recipe always yields the same weights.


def _torchvision(name):
    def build():
        import torchvision

        return getattr(torchvision.models, name)(weights=None)

    return build


def _bert_style_encoder():
    """A BERT-base-shaped encoder at a quarter of the width: post-norm layers, GELU feed-forward,
    batch_first (1, seq, d_model) tensors."""
    import torch

    layer = torch.nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024,
                                             activation="gelu", batch_first=True)
    return torch.nn.TransformerEncoder(layer, num_layers=4, enable_nested_tensor=False)


def _vision_transformer(name):
    """A torchvision ViT with its classifier drawn at random: torchvision zero-initialises it,
    so every output would be 0 and any result would match."""
    def build():
        import torch

        model = _torchvision(name)()
        torch.nn.init.normal_(model.heads.head.weight, std=0.02)
        return model

    return build


def _transformers(architecture, **config):
    """A model of the `transformers` package built from its config (random weights; nothing is
    downloaded), taking token ids and returning its first output (logits, or the last hidden
    state) as one tensor, which is what torch.onnx and the tests expect."""
    def build():
        import torch
        import transformers

        family = architecture[:-len("LMHeadModel")] if architecture.endswith(
            "LMHeadModel") else architecture[:-len("Model")]
        inner = getattr(transformers, architecture)(
            getattr(transformers, family + "Config")(**config))

        class FirstOutput(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.inner = inner

            def forward(self, ids):
                return self.inner(input_ids=ids, use_cache=False, return_dict=False)[0]

        return FirstOutput()

    return build


class Tokens:
    """The input of a language model: token ids of `shape` below `vocab` (int64)."""

    def __init__(self, shape, vocab):
        self.shape, self.vocab = shape, vocab


SEQUENCE_TOKENS = Tokens((1, 128), vocab=8000)
NLP_CONFIG = {"vocab_size": 8000, "attn_implementation": "eager"}

# name -> (builder, input shape or Tokens). Kiln's tests run these.
MODELS = {
    "resnet18": (_torchvision("resnet18"), CNN_INPUT_SHAPE),
    "resnet50": (_torchvision("resnet50"), CNN_INPUT_SHAPE),
    "mobilenet_v2": (_torchvision("mobilenet_v2"), CNN_INPUT_SHAPE),
    "squeezenet1_1": (_torchvision("squeezenet1_1"), CNN_INPUT_SHAPE),
    "bert_encoder": (_bert_style_encoder, ENCODER_INPUT_SHAPE),
}

# More architectures a user might bring, for bench/models only (the tests keep to MODELS): CNN
# families (dense, grouped, large-kernel depthwise with LayerNorm, squeeze-and-excitation,
# channel shuffle), a vision transformer, and an NLP encoder and decoder from `transformers`
# (a PyPI package: bench/models installs it in its venv).
WIDER_MODELS = {
    "densenet121": (_torchvision("densenet121"), CNN_INPUT_SHAPE),
    "resnext50_32x4d": (_torchvision("resnext50_32x4d"), CNN_INPUT_SHAPE),
    "convnext_tiny": (_torchvision("convnext_tiny"), CNN_INPUT_SHAPE),
    "efficientnet_b0": (_torchvision("efficientnet_b0"), CNN_INPUT_SHAPE),
    "regnet_y_400mf": (_torchvision("regnet_y_400mf"), CNN_INPUT_SHAPE),
    "shufflenet_v2_x1_0": (_torchvision("shufflenet_v2_x1_0"), CNN_INPUT_SHAPE),
    "vit_b_32": (_vision_transformer("vit_b_32"), CNN_INPUT_SHAPE),
    "bert_hf": (_transformers("BertModel", hidden_size=256, num_hidden_layers=4,
                              num_attention_heads=4, intermediate_size=1024,
                              max_position_embeddings=128, **NLP_CONFIG), SEQUENCE_TOKENS),
    "gpt2_decoder": (_transformers("GPT2LMHeadModel", n_embd=256, n_layer=4, n_head=4,
                                   n_positions=128, **NLP_CONFIG), SEQUENCE_TOKENS),
}
ALL_MODELS = {**MODELS, **WIDER_MODELS}


def build_model(name):
    """The model `name` with seeded random weights and calibrated batch norms, in eval mode
    (dropout off, batch norm uses its running statistics)."""
    import torch

    torch.manual_seed(SEED)
    model = ALL_MODELS[name][0]()
    calibrate_batch_norm(model, ALL_MODELS[name][1])
    model.eval()
    return model


def calibrate_batch_norm(model, input_shape, batch=8):
    """Sets every batch norm's running statistics to those of one random batch.

    With freshly initialised statistics (mean 0, variance 1) batch norm is the identity, and
    random weights then let activations shrink or grow layer after layer: mobilenet_v2's
    outputs come out near 1e-9, below the tests' atol, so any result would "match". Calibrated
    statistics keep every layer's activations near unit scale, so the outputs are O(1) and
    batch norm's folding is exercised with non-trivial statistics."""
    import numpy as np
    import torch

    norms = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if not norms or isinstance(input_shape, Tokens):
        return
    for norm in norms:
        norm.reset_running_stats()
        norm.momentum = None  # a cumulative average: after one batch, exactly its statistics
    shape = (batch,) + tuple(input_shape[1:])
    x = np.random.default_rng(SEED + 1).standard_normal(shape, dtype=np.float32)
    model.train()
    with torch.no_grad():
        model(torch.from_numpy(x))


def make_input(name):
    """The fixed input of model `name`, from a generator seeded per model, so adding a model
    never changes another model's input: float32 standard normal, or int64 token ids."""
    import numpy as np

    spec = ALL_MODELS[name][1]
    rng = np.random.default_rng(SEED + sum(name.encode()))
    if isinstance(spec, Tokens):
        return rng.integers(0, spec.vocab, spec.shape, dtype=np.int64)
    return rng.standard_normal(spec, dtype=np.float32)


# ---- paths, fingerprints, atomic writes -----------------------------------------------------


def onnx_path(out_dir, name, opset):
    return os.path.join(out_dir, f"{name}_opset{opset}.onnx")


def npz_path(out_dir, name):
    return os.path.join(out_dir, f"{name}.npz")


def stamp_path(out_dir, name):
    return os.path.join(out_dir, f"{name}.stamp.json")


def recipe_fingerprint():
    """Changes whenever this script or a library that shapes the files changes, which is when
    the files must be made again."""
    import numpy
    import onnx
    import torch
    import torchvision

    digest = hashlib.sha256()
    with open(os.path.abspath(__file__), "rb") as f:
        digest.update(f.read())
    for version in (torch.__version__, torchvision.__version__, onnx.__version__,
                    numpy.__version__, _transformers_version()):
        digest.update(version.encode() + b"\0")
    return digest.hexdigest()


def _transformers_version():
    try:
        import transformers
    except ImportError:
        return "none"
    return transformers.__version__


def read_stamp(out_dir, name):
    try:
        with open(stamp_path(out_dir, name)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def is_up_to_date(path, stamp, fingerprint):
    return os.path.exists(path) and stamp.get(os.path.basename(path)) == fingerprint


def write_atomically(path, write):
    """Calls write(tmp_path), then renames tmp_path to path; removes tmp_path on failure."""
    tmp = f"{path}.tmp{os.getpid()}{os.path.splitext(path)[1]}"
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def record(out_dir, name, path, fingerprint):
    """Marks `path` as made by the current recipe (after it has been written)."""
    stamp = read_stamp(out_dir, name)
    stamp[os.path.basename(path)] = fingerprint

    def write(tmp):
        with open(tmp, "w") as f:
            json.dump(stamp, f, indent=1, sort_keys=True)

    write_atomically(stamp_path(out_dir, name), write)


# ---- export ---------------------------------------------------------------------------------


def export_onnx(model, example, path, opset):
    """Exports with static shapes and checks the result with onnx.checker.

    Runs with gradients enabled on purpose: under torch.no_grad(), TransformerEncoder takes its
    fused inference fast path (torch._transformer_encoder_layer_fwd), which torch.onnx cannot
    export."""
    import onnx
    import torch

    def write(tmp):
        with torch.enable_grad():
            torch.onnx.export(model, (example,), tmp, opset_version=opset,
                              input_names=[INPUT_NAME], output_names=[OUTPUT_NAME],
                              do_constant_folding=True, dynamic_axes=None)
        onnx.checker.check_model(tmp, full_check=True)

    write_atomically(path, write)


def save_reference(model, x, path):
    """Saves the input and PyTorch's output for it, computed in float64 and rounded to float32.

    A float32 reference carries rounding error of its own: resnet50's float32 outputs differ
    from float64's by up to 4e-5, more than the tests' atol, so a compiler as accurate as
    PyTorch could still fail against it. In float64 the reference is exact to float32
    precision and the tolerance measures Kiln's error alone. The forward pass runs with
    gradients enabled, like the export, so it takes the same code path as the ONNX graph."""
    import copy

    import numpy as np
    import torch

    reference = copy.deepcopy(model).double()  # the float32 model is exported afterwards
    x_double = torch.from_numpy(x if x.dtype == np.int64 else x.astype(np.float64))  # token ids
    with torch.enable_grad():
        output = reference(x_double).detach().numpy().astype(np.float32)
        output_float32 = model(torch.from_numpy(x)).detach().numpy()

    def write(tmp):
        with open(tmp, "wb") as f:
            np.savez(f, input=x, output=output, output_float32=output_float32)

    write_atomically(path, write)


def make_model_files(out_dir, name, opsets, fingerprint, log):
    """Makes the files of model `name` that are missing or stale; returns how many it wrote."""
    import torch

    stamp = read_stamp(out_dir, name)
    wanted = [(npz_path(out_dir, name), None)] + [(onnx_path(out_dir, name, o), o) for o in opsets]
    todo = [(path, opset) for path, opset in wanted if not is_up_to_date(path, stamp, fingerprint)]
    if not todo:
        log(f"{name}: up to date")
        return 0
    start = time.monotonic()
    model = build_model(name)
    x = make_input(name)
    example = torch.from_numpy(x)
    for path, opset in todo:
        if opset is None:
            save_reference(model, x, path)
        else:
            export_onnx(model, example, path, opset)
        record(out_dir, name, path, fingerprint)
        log(f"{name}: wrote {os.path.basename(path)}")
    log(f"{name}: done in {time.monotonic() - start:.1f} s")
    return len(todo)


# ---- command line ---------------------------------------------------------------------------


def parse_args(argv):
    parser = argparse.ArgumentParser(
        description="Export Kiln's reference models (random weights, seed 0) to ONNX, with a "
                    "fixed input and PyTorch's output for it. Skips files that are up to date.",
        epilog="Models: " + ", ".join(MODELS) + "; for bench/models also: " +
               ", ".join(WIDER_MODELS) + " (bert_hf and gpt2_decoder need transformers)")
    parser.add_argument("out_dir", metavar="OUT_DIR", help="folder for the .onnx and .npz files "
                        "(created if missing)")
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(ALL_MODELS),
                        metavar="MODEL", help="models to make (default: the tests' models)")
    parser.add_argument("--opsets", nargs="+", type=int, default=list(DEFAULT_OPSETS),
                        metavar="N", help="ONNX opsets to export (default: 13 17)")
    args = parser.parse_args(argv)
    bad = [o for o in args.opsets if not 7 <= o <= 17]
    if bad:
        parser.error(f"--opsets: torch {_torch_version()} exports opsets 7 to 17, not {bad}")
    return args


def _torch_version():
    import torch

    return torch.__version__


def main(argv=None):
    args = parse_args(argv)
    import torch

    # One thread: the reference outputs do not depend on it, and the machine is shared.
    torch.set_num_threads(1)
    os.makedirs(args.out_dir, exist_ok=True)
    fingerprint = recipe_fingerprint()

    def log(message):
        print(f"[make_reference_models] {message}", flush=True)

    written = sum(make_model_files(args.out_dir, name, args.opsets, fingerprint, log)
                  for name in args.models)
    log(f"{written} file(s) written in {os.path.abspath(args.out_dir)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
