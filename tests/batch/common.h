/*
 * common.h - what the batch-stitching tests share: buffers for n rows of a
 * model's inputs and outputs, made from its descriptor, deterministic
 * inputs, a direct run at a compiled size, and the verify comparison.
 */
#ifndef KILN_TESTS_BATCH_COMMON_H
#define KILN_TESTS_BATCH_COMMON_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/run.h"

enum { MAX_T = 8 };

static inline uint64_t dtype_bytes(int dtype)
{
	switch (dtype) {
	case KILN_FLOAT64: case KILN_INT64: case KILN_UINT64: return 8;
	case KILN_FLOAT32: case KILN_INT32: case KILN_UINT32: return 4;
	case KILN_FLOAT16: case KILN_BFLOAT16: case KILN_INT16: case KILN_UINT16: return 2;
	default: return 1;
	}
}

static inline int is_4bit(int dtype)
{
	return dtype == KILN_INT4 || dtype == KILN_UINT4;
}

/* Bytes of tensor t at batch n; outer/row as libkiln stages them (row in
 * bytes, in elements for the packed 4-bit types: (elements + 1) / 2 bytes). */
static inline uint64_t tbytes(const kiln_tensor_desc *t, int64_t n, uint64_t *outer, uint64_t *row)
{
	uint64_t o = 1, r = is_4bit(t->dtype) ? 1 : dtype_bytes(t->dtype);
	for (int k = 0; k < t->rank; k++) {
		if (t->batch_axis >= 0 && k < t->batch_axis)
			o *= (uint64_t)t->dims[k];
		else
			r *= (uint64_t)t->dims[k];
	}
	if (outer)
		*outer = o;
	if (row)
		*row = r;
	uint64_t units = t->batch_axis >= 0 ? o * r * (uint64_t)n : o * r;
	return is_4bit(t->dtype) ? (units + 1) / 2 : units;
}

typedef struct Bufs {
	int64_t n;
	void *in[MAX_T], *out[MAX_T];
	kiln_input vin[MAX_T];
	kiln_output vout[MAX_T];
} Bufs;

static inline uint64_t rng_next(uint64_t *s)
{
	*s = *s * 6364136223846793005u + 1442695040888963407u;
	return *s >> 33;
}

/* Inputs for n rows (floats in [-1, 1), integers in [0, 10): valid indices
 * for the embedding), outputs filled with `fill`. */
static inline void bufs_make(Bufs *b, const kiln_model *m, int64_t n, uint64_t seed, int fill)
{
	memset(b, 0, sizeof *b);
	b->n = n;
	for (int t = 0; t < m->ninputs; t++) {
		uint64_t bytes = tbytes(&m->inputs[t], n, NULL, NULL);
		unsigned char *p = malloc(bytes + 1);
		uint64_t e = is_4bit(m->inputs[t].dtype) ? 1 : dtype_bytes(m->inputs[t].dtype);
		for (uint64_t i = 0; i < bytes / e; i++) {
			uint64_t r = rng_next(&seed);
			if (m->inputs[t].dtype == KILN_FLOAT32) {
				float v = (float)(r % 2000) / 1000.0f - 1.0f;
				memcpy(p + i * 4, &v, 4);
			} else if (m->inputs[t].dtype == KILN_INT64) {
				int64_t v = (int64_t)(r % 10);
				memcpy(p + i * 8, &v, 8);
			} else if (is_4bit(m->inputs[t].dtype)) {
				p[i] = (unsigned char)r;   /* two nibbles, any values */
			} else {
				memset(p + i * e, (int)(r % 10), e);
			}
		}
		b->in[t] = p;
		b->vin[t] = (kiln_input){p, m->inputs[t].dtype, bytes};
	}
	for (int t = 0; t < m->noutputs; t++) {
		uint64_t bytes = tbytes(&m->outputs[t], n, NULL, NULL);
		b->out[t] = malloc(bytes + 1);
		memset(b->out[t], fill, bytes);
		b->vout[t] = (kiln_output){b->out[t], m->outputs[t].dtype, bytes};
	}
}

static inline void bufs_free(Bufs *b)
{
	for (int t = 0; t < MAX_T; t++) {
		free(b->in[t]);
		free(b->out[t]);
	}
}

/* The direct computation: the model compiled at exactly n, one call. */
static inline int run_direct(const kiln_model *ref, const Bufs *inputs, Bufs *outputs)
{
	for (int i = 0; i < ref->nbatches; i++)
		if (ref->batches[i] == inputs->n) {
			void *arena = aligned_alloc(64, (ref->max_arena_bytes + 63) / 64 * 64 + 64);
			int st = ref->run[i](arena, (const void *const *)inputs->in, outputs->out);
			free(arena);
			return st;
		}
	return -1;
}

/* kiln verify's comparison: floats within atol 1e-5 + rtol 1e-3, others exact. */
static inline int outputs_match(const kiln_model *m, const Bufs *got, const Bufs *want, char *why,
                                size_t whysz)
{
	for (int t = 0; t < m->noutputs; t++) {
		uint64_t bytes = tbytes(&m->outputs[t], got->n, NULL, NULL);
		if (m->outputs[t].dtype != KILN_FLOAT32) {
			if (memcmp(got->out[t], want->out[t], bytes)) {
				snprintf(why, whysz, "output %s differs", m->outputs[t].name);
				return 0;
			}
			continue;
		}
		const float *g = got->out[t], *w = want->out[t];
		for (uint64_t i = 0; i < bytes / 4; i++)
			if (!(fabs((double)g[i] - (double)w[i]) <= 1e-5 + 1e-3 * fabs((double)w[i]))) {
				snprintf(why, whysz, "output %s[%llu] = %g, direct %g", m->outputs[t].name,
				         (unsigned long long)i, (double)g[i], (double)w[i]);
				return 0;
			}
	}
	return 1;
}

#endif
