/*
 * buckets_time.c - the per-event workload of bench/buckets.py: one model
 * compiled twice, with buckets on the particle axis (BUCKETS, run through
 * kiln_run_lengths) and at the fixed maximum (FIXED, kiln_run on the jets
 * zero-padded to it), timed event by event on the same jets.
 *
 *   usage: buckets_time PMAX REPS EVENTS.bin LENGTHS.bin IN_0.bin ... OUT_B.bin OUT_F.bin
 *
 * EVENTS.bin: int64 jet count per event; LENGTHS.bin: int64 particle count
 * per jet, events one after the other; IN_i: every jet's input i at PMAX
 * particles (zero past each length, mask 0). Prints one JSON line: the
 * median over REPS passes of the CPU time per event (ns) of each, and both
 * context sizes; writes both outputs of every jet (first output only).
 * Compile with -D_POSIX_C_SOURCE=200809L -DBUCKETS=NAME_model -DFIXED=NAME_model
 * and both headers (-include).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "kiln/run.h"
#include "timing.h"

enum { MAX_IO = 8, MAX_REPS = 101 };

static void *read_all(const char *path, uint64_t *bytes)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	void *p = malloc((size_t)n + 1);
	if (!p || fread(p, 1, (size_t)n, f) != (size_t)n) {
		fclose(f);
		return NULL;
	}
	fclose(f);
	*bytes = (uint64_t)n;
	return p;
}

int main(int argc, char **argv)
{
	const kiln_model *mb = &BUCKETS, *mf = &FIXED;
	int ni = mb->ninputs;
	if (argc != 5 + ni + 2 || ni > MAX_IO || mf->ninputs != ni) {
		fprintf(stderr, "usage: buckets_time PMAX REPS EVENTS.bin LENGTHS.bin IN... OUT_B OUT_F\n");
		return 2;
	}
	int64_t pmax = atoll(argv[1]);
	int reps = atoi(argv[2]);
	if (reps < 1 || reps > MAX_REPS)
		return 2;
	uint64_t bytes;
	int64_t *events = read_all(argv[3], &bytes);
	int64_t nev = (int64_t)(bytes / 8);
	int64_t *lengths = read_all(argv[4], &bytes);
	int64_t njets = (int64_t)(bytes / 8);
	unsigned char *in[MAX_IO];
	uint64_t row[MAX_IO];
	for (int i = 0; i < ni; i++) {
		in[i] = read_all(argv[5 + i], &bytes);
		row[i] = bytes / (uint64_t)(njets ? njets : 1);
		if (!in[i] || kiln_tensor_bytes(&mf->inputs[i], 1) != row[i]) {
			fprintf(stderr, "%s: not %lld jets of the fixed model's input %d\n", argv[5 + i],
			        (long long)njets, i);
			return 1;
		}
	}
	uint64_t orow = kiln_tensor_bytes(&mf->outputs[0], 1);
	unsigned char *yb = calloc((size_t)(njets + 1), orow), *yf = calloc((size_t)(njets + 1), orow);
	kiln_context *cb, *cf;
	if (!yb || !yf || mb->noutputs != 1 || kiln_context_create(&cb, mb) != KILN_OK ||
	    kiln_context_create(&cf, mf) != KILN_OK) {
		fprintf(stderr, "set-up failed (one output expected)\n");
		return 1;
	}
	double tb[MAX_REPS], tf[MAX_REPS];
	for (int r = 0; r < reps; r++) {
		for (int which = 0; which < 2; which++) {
			double t = 0;
			int64_t first = 0;
			for (int64_t e = 0; e < nev; e++) {
				int64_t n = events[e];
				kiln_input vin[MAX_IO];
				for (int i = 0; i < ni; i++)
					vin[i] = (kiln_input){in[i] + (uint64_t)first * row[i], mf->inputs[i].dtype,
					                      (uint64_t)n * row[i]};
				unsigned char *y = which ? yf : yb;
				kiln_output vout = {y + (uint64_t)first * orow, mf->outputs[0].dtype,
				                    (uint64_t)n * orow};
				double t0 = cpu_ns();
				int st = which ? kiln_run(cf, n, vin, &vout)
				               : kiln_run_lengths(cb, n, lengths + first, pmax, vin, &vout);
				t += cpu_ns() - t0;
				if (st != KILN_OK) {
					fprintf(stderr, "event %lld: %s\n", (long long)e, kiln_status_string(st));
					return 1;
				}
				first += n;
			}
			(which ? tf : tb)[r] = t / (double)(nev ? nev : 1);
		}
	}
	qsort(tb, (size_t)reps, sizeof tb[0], cmp_double);
	qsort(tf, (size_t)reps, sizeof tf[0], cmp_double);
	FILE *f = fopen(argv[5 + ni], "wb"), *g = fopen(argv[6 + ni], "wb");
	if (!f || !g || fwrite(yb, orow, (size_t)njets, f) != (size_t)njets ||
	    fwrite(yf, orow, (size_t)njets, g) != (size_t)njets)
		return 1;
	fclose(f);
	fclose(g);
	printf("{\"buckets_ns_per_event\": %.0f, \"fixed_ns_per_event\": %.0f, "
	       "\"buckets_context_bytes\": %llu, \"fixed_context_bytes\": %llu}\n",
	       tb[reps / 2], tf[reps / 2], (unsigned long long)kiln_context_bytes(mb),
	       (unsigned long long)kiln_context_bytes(mf));
	return 0;
}
