/*
 * run.c - kiln_run: any batch size n from the compiled ones, through a
 * per-thread context in caller memory (see include/kiln/run.h).
 *
 * Context memory, from a 64-byte aligned start:
 *
 *   struct kiln_context (KILN_CONTEXT_HEADER_BYTES)
 *   cost[nbatches]            double, the cost of one call per compiled size
 *   best[bound + 1]           double, the least cost of n rows
 *   choice[bound + 1]         uint16, the size index of n's first chunk
 *   staging                   every input and output at the largest size
 *   arena                     the largest signature's arena
 *
 * A bucketed model's context (kiln_run_lengths) is the same bytes: the
 * staging area and arena are the largest of every bucket's (the largest
 * bucket's), and a smaller bucket's plan table is a static const array of
 * its descriptor (.plan, baked by kiln compile with kiln_plan_table), so
 * the header only points at it.
 *
 * The plan of n is a shortest cover: best[n] = min_i cost[i] + best[n - b_i]
 * (best of a non-positive rest is 0: that chunk is the padded last one).
 * The table is filled once per cost change, so kiln_run only walks it and
 * never takes a lock; the descriptor is read-only and shared.
 */
#define _POSIX_C_SOURCE 200809L
#include <limits.h>
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kiln/run.h"

typedef struct Rule {
	int64_t batch;
	int nchunks;
	uint16_t chunk[KILN_MAX_RULE_CHUNKS];   /* size indices */
} Rule;

/* The plans of one model's compiled sizes: the first chunk of every n up
 * to bound, and the size with the least cost per row past it. */
typedef struct Plans {
	const kiln_model *m;
	const uint16_t *choice;
	int64_t bound;
	int cheapest;
} Plans;

struct kiln_context {
	const kiln_model *m;
	void *owned;               /* kiln_context_create's allocation, else NULL */
	double *cost;
	double *best;
	uint16_t *choice;
	int64_t bound;
	int cheapest;              /* size index with the least cost per row */
	unsigned char *staging;
	uint64_t staging_bytes;
	unsigned char *arena;
	int batched;               /* some input has a batch axis */
	int inplace;               /* every batched tensor's rows are contiguous */
	int nrules;
	Rule rules[KILN_MAX_RULES];
	const void *in_ptr[KILN_MAX_IO];
	void *out_ptr[KILN_MAX_IO];
	Plans bucket[KILN_BUCKETS_MAX];   /* per bucket but the last (this model): its plans */
};

_Static_assert(sizeof(struct kiln_context) <= KILN_CONTEXT_HEADER_BYTES,
               "KILN_CONTEXT_HEADER_BYTES is too small");

/* ---- tensor geometry --------------------------------------------------- */

/* Bytes per element; 0 for the packed 4-bit types (two elements a byte). */
static uint64_t elem_bytes(int dtype)
{
	switch (dtype) {
	case KILN_FLOAT64: case KILN_INT64: case KILN_UINT64: return 8;
	case KILN_FLOAT32: case KILN_INT32: case KILN_UINT32: return 4;
	case KILN_FLOAT16: case KILN_BFLOAT16: case KILN_INT16: case KILN_UINT16: return 2;
	case KILN_INT4: case KILN_UINT4: return 0;
	default: return 1;
	}
}

/* A tensor at batch n is [outer][n][row]: outer counts the elements before
 * the batch axis, row the elements of one sample after it (its per-sample
 * extent on the axis included). A tensor without a batch axis is one row.
 * Offsets below count elements; esize turns them into bytes (0: packed
 * nibbles, element i in byte i / 2). */
typedef struct Geom {
	uint64_t outer, row, esize;
	int batched;
} Geom;

static Geom geom(const kiln_tensor_desc *t)
{
	Geom g = {1, 1, elem_bytes(t->dtype), t->batch_axis >= 0};
	for (int k = 0; k < t->rank; k++) {
		if (g.batched && k < t->batch_axis)
			g.outer *= (uint64_t)t->dims[k];
		else
			g.row *= (uint64_t)t->dims[k];
	}
	return g;
}

static uint64_t bytes_of(const Geom *g, uint64_t elems)
{
	return g->esize ? elems * g->esize : elems / 2 + (elems & 1);
}

static int nibble(const unsigned char *p, uint64_t i)
{
	return (p[i >> 1] >> (4 * (i & 1))) & 15;
}

static void set_nibble(unsigned char *p, uint64_t i, int v)
{
	unsigned sh = 4 * (unsigned)(i & 1);
	p[i >> 1] = (unsigned char)((p[i >> 1] & ~(15u << sh)) | ((unsigned)v << sh));
}

/* Copy count elements from src[si..] to dst[di..]; a packed 4-bit tensor
 * keeps the other nibble of a shared byte at either end. */
static void copy_elems(const Geom *g, unsigned char *dst, uint64_t di, const unsigned char *src,
                       uint64_t si, uint64_t count)
{
	if (g->esize) {
		memcpy(dst + di * g->esize, src + si * g->esize, count * g->esize);
		return;
	}
	if (!((di | si) & 1)) {
		memcpy(dst + di / 2, src + si / 2, count / 2);
		if (count & 1)
			set_nibble(dst, di + count - 1, nibble(src, si + count - 1));
		return;
	}
	for (uint64_t k = 0; k < count; k++)
		set_nibble(dst, di + k, nibble(src, si + k));
}

/* Zero count elements from dst[di..]. */
static void zero_elems(const Geom *g, unsigned char *dst, uint64_t di, uint64_t count)
{
	if (g->esize) {
		memset(dst + di * g->esize, 0, count * g->esize);
		return;
	}
	for (; count && (di & 1); di++, count--)
		set_nibble(dst, di, 0);
	memset(dst + di / 2, 0, count / 2);
	if (count & 1)
		set_nibble(dst, di + count - 1, 0);
}

KILN_API uint64_t kiln_tensor_bytes(const kiln_tensor_desc *t, int64_t n)
{
	Geom g = geom(t);
	uint64_t per = g.outer * g.row;
	if (!g.batched)
		return bytes_of(&g, per);
	uint64_t most = g.esize ? UINT64_MAX / g.esize : UINT64_MAX;
	if (per && (uint64_t)n > most / per)
		return UINT64_MAX;
	return bytes_of(&g, per * (uint64_t)n);
}

static int64_t max_batch(const kiln_model *m)
{
	return m->batches[m->nbatches - 1];
}

/* Offsets of every tensor's staging copy at the largest size: inputs first. */
static uint64_t staging_offset(const kiln_model *m, int which /* input i, or ninputs + output */)
{
	uint64_t off = 0;
	for (int i = 0; i < which; i++) {
		const kiln_tensor_desc *t = i < m->ninputs ? &m->inputs[i] : &m->outputs[i - m->ninputs];
		off += KILN_ALIGN64(kiln_tensor_bytes(t, max_batch(m)));
	}
	return off;
}

/* ---- context set-up ------------------------------------------------------ */

static int find_size(const kiln_model *m, int64_t b)
{
	for (int i = 0; i < m->nbatches; i++)
		if (m->batches[i] == b)
			return i;
	return -1;
}

static int64_t plan_bound(const kiln_model *m)
{
	int64_t mb = max_batch(m);
	return KILN_PLAN_BOUND(mb);
}

KILN_API uint64_t kiln_context_bytes(const kiln_model *m)
{
	if (!m || m->nbatches < 1)
		return 0;
	uint64_t staging = staging_offset(m, m->ninputs + m->noutputs);
	return KILN_CONTEXT_BYTES(m->nbatches, plan_bound(m), staging, m->max_arena_bytes);
}

/* The size index with the least cost per row (the largest of equals). */
static int cheapest_size(const int64_t *batches, int nbatches, const double *cost)
{
	int cheapest = nbatches - 1;
	for (int i = nbatches - 1; i >= 0; i--)
		if (cost[i] / (double)batches[i] < cost[cheapest] / (double)batches[cheapest])
			cheapest = i;
	return cheapest;
}

/* best[n] and choice[n] for n up to bound. The first chunk of n is the
 * largest size that starts a cheapest cover (within rounding: the same sizes
 * summed in another order differ in the last bits), so full chunks come
 * largest first and equal costs prefer fewer chunks. */
KILN_API int kiln_plan_table(const int64_t *batches, int nbatches, const double *cost,
                             int64_t bound, double *best, uint16_t *choice)
{
	best[0] = 0;
	choice[0] = 0;
	for (int64_t n = 1; n <= bound; n++) {
		double least = 0;
		for (int i = 0; i < nbatches; i++) {
			int64_t rest = n - batches[i];
			double v = cost[i] + (rest > 0 ? best[rest] : 0.0);
			if (i == 0 || v < least)
				least = v;
		}
		int pick = 0;
		for (int i = nbatches - 1; i >= 0; i--) {
			int64_t rest = n - batches[i];
			double v = cost[i] + (rest > 0 ? best[rest] : 0.0);
			if (v <= least * (1 + 1e-12)) {
				pick = i;
				break;
			}
		}
		best[n] = least;
		choice[n] = (uint16_t)pick;
	}
	return cheapest_size(batches, nbatches, cost);
}

static void make_plans(kiln_context *c)
{
	c->cheapest = kiln_plan_table(c->m->batches, c->m->nbatches, c->cost, c->bound, c->best,
	                              c->choice);
}

/* The context's own plans, as its costs stand. */
static Plans own_plans(const kiln_context *c)
{
	return (Plans){c->m, c->choice, c->bound, c->cheapest};
}

/* The plans of bucket j (the last: the context's own). */
static Plans plans_at(const kiln_context *c, int j)
{
	return j < c->m->nbuckets - 1 ? c->bucket[j] : own_plans(c);
}

/* A context's header and tables for m at p (64-byte aligned); returns the
 * end. The staging area and arena are the caller's to set. */
static unsigned char *context_tables(kiln_context **out, const kiln_model *m, unsigned char *p)
{
	kiln_context *c = (kiln_context *)(void *)p;
	memset(c, 0, sizeof *c);
	c->m = m;
	c->bound = plan_bound(m);
	p += KILN_CONTEXT_HEADER_BYTES;
	c->cost = (double *)(void *)p;
	p += KILN_ALIGN64(8u * (uint64_t)m->nbatches);
	c->best = (double *)(void *)p;
	c->choice = (uint16_t *)(void *)(p + 8u * ((uint64_t)c->bound + 1u));
	p += KILN_ALIGN64(10u * ((uint64_t)c->bound + 1u));
	*out = c;
	return p;
}

/* A bucket's model must fit the top model's context: the same batch sizes
 * and interface, an arena and staging area no larger, and its plan table. */
static int bucket_fits(const kiln_model *top, const kiln_model *b)
{
	if (!b || b->kiln_version != KILN_VERSION_NUM || b->struct_bytes < sizeof(kiln_model) ||
	    b->nbatches != top->nbatches || b->ninputs != top->ninputs ||
	    b->noutputs != top->noutputs || b->max_arena_bytes > top->max_arena_bytes ||
	    staging_offset(b, b->ninputs + b->noutputs) >
	        staging_offset(top, top->ninputs + top->noutputs) ||
	    !b->plan || !b->cost || b->plan_bound != plan_bound(top))
		return 0;
	for (int i = 0; i < b->nbatches; i++)
		if (b->batches[i] != top->batches[i] || !(b->cost[i] > 0))
			return 0;
	return 1;
}

/* The plans of a bucketed model's smaller buckets: their descriptors'
 * tables (they run in c's staging area and arena). */
static int bucket_setup(kiln_context *c)
{
	const kiln_model *m = c->m;
	if (m->nbuckets > KILN_BUCKETS_MAX || !m->buckets || !m->bucket_models || !m->bucket_axis ||
	    m->bucket_models[m->nbuckets - 1] != m)
		return KILN_USAGE;
	for (int j = 0; j + 1 < m->nbuckets; j++) {
		const kiln_model *b = m->bucket_models[j];
		if (!bucket_fits(m, b))
			return KILN_USAGE;
		c->bucket[j] = (Plans){b, b->plan, c->bound, cheapest_size(b->batches, b->nbatches, b->cost)};
	}
	return KILN_OK;
}

static int context_setup(kiln_context *c);

KILN_API int kiln_context_init(kiln_context **ctx, const kiln_model *m, void *mem, uint64_t bytes)
{
	if (!ctx || !m || !mem)
		return KILN_USAGE;
	*ctx = NULL;
	/* A descriptor from another kiln may not have the fields read here. */
	if (m->kiln_version != KILN_VERSION_NUM || m->struct_bytes < sizeof(kiln_model) ||
	    m->nbatches < 1 || m->nbatches > 65535)
		return KILN_USAGE;
	if (m->ninputs > KILN_MAX_IO || m->noutputs > KILN_MAX_IO)
		return KILN_LIMIT;
	uint64_t need = kiln_context_bytes(m);
	if (bytes < need)
		return KILN_USAGE;
	kiln_context *c;
	unsigned char *p = context_tables(&c, m, (unsigned char *)KILN_ALIGN64((uintptr_t)mem));
	c->staging = p;
	c->staging_bytes = staging_offset(m, m->ninputs + m->noutputs);
	p += KILN_ALIGN64(c->staging_bytes);
	c->arena = p;
	p += KILN_ALIGN64(m->max_arena_bytes);
	int st = context_setup(c);
	if (st == KILN_OK && m->nbuckets >= 2)
		st = bucket_setup(c);
	if (st != KILN_OK)
		return st;
	*ctx = c;
	return KILN_OK;
}

/* Costs, plans and baked rules of a context whose memory is laid out. */
static int context_setup(kiln_context *c)
{
	const kiln_model *m = c->m;
	c->inplace = 1;
	for (int i = 0; i < m->ninputs + m->noutputs; i++) {
		const kiln_tensor_desc *t = i < m->ninputs ? &m->inputs[i] : &m->outputs[i - m->ninputs];
		Geom g = geom(t);
		/* In place, chunk k starts at element k * s * row: a whole byte
		 * of a 4-bit tensor only if row is even. */
		if (g.batched && (g.outer != 1 || (!g.esize && (g.row & 1))))
			c->inplace = 0;
		if (g.batched && i < m->ninputs)
			c->batched = 1;
	}
	for (int i = 0; i < m->nbatches; i++)
		c->cost[i] = m->cost && m->cost[i] > 0 ? m->cost[i] : (double)m->batches[i] + 1.0;
	make_plans(c);
	for (int i = 0; i < m->nrules; i++) {
		int st = kiln_context_set_rule(c, m->rules[i]);
		if (st != KILN_OK && st != KILN_BATCH_MIXING)
			return st;
	}
	return KILN_OK;
}

KILN_API int kiln_context_create(kiln_context **ctx, const kiln_model *m)
{
	if (!ctx || !m)
		return KILN_USAGE;
	*ctx = NULL;
	uint64_t bytes = kiln_context_bytes(m);
	if (!bytes || bytes > SIZE_MAX)
		return KILN_USAGE;
	void *mem = malloc((size_t)bytes);
	if (!mem)
		return KILN_NO_MEMORY;
	int st = kiln_context_init(ctx, m, mem, bytes);
	if (st != KILN_OK) {
		free(mem);
		return st;
	}
	(*ctx)->owned = mem;
	return KILN_OK;
}

KILN_API void kiln_context_destroy(kiln_context *ctx)
{
	if (ctx)
		free(ctx->owned);
}

KILN_API const kiln_model *kiln_context_model(const kiln_context *ctx)
{
	return ctx ? ctx->m : NULL;
}

KILN_API uint64_t kiln_context_bytes_max(const kiln_model *const *models, int n)
{
	uint64_t most = 0;
	for (int i = 0; i < n; i++) {
		uint64_t b = models && models[i] ? kiln_context_bytes(models[i]) : 0;
		if (!b)
			return 0;
		if (b > most)
			most = b;
	}
	return most;
}

/* ---- rules ------------------------------------------------------------------ */

/* A positive decimal below 2^31; advances *s. 0 if there is none. */
static int64_t decimal(const char **s)
{
	int64_t v = 0;
	const char *p = *s;
	if (*p < '0' || *p > '9')
		return 0;
	for (; *p >= '0' && *p <= '9'; p++) {
		v = v * 10 + (*p - '0');
		if (v >= (INT64_C(1) << 31))
			return 0;
	}
	*s = p;
	return v;
}

KILN_API int kiln_rule_parse(const char *text, const int64_t *sizes, int nsizes, kiln_rule *out)
{
	if (!text || !out || (!sizes && nsizes))
		return KILN_USAGE;
	memset(out, 0, sizeof *out);
	const char *s = text;
	if (!strchr(text, ':'))
		return KILN_RULE_SYNTAX;
	int64_t b = decimal(&s);
	if (!b || *s++ != ':')
		return KILN_RULE_SYNTAX;
	int64_t sum = 0;
	for (;;) {
		int64_t v = decimal(&s);
		if (!v)
			return KILN_RULE_SYNTAX;
		if (out->nchunks == KILN_MAX_RULE_CHUNKS)
			return KILN_LIMIT;
		out->chunks[out->nchunks++] = v;
		sum += v;
		if (!*s)
			break;
		if (*s++ != ',')
			return KILN_RULE_SYNTAX;
	}
	for (int k = 0; k < out->nchunks; k++) {
		int found = 0;
		for (int i = 0; i < nsizes && !found; i++)
			found = sizes[i] == out->chunks[k];
		if (!found)
			return KILN_RULE_SIZE;
	}
	if (sum < b)
		return KILN_RULE_SHORT;
	if (sum - b >= out->chunks[out->nchunks - 1])
		return KILN_RULE_PADDING;
	out->batch = b;
	return KILN_OK;
}

KILN_API int kiln_context_set_rule(kiln_context *ctx, const char *text)
{
	if (!ctx)
		return KILN_USAGE;
	const kiln_model *m = ctx->m;
	kiln_rule r;
	int st = kiln_rule_parse(text, m->batches, m->nbatches, &r);
	if (st != KILN_OK)
		return st;
	if (!m->batch_independent)
		return KILN_BATCH_MIXING;
	int at = 0;
	while (at < ctx->nrules && ctx->rules[at].batch != r.batch)
		at++;
	if (at == KILN_MAX_RULES)
		return KILN_LIMIT;
	Rule *dst = &ctx->rules[at];
	dst->batch = r.batch;
	dst->nchunks = r.nchunks;
	for (int k = 0; k < r.nchunks; k++)
		dst->chunk[k] = (uint16_t)find_size(m, r.chunks[k]);
	if (at == ctx->nrules)
		ctx->nrules++;
	return KILN_OK;
}

KILN_API void kiln_context_clear_rules(kiln_context *ctx)
{
	if (ctx)
		ctx->nrules = 0;
}

static const Rule *find_rule(const kiln_context *c, int64_t n)
{
	for (int i = 0; i < c->nrules; i++)
		if (c->rules[i].batch == n)
			return &c->rules[i];
	return NULL;
}

/* ---- plans ------------------------------------------------------------------ */

/* The size index of the next chunk when `left` rows remain (step k of n). */
static int next_chunk(const Plans *p, const Rule *r, int64_t k, int64_t left)
{
	if (r)
		return r->chunk[k];
	if (left > p->bound)
		return p->cheapest;
	return p->choice[left];
}

KILN_API int kiln_context_plan(const kiln_context *ctx, int64_t n, int64_t *chunks, int max,
                               int *nchunks)
{
	if (!ctx || !nchunks || n < 0 || (max > 0 && !chunks))
		return KILN_USAGE;
	const kiln_model *m = ctx->m;
	*nchunks = 0;
	if (n == 0)
		return KILN_OK;
	int direct = find_size(m, n);
	if (direct >= 0 && !find_rule(ctx, n)) {
		if (max < 1)
			return KILN_LIMIT;
		chunks[0] = n;
		*nchunks = 1;
		return KILN_OK;
	}
	if (!m->batch_independent || !ctx->batched)
		return KILN_BATCH_MIXING;
	const Rule *r = find_rule(ctx, n);
	Plans p = own_plans(ctx);
	/* Past the table's bound every chunk is the cheapest size: count those
	 * at once (n may be 10^12), then walk the table (at most bound steps). */
	int64_t k = 0, left = n;
	if (!r && left > ctx->bound) {
		int64_t s = m->batches[ctx->cheapest], over = left - ctx->bound;
		k = over / s + (over % s != 0);
		for (int64_t j = 0; j < k && j < max; j++)
			chunks[j] = s;
		left = over % s ? ctx->bound - (s - over % s) : ctx->bound;
	}
	for (; left > 0; k++) {
		int i = next_chunk(&p, r, k, left);
		if (k < max)
			chunks[k] = m->batches[i];
		left -= m->batches[i];
	}
	*nchunks = k > INT_MAX ? INT_MAX : (int)k;
	return k > max ? KILN_LIMIT : KILN_OK;
}

KILN_API int kiln_context_set_costs(kiln_context *ctx, const double *cost)
{
	if (!ctx || !cost)
		return KILN_USAGE;
	for (int i = 0; i < ctx->m->nbatches; i++)
		if (!(cost[i] > 0))
			return KILN_USAGE;
	memcpy(ctx->cost, cost, (size_t)ctx->m->nbatches * sizeof *cost);
	make_plans(ctx);
	return KILN_OK;
}

KILN_API const double *kiln_context_costs(const kiln_context *ctx)
{
	return ctx ? ctx->cost : NULL;
}

KILN_API void *kiln_context_staging(kiln_context *ctx, uint64_t *bytes)
{
	if (bytes)
		*bytes = ctx ? ctx->staging_bytes : 0;
	return ctx ? ctx->staging : NULL;
}

/* ---- running ------------------------------------------------------------------ */

/* Run compiled size i of m (the context's model, or one of its buckets) on
 * the pointers in ctx->in_ptr / out_ptr. */
static int call(kiln_context *c, const kiln_model *m, int i)
{
	return m->run[i](c->arena, c->in_ptr, c->out_ptr);
}

/* One chunk of size s at row r with `rows` valid rows (rows <= s), through
 * the staging area: valid input rows copied in, padded rows zeroed, valid
 * output rows copied back. Tensors without a batch axis are used in place. */
static int staged_chunk(kiln_context *c, int i, int64_t n, int64_t r, int64_t rows,
                        const kiln_input *in, const kiln_output *out)
{
	const kiln_model *m = c->m;
	uint64_t s = (uint64_t)m->batches[i];
	for (int t = 0; t < m->ninputs; t++) {
		Geom g = geom(&m->inputs[t]);
		if (!g.batched) {
			c->in_ptr[t] = in[t].data;
			continue;
		}
		unsigned char *dst = c->staging + staging_offset(m, t);
		const unsigned char *src = in[t].data;
		for (uint64_t o = 0; o < g.outer; o++) {
			uint64_t d = o * s * g.row;
			copy_elems(&g, dst, d, src, (o * (uint64_t)n + (uint64_t)r) * g.row,
			           (uint64_t)rows * g.row);
			zero_elems(&g, dst, d + (uint64_t)rows * g.row, (s - (uint64_t)rows) * g.row);
		}
		c->in_ptr[t] = dst;
	}
	for (int t = 0; t < m->noutputs; t++) {
		Geom g = geom(&m->outputs[t]);
		c->out_ptr[t] = g.batched ? c->staging + staging_offset(m, m->ninputs + t) : out[t].data;
	}
	int st = call(c, m, i);
	if (st != KILN_OK)
		return st;
	for (int t = 0; t < m->noutputs; t++) {
		Geom g = geom(&m->outputs[t]);
		if (!g.batched)
			continue;
		const unsigned char *src = c->out_ptr[t];
		unsigned char *dst = out[t].data;
		for (uint64_t o = 0; o < g.outer; o++)
			copy_elems(&g, dst, (o * (uint64_t)n + (uint64_t)r) * g.row, src, o * s * g.row,
			           (uint64_t)rows * g.row);
		/* An odd 4-bit tensor ends in a zero nibble, as a direct call leaves it. */
		uint64_t total = g.outer * (uint64_t)n * g.row;
		if (!g.esize && (total & 1) && r + rows == n)
			set_nibble(dst, total, 0);
	}
	return KILN_OK;
}

/* A full chunk on the caller's buffers at row r (rows contiguous: outer 1). */
static int inplace_chunk(kiln_context *c, int i, int64_t r, const kiln_input *in,
                         const kiln_output *out)
{
	const kiln_model *m = c->m;
	for (int t = 0; t < m->ninputs; t++) {
		Geom g = geom(&m->inputs[t]);
		c->in_ptr[t] = (const unsigned char *)in[t].data +
		               (g.batched ? bytes_of(&g, (uint64_t)r * g.row) : 0);
	}
	for (int t = 0; t < m->noutputs; t++) {
		Geom g = geom(&m->outputs[t]);
		c->out_ptr[t] = (unsigned char *)out[t].data +
		                (g.batched ? bytes_of(&g, (uint64_t)r * g.row) : 0);
	}
	return call(c, c->m, i);
}

static int run_n(kiln_context *ctx, int64_t n, const kiln_input *inputs,
                 const kiln_output *outputs)
{
	if (!ctx || n < 0)
		return KILN_USAGE;
	if (n == 0)
		return KILN_OK;
	const kiln_model *m = ctx->m;
	if ((m->ninputs && !inputs) || (m->noutputs && !outputs))
		return KILN_USAGE;
	for (int t = 0; t < m->ninputs + m->noutputs; t++) {
		const kiln_tensor_desc *d = t < m->ninputs ? &m->inputs[t] : &m->outputs[t - m->ninputs];
		const void *data = t < m->ninputs ? inputs[t].data : outputs[t - m->ninputs].data;
		int dtype = t < m->ninputs ? inputs[t].dtype : outputs[t - m->ninputs].dtype;
		uint64_t bytes = t < m->ninputs ? inputs[t].bytes : outputs[t - m->ninputs].bytes;
		uint64_t need = kiln_tensor_bytes(d, n);
		if (need == UINT64_MAX)
			return KILN_LIMIT;
		if (dtype != d->dtype || bytes < need || (!data && need))
			return KILN_USAGE;
	}
	const Rule *rule = find_rule(ctx, n);
	int direct = find_size(m, n);
	if (direct >= 0 && !rule) {
		for (int t = 0; t < m->ninputs; t++)
			ctx->in_ptr[t] = inputs[t].data;
		for (int t = 0; t < m->noutputs; t++)
			ctx->out_ptr[t] = outputs[t].data;
		return call(ctx, m, direct);
	}
	if (!m->batch_independent || !ctx->batched)
		return KILN_BATCH_MIXING;
	Plans p = own_plans(ctx);
	int64_t r = 0;
	for (int64_t k = 0; r < n; k++) {
		int i = next_chunk(&p, rule, k, n - r);
		int64_t s = m->batches[i], rows = s < n - r ? s : n - r;
		int st = rows == s && ctx->inplace ? inplace_chunk(ctx, i, r, inputs, outputs)
		                                   : staged_chunk(ctx, i, n, r, rows, inputs, outputs);
		if (st != KILN_OK)
			return st;
		r += rows;
	}
	return KILN_OK;
}

/* ---- per-sample lengths (buckets) ---------------------------------------------- */

KILN_API int64_t kiln_lengths_max(int64_t n, const int64_t *lengths)
{
	int64_t most = 0;
	for (int64_t i = 0; lengths && i < n; i++)
		if (lengths[i] > most)
			most = lengths[i];
	return most;
}

/* A tensor that carries the bucketed dim on axis a (batch on axis 0): one
 * sample is [pre][L][post] elements, pre counting axes 0 to a - 1 (axis
 * 0 at the sample's extent). A tensor without the dim is one sample of
 * `post` elements (pre 1, L 1). */
typedef struct LGeom {
	uint64_t pre, post;
	Geom g;
	int bucketed;
} LGeom;

static LGeom lgeom(const kiln_tensor_desc *t, int axis)
{
	LGeom l = {1, 1, geom(t), axis >= 1 && axis < t->rank};
	for (int k = 0; k < t->rank; k++) {
		if (l.bucketed && k < axis)
			l.pre *= (uint64_t)t->dims[k];
		else if (!l.bucketed || k > axis)
			l.post *= (uint64_t)t->dims[k];
	}
	return l;
}

/* Copy sample s of a tensor at length ls (len valid positions) to sample d
 * of one at length ld; positions len..ld of d are zeroed. */
static void move_sample(const LGeom *l, unsigned char *dst, uint64_t d, uint64_t ld,
                        const unsigned char *src, uint64_t s, uint64_t ls, uint64_t len)
{
	for (uint64_t p = 0; p < l->pre; p++) {
		uint64_t di = ((d * l->pre + p) * ld) * l->post, si = ((s * l->pre + p) * ls) * l->post;
		copy_elems(&l->g, dst, di, src, si, len * l->post);
		zero_elems(&l->g, dst, di + len * l->post, (ld - len) * l->post);
	}
}

/* The bucket of a length: the smallest that fits. */
static int bucket_of(const kiln_model *m, int64_t len)
{
	int j = 0;
	while (m->buckets[j] < len)
		j++;
	return j;
}

/* One chunk of bucket j at its compiled size i: the next `rows` samples of
 * the bucket from *next on packed into the staging area at the bucket's
 * length (zero past each sample's length, rows past `rows` zero), run, and
 * their outputs copied back to the caller's layout at lmax. */
static int lengths_chunk(kiln_context *c, int j, int i, int64_t rows, const int64_t *lengths,
                         uint64_t lmax, int64_t *next, const kiln_input *in,
                         const kiln_output *out)
{
	const kiln_model *m = c->m, *bm = j < m->nbuckets - 1 ? c->bucket[j].m : m;
	uint64_t L = (uint64_t)m->buckets[j], s = (uint64_t)bm->batches[i];
	int64_t start = *next, at = start;
	for (int64_t g = 0; g < rows; at++) {
		if (bucket_of(m, lengths[at]) != j)
			continue;
		for (int t = 0; t < m->ninputs; t++) {
			LGeom l = lgeom(&bm->inputs[t], m->bucket_axis[t]);
			if (l.g.batched)
				move_sample(&l, c->staging + staging_offset(bm, t), (uint64_t)g,
				            l.bucketed ? L : 1, in[t].data, (uint64_t)at, l.bucketed ? lmax : 1,
				            l.bucketed ? (uint64_t)lengths[at] : 1);
		}
		g++;
	}
	*next = at;
	for (int t = 0; t < m->ninputs; t++) {
		LGeom l = lgeom(&bm->inputs[t], m->bucket_axis[t]);
		unsigned char *p = c->staging + staging_offset(bm, t);
		uint64_t per = l.pre * (l.bucketed ? L : 1) * l.post;
		if (l.g.batched)
			zero_elems(&l.g, p, (uint64_t)rows * per, (s - (uint64_t)rows) * per);
		c->in_ptr[t] = l.g.batched ? p : in[t].data;
	}
	for (int t = 0; t < m->noutputs; t++)
		c->out_ptr[t] = bm->outputs[t].batch_axis >= 0
		                     ? c->staging + staging_offset(bm, m->ninputs + t)
		                     : out[t].data;
	int st = call(c, bm, i);
	if (st != KILN_OK)
		return st;
	for (int64_t k = 0, smp = start; k < rows; smp++) {
		if (bucket_of(m, lengths[smp]) != j)
			continue;
		for (int t = 0; t < m->noutputs; t++) {
			LGeom l = lgeom(&bm->outputs[t], m->bucket_axis[m->ninputs + t]);
			if (l.g.batched)
				move_sample(&l, out[t].data, (uint64_t)smp, l.bucketed ? lmax : 1,
				            c->out_ptr[t], (uint64_t)k, l.bucketed ? L : 1,
				            l.bucketed ? (uint64_t)lengths[smp] : 1);
		}
		k++;
	}
	return KILN_OK;
}

/* The samples of bucket j, G of them, as kiln_run would run G rows: a
 * compiled size in one call, else the chunks of the bucket's plan (or the
 * context's rule for G), each packed and padded in the staging area. */
static int run_bucket(kiln_context *c, int j, int64_t n, const int64_t *lengths, uint64_t lmax,
                      const kiln_input *in, const kiln_output *out)
{
	Plans p = plans_at(c, j);
	int64_t G = 0;
	for (int64_t i = 0; i < n; i++)
		G += bucket_of(c->m, lengths[i]) == j;
	const Rule *rule = find_rule(c, G);
	int direct = rule ? -1 : find_size(p.m, G);
	int64_t next = 0, left = G;
	for (int64_t k = 0; left > 0; k++) {
		int i = direct >= 0 ? direct : next_chunk(&p, rule, k, left);
		int64_t s = p.m->batches[i], rows = s < left ? s : left;
		int st = lengths_chunk(c, j, i, rows, lengths, lmax, &next, in, out);
		if (st != KILN_OK)
			return st;
		left -= rows;
	}
	return KILN_OK;
}

/* The bytes of a caller's tensor of n samples at lmax along its bucketed
 * axis (as kiln_tensor_bytes otherwise); UINT64_MAX on overflow. */
static uint64_t lengths_bytes(const kiln_tensor_desc *t, int axis, int64_t n, uint64_t lmax)
{
	LGeom l = lgeom(t, axis);
	if (!l.bucketed)
		return kiln_tensor_bytes(t, n);
	uint64_t per = l.pre * l.post, most = l.g.esize ? UINT64_MAX / l.g.esize : UINT64_MAX;
	if (per && lmax && ((uint64_t)n > most / per || (uint64_t)n * per > most / lmax))
		return UINT64_MAX;
	return bytes_of(&l.g, (uint64_t)n * per * lmax);
}

static int run_lengths(kiln_context *ctx, int64_t n, const int64_t *lengths, int64_t lmax,
                       const kiln_input *inputs, const kiln_output *outputs)
{
	if (!ctx || n < 0 || ctx->m->nbuckets < 2)
		return KILN_USAGE;
	if (n == 0)
		return KILN_OK;
	const kiln_model *m = ctx->m;
	if (!lengths || (m->ninputs && !inputs) || (m->noutputs && !outputs))
		return KILN_USAGE;
	int64_t most = kiln_lengths_max(n, lengths);
	if (lmax < 0)
		lmax = most;
	for (int64_t i = 0; i < n; i++)
		if (lengths[i] < 0 || lengths[i] > lmax || lengths[i] > m->buckets[m->nbuckets - 1])
			return KILN_LENGTH;
	for (int t = 0; t < m->ninputs + m->noutputs; t++) {
		const kiln_tensor_desc *d = t < m->ninputs ? &m->inputs[t] : &m->outputs[t - m->ninputs];
		const void *data = t < m->ninputs ? inputs[t].data : outputs[t - m->ninputs].data;
		int dtype = t < m->ninputs ? inputs[t].dtype : outputs[t - m->ninputs].dtype;
		uint64_t bytes = t < m->ninputs ? inputs[t].bytes : outputs[t - m->ninputs].bytes;
		uint64_t need = lengths_bytes(d, m->bucket_axis[t], n, (uint64_t)lmax);
		if (need == UINT64_MAX)
			return KILN_LIMIT;
		if (dtype != d->dtype || bytes < need || (!data && need) ||
		    (d->batch_axis > 0 || (m->bucket_axis[t] >= 0 && d->batch_axis != 0)))
			return KILN_USAGE;
	}
	for (int j = 0; j < m->nbuckets; j++) {
		int st = run_bucket(ctx, j, n, lengths, (uint64_t)lmax, inputs, outputs);
		if (st != KILN_OK)
			return st;
	}
	return KILN_OK;
}

/* ---- calibration ------------------------------------------------------------ */

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* The public entries: kiln's floating-point environment around the work
 * (fpenv.c), the caller's given back after */
KILN_API int kiln_run(kiln_context *ctx, int64_t n, const kiln_input *inputs,
                      const kiln_output *outputs)
{
	kiln_fpenv e = kiln_fpenv_enter();
	int st = run_n(ctx, n, inputs, outputs);
	kiln_fpenv_leave(e);
	return st;
}

KILN_API int kiln_run_lengths(kiln_context *ctx, int64_t n, const int64_t *lengths,
                              int64_t lmax, const kiln_input *inputs,
                              const kiln_output *outputs)
{
	kiln_fpenv e = kiln_fpenv_enter();
	int st = run_lengths(ctx, n, lengths, lmax, inputs, outputs);
	kiln_fpenv_leave(e);
	return st;
}

KILN_API int kiln_context_calibrate(kiln_context *ctx, int reps, double *measured_ns)
{
	enum { MAX_REPS = 101 };
	if (!ctx || reps < 1)
		return KILN_USAGE;
	if (reps > MAX_REPS)
		reps = MAX_REPS;
	const kiln_model *m = ctx->m;
	double t[MAX_REPS], cost[256];
	if (m->nbatches > 256)
		return KILN_LIMIT;
	memset(ctx->staging, 0, ctx->staging_bytes);
	for (int t_ = 0; t_ < m->ninputs; t_++)
		ctx->in_ptr[t_] = ctx->staging + staging_offset(m, t_);
	for (int t_ = 0; t_ < m->noutputs; t_++)
		ctx->out_ptr[t_] = ctx->staging + staging_offset(m, m->ninputs + t_);
	for (int i = 0; i < m->nbatches; i++) {
		int st = call(ctx, m, i); /* warm up */
		if (st != KILN_OK)
			return st;
		for (int k = 0; k < reps; k++) {
			double s = now_ns();
			call(ctx, m, i);
			t[k] = now_ns() - s;
		}
		qsort(t, (size_t)reps, sizeof t[0], cmp_double);
		cost[i] = t[reps / 2] > 1.0 ? t[reps / 2] : 1.0;
		if (measured_ns)
			measured_ns[i] = t[reps / 2];
	}
	return kiln_context_set_costs(ctx, cost);
}
