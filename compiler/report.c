/*
 * report.c - what `kiln info` and `kiln check` print.
 *
 * info describes a model (interface, opsets, op histogram, control flow,
 * weights) as text or as JSON whose keys are documented in docs/cli.md and
 * only ever added to. check asks the op registry about every node, nested
 * ones included, and lists what kiln cannot compile with the reason.
 */
#include <stdlib.h>
#include <string.h>

#include "compile.h"
#include "ops/ops.h"
#include "report.h"
#include "stitch.h"
#include "kiln_version.h"
#include "passes/passes.h"

/* ---- gathering -------------------------------------------------------- */

typedef struct OpCount {
	const char *key;     /* "Conv", or "domain:Op" outside ai.onnx */
	int count;
} OpCount;

typedef struct Summary {
	Arena *arena;
	OpCount *ops;
	int nops, capops;
	int nnodes, nsubgraphs;
	bool has_if, has_loop, has_scan;
} Summary;

static void count_op(Summary *s, const Node *n)
{
	const char *key = n->domain_id == DOMAIN_ONNX
	                          ? n->op_type
	                          : arena_printf(s->arena, "%s:%s", n->domain, n->op_type);
	for (int i = 0; i < s->nops; i++)
		if (strcmp(s->ops[i].key, key) == 0) {
			s->ops[i].count++;
			return;
		}
	s->ops = arena_grow(s->arena, s->ops, s->nops, &s->capops, sizeof *s->ops);
	s->ops[s->nops++] = (OpCount){key, 1};
}

static void summarize_graph(Graph *g, void *user)
{
	Summary *s = user;
	if (g->parent)
		s->nsubgraphs++;
	for (int i = 0; i < g->nnodes; i++) {
		const Node *n = &g->nodes[i];
		s->nnodes++;
		count_op(s, n);
		if (n->domain_id == DOMAIN_ONNX) {
			s->has_if |= strcmp(n->op_type, "If") == 0;
			s->has_loop |= strcmp(n->op_type, "Loop") == 0;
			s->has_scan |= strcmp(n->op_type, "Scan") == 0;
		}
	}
}

static int by_key(const void *a, const void *b)
{
	return strcmp(((const OpCount *)a)->key, ((const OpCount *)b)->key);
}

static void summarize(Model *m, Summary *s)
{
	memset(s, 0, sizeof *s);
	s->arena = m->arena;
	graph_walk(m->graph, summarize_graph, s);
	if (s->nops)
		qsort(s->ops, (size_t)s->nops, sizeof *s->ops, by_key);
}

static bool is_runtime_input(const Value *v)
{
	return v->kind == VAL_INPUT;
}

/* ---- text ------------------------------------------------------------- */

static void print_value_line(FILE *out, const Value *v)
{
	fprintf(out, "  %-24s %-9s ", v->name, dtype_name(v->dtype));
	shape_print(&v->shape, out);
	if (v->type != TK_TENSOR)
		fprintf(out, " (%s)", type_kind_name(v->type));
	fputc('\n', out);
}

static void info_text(Model *m, const Summary *s, const WeightStats *w, FILE *out)
{
	Graph *g = m->graph;
	fprintf(out, "model: %s\n", m->path);
	fprintf(out, "ir_version: %lld\n", (long long)m->ir_version);
	if (m->producer_name[0])
		fprintf(out, "producer: %s%s%s\n", m->producer_name, m->producer_version[0] ? " " : "",
		        m->producer_version);
	fputs("opsets:", out);
	for (int i = 0; i < m->nopsets; i++)
		fprintf(out, " %s %lld%s", m->opsets[i].domain[0] ? m->opsets[i].domain : "ai.onnx",
		        (long long)m->opsets[i].version, i + 1 < m->nopsets ? "," : "");
	fputc('\n', out);
	fputs("inputs:\n", out);
	for (int i = 0; i < g->ninputs; i++)
		if (is_runtime_input(&g->values[g->inputs[i]]))
			print_value_line(out, &g->values[g->inputs[i]]);
	fputs("outputs:\n", out);
	for (int i = 0; i < g->noutputs; i++)
		print_value_line(out, &g->values[g->outputs[i]]);
	fprintf(out, "nodes: %d (%d op types)\n", s->nnodes, s->nops);
	for (int i = 0; i < s->nops; i++)
		fprintf(out, "  %-24s %d\n", s->ops[i].key, s->ops[i].count);
	fputs("control flow: ", out);
	if (!s->has_if && !s->has_loop && !s->has_scan)
		fputs("none\n", out);
	else
		fprintf(out, "%s%s%s(%d subgraphs)\n", s->has_if ? "If " : "", s->has_loop ? "Loop " : "",
		        s->has_scan ? "Scan " : "", s->nsubgraphs);
	fprintf(out, "initializers: %d\n", w->ninitializers);
	fprintf(out, "constants: %d\n", w->nconstants);
	fprintf(out, "external data tensors: %d\n", w->nexternal);
	fprintf(out, "weight bytes: %llu\n", (unsigned long long)w->weight_bytes);
	fprintf(out, "unique weight bytes: %llu\n", (unsigned long long)w->unique_bytes);
}

/* ---- JSON ------------------------------------------------------------- */

static void json_value(Json *j, const Value *v)
{
	json_begin_object(j);
	json_field_string(j, "name", v->name);
	json_field_string(j, "type", type_kind_name(v->type));
	json_field_string(j, "dtype", dtype_name(v->dtype));
	json_key(j, "shape");
	if (v->shape.rank < 0) {
		json_null(j);
	} else {
		json_begin_array(j);
		for (int i = 0; i < v->shape.rank; i++) {
			const Dim *d = &v->shape.dims[i];
			if (d->size >= 0)
				json_int(j, d->size);
			else if (d->param)
				json_string(j, d->param);
			else
				json_null(j);
		}
		json_end_array(j);
	}
	json_end_object(j);
}

/* Leaves the top object open for the signatures. */
static void info_json(Model *m, const Summary *s, const WeightStats *w, Json *j)
{
	Graph *g = m->graph;
	json_begin_object(j);
	json_field_string(j, "kiln_version", KILN_VERSION_STRING);
	json_field_string(j, "model", m->path);
	json_field_int(j, "ir_version", m->ir_version);
	json_field_string(j, "producer", m->producer_name);
	json_field_string(j, "producer_version", m->producer_version);
	json_key(j, "opsets");
	json_begin_array(j);
	for (int i = 0; i < m->nopsets; i++) {
		json_begin_object(j);
		json_field_string(j, "domain", m->opsets[i].domain[0] ? m->opsets[i].domain : "ai.onnx");
		json_field_int(j, "version", m->opsets[i].version);
		json_end_object(j);
	}
	json_end_array(j);
	json_key(j, "inputs");
	json_begin_array(j);
	for (int i = 0; i < g->ninputs; i++)
		if (is_runtime_input(&g->values[g->inputs[i]]))
			json_value(j, &g->values[g->inputs[i]]);
	json_end_array(j);
	json_key(j, "outputs");
	json_begin_array(j);
	for (int i = 0; i < g->noutputs; i++)
		json_value(j, &g->values[g->outputs[i]]);
	json_end_array(j);
	json_field_int(j, "nodes", s->nnodes);
	json_key(j, "ops");
	json_begin_object(j);
	for (int i = 0; i < s->nops; i++) {
		json_key(j, s->ops[i].key);
		json_int(j, s->ops[i].count);
	}
	json_end_object(j);
	json_key(j, "control_flow");
	json_begin_array(j);
	if (s->has_if)
		json_string(j, "If");
	if (s->has_loop)
		json_string(j, "Loop");
	if (s->has_scan)
		json_string(j, "Scan");
	json_end_array(j);
	json_field_int(j, "subgraphs", s->nsubgraphs);
	json_field_int(j, "initializers", w->ninitializers);
	json_field_int(j, "constants", w->nconstants);
	json_field_int(j, "external_tensors", w->nexternal);
	json_field_uint(j, "weight_bytes", w->weight_bytes);
	json_field_uint(j, "unique_weight_bytes", w->unique_bytes);
}

/* ---- signatures ------------------------------------------------------- */

static Sig *infer_signatures(Model *m, const InfoOptions *o)
{
	Sig *sigs = arena_array(m->arena, (size_t)o->nbatches, sizeof *sigs);
	for (int i = 0; i < o->nbatches; i++) {
		sigs[i].batch = o->batches[i];
		sigs[i].g = m->graph;
		shape_infer(&sigs[i], o->bind, m->arena, m->diag);
		sig_dce(&sigs[i]);
		plan_choose_chains(&sigs[i]);
	}
	return sigs;
}

static void print_static_shape(FILE *out, const Shape *s)
{
	fputc('[', out);
	for (int k = 0; k < s->rank; k++)
		fprintf(out, "%s%lld", k ? "," : "", (long long)s->dims[k].size);
	fputc(']', out);
}

static Plan *plan_signatures(Model *m, const Sig *sigs, const InfoOptions *o)
{
	if (!o->plan)
		return NULL;
	Plan *plans = arena_array(m->arena, (size_t)o->nbatches, sizeof *plans);
	for (int i = 0; i < o->nbatches; i++)
		plan_build(&plans[i], &sigs[i], m->arena);
	return plans;
}

/* The arena scratch of nodes that have some (their kernels' work memory). */
static void scratch_text(const Graph *g, const Plan *p, FILE *out)
{
	for (int i = 0; i < g->nnodes; i++) {
		if (p->scratch_of[i] == NONE)
			continue;
		const PlanBuf *b = &p->bufs[p->scratch_of[i]];
		fprintf(out, "  scratch of node %d %s \"%s\" @%lld+%lld\n", i, g->nodes[i].op_type,
		        g->nodes[i].name, (long long)b->off, (long long)b->bytes);
	}
}

/* The sizes whose compiled code runs as tiles (batchtile.c), and the arena
 * that makes theirs: `kiln compile` plans them so. */
static void tiles_text(const Sig *sigs, int n, const Sig **tile, const Plan **tile_plan,
                       FILE *out)
{
	for (int i = 0; i < n; i++)
		if (tile[i])
			fprintf(out, "batch %lld runs as %lld tiles of %lld samples (activations in cache): "
			        "arena %lld bytes, a tile's\n", (long long)sigs[i].batch,
			        (long long)(sigs[i].batch / tile[i]->batch), (long long)tile[i]->batch,
			        (long long)tile_plan[i]->arena_bytes);
}

static void signatures_text(Model *m, const Sig *sigs, const Plan *plans, int n, FILE *out)
{
	Graph *g = m->graph;
	for (int i = 0; i < n; i++) {
		fprintf(out, "signature batch %lld:\n", (long long)sigs[i].batch);
		if (plans)
			fprintf(out, "  arena %lld bytes in %d buffers (lower bound %lld bytes)\n",
			        (long long)plans[i].arena_bytes, plans[i].nbufs,
			        (long long)plans[i].lower_bound_bytes);
		if (plans)
			scratch_text(g, &plans[i], out);
		for (int pass = 0; pass < 2; pass++)
			for (int k = 0; k < (pass ? g->noutputs : g->ninputs); k++) {
				int id = pass ? g->outputs[k] : g->inputs[k];
				if (!pass && g->values[id].kind != VAL_INPUT)
					continue;
				fprintf(out, "  %-6s %-24s %-9s ", pass ? "output" : "input", g->values[id].name,
				        dtype_name(sigs[i].dtypes[id]));
				print_static_shape(out, &sigs[i].shapes[id]);
				fputc('\n', out);
			}
	}
}

static void json_static_value(Json *j, const Value *v, int dtype, const Shape *s)
{
	json_begin_object(j);
	json_field_string(j, "name", v->name);
	json_field_string(j, "dtype", dtype_name(dtype));
	json_key(j, "shape");
	json_begin_array(j);
	for (int k = 0; k < s->rank; k++)
		json_int(j, s->dims[k].size);
	json_end_array(j);
	json_end_object(j);
}

static void signatures_json(Model *m, const Sig *sigs, const Plan *plans, int n, Json *j)
{
	Graph *g = m->graph;
	json_key(j, "signatures");
	json_begin_array(j);
	for (int i = 0; i < n; i++) {
		json_begin_object(j);
		json_field_int(j, "batch", sigs[i].batch);
		if (plans) {
			json_field_int(j, "arena_bytes", plans[i].arena_bytes);
			json_field_int(j, "lower_bound_bytes", plans[i].lower_bound_bytes);
			json_field_int(j, "buffers", plans[i].nbufs);
		}
		for (int pass = 0; pass < 2; pass++) {
			json_key(j, pass ? "outputs" : "inputs");
			json_begin_array(j);
			for (int k = 0; k < (pass ? g->noutputs : g->ninputs); k++) {
				int id = pass ? g->outputs[k] : g->inputs[k];
				if (pass || g->values[id].kind == VAL_INPUT)
					json_static_value(j, &g->values[id], sigs[i].dtypes[id], &sigs[i].shapes[id]);
			}
			json_end_array(j);
		}
		json_end_object(j);
	}
	json_end_array(j);
}

static void stitching_text(const Sig *sigs, int n, const Stitch *st, FILE *out)
{
	fprintf(out, "kiln_run context: %llu bytes per thread (arena %lld, staging %llu, plans of "
	        "n <= %lld)\n", (unsigned long long)st->context_bytes, (long long)st->max_arena_bytes,
	        (unsigned long long)st->staging_bytes, (long long)st->plan_bound);
	if (st->dep.independent)
		fprintf(out, "batch independent: yes, any batch size can be stitched\n");
	else
		fprintf(out, "batch independent: no, only the compiled sizes run: %s\n", st->dep.why);
	if (n)
		fprintf(out, "stitching weights (a model of call overhead, flops and bytes moved that "
		        "ranks the compiled sizes; not a time: bench/ measures times):\n");
	for (int i = 0; i < n; i++)
		fprintf(out, "  batch %lld: weight %.0f (%llu flops, %llu bytes moved)\n",
		        (long long)sigs[i].batch, st->cost[i].ns, (unsigned long long)st->cost[i].flops,
		        (unsigned long long)st->cost[i].bytes);
}

static void stitching_json(const Sig *sigs, int n, const Stitch *st, Json *j)
{
	json_key(j, "stitching");
	json_begin_object(j);
	json_field_uint(j, "context_bytes", st->context_bytes);
	json_field_uint(j, "staging_bytes", st->staging_bytes);
	json_field_int(j, "plan_bound", st->plan_bound);
	json_field_bool(j, "batch_independent", st->dep.independent);
	json_key(j, "batch_mixing");
	if (st->dep.independent)
		json_null(j);
	else
		json_string(j, st->dep.why);
	json_key(j, "cost");
	json_begin_array(j);
	for (int i = 0; i < n; i++) {
		json_begin_object(j);
		json_field_int(j, "batch", sigs[i].batch);
		json_field_int(j, "estimate_ns", (int64_t)(st->cost[i].ns + 0.5));
		json_field_uint(j, "flops", st->cost[i].flops);
		json_field_uint(j, "bytes", st->cost[i].bytes);
		json_end_object(j);
	}
	json_end_array(j);
	json_end_object(j);
}

void report_info(Model *m, FILE *out, const InfoOptions *o)
{
	Summary s;
	WeightStats w;
	summarize(m, &s);
	weight_stats(m, &w);
	if (o->plan && o->optimize && o->nbatches) {
		PassReport pr;
		passes_run(m, o->optimize, o->batches, o->nbatches, o->bind, &pr);
	}
	/* Infer before printing, so an error leaves no half-written report. */
	Sig *sigs = infer_signatures(m, o);
	Plan *plans = plan_signatures(m, sigs, o);
	if (plans && o->svg_path) {
		FILE *svg = compile_open(m, o->svg_path, "w");
		plan_svg(m->graph, sigs, plans, o->nbatches, svg);
		compile_close(m, svg, o->svg_path);
	}
	/* With a plan: what one kiln_run context costs, and whether any batch
	 * size can be stitched (stitch.c, batchdep.c). */
	Stitch *st = NULL;
	const Sig **tile = NULL;
	const Plan **tile_plan = NULL;
	if (plans) {
		st = arena_alloc(m->arena, sizeof *st);
		stitch_build(m, sigs, plans, o->nbatches, o->bind, st);
		/* sizes run as tiles take a tile's arena, as kiln compile plans them */
		tile = arena_array(m->arena, (size_t)o->nbatches, sizeof *tile);
		tile_plan = arena_array(m->arena, (size_t)o->nbatches, sizeof *tile_plan);
		if (batch_tiles(m, sigs, plans, o->nbatches, st, o->bind, tile, tile_plan)) {
			Plan *tiled = arena_array(m->arena, (size_t)o->nbatches, sizeof *tiled);
			for (int i = 0; i < o->nbatches; i++) {
				tiled[i] = plans[i];
				if (tile[i])
					tiled[i].arena_bytes = tile_plan[i]->arena_bytes;
			}
			stitch_arenas(m, tiled, o->nbatches, st);
		}
	}
	if (o->json) {
		Json j = {.out = out};
		info_json(m, &s, &w, &j);
		if (o->nbatches)
			signatures_json(m, sigs, plans, o->nbatches, &j);
		if (st)
			stitching_json(sigs, o->nbatches, st, &j);
		json_end_object(&j);
	} else {
		info_text(m, &s, &w, out);
		signatures_text(m, sigs, plans, o->nbatches, out);
		if (st)
			tiles_text(sigs, o->nbatches, tile, tile_plan, out);
		if (st)
			stitching_text(sigs, o->nbatches, st, out);
	}
}

void report_dump(Model *m, FILE *out, const InfoOptions *o)
{
	Sig *sigs = infer_signatures(m, o);
	Plan *plans = plan_signatures(m, sigs, o);
	ir_print(m->graph, out);
	Graph *g = m->graph;
	for (int i = 0; i < o->nbatches; i++) {
		fprintf(out, "signature batch %lld:\n", (long long)sigs[i].batch);
		if (plans)
			fprintf(out, "  arena %lld bytes (lower bound %lld)\n",
			        (long long)plans[i].arena_bytes, (long long)plans[i].lower_bound_bytes);
		if (plans)
			scratch_text(g, &plans[i], out);
		for (int id = 0; id < g->nvalues; id++) {
			fprintf(out, "  %%v%d %s ", id, dtype_name(sigs[i].dtypes[id]));
			if (sigs[i].shapes[id].rank >= 0)
				print_static_shape(out, &sigs[i].shapes[id]);
			else
				fputs("-", out);
			if (sigs[i].folded[id] && sigs[i].folded[id]->dtype == DT_INT64 &&
			    sigs[i].folded[id]->nelem <= 16) {
				fputs(" = {", out);
				for (int64_t k = 0; k < sigs[i].folded[id]->nelem; k++) {
					int64_t v;
					memcpy(&v, (const char *)sigs[i].folded[id]->data + 8 * k, 8);
					fprintf(out, "%s%lld", k ? "," : "", (long long)v);
				}
				fputc('}', out);
			}
			if (plans && plans[i].buf_of[id] != NONE) {
				const PlanBuf *b = &plans[i].bufs[plans[i].buf_of[id]];
				fprintf(out, " @%lld+%lld live n%d..n%d", (long long)b->off, (long long)b->bytes,
				        b->first, b->last);
				if (plans[i].root[id] != id)
					fprintf(out, " (shares %%v%d)", plans[i].root[id]);
			} else if (plans && plans[i].root[id] != id) {
				fprintf(out, " (view of %%v%d)", plans[i].root[id]);
			}
			fputc('\n', out);
		}
	}
}

/* ---- check ------------------------------------------------------------ */

typedef struct Check {
	int nqonnx;                /* QONNX quantizers (Quant, BipolarQuant, ...) among them */
	FILE *out;
	const char *path;
	int nbad, nnodes;
} Check;

static void check_graph(Graph *g, void *user)
{
	Check *c = user;
	char reason[512], where[1024];
	for (int i = 0; i < g->nnodes; i++) {
		const Node *n = &g->nodes[i];
		c->nnodes++;
		if (!op_unsupported_reason(g, n, reason, sizeof reason))
			continue;
		diag_node_path(where, sizeof where, g, n);
		fprintf(c->out, "%s: %s: %s\n", c->path, where, reason);
		c->nbad++;
		c->nqonnx += strncmp(n->domain, "qonnx.", 6) == 0 || strncmp(n->domain, "finn.", 5) == 0;
	}
}

/* Has the user fixed the input's symbolic dims already (--shape, --dim)? */
static bool dims_given(const Value *v, const BindOptions *bind)
{
	for (int i = 0; bind && i < bind->nshapes; i++)
		if (strcmp(bind->shapes[i].input, v->name) == 0)
			return true;
	for (int k = 1; k < v->shape.rank; k++) {
		bool fixed = v->shape.dims[k].size >= 0;
		for (int i = 0; bind && !fixed && v->shape.dims[k].param && i < bind->ndims; i++)
			fixed = strcmp(bind->dims[i].symbol, v->shape.dims[k].param) == 0;
		if (!fixed)
			return false;
	}
	return v->shape.dims[0].size < 0;
}

int report_check(Model *m, FILE *out, const BindOptions *bind)
{
	Check c = {.out = out, .path = m->path};
	Graph *g = m->graph;
	/* Interface values must be tensors: kiln compiles nothing else. */
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < (pass ? g->noutputs : g->ninputs); i++) {
			const Value *v = &g->values[pass ? g->outputs[i] : g->inputs[i]];
			if (v->type != TK_TENSOR && v->type != TK_UNKNOWN) {
				fprintf(out, "%s: graph %s \"%s\": %s values are not supported\n", m->path,
				        pass ? "output" : "input", v->name, type_kind_name(v->type));
				c.nbad++;
			}
		}
	graph_walk(g, check_graph, &c);
	/* Symbolic dims besides a leading batch axis must be fixed per build. */
	for (int i = 0; i < g->ninputs; i++) {
		const Value *v = &g->values[g->inputs[i]];
		int nsym = 0;
		for (int k = 0; v->kind == VAL_INPUT && k < v->shape.rank; k++)
			nsym += v->shape.dims[k].size < 0;
		if ((nsym > 1 || (nsym == 1 && v->shape.dims[0].size >= 0)) && !dims_given(v, bind))
			fprintf(out, "%s: graph input \"%s\" has %s: compile with --shape %s "
			        "(N: the batch axis; see docs/models.md)\n", m->path, v->name,
			        nsym > 1 ? "more than one symbolic dim" : "a symbolic dim that is not axis 0",
			        shape_flag(m->arena, v, v->shape.dims[0].size < 0 ? 0 : -1));
	}
	if (c.nqonnx)
		fprintf(out, "%s: hint: %d QONNX node%s (Quant, BipolarQuant, Trunc, ...): convert "
		        "Quant to QuantizeLinear/DequantizeLinear first (qonnx's ConvertQONNXtoQCDQ, "
		        "docs/models.md)\n", m->path, c.nqonnx, c.nqonnx == 1 ? "" : "s");
	if (c.nbad)
		fprintf(out, "%s: %d of %d nodes or interface values unsupported\n", m->path, c.nbad,
		        c.nnodes);
	else
		fprintf(out, "%s: all %d nodes supported\n", m->path, c.nnodes);
	return c.nbad;
}
