/*
 * test_threads.c - 16 threads share one compiled model (descriptor and
 * weights) and each runs random batch sizes through its own context; every
 * result must equal the single-threaded run of the same n (kiln verify's
 * tolerance: half the threads chunk n = 7 by a rule of their own).
 * run.sh builds it with ThreadSanitizer (libkiln's run.c and the generated
 * code instrumented), so a shared mutable byte anywhere is reported.
 *
 * usage: test_threads [ITERATIONS_PER_THREAD]
 */
#include <pthread.h>

#include "common.h"
#include "rows.h"
#include "seq.h"

enum { NTHREADS = 16, NMAX = 70 };

typedef struct Expect {
	const kiln_model *m;
	Bufs bufs[NMAX + 1];      /* inputs and the single-threaded outputs per n */
} Expect;

static Expect expect[2];
static int iterations = 60;

typedef struct Worker {
	int id;
	int failures;
} Worker;

static void *work(void *arg)
{
	Worker *w = arg;
	uint64_t seed = 0x9e3779b97f4a7c15u * (uint64_t)(w->id + 1);
	kiln_context *ctx[2];
	for (int k = 0; k < 2; k++)
		if (kiln_context_create(&ctx[k], expect[k].m) != KILN_OK) {
			w->failures++;
			return NULL;
		}
	/* Half the threads add a rule of their own: contexts must not share them. */
	if (w->id % 2)
		kiln_context_set_rule(ctx[0], "7:1,1,1,4");
	for (int it = 0; it < iterations; it++) {
		int k = (int)(rng_next(&seed) % 2);
		const kiln_model *m = expect[k].m;
		int64_t n = (int64_t)(rng_next(&seed) % (NMAX + 1));
		Bufs *e = &expect[k].bufs[n];
		Bufs got;
		bufs_make(&got, m, n, 0, 0x55);
		for (int t = 0; t < m->ninputs; t++)
			memcpy(got.in[t], e->in[t], got.vin[t].bytes);
		if (kiln_run(ctx[k], n, got.vin, got.vout) != KILN_OK) {
			w->failures++;
		} else {
			char why[256];
			if (!outputs_match(m, &got, e, why, sizeof why)) {
				fprintf(stderr, "FAIL thread %d: %s n=%lld: %s\n", w->id, m->name, (long long)n,
				        why);
				w->failures++;
			}
		}
		bufs_free(&got);
	}
	kiln_context_destroy(ctx[0]);
	kiln_context_destroy(ctx[1]);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		iterations = atoi(argv[1]);
	expect[0].m = &rows_model;
	expect[1].m = &seq_model;
	for (int k = 0; k < 2; k++) {
		kiln_context *ctx;
		if (kiln_context_create(&ctx, expect[k].m) != KILN_OK)
			return 2;
		for (int64_t n = 0; n <= NMAX; n++) {
			Bufs *b = &expect[k].bufs[n];
			bufs_make(b, expect[k].m, n, 42 + (uint64_t)n, 0);
			if (kiln_run(ctx, n, b->vin, b->vout) != KILN_OK)
				return 2;
		}
		kiln_context_destroy(ctx);
	}
	pthread_t th[NTHREADS];
	Worker w[NTHREADS];
	for (int i = 0; i < NTHREADS; i++) {
		w[i] = (Worker){i, 0};
		pthread_create(&th[i], NULL, work, &w[i]);
	}
	int failures = 0;
	for (int i = 0; i < NTHREADS; i++) {
		pthread_join(th[i], NULL);
		failures += w[i].failures;
	}
	for (int k = 0; k < 2; k++)
		for (int64_t n = 0; n <= NMAX; n++)
			bufs_free(&expect[k].bufs[n]);
	printf("threads: %d threads x %d runs, %d failed\n", NTHREADS, iterations, failures);
	return failures != 0;
}
