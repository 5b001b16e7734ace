"""The case lists a cases file fills for run.py, and its decorators:
    @run                 make() -> (ModelProto, {input: ndarray}), compared with ORT
    @error(expected)     make() -> ModelProto; expected: a piece of what `kiln info`
                         prints on stderr ("error: ..." exits 2, anything else, a
                         warning, exits 0), "check: TEXT" (a piece of `kiln check`'s
                         list, exit 1) or "hint: TEXT" (`kiln check`, exit 0)
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
