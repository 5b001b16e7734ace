/*
 * stitch_rows.c - runs a compiled model through kiln_run on the first n rows
 * of its inputs for each n given, then every row alone (n = 1), so a test
 * can compare stitched batches of sizes that were not compiled with a
 * reference and with each sample's own call. Built by
 * tests/realmodels/particlenet.py with -DMODEL=NAME_model and -include NAME.h.
 *   usage: stitch_rows ROWS IN_0.bin ... IN_I.bin OUT_0.bin ... OUT_O.bin N1 N2 ...
 * Each input file holds ROWS rows; OUT_o gets, for each n in order, n rows
 * of output o, then the ROWS single-row results.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kiln/run.h>

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
	}
	kiln_context *ctx;
	int st = kiln_context_create(&ctx, m);
	if (st != KILN_OK) {
		fprintf(stderr, "kiln_context_create: %s\n", kiln_status_string(st));
		return 1;
	}
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
			st = kiln_run(ctx, n, in, out);
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
