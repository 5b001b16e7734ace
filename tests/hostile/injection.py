#!/usr/bin/python3
"""Code injection through model strings (issue 14, finding 1).

usage: injection.py KILN SOURCE_ROOT LIBKILN_A OUTDIR

A small model (Reshape of a graph input, MatMul, Add, Relu) gets hostile text
in every string field the format has: graph, node and value names,
initializer names, the opset_import domain, doc strings of model, graph,
node, value and tensor, metadata_props, producer name and version, model
domain, and the model's file name. The text closes comments and opens new
ones, declares a constructor that calls system(), splices lines with
backslash-newline and the ??/ trigraph, and carries quotes, control bytes,
bytes that are not UTF-8 and a bidirectional override.

A third model has the exploit of the finding alone: "*/ ... /*" in the opset
domain (declaring system) and in the graph input's name (a constructor that
calls it), the two strings that reached comments raw before the fix; with
that kiln, the program linking NAME.o ran the constructor at start-up.

Checks, for the hostile models against a twin with benign names:
  - kiln compiles both (exit 0);
  - NAME.c and NAME.h build with -std=c11 (trigraphs on) -Wall -Wextra
    -Werror -Wshadow under gcc and clang;
  - with comments and string literals stripped (the C translation phases:
    trigraphs, splices, then tokens), the two token streams are identical
    once identifiers made from names are masked, and no trace of the
    payload (system, constructor) is left outside comments and literals;
  - a program linking the model runs without the constructor firing (the
    marker file it would create does not exist), its descriptor's names
    are the model's bytes exactly, and its outputs match numpy.
"""
import os
import re
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from lib import driver_input, link_driver, run, run_driver

KILN, SRC, LIBKILN, OUT = sys.argv[1:5]
os.makedirs(OUT, exist_ok=True)
MARK = os.path.join(os.path.abspath(OUT), "PWNED")
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL: " + what)


# Closes the comment, then code that would run before main; the trailing /*
# swallows whatever follows on the line, so the broken-out code compiles.
EXPLOIT = (b'*/ int system(const char *); __attribute__((constructor)) static void '
           b'kiln_pwn(void) { system("touch ' + MARK.encode() + b'"); } /*')
# Everything else a C lexer could trip on.
NASTY = (b' /* // \\ ??/ ??= ??\' " \' \\"x\\\\ \x01\x07\x1b[31m \x7f \xff\xfe\xc3 '
         b'\xe2\x80\xae evil \r\n#define int float\n\\\nend\\')
FIELDS = 27


def field_bytes(k, kind):
    """The text of field k: every field hostile, or (the finding's exploit)
    only the graph input and the opset domain, without the NASTY part."""
    tag = b"QZ%02d" % k
    if kind == "hostile":
        return tag + EXPLOIT + NASTY
    if kind == "benign1":               # the exploit's twin, at one batch size
        kind = "benign"
    if kind == "exploit" and k == 24:   # in both banners: declarations only
        return tag + b"*/ int system(const char *); /*"
    if kind == "exploit" and k == 0:    # once per batch size: compiled at one
        return tag + b"*/ " + EXPLOIT[EXPLOIT.index(b"__attribute__"):]
    return tag + b"_benign"


def placeholder(k, length):
    # Same length as the hostile bytes, so protobuf lengths stay right.
    p = b"PH%02d" % k
    return p + b"~" * (length - len(p))


def build(kind):
    s = [placeholder(k, len(field_bytes(k, kind))).decode() for k in range(FIELDS)]
    X, Y, S, W, B, R, M, A = s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]
    rng = np.random.default_rng(7)
    w = rng.standard_normal((4, 3)).astype(np.float32)
    b = rng.standard_normal(3).astype(np.float32)
    tS = numpy_helper.from_array(np.array([-1, 4], np.int64), S)
    tW = numpy_helper.from_array(w, W)
    tW.doc_string = s[25]
    tB = numpy_helper.from_array(b, B)
    nodes = [
        helper.make_node("Reshape", [X, S], [R], name=s[10], doc_string=s[14]),
        helper.make_node("MatMul", [R, W], [M], name=s[11]),
        helper.make_node("Add", [M, B], [A], name=s[12]),
        helper.make_node("Relu", [A], [Y], name=s[13]),
    ]
    xi = helper.make_tensor_value_info(X, TensorProto.FLOAT, ["N", 2, 2])
    xi.doc_string = s[26]
    yi = helper.make_tensor_value_info(Y, TensorProto.FLOAT, ["N", 3])
    vi = helper.make_tensor_value_info(M, TensorProto.FLOAT, ["N", 3])
    vi.doc_string = s[23]
    g = helper.make_graph(nodes, s[15], [xi], [yi], [tS, tW, tB], doc_string=s[16],
                          value_info=[vi])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13),
                                            helper.make_opsetid(s[24], 1)],
                          producer_name=s[18], producer_version=s[19], domain=s[20],
                          doc_string=s[17])
    helper.set_model_props(m, {s[21]: s[22]})
    m.ir_version = 8
    data = m.SerializeToString()
    for k in range(FIELDS):
        ph = placeholder(k, len(field_bytes(k, kind)))
        if k in (8, 9):
            continue
        assert ph in data, k
        data = data.replace(ph, field_bytes(k, kind))
    return data, w, b


def strip_c(text):
    """Tokens of C text outside comments and literals (phases 1-3)."""
    for tri, rep in (("??=", "#"), ("??/", "\\"), ("??'", "^"), ("??(", "["), ("??)", "]"),
                     ("??!", "|"), ("??<", "{"), ("??>", "}"), ("??-", "~")):
        text = text.replace(tri, rep)
    text = text.replace("\\\n", "")
    toks, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            if j < 0:
                toks.append("<unterminated comment>")
                break
            i = j + 2
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            if j >= n or text[j] != c:
                toks.append("<unterminated literal>")
            toks.append("<lit>")
            i = j + 1
        elif c.isspace():
            i += 1
        elif c.isalnum() or c == "_":
            j = i
            while j < n and (text[j].isalnum() or text[j] in "_."):
                j += 1
            tok = text[i:j]
            toks.append("<name>" if re.search(r"QZ\d\d", tok) else tok)
            i = j
        else:
            toks.append(c)
            i += 1
    return toks


results = {}
for kind in ("benign", "benign1", "exploit", "hostile"):
    hostile = kind == "hostile"
    data, w, b = build(kind)
    d = os.path.join(OUT, kind)
    os.makedirs(d, exist_ok=True)
    # A file name with what a file name can hold: no '/', but splices and controls.
    path = os.path.join(d, "m??=\\\n\x1b\xe2\x80\xae*x.onnx" if hostile else "m.onnx")
    with open(path, "wb") as f:
        f.write(data)
    r = run([KILN, "compile", path, "--batch", "1" if kind in ("exploit", "benign1") else "1,4", "--name", "net",
             "-o", d])
    check(r.returncode == 0, "%s: kiln compile exits %d: %s" % (kind, r.returncode,
                                                             r.stderr.decode(errors="replace")))
    if r.returncode:
        continue
    for cc in ("gcc", "clang"):
        for f in ("net.c", "net.h"):
            src = os.path.join(d, f)
            args = [cc, "-std=c11", "-Wall", "-Wextra", "-Werror", "-Wshadow", "-Wtrigraphs",
                    "-I" + os.path.join(SRC, "include"), "-I" + d, "-c", "-o", os.devnull]
            if f == "net.h":
                args += ["-x", "c"]
            r = run(args + [src])
            check(r.returncode == 0, "%s: %s %s: %s" % (kind, cc, f, r.stderr.decode(errors="replace")[:2000]))
    toks = {}
    for f in ("net.c", "net.h"):
        with open(os.path.join(d, f), "rb") as fh:
            raw = fh.read()
        check(all(ch in (9, 10) or 32 <= ch < 127 for ch in raw),
              "%s: %s holds bytes other than printable ASCII" % (kind, f))
        toks[f] = strip_c(raw.decode("latin-1"))
    results[kind] = toks
    # The program: link, run, compare.
    ok, err = link_driver(SRC, d, LIBKILN)
    check(ok, "%s: link: %s" % (kind, err[:2000]))
    if not ok:
        continue
    if os.path.exists(MARK):
        os.unlink(MARK)
    st, err, names, values = run_driver(d, 3)
    check(st == 0, "%s: driver exits %d: %s" % (kind, st, err))
    check(not os.path.exists(MARK), "%s: the injected constructor ran" % kind)
    check(names["input"] == [field_bytes(0, kind).hex()],
          "%s: the input's name does not round-trip" % kind)
    check(names["output"] == [field_bytes(1, kind).hex()],
          "%s: the output's name does not round-trip" % kind)
    want = np.maximum(driver_input(0, 12).reshape(3, 4) @ w + b, 0).ravel()
    check(len(values) == 1 and values[0].shape == want.shape and
          np.allclose(values[0], want, rtol=1e-6, atol=1e-6),
          "%s: outputs %s, numpy %s" % (kind, values, want))

for kind, twin in (("exploit", "benign1"), ("hostile", "benign")):
    if kind not in results or twin not in results:
        continue
    for f in ("net.c", "net.h"):
        a, b2 = results[twin][f], results[kind][f]
        if a != b2:
            k = next((i for i in range(min(len(a), len(b2))) if a[i] != b2[i]), min(len(a), len(b2)))
            check(False, "%s %s: code outside comments and literals differs from the benign twin "
                  "at token %d: %s vs %s" % (kind, f, k, a[max(k - 5, 0):k + 10], b2[max(k - 5, 0):k + 10]))
        for word in ("system", "constructor", "kiln_pwn", "<unterminated comment>",
                     "<unterminated literal>"):
            check(word not in b2, "%s %s: %r outside comments and literals" % (kind, f, word))

print("hostile injection: %d failures" % len(failures))
sys.exit(1 if failures else 0)
