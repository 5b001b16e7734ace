/*
 * stitch.c - the cost of batch stitching. Linked with one model compiled
 * twice (bench/stitch.sh): `stitch` at a few batch sizes, run through
 * kiln_run, and `exact` at every size 1..NMAX, called directly.
 *
 * For each n it prints the median time per sample of
 *   exact     the model compiled at exactly n (one direct call);
 *   stitched  kiln_run(n) from the few compiled sizes (plan shown);
 *   chunks    the same chunk sizes called directly on ready buffers, with
 *             no copies: what stitching costs besides padding is
 *             stitched - chunks;
 * and the two overheads in percent. Times: CLOCK_MONOTONIC, median of REPS
 * calls after warm-up. usage: stitch NMAX REPS [calibrate]
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/run.h"
#include "timing.h"
#include "exact.h"
#include "stitch.h"

enum { MAXT = 16 };
static double samples[1001];

/* Median ns of reps calls of what (0 exact, 1 stitched, 2 chunks). */
static double time_it(int what, int64_t n, int reps, kiln_context *ctx, void *arena,
                      const kiln_input *in, const kiln_output *out, const int64_t *chunks,
                      int nchunks)
{
	const kiln_model *ex = &exact_model, *st = &stitch_model;
	const void *ins[MAXT];
	void *outs[MAXT];
	for (int t = 0; t < ex->ninputs; t++)
		ins[t] = in[t].data;
	for (int t = 0; t < ex->noutputs; t++)
		outs[t] = out[t].data;
	for (int r = -3; r < reps; r++) {
		double s = now_ns();
		if (what == 0) {
			ex->run[n - 1](arena, ins, outs);
		} else if (what == 1) {
			kiln_run(ctx, n, in, out);
		} else {
			for (int c = 0; c < nchunks; c++)
				for (int i = 0; i < st->nbatches; i++)
					if (st->batches[i] == chunks[c])
						st->run[i](arena, ins, outs);
		}
		if (r >= 0)
			samples[r] = now_ns() - s;
	}
	qsort(samples, (size_t)reps, sizeof samples[0], cmp_double);
	return samples[reps / 2];
}

int main(int argc, char **argv)
{
	int64_t nmax = argc > 1 ? atoll(argv[1]) : 256;
	int reps = argc > 2 ? atoi(argv[2]) : 51;
	int calibrate = argc > 3 && strcmp(argv[3], "calibrate") == 0;
	if (reps < 1 || reps > 1000 || nmax > exact_model.nbatches)
		return 2;
	const kiln_model *ex = &exact_model, *st = &stitch_model;
	kiln_context *ctx;
	if (kiln_context_create(&ctx, st) != KILN_OK)
		return 2;
	if (calibrate)
		kiln_context_calibrate(ctx, 51, NULL);
	uint64_t arena_bytes = ex->max_arena_bytes > st->max_arena_bytes ? ex->max_arena_bytes
	                                                                 : st->max_arena_bytes;
	void *arena = aligned_alloc(64, (arena_bytes + 63) / 64 * 64 + 64);
	kiln_input in[MAXT];
	kiln_output out[MAXT];
	uint64_t seed = 1;
	for (int t = 0; t < ex->ninputs; t++) {
		uint64_t b = kiln_tensor_bytes(&ex->inputs[t], nmax);
		float *p = aligned_alloc(64, (b + 63) / 64 * 64 + 64);
		for (uint64_t j = 0; j < b / 4; j++) {
			seed = seed * 6364136223846793005u + 1442695040888963407u;
			p[j] = (float)((seed >> 40) % 2000) / 1000.0f - 1.0f;
		}
		in[t] = (kiln_input){p, ex->inputs[t].dtype, 0};
	}
	for (int t = 0; t < ex->noutputs; t++) {
		uint64_t b = kiln_tensor_bytes(&ex->outputs[t], nmax);
		out[t] = (kiln_output){aligned_alloc(64, (b + 63) / 64 * 64 + 64), ex->outputs[t].dtype, 0};
	}
	printf("compiled sizes:");
	for (int i = 0; i < st->nbatches; i++)
		printf(" %lld", (long long)st->batches[i]);
	printf("; costs: %s; median of %d calls\n", calibrate ? "calibrated" : "estimated", reps);
	printf("%5s %-24s %12s %12s %12s %9s %9s\n", "n", "plan", "exact us/s", "stitch us/s",
	       "chunks us/s", "vs exact", "stitching");
	/* Warm up caches and clocks before the first row. */
	for (int64_t n = 1; n <= nmax; n += 7) {
		int64_t chunks[1024];
		int k;
		kiln_context_plan(ctx, n, chunks, 1024, &k);
		for (int t = 0; t < ex->ninputs; t++)
			in[t].bytes = kiln_tensor_bytes(&ex->inputs[t], n);
		for (int t = 0; t < ex->noutputs; t++)
			out[t].bytes = kiln_tensor_bytes(&ex->outputs[t], n);
		for (int w = 0; w < 3; w++)
			time_it(w, n, 5, ctx, arena, in, out, chunks, k);
	}
	double sum_vs = 0, sum_mech = 0, max_mech = -1e9;
	for (int64_t n = 1; n <= nmax; n++) {
		for (int t = 0; t < ex->ninputs; t++)
			in[t].bytes = kiln_tensor_bytes(&ex->inputs[t], n);
		for (int t = 0; t < ex->noutputs; t++)
			out[t].bytes = kiln_tensor_bytes(&ex->outputs[t], n);
		int64_t chunks[1024];
		int k;
		kiln_context_plan(ctx, n, chunks, 1024, &k);
		char plan[64] = "";
		for (int c = 0; c < k && strlen(plan) < 40; c++)
			snprintf(plan + strlen(plan), sizeof plan - strlen(plan), "%s%lld", c ? "+" : "",
			         (long long)chunks[c]);
		if (strlen(plan) > 24)
			strcpy(plan + 21, "...");
		double te = time_it(0, n, reps, ctx, arena, in, out, chunks, k);
		double ts = time_it(1, n, reps, ctx, arena, in, out, chunks, k);
		double tc = time_it(2, n, reps, ctx, arena, in, out, chunks, k);
		double vs = (ts / te - 1) * 100, mech = (ts / tc - 1) * 100;
		sum_vs += vs;
		sum_mech += mech;
		max_mech = mech > max_mech ? mech : max_mech;
		printf("%5lld %-24s %12.4f %12.4f %12.4f %8.1f%% %8.1f%%\n", (long long)n, plan,
		       te / 1e3 / (double)n, ts / 1e3 / (double)n, tc / 1e3 / (double)n, vs, mech);
	}
	printf("mean over n = 1..%lld: stitched vs exact %+.1f%%, stitching vs the same chunks "
	       "called directly %+.1f%% (max %+.1f%%)\n", (long long)nmax, sum_vs / (double)nmax,
	       sum_mech / (double)nmax, max_mech);
	kiln_context_destroy(ctx);
	return 0;
}
