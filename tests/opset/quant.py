"""QuantizeLinear / DequantizeLinear of opsets 19-21 and the 4-bit element
types (tests/realmodels/run.py --cases tests/opset/quant.py): int4/uint4
weights (packed two a byte, the first element in the low nibble, odd element
counts ending in half a byte) as initializers and Constants, blocked
quantization (block_size along an axis, a last partial block), per-axis and
per-tensor scales, output_dtype, int16/uint16, float8 Q/DQ with saturate,
float16 scales, Cast-21 to and from int4, and the reshaping ops on packed
data. Debian's onnx 1.12 has no INT4 (22) or UINT4 (21): tensors are written
with raw enum values and raw_data bytes (or int32_data, one packed byte per
number), and the checker is not run. References: ONNX Runtime 1.30, compared
by kiln verify (rtol 1e-3, atol 1e-5; integers exactly)."""
import copy

import numpy as np
from onnx import TensorProto, helper

from registry import Cases, const, f8_value, opset_model, vi, x_in

_cases = Cases()
RUN, ERRORS = _cases.RUN, _cases.ERRORS
run, error = _cases.run, _cases.error
F = TensorProto.FLOAT
UINT4, INT4 = 21, 22
E4M3FN, E5M2 = 17, 19

model = opset_model


def pack4(vals):
    """Packed 4-bit bytes of integer values (two's complement nibbles)."""
    v = [int(x) & 15 for x in np.asarray(vals).reshape(-1)]
    if len(v) % 2:
        v.append(0)
    return bytes(v[k] | (v[k + 1] << 4) for k in range(0, len(v), 2))


def t4(name, vals, signed=True, int32_data=False):
    """An int4 (or uint4) initializer of vals' shape."""
    vals = np.asarray(vals)
    t = TensorProto(name=name, data_type=INT4 if signed else UINT4, dims=list(vals.shape))
    if int32_data:
        t.int32_data.extend(pack4(vals))
    else:
        t.raw_data = pack4(vals)
    return t


def rand4(shape, signed=True, seed=0):
    r = np.random.default_rng(seed)
    return r.integers(-8, 8, shape) if signed else r.integers(0, 16, shape)


def scales(shape, seed=1):
    r = np.random.default_rng(seed)
    return (r.uniform(0.02, 0.2, shape)).astype(np.float32)


# ---- DequantizeLinear-21 on 4-bit weights ---------------------------------

@run
def dq_int4_weight_blocked_matmul_21():
    """A 4-bit weight [7, 5] (35 elements: a final half byte), blocked along
    axis 0 by 3 (blocks 3, 3 and a partial 1), an int4 zero point [3, 5] (odd
    too), then MatMul: the shape of ONNX Runtime's blocked int4 QDQ models."""
    w, zp = rand4((7, 5)), rand4((3, 5), seed=2)
    nodes = [helper.make_node("DequantizeLinear", ["w", "s", "z"], ["wf"], axis=0, block_size=3),
             helper.make_node("MatMul", ["x", "wf"], ["y"])]
    m = model(nodes, [vi("x", ["N", 7])], [vi("y", None)],
              [t4("w", w), const("s", scales((3, 5))), t4("z", zp)], opset=21)
    return m, {"x": x_in((3, 7))}


@run
def dq_uint4_blocked_last_axis_21():
    """uint4 weight [2, 3, 11] blocked along the last axis by 4 (4, 4, 3),
    no zero point; and the same weight from int32_data."""
    w = rand4((2, 3, 11), signed=False, seed=3)
    nodes = [helper.make_node("DequantizeLinear", ["w", "s"], ["a"], axis=-1, block_size=4),
             helper.make_node("DequantizeLinear", ["w32", "s"], ["b"], axis=2, block_size=4),
             helper.make_node("Add", ["x", "a"], ["y0"]),
             helper.make_node("Sub", ["y0", "b"], ["y1"]),
             helper.make_node("Add", ["a", "x"], ["y"])]
    m = model(nodes, [vi("x", ["N", 3, 11])], [vi("y", None), vi("y1", None)],
              [t4("w", w, signed=False), t4("w32", w, signed=False, int32_data=True),
               const("s", scales((2, 3, 3), seed=4))], opset=21)
    return m, {"x": x_in((2, 3, 11))}


@run
def dq_int4_per_axis_and_per_tensor_21():
    """int4 [5, 3] per axis 1 with a zero point [3] (1.5 bytes), and per
    tensor with a scalar zero point: every value -8..7 appears."""
    w = np.arange(15).reshape(5, 3) - 8
    nodes = [helper.make_node("DequantizeLinear", ["w", "s", "z"], ["a"], axis=1),
             helper.make_node("DequantizeLinear", ["w", "s1", "z1"], ["b"]),
             helper.make_node("Add", ["a", "x"], ["ya"]),
             helper.make_node("Mul", ["b", "x"], ["yb"])]
    m = model(nodes, [vi("x", ["N", 5, 3])], [vi("ya", None), vi("yb", None)],
              [t4("w", w), const("s", scales(3)), t4("z", [-1, 3, 7]),
               const("s1", np.array(0.25, np.float32)), t4("z1", np.array(-3))], opset=21)
    return m, {"x": x_in((2, 5, 3))}


@run
def int4_weight_reshaped_and_constant_21():
    """An int4 weight through Unsqueeze, Squeeze, Reshape, Flatten and Identity before
    DequantizeLinear (views of the packed bytes), and an int4 Constant node
    (odd count) dequantized per tensor. ONNX Runtime 1.30 has no 4-bit
    Reshape: its reference model holds the same bytes as [6, 5]."""
    w = rand4((3, 10), seed=5)
    c = t4("cv", [-8, 7, -1, 3, 0])
    nodes = [helper.make_node("Unsqueeze", ["w", "ax0"], ["w1"]),
             helper.make_node("Squeeze", ["w1", "ax0"], ["w2"]),
             helper.make_node("Reshape", ["w2", "shape3"], ["w3"]),
             helper.make_node("Flatten", ["w3"], ["w4"], axis=2),
             helper.make_node("Identity", ["w4"], ["w5"]),
             helper.make_node("Reshape", ["w5", "shape"], ["w6"]),
             helper.make_node("DequantizeLinear", ["w6", "s"], ["wf"], axis=1),
             helper.make_node("MatMul", ["x", "wf"], ["y"]),
             helper.make_node("Constant", [], ["k"], value=c),
             helper.make_node("DequantizeLinear", ["k", "s1"], ["kf"]),
             helper.make_node("Add", ["y", "kf"], ["yk"])]
    inits = [const("s", scales(5)), const("s1", np.array(0.5, np.float32))]
    m = model(nodes, [vi("x", ["N", 6])], [vi("yk", None)],
              [t4("w", w), const("ax0", np.array([0], np.int64)),
               const("shape3", np.array([2, 3, 5], np.int64)),
               const("shape", np.array([6, 5], np.int64))] + inits, opset=21)
    ref = model(nodes[6:],
                [vi("x", ["N", 6])], [vi("yk", None)], [t4("w6", w.reshape(6, 5))] + inits,
                opset=21)
    return m, {"x": x_in((4, 6))}, ref


@run
def transpose_int4_21():
    """Transpose of an int4 weight [3, 5, 7] (folded at compile time, nibble
    by nibble) and of a uint4 value made at run time (odd sizes: 105 and
    N*3*5 elements)."""
    nodes = [helper.make_node("Transpose", ["w"], ["wt"], perm=[2, 0, 1]),
             helper.make_node("DequantizeLinear", ["wt", "s"], ["wf"], axis=0),
             helper.make_node("QuantizeLinear", ["x", "s1"], ["q"], output_dtype=UINT4),
             helper.make_node("Transpose", ["q"], ["qt"], perm=[1, 2, 0]),
             helper.make_node("Cast", ["qt"], ["yq"], to=TensorProto.INT32),
             helper.make_node("Transpose", ["q"], ["qr"]),
             helper.make_node("DequantizeLinear", ["qr", "s1"], ["yr"])]
    m = model(nodes, [vi("x", ["N", 3, 5])],
              [vi("wf", None), vi("yq", None, TensorProto.INT32), vi("yr", None)],
              [t4("w", rand4((3, 5, 7), seed=15)), const("s", scales(7, seed=16)),
               const("s1", np.array(0.2, np.float32))], opset=21)
    return m, {"x": np.abs(x_in((3, 3, 5), 17))}


# ---- QuantizeLinear-21 to 4 bits, and back --------------------------------

@run
def q_int4_blocked_roundtrip_21():
    """x [N, 5, 6] quantized to int4 blocked along axis 1 by 2 (2, 2, 1) with
    an int4 zero point, values beyond the range clamped; the int4 result
    dequantized, and cast to int8 (Cast-21) so it is compared exactly."""
    zp = rand4((2, 3, 6), seed=6)
    s = scales((2, 3, 6), seed=7)
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], axis=1, block_size=2),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], axis=1, block_size=2),
             helper.make_node("Cast", ["q"], ["qi"], to=TensorProto.INT8)]
    m = model(nodes, [vi("x", [2, 5, 6])], [vi("y", None), vi("qi", None, TensorProto.INT8)],
              [const("s", s), t4("z", zp)], opset=21)
    return m, {"x": x_in((2, 5, 6), 8) * 0.6}


@run
def q_uint4_output_dtype_per_axis_21():
    """output_dtype = UINT4 without a zero point, per axis 0 of [3, 7] (21
    elements: half a byte left), odd quotients at .5 round to even."""
    s = np.array([0.5, 0.25, 1.0], np.float32)
    nodes = [helper.make_node("QuantizeLinear", ["x", "s"], ["q"], axis=0, output_dtype=UINT4),
             helper.make_node("Cast", ["q"], ["qi"], to=TensorProto.INT32),
             helper.make_node("DequantizeLinear", ["q", "s"], ["y"], axis=0)]
    m = model(nodes, [vi("x", [3, 7])], [vi("qi", None, TensorProto.INT32), vi("y", None)],
              [const("s", s)], opset=21)
    x = np.array([[0.25, 0.75, 1.25, -0.5, 3.0, 7.74, 100],
                  [0.125, 0.375, 1.0, 3.875, 3.625, -2, 2.5],
                  [0.5, 1.5, 2.5, 14.5, 15.5, 16, 7.49]], np.float32)
    return m, {"x": x}


@run
def cast_int4_both_ways_21():
    """Cast-21 from float32 and int32 into int4 and uint4 as ONNX Runtime casts
    (rounded half away from zero, then the low four bits: it wraps), and
    from both into float32 and int8 (N*7 elements: odd batches
    end in half a byte)."""
    nodes = [helper.make_node("Cast", ["x"], ["a"], to=INT4),
             helper.make_node("Cast", ["a"], ["ya"], to=F),
             helper.make_node("Cast", ["x"], ["b"], to=UINT4),
             helper.make_node("Cast", ["b"], ["yb"], to=TensorProto.INT8),
             helper.make_node("Cast", ["i"], ["c"], to=INT4),
             helper.make_node("Cast", ["c"], ["yc"], to=TensorProto.INT32)]
    m = model(nodes, [vi("x", ["N", 7]), vi("i", ["N", 7], TensorProto.INT32)],
              [vi("ya", None), vi("yb", None, TensorProto.INT8),
               vi("yc", None, TensorProto.INT32)], opset=21)
    x = np.array([[-9, -8.5, -7.5, -0.5, 0.5, 1.5, 2.5], [6.5, 7.5, 8, 14.5, 15.5, 16, -0.49],
                  [3.2, -3.7, 0, 1, 2, 100, -100]], np.float32)
    i = np.array([[-9, -8, -1, 0, 7, 8, 15], [16, -100, 100, 3, -3, 5, 6],
                  [1, 2, 3, 4, 5, 6, 7]], np.int32)
    return m, {"x": x, "i": i}


@run
def dq_int4_weight_casts_and_int16_21():
    """Cast of an int4 weight to float32 (the weight stays packed), and
    QuantizeLinear / DequantizeLinear to int16 and uint16 (opset 21)."""
    w = rand4((3, 5), seed=9)
    nodes = [helper.make_node("Cast", ["w"], ["wf"], to=F),
             helper.make_node("Add", ["x", "wf"], ["y"]),
             helper.make_node("QuantizeLinear", ["x", "s", "z16"], ["q16"]),
             helper.make_node("DequantizeLinear", ["q16", "s", "z16"], ["y16"]),
             helper.make_node("QuantizeLinear", ["x", "s"], ["qu"], output_dtype=TensorProto.UINT16),
             helper.make_node("Cast", ["qu"], ["yu"], to=TensorProto.INT32)]
    m = model(nodes, [vi("x", ["N", 3, 5])],
              [vi("y", None), vi("y16", None), vi("yu", None, TensorProto.INT32)],
              [t4("w", w), const("s", np.array(0.001, np.float32)),
               const("z16", np.array(-300, np.int16))], opset=21)
    return m, {"x": x_in((2, 3, 5), 10) * 20}


# ---- float8 QuantizeLinear / DequantizeLinear (opset 19) --------------------

@run
def qdq_float8_saturate_19():
    """QuantizeLinear to float8 E4M3FN (saturate 1, zero point 0) and E5M2
    (saturate 0), per tensor and per axis, and DequantizeLinear back; scaled
    so that one float8 step exceeds the tolerance."""
    z8 = TensorProto(name="z", data_type=E4M3FN, dims=[], raw_data=bytes([0]))
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"]),
             helper.make_node("QuantizeLinear", ["x", "sa", "z5"], ["q5"], axis=1, saturate=0),
             helper.make_node("DequantizeLinear", ["q5", "sa", "z5"], ["y5"], axis=1)]
    z5 = TensorProto(name="z5", data_type=E5M2, dims=[4], raw_data=bytes(4))
    m = model(nodes, [vi("x", ["N", 4, 3])], [vi("y", None), vi("y5", None)],
              [const("s", np.array(0.01, np.float32)), z8, z5,
               const("sa", np.array([0.01, 0.1, 1, 2], np.float32))], opset=19)
    x = x_in((3, 4, 3), 11) * np.array([1, 5, 40, 200], np.float32)[None, :, None]
    return m, {"x": x.astype(np.float32)}


@run
def dq_float16_scale_21():
    """A float16 scale makes DequantizeLinear's output float16 (cast back in
    the graph), from an int4 blocked weight; QuantizeLinear of float16 x."""
    w = rand4((4, 6), seed=12)
    s16 = scales((4, 2), seed=13).astype(np.float16)
    nodes = [helper.make_node("DequantizeLinear", ["w", "s"], ["wh"], axis=1, block_size=3),
             helper.make_node("Cast", ["wh"], ["wf"], to=F),
             helper.make_node("Add", ["x", "wf"], ["y"]),
             helper.make_node("Cast", ["x"], ["xh"], to=TensorProto.FLOAT16),
             helper.make_node("QuantizeLinear", ["xh", "sh"], ["q"],
                              output_dtype=TensorProto.INT8),
             helper.make_node("Cast", ["q"], ["yq"], to=TensorProto.INT32)]
    m = model(nodes, [vi("x", ["N", 4, 6])], [vi("y", None), vi("yq", None, TensorProto.INT32)],
              [t4("w", w), const("s", s16), const("sh", np.array(0.05, np.float16))], opset=21)
    return m, {"x": x_in((2, 4, 6), 14)}


# ---- float8 and 4-bit graph inputs and outputs -------------------------------
# kiln takes and gives them as ONNX stores them (float8 bit patterns, 4-bit
# packed two a byte, low nibble first). ONNX Runtime's node binding has no
# float8 or 4-bit tensors, so its reference model takes and returns a wide
# type (float32; int8/uint8 for 4-bit) and Casts at the edges (exact), and
# run.py encodes the data as the model under test declares it.

WIDE = {17: F, 18: F, 19: F, 20: F, UINT4: TensorProto.UINT8, INT4: TensorProto.INT8}


def all_nodes(g):
    """The nodes of g and of every subgraph in it."""
    for n in g.node:
        yield n
        for at in n.attribute:
            for sub in ([at.g] if at.HasField("g") else []) + list(at.graphs):
                yield from all_nodes(sub)


def widened(m):
    """m with each float8 / 4-bit graph input and output in its wide type,
    Cast to and from the narrow one inside the graph."""
    ref = copy.deepcopy(m)
    g = ref.graph
    pre, post = [], []
    for v in g.input:
        code = v.type.tensor_type.elem_type
        if code in WIDE:
            for n in all_nodes(g):   # subgraphs name outer values too
                n.input[:] = [x + "__n" if x == v.name else x for x in n.input]
            # saturate 0: an infinity stays one (every value is exact)
            sat = {"saturate": 0} if code < 21 else {}
            pre.append(helper.make_node("Cast", [v.name], [v.name + "__n"], to=code, **sat))
            v.type.tensor_type.elem_type = WIDE[code]
    for v in g.output:
        code = v.type.tensor_type.elem_type
        if code in WIDE:
            for n in g.node:
                n.output[:] = [x + "__n" if x == v.name else x for x in n.output]
            post.append(helper.make_node("Cast", [v.name + "__n"], [v.name], to=WIDE[code]))
            v.type.tensor_type.elem_type = WIDE[code]
    nodes = pre + list(g.node) + post
    del g.node[:]
    g.node.extend(nodes)
    return ref


def f8_values(code, n, seed):
    """n float8 values of format code: random bit patterns (NaN, -0,
    subnormals and the largest included) decoded."""
    r = np.random.default_rng(seed)
    bits = np.concatenate([[0x00, 0x80, 0x01, 0x7f, 0xff, 0x7e, 0x7c], r.integers(0, 256, n)])
    return np.array([f8_value(int(b), code) for b in bits[:n]], np.float32)


@run
def io_int4_uint4_21():
    """int4 q and uint4 u [N, 7] in (N*7 elements: odd batches end in half a
    byte): q dequantized with an int4 zero point and added to x, requantized
    to a uint4 output with a uint4 zero point; q Cast to int32, u to float32;
    a uint4 output straight from Cast."""
    nodes = [helper.make_node("DequantizeLinear", ["q", "s", "zq"], ["qf"]),
             helper.make_node("Add", ["qf", "x"], ["y"]),
             helper.make_node("QuantizeLinear", ["y", "s2", "zu"], ["yq"]),
             helper.make_node("Cast", ["q"], ["qi"], to=TensorProto.INT32),
             helper.make_node("Cast", ["u"], ["uf"], to=F),
             helper.make_node("Cast", ["qi"], ["uq"], to=UINT4)]
    m = model(nodes, [vi("q", ["N", 7], INT4), vi("x", ["N", 7]), vi("u", ["N", 7], UINT4)],
              [vi("y", None), vi("yq", ["N", 7], UINT4), vi("qi", None, TensorProto.INT32),
               vi("uf", None), vi("uq", ["N", 7], UINT4)],
              [const("s", np.array(0.5, np.float32)), t4("zq", np.array(-2)),
               const("s2", np.array(0.75, np.float32)), t4("zu", np.array(3), signed=False)],
              opset=21)
    q = rand4((3, 7), seed=30).astype(np.int8)
    u = rand4((3, 7), signed=False, seed=31).astype(np.uint8)
    return m, {"q": q, "x": x_in((3, 7), 32) * 3, "u": u}, widened(m)


@run
def io_float8_19():
    """Each float8 format as a graph input [N, 5] (NaN, -0, subnormals, the
    largest value), Cast to float32; and x Cast to each format as a graph
    output, saturating and (E5M2) not."""
    nodes, ins, outs, data = [], [vi("x", ["N", 5])], [], {}
    x = np.array([[0.1, -3.3, 500, -1e5, 2e-3], [448, 464, -57344, 6e4, 1e-7],
                  [float("nan"), -0.0, 0.0, 17.5, -240.2]], np.float32)
    data["x"] = x
    for code, tag in [(17, "e4m3fn"), (18, "e4m3fnuz"), (19, "e5m2"), (20, "e5m2fnuz")]:
        ins.append(vi("f" + tag, ["N", 5], code))
        data["f" + tag] = f8_values(code, 15, code).reshape(3, 5)
        nodes.append(helper.make_node("Cast", ["f" + tag], ["y" + tag], to=F))
        nodes.append(helper.make_node("Cast", ["x"], ["c" + tag], to=code))
        outs += [vi("y" + tag, None), vi("c" + tag, ["N", 5], code)]
    nodes.append(helper.make_node("Cast", ["x"], ["c5nosat"], to=19, saturate=0))
    outs.append(vi("c5nosat", ["N", 5], 19))
    m = model(nodes, ins, outs, opset=19)
    return m, data, widened(m)


@run
def io_float8_qdq_19():
    """QuantizeLinear to a float8 E4M3FN graph output, and DequantizeLinear of
    an E5M2 graph input per axis."""
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
             helper.make_node("DequantizeLinear", ["f", "sa"], ["y"], axis=1)]
    z8 = TensorProto(name="z", data_type=E4M3FN, dims=[], raw_data=bytes([0]))
    m = model(nodes, [vi("x", ["N", 4]), vi("f", ["N", 4], E5M2)],
              [vi("q", ["N", 4], E4M3FN), vi("y", None)],
              [const("s", np.array(0.05, np.float32)), z8,
               const("sa", np.array([0.5, 2, 0.01, 1], np.float32))], opset=19)
    return m, {"x": x_in((3, 4), 33) * 10, "f": f8_values(19, 12, 34).reshape(3, 4)}, widened(m)


def f8_body(name, nodes, ins, outs):
    return helper.make_graph(nodes, name, ins, outs)


@run
def control_flow_float8_21():
    """If, Loop and Scan carrying float8 values (ONNX Runtime 1.30 has them
    for float8, not for 4-bit): an If on a run-time condition choosing x
    (E4M3FN, a graph input) or its double; a Loop of 3 steps adding 1.5 to
    an E5M2 state, its per-step values stacked; a Scan summing the rows of an
    E4M3FNUZ input into a state and passing each row on. Outputs float8."""
    dbl = [helper.make_node("Cast", ["x"], ["xf"], to=F),
           helper.make_node("Add", ["xf", "xf"], ["x2"]),
           helper.make_node("Cast", ["x2"], ["o"], to=E4M3FN)]
    then_ = f8_body("then", [helper.make_node("Identity", ["x"], ["o"])], [],
                    [vi("o", None, E4M3FN)])
    else_ = f8_body("else", dbl, [], [vi("o", None, E4M3FN)])
    step = f8_body("step", [helper.make_node("Identity", ["cond"], ["co"]),
                            helper.make_node("Cast", ["v"], ["vf"], to=F),
                            helper.make_node("Add", ["vf", "h"], ["vs"]),
                            helper.make_node("Cast", ["vs"], ["vo"], to=E5M2),
                            helper.make_node("Identity", ["vo"], ["each"])],
                   [vi("i", [], TensorProto.INT64), vi("cond", [], TensorProto.BOOL),
                    vi("v", None, E5M2)],
                   [vi("co", [], TensorProto.BOOL), vi("vo", None, E5M2),
                    vi("each", None, E5M2)])
    row = f8_body("row", [helper.make_node("Cast", ["st"], ["sf"], to=F),
                          helper.make_node("Cast", ["e"], ["ef"], to=F),
                          helper.make_node("Add", ["sf", "ef"], ["ss"]),
                          helper.make_node("Cast", ["ss"], ["so"], to=18),
                          helper.make_node("Identity", ["e"], ["eo"])],
                  [vi("st", None, 18), vi("e", None, 18)],
                  [vi("so", None, 18), vi("eo", None, 18)])
    nodes = [helper.make_node("If", ["c"], ["yi"], then_branch=then_, else_branch=else_),
             helper.make_node("Loop", ["m", "", "v0"], ["yl", "yls"], body=step),
             helper.make_node("Scan", ["s0", "r"], ["ys", "ysr"], body=row, num_scan_inputs=1)]
    m = model(nodes, [vi("x", ["N", 5], E4M3FN), vi("c", [], TensorProto.BOOL),
                      vi("v0", [4], E5M2), vi("s0", [3], 18), vi("r", [4, 3], 18)],
              [vi("yi", ["N", 5], E4M3FN), vi("yl", [4], E5M2), vi("yls", [3, 4], E5M2),
               vi("ys", [3], 18), vi("ysr", [4, 3], 18)],
              [const("h", np.array(1.5, np.float32)), const("m", np.array(3, np.int64))],
              opset=21)
    return m, {"x": f8_values(17, 10, 40).reshape(2, 5), "c": np.array(False),
               "v0": np.array([-2, 0.25, 6, 57344], np.float32),
               "s0": np.array([0.5, -1, 3], np.float32),
               "r": f8_values(18, 12, 41).reshape(4, 3)}, widened(m)


# ---- errors -------------------------------------------------------------------

@error("compile: initializer \"w\" has 3 bytes of raw_data but its shape and type need 4")
def int4_raw_data_too_short():
    """[7] int4 needs 4 bytes."""
    t = TensorProto(name="w", data_type=INT4, dims=[7], raw_data=bytes(3))
    nodes = [helper.make_node("DequantizeLinear", ["w", "s"], ["y"])]
    return model(nodes, [], [vi("y", None)], [t, const("s", np.array(1, np.float32))], opset=21)


@error("compile: initializer \"w\" has 5 bytes of raw_data but its shape and type need 4")
def int4_raw_data_too_long():
    t = TensorProto(name="w", data_type=UINT4, dims=[2, 4], raw_data=bytes(5))
    nodes = [helper.make_node("DequantizeLinear", ["w", "s"], ["y"])]
    return model(nodes, [], [vi("y", None)], [t, const("s", np.array(1, np.float32))], opset=21)


@error("compile: initializer \"w\" has 5 values in int32_data but its 5 int4 elements pack into 3 "
       "bytes")
def int4_int32_data_unpacked():
    t = TensorProto(name="w", data_type=INT4, dims=[5], int32_data=[1, 2, 3, 4, 5])
    nodes = [helper.make_node("DequantizeLinear", ["w", "s"], ["y"])]
    return model(nodes, [], [vi("y", None)], [t, const("s", np.array(1, np.float32))], opset=21)


@error("compile: (DequantizeLinear, ai.onnx opset 21): the scale [2, 5] does not fit x [7, 5] "
       "blocked along axis 0 by block_size 3 (it must be x's shape with 3 there)")
def blocked_scale_wrong_shape():
    nodes = [helper.make_node("DequantizeLinear", ["w", "s"], ["wf"], axis=0, block_size=3),
             helper.make_node("MatMul", ["x", "wf"], ["y"])]
    return model(nodes, [vi("x", ["N", 7])], [vi("y", None)],
                 [t4("w", rand4((7, 5))), const("s", scales((2, 5)))], opset=21)


@error("compile: (Pad, ai.onnx opset 21): input w is int4; 4-bit values are only "
       "converted (Cast, CastLike, QuantizeLinear, DequantizeLinear) or moved")
def pad_int4_refused():
    """ONNX Runtime 1.30 has no 4-bit Pad either."""
    nodes = [helper.make_node("Pad", ["w", "p"], ["wp"]),
             helper.make_node("DequantizeLinear", ["wp", "s"], ["y"])]
    return model(nodes, [vi("x", ["N", 1])], [vi("y", None)],
                 [t4("w", rand4((3, 5))), const("p", np.array([1, 0, 0, 1], np.int64)),
                  const("s", np.array(1, np.float32))], opset=21)


@error("compile: attribute \"value\" of node \"kc\" (Constant) has 2 bytes of raw_data but its "
       "shape and type need 3")
def int4_constant_truncated():
    """5 int4 elements need 3 bytes (an odd count: the last byte half used)."""
    c = TensorProto(name="cv", data_type=INT4, dims=[5], raw_data=bytes(2))
    nodes = [helper.make_node("Constant", [], ["k"], name="kc", value=c),
             helper.make_node("DequantizeLinear", ["k", "s"], ["y"])]
    return model(nodes, [], [vi("y", None)], [const("s", np.array(1, np.float32))], opset=21)


@error("compile: node 0 \"r\" (Relu, ai.onnx opset 21): input q is int4; 4-bit values are "
       "only converted (Cast, CastLike, QuantizeLinear, DequantizeLinear) or moved")
def int4_graph_input_to_relu_refused():
    """A 4-bit graph input is taken, but no arithmetic on packed nibbles."""
    nodes = [helper.make_node("Relu", ["q"], ["y"], name="r")]
    return model(nodes, [vi("q", ["N", 3], INT4)], [vi("y", None, INT4)], opset=21)


@error("compile: node 0 \"choose\" (If, ai.onnx opset 21): output q is int4; 4-bit values are "
       "only converted (Cast, CastLike, QuantizeLinear, DequantizeLinear) or moved")
def if_int4_refused():
    """ONNX Runtime 1.30 carries no 4-bit value through If, Loop or Scan."""
    br = [helper.make_graph([helper.make_node("Identity", ["w"], ["o"])], b, [],
                            [vi("o", None, INT4)]) for b in ("then", "else")]
    nodes = [helper.make_node("If", ["c"], ["q"], name="choose", then_branch=br[0],
                              else_branch=br[1]),
             helper.make_node("DequantizeLinear", ["q", "s"], ["y"])]
    return model(nodes, [vi("c", [], TensorProto.BOOL)], [vi("y", None)],
                 [t4("w", rand4((3, 5))), const("s", np.array(1, np.float32))], opset=21)


@error("compile: (QuantizeLinear, ai.onnx opset 19): the float8 zero point \"z\" must be 0, "
       "element 0 is 0x38")
def float8_zero_point_nonzero_refused():
    z = TensorProto(name="z", data_type=E4M3FN, dims=[], raw_data=bytes([0x38]))
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
             helper.make_node("Cast", ["q"], ["y"], to=F)]
    return model(nodes, [vi("x", ["N", 4])], [vi("y", None)],
                 [const("s", np.array(1, np.float32)), z], opset=19)


@error('compile: node 0 "" (ImageDecoder, ai.onnx opset 20): decodes image files (JPEG, PNG, '
       '...); kiln compiles numeric tensors only')
def image_decoder_refused():
    nodes = [helper.make_node("ImageDecoder", ["x"], ["y"])]
    return model(nodes, [vi("x", ["N"], TensorProto.UINT8)], [vi("y", None, TensorProto.UINT8)],
                 opset=20)


@error("compile: (DequantizeLinear, ai.onnx opset 21): the scale must be float32 or float16, not "
       "bfloat16")
def bfloat16_scale_refused():
    """ONNX Runtime 1.30 has no bfloat16 DequantizeLinear to compare with."""
    s = TensorProto(name="s", data_type=TensorProto.BFLOAT16, dims=[], raw_data=bytes([0x80, 0x3e]))
    nodes = [helper.make_node("DequantizeLinear", ["w", "s"], ["wh"]),
             helper.make_node("Cast", ["wh"], ["y"], to=F)]
    return model(nodes, [vi("x", ["N", 1])], [vi("y", None)], [t4("w", rand4((3, 5))), s],
                 opset=21)
