/*
 * passes/passes.h - the graph optimizer: passes that rewrite the top graph
 * after loading and before the per-signature stages (shape inference of the
 * final graph, plan, emit).
 *
 * The optimizer is memory-first: no pass may leave two stored copies of one
 * weight. Folding happens only when the folded constant's inputs die with it
 * (or the result shares their bytes); a weight read both as itself and
 * transformed keeps one copy and the kernel reads it transformed (a
 * transposed-operand flag). See docs/optimizer.md.
 *
 * How rewriting works on the flat IR (rewrite.c):
 *   - value ids never change, so callers holding ids (kiln verify) stay valid;
 *     a value whose producer is removed becomes an orphan: VAL_TEMP, no
 *     producer, no use, never emitted;
 *   - nodes are removed by marking them dead and added to a pending list that
 *     says which node they go before; rw_commit rebuilds g->nodes in order;
 *   - shape-dependent decisions read the shapes inferred at the start of the
 *     iteration for every signature being compiled, and hold for all of them.
 * Passes run on the top graph only; subgraph bodies are left as loaded.
 */
#ifndef KILN_PASSES_H
#define KILN_PASSES_H

#include "sig.h"

/* The passes, in the order one iteration runs them. */
typedef enum PassId {
	PASS_NOOP,     /* noop.c: Identity, inference Dropout, same-type Cast, ... */
	PASS_DEDUP,    /* dedup.c: identical initializers -> one */
	PASS_CSE,      /* cse.c: identical nodes on identical inputs -> one */
	PASS_EINSUM,   /* einsum.c: two-operand Einsum -> Transpose/Reshape/MatMul */
	PASS_FOLD,     /* fold.c: constant subgraphs whose inputs die with them */
	PASS_QDQ,      /* qdq.c: DQ -> Conv/MatMul/Gemm -> Q as exact integer products */
	PASS_LASTPOS,  /* lastpos.c: a pick of one position moves up through row-wise ops */
	PASS_ONEHOT,   /* onehot.c: MatMul by a constant one-1-per-column matrix -> Gather */
	PASS_MLPCONV,  /* mlpconv.c: Linear layers on a transposed [N, C, R] -> 1x1 Convs */
	PASS_ATTENTION, /* attention.c: MatMul, scale, mask, Softmax, MatMul -> one kernel */
	PASS_FUSE,     /* fuse.c: BatchNorm into Conv/Gemm, MatMul+Add -> Gemm, epilogues */
	PASS_ADDNORM,  /* addnorm.c: residual Add + LayerNormalization -> one kernel */
	PASS_EDGECONV, /* edgeconv.c: kNN EdgeConv (Gather, Sub, Concat, 1x1 Convs, mean) -> one node */
	PASS_CONVCHAIN, /* convchain.c: a chain of 1x1 Convs over [N, C, P] -> one node */
	PASS_SCATTERROWS, /* scatterrows.c: ScatterND at index_put's tuples -> per-sample scatter */
	PASS_DCE,      /* dce.c: nodes and optional outputs nobody reads */
	PASS_EWCHAIN,  /* ewchain.c: elementwise chains computed in one loop (marks values) */
	PASS_F16,      /* f16.c: --weights-dtype fp16 (once, after the fixed point) */
	PASS_COUNT
} PassId;

typedef enum WeightsDtype {
	WEIGHTS_KEEP,  /* store weights as the model has them (default) */
	WEIGHTS_FP32,  /* fold Cast(float16 weight -> float32) at compile time */
	WEIGHTS_FP16   /* store float32 weights as float16, widened at run time */
} WeightsDtype;

typedef struct PassOptions {
	bool no_opt;                  /* --no-opt: run no pass at all */
	bool disabled[PASS_COUNT];    /* --no-pass=NAME */
	WeightsDtype weights_dtype;   /* --weights-dtype */
	bool qdq_float;               /* --qdq=float: the qdq pass does not run (it does by default) */
} PassOptions;

typedef struct PassStat {
	bool seen;                    /* the pass ran at least once */
	int runs;                     /* iterations in which the pass changed something */
	int removed;                  /* nodes removed */
	int fused;                    /* nodes merged into another node */
	int added;                    /* nodes added (lowering) */
	uint64_t bytes_before;        /* stored weight bytes before the pass first ran */
	uint64_t bytes_after;         /* ... and after it last ran */
} PassStat;

typedef struct PassReport {
	PassStat pass[PASS_COUNT];
	int iterations;
	int nodes_before, nodes_after;
	uint64_t bytes_before, bytes_after;  /* unique bytes of the weights nodes read */
	bool ran;                            /* false with --no-opt */
} PassReport;

const char *pass_name(int id);        /* "noop", "dedup", ... */
int pass_lookup(const char *name);    /* NONE if unknown */
/* Parse "fp32" | "fp16" | "keep"; false if it is none of them. */
bool weights_dtype_parse(const char *s, WeightsDtype *out);

/* Run the pipeline to a fixed point on m's top graph. The signatures (batch
 * sizes and bindings) are the ones that will be compiled: a rewrite that
 * depends on shapes is made only if it holds in all of them. Idempotent:
 * a second call on the same model does nothing (m->is_optimized). */
void passes_run(Model *m, const PassOptions *o, const int64_t *batches, int nbatches,
                const BindOptions *bind, PassReport *r);
/* The same for every batch size under each of nbinds bindings (the buckets of
 * compile --dim SYMBOL=v1,v2,...): a rewrite must hold in all of them. */
void passes_run_binds(Model *m, const PassOptions *o, const int64_t *batches, int nbatches,
                      const BindOptions *binds, int nbinds, PassReport *r);
void passes_print(const PassReport *r, FILE *out);

/* Unique bytes of the weights that nodes of m's graphs read (what the
 * weights object will hold, before code generation's own folding). */
uint64_t passes_weight_bytes(Graph *g);

#endif
