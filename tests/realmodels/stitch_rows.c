/*
 * stitch_rows.c - runs a compiled model through kiln_run on the first n rows
 * of its inputs for each n given, then every row alone (n = 1), so a test
 * can compare stitched batches of sizes that were not compiled with a
 * reference and with each sample's own call. Built by
 * tests/realmodels/particlenet.py with -DMODEL=NAME_model and -include NAME.h.
 *   usage: stitch_rows ROWS IN_0.bin ... IN_I.bin OUT_0.bin ... OUT_O.bin N1 N2 ...
 * Each input file holds ROWS rows; OUT_o gets, for each n in order, n rows
 * of output o, then the ROWS single-row results. An output without a batch
 * axis (a constant, a reduction over the batch) is written whole each time;
 * standard output says which: a line "output O batched" or "output O whole"
 * for each output.
 * With STITCH_FPENV=1 in the environment every call runs in a hostile
 * floating-point environment (round upward, flush-to-zero, and on x86
 * denormals-are-zero with invalid, divide-by-zero and overflow trapping), as
 * another library of the process could leave it: kiln_run must give the
 * same bytes (tests/repro/bits.py's fpenv check) and hand the environment
 * back unchanged (checked after each call: exit 3 if not).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kiln/run.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
/* MXCSR: round up (13-14 = 10), FTZ (15), DAZ (6), invalid, divide-by-zero
 * and overflow unmasked (bits 7, 9, 10 clear); status flags (0-5) ignored */
#define HOSTILE 0xd940u
static unsigned env_get(void) { return _mm_getcsr() & ~0x3fu; }
static void env_set(unsigned v) { _mm_setcsr(v); }
#elif defined(__aarch64__)
#include <stdint.h>
/* FPCR: round toward +inf (RMode 01 at 22), FZ (24) */
#define HOSTILE (1u << 22 | 1u << 24)
static unsigned env_get(void)
{
	uint64_t v;
	__asm__ volatile("mrs %0, fpcr" : "=r"(v));
	return (unsigned)v;
}
static void env_set(unsigned v)
{
	uint64_t w = v;
	__asm__ volatile("msr fpcr, %0" : : "r"(w));
}
#else
#include <fenv.h>
#define HOSTILE ((unsigned)FE_UPWARD)
static unsigned env_get(void) { return (unsigned)fegetround(); }
static void env_set(unsigned v) { fesetround((int)v); }
#endif

enum { MAX_IO = 8 };

int main(int argc, char **argv)
{
	const kiln_model *m = &MODEL;
	int ni = m->ninputs, no = m->noutputs;
	if (ni > MAX_IO || no > MAX_IO || argc < 2 + ni + no) {
		fprintf(stderr, "usage: stitch_rows ROWS INPUT.bin... OUTPUT.bin... N...\n");
		return 2;
	}
	int64_t rows = atoll(argv[1]);
	void *x[MAX_IO];
	for (int i = 0; i < ni; i++) {
		uint64_t bytes = kiln_tensor_bytes(&m->inputs[i], rows);
		x[i] = malloc(bytes + 1);
		FILE *f = fopen(argv[2 + i], "rb");
		if (!f || !x[i] || fread(x[i], 1, bytes, f) != bytes) {
			fprintf(stderr, "cannot read %llu bytes from %s\n", (unsigned long long)bytes,
			        argv[2 + i]);
			return 1;
		}
		fclose(f);
	}
	FILE *o[MAX_IO];
	void *y[MAX_IO];
	for (int i = 0; i < no; i++) {
		o[i] = fopen(argv[2 + ni + i], "wb");
		y[i] = malloc(kiln_tensor_bytes(&m->outputs[i], rows) + 1);
		if (!o[i] || !y[i]) {
			fprintf(stderr, "cannot write %s\n", argv[2 + ni + i]);
			return 1;
		}
		int batched = kiln_tensor_bytes(&m->outputs[i], 2) != kiln_tensor_bytes(&m->outputs[i], 1);
		printf("output %d %s\n", i, batched ? "batched" : "whole");
	}
	kiln_context *ctx;
	int st = kiln_context_create(&ctx, m);
	if (st != KILN_OK) {
		fprintf(stderr, "kiln_context_create: %s\n", kiln_status_string(st));
		return 1;
	}
	const char *fe = getenv("STITCH_FPENV");
	int hostile = fe && !strcmp(fe, "1");
	unsigned normal = env_get();
	int nn = argc - 2 - ni - no;
	for (int t = 0; t <= nn; t++) {
		/* the listed n from row 0, then each row alone */
		int64_t n = t < nn ? atoll(argv[2 + ni + no + t]) : 1;
		int64_t first = 0, last = t < nn ? 0 : rows - 1;
		if (n < 0 || n > rows) {
			fprintf(stderr, "n = %lld is not in 0..%lld\n", (long long)n, (long long)rows);
			return 2;
		}
		for (int64_t r = first; r <= last; r++) {
			kiln_input in[MAX_IO];
			kiln_output out[MAX_IO];
			for (int i = 0; i < ni; i++) {
				uint64_t row = kiln_tensor_bytes(&m->inputs[i], 1);
				in[i] = (kiln_input){(char *)x[i] + r * row, m->inputs[i].dtype,
				                     kiln_tensor_bytes(&m->inputs[i], n)};
			}
			for (int i = 0; i < no; i++)
				out[i] = (kiln_output){y[i], m->outputs[i].dtype, kiln_tensor_bytes(&m->outputs[i], n)};
			if (hostile)
				env_set(HOSTILE);
			st = kiln_run(ctx, n, in, out);
			if (hostile) {
				unsigned after = env_get();
				env_set(normal);
				if (after != HOSTILE) {
					fprintf(stderr, "kiln_run left the floating-point environment "
					        "%#x, the caller's was %#x\n", after, HOSTILE);
					return 3;
				}
			}
			if (st != KILN_OK) {
				fprintf(stderr, "kiln_run n=%lld: %s\n", (long long)n, kiln_status_string(st));
				return 1;
			}
			for (int i = 0; i < no; i++)
				if (fwrite(y[i], 1, out[i].bytes, o[i]) != out[i].bytes) {
					fprintf(stderr, "cannot write %s\n", argv[2 + ni + i]);
					return 1;
				}
		}
	}
	for (int i = 0; i < no; i++) {
		fclose(o[i]);
		free(y[i]);
	}
	for (int i = 0; i < ni; i++)
		free(x[i]);
	kiln_context_destroy(ctx);
	return 0;
}
