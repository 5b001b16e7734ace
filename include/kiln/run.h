/*
 * run.h - run a kiln-compiled model on any batch size n >= 0 from the few
 * batch sizes it was compiled for (batch stitching and padding).
 *
 * A context holds everything one thread mutates: the arena of the largest
 * compiled signature, a staging area for the one padded chunk, the cost of
 * each compiled size, the plan of every n up to a bound, and the explicit
 * batch rules. It lives in memory the caller gives once
 * (kiln_context_bytes(), or NAME_CONTEXT_BYTES from the generated header);
 * kiln_run never allocates, locks or prints. The model descriptor and its
 * weights are immutable and shared: give each thread its own context.
 *
 * How n rows are run:
 *   - n == 0: success, nothing is touched;
 *   - n a compiled size: one call on the caller's buffers, no copy;
 *   - otherwise a sequence of compiled sizes (an explicit rule for n, else
 *     the cheapest by the cost model): full chunks read and write the
 *     caller's buffers in place at their row offset when every batched tensor
 *     has its batch on axis 0, and only a final padded chunk is staged: its
 *     valid rows are copied into the staging area, its padded rows set to
 *     zero, and its valid output rows copied back. A model the compiler could
 *     not prove batch independent refuses such n with KILN_BATCH_MIXING.
 *
 * Batch rules use the syntax of CMSSW's TensorFlow AOT wrapper:
 * "B:s1,s2,...,sk" runs a batch of exactly B as chunks s1, ..., sk in that
 * order, padding only the last. A rule is checked when it is set: sizes must
 * be compiled, their sum at least B, and the padding (sum - B) smaller than
 * the last size. See docs/batching.md.
 */
#ifndef KILN_RUN_H
#define KILN_RUN_H

#include <stddef.h>
#include <stdint.h>

#include "kiln/kiln.h"
#include "kiln/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A caller's input buffer: n rows, dense and row-major, of the descriptor's
 * element type. bytes is the buffer's size, checked against what n needs. */
typedef struct kiln_input {
	const void *data;
	int dtype;                 /* enum kiln_dtype; must match the descriptor */
	uint64_t bytes;
} kiln_input;

typedef struct kiln_output {
	void *data;
	int dtype;
	uint64_t bytes;
} kiln_output;

/* ---- context memory ---------------------------------------------------- */

/* Room for the context's own fields (checked by a static assertion). */
#define KILN_CONTEXT_HEADER_BYTES 4096
#define KILN_MAX_IO 128            /* inputs and outputs each, for stitching */
#define KILN_MAX_RULES 8
#define KILN_MAX_RULE_CHUNKS 32
#define KILN_ALIGN64(x) ((((uint64_t)(x)) + 63u) / 64u * 64u)
/* Plans are tabulated for every n up to the bound (a cost and a choice per
 * n, 10 bytes); past it, n first drops by the size with the least cost per
 * row. Around max_batch^2 the optimal cover becomes periodic; the bound is
 * that, at least 256, at most 16384 unless the largest size is bigger. */
#define KILN_PLAN_BOUND(max_batch)                                           \
	((max_batch) * (max_batch) < 256 ? 256                                   \
	 : (max_batch) * (max_batch) <= 16384 ? (max_batch) * (max_batch)        \
	 : (max_batch) > 16384 ? (max_batch) : 16384)
/* Exact bytes of a context: 64 bytes of alignment slack, the header, the
 * per-size costs, the plan table, the staging area (every input and output
 * at the largest size) and the arena. The
 * generated NAME_CONTEXT_BYTES is this, evaluated by the compiler. */
#define KILN_CONTEXT_BYTES(nbatches, plan_bound, staging_bytes, arena_bytes)        \
	(64u + (uint64_t)KILN_CONTEXT_HEADER_BYTES + KILN_ALIGN64(8u * (uint64_t)(nbatches)) + \
	 KILN_ALIGN64(10u * ((uint64_t)(plan_bound) + 1u)) + KILN_ALIGN64(staging_bytes) +   \
	 KILN_ALIGN64(arena_bytes))

/* A bucketed model (kiln compile --dim SYMBOL=v1,...,vk) has at most this
 * many buckets. Its context is KILN_CONTEXT_BYTES of the largest bucket: the
 * smaller buckets run in its staging area and arena, and their plans are
 * static tables of their descriptors (kiln_model.plan). */
#define KILN_BUCKETS_MAX 16

typedef struct kiln_context kiln_context;

/* The bytes of one dense tensor of the model at batch n (its per-sample
 * dims, the batch axis scaled by n; int4/uint4 packed, (elements + 1) / 2);
 * UINT64_MAX if that overflows. */
KILN_API uint64_t kiln_tensor_bytes(const kiln_tensor_desc *t, int64_t n);

/* The bytes a context for m needs (any alignment is fine). */
KILN_API uint64_t kiln_context_bytes(const kiln_model *m);

/* Set up a context for m in mem (bytes >= kiln_context_bytes(m)): costs
 * from the descriptor, the plan of every n up to the bound, the baked rules.
 * KILN_USAGE for a NULL argument, a descriptor of another kiln version or
 * too few bytes. *ctx points into mem; nothing else is allocated. */
KILN_API int kiln_context_init(kiln_context **ctx, const kiln_model *m, void *mem,
                               uint64_t bytes);

/* The same in memory obtained once from malloc (the only allocating call of
 * libkiln); KILN_NO_MEMORY if that fails. Free with kiln_context_destroy. */
KILN_API int kiln_context_create(kiln_context **ctx, const kiln_model *m);
KILN_API void kiln_context_destroy(kiln_context *ctx);

/* The model a context was initialised for (NULL for a NULL context): its
 * identity. A generated NAME_run refuses any context whose model is not
 * its own NAME_model with KILN_WRONG_MODEL. */
KILN_API const kiln_model *kiln_context_model(const kiln_context *ctx);

/* The largest kiln_context_bytes of n models: one memory of this size
 * serves each of them in turn (kiln_context_init it again for the model
 * about to run; the plans are rebuilt, baked rules included, and rules or
 * costs set since are dropped). 0 if a model is NULL. */
KILN_API uint64_t kiln_context_bytes_max(const kiln_model *const *models, int n);

/* ---- running ----------------------------------------------------------- */

/* The thread's floating-point environment around a call (runtime/fpenv.c):
 * kiln_fpenv_enter sets round-to-nearest, subnormals kept (no FTZ/DAZ) and
 * every exception masked, and returns what it found; kiln_fpenv_leave puts
 * that back, status flags included. kiln_run, kiln_run_lengths and the
 * generated NAME_run_* entries call them, so a caller's -ffast-math library
 * or feenableexcept does not change kiln's results (docs/reproducibility.md). */
typedef struct kiln_fpenv {
	uint64_t saved;            /* the control register as the caller had it */
	int changed;               /* whether enter wrote it (leave restores it) */
} kiln_fpenv;

KILN_API kiln_fpenv kiln_fpenv_enter(void);
KILN_API void kiln_fpenv_leave(kiln_fpenv e);


/* Run the model on n rows. inputs and outputs follow the descriptor's order
 * (m->inputs, m->outputs). Returns KILN_OK, KILN_USAGE (bad arguments,
 * element type or buffer size), KILN_BATCH_MIXING (n is not compiled and
 * the model mixes rows), or the status of a generated run function. */
KILN_API int kiln_run(kiln_context *ctx, int64_t n, const kiln_input *inputs,
                      const kiln_output *outputs);

/* Run n samples of their own lengths along a bucketed dim (a model compiled
 * with kiln compile --dim SYMBOL=v1,...,vk; KILN_USAGE for another).
 * lengths[i] is sample i's length, 0 <= lengths[i] <= min(lmax, vk); lmax
 * < 0 means the longest length. Every input and output that carries the dim
 * (m->bucket_axis) holds n samples at lmax along it: the caller's padded
 * layout ([n, C, lmax]); the others hold n samples as for kiln_run. Each
 * sample runs in the smallest bucket that fits it, positions from its length
 * up to the bucket's set to zero (mask inputs too), the samples of one
 * bucket stitched into batches as kiln_run does; outputs are written in the
 * caller's order, positions past a sample's length zeroed. Nothing is
 * allocated. KILN_LENGTH for a length out of range (nothing is run). */
KILN_API int kiln_run_lengths(kiln_context *ctx, int64_t n, const int64_t *lengths,
                              int64_t lmax, const kiln_input *inputs,
                              const kiln_output *outputs);
/* The largest of n lengths (0 for none): kiln_run_lengths' lmax < 0. */
KILN_API int64_t kiln_lengths_max(int64_t n, const int64_t *lengths);

/* The plans of compiled sizes batches[0..nbatches) (ascending) at costs
 * cost[]: choice[n], for every n up to bound, is the index of the size of
 * n's first chunk in a cheapest cover of n rows, and best[n] its cost. Returns
 * the index of the size with the least cost per row (the chunk past bound).
 * kiln_context_init computes this for its costs, kiln compile for the smaller
 * buckets of a bucketed model (their descriptor's plan). */
KILN_API int kiln_plan_table(const int64_t *batches, int nbatches, const double *cost,
                             int64_t bound, double *best, uint16_t *choice);

/* The chunk sizes kiln_run uses for n, in order (the last may be padded):
 * writes at most max to chunks and the count to *nchunks (saturated at
 * INT_MAX). KILN_LIMIT if max is too small, KILN_BATCH_MIXING as kiln_run.
 * Takes time in the table's bound, not in n: any n up to INT64_MAX. */
KILN_API int kiln_context_plan(const kiln_context *ctx, int64_t n, int64_t *chunks, int max,
                               int *nchunks);

/* ---- batch rules --------------------------------------------------------- */

typedef struct kiln_rule {
	int64_t batch;
	int nchunks;
	int64_t chunks[KILN_MAX_RULE_CHUNKS];
} kiln_rule;

/* Parse and check "B:s1,...,sk" against the compiled sizes. Statuses:
 * KILN_RULE_SYNTAX (no colon, not decimal sizes, B or a size of 0, empty),
 * KILN_RULE_SIZE (a size that is not compiled), KILN_RULE_SHORT (sum < B),
 * KILN_RULE_PADDING (sum - B >= the last size), KILN_LIMIT (more than
 * KILN_MAX_RULE_CHUNKS sizes). */
KILN_API int kiln_rule_parse(const char *text, const int64_t *sizes, int nsizes, kiln_rule *out);

/* Add a rule to the context (replacing one for the same B); the statuses of
 * kiln_rule_parse, KILN_LIMIT past KILN_MAX_RULES rules, KILN_BATCH_MIXING
 * for a model that mixes rows. */
KILN_API int kiln_context_set_rule(kiln_context *ctx, const char *text);
/* Drop every rule, the baked ones included. */
KILN_API void kiln_context_clear_rules(kiln_context *ctx);

/* ---- the cost model ------------------------------------------------------ */

/* Replace the per-call cost of each compiled size (m->nbatches values, any
 * positive unit) and recompute the plans. KILN_USAGE if one is not > 0. */
KILN_API int kiln_context_set_costs(kiln_context *ctx, const double *cost);
/* Measure each compiled size on this machine (the median of reps calls on
 * zeroed inputs in the staging area) and use those times as the costs.
 * Writes the times (ns) to measured_ns if not NULL. */
KILN_API int kiln_context_calibrate(kiln_context *ctx, int reps, double *measured_ns);
/* The costs in use (m->nbatches values). */
KILN_API const double *kiln_context_costs(const kiln_context *ctx);

/* The staging area (for tests that poison it first). */
KILN_API void *kiln_context_staging(kiln_context *ctx, uint64_t *bytes);

#ifdef __cplusplus
}
#endif
#endif
