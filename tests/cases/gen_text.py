# TfIdfVectorizer cases in libonnx-testdata format: the IDF and TFIDF modes,
# weights, 1-D input and int32/int64 tokens, which the ONNX 1.12 data does not
# cover (it has TF only). Reference: the spec's counting, in numpy.
#   usage: gen_text.py OUTDIR
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def reference(x, min_g, max_g, max_skip, mode, pool, counts, indexes, weights):
    rows = x if x.ndim == 2 else x[None]
    ordinal, index = 0, {}
    for level, start in enumerate(counts):
        n = level + 1
        end = counts[level + 1] if level + 1 < len(counts) else len(pool)
        for k in range(start, end, n):
            index[(n, tuple(pool[k:k + n]))] = ordinal
            ordinal += 1
    out = np.zeros((rows.shape[0], max(indexes) + 1), np.float32)
    for r, row in enumerate(rows):
        count = np.zeros(ordinal)
        for n in range(min_g, max_g + 1):
            for step in ([1] if n == 1 else range(1, max_skip + 2)):
                for i in range(len(row) - (n - 1) * step):
                    key = (n, tuple(int(row[i + j * step]) for j in range(n)))
                    if key in index:
                        count[index[key]] += 1
        for o in range(ordinal):
            w = weights[o] if weights else 1.0
            out[r, indexes[o]] = (count[o] if mode == "TF" else
                                  (w if count[o] > 0 else 0) if mode == "IDF" else count[o] * w)
    return out if x.ndim == 2 else out[0]


def case(root, name, x, **attrs):
    d = os.path.join(root, name, "test_data_set_0")
    os.makedirs(d, exist_ok=True)
    y = reference(x, attrs["min_gram_length"], attrs["max_gram_length"], attrs["max_skip_count"],
                  attrs["mode"], attrs["pool_int64s"], attrs["ngram_counts"],
                  attrs["ngram_indexes"], attrs.get("weights"))
    node = helper.make_node("TfIdfVectorizer", ["x"], ["y"], **attrs)
    xt = TensorProto.INT32 if x.dtype == np.int32 else TensorProto.INT64
    g = helper.make_graph([node], name, [helper.make_tensor_value_info("x", xt, x.shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, y.shape)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 9)])
    onnx.save(m, os.path.join(root, name, "model.onnx"))
    with open(os.path.join(d, "input_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(x, "x").SerializeToString())
    with open(os.path.join(d, "output_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(y, "y").SerializeToString())


def main():
    root = sys.argv[1]
    rng = np.random.default_rng(3)
    pool = [2, 3, 5, 4, 5, 6, 7, 8, 6, 7, 2, 3, 5]   # 4 unigrams, 3 bigrams, 1 trigram
    common = dict(ngram_counts=[0, 4, 10], ngram_indexes=[7, 0, 1, 2, 3, 4, 5, 6],
                  pool_int64s=pool)
    w = [0.5, 1.5, 2.0, 0.25, 3.0, 1.0, 0.75, 4.0]
    x2 = rng.integers(2, 9, (3, 12)).astype(np.int64)
    case(root, "tfidf_idf_weights", x2, min_gram_length=1, max_gram_length=3, max_skip_count=2,
         mode="IDF", weights=w, **common)
    case(root, "tfidf_tfidf_weights", x2, min_gram_length=1, max_gram_length=3,
         max_skip_count=1, mode="TFIDF", weights=w, **common)
    case(root, "tfidf_idf_noweights_1d", rng.choice([2, 3, 5, 6, 7, 8], 40).astype(np.int32),
         min_gram_length=2, max_gram_length=3, max_skip_count=3, mode="IDF", **common)
    case(root, "tfidf_tf_trigrams_int32", rng.choice([2, 3, 5], (4, 9)).astype(np.int32),
         min_gram_length=3, max_gram_length=3, max_skip_count=4, mode="TF", **common)


if __name__ == "__main__":
    main()
