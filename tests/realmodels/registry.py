"""The case lists a cases file fills for run.py, and its decorators:
    @run                 make() -> (ModelProto, {input: ndarray}[, reference ModelProto]),
                         compared with ORT (running the reference model if given)
    @error(expected)     make() -> ModelProto; expected: a piece of what `kiln info`
                         prints on stderr ("error: ..." exits 2, anything else, a
                         warning, exits 0), "refused: TEXT" (exit 2, one line
                         "kiln: error: MODEL: ..." with TEXT in it), "check: TEXT" (a piece of `kiln check`'s
                         list, exit 1), "hint: TEXT" (`kiln check`, exit 0) or
                         "compile: TEXT" (`kiln compile --batch 1`'s stderr, exit 2)
    VERIFY_FLAGS         (a module variable) flags for `kiln verify` of the @run cases
    extra(kiln, outdir)  (a module function, optional) more checks; returns failures
    @compiles(*flags)    make() -> ModelProto; `kiln compile` with flags succeeds
                         without a warning and stays batch-independent"""


class Cases:
    def __init__(self):
        self.RUN, self.ERRORS, self.COMPILES = [], [], []

    def run(self, fn):
        self.RUN.append((fn.__name__, fn))
        return fn

    def error(self, expected):
        def wrap(fn):
            self.ERRORS.append((fn.__name__, fn, expected))
            return fn
        return wrap

    def compiles(self, *flags):
        def wrap(fn):
            self.COMPILES.append((fn.__name__, fn, list(flags)))
            return fn
        return wrap


# ---- onnx.helper models at a given ai.onnx opset (tests/opset/*.py) --------
# Debian's onnx 1.12 has no schemas past opset 17, so the checker is not run.

def opset_model(nodes, inputs, outputs, inits=(), opset=18):
    from onnx import helper
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 10 if opset >= 21 else 9 if opset >= 19 else 8
    return m


def vi(name, shape, elem=1):
    """A value info; elem defaults to TensorProto.FLOAT (1)."""
    from onnx import helper
    return helper.make_tensor_value_info(name, elem, shape)


def const(name, arr):
    import numpy as np
    from onnx import numpy_helper
    return numpy_helper.from_array(np.asarray(arr), name)


def x_in(shape, seed=0):
    import numpy as np
    return np.random.default_rng(seed).standard_normal(shape, dtype=np.float32)


def f8_value(b, code):
    """The value of float8 bit pattern b in format code (17-20), as ONNX defines it."""
    sign = -1.0 if b & 0x80 else 1.0
    if code in (17, 18):
        e, m, mbits, bias = (b >> 3) & 15, b & 7, 3, 7 if code == 17 else 8
    else:
        e, m, mbits, bias = (b >> 2) & 31, b & 3, 2, 15 if code == 19 else 16
    if code in (18, 20) and b == 0x80:
        return float("nan")
    if code == 17 and (b & 0x7f) == 0x7f:
        return float("nan")
    if code == 19 and e == 31:
        return sign * float("inf") if m == 0 else float("nan")
    if e == 0:
        return sign * m / (1 << mbits) * 2.0 ** (1 - bias)
    return sign * (1 + m / (1 << mbits)) * 2.0 ** (e - bias)
