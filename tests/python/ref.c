/*
 * ref.c - the C side of the Python module's tests: one model linked
 * statically (NAME.o from kiln compile), run through kiln_run on the first
 * n rows of each input for every n from 0 to N; every output of every n is
 * appended to OUT, in that order. The Python test does the same through
 * the module and compares the bytes.
 *
 *     cc -include NAME.h -DMODEL=NAME_model ref.c NAME.o libkiln.a -lm
 *     ref N OUT IN0.bin [IN1.bin ...]      (each input file holds N rows)
 *     ref -N OUT IN0.bin ...               (n = N only)
 */
#include <stdio.h>
#include <stdlib.h>

#include "kiln/run.h"

static unsigned char *read_file(const char *path, uint64_t need)
{
	FILE *f = fopen(path, "rb");
	unsigned char *p = malloc(need ? need : 1);
	if (!f || !p || fread(p, 1, need, f) != need) {
		fprintf(stderr, "ref: cannot read %llu bytes from %s\n", (unsigned long long)need, path);
		exit(1);
	}
	fclose(f);
	return p;
}

int main(int argc, char **argv)
{
	const kiln_model *m = &MODEL;
	if (argc != 3 + m->ninputs) {
		fprintf(stderr, "usage: ref N OUT IN0.bin ... (%d inputs)\n", m->ninputs);
		return 2;
	}
	int64_t N = atoll(argv[1]), first = 0;
	if (N < 0)
		first = N = -N;
	kiln_context *ctx;
	int st = kiln_context_create(&ctx, m);
	FILE *out = fopen(argv[2], "wb");
	if (st != KILN_OK || !out) {
		fprintf(stderr, "ref: %s\n", st != KILN_OK ? kiln_status_string(st) : argv[2]);
		return 1;
	}
	kiln_input in[KILN_MAX_IO];
	kiln_output o[KILN_MAX_IO];
	for (int i = 0; i < m->ninputs; i++) {
		if (m->inputs[i].batch_axis > 0) {
			fprintf(stderr, "ref: input %s: batch axis %d, not 0\n", m->inputs[i].name,
			        m->inputs[i].batch_axis);
			return 1;
		}
		in[i] = (kiln_input){read_file(argv[3 + i], kiln_tensor_bytes(&m->inputs[i], N)),
		                     m->inputs[i].dtype, 0};
	}
	for (int i = 0; i < m->noutputs; i++) {
		uint64_t b = kiln_tensor_bytes(&m->outputs[i], N);
		o[i] = (kiln_output){malloc(b ? b : 1), m->outputs[i].dtype, b};
	}
	for (int64_t n = first; n <= N; n++) {
		for (int i = 0; i < m->ninputs; i++)
			in[i].bytes = kiln_tensor_bytes(&m->inputs[i], n);
		st = kiln_run(ctx, n, in, o);
		if (st != KILN_OK) {
			fprintf(stderr, "ref: n = %lld: %s\n", (long long)n, kiln_status_string(st));
			return 1;
		}
		for (int i = 0; i < m->noutputs; i++)
			fwrite(o[i].data, 1, kiln_tensor_bytes(&m->outputs[i], n), out);
	}
	for (int i = 0; i < m->ninputs; i++)
		free((void *)in[i].data);
	for (int i = 0; i < m->noutputs; i++)
		free(o[i].data);
	kiln_context_destroy(ctx);
	return fclose(out) == 0 ? 0 : 1;
}
