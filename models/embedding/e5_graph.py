"""The multilingual-e5-small encoder of ``e5.c`` as an ONNX graph, built from its file.

``e5.c``'s forward pass: token embedding + position (from 0 at ``<s>``) + type 0, a
LayerNorm, 12 BERT layers (post-LN: attention, add & norm, GELU-erf FFN, add & norm),
mean pooling over every token of the row (``<s>`` and ``</s>`` included). The graph
takes the token embeddings (``embeds`` [batch, seq, 384], gathered and dequantized
outside, so the 250k-row table never becomes a 384 MB fp32 constant) and the
``attention_mask`` [batch, seq] int32, and returns the masked mean ``pooled`` [batch, 384]
before normalization, so windows of a long text can be averaged as the engine does.

Two ways to hold the weights (``weights``), both from the dequantized 4-bit blocks:
- ``fp32``: plain ``MatMul`` — cosine 0.9999 to the engine, ~11 ms a query, ~175
  passages/s on two cores;
- ``int8`` (the default): every projection as ``DynamicQuantizeMatMul`` (int8 weights
  symmetric per output column, uint8 activations per call), ~3x faster matrix
  products on VNNI cores. A handful of FFN channels carry "massive activations" (GELU
  outputs of 12–66 where the other channels stay under ~4): quantized with the rest they
  took the cosine to the engine down to 0.985 on long texts. Those channels
  (``outliers``, found on calibration sentences by the caller) run in fp32 beside the
  int8 product, which brings it back to 0.998. Quantizing per call makes a vector
  depend slightly on its batch (cosine ≥ 0.995 between a text alone and in a batch).
The engine's own arithmetic (``MatMulNBits``, int8 activations per 32-block) matched it
to 1.0000 but ORT's kernel for it ran slower than fp32 on batches here.
Attention is spelled out in plain ops (faster here than ``MultiHeadAttention``), the
1/sqrt(d) scale folded into the query weights.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from models.embedding.e5_file import E5File

if TYPE_CHECKING:  # onnx is imported when a graph is built
    from onnx import NodeProto, TensorProto

WEIGHTS = ("int8", "fp32")
_MS = "com.microsoft"


class _Graph:
    def __init__(self) -> None:
        self.nodes: list[NodeProto] = []
        self.inits: list[TensorProto] = []

    def const(self, name: str, arr: np.ndarray) -> str:
        from onnx import numpy_helper

        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(arr), name))
        return name

    def split(self, x: str, outs: list[str], axis: int) -> list[str]:
        from onnx import helper

        self.nodes.append(helper.make_node("Split", [x], outs, name=outs[0] + "_split", axis=axis))
        return outs

    def op(self, op: str, inputs: list[str], out: str, domain: str = "", **attrs: Any) -> str:
        from onnx import helper

        self.nodes.append(helper.make_node(op, inputs, [out], name=out, domain=domain, **attrs))
        return out


def build_graph(
    model: E5File,
    *,
    weights: str = "int8",
    outliers: dict[int, np.ndarray] | None = None,
    taps: bool = False,
) -> bytes:
    """The serialized ONNX model (opset 17 + com.microsoft 1).

    ``outliers[layer]``: the FFN channels kept in fp32 under int8 weights (see the
    module docstring; None keeps the whole FFN output projection in fp32); ``taps``: also output every layer's GELU activations
    (``l{i}.gelu``, [batch, seq, ffn]), which is how those channels are found.
    """
    from onnx import TensorProto, helper

    if weights not in WEIGHTS:
        raise ValueError(f"weights must be one of {WEIGHTS}, not {weights!r}")
    hdr = model.header
    h = hdr.hidden
    g = _Graph()
    # position + type 0, sliced to the batch's length
    table = model.vector("emb.pos").reshape(hdr.max_positions, h) + model.vector("emb.type")[:h]
    g.const("pos_type", table.astype(np.float32))
    g.const("zero", np.array([0], np.int64))
    g.const("one", np.array([1], np.int64))
    g.op("Shape", ["embeds"], "shape")
    g.op("Gather", ["shape", "one"], "seq", axis=0)
    g.op("Slice", ["pos_type", "zero", "seq", "zero"], "pos")
    g.op("Add", ["embeds", "pos"], "emb_sum")
    x = _norm(g, model, "emb_sum", "emb.ln", "emb_ln")
    # additive attention mask, once: 0 where a token is, -1e9 over the padding
    g.op("Cast", ["attention_mask"], "maskf", to=TensorProto.FLOAT)
    g.op("Sub", ["maskf", g.const("f_one", np.array(1.0, np.float32))], "mask_off")
    g.op("Mul", ["mask_off", g.const("big", np.array(1e9, np.float32))], "mask_neg")
    g.op("Unsqueeze", ["mask_neg", g.const("axes12", np.array([1, 2], np.int64))], "mask_bias")
    for layer in range(hdr.layers):
        keep = None if outliers is None else outliers.get(layer, np.zeros(0, np.int64))
        x = _layer(g, model, layer, x, weights, keep)
    g.op("Unsqueeze", ["maskf", g.const("last", np.array([-1], np.int64))], "mask3")
    g.op("Mul", [x, "mask3"], "masked")
    g.op("ReduceSum", ["masked", "one"], "total", keepdims=0)
    g.op("ReduceSum", ["maskf", "one"], "count", keepdims=1)
    g.op("Div", ["total", "count"], "pooled")

    graph = helper.make_graph(
        g.nodes,
        "multilingual-e5-small",
        [
            helper.make_tensor_value_info("embeds", TensorProto.FLOAT, ["batch", "seq", h]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT32, ["batch", "seq"]),
        ],
        [helper.make_tensor_value_info("pooled", TensorProto.FLOAT, ["batch", h])]
        + [
            helper.make_tensor_value_info(f"l{i}.gelu", TensorProto.FLOAT, None)
            for i in range(hdr.layers)
            if taps
        ],
        g.inits,
    )
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid(_MS, 1)]
    model_proto = helper.make_model(graph, opset_imports=opsets, producer_name="memstream")
    return model_proto.SerializeToString()


def _norm(g: _Graph, model: E5File, x: str, prefix: str, out: str) -> str:
    w, b = model.vector(prefix + ".w"), model.vector(prefix + ".b")
    ins = [x, g.const(prefix + ".w", w), g.const(prefix + ".b", b)]
    return g.op("LayerNormalization", ins, out, epsilon=model.header.eps, axis=-1)


def _layer(
    g: _Graph, model: E5File, layer: int, x: str, weights: str, keep: np.ndarray | None
) -> str:
    hdr = model.header
    h, heads = hdr.hidden, hdr.heads
    p = f"l{layer}."
    scale = 1.0 / np.sqrt(h // heads)  # folded into the query projection
    w, b = _weights(model, [p + "q", p + "k", p + "v"], h, [scale, 1.0, 1.0])
    qkv = _dense(g, x, w, b, weights, p + "qkv")
    shape = g.const(p + "qkv_shape", np.array([0, 0, 3, heads, h // heads], np.int64))
    g.op("Reshape", [qkv, shape], p + "qkv5")
    g.op("Transpose", [p + "qkv5"], p + "qkv_t", perm=[2, 0, 3, 1, 4])  # 3, B, N, S, d
    q, k, v = g.split(p + "qkv_t", [p + "q3", p + "k3", p + "v3"], axis=0)
    q, k, v = (g.op("Squeeze", [t, "zero"], t + "s") for t in (q, k, v))
    g.op("Transpose", [k], p + "kt", perm=[0, 1, 3, 2])
    g.op("MatMul", [q, p + "kt"], p + "scores")
    g.op("Add", [p + "scores", "mask_bias"], p + "scores_m")
    g.op("Softmax", [p + "scores_m"], p + "probs", axis=-1)
    g.op("MatMul", [p + "probs", v], p + "ctx4")
    g.op("Transpose", [p + "ctx4"], p + "ctx_t", perm=[0, 2, 1, 3])
    g.op(
        "Reshape", [p + "ctx_t", g.const(p + "ctx_shape", np.array([0, 0, h], np.int64))], p + "ctx"
    )
    ao = _dense(g, p + "ctx", *_weights(model, [p + "ao"], h), weights, p + "ao")
    g.op("Add", [ao, x], p + "res1")
    x = _norm(g, model, p + "res1", p + "aln", p + "x1")
    fo = _ffn(g, model, p, x, weights, keep)
    g.op("Add", [fo, x], p + "res2")
    return _norm(g, model, p + "res2", p + "oln", p + "x2")


def _ffn(g: _Graph, model: E5File, p: str, x: str, weights: str, keep: np.ndarray | None) -> str:
    """GELU(x W_i + b_i) W_o + b_o; with int8 weights the channels ``keep`` run in fp32."""
    w_in, b_in = _weights(model, [p + "fi"], model.header.ffn)
    w_out, b_out = _weights(model, [p + "fo"], model.header.hidden)
    if weights == "fp32" or keep is None:
        act = g.op("Gelu", [_dense(g, x, w_in, b_in, weights, p + "fi")], p + "gelu", domain=_MS)
        return _dense(g, act, w_out, b_out, "fp32", p + "fo")
    rest = np.setdiff1d(np.arange(w_in.shape[1]), keep)
    mid = _dense(g, x, w_in[:, rest], b_in[rest], weights, p + "fi")
    act = g.op("Gelu", [mid], p + "gelu", domain=_MS)
    out = _dense(g, act, w_out[rest], b_out, weights, p + "fo")
    if len(keep) == 0:
        return out
    mid_k = _dense(g, x, w_in[:, keep], b_in[keep], "fp32", p + "fi_k")
    act_k = g.op("Gelu", [mid_k], p + "gelu_k", domain=_MS)
    g.op("MatMul", [act_k, g.const(p + "fo_k_w", w_out[keep])], p + "fo_k")
    return g.op("Add", [out, p + "fo_k"], p + "fo_sum")


def _weights(
    model: E5File, names: list[str], rows: int, scales: list[float] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(W^T [nin, nout], b) of the Q4 matrices ``names`` stacked on the output axis."""
    scales = scales or [1.0] * len(names)
    pairs = list(zip(names, scales, strict=True))
    w = np.concatenate([model.matrix(n + ".w", rows) * s for n, s in pairs]).T
    b = np.concatenate([model.vector(n + ".b") * s for n, s in pairs])
    return w.astype(np.float32), b.astype(np.float32)


def _dense(g: _Graph, x: str, w: np.ndarray, b: np.ndarray, weights: str, out: str) -> str:
    """x @ w + b, in fp32 or as int8 (weights symmetric per output column)."""
    bias = g.const(out + "_b", b)
    if weights == "fp32":
        g.op("MatMul", [x, g.const(out + "_w", w)], out + "_mm")
        return g.op("Add", [out + "_mm", bias], out)
    col = np.maximum(np.abs(w).max(axis=0), 1e-12) / 127.0
    wq = np.clip(np.rint(w / col), -127, 127).astype(np.int8)
    ins = [x, g.const(out + "_w", wq), g.const(out + "_s", col.astype(np.float32)), "", bias]
    return g.op("DynamicQuantizeMatMul", ins, out, domain=_MS)
