#!/usr/bin/python3
"""Score jets on a Dask cluster with a kiln-compiled model.

The jets sit in chunked .npy files (float32 [jets, 16]; made here if
missing). The model is compiled once (kiln.compile, cached) and sent to the
workers as a pickle of its path and hash: each worker process opens the
shared object itself, and the processes of one machine share its pages.
Every chunk is scored on a worker; the scores are gathered in file order,
and --check compares them, bit for bit, with the same model run in this
process alone.

    score.py                                   # a LocalCluster of 2 worker processes
    score.py --scheduler tcp://scheduler:8786  # an existing cluster (see README.md)
"""
import argparse
import glob
import os
import sys
import time

import numpy as np

import kiln

HERE = os.path.dirname(os.path.abspath(__file__))
FEATURES = 16


def make_chunks(folder, nchunks, jets_per_chunk, seed=1):
    """nchunks files jets-000.npy, ... of float32 [n, 16]; chunk sizes vary
    around jets_per_chunk so that most are not a compiled batch size."""
    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(seed)
    paths = []
    for i in range(nchunks):
        n = int(rng.integers(jets_per_chunk // 2, jets_per_chunk * 3 // 2 + 1))
        path = os.path.join(folder, "jets-%03d.npy" % i)
        if not os.path.exists(path):
            np.save(path, rng.standard_normal((n, FEATURES), dtype=np.float32))
        paths.append(path)
    return paths


def score_chunk(path, model):
    """One task: the class probabilities of one chunk's jets. np.load maps
    nothing into the model: the array is read in place by kiln."""
    jets = np.load(path)
    return model(jets)


def score_chunk_compiling(path, onnx, batch, cache_dir):
    """The same where workers do not see the client's files: each worker
    compiles the model into its own cache (once per machine and options)."""
    model = kiln.compile(onnx, batch=batch, cache_dir=cache_dir)
    return score_chunk(path, model)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--onnx", default=os.path.join(HERE, "..", "jet_tagger", "model.onnx"))
    ap.add_argument("--batch", default="1,16,64", help="compiled batch sizes")
    ap.add_argument("--data", default="jets-data", help="folder of the .npy chunks")
    ap.add_argument("--chunks", type=int, default=8)
    ap.add_argument("--jets-per-chunk", type=int, default=5000)
    ap.add_argument("--cache-dir", default=None, help="kiln.compile's cache (default ~/.cache/kiln)")
    ap.add_argument("--scheduler", default=None,
                    help="address of an existing Dask scheduler (default: a LocalCluster)")
    ap.add_argument("--workers", type=int, default=2, help="LocalCluster worker processes")
    ap.add_argument("--compile-on-workers", action="store_true",
                    help="each worker compiles the model (no shared filesystem for the .so)")
    ap.add_argument("--out", default=None, help="save the scores (.npy)")
    ap.add_argument("--check", action="store_true",
                    help="compare with a run of the same model in this process alone")
    a = ap.parse_args(argv)

    from dask.distributed import Client, LocalCluster

    batch = [int(b) for b in a.batch.split(",")]
    files = make_chunks(a.data, a.chunks, a.jets_per_chunk)
    t0 = time.time()
    model = kiln.compile(a.onnx, batch=batch, cache_dir=a.cache_dir)
    print("model %s: %s, batch sizes %s" % (model.name, model.path, list(model.batch_sizes)))

    cluster = None
    if a.scheduler:
        client = Client(a.scheduler)
    else:
        cluster = LocalCluster(n_workers=a.workers, threads_per_worker=1, processes=True,
                               dashboard_address=None)
        client = Client(cluster)
    try:
        if a.compile_on_workers:
            futures = client.map(score_chunk_compiling, files, onnx=os.path.abspath(a.onnx),
                                 batch=batch, cache_dir=a.cache_dir)
        else:
            futures = client.map(score_chunk, files, model=model)
        parts = client.gather(futures)
        workers = sorted({w for ws in client.who_has(futures).values() for w in ws})
    finally:
        client.close()
        if cluster:
            cluster.close()
    scores = np.concatenate(parts)
    print("%d jets in %d chunks scored on %d workers in %.1f s" %
          (len(scores), len(files), len(workers), time.time() - t0))
    if a.out:
        np.save(a.out, scores)
    if a.check:
        alone = np.concatenate([score_chunk(f, model) for f in files])
        same = alone.shape == scores.shape and np.array_equal(alone.view(np.uint32),
                                                              scores.view(np.uint32))
        print("single process: %s" % ("the same, bit for bit" if same else "DIFFERENT"))
        return 0 if same else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
