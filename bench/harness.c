/*
 * harness.c - time a kiln-compiled model in-process. Linked with a model
 * compiled as `--name bench`; drives it through its descriptor, so one
 * harness serves every model.
 *
 * For each compiled batch size: fill inputs with fixed pseudo-random values,
 * warm up, then time `reps` calls one by one (CLOCK_MONOTONIC) and report the
 * median and 90th percentile per call and per sample. Ends with the peak
 * resident memory of the process (getrusage). Speed claims come from here,
 * never from the tests.
 *
 * usage: harness [REPS]
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "kiln/run.h"
#include "timing.h"
#include "bench.h"

int main(int argc, char **argv)
{
	int reps = argc > 1 ? atoi(argv[1]) : 200;
	if (reps < 5)
		reps = 5;
	const kiln_model *m = &bench_model;
	void *arena = aligned_alloc(64, (m->max_arena_bytes + 63) / 64 * 64 + 64);
	double *t = malloc((size_t)reps * sizeof *t);
	printf("%-8s %14s %14s %16s\n", "batch", "median us", "p90 us", "median us/sample");
	uint64_t seed = 1;
	for (int i = 0; i < m->nbatches; i++) {
		int64_t b = m->batches[i];
		const void *ins[64];
		void *outs[64];
		for (int k = 0; k < m->ninputs && k < 64; k++) {
			size_t n = kiln_tensor_bytes(&m->inputs[k], b);
			float *p = aligned_alloc(64, (n + 63) / 64 * 64 + 64);
			for (size_t j = 0; j < n / 4; j++) {
				seed = seed * 6364136223846793005u + 1442695040888963407u;
				p[j] = (float)((seed >> 40) % 2000) / 1000.0f - 1.0f;
			}
			ins[k] = p;
		}
		for (int k = 0; k < m->noutputs && k < 64; k++) {
			size_t n = kiln_tensor_bytes(&m->outputs[k], b);
			outs[k] = aligned_alloc(64, (n + 63) / 64 * 64 + 64);
		}
		for (int w = 0; w < 10; w++)
			m->run[i](arena, ins, outs);
		for (int r = 0; r < reps; r++) {
			double s = now_ns();
			m->run[i](arena, ins, outs);
			t[r] = now_ns() - s;
		}
		qsort(t, (size_t)reps, sizeof *t, cmp_double);
		double med = t[reps / 2] / 1e3, p90 = t[reps * 9 / 10] / 1e3;
		printf("%-8lld %14.2f %14.2f %16.3f\n", (long long)b, med, p90, med / (double)b);
		for (int k = 0; k < m->ninputs && k < 64; k++)
			free((void *)ins[k]);
		for (int k = 0; k < m->noutputs && k < 64; k++)
			free(outs[k]);
	}
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("peak RSS: %.1f MiB\n", (double)ru.ru_maxrss / 1024.0);
	free(t);
	free(arena);
	return 0;
}
