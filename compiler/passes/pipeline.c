/*
 * passes/pipeline.c - the optimizer's order of passes, run to a fixed point,
 * and what `kiln info --passes` prints about it.
 *
 * One iteration infers the shapes of every signature being compiled (inside
 * its own protected call: a graph kiln cannot infer yet simply gets only the
 * shape-free rewrites), then runs
 *
 *     noop -> dedup -> cse -> einsum -> fold -> qdq -> lastpos -> onehot -> mlpconv ->
 *     attention -> fuse -> addnorm -> edgeconv -> convchain -> scatterrows -> dce -> ewchain
 *
 * committing after each pass. No-ops go first so that a constant reached
 * through Identity/Reshape-to-same-shape is seen as shared before folding
 * decides whether it dies; dedup and CSE go before folding for the same
 * reason (two Transposes of one weight become one, whose input then dies).
 * qdq takes the quantized products before fuse sees them as float Conv/Gemm
 * (its Transpose of a Gemm weight is folded in the next iteration).
 * With --weights-dtype fp16, f16 runs last in each iteration (it narrows
 * each weight once) so fuse can hand the float16 bytes to the GEMMs next.
 * ewchain rewrites nothing: it marks the inner values of elementwise chains
 * once every fusion into kernels is done, afresh in each iteration.
 * Iterations stop when no pass changes anything (at most 16).
 */
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

#include "rewrite.h"

static const char *const names[PASS_COUNT] = {
	[PASS_NOOP] = "noop", [PASS_DEDUP] = "dedup", [PASS_CSE] = "cse",
	[PASS_EINSUM] = "einsum", [PASS_FOLD] = "fold", [PASS_QDQ] = "qdq", [PASS_LASTPOS] = "lastpos",
	[PASS_ONEHOT] = "onehot", [PASS_MLPCONV] = "mlpconv",
	[PASS_ATTENTION] = "attention", [PASS_FUSE] = "fuse",
	[PASS_ADDNORM] = "addnorm", [PASS_EDGECONV] = "edgeconv",
	[PASS_CONVCHAIN] = "convchain",
	[PASS_SCATTERROWS] = "scatterrows", [PASS_DCE] = "dce",
	[PASS_EWCHAIN] = "ewchain", [PASS_F16] = "f16",
};

static int (*const run_pass[PASS_COUNT])(PassCtx *) = {
	[PASS_NOOP] = pass_noop, [PASS_DEDUP] = pass_dedup, [PASS_CSE] = pass_cse,
	[PASS_EINSUM] = pass_einsum, [PASS_FOLD] = pass_fold, [PASS_QDQ] = pass_qdq,
	[PASS_LASTPOS] = pass_lastpos, [PASS_ONEHOT] = pass_onehot, [PASS_MLPCONV] = pass_mlpconv,
	[PASS_ATTENTION] = pass_attention, [PASS_FUSE] = pass_fuse,
	[PASS_ADDNORM] = pass_addnorm, [PASS_EDGECONV] = pass_edgeconv,
	[PASS_CONVCHAIN] = pass_convchain,
	[PASS_SCATTERROWS] = pass_scatterrows, [PASS_DCE] = pass_dce,
	[PASS_EWCHAIN] = pass_ewchain, [PASS_F16] = pass_f16,
};

const char *pass_name(int id)
{
	return id >= 0 && id < PASS_COUNT ? names[id] : "?";
}

int pass_lookup(const char *name)
{
	for (int i = 0; i < PASS_COUNT; i++)
		if (strcmp(names[i], name) == 0)
			return i;
	return NONE;
}

bool weights_dtype_parse(const char *s, WeightsDtype *out)
{
	if (strcmp(s, "keep") == 0)
		*out = WEIGHTS_KEEP;
	else if (strcmp(s, "fp32") == 0)
		*out = WEIGHTS_FP32;
	else if (strcmp(s, "fp16") == 0)
		*out = WEIGHTS_FP16;
	else
		return false;
	return true;
}

/* ---- weight bytes ----------------------------------------------------- */

typedef struct UsedWeight {
	const Weight *w;
	int dtype;
} UsedWeight;

static int by_hash(const void *pa, const void *pb)
{
	const UsedWeight *a = pa, *b = pb;
	if (a->w->bytes_hash != b->w->bytes_hash)
		return a->w->bytes_hash < b->w->bytes_hash ? -1 : 1;
	return (a->w > b->w) - (a->w < b->w);
}

/* The weights object stores identical bytes of one dtype once (emit_c.c),
 * whatever the names and shapes, so that is how bytes are counted here.
 * A target shape read only by Reshape is shape arithmetic, never stored. */
uint64_t passes_weight_bytes(Graph *g)
{
	bool *data_use = calloc((size_t)(g->nvalues ? g->nvalues : 1), sizeof *data_use);
	KILN_ASSERT(data_use);
	for (int i = 0; i < g->nnodes; i++)
		for (int k = 0; k < g->nodes[i].nin; k++)
			if (g->nodes[i].in[k] != NONE && !(g->nodes[i].op == OP_Reshape && k == 1))
				data_use[g->nodes[i].in[k]] = true;
	for (int i = 0; i < g->nvalues; i++)
		data_use[i] |= g->values[i].nuse > 0 && g->values[i].kind == VAL_WEIGHT &&
		               g->values[i].dtype != DT_INT64;
	int n = 0;
	for (int i = 0; i < g->nvalues; i++)
		n += g->values[i].kind == VAL_WEIGHT && g->values[i].nuse > 0 && data_use[i];
	if (n == 0) {
		free(data_use);
		return 0;
	}
	UsedWeight *ws = calloc((size_t)n, sizeof *ws);
	KILN_ASSERT(ws);
	n = 0;
	for (int i = 0; i < g->nvalues; i++) {
		Value *v = &g->values[i];
		if (v->kind != VAL_WEIGHT || v->nuse <= 0 || !data_use[i])
			continue;
		if (v->weight->bytes_hash == 0) {
			Shape flat = {.rank = 0};
			v->weight->bytes_hash = weight_hash(DT_UINT8, &flat, v->weight) | 1;
		}
		ws[n++] = (UsedWeight){v->weight, v->dtype};
	}
	qsort(ws, (size_t)n, sizeof *ws, by_hash);
	uint64_t total = 0;
	for (int i = 0; i < n; i++) {
		bool dup = false;
		for (int j = i - 1; j >= 0 && ws[j].w->bytes_hash == ws[i].w->bytes_hash && !dup; j--)
			dup = ws[j].dtype == ws[i].dtype && ws[j].w->nbytes == ws[i].w->nbytes &&
			      (ws[j].w->bytes == ws[i].w->bytes ||
			       memcmp(ws[j].w->bytes, ws[i].w->bytes, ws[i].w->nbytes) == 0);
		if (!dup)
			total += ws[i].w->nbytes;
	}
	free(ws);
	free(data_use);
	return total;
}

/* ---- the driver ------------------------------------------------------- */

/* Shapes of every signature, or nsigs = 0 if inference fails anywhere. The
 * failure is not an error here: compile's own inference will report it. */
static void infer_shapes(PassCtx *c, const int64_t *batches, int nbatches,
                         const BindOptions *binds, int nbinds)
{
	static const BindOptions no_bind;
	Diag *d = c->d;
	jmp_buf jb, *saved = d->protect;
	int nsigs = nbatches * nbinds;
	Sig *sigs = arena_array(c->a, (size_t)nsigs, sizeof *sigs);
	volatile int ok = 0;
	d->protect = &jb;
	if (setjmp(jb) == 0) {
		for (int k = 0; k < nsigs; k++) {
			sigs[k].batch = batches[k % nbatches];
			sigs[k].g = c->g;
			shape_infer(&sigs[k], binds ? &binds[k / nbatches] : &no_bind, c->a, d);
		}
		ok = 1;
	}
	d->protect = saved;
	if (!ok) {
		d->status = KILN_OK;
		d->msg[0] = 0;
	}
	c->sigs = ok ? sigs : NULL;
	c->nsigs = ok ? nsigs : 0;
	c->nvalues_shaped = c->g->nvalues;
}

static int run_one(PassCtx *c, PassReport *r, int id)
{
	PassStat *st = &r->pass[id];
	c->stat = st;
	uint64_t before = passes_weight_bytes(c->g);
	if (!st->seen)
		st->bytes_before = before;
	st->seen = true;
	int changed = run_pass[id](c);
	rw_commit(c);
	if (changed)
		st->runs++;
	st->bytes_after = changed ? passes_weight_bytes(c->g) : before;
	return changed;
}

void passes_run(Model *m, const PassOptions *o, const int64_t *batches, int nbatches,
                const BindOptions *bind, PassReport *r)
{
	passes_run_binds(m, o, batches, nbatches, bind, 1, r);
}

void passes_run_binds(Model *m, const PassOptions *o, const int64_t *batches, int nbatches,
                      const BindOptions *binds, int nbinds, PassReport *r)
{
	static const PassOptions defaults;
	static const int64_t one = 1;
	PassReport local;
	if (!r)
		r = &local;
	memset(r, 0, sizeof *r);
	if (!o)
		o = &defaults;
	if (!batches || nbatches < 1) {
		batches = &one;
		nbatches = 1;
	}
	Graph *g = m->graph;
	r->nodes_before = r->nodes_after = g->nnodes;
	if (m->is_optimized || o->no_opt)
		return;
	m->is_optimized = true;
	r->ran = true;
	r->bytes_before = passes_weight_bytes(g);
	PassCtx c = {.m = m, .g = g, .a = m->arena, .d = m->diag, .o = o};
	rw_init(&c);
	static const PassId order[] = {PASS_NOOP, PASS_DEDUP, PASS_CSE, PASS_EINSUM,
	                               PASS_FOLD, PASS_QDQ, PASS_LASTPOS, PASS_ONEHOT, PASS_MLPCONV, PASS_ATTENTION,
	                               PASS_FUSE,
	                               PASS_ADDNORM, PASS_EDGECONV, PASS_CONVCHAIN, PASS_SCATTERROWS,
	                               PASS_DCE, PASS_EWCHAIN};
	for (int iter = 0; iter < 16; iter++) {
		infer_shapes(&c, batches, nbatches, binds, nbinds);
		int changed = 0;
		/* ewchain only marks values, afresh each time, and no pass reads
		 * the marks: they never call for another iteration. */
		for (size_t i = 0; i < sizeof order / sizeof order[0]; i++)
			if (!o->disabled[order[i]] && (order[i] != PASS_QDQ || !o->qdq_float) &&
			    run_one(&c, r, order[i]) && order[i] != PASS_EWCHAIN)
				changed++;
		/* Narrowed weights then get their Casts fused into the GEMMs reading
		 * them on the next iteration; folding never widens them back. */
		if (o->weights_dtype == WEIGHTS_FP16 && !o->disabled[PASS_F16])
			changed += run_one(&c, r, PASS_F16);
		r->iterations = iter + 1;
		if (!changed)
			break;
	}
	ir_verify(g);
	r->nodes_after = g->nnodes;
	r->bytes_after = passes_weight_bytes(g);
}

void passes_print(const PassReport *r, FILE *out)
{
	fprintf(out, "passes:\n");
	if (!r->ran) {
		fprintf(out, "  none (--no-opt)\n");
		return;
	}
	fprintf(out, "  %-11s %6s %8s %6s %6s %14s %14s\n", "pass", "runs", "removed", "fused",
	        "added", "bytes before", "bytes after");
	for (int i = 0; i < PASS_COUNT; i++) {
		const PassStat *s = &r->pass[i];
		if (i == PASS_F16 && s->runs == 0)
			continue;
		fprintf(out, "  %-11s %6d %8d %6d %6d %14llu %14llu\n", names[i], s->runs, s->removed,
		        s->fused, s->added, (unsigned long long)s->bytes_before,
		        (unsigned long long)s->bytes_after);
	}
	fprintf(out, "  %d iteration%s; nodes %d -> %d; weight bytes %llu -> %llu\n", r->iterations,
	        r->iterations == 1 ? "" : "s", r->nodes_before, r->nodes_after,
	        (unsigned long long)r->bytes_before, (unsigned long long)r->bytes_after);
}
