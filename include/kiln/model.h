/*
 * model.h - the descriptor every kiln-generated model exports, so that
 * programs (and libkiln's batch stitching) can drive any compiled model
 * without knowing its generated function names.
 *
 * A generated NAME.h declares `extern const kiln_model NAME_model;` plus typed
 * entry points NAME_run_bB per compiled batch size, and NAME_run for any
 * batch size through a kiln_run context (kiln/run.h). Everything here is
 * immutable and shared by all threads; each thread passes its own arena or
 * context.
 */
#ifndef KILN_MODEL_H
#define KILN_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "kiln/kiln.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Element types, numbered as ONNX's TensorProto.DataType. Buffers hold
 * float16 and bfloat16 as uint16_t bit patterns; the four float8 types as
 * uint8_t bit patterns (kiln/float8.h converts); int4 and uint4 packed two
 * a byte, element 2k in the low nibble of byte k and 2k+1 in the high one,
 * so n elements take (n + 1) / 2 bytes and an odd n ends in a zero nibble
 * (as ONNX's raw_data; kiln/int4.h reads and writes them). */
enum kiln_dtype {
	KILN_FLOAT32 = 1, KILN_UINT8 = 2, KILN_INT8 = 3, KILN_UINT16 = 4, KILN_INT16 = 5,
	KILN_INT32 = 6, KILN_INT64 = 7, KILN_BOOL = 9, KILN_FLOAT16 = 10, KILN_FLOAT64 = 11,
	KILN_UINT32 = 12, KILN_UINT64 = 13, KILN_BFLOAT16 = 16,
	KILN_FLOAT8E4M3FN = 17, KILN_FLOAT8E4M3FNUZ = 18, KILN_FLOAT8E5M2 = 19,
	KILN_FLOAT8E5M2FNUZ = 20, KILN_UINT4 = 21, KILN_INT4 = 22
};

/* One graph input or output. dims is the per-sample shape: the batch axis
 * at 1 (its size at batch B is B times that). batch_axis is -1 for a tensor
 * whose shape does not follow the batch. Buffers are dense and row-major. */
typedef struct kiln_tensor_desc {
	const char *name;
	int dtype;                 /* enum kiln_dtype */
	int rank;
	const int64_t *dims;       /* rank entries */
	int batch_axis;
} kiln_tensor_desc;

/* Runs the model at one compiled batch size. inputs[i] and outputs[i] follow
 * the descriptor's order. Returns 0 (KILN_OK) or an enum kiln_status. */
typedef int (*kiln_run_fn)(void *arena, const void *const *inputs, void *const *outputs);

typedef struct kiln_model {
	uint32_t struct_bytes;     /* sizeof(kiln_model) when generated: room to grow */
	uint32_t kiln_version;     /* KILN_VERSION_NUM of the compiler */
	const char *name;
	int ninputs, noutputs;
	const kiln_tensor_desc *inputs, *outputs;
	int nbatches;              /* compiled batch sizes, ascending */
	const int64_t *batches;
	const uint64_t *arena_bytes;   /* per batch size */
	const kiln_run_fn *run;        /* per batch size */
	uint64_t max_arena_bytes;

	/* ---- batch stitching (kiln/run.h); added in struct_bytes' room ---- */
	const double *cost;            /* per batch size: estimated ns per call (the default
	                                  cost model: call overhead + FLOPs + bytes moved) */
	const uint64_t *flops;         /* per batch size: what the estimate is made of */
	const uint64_t *traffic_bytes;
	int batch_independent;         /* 1: the compiler proved no op mixes rows */
	const char *batch_mixing;      /* else why not, naming the node; NULL if independent */
	int nrules;                    /* baked "B:s1,...,sk" rules (kiln compile --batch-rule) */
	const char *const *rules;
	int64_t plan_bound;            /* plans are tabulated for n up to this */
	uint64_t staging_bytes;        /* the padded chunk's inputs and outputs at the largest size */
	uint64_t context_bytes;        /* KILN_CONTEXT_BYTES of this model */

	/* ---- buckets (kiln compile --dim SYMBOL=v1,...,vk; kiln_run_lengths) ---- */
	const char *bucket_symbol;     /* the bucketed dim's name; NULL: no buckets */
	int nbuckets;                  /* k >= 2, or 0 */
	const int64_t *buckets;        /* the values, ascending; this model's own dims are
	                                  at the largest */
	const struct kiln_model *const *bucket_models;  /* per value: the model compiled at it
	                                  (the same batch sizes; the last is this one) */
	const int *bucket_axis;        /* per input, then per output: the axis of its dims
	                                  that is SYMBOL, or -1 */
	const uint16_t *plan;          /* a smaller bucket's model: kiln_plan_table's choice[]
	                                  for .cost, plan_bound + 1 entries (a context of the
	                                  top model reads it); NULL otherwise */
} kiln_model;

#ifdef __cplusplus
}
#endif
#endif
