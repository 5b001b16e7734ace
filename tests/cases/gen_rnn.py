# RNN, GRU and LSTM cases the ONNX 1.12 data does not cover (bidirectional,
# reverse with sequence_lens, layout 1, every activation, clip, input_forget,
# opsets 1/3/7, batches large enough to run in chunks), in libonnx-testdata
# format, with a float64 numpy reference written from the spec.
#   usage: gen_rnn.py OUTDIR
import os, sys, numpy as np, onnx
from onnx import helper, TensorProto, numpy_helper

NEEDS = {'affine': (1, 1), 'leakyrelu': (1, 0), 'thresholdedrelu': (1, 0), 'scaledtanh': (1, 1),
         'hardsigmoid': (1, 1), 'elu': (1, 0)}
DEFAULTS = {'affine': (1.0, 0.0), 'leakyrelu': (0.01, 0), 'thresholdedrelu': (1.0, 0),
            'scaledtanh': (1.0, 1.0), 'hardsigmoid': (0.2, 0.5), 'elu': (1.0, 0)}

def f(name, x, a, b):
    n = name.lower()
    if n == 'relu': return np.maximum(x, 0)
    if n == 'tanh': return np.tanh(x)
    if n == 'sigmoid': return 1 / (1 + np.exp(-x))
    if n == 'affine': return a * x + b
    if n == 'leakyrelu': return np.where(x >= 0, x, a * x)
    if n == 'thresholdedrelu': return np.where(x >= a, x, 0)
    if n == 'scaledtanh': return a * np.tanh(b * x)
    if n == 'hardsigmoid': return np.clip(a * x + b, 0, 1)
    if n == 'elu': return np.where(x >= 0, x, a * (np.exp(x) - 1))
    if n == 'softsign': return x / (1 + np.abs(x))
    if n == 'softplus': return np.log1p(np.exp(x))
    raise ValueError(n)

def reference(op, X, W, R, B, lens, h0, c0, P, acts, alphas, betas, direction, layout, clip, lbr, input_forget):
    if layout:
        X = X.transpose(1, 0, 2)
        h0 = None if h0 is None else h0.transpose(1, 0, 2)
        c0 = None if c0 is None else c0.transpose(1, 0, 2)
    T, N, I = X.shape
    D = 2 if direction == 'bidirectional' else 1
    G = {'RNN': 1, 'GRU': 3, 'LSTM': 4}[op]
    H = R.shape[2]
    nact = {'RNN': 1, 'GRU': 2, 'LSTM': 3}[op]
    if acts is None:
        acts = {'RNN': ['Tanh'], 'GRU': ['Sigmoid', 'Tanh'], 'LSTM': ['Sigmoid', 'Tanh', 'Tanh']}[op]
    ai = bi = 0
    parsed = []
    for a in acts:
        n = a.lower(); na, nb = NEEDS.get(n, (0, 0)); da, db = DEFAULTS.get(n, (0, 0))
        al, be = da, db
        if na and alphas is not None and ai < len(alphas): al = alphas[ai]; ai += 1
        if nb and betas is not None and bi < len(betas): be = betas[bi]; bi += 1
        parsed.append((a, al, be))
    if len(parsed) == nact: parsed = parsed * D
    Y = np.zeros((T, D, N, H)); Yh = np.zeros((D, N, H)); Yc = np.zeros((D, N, H))
    if lens is None: lens = np.full(N, T)
    for d in range(D):
        rev = direction == 'reverse' or d == 1
        A = parsed[d * nact:(d + 1) * nact]
        def act(k, x):
            if clip is not None: x = np.clip(x, -clip, clip)
            return f(A[k][0], x, A[k][1], A[k][2])
        Wd, Rd = W[d].astype(np.float64), R[d].astype(np.float64)
        Wb = B[d][:G * H] if B is not None else np.zeros(G * H)
        Rb = B[d][G * H:] if B is not None else np.zeros(G * H)
        for b in range(N):
            h = h0[d, b].astype(np.float64) if h0 is not None else np.zeros(H)
            c = c0[d, b].astype(np.float64) if c0 is not None else np.zeros(H)
            L = int(lens[b])
            for s in range(L):
                t = L - 1 - s if rev else s
                x = X[t, b].astype(np.float64)
                if op == 'RNN':
                    h = act(0, Wd @ x + Rd @ h + Wb + Rb)
                elif op == 'GRU':
                    gx = Wd @ x + Wb
                    z = act(0, gx[:H] + Rd[:H] @ h + Rb[:H])
                    r = act(0, gx[H:2*H] + Rd[H:2*H] @ h + Rb[H:2*H])
                    if lbr:
                        hh = act(1, gx[2*H:] + r * (Rd[2*H:] @ h + Rb[2*H:]))
                    else:
                        hh = act(1, gx[2*H:] + Rd[2*H:] @ (r * h) + Rb[2*H:])
                    h = (1 - z) * hh + z * h
                else:
                    g = Wd @ x + Rd @ h + Wb + Rb
                    p = P[d] if P is not None else np.zeros(3 * H)
                    i = act(0, g[:H] + p[:H] * c)
                    fg = 1 - i if input_forget else act(0, g[2*H:3*H] + p[2*H:] * c)
                    cc = act(1, g[3*H:])
                    c = fg * c + i * cc
                    o = act(0, g[H:2*H] + p[H:2*H] * c)
                    h = o * act(2, c)
                Y[t, d, b] = h
            if L > 0:
                Yh[d, b] = h; Yc[d, b] = c
    if layout:
        Y = Y.transpose(2, 0, 1, 3); Yh = Yh.transpose(1, 0, 2); Yc = Yc.transpose(1, 0, 2)
    return Y, Yh, Yc

def make(name, op, opset, T, N, I, H, direction='forward', layout=0, has_B=True, lens=None,
         has_h0=False, has_c0=False, has_P=False, outputs=('Y', 'Y_h', 'Y_c'), acts=None,
         alphas=None, betas=None, clip=None, lbr=0, input_forget=0, weights_const=False, seed=0, wscale=1.0):
    rng = np.random.default_rng(seed)
    D = 2 if direction == 'bidirectional' else 1
    G = {'RNN': 1, 'GRU': 3, 'LSTM': 4}[op]
    X = rng.uniform(-1, 1, (N, T, I) if layout else (T, N, I)).astype(np.float32)
    W = (wscale * rng.uniform(-.5, .5, (D, G * H, I))).astype(np.float32)
    R = (wscale * rng.uniform(-.5, .5, (D, G * H, H))).astype(np.float32)
    B = rng.uniform(-.5, .5, (D, 2 * G * H)).astype(np.float32) if has_B else None
    L = np.array(lens, dtype=np.int32) if lens is not None else None
    sshape = (N, D, H) if layout else (D, N, H)
    h0 = rng.uniform(-1, 1, sshape).astype(np.float32) if has_h0 else None
    c0 = rng.uniform(-1, 1, sshape).astype(np.float32) if has_c0 else None
    P = rng.uniform(-.5, .5, (D, 3 * H)).astype(np.float32) if has_P else None
    Y, Yh, Yc = reference(op, X, W, R, B, L, h0, c0, P, acts, alphas, betas, direction, layout, clip, lbr, input_forget)
    vals = {'X': X, 'W': W, 'R': R, 'B': B, 'sequence_lens': L, 'initial_h': h0, 'initial_c': c0, 'P': P}
    order = ['X', 'W', 'R', 'B', 'sequence_lens', 'initial_h'] + (['initial_c', 'P'] if op == 'LSTM' else [])
    ins = [k if vals[k] is not None else '' for k in order]
    while ins and ins[-1] == '': ins.pop()
    outs_all = ['Y', 'Y_h'] + (['Y_c'] if op == 'LSTM' else [])
    outs = [o if o in outputs else '' for o in outs_all]
    while outs and outs[-1] == '': outs.pop()
    attrs = {'hidden_size': H}
    if direction != 'forward': attrs['direction'] = direction
    if layout: attrs['layout'] = layout
    if acts is not None: attrs['activations'] = acts
    if alphas is not None: attrs['activation_alpha'] = alphas
    if betas is not None: attrs['activation_beta'] = betas
    if clip is not None: attrs['clip'] = clip
    if lbr: attrs['linear_before_reset'] = lbr
    if input_forget: attrs['input_forget'] = input_forget
    node = helper.make_node(op, ins, outs, **attrs)
    res = {'Y': Y, 'Y_h': Yh, 'Y_c': Yc}
    graph_inputs, inits, feeds = [], [], []
    for k in ins:
        if not k: continue
        v = vals[k]
        dt = TensorProto.INT32 if k == 'sequence_lens' else TensorProto.FLOAT
        if weights_const and k in ('W', 'R', 'B', 'P'):
            inits.append(numpy_helper.from_array(v, k))
        else:
            graph_inputs.append(helper.make_tensor_value_info(k, dt, v.shape)); feeds.append((k, v))
    gouts = [helper.make_tensor_value_info(o, TensorProto.FLOAT, res[o].shape) for o in outs if o]
    g = helper.make_graph([node], name, graph_inputs, gouts, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid('', opset)])
    d = os.path.join(sys.argv[1], name); os.makedirs(os.path.join(d, 'test_data_set_0'), exist_ok=True)
    onnx.save(m, os.path.join(d, 'model.onnx'))
    for i, (k, v) in enumerate(feeds):
        open(os.path.join(d, 'test_data_set_0', f'input_{i}.pb'), 'wb').write(numpy_helper.from_array(v, k).SerializeToString())
    for i, o in enumerate([o for o in outs if o]):
        open(os.path.join(d, 'test_data_set_0', f'output_{i}.pb'), 'wb').write(numpy_helper.from_array(res[o].astype(np.float32), o).SerializeToString())

make('lstm_bidi_all', 'LSTM', 14, 5, 4, 3, 6, direction='bidirectional', lens=[5, 0, 3, 1],
     has_h0=True, has_c0=True, has_P=True, clip=0.8,
     acts=['HardSigmoid', 'ScaledTanh', 'Softsign', 'Sigmoid', 'Elu', 'Tanh'],
     alphas=[0.3, 0.9, 0.7], betas=[0.45, 1.2])
make('gru_bidi_layout1_lbr', 'GRU', 14, 4, 3, 2, 5, direction='bidirectional', layout=1,
     lens=[2, 4, 0], has_h0=True, lbr=1, outputs=('Y',))
make('gru_reverse_yh', 'GRU', 7, 6, 2, 4, 3, direction='reverse', outputs=('Y_h',),
     acts=['Sigmoid', 'LeakyRelu'], alphas=[0.2])
make('gru_reverse_lens_const', 'GRU', 14, 6, 3, 4, 3, direction='reverse', lens=[6, 2, 4],
     weights_const=True, has_h0=True)
make('rnn_bidi_layout1', 'RNN', 14, 3, 5, 2, 4, direction='bidirectional', layout=1,
     acts=['Relu', 'Softplus'], has_h0=True)
make('rnn_affine_thr', 'RNN', 7, 4, 2, 3, 3, direction='bidirectional',
     acts=['Affine', 'ThresholdedRelu'], alphas=[0.5, 0.1], betas=[0.2])
make('lstm_input_forget', 'LSTM', 7, 4, 3, 3, 4, input_forget=1, has_P=True, outputs=('Y', 'Y_c'))
make('lstm_layout1_yc', 'LSTM', 14, 3, 2, 3, 4, layout=1, has_h0=True, has_c0=True, outputs=('Y_c',), direction='reverse', lens=[1, 3])
make('lstm_chunked', 'LSTM', 14, 3, 50, 8, 128, direction='bidirectional', weights_const=True, lens=list(np.arange(50) % 4))
make('gru_chunked_rev', 'GRU', 14, 4, 40, 5, 200, direction='reverse', lens=list(np.arange(40) % 5), outputs=('Y', 'Y_h'))
make('lstm_opset1', 'LSTM', 1, 3, 2, 3, 4)
make('gru_opset3', 'GRU', 3, 3, 2, 3, 4, lbr=1)
# Weights as initializers: packed at compile time (b32, one symbol per
# direction; GRU's R as z, r and h apart), panel tails (H not a multiple of
# 32), and chunks of rows smaller than the batch (the arena scratch budget).
# Over 40 steps, wscale keeps the recurrence contractive (H = 128 with
# weights in [-.5, .5] amplifies float rounding beyond any tolerance).
make('lstm_const_peep_layout1', 'LSTM', 14, 4, 3, 5, 33, direction='bidirectional', layout=1,
     weights_const=True, has_P=True, has_h0=True, has_c0=True, clip=1.5, lens=[4, 1, 3])
make('gru_const_lbr_bidi', 'GRU', 14, 5, 4, 3, 20, direction='bidirectional', lbr=1,
     weights_const=True, lens=[5, 2, 0, 4], has_h0=True)
make('rnn_const_reverse', 'RNN', 14, 6, 3, 7, 40, direction='reverse', weights_const=True,
     lens=[6, 3, 1], acts=['Tanh'])
make('lstm_const_multichunk', 'LSTM', 14, 40, 100, 10, 128, weights_const=True,
     lens=list(40 - np.arange(100) % 7), outputs=('Y_h', 'Y_c'), wscale=0.2)
make('gru_const_layout1_multichunk', 'GRU', 14, 40, 70, 6, 128, layout=1, direction='reverse',
     weights_const=True, outputs=('Y_h',), wscale=0.2)
