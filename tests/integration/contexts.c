/*
 * contexts.c - a context carries its model's identity, and one memory
 * serves several models. Links two models: `data` (the jet tagger, 16 -> 5)
 * and `other` (tests/fixtures/mlp.onnx, 4 -> 3).
 *   1. data_run with a context made for other_model: KILN_WRONG_MODEL and
 *      its sentence; a NULL context: KILN_USAGE; the right one: KILN_OK.
 *   2. The generated per-sample constants agree with the descriptors (and
 *      with the arrays below, at compile time).
 *   3. One per-thread memory of the largest context bytes (the compile-time
 *      maximum of DATA_CONTEXT_BYTES and OTHER_CONTEXT_BYTES, equal to
 *      kiln_context_bytes_max at run time) serves both models in turn,
 *      re-initialised for each, and gives bit for bit what a dedicated
 *      context of each model gives, for every n in 0..40.
 */
#include <assert.h>
#include <math.h>
#include <stdalign.h>
#include <stdio.h>
#include <string.h>

#include "data.h"
#include "other.h"

#define MAXN 40
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define SCRATCH_BYTES MAX(DATA_CONTEXT_BYTES, OTHER_CONTEXT_BYTES)

static alignas(64) unsigned char scratch[SCRATCH_BYTES];
static alignas(64) unsigned char mem_data[DATA_CONTEXT_BYTES];
static alignas(64) unsigned char mem_other[OTHER_CONTEXT_BYTES];

static float jets[MAXN][DATA_IN0_ELEMS], probs[MAXN][DATA_OUT0_ELEMS], probs_ref[MAXN][DATA_OUT0_ELEMS];
static float xs[MAXN][OTHER_IN0_ELEMS], ys[MAXN][OTHER_OUT0_ELEMS], ys_ref[MAXN][OTHER_OUT0_ELEMS];
static_assert(sizeof jets[0] / sizeof jets[0][0] == 16, "the tagger takes 16 features per jet");
static_assert(DATA_IN0_RANK == 2 && DATA_IN0_BATCH_AXIS == 0 && DATA_IN0_DIM1 == 16, "jets [n, 16]");
static_assert(OTHER_OUT0_ELEMS == 3 && OTHER_NUM_INPUTS == 1 && OTHER_NUM_OUTPUTS == 1, "mlp 4 -> 3");

static int fail;
#define CHECK(cond, ...)                                                 \
	do {                                                                 \
		if (!(cond)) {                                                   \
			printf("FAIL: %s: ", #cond);                                 \
			printf(__VA_ARGS__);                                         \
			printf("\n");                                                \
			fail++;                                                      \
		}                                                                \
	} while (0)

int main(void)
{
	for (int i = 0; i < MAXN; i++) {
		for (int k = 0; k < DATA_IN0_ELEMS; k++)
			jets[i][k] = (float)sin(0.1 * (i * DATA_IN0_ELEMS + k));
		for (int k = 0; k < OTHER_IN0_ELEMS; k++)
			xs[i][k] = (float)cos(0.3 * (i * OTHER_IN0_ELEMS + k));
	}

	/* 1. identity */
	kiln_context *ctx_other, *ctx_data;
	CHECK(kiln_context_init(&ctx_other, &other_model, mem_other, sizeof mem_other) == KILN_OK, "init");
	CHECK(kiln_context_init(&ctx_data, &data_model, mem_data, sizeof mem_data) == KILN_OK, "init");
	CHECK(kiln_context_model(ctx_other) == &other_model, "identity");
	int st = data_run(ctx_other, 3, &jets[0][0], &probs[0][0]);
	CHECK(st == KILN_WRONG_MODEL, "data_run on other's context gave %d", st);
	CHECK(strcmp(kiln_status_string(st), "the context was initialised for another model") == 0,
	      "status string \"%s\"", kiln_status_string(st));
	st = other_run(ctx_data, 3, &xs[0][0], &ys[0][0]);
	CHECK(st == KILN_WRONG_MODEL, "other_run on data's context gave %d", st);
	st = data_run(NULL, 3, &jets[0][0], &probs[0][0]);
	CHECK(st == KILN_USAGE, "data_run on NULL gave %d", st);
	st = data_run(ctx_data, 3, &jets[0][0], &probs[0][0]);
	CHECK(st == KILN_OK, "data_run on its own context gave %d", st);

	/* 2. constants against the descriptors */
	int64_t shape[] = DATA_IN0_SHAPE;
	CHECK(data_model.inputs[0].rank == DATA_IN0_RANK && sizeof shape / sizeof shape[0] == DATA_IN0_RANK,
	      "rank");
	for (int d = 0; d < DATA_IN0_RANK; d++)
		CHECK(data_model.inputs[0].dims[d] == shape[d], "dim %d", d);
	CHECK(kiln_tensor_bytes(&other_model.outputs[0], 1) == OTHER_OUT0_ELEMS * sizeof(float), "bytes");

	/* 3. one memory for both models */
	const kiln_model *both[] = {&data_model, &other_model};
	CHECK(kiln_context_bytes_max(both, 2) == SCRATCH_BYTES, "run-time max %llu, compile-time %llu",
	      (unsigned long long)kiln_context_bytes_max(both, 2), (unsigned long long)SCRATCH_BYTES);
	CHECK(kiln_context_bytes(&data_model) == DATA_CONTEXT_BYTES, "data context bytes");
	for (int n = 0; n <= MAXN; n++) {
		kiln_context *c;
		CHECK(kiln_context_init(&c, &data_model, scratch, sizeof scratch) == KILN_OK, "re-init");
		CHECK(data_run(c, n, &jets[0][0], &probs[0][0]) == KILN_OK, "data n=%d", n);
		CHECK(kiln_context_init(&c, &other_model, scratch, sizeof scratch) == KILN_OK, "re-init");
		CHECK(other_run(c, n, &xs[0][0], &ys[0][0]) == KILN_OK, "other n=%d", n);
		CHECK(data_run(c, n, &jets[0][0], &probs[0][0]) == KILN_WRONG_MODEL, "stale context");
		CHECK(data_run(ctx_data, n, &jets[0][0], &probs_ref[0][0]) == KILN_OK, "ref");
		CHECK(other_run(ctx_other, n, &xs[0][0], &ys_ref[0][0]) == KILN_OK, "ref");
		CHECK(memcmp(probs, probs_ref, sizeof(float) * DATA_OUT0_ELEMS * (size_t)n) == 0,
		      "data n=%d differs from a dedicated context", n);
		CHECK(memcmp(ys, ys_ref, sizeof(float) * OTHER_OUT0_ELEMS * (size_t)n) == 0,
		      "other n=%d differs from a dedicated context", n);
	}
	printf("contexts: %s\n", fail ? "FAILED" : "ok");
	return fail != 0;
}
