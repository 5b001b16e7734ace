"""kiln from Python: run models compiled by kiln (docs/python.md).

    import kiln
    model = kiln.load("build/jt/jt.so")        # kiln compile --shared
    probs = model(jets)                         # any number of rows
    model = kiln.compile("model.onnx", batch=[1, 16, 64])   # cached build, then load

A Model reads its inputs in place (C-contiguous, of the model's element
type), returns new numpy arrays or fills out= buffers, releases the GIL
while it runs, keeps one context per thread, and pickles by path and
SHA-256 so that Dask workers open the shared object themselves.
"""
import errno
import hashlib
import json
import mmap
import operator
import os
import re
import shutil
import subprocess
import tempfile
import threading

from . import _paths
from ._kiln import Error, LengthError, Model, TensorInfo, version as _version

__all__ = ["load", "compile", "Model", "TensorInfo", "Error", "LengthError", "find_kiln",
           "__version__"]
__version__ = _version()


def _sha256(path):
    # 64 KiB at a time into one buffer: a larger block would raise malloc's
    # mmap threshold and stay in the process's RSS (docs/python.md, memory)
    h = hashlib.sha256()
    buf = bytearray(1 << 16)
    view = memoryview(buf)
    with open(path, "rb", buffering=0) as f:
        while True:
            n = f.readinto(buf)
            if not n:
                break
            h.update(view[:n])
    return h.hexdigest()


def load(path, entry=None):
    """Open a model's shared object (kiln compile --shared, or any shared
    library exporting NAME_model: pass entry="NAME") and return a Model."""
    path = os.path.abspath(os.fspath(path))
    try:
        sha = _sha256(path)
    except OSError as e:
        raise OSError(e.errno, "kiln.load: cannot read %s: %s" % (path, e.strerror)) from None
    return Model(path, entry, sha)


# Models unpickled in this process, by (path, entry): the file's identity
# when it was hashed, the hash, the Model. A Dask worker unpickles a model
# for every task; it opens and hashes the file once.
_opened = {}
_opened_lock = threading.Lock()


def _identity(st):
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _reopen(path, sha256, entry):
    """Unpickle a Model: open the same path and check that the file is the
    one that was pickled."""
    try:
        st = os.stat(path)
    except OSError as e:
        raise Error("kiln: cannot unpickle model %s: %s (a worker needs the shared object at "
                    "the same path: a shared filesystem, or kiln.compile on the worker)"
                    % (path, e.strerror)) from None
    key = (path, entry)
    with _opened_lock:
        hit = _opened.get(key)
        if hit and hit[0] == _identity(st) and hit[1] == sha256:
            return hit[2]
        now = _sha256(path)
        if sha256 is not None and now != sha256:
            raise Error("kiln: %s changed since the model was pickled (sha256 %s then, %s now): "
                        "recompile or reload it where it was pickled" % (path, sha256, now))
        model = Model(path, entry, now)
        _opened[key] = (_identity(st), now, model)
        return model


# ---- kiln.compile --------------------------------------------------------

def find_kiln():
    """The kiln executable kiln.compile runs: $KILN, else the one installed
    with this module (<prefix>/bin/kiln), else the build tree's when this is
    the build tree's module, else kiln on PATH."""
    env = os.environ.get("KILN")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    tail = os.path.join(os.path.normpath(_paths.PLATLIB_REL), "kiln")
    if here.endswith(os.sep + tail):
        prefix = here[: -len(tail) - 1]
        exe = os.path.join(prefix, _paths.BINDIR_REL, "kiln")
        if os.access(exe, os.X_OK):
            return exe
    if here == _paths.BUILD_PKG_DIR and os.access(_paths.BUILD_KILN, os.X_OK):
        return _paths.BUILD_KILN
    exe = shutil.which("kiln")
    if exe:
        return exe
    raise Error("kiln.compile: cannot find the kiln executable: set KILN=/path/to/kiln "
                "or put kiln on PATH")


_versions = {}


def _kiln_identity(exe):
    """kiln's version and the executable's hash: a rebuilt kiln of the same
    version compiles again."""
    path = shutil.which(exe) or exe
    st = os.stat(path)
    key = (path, _identity(st))
    if key not in _versions:
        r = subprocess.run([exe, "--version"], capture_output=True, text=True)
        if r.returncode != 0:
            raise Error("kiln.compile: %s --version failed: %s" % (exe, r.stderr.strip()))
        _versions[key] = (r.stdout.strip(), _sha256(path))
    return _versions[key]


def _varint(buf, i):
    v = shift = 0
    while True:
        b = buf[i]
        i += 1
        v |= (b & 0x7F) << shift
        if b < 0x80:
            return v, i
        shift += 7


# The ONNX messages that can hold tensors, and for each the fields to
# descend into: ModelProto, GraphProto, NodeProto, AttributeProto,
# FunctionProto, SparseTensorProto, TensorProto (external_data entries).
_WALK = {
    "model": {7: "graph", 25: "function"},
    "graph": {1: "node", 5: "tensor", 15: "sparse"},
    "node": {5: "attribute"},
    "attribute": {5: "tensor", 6: "graph", 10: "tensor", 11: "graph", 22: "sparse",
                  23: "sparse"},
    "function": {7: "node", 11: "attribute"},
    "sparse": {1: "tensor", 2: "tensor"},
    "tensor": {13: "entry"},
}


def _external_files(buf):
    """The external data locations a model file names (every tensor of
    every graph and subgraph), by a minimal protobuf walk."""
    found = set()
    stack = [("model", 0, len(buf))]
    while stack:
        kind, i, end = stack.pop()
        key = value = None
        while i < end:
            tag, i = _varint(buf, i)
            field, wire = tag >> 3, tag & 7
            if wire == 0:
                _, i = _varint(buf, i)
            elif wire == 1:
                i += 8
            elif wire == 5:
                i += 4
            elif wire == 2:
                n, i = _varint(buf, i)
                if kind == "entry":
                    if field == 1:
                        key = bytes(buf[i:i + n])
                    elif field == 2:
                        value = bytes(buf[i:i + n])
                elif field in _WALK.get(kind, ()):
                    stack.append((_WALK[kind][field], i, i + n))
                i += n
            else:
                raise Error("kiln.compile: not an ONNX model (protobuf wire type %d)" % wire)
        if kind == "entry" and key == b"location" and value is not None:
            found.add(value.decode("utf-8", "replace"))
    return sorted(found)


def _model_hash(path):
    """SHA-256 of the model file and of every external data file it names."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        files = []
        if os.fstat(f.fileno()).st_size:
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
                h.update(hashlib.sha256(buf).digest())
                try:
                    files = _external_files(memoryview(buf))
                except IndexError:
                    raise Error("kiln.compile: %s: not an ONNX model (truncated)"
                                % path) from None
    base = os.path.dirname(path)
    for loc in files:
        h.update(loc.encode())
        data = os.path.join(base, loc)
        h.update(_sha256(data).encode() if os.path.isfile(data) else b"missing")
    return h.hexdigest()


def _cache_dir():
    d = os.environ.get("KILN_CACHE_DIR")
    if d:
        return d
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "kiln")


def _shape_flag(inp, dims):
    if isinstance(dims, str):
        text = dims
    else:
        text = ",".join("N" if d is None else str(d) for d in dims)
    return "--shape=%s=%s" % (inp, text)


def compile(model, batch, *, shape=None, dim=None, name=None, cache_dir=None, options=(),
            kiln=None):
    """Compile an ONNX model to a shared object in a cache and load it.

    batch: the compiled batch sizes (any n runs, stitched from them).
    shape: {input: dims} for --shape (dims a string "N,50,16" or a sequence
        with None at the batch axis). dim: {symbol: value} for --dim; a
        sequence of values compiles buckets (model.run_lengths).
    name: the C NAME (default: from the file name). options: more kiln
        compile arguments, e.g. ["--weights-dtype", "fp16"].
    cache_dir: default $KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln (~/.cache/kiln).
    kiln: the kiln executable (default: find_kiln()).

    The cache entry is keyed by the model's hash (with its external data),
    the arguments, and kiln's version and executable; it is built in a
    temporary folder and renamed into place, so parallel callers never see
    a partial build and the first to finish wins."""
    path = os.path.abspath(os.fspath(model))
    exe = kiln or find_kiln()
    if name is None:
        stem = os.path.splitext(os.path.basename(path))[0]
        name = re.sub(r"\W", "_", stem, flags=re.ASCII) or "model"
        if name[0].isdigit():
            name = "m_" + name
    if isinstance(batch, int):
        batch = [batch]
    args = ["--batch=" + ",".join(str(int(b)) for b in batch), "--name=" + name]
    for inp, dims in (shape or {}).items():
        args.append(_shape_flag(inp, dims))
    for sym, v in (dim or {}).items():
        try:
            vals = [operator.index(v)]
        except TypeError:
            vals = list(v)
        args.append("--dim=%s=%s" % (sym, ",".join(str(int(x)) for x in vals)))
    args += [str(o) for o in options]
    try:
        model_hash = _model_hash(path)
    except OSError as e:
        raise OSError(e.errno, "kiln.compile: cannot read %s: %s" % (path, e.strerror)) from None
    version, exe_hash = _kiln_identity(exe)
    key_doc = {"model": path, "model_sha256": model_hash, "args": args, "kiln": version,
               "kiln_sha256": exe_hash}
    key = hashlib.sha256(json.dumps(key_doc, sort_keys=True).encode()).hexdigest()
    cache = os.path.abspath(cache_dir or _cache_dir())
    final = os.path.join(cache, "%s-%s" % (name, key[:32]))
    so = os.path.join(final, name + ".so")
    if os.path.isfile(so):
        return load(so)
    os.makedirs(cache, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".%s-" % name, dir=cache)
    try:
        os.chmod(tmp, 0o755)   # mkdtemp's 0700 would hide the entry from other users
        cmd = [exe, "compile", path] + args + ["--shared", "-o", tmp]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            msg = r.stderr.strip().splitlines()
            raise Error("kiln.compile: %s" % (msg[-1] if msg else "kiln exited %d" % r.returncode))
        with open(os.path.join(tmp, "key.json"), "w") as f:
            json.dump(key_doc, f, indent=1, sort_keys=True)
        try:
            os.rename(tmp, final)
        except OSError as e:
            if e.errno not in (errno.EEXIST, errno.ENOTEMPTY):
                raise
            # another process finished the same build first: use its copy
    finally:
        if os.path.isdir(tmp):
            shutil.rmtree(tmp, ignore_errors=True)
    return load(so)
