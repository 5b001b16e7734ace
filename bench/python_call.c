/*
 * python_call.c - the C side of bench/python.py: the time of one kiln_run
 * call at n rows on a model's shared object (kiln compile --shared), opened
 * as the Python module opens it (dlopen, kiln_shared_model()), with one
 * context, zeroed inputs and outputs allocated once.
 *
 *     cc -O2 -Iinclude python_call.c libkiln.a -lm -o python_call
 *     python_call MODEL.so N REPS      -> median CPU ns per call over 15 runs of REPS calls
 *
 * CPU time (the thread's), not wall time: on a shared machine wall time
 * measures the other processes too.
 */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "kiln/run.h"

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: python_call MODEL.so N REPS\n");
		return 2;
	}
	void *so = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	const kiln_model *(*entry)(void) = NULL;
	if (so)
		*(void **)&entry = dlsym(so, "kiln_shared_model");
	if (!entry) {
		fprintf(stderr, "python_call: %s: %s\n", argv[1], so ? "no kiln_shared_model" : dlerror());
		return 1;
	}
	const kiln_model *m = entry();
	int64_t n = atoll(argv[2]);
	long reps = atol(argv[3]);
	kiln_context *ctx;
	if (kiln_context_create(&ctx, m) != KILN_OK)
		return 1;
	kiln_input in[KILN_MAX_IO];
	kiln_output out[KILN_MAX_IO];
	for (int i = 0; i < m->ninputs; i++) {
		uint64_t b = kiln_tensor_bytes(&m->inputs[i], n);
		in[i] = (kiln_input){calloc(1, b + 1), m->inputs[i].dtype, b};
	}
	for (int i = 0; i < m->noutputs; i++) {
		uint64_t b = kiln_tensor_bytes(&m->outputs[i], n);
		out[i] = (kiln_output){calloc(1, b + 1), m->outputs[i].dtype, b};
	}
	double t[15];
	for (int r = 0; r < 15; r++) {
		double s = now_ns();
		for (long k = 0; k < reps; k++)
			if (kiln_run(ctx, n, in, out) != KILN_OK)
				return 1;
		t[r] = (now_ns() - s) / (double)reps;
	}
	qsort(t, 15, sizeof t[0], cmp);
	printf("%.1f\n", t[7]);
	return 0;
}
