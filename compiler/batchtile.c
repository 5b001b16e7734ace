/*
 * batchtile.c - whether a compiled batch size runs as tiles of fewer samples.
 *
 * A batch-independent model whose activations are large per sample (a
 * transformer's [S, D] rows and the per-layer intermediates) moves its whole
 * batch through memory between nodes: at batch 256 the transformer encoder of
 * bench/ writes and reads 48 MiB of activations per node, far beyond L2, while
 * each node's weights would fit there. Run as tiles of a few samples, one tile
 * passes through every node while its activations stay in L2 (and the arena
 * shrinks to one tile's). The cost is each weight read once per tile instead
 * of once per call: so a tile keeps at least TILE_ROWS rows in every GEMM
 * against a weight, which keeps the weight's reuse (a panel read from L2 or
 * L3 feeds that many rows). A convolution's rows are its output pixels (each
 * reads the whole weight); a network of them is tiled only while a tile's
 * arena stays within TILE_CONV_ARENA (a ResNet's large images would stream
 * through memory in any tile, and each tile would read every weight again).
 * A product that carries under TILE_MINOR of the products' work (a dense
 * head of one row a sample after the convolutions) does not bound the
 * tile. Graphs with other weight-bound ops (recurrences) are not tiled.
 *
 * The tile t divides B, so every tile is the same compiled signature (an
 * internal one when t is not a compiled size): B runs as B / t calls of t's
 * run function on the caller's rows at their offset. Conditions: the model is
 * proven batch independent, every batched input and output has its batch on
 * axis 0 (a tile is then a contiguous block of rows), none is 4-bit (rows
 * may start mid-byte) or frozen, and B's arena is more than TILE_ARENA_MIN
 * bytes (smaller ones stay in cache as they are: measured, a transformer
 * layer at batch 16, 3 MiB of arena, gains nothing from tiles).
 */
#include <string.h>

#include "ops/ops.h"
#include "stitch.h"
#include "opdef.h"

enum {
	TILE_ROWS = 256,                   /* rows each GEMM against a weight keeps */
	TILE_ARENA_MIN = 8 << 20,          /* bytes of arena worth tiling */
	TILE_WEIGHT_BYTES = 16 << 10,      /* weights smaller than this do not count */
	TILE_CONV_ARENA = 2 << 20,         /* most bytes of a tile's arena with convolutions */
};
static const double TILE_MINOR = 0.01;  /* share of the products' work that does not count */

static int64_t nelem(const Sig *s, int id)
{
	int64_t n = shape_nelem(&s->shapes[id]);
	return n < 0 ? 0 : n;
}

static bool is_weight(const Sig *s, int id)
{
	return id != NONE && s->g->values[id].kind == VAL_WEIGHT;
}

/* Rows per sample of the GEMM or convolution that node n runs against a
 * weight (its largest, of *welems elements), 0 if it has no big weight
 * input, -1 if it reads one in a way tiles would not keep (a weight on the
 * left, a recurrence, an op not listed). */
static double weight_rows(const Sig *s, const Node *n, int64_t *welems)
{
	bool big = false;
	*welems = 0;
	for (int k = 0; k < n->nin; k++)
		if (is_weight(s, n->in[k]) &&
		    nelem(s, n->in[k]) * (int64_t)dtype_size(s->dtypes[n->in[k]]) >= TILE_WEIGHT_BYTES) {
			big = true;
			if (nelem(s, n->in[k]) > *welems)
				*welems = nelem(s, n->in[k]);
		}
	if (!big)
		return 0;
	int a = n->nin > 0 ? n->in[0] : NONE;
	const OpDef *d = op_def(n->op);
	switch (d ? d->tile : TK_NONE) {
	case TK_TABLE:
		return 0;   /* rows of a table: no reuse to keep */
	case TK_CONV: {
		/* each output pixel of a sample reads the whole weight: pixels are
		 * its rows */
		if (a == NONE || is_weight(s, a) || n->nout < 1 || n->out[0] == NONE)
			return -1;
		const Shape *y = &s->shapes[n->out[0]];
		int64_t m = y->rank > 2 ? y->dims[1].size : 0;
		return m > 0 ? (double)(nelem(s, n->out[0]) / m) / (double)s->batch : -1;
	}
	case TK_GEMM:
	case TK_GEMM_TRANS_A: {
		if (a == NONE || is_weight(s, a) || s->shapes[a].rank < 2)
			return -1;
		if (d->tile == TK_GEMM_TRANS_A) {   /* Gemm: transA is resolved by gemm_params,
			                                       checked at inference */
			Infer x = {.sig = (Sig *)s, .g = s->g, .n = (Node *)n, .a = s->a};
			GemmParams gp;
			gemm_params(&x, &gp);
			if (gp.trans_a)
				return -1;
		}
		const Shape *sh = &s->shapes[a];
		int64_t k = sh->dims[sh->rank - 1].size;
		return k > 0 ? (double)(nelem(s, a) / k) / (double)s->batch : -1;
	}
	case TK_NONE:
		break;
	}
	return -1;
}

int64_t batch_tile(const Sig *s, const Plan *p, const Stitch *st)
{
	const Graph *g = s->g;
	int64_t B = s->batch;
	if (!st->dep.independent || B < 2 || p->arena_bytes <= TILE_ARENA_MIN)
		return 0;
	for (int pass = 0; pass < 2; pass++) {
		int count = pass ? g->noutputs : g->ninputs;
		for (int k = 0; k < count; k++) {
			int id = pass ? g->outputs[k] : g->inputs[k];
			if (!pass && g->values[id].kind != VAL_INPUT)
				continue;
			if (DT_IS_4BIT(s->dtypes[id]) || (!pass && s->folded[id]))
				return 0;
			if (st->axis[id] > 0 || (pass && st->axis[id] < 0))
				return 0;
		}
	}
	/* the fewest rows per sample of a product against a weight, among the
	 * nodes that carry at least TILE_MINOR of the products' work (rows x
	 * weight elements): a dense head of one row per sample after the
	 * convolutions does not keep the whole network from tiles, its weight
	 * read once per tile costing next to nothing */
	double rows = -1, total = 0;
	bool conv = false;
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < g->nnodes; i++) {
			const Node *n = &g->nodes[i];
			if (!sig_computes(s, n))
				continue;
			int64_t welems;
			double r = weight_rows(s, n, &welems);
			if (r < 0)
				return 0;
			if (r == 0)
				continue;
			double work = r * (double)welems;
			if (!pass) {
				total += work;
				conv = conv || op_def(n->op)->tile == TK_CONV;
				continue;
			}
			if (work >= total * TILE_MINOR && (rows < 0 || r < rows))
				rows = r;
		}
	if (rows <= 0)
		return 0;
	for (int64_t t = 1; t < B; t++)
		if (B % t == 0 && (double)t * rows >= TILE_ROWS) {
			/* convolutions: only while a tile's activations stay in cache
			 * (the arena scaled down to t samples), or every weight would
			 * be read once per tile for nothing */
			if (conv && (double)p->arena_bytes * (double)t / (double)B > TILE_CONV_ARENA)
				return 0;
			return t;
		}
	return 0;
}

bool batch_tiles(Model *m, const Sig *sigs, const Plan *plans, int n, const Stitch *st,
                 const BindOptions *o, const Sig **tile, const Plan **tile_plan)
{
	bool any = false;
	for (int i = 0; i < n; i++) {
		tile[i] = NULL, tile_plan[i] = NULL;
		int64_t t = batch_tile(&sigs[i], &plans[i], st);
		if (!t)
			continue;
		for (int j = 0; j < n && !tile[i]; j++)
			if (sigs[j].batch == t)
				tile[i] = &sigs[j], tile_plan[i] = &plans[j];
		for (int j = 0; j < i && !tile[i]; j++)
			if (tile[j] && tile[j]->batch == t)
				tile[i] = tile[j], tile_plan[i] = tile_plan[j];
		if (!tile[i]) {
			Sig *ts = arena_alloc(m->arena, sizeof *ts);
			Plan *tp = arena_alloc(m->arena, sizeof *tp);
			memset(ts, 0, sizeof *ts);
			ts->batch = t;
			ts->bucket = sigs[i].bucket;
			ts->g = m->graph;
			shape_infer(ts, o, m->arena, m->diag);
			sig_dce(ts);
			plan_choose_chains(ts);
			plan_build(tp, ts, m->arena);
			tile[i] = ts, tile_plan[i] = tp;
		}
		any = true;
	}
	return any;
}
