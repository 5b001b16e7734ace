/*
 * buckets.c - a model compiled at several values of one symbolic dim
 * (kiln compile --dim n_pf=16,32,64,100), for kiln_run_lengths: which
 * inputs and outputs carry the dim and on which axis, and the bytes of one
 * context that serves every bucket (docs/batching.md, "Buckets").
 *
 * The facts are read off the signatures, not the declared shapes, so an
 * output whose length follows the dim through the graph is found as well:
 * a dim that changes between buckets must be the bucket's value itself,
 * on one axis of the tensor, after its batch axis 0 (the runtime packs
 * samples row by row). Anything else is refused naming the tensor.
 */
#include <inttypes.h>
#include <string.h>

#include "stitch.h"
#include "kiln/run.h"

static void check_tensor(Model *m, const Bucket *b, int nb, const char *symbol, int id,
                         const char *what, int *axis)
{
	Graph *g = m->graph;
	const char *name = g->values[id].name;
	const Sig *s0 = &b[0].sigs[0];
	const Shape *sh0 = &s0->shapes[id];
	axis[id] = -1;
	for (int j = 1; j < nb; j++) {
		const Sig *s = &b[j].sigs[0];
		if (s->shapes[id].rank != sh0->rank || s->dtypes[id] != s0->dtypes[id] ||
		    b[j].stitch.axis[id] != b[0].stitch.axis[id])
			diag_fail(m->diag, KILN_UNSUPPORTED, "%s \"%s\" has another rank, element type or "
			          "batch axis at %s=%" PRId64 " than at %s=%" PRId64 ": it cannot be "
			          "bucketed", what, name, symbol, b[j].value, symbol, b[0].value);
	}
	int batch_axis = b[0].stitch.axis[id];
	if (batch_axis > 0)
		diag_fail(m->diag, KILN_UNSUPPORTED, "%s \"%s\" has its batch on axis %d: buckets on "
		          "%s need every batched input and output batched on axis 0", what, name,
		          batch_axis, symbol);
	for (int d = 0; d < sh0->rank; d++) {
		bool varies = false, follows = true;
		for (int j = 0; j < nb; j++) {
			int64_t size = b[j].sigs[0].shapes[id].dims[d].size;
			varies |= size != sh0->dims[d].size;
			follows &= size == b[j].value;
		}
		if (!varies)
			continue;
		if (!follows || axis[id] >= 0 || d == batch_axis || batch_axis < 0)
			diag_fail(m->diag, KILN_UNSUPPORTED, "%s \"%s\": dim %d is %" PRId64 " at %s=%"
			          PRId64 ": buckets need a tensor's dims to be %s itself, on one axis "
			          "after the batch axis 0, or not to change with it", what, name, d,
			          sh0->dims[d].size, symbol, b[0].value, symbol);
		axis[id] = d;
	}
}

int *buckets_axes(Model *m, const Bucket *b, int nb, const char *symbol)
{
	Graph *g = m->graph;
	int *axis = arena_array(m->arena, (size_t)g->nvalues, sizeof *axis);
	for (int i = 0; i < g->nvalues; i++)
		axis[i] = -1;
	for (int j = 0; j < nb; j++)
		if (!b[j].stitch.dep.independent)
			diag_fail(m->diag, KILN_UNSUPPORTED, "buckets on %s need a batch-independent "
			          "model (samples of one bucket are stitched into batches): at %s=%" PRId64
			          " %s", symbol, symbol, b[j].value,
			          b[j].stitch.dep.why ? b[j].stitch.dep.why : "no input has a batch axis");
	for (int k = 0; k < g->ninputs; k++)
		if (g->values[g->inputs[k]].kind == VAL_INPUT)
			check_tensor(m, b, nb, symbol, g->inputs[k], "input", axis);
	for (int k = 0; k < g->noutputs; k++)
		check_tensor(m, b, nb, symbol, g->outputs[k], "output", axis);
	return axis;
}

void buckets_stitch(Model *m, const Bucket *b, int nb, Stitch *out)
{
	*out = b[nb - 1].stitch;
	int nbatches = (int)(b[1].sigs - b[0].sigs);   /* nb >= 2, one block per bucket */
	for (int j = 0; j < nb; j++) {
		if (b[j].stitch.max_arena_bytes > out->max_arena_bytes)
			out->max_arena_bytes = b[j].stitch.max_arena_bytes;
		if (b[j].stitch.staging_bytes > out->staging_bytes)
			out->staging_bytes = b[j].stitch.staging_bytes;
	}
	/* The smaller buckets' plans are static tables (emit_c.c): one context
	 * of the largest bucket's bytes serves them all. */
	out->context_bytes = KILN_CONTEXT_BYTES(nbatches, out->plan_bound, out->staging_bytes,
	                                        out->max_arena_bytes);
	if (out->context_bytes > (uint64_t)m->limits.max_arena_bytes)
		diag_fail(m->diag, KILN_LIMIT, "one kiln_run context for %d buckets needs %" PRIu64
		          " bytes, more than the limit of %lld MiB (raise it with --max-arena)", nb,
		          out->context_bytes, (long long)(m->limits.max_arena_bytes >> 20));
}
