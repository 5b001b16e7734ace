#!/usr/bin/env python3
"""The compiler's call graph between its source files, and its cycles.

Reads the object files of a build (nm: what each defines, what it calls),
draws an arrow A -> B when A's object calls or reads a symbol that B's
defines, and prints every strongly connected component of more than one
file: a set of files that reach each other through calls.

    scripts/call-cycles.py build            # the cycles, with the calls behind them
    scripts/call-cycles.py build --count    # just "N cycles, M files in them"
    scripts/call-cycles.py build --check    # exit 1 unless every cycle is one op
                                            # family: ops/F.c and emit/F.c, and
                                            # ops/F.c reaches no other family's
                                            # emitters (but SHARED), and no
                                            # emitter or stage (STAGES) reads
                                            # an attribute

The one kind of cycle kept on purpose is a family's two files side by side:
ops/F.c's records name F's emitters in emit/F.c, and those emitters read
the parameters that ops/F.c resolves (docs/architecture.md, "Cycles").

An arrow made only of a function pointer taken (a table of hooks) counts as
a call: nm sees a reference either way.

A family's records name its own emitters: ops/F.c uses nothing that an
emit/G.c of another family defines, but the emitters SHARED names (ops of
other families that are always folded, or Identity's copy).

Emitters and stages read no attributes: an op's attributes are resolved,
with their defaults and checked, by its family's ops/F.c (elementwise_params,
norm_params, ...), and emit/*.c and the stages of STAGES (partial
evaluation, the batch and padding proofs, the stitching cost, the plan,
batch tiling)
read the resolved fields. --check fails on such an object that calls one of
ATTR_READERS.
"""
import os
import subprocess
import sys


def objects(build):
    """(source path under compiler/, object path) for every compiler object."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for d in ('libkilnc.a.p', 'libkiln_emit_obj.a.p', 'kiln.p'):
        d = os.path.join(build, 'compiler', d)
        if not os.path.isdir(d):
            continue
        for f in sorted(os.listdir(d)):
            if not f.endswith('.c.o') or f.startswith('meson-generated_'):
                continue
            name = f[:-2]  # meson names compiler/emit/nn.c's object emit_nn.c.o
            if not os.path.exists(os.path.join(root, 'compiler', name)) and '_' in name:
                name = name.replace('_', '/', 1)
            yield name, os.path.join(d, f)


def symbols(paths):
    """{path: (defined, used)} for every object, with two runs of nm."""
    result = {p: (set(), set()) for p in paths}
    for k, flags in ((0, ['--defined-only', '-g']), (1, ['-u'])):
        out = subprocess.run(['nm', '-A'] + flags + list(paths), capture_output=True,
                             text=True, check=True).stdout
        for line in out.split('\n'):
            path, sep, rest = line.partition(':')
            f = rest.split()
            if sep and path in result and f and (k == 1 or len(f) == 3):
                result[path][k].add(f[-1])
    return result


def sccs(nodes, edges):
    index, low, stack, on, result, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            result.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return result


SHARED = {'emit_folded_only', 'emit_unary'}
ATTR_READERS = {'node_attr', 'node_attr_int', 'node_attr_float', 'node_attr_is',
                'attr_int', 'attr_ints', 'attr_float', 'attr_string'}
STAGES = {'peval.c', 'batchdep.c', 'padproof.c', 'stitch.c', 'plan.c', 'batchtile.c'}


def family_pair(c):
    """Is cycle c exactly ops/F.c and emit/F.c?"""
    if len(c) != 2:
        return False
    a, b = c
    return a.startswith('emit/') and b.startswith('ops/') and a[5:] == b[4:]


def main():
    args = [a for a in sys.argv[1:] if not a.startswith('--')]
    build = args[0] if args else 'build'
    count_only = '--count' in sys.argv
    check = '--check' in sys.argv
    files = dict(objects(build))
    defs, uses = {}, {}
    syms = symbols(files.values())
    for f, path in files.items():
        defs[f], uses[f] = syms[path]
    owner = {}
    for f, ds in defs.items():
        for s in ds:
            owner[s] = f
    edges, why = {}, {}
    for f, us in uses.items():
        for s in us:
            g = owner.get(s)
            if g and g != f:
                edges.setdefault(f, set()).add(g)
                why.setdefault((f, g), []).append(s)
    cycles = [c for c in sccs(files, edges) if len(c) > 1]
    cycles.sort(key=len, reverse=True)
    if not files:
        sys.exit('call-cycles: no compiler objects under %s/compiler' % build)
    if check:
        bad = [c for c in cycles if not family_pair(c)]
        for c in bad:
            print('cycle of %d files that is not one op family: %s' % (len(c), ' '.join(c)))
            members = set(c)
            for f in c:
                for g in sorted(edges.get(f, ())):
                    if g in members:
                        print('  %s -> %s: %s' % (f, g, ', '.join(sorted(why[(f, g)]))))
        print('%d cycles, %d of them one op family (ops/F.c and emit/F.c)' %
              (len(cycles), len(cycles) - len(bad)))
        strays = 0
        for f in sorted(files):
            if not f.startswith('ops/') or 'emit/' + f[4:] not in files:
                continue
            for g in sorted(edges.get(f, ())):
                if g.startswith('emit/') and g != 'emit/' + f[4:] and g[5:] != 'emitter.h':
                    names = sorted(set(why[(f, g)]) - SHARED)
                    if names and 'ops/' + g[5:] in files:
                        print('%s names emit/%s of another family: %s' % (f, g[5:], ', '.join(names)))
                        strays += 1
        print('%d records name another family\'s emitters' % strays)
        readers = 0
        for f in sorted(files):
            names = sorted(uses[f] & ATTR_READERS)
            if (f.startswith('emit/') or f in STAGES) and names:
                print('%s reads attributes itself (%s): resolve them in the op\'s ops/ file' %
                      (f, ', '.join(names)))
                readers += 1
        missing = sorted(STAGES - set(files))
        if missing:   # a stage renamed or moved: the check would pass vacuously
            print('stages not found among the objects: %s' % ', '.join(missing))
            readers += len(missing)
        print('%d emitters or stages read attributes' % readers)
        sys.exit(1 if bad or strays or readers else 0)
    if count_only:
        print('%d cycles, %d files in them (of %d)' % (len(cycles), sum(map(len, cycles)), len(files)))
        return
    for c in cycles:
        print('cycle of %d files:' % len(c))
        members = set(c)
        for f in c:
            for g in sorted(edges.get(f, ())):
                if g in members:
                    print('  %s -> %s: %s' % (f, g, ', '.join(sorted(why[(f, g)]))))
    print('%d cycles, %d files in them (of %d)' % (len(cycles), sum(map(len, cycles)), len(files)))


main()
