/*
 * lengths_rows.c - runs a model compiled with buckets (kiln compile --dim
 * SYMBOL=v1,...,vk) through kiln_run_lengths on n samples of their own
 * lengths, so a test can compare every sample with a reference evaluated
 * at that sample's exact length. Built by tests/realmodels/buckets.py with
 * -DMODEL=NAME_model and -include NAME.h.
 *   usage: lengths_rows N LFILE LPASS LENGTHS.bin IN_0.bin ... OUT_0.bin ...
 * Inputs and outputs that carry the bucketed dim are laid out at LFILE
 * along it; kiln_run_lengths is called with lmax = LPASS (-1: derived, then
 * LFILE must be the longest length). The others hold N samples as for
 * kiln_run. Before the run it checks that the context is no larger than
 * the largest bucket's own (its arena, staging area and plans), that each
 * smaller bucket's baked plan is kiln_plan_table's at its costs, that a
 * length past the largest bucket, a negative one and one past lmax give
 * KILN_LENGTH, and a model without buckets KILN_USAGE. After the run,
 * each sample alone (n = 1) must give the bytes of its row, bit for bit.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kiln/run.h>

enum { MAX_IO = 8, MAX_RANK = 16 };

/* Bytes of n samples of t with its bucketed axis (if any) at l. */
static uint64_t bytes_at(const kiln_tensor_desc *t, int axis, int64_t n, int64_t l)
{
	int64_t dims[MAX_RANK];
	kiln_tensor_desc u = *t;
	memcpy(dims, t->dims, (size_t)t->rank * sizeof dims[0]);
	if (axis >= 0)
		dims[axis] = l;
	u.dims = dims;
	return kiln_tensor_bytes(&u, n);
}

int main(int argc, char **argv)
{
	const kiln_model *m = &MODEL;
	int ni = m->ninputs, no = m->noutputs;
	if (ni > MAX_IO || no > MAX_IO || argc != 5 + ni + no || m->nbuckets < 2) {
		fprintf(stderr, "usage: lengths_rows N LFILE LPASS LENGTHS.bin INPUT.bin... OUTPUT.bin...\n");
		return 2;
	}
	int64_t n = atoll(argv[1]), lfile = atoll(argv[2]), lpass = atoll(argv[3]);
	int64_t *len = malloc((size_t)n * sizeof *len + 1);
	FILE *f = fopen(argv[4], "rb");
	if (!f || !len || fread(len, sizeof *len, (size_t)n, f) != (size_t)n) {
		fprintf(stderr, "cannot read %lld lengths from %s\n", (long long)n, argv[4]);
		return 1;
	}
	fclose(f);
	kiln_input in[MAX_IO];
	kiln_output out[MAX_IO];
	for (int i = 0; i < ni; i++) {
		uint64_t bytes = bytes_at(&m->inputs[i], m->bucket_axis[i], n, lfile);
		void *x = malloc(bytes + 1);
		f = fopen(argv[5 + i], "rb");
		if (!f || !x || fread(x, 1, bytes, f) != bytes) {
			fprintf(stderr, "cannot read %llu bytes from %s\n", (unsigned long long)bytes,
			        argv[5 + i]);
			return 1;
		}
		fclose(f);
		in[i] = (kiln_input){x, m->inputs[i].dtype, bytes};
	}
	for (int i = 0; i < no; i++) {
		uint64_t bytes = bytes_at(&m->outputs[i], m->bucket_axis[ni + i], n, lfile);
		void *y = malloc(bytes + 1);
		if (!y)
			return 1;
		memset(y, 0x7f, bytes);   /* not zero: padded positions must be written */
		out[i] = (kiln_output){y, m->outputs[i].dtype, bytes};
	}
	kiln_context *ctx;
	int st = kiln_context_create(&ctx, m);
	if (st != KILN_OK) {
		fprintf(stderr, "kiln_context_create: %s\n", kiln_status_string(st));
		return 1;
	}
	if (kiln_context_bytes(m) != m->context_bytes) {
		fprintf(stderr, "context bytes %llu, descriptor %llu\n",
		        (unsigned long long)kiln_context_bytes(m), (unsigned long long)m->context_bytes);
		return 1;
	}
	/* One context serves every bucket in the bytes of the largest bucket's
	 * own: its arena and staging area, and the plans of its sizes. */
	uint64_t staging = 0, arena = 0;
	for (int i = 0; i < ni + no; i++)
		staging += KILN_ALIGN64(kiln_tensor_bytes(i < ni ? &m->inputs[i] : &m->outputs[i - ni],
		                                          m->batches[m->nbatches - 1]));
	for (int i = 0; i < m->nbatches; i++)
		arena = m->arena_bytes[i] > arena ? m->arena_bytes[i] : arena;
	uint64_t own = KILN_CONTEXT_BYTES(m->nbatches, m->plan_bound, staging, arena);
	if (kiln_context_bytes(m) > own) {
		fprintf(stderr, "context bytes %llu, more than the largest bucket's %llu\n",
		        (unsigned long long)kiln_context_bytes(m), (unsigned long long)own);
		return 1;
	}
	/* Each smaller bucket's baked plan is kiln_plan_table at its costs. */
	double *best = malloc(((size_t)m->plan_bound + 1) * sizeof *best);
	uint16_t *choice = malloc(((size_t)m->plan_bound + 1) * sizeof *choice);
	for (int j = 0; best && choice && j + 1 < m->nbuckets; j++) {
		const kiln_model *b = m->bucket_models[j];
		kiln_plan_table(b->batches, b->nbatches, b->cost, b->plan_bound, best, choice);
		if (b->plan_bound != m->plan_bound || !b->plan ||
		    memcmp(choice, b->plan, ((size_t)b->plan_bound + 1) * sizeof *choice) != 0) {
			fprintf(stderr, "bucket %lld: the descriptor's plan is not kiln_plan_table's\n",
			        (long long)m->buckets[j]);
			return 1;
		}
	}
	free(best);
	free(choice);
	/* Lengths out of range are refused before anything runs. */
	int64_t keep = len[n - 1], top = m->buckets[m->nbuckets - 1];
	int64_t bad[3] = {top + 1, -1, lpass >= 0 ? lpass + 1 : -2};
	for (int k = 0; k < 3; k++) {
		if (bad[k] == -2)
			continue;
		len[n - 1] = bad[k];
		st = kiln_run_lengths(ctx, n, len, lpass, in, out);
		if (st != KILN_LENGTH) {
			fprintf(stderr, "length %lld: status %d, not KILN_LENGTH\n", (long long)bad[k], st);
			return 1;
		}
	}
	len[n - 1] = keep;
	/* A smaller bucket's model on its own has no buckets: KILN_USAGE. */
	kiln_context *small;
	if (kiln_context_create(&small, m->bucket_models[0]) != KILN_OK ||
	    kiln_run_lengths(small, n, len, lpass, in, out) != KILN_USAGE) {
		fprintf(stderr, "a bucket's own model: no KILN_USAGE from kiln_run_lengths\n");
		return 1;
	}
	kiln_context_destroy(small);
	st = kiln_run_lengths(ctx, n, len, lpass, in, out);
	if (st != KILN_OK) {
		fprintf(stderr, "kiln_run_lengths: %s\n", kiln_status_string(st));
		return 1;
	}
	for (int i = 0; i < no; i++) {
		f = fopen(argv[5 + ni + i], "wb");
		if (!f || fwrite(out[i].data, 1, out[i].bytes, f) != out[i].bytes || fclose(f)) {
			fprintf(stderr, "cannot write %s\n", argv[5 + ni + i]);
			return 1;
		}
	}
	/* Each sample alone (n = 1, the same lmax): the same bytes as its row
	 * of the n-sample call, which ran it in its bucket beside the others
	 * (issue 30: a jet's result does not depend on the other jets). */
	int64_t lm = lpass >= 0 ? lpass : lfile;
	for (int64_t s = 0; s < n; s++) {
		kiln_input in1[MAX_IO];
		kiln_output out1[MAX_IO];
		for (int i = 0; i < ni; i++) {
			uint64_t one = bytes_at(&m->inputs[i], m->bucket_axis[i], 1, lm);
			uint64_t at = m->inputs[i].batch_axis < 0 ? 0 : (uint64_t)s * one;
			in1[i] = (kiln_input){(const char *)in[i].data + at, in[i].dtype, one};
		}
		for (int i = 0; i < no; i++) {
			uint64_t one = bytes_at(&m->outputs[i], m->bucket_axis[ni + i], 1, lm);
			out1[i] = (kiln_output){malloc(one + 1), out[i].dtype, one};
			if (!out1[i].data)
				return 1;
		}
		st = kiln_run_lengths(ctx, 1, &len[s], lm, in1, out1);
		if (st != KILN_OK) {
			fprintf(stderr, "sample %lld alone: %s\n", (long long)s, kiln_status_string(st));
			return 1;
		}
		for (int i = 0; i < no; i++) {
			uint64_t at = m->outputs[i].batch_axis < 0 ? 0 : (uint64_t)s * out1[i].bytes;
			if (memcmp(out1[i].data, (const char *)out[i].data + at, out1[i].bytes) != 0) {
				fprintf(stderr, "sample %lld (length %lld) alone: output %d differs from its "
				        "row of the %lld-sample call\n", (long long)s, (long long)len[s], i,
				        (long long)n);
				return 1;
			}
			free(out1[i].data);
		}
	}
	kiln_context_destroy(ctx);
	for (int i = 0; i < ni; i++)
		free((void *)in[i].data);
	for (int i = 0; i < no; i++)
		free(out[i].data);
	free(len);
	return 0;
}
