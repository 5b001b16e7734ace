/*
 * driver.c - a generic caller of one generated model, for tests/hostile:
 * prints every interface name as hex (the descriptor's string literal must
 * round-trip the model's bytes exactly), then runs n rows of float inputs
 * (input j, element i in row-major order: (i*0.25-1)*(j+1)) and prints the
 * outputs.
 * Build with -DHEADER='"net.h"' -DMODEL=net_model.
 */
#include <stdio.h>
#include <stdlib.h>

#include HEADER

static void hex(const char *role, const char *s)
{
	printf("%s ", role);
	for (; *s; s++)
		printf("%02x", (unsigned char)*s);
	printf("\n");
}

static uint64_t per_row(const kiln_tensor_desc *d)
{
	uint64_t n = 1;
	for (int k = 0; k < d->rank; k++)
		n *= (uint64_t)d->dims[k];
	return n;
}

int main(int argc, char **argv)
{
	const kiln_model *m = &MODEL;
	int64_t n = argc > 1 ? atoll(argv[1]) : 3;
	for (int i = 0; i < m->ninputs; i++)
		hex("input", m->inputs[i].name);
	for (int i = 0; i < m->noutputs; i++)
		hex("output", m->outputs[i].name);
	kiln_context *ctx;
	int st = kiln_context_create(&ctx, m);
	if (st != KILN_OK) {
		fprintf(stderr, "driver: %s\n", kiln_status_string(st));
		return 1;
	}
	kiln_input in[8];
	kiln_output out[8];
	if (m->ninputs > 8 || m->noutputs > 8)
		return 1;
	for (int i = 0; i < m->ninputs; i++) {
		uint64_t count = per_row(&m->inputs[i]) * (uint64_t)n;
		float *x = malloc(count * sizeof *x + 1);
		for (uint64_t k = 0; k < count; k++)
			x[k] = ((float)k * 0.25f - 1.0f) * (float)(i + 1);
		in[i] = (kiln_input){x, m->inputs[i].dtype, count * sizeof *x};
	}
	for (int i = 0; i < m->noutputs; i++) {
		uint64_t count = per_row(&m->outputs[i]) * (uint64_t)n;
		out[i] = (kiln_output){malloc(count * sizeof(float) + 1), m->outputs[i].dtype,
		                       count * sizeof(float)};
	}
	st = kiln_run(ctx, n, in, out);
	if (st != KILN_OK) {
		fprintf(stderr, "driver: run: %s\n", kiln_status_string(st));
		return 1;
	}
	for (int i = 0; i < m->noutputs; i++) {
		const float *y = out[i].data;
		printf("values");
		for (uint64_t k = 0; k < out[i].bytes / sizeof(float); k++)
			printf(" %.9g", (double)y[k]);
		printf("\n");
		free(out[i].data);
	}
	for (int i = 0; i < m->ninputs; i++)
		free((void *)in[i].data);
	kiln_context_destroy(ctx);
	return 0;
}
