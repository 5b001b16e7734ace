# Integer and quantized op cases beyond the ONNX 1.12 data: every int8/uint8
# pairing, zero points and scales per tensor/row/column/channel, batched
# broadcasting, 1-D to 3-D ConvInteger with groups, strides, dilations and
# uneven pads, depthwise QLinearConv with bias, DynamicQuantizeLinear on random
# and all-zero input; exact numpy references.
#   usage: gen_quant.py OUTDIR
import numpy as np, onnx, os, shutil
from onnx import helper, numpy_helper, TensorProto as TP
rng = np.random.default_rng(7)
import sys
OUT = sys.argv[1]
def tt(a): return {np.dtype('uint8'): TP.UINT8, np.dtype('int8'): TP.INT8, np.dtype('int32'): TP.INT32, np.dtype('float32'): TP.FLOAT}[a.dtype]
def save(name, op, inputs, outputs, attrs={}, opset=10):
    d = os.path.join(OUT, name); shutil.rmtree(d, ignore_errors=True); os.makedirs(d + '/test_data_set_0')
    ins = [helper.make_tensor_value_info(k, tt(v), v.shape) for k, v in inputs]
    outs = [helper.make_tensor_value_info(k, tt(v), v.shape) for k, v in outputs]
    node = helper.make_node(op, [k for k, _ in inputs], [k for k, _ in outputs], **attrs)
    g = helper.make_graph([node], name, ins, outs)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid('', opset)])
    onnx.save(m, d + '/model.onnx')
    for i, (k, v) in enumerate(inputs):
        open(f'{d}/test_data_set_0/input_{i}.pb', 'wb').write(numpy_helper.from_array(v, k).SerializeToString())
    for i, (k, v) in enumerate(outputs):
        open(f'{d}/test_data_set_0/output_{i}.pb', 'wb').write(numpy_helper.from_array(v, k).SerializeToString())
def q(shape, dt):
    info = np.iinfo(dt); return rng.integers(info.min, info.max + 1, size=shape).astype(dt)
def wrap32(x): return ((x.astype(np.int64) + 2**31) % 2**32 - 2**31).astype(np.int32)
def requant(acc, mult, zy, dt):
    v = np.rint(acc.astype(np.float32) * mult.astype(np.float32)).astype(np.float32) + np.float32(zy)
    info = np.iinfo(dt); return np.clip(v, info.min, info.max).astype(dt)

# MatMulInteger 2-D per-row / per-column
for adt, bdt in [(np.int8, np.uint8), (np.uint8, np.int8), (np.int8, np.int8)]:
    A = q((4, 5), adt); B = q((5, 3), bdt); za = q((4,), adt); zb = q((3,), bdt)
    Y = (A.astype(np.int64) - za[:, None]) @ (B.astype(np.int64) - zb[None, :])
    save(f'mmi_2d_{adt.__name__}_{bdt.__name__}', 'MatMulInteger', [('A', A), ('B', B), ('a_zero_point', za), ('b_zero_point', zb)], [('Y', wrap32(Y))])
# MatMulInteger batched broadcasting, N-D zero points
A = q((2, 3, 4, 5), np.int8); B = q((3, 5, 6), np.uint8); za = q((2, 3, 4, 1), np.int8); zb = q((3, 1, 6), np.uint8)
Y = np.matmul(A.astype(np.int64) - za, B.astype(np.int64) - zb)
save('mmi_batched', 'MatMulInteger', [('A', A), ('B', B), ('a_zero_point', za), ('b_zero_point', zb)], [('Y', wrap32(Y))])
# no zero points, 1-D A
A = q((5,), np.uint8); B = q((2, 5, 3), np.uint8)
save('mmi_vec', 'MatMulInteger', [('A', A), ('B', B)], [('Y', wrap32(np.matmul(A.astype(np.int64), B.astype(np.int64))))])
# QLinearMatMul, per-row/col, s8 out, batched broadcast
for ydt in [np.int8, np.uint8]:
    A = q((2, 3, 4), np.int8); B = q((4, 5), np.uint8)
    za = q((3,), np.int8); sa = rng.uniform(0.01, 0.05, (3,)).astype(np.float32)
    zb = q((5,), np.uint8); sb = rng.uniform(0.01, 0.05, (5,)).astype(np.float32)
    sy = np.array(0.3, np.float32); zy = q((), ydt)
    acc = np.matmul(A.astype(np.int64) - za[:, None], B.astype(np.int64) - zb[None, :])
    mult = (sa[:, None] * sb[None, :]) / sy
    Y = requant(wrap32(acc), mult, zy, ydt)
    save(f'qlmm_{ydt.__name__}', 'QLinearMatMul', [('a', A), ('a_scale', sa), ('a_zero_point', za), ('b', B), ('b_scale', sb), ('b_zero_point', zb), ('y_scale', sy), ('y_zero_point', zy)], [('y', Y)])
# batched per-row params [D, M, 1]
A = q((2, 3, 4), np.uint8); B = q((2, 4, 5), np.int8)
za = q((2, 3, 1), np.uint8); sa = rng.uniform(0.01, 0.05, (2, 3, 1)).astype(np.float32)
zb = q((2, 1, 5), np.int8); sb = rng.uniform(0.01, 0.05, (2, 1, 5)).astype(np.float32)
sy = np.array(0.2, np.float32); zy = q((), np.uint8)
acc = np.matmul(A.astype(np.int64) - za, B.astype(np.int64) - zb)
Y = requant(wrap32(acc), (sa * sb) / sy, zy, np.uint8)
save('qlmm_batched_params', 'QLinearMatMul', [('a', A), ('a_scale', sa), ('a_zero_point', za), ('b', B), ('b_scale', sb), ('b_zero_point', zb), ('y_scale', sy), ('y_zero_point', zy)], [('y', Y)])

def conv_ref(x, w, zx, zw, group, strides, dil, pb, pe):
    N, C = x.shape[:2]; M = w.shape[0]; ns = x.ndim - 2; cg = C // group; mg = M // group
    xs = x.astype(np.int64) - zx
    xs = np.pad(xs, [(0, 0), (0, 0)] + [(pb[i], pe[i]) for i in range(ns)])
    ws = w.astype(np.int64) - (zw.reshape((M,) + (1,) * (ns + 1)) if zw.size > 1 else zw)
    k = w.shape[2:]
    out = [(xs.shape[2 + i] - ((k[i] - 1) * dil[i] + 1)) // strides[i] + 1 for i in range(ns)]
    y = np.zeros((N, M) + tuple(out), np.int64)
    for idx in np.ndindex(*out):
        sl = tuple(slice(idx[i] * strides[i], idx[i] * strides[i] + (k[i] - 1) * dil[i] + 1, dil[i]) for i in range(ns))
        for m in range(M):
            g = m // mg
            y[(slice(None), m) + idx] = (xs[(slice(None), slice(g * cg, (g + 1) * cg)) + sl] * ws[m]).reshape(N, -1).sum(1)
    return y
# ConvInteger 2-D, group 2, strides, dilations, pads, per-channel zw, s8 x u8 w
x = q((2, 4, 7, 6), np.int8); w = q((6, 2, 3, 2), np.uint8); zx = q((), np.int8); zw = q((6,), np.uint8)
y = conv_ref(x, w, zx, zw, 2, [2, 1], [1, 2], [1, 0], [2, 1])
save('convint_2d', 'ConvInteger', [('x', x), ('w', w), ('x_zero_point', zx), ('w_zero_point', zw)], [('y', wrap32(y))], dict(group=2, strides=[2, 1], dilations=[1, 2], pads=[1, 0, 2, 1]))
# 1-D, SAME_LOWER, no zero points
x = q((1, 3, 9), np.uint8); w = q((2, 3, 4), np.int8)
# SAME_LOWER: out = ceil(9/2)=5, total = (5-1)*2+4-9 = 3, begin = 2, end = 1
y = conv_ref(x, w, 0, np.array(0), 1, [2], [1], [2], [1])
save('convint_1d_same', 'ConvInteger', [('x', x), ('w', w)], [('y', wrap32(y))], dict(strides=[2], auto_pad='SAME_LOWER'))
# 3-D
x = q((1, 2, 4, 5, 3), np.int8); w = q((3, 2, 2, 3, 2), np.int8); zx = q((), np.int8); zw = q((), np.int8)
y = conv_ref(x, w, zx, zw, 1, [1, 2, 1], [1, 1, 2], [0, 1, 1], [1, 1, 0])
save('convint_3d', 'ConvInteger', [('x', x), ('w', w), ('x_zero_point', zx), ('w_zero_point', zw)], [('y', wrap32(y))], dict(strides=[1, 2, 1], dilations=[1, 1, 2], pads=[0, 1, 1, 1, 1, 0]))
# QLinearConv with bias, per-channel scales, u8 x, s8 w, s8 y
x = q((1, 4, 6, 6), np.uint8); w = q((4, 1, 3, 3), np.int8)
sx = np.array(0.02, np.float32); zx = q((), np.uint8)
sw = rng.uniform(0.005, 0.02, (4,)).astype(np.float32); zw = q((4,), np.int8)
sy = np.array(0.05, np.float32); zy = q((), np.int8)
B = rng.integers(-2000, 2000, (4,)).astype(np.int32)
acc = conv_ref(x, w, zx, zw, 4, [1, 1], [1, 1], [1, 1], [1, 1]) + B.reshape(1, 4, 1, 1)
Y = requant(wrap32(acc), (sx * sw / sy).reshape(1, 4, 1, 1), zy, np.int8)
save('qlconv_dw', 'QLinearConv', [('x', x), ('x_scale', sx), ('x_zero_point', zx), ('w', w), ('w_scale', sw), ('w_zero_point', zw), ('y_scale', sy), ('y_zero_point', zy), ('B', B)], [('y', Y)], dict(group=4, pads=[1, 1, 1, 1]))
# DynamicQuantizeLinear all zero and all positive
for nm, xv in [('dql_zero', np.zeros((2, 3), np.float32)), ('dql_rand', rng.normal(size=(50,)).astype(np.float32) * 3)]:
    mx = np.float32(max(0, xv.max())); mn = np.float32(min(0, xv.min()))
    sc = np.float32(np.float32(1.0 if mx == mn else mx - mn) / np.float32(255))
    zp = np.rint(np.clip(np.float32(0) - mn / sc, 0, 255)).astype(np.float32)
    yv = np.clip(np.rint(xv / sc) + zp, 0, 255).astype(np.uint8)
    save(nm, 'DynamicQuantizeLinear', [('x', xv)], [('y', yv), ('y_scale', np.array(sc, np.float32)), ('y_zero_point', np.array(zp, np.uint8))], opset=11)
print('ok')
