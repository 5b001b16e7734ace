"""QDQ-quantized models as ONNX Runtime's quantization tool writes them
(quantize_static, QuantFormat.QDQ), built with onnx.helper, and an exact
float64 evaluation of their QDQ semantics; used by tests/opt/qdq.py.

The tool's layout: weights are int8 (or uint8) initializers behind a
DequantizeLinear (per output channel: axis 0 for Conv and for Gemm with
transB, axis 1 for MatMul), biases int32 behind a DequantizeLinear whose
scale is x_scale * w_scale (computed in float32) and zero point 0; every
activation is a QuantizeLinear -> DequantizeLinear pair whose scale and zero
point come from calibration (min/max over a calibration batch, widened to
include 0). A Relu right after a Conv is removed and its range given to the
Conv's QuantizeLinear (zero point at the low end, so saturation is the
Relu); some exporters keep it (Conv -> Relu -> QuantizeLinear); both are
built. MaxPool and Reshape sit between a DQ and a Q of the same parameters.

Builder keeps the calibration values as it goes (the float model, as the
tool calibrates). ref_eval gives the reference: DequantizeLinear (q - zp) *
scale and the Conv/MatMul/Gemm (and a Relu after one) in float64, quantized
by the exact quotient (the QLinear ops' integer semantics); every other
float tensor rounded to float32 and quantized by a float32 quotient, as
ONNX's reference and ONNX Runtime do."""
import numpy as np
from onnx import TensorProto, helper, numpy_helper

QRANGE = {np.int8: (-128, 127), np.uint8: (0, 255), np.int16: (-32768, 32767),
          np.uint16: (0, 65535), np.int32: (-2**31, 2**31 - 1)}


def _bshape(v, axis, rank):
    """A per-axis parameter v reshaped to broadcast along axis of rank."""
    v = np.asarray(v, np.float64)
    if v.ndim == 0 or v.size == 1:
        return v.reshape(())
    s = [1] * rank
    s[axis] = v.size
    return v.reshape(s)


def _conv(x, w, b, pads, strides, group):
    n, c, h, wd = x.shape
    m, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    oh = (h + pads[0] + pads[2] - kh) // strides[0] + 1
    ow = (wd + pads[1] + pads[3] - kw) // strides[1] + 1
    y = np.zeros((n, m, oh, ow))
    mg = m // group
    for g in range(group):
        xs = xp[:, g * cg:(g + 1) * cg]
        ws = w[g * mg:(g + 1) * mg]
        for ky in range(kh):
            for kx in range(kw):
                patch = xs[:, :, ky:ky + strides[0] * oh:strides[0], kx:kx + strides[1] * ow:strides[1]]
                y[:, g * mg:(g + 1) * mg] += np.einsum("nchw,mc->nmhw", patch, ws[:, :, ky, kx])
    if b is not None:
        y += b.reshape(1, -1, 1, 1)
    return y


def _attr(node, name, default):
    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def eval_node(node, env, exact=None):
    """Output values of one node, in float64 (quantized tensors as their
    integer numpy types). With `exact` (a set of value names) the ONNX
    semantics of float32 tensors: an elementwise, pooling or reshaping
    node's float output rounded to float32, and QuantizeLinear of such a
    tensor dividing in float32 (as ONNX's reference and ONNX Runtime do);
    DequantizeLinear outputs, Conv/MatMul/Gemm outputs and a Relu of one are
    exact, and QuantizeLinear of those divides exactly: the QLinear ops'
    integer semantics, which the qdq pass implements."""
    ex = exact if exact is not None else set()
    v = _eval(node, env, ex)[0]
    op = node.op_type
    if v.dtype.kind == "f" and exact is not None:
        if op in ("Conv", "MatMul", "Gemm", "DequantizeLinear") or \
                op == "Relu" and node.input[0] in ex and op_of.get(node.input[0]) != "DequantizeLinear":
            ex.add(node.output[0])
        else:
            v = v.astype(np.float32).astype(np.float64)
    op_of[node.output[0]] = op
    return [v]


op_of = {}


def _eval(node, env, ex):
    a = [env[i] if i else None for i in node.input]
    op = node.op_type
    if op == "QuantizeLinear":
        x, s, z = a[0], a[1], a[2]
        axis = _attr(node, "axis", 1)
        zt = z.dtype.type
        if node.input[0] in ex:
            quot = np.asarray(x, np.float64) / _bshape(s, axis, x.ndim)
        else:
            quot = (np.asarray(x, np.float32) /
                    _bshape(s, axis, x.ndim).astype(np.float32)).astype(np.float64)
        q = np.rint(quot) + _bshape(z, axis, x.ndim)
        lo, hi = QRANGE[zt]
        return [np.clip(q, lo, hi).astype(zt)]
    if op == "DequantizeLinear":
        x, s = a[0], a[1]
        z = a[2] if len(a) > 2 and a[2] is not None else np.zeros((), x.dtype)
        axis = _attr(node, "axis", 1)
        return [(x.astype(np.float64) - _bshape(z, axis, x.ndim)) * _bshape(s, axis, x.ndim)]
    if op == "Conv":
        pads = _attr(node, "pads", [0, 0, 0, 0])
        strides = _attr(node, "strides", [1, 1])
        return [_conv(a[0], a[1], a[2] if len(a) > 2 else None, pads, strides,
                      _attr(node, "group", 1))]
    if op == "MatMul":
        return [np.matmul(a[0], a[1])]
    if op == "Gemm":
        A = a[0].T if _attr(node, "transA", 0) else a[0]
        B = a[1].T if _attr(node, "transB", 0) else a[1]
        y = A @ B
        return [y + a[2] if len(a) > 2 and a[2] is not None else y]
    if op == "Add":
        return [a[0] + a[1]]
    if op == "Mul":
        return [a[0] * a[1]]
    if op == "Identity":
        return [a[0]]
    if op == "Relu":
        return [np.maximum(a[0], 0)]
    if op == "MaxPool":
        x = a[0]
        n, c, h, w = x.shape
        return [x[:, :, :h // 2 * 2, :w // 2 * 2].reshape(n, c, h // 2, 2, w // 2, 2).max(axis=(3, 5))]
    if op == "Reshape":
        return [a[0].reshape([int(d) if d else a[0].shape[k] for k, d in enumerate(a[1])])]
    raise ValueError(op)


def ref_eval(model, x):
    op_of.clear()
    exact = set()
    env = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    env[model.graph.input[0].name] = np.asarray(x, np.float64)
    for node in model.graph.node:
        for o, v in zip(node.output, eval_node(node, env, exact)):
            env[o] = v
    return [env[o.name] for o in model.graph.output]


class Builder:
    """A QDQ graph built node by node, with calibration values alongside."""

    def __init__(self, name, opset, x_shape, act, seed, act_symmetric=False):
        self.name, self.opset, self.act = name, opset, act
        self.act_symmetric = act_symmetric
        self.rng = np.random.default_rng(seed)
        self.x_shape = x_shape
        self.nodes, self.inits, self.n = [], [], 0
        # Calibration, as the tool does it: the float model (Q and DQ of
        # activations pass values through), on a batch of its own.
        self.env = {"x": self.rng.standard_normal([16] + x_shape)}

    def fresh(self, base):
        self.n += 1
        return "%s_%d" % (base, self.n)

    def init(self, base, arr):
        name = self.fresh(base)
        self.inits.append(numpy_helper.from_array(np.asarray(arr), name))
        self.env[name] = np.asarray(arr)
        return name

    def node(self, op, ins, **attrs):
        out = self.fresh(op.lower())
        n = helper.make_node(op, ins, [out], name=self.fresh("n_" + op), **attrs)
        self.nodes.append(n)
        if op == "QuantizeLinear" or op == "DequantizeLinear" and self.env[ins[0]].dtype.kind == "f":
            self.env[out] = self.env[ins[0]]
        else:
            self.env[out] = eval_node(n, self.env)[0]
        return out

    def act_params(self, v, relu=False):
        """Scale and zero point of an activation from its calibration range."""
        lo, hi = min(float(v.min()), 0.0), max(float(v.max()), 0.0)
        if relu:
            lo = 0.0
        qlo, qhi = QRANGE[self.act]
        if self.act_symmetric or qlo < 0 and self.act in (np.int16,):
            r = max(abs(lo), abs(hi))
            s = np.float32(2 * r / (qhi - qlo))
            z = 0 if qlo < 0 else (qlo + qhi + 1) // 2
        else:
            s = np.float32((hi - lo) / (qhi - qlo))
            z = int(np.clip(np.rint(qlo - lo / float(s)), qlo, qhi))
        return s, z

    def q(self, x, s, z):
        return self.node("QuantizeLinear", [x, self.init("s", np.float32(s)),
                                            self.init("zp", np.asarray(z, self.act))])

    def dq(self, q, s, z):
        return self.node("DequantizeLinear", [q, self.init("s", np.float32(s)),
                                              self.init("zp", np.asarray(z, self.act))])

    def qdq(self, x, relu=False, params=None):
        s, z = params or self.act_params(self.env[x], relu)
        self.last_params = (s, z)
        return self.dq(self.q(x, s, z), s, z)

    def weight(self, w, axis, wt=np.int8, symmetric=True):
        """DQ(int weight): per-channel along axis (None: per tensor)."""
        lo_q, hi_q = QRANGE[wt]
        red = tuple(k for k in range(w.ndim) if k != axis) if axis is not None else None
        lo, hi = np.minimum(w.min(axis=red), 0), np.maximum(w.max(axis=red), 0)
        if symmetric:
            s = (np.maximum(np.abs(lo), np.abs(hi)) / ((hi_q - lo_q) / 2)).astype(np.float32)
            z = np.full(s.shape, 0 if lo_q < 0 else (lo_q + hi_q + 1) // 2)
        else:
            s = ((hi - lo) / (hi_q - lo_q)).astype(np.float32)
            z = np.clip(np.rint(lo_q - lo / s.astype(np.float64)), lo_q, hi_q)
        bs = lambda v: _bshape(v, axis, w.ndim) if axis is not None else v
        q = np.clip(np.rint(w / bs(s.astype(np.float64))) + bs(z), lo_q, hi_q).astype(wt)
        attrs = {"axis": axis} if axis is not None else {}
        name = self.node("DequantizeLinear", [self.init("w", q), self.init("ws", s),
                                              self.init("wz", z.astype(wt))], **attrs)
        self.last_wscale = s
        return name

    def bias(self, b, xs):
        """DQ(int32 bias) with scale x_scale * w_scale (float32), zero 0."""
        s = (np.float32(xs) * self.last_wscale).astype(np.float32)
        q = np.rint(b / s.astype(np.float64)).astype(np.int32)
        attrs = {"axis": 0} if s.size > 1 else {}
        return self.node("DequantizeLinear", [self.init("b", q), self.init("bs", s),
                                              self.init("bz", np.zeros(s.shape, np.int32))],
                         **attrs)

    def model(self, out, inner):
        """Outputs y (out) and h (inner, an early layer's result)."""
        nodes = list(self.nodes)
        nodes.append(helper.make_node("Identity", [out], ["y"], name="out"))
        nodes.append(helper.make_node("Identity", [inner], ["h"], name="inner"))
        elem = {np.float32: TensorProto.FLOAT}
        graph = helper.make_graph(
            nodes, self.name,
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N"] + self.x_shape)],
            [helper.make_tensor_value_info(o, elem[np.float32], None) for o in ("y", "h")],
            self.inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)])
        m.ir_version = 8 if self.opset < 21 else 10
        return m


def cnn(name, opset, act, wt=np.int8, per_channel=True, explicit_relu=False, seed=0,
        act_symmetric=False, group=1):
    """Q/DQ input, Conv(+bias, Relu) 3x3, MaxPool, Conv(+bias, Relu), a
    residual Add, Reshape, Gemm(transB, +bias)."""
    b = Builder(name, opset, [3, 12, 12], act, seed, act_symmetric)
    r = b.rng
    x = b.qdq("x")
    xs = b.last_params[0]
    c = b.node("Conv", [x, b.weight(r.standard_normal((8, 3, 3, 3)) * 0.3, 0 if per_channel else None, wt),
                        b.bias(r.standard_normal(8) * 0.1, xs)], pads=[1, 1, 1, 1])
    if explicit_relu:
        c = b.node("Relu", [c])
    h = first = b.qdq(c, relu=True)
    p = b.last_params
    h = b.qdq(b.node("MaxPool", [h], kernel_shape=[2, 2], strides=[2, 2]), params=p)
    hs = p[0]
    w2 = r.standard_normal((8, 8 // group, 3, 3)) * 0.2
    c2 = b.node("Conv", [h, b.weight(w2, 0 if per_channel else None, wt),
                         b.bias(r.standard_normal(8) * 0.1, hs)], pads=[1, 1, 1, 1], group=group)
    c2 = b.qdq(c2)
    s = b.qdq(b.node("Add", [c2, h]))
    p = b.last_params
    f = b.qdq(b.node("Reshape", [s, b.init("shape", np.array([0, -1], np.int64))]), params=p)
    w3 = r.standard_normal((10, 8 * 6 * 6)) * 0.05
    g = b.node("Gemm", [f, b.weight(w3, 0 if per_channel else None, wt),
                        b.bias(r.standard_normal(10) * 0.1, p[0])], transB=1)
    return b.model(b.qdq(g), first)


def mlp(name, opset, act, wt=np.int8, symmetric=True, seed=1, act_symmetric=False):
    """[N, 5, 48] through MatMul (per tensor), Add of a quantized bias,
    Relu, MatMul (per column), Mul by a quantized constant, Gemm (no
    transB, no bias)."""
    b = Builder(name, opset, [5, 48], act, seed, act_symmetric)
    r = b.rng
    x = b.qdq("x")
    h = first = b.qdq(b.node("MatMul", [x, b.weight(r.standard_normal((48, 40)) * 0.2, None, wt,
                                                    symmetric)]))
    bias = b.weight(r.standard_normal(40) * 0.3, None, wt, symmetric)
    h = b.qdq(b.node("Add", [h, bias]))
    h = b.qdq(b.node("Relu", [h]), relu=True)
    h = b.qdq(b.node("MatMul", [h, b.weight(r.standard_normal((40, 24)) * 0.2, 1, wt, symmetric)]))
    h = b.qdq(b.node("Mul", [h, b.weight(r.uniform(0.5, 2.0, 24), None, wt, symmetric)]))
    h = b.qdq(b.node("Reshape", [h, b.init("shape", np.array([0, -1], np.int64))]),
              params=b.last_params)
    g = b.node("Gemm", [h, b.weight(r.standard_normal((120, 16)) * 0.1, 1, wt, symmetric)])
    return b.model(b.qdq(g), first)


def odd(name, opset, act, wt=np.int8, seed=12):
    """Sizes that leave tails in every blocked loop of the integer kernels
    (runtime/kernels/i8-gemm/core.h) and weight zero points at the low end
    of their range: [N, 5, 13, 13] through Conv 11 x 3x3 (K = 45, 169
    outputs a channel), its Relu in the quantization (x's zero point at the
    low end for the next layer), Conv 37 x 3x3 stride 2 (K = 99), Reshape,
    MatMul by [1813, 19] (K in several blocks). Weights are non-negative and
    asymmetric, so their zero points are the type's lowest value."""
    b = Builder(name, opset, [5, 13, 13], act, seed)
    r = b.rng
    x = b.qdq("x")
    xs = b.last_params[0]
    c = b.node("Conv", [x, b.weight(np.abs(r.standard_normal((11, 5, 3, 3))) * 0.2, 0, wt, False),
                        b.bias(r.standard_normal(11) * 0.1, xs)], pads=[1, 1, 1, 1])
    h = first = b.qdq(c, relu=True)
    hs = b.last_params[0]
    c2 = b.node("Conv", [h, b.weight(np.abs(r.standard_normal((37, 11, 3, 3))) * 0.1, 0, wt, False),
                         b.bias(r.standard_normal(37) * 0.1, hs)], pads=[1, 1, 1, 1],
                strides=[2, 2])
    h = b.qdq(c2)
    h = b.qdq(b.node("Reshape", [h, b.init("shape", np.array([0, -1], np.int64))]),
              params=b.last_params)
    m = b.node("MatMul", [h, b.weight(np.abs(r.standard_normal((1813, 19))) * 0.02, 1, wt, False)])
    return b.model(b.qdq(m), first)
