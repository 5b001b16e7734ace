/*
 * weights.c - content hashes of constant tensors, and the weight statistics
 * `kiln info` reports (total bytes, and unique bytes with identical tensors
 * counted once: the figure the dedup pass will achieve).
 *
 * Two tensors are identical when dtype, dims and bytes all match. The hash
 * only groups candidates; equality is always confirmed with memcmp, so a
 * collision can never merge different weights.
 */
#include <stdlib.h>
#include <string.h>

#include "ir.h"

static uint64_t rotl(uint64_t x, int r)
{
	return (x << r) | (x >> (64 - r));
}

static uint64_t mix(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdu;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53u;
	h ^= h >> 33;
	return h;
}

/* Four independent lanes over 32-byte blocks: fast enough to hash gigabytes. */
static uint64_t hash_bytes(const void *data, uint64_t n, uint64_t seed)
{
	const uint8_t *p = data;
	const uint64_t k1 = 0x9e3779b185ebca87u, k2 = 0xc2b2ae3d27d4eb4fu;
	uint64_t lane[4] = {seed ^ k1, seed ^ k2, seed + k1, seed - k2};
	uint64_t i = 0;
	for (; i + 32 <= n; i += 32)
		for (int j = 0; j < 4; j++) {
			uint64_t w;
			memcpy(&w, p + i + 8 * j, 8);
			lane[j] = rotl(lane[j] ^ (w * k2), 31) * k1;
		}
	uint64_t h = mix(lane[0]) ^ rotl(mix(lane[1]), 17) ^ rotl(mix(lane[2]), 29) ^
	             rotl(mix(lane[3]), 43) ^ n;
	for (; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3u;
	return mix(h);
}

uint64_t weight_hash(int dtype, const Shape *s, const Weight *w)
{
	uint64_t h = mix(((uint64_t)dtype << 8) + (uint64_t)(s->rank + 1));
	for (int i = 0; i < s->rank; i++)
		h = mix(h ^ (uint64_t)s->dims[i].size);
	if (dtype == DT_STRING) {
		const WeightString *ws = w->bytes;
		for (int64_t i = 0; i < w->nelem; i++)
			h = hash_bytes(ws[i].data, ws[i].len, h ^ ws[i].len);
		return h;
	}
	return hash_bytes(w->bytes, w->nbytes, h);
}

bool weight_equal(const Weight *a, const Weight *b, int dta, int dtb, const Shape *sa,
                  const Shape *sb)
{
	if (dta != dtb || sa->rank != sb->rank || a->nelem != b->nelem || a->nbytes != b->nbytes)
		return false;
	for (int i = 0; i < sa->rank; i++)
		if (sa->dims[i].size != sb->dims[i].size)
			return false;
	if (dta == DT_STRING) {
		const WeightString *x = a->bytes, *y = b->bytes;
		for (int64_t i = 0; i < a->nelem; i++)
			if (x[i].len != y[i].len || (x[i].len && memcmp(x[i].data, y[i].data, x[i].len)))
				return false;
		return true;
	}
	return a->nbytes == 0 || a->bytes == b->bytes || memcmp(a->bytes, b->bytes, a->nbytes) == 0;
}

/* Every constant tensor of the model, in walk order. */
typedef struct Const {
	int dtype;
	const Shape *shape;
	Weight *w;
	int index;            /* walk order, the tie-break that keeps sorting stable */
} Const;

typedef struct Collect {
	Arena *arena;
	Const *items;
	int n, cap;
	WeightStats *stats;
} Collect;

static void add_const(Collect *c, int dtype, const Shape *s, Weight *w)
{
	c->items = arena_grow(c->arena, c->items, c->n, &c->cap, sizeof *c->items);
	c->items[c->n] = (Const){dtype, s, w, c->n};
	c->n++;
	c->stats->weight_bytes += w->nbytes;
	if (w->location)
		c->stats->nexternal++;
}

static void collect_graph(Graph *g, void *user)
{
	Collect *c = user;
	for (int i = 0; i < g->nvalues; i++) {
		Value *v = &g->values[i];
		if (v->kind == VAL_WEIGHT) {
			c->stats->ninitializers++;
			add_const(c, v->dtype, &v->shape, v->weight);
		}
	}
	for (int i = 0; i < g->nnodes; i++)
		for (int k = 0; k < g->nodes[i].nattrs; k++) {
			Attr *at = &g->nodes[i].attrs[k];
			if (at->type == AT_TENSOR || at->type == AT_TENSORS)
				for (int j = 0; j < at->n; j++) {
					c->stats->nconstants++;
					add_const(c, at->tensors[j].dtype, &at->tensors[j].shape,
					          &at->tensors[j].w);
				}
		}
}

static int by_hash(const void *pa, const void *pb)
{
	const Const *a = pa, *b = pb;
	if (a->w->hash != b->w->hash)
		return a->w->hash < b->w->hash ? -1 : 1;
	return a->index - b->index;
}

void weight_stats(Model *m, WeightStats *out)
{
	memset(out, 0, sizeof *out);
	Collect c = {.arena = m->arena, .stats = out};
	graph_walk(m->graph, collect_graph, &c);
	for (int i = 0; i < c.n; i++)
		c.items[i].w->hash = weight_hash(c.items[i].dtype, c.items[i].shape, c.items[i].w);
	if (c.n)
		qsort(c.items, (size_t)c.n, sizeof *c.items, by_hash);
	/* Within a run of equal hashes, a tensor is new unless it equals an earlier one. */
	for (int i = 0; i < c.n; i++) {
		bool dup = false;
		for (int j = i - 1; j >= 0 && c.items[j].w->hash == c.items[i].w->hash && !dup; j--)
			dup = weight_equal(c.items[i].w, c.items[j].w, c.items[i].dtype, c.items[j].dtype,
			                   c.items[i].shape, c.items[j].shape);
		if (!dup)
			out->unique_bytes += c.items[i].w->nbytes;
	}
}
