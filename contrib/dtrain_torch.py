#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""dtrain_torch.py - load `dtrain export --format torch` files into PyTorch.

    import dtrain_torch
    model = dtrain_torch.load("runs/NAME/model.safetensors")   # eval mode
    logits = model(x)        # x: (B, *input_shape) or (B, input_size)

The file's __metadata__ holds the layer graph (JSON) and the resolved job
(YAML, as model.job); this module builds the matching torch.nn.Module from
the graph and loads the tensors, which the export already named and laid
out as the torch modules hold them. Only torch, numpy, json and struct are
needed. The forward pass is dtrain's (src/graph/*.c): gelu in its tanh
form, layernorm and batchnorm with the job's eps, attention scaled by
1/sqrt(head size) with the causal mask, pools with dtrain's padding
(max: padding never wins; average: padding counts as zeros), dropout off
in eval mode, a dense layer reading another layer's (T, C) output row by
row and flattening anything else, a dense layer with dtrain's `tie:`
sharing its embedding's weight (one Parameter). The result is the last layer's output:
logits for softmax_cross_entropy (model.probabilities(x) applies the
softmax), predictions for a regression (mse, l1, huber).

Inputs are what the model sees: features already multiplied by the
scale the run used (model.input_scale) and, with data.normalize, mapped
per feature by the training split's statistics (model.input_normalize:
(x - shift) * mul); model.prepare(raw) does both in float32 as dtrain
does. Token ids go in as numbers.

As a script: python3 dtrain_torch.py FILE INPUT.npy OUTPUT.npy
[--probabilities] [--raw] runs the model on INPUT (--raw: raw features,
scaled and normalised first by model.prepare) and writes float32 NPY. A file that is not safetensors
or inputs of the wrong shape: one line on stderr naming the file, exit
status 1; a bad argument or option: the usage, exit status 2.
"""
import json
import struct
import sys

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["load", "read_safetensors", "DtrainModel"]

_ACTIVATIONS = {
    "relu": F.relu,
    "tanh": torch.tanh,
    "sigmoid": torch.sigmoid,
    # dtrain's gelu is the tanh approximation (src/graph/activation.c)
    "gelu": lambda x: F.gelu(x, approximate="tanh"),
}


def read_safetensors(path):
    """Returns ({name: float32 numpy array}, metadata dict)."""
    with open(path, "rb") as f:
        blob = f.read()
    n = struct.unpack("<Q", blob[:8])[0] if len(blob) >= 8 else -1
    if not 2 <= n <= len(blob) - 8:
        raise ValueError("%s: not a safetensors file: expected an 8-byte "
                         "header length and a JSON header within its %d "
                         "bytes" % (path, len(blob)))
    try:
        header = json.loads(blob[8:8 + n].decode("utf-8"))
    except ValueError as e:
        raise ValueError("%s: not a safetensors file: its header is not "
                         "JSON (%s)" % (path, e)) from None
    if not isinstance(header, dict):
        raise ValueError("%s: not a safetensors file: its header is not "
                         "a JSON object" % path)
    meta = header.pop("__metadata__", {})
    base = 8 + n
    tensors = {}
    for name, e in header.items():
        if e["dtype"] != "F32":
            raise ValueError("%s: tensor %s is %s, expected F32"
                             % (path, name, e["dtype"]))
        lo, hi = e["data_offsets"]
        arr = np.frombuffer(blob, dtype="<f4", count=(hi - lo) // 4,
                            offset=base + lo)
        tensors[name] = arr.reshape(e["shape"]).astype(np.float32)
    return tensors, meta


class _PosEmbedding(nn.Module):
    """y[t] = x[t] + weight[t] (src/graph/pos_embedding.c)."""

    def __init__(self, length, dim):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(length, dim))

    def forward(self, x):
        return x + self.weight[: x.shape[1]]


class _Attention(nn.MultiheadAttention):
    """dtrain's attention (src/graph/attention.c) as torch's
    nn.MultiheadAttention, with its tensor names: in_proj rows
    [q | k | v], scores / sqrt(head size), -inf above the diagonal when
    causal, then out_proj."""

    def __init__(self, dim, heads, causal, bias):
        super().__init__(dim, heads, bias=bias, batch_first=True)
        self.causal = causal

    def forward(self, x):
        t = x.shape[1]
        mask = None
        if self.causal:
            mask = torch.ones(t, t, dtype=torch.bool,
                              device=x.device).triu(1)
        return super().forward(x, x, x, attn_mask=mask,
                               need_weights=False)[0]


def _module(layer):
    """The torch module of one graph layer, or None (no parameters)."""
    kind, ins = layer["type"], layer["in_shape"]
    if kind == "dense":
        width = ins[-1] if layer["per_row"] else int(np.prod(ins))
        return nn.Linear(width, layer["units"], bias=layer["bias"])
    if kind == "conv2d":
        return nn.Conv2d(ins[0] if len(ins) == 3 else 1, layer["channels"],
                         layer["kernel"], stride=layer["stride"],
                         padding=layer["padding"], bias=layer["bias"])
    if kind == "maxpool2d":
        return nn.MaxPool2d(layer["kernel"], layer["stride"],
                            layer["padding"])
    if kind == "avgpool2d":
        return nn.AvgPool2d(layer["kernel"], layer["stride"],
                            layer["padding"], count_include_pad=True)
    if kind == "dropout":
        return nn.Dropout(layer["rate"])
    if kind == "layernorm":
        return nn.LayerNorm(ins[-1], eps=layer["eps"])
    if kind == "batchnorm":
        cls = {1: nn.BatchNorm1d, 3: nn.BatchNorm2d}.get(len(ins))
        if cls is None:
            raise ValueError("batchnorm %s: input shape %s"
                             % (layer["name"], ins))
        return cls(ins[0], eps=layer["eps"], momentum=layer["momentum"])
    if kind == "embedding":
        return nn.Embedding(layer["vocab"], layer["dim"])
    if kind == "pos_embedding":
        return _PosEmbedding(layer["length"], ins[-1])
    if kind == "attention":
        return _Attention(ins[-1], layer["heads"], layer["causal"],
                          layer["bias"])
    if kind in ("flatten", "reshape", "activation", "softmax", "add",
                "concat"):
        return None
    raise ValueError("layer %s: type %s is not known to this loader"
                     % (layer["name"], kind))


class DtrainModel(nn.Module):
    """The model of a dtrain graph (the export's __metadata__.graph)."""

    def __init__(self, graph):
        super().__init__()
        self.graph = graph
        self.input_shape = list(graph["input_shape"])
        self.input_scale = float(graph.get("input_scale", 1.0))
        # data.normalize: (x * input_scale - shift) * mul per feature,
        # all in float32 as data/ computes it; None without one
        norm = graph.get("input_normalize")
        self.input_normalize = None if norm is None else (
            np.asarray(norm["shift"], dtype=np.float32),
            np.asarray(norm["mul"], dtype=np.float32))
        self._steps = []
        for layer in graph["layers"]:
            mod = _module(layer)
            if mod is not None:
                self.add_module(layer["key"], mod)
            self._steps.append((layer, mod))
        # A dense layer with dtrain's `tie:` uses the embedding's weight
        # (vocab, dim) as its nn.Linear weight: one Parameter, shared
        # (Press & Wolf 2017, GPT-2's lm_head).
        for layer in graph["layers"]:
            if layer.get("tie") is not None:
                getattr(self, layer["key"]).weight = \
                    getattr(self, layer["tie"]).weight

    def prepare(self, raw):
        """Raw features times input_scale, then the job's data.normalize
        map (input_normalize), in float32 as data/ does."""
        x = np.asarray(raw, dtype=np.float32)
        x = x * np.float32(self.input_scale)
        if self.input_normalize is not None:
            shift, mul = self.input_normalize
            flat = x.reshape(x.shape[0], -1)
            x = ((flat - shift) * mul).reshape(x.shape)
        return torch.as_tensor(np.ascontiguousarray(x, dtype=np.float32))

    def forward(self, x):
        b = x.shape[0]
        outs = {"input": x.reshape(b, *self.input_shape)}
        for layer, mod in self._steps:
            xs = [outs[name] for name in layer["inputs"]]
            y = self._apply(layer, mod, xs, b)
            y = y.reshape(b, *layer["out_shape"])
            act = layer.get("activation")
            if act is not None:
                y = _ACTIVATIONS[act](y)
            outs[layer["name"]] = y
        return outs[self.graph["output"]]

    def probabilities(self, x):
        return torch.softmax(self.forward(x), dim=-1)

    @staticmethod
    def _apply(layer, mod, xs, b):
        kind, x = layer["type"], xs[0]
        if kind == "dense":
            return mod(x if layer["per_row"] else x.reshape(b, -1))
        if kind in ("conv2d", "maxpool2d", "avgpool2d"):
            return mod(x.unsqueeze(1) if x.dim() == 3 else x)
        if kind == "embedding":
            return mod(x.long())
        if kind in ("flatten", "reshape"):
            return x.reshape(b, -1)
        if kind == "softmax":
            return torch.softmax(x, dim=-1)
        if kind == "add":
            y = xs[0]
            for other in xs[1:]:
                y = y + other
            return y
        if kind == "concat":
            return torch.cat(xs, dim=-1)
        if kind == "activation":
            return x        # the activation follows, as for any layer
        return mod(x)


def load(path):
    """Builds the module of a `dtrain export --format torch` file, loads
    its tensors and returns it in eval mode (dropout off, batchnorm on its
    running statistics), with .job (YAML text) and .step."""
    tensors, meta = read_safetensors(path)
    if "graph" not in meta:
        raise ValueError("%s: no graph in __metadata__; export it with "
                         "dtrain export --format torch" % path)
    model = DtrainModel(json.loads(meta["graph"]))
    state = {k: torch.from_numpy(v) for k, v in tensors.items()}
    for layer in model.graph["layers"]:
        # the file holds a tied table once, as the embedding's
        tie = layer.get("tie")
        if tie is not None and tie + ".weight" in state:
            state[layer["key"] + ".weight"] = state[tie + ".weight"]
    for k, v in model.state_dict().items():
        if k.endswith("num_batches_tracked") and k not in state:
            state[k] = torch.zeros_like(v)
    model.load_state_dict(state, strict=True)
    model.job = meta.get("job", "")
    model.step = int(meta.get("step", "-1"))
    return model.eval()


def _main(argv):
    args = [a for a in argv if not a.startswith("--")]
    bad = [a for a in argv if a.startswith("--")
           and a not in ("--probabilities", "--raw")]
    if len(args) != 3 or bad:
        if bad:
            sys.stderr.write("dtrain_torch.py: unknown option %s\n" % bad[0])
        sys.stderr.write("usage: dtrain_torch.py FILE INPUT.npy OUTPUT.npy "
                         "[--probabilities] [--raw]\n")
        return 2
    try:
        model = load(args[0])
        raw = np.load(args[1])
        want = int(np.prod(model.input_shape))
        if raw.ndim < 1:
            raise ValueError("%s: a scalar, not an array of samples"
                             % args[1])
        have = int(np.prod(raw.shape[1:]))
        if have != want:
            raise ValueError("%s: samples of shape %s (%d values), the "
                             "model takes %d (%s)"
                             % (args[1], tuple(raw.shape[1:]), have, want,
                                tuple(model.input_shape)))
        with torch.no_grad():
            x = (model.prepare(raw) if "--raw" in argv else
                 torch.as_tensor(np.asarray(raw, dtype=np.float32)))
            y = (model.probabilities(x) if "--probabilities" in argv
                 else model(x))
        np.save(args[2], y.numpy().astype(np.float32))
    except (OSError, ValueError, RuntimeError) as e:
        sys.stderr.write("dtrain_torch.py: %s\n" % e)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
