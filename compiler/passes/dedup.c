/*
 * passes/dedup.c - initializers with identical dtype, shape and bytes become
 * one: every reader of a later copy reads the first.
 *
 * Needs nothing but the weights; the content hash only groups candidates and
 * equality is confirmed byte for byte, so a collision never merges different
 * tensors. A copy that is a graph output, overridable at run time, or read by
 * a subgraph keeps its own value (it is still stored once: the weights
 * object shares identical bytes).
 */
#include <stdlib.h>
#include <string.h>

#include "rewrite.h"

typedef struct Cand {
	uint64_t hash;
	int id;
} Cand;

static int by_hash(const void *pa, const void *pb)
{
	const Cand *a = pa, *b = pb;
	if (a->hash != b->hash)
		return a->hash < b->hash ? -1 : 1;
	return a->id - b->id;  /* the first copy in value order survives */
}

int pass_dedup(PassCtx *c)
{
	Graph *g = c->g;
	Cand *cs = arena_array(c->a, (size_t)(g->nvalues ? g->nvalues : 1), sizeof *cs);
	int n = 0;
	for (int i = 0; i < g->nvalues; i++) {
		Value *v = &g->values[i];
		if (!rw_is_const(c, i) || v->nuse == 0)
			continue;
		if (v->weight->hash == 0)
			v->weight->hash = weight_hash(v->dtype, &v->shape, v->weight);
		cs[n++] = (Cand){v->weight->hash, i};
	}
	qsort(cs, (size_t)n, sizeof *cs, by_hash);
	int changes = 0;
	for (int i = 1; i < n; i++) {
		int dup = cs[i].id;
		if (rw_pinned(c, dup))
			continue;
		for (int j = i - 1; j >= 0 && cs[j].hash == cs[i].hash; j--) {
			const Value *a = &g->values[cs[j].id], *b = &g->values[dup];
			if (a->nuse == 0 ||
			    !weight_equal(a->weight, b->weight, a->dtype, b->dtype, &a->shape, &b->shape))
				continue;
			rw_replace_uses(c, dup, cs[j].id);
			changes++;
			break;
		}
	}
	c->stat->removed += changes;
	return changes;
}
