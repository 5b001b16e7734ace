/*
 * stitch_main.c - runs a compiled tree model through kiln_run for any n,
 * so batch sizes that were not compiled are stitched from those that were.
 * Built by tests/trees/run.py with -DMODEL=NAME_model and -include NAME.h.
 *   usage: stitch N INPUT.bin OUTPUT0.bin [OUTPUT1.bin]
 * The input file holds n rows of the model's input 0; each output is
 * written as raw bytes.
 */
#include <stdio.h>
#include <stdlib.h>

#include <kiln/run.h>

int main(int argc, char **argv)
{
	const kiln_model *m = &MODEL;
	if (argc != 3 + m->noutputs || m->ninputs != 1) {
		fprintf(stderr, "usage: stitch N INPUT.bin OUTPUT.bin...\n");
		return 2;
	}
	int64_t n = atoll(argv[1]);
	uint64_t in_bytes = kiln_tensor_bytes(&m->inputs[0], n);
	void *x = malloc(in_bytes + 1);
	FILE *f = fopen(argv[2], "rb");
	if (!f || !x || fread(x, 1, in_bytes, f) != in_bytes) {
		fprintf(stderr, "cannot read %llu bytes from %s\n", (unsigned long long)in_bytes,
		        argv[2]);
		return 1;
	}
	fclose(f);
	kiln_input in = {x, m->inputs[0].dtype, in_bytes};
	kiln_output out[2];
	for (int i = 0; i < m->noutputs; i++) {
		out[i].bytes = kiln_tensor_bytes(&m->outputs[i], n);
		out[i].dtype = m->outputs[i].dtype;
		out[i].data = malloc(out[i].bytes + 1);
	}
	kiln_context *ctx;
	int st = kiln_context_create(&ctx, m);
	if (st == KILN_OK)
		st = kiln_run(ctx, n, &in, out);
	if (st != KILN_OK) {
		fprintf(stderr, "kiln_run: %s\n", kiln_status_string(st));
		return 1;
	}
	for (int i = 0; i < m->noutputs; i++) {
		FILE *o = fopen(argv[3 + i], "wb");
		if (!o || fwrite(out[i].data, 1, out[i].bytes, o) != out[i].bytes) {
			fprintf(stderr, "cannot write %s\n", argv[3 + i]);
			return 1;
		}
		fclose(o);
		free(out[i].data);
	}
	kiln_context_destroy(ctx);
	free(x);
	return 0;
}
