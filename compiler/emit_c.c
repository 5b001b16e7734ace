/*
 * emit_c.c - write NAME.h and NAME.c for a model and its signatures, and
 * collect the constants the weights object must hold.
 *
 * The generated C is meant to be read: per batch size B, one static function
 * per node (`b8_n003_relu1`) with a comment naming the ONNX node, its op and
 * every operand's dtype, shape and place (caller buffer, weight symbol or
 * arena offset); its body is one runtime kernel call with literal sizes or a
 * short loop. NAME_run_bB calls them in schedule order. Nothing is allocated:
 * temporaries live at planned offsets of the caller's arena.
 *
 * Constants (initializers, and values folded at compile time that a kernel
 * reads) become symbols of the weights object. Identical bytes of the same
 * element type are stored once, whatever their names or shapes.
 *
 * This file writes the files: NAME.h (interface, shapes, sizes) and NAME.c's
 * descriptor, then asks emit/nodes.c for the node and run functions; the
 * helpers every emitter uses are in emit/helpers.c, the op emitters in
 * compiler/emit/, one file per family; emit_c.h is what they share.
 *
 * Output is deterministic: everything is emitted in node order, floats are
 * printed in hexadecimal (%a), and no time or absolute path is written.
 */
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "emit_c.h"
#include "kiln_version.h"
#include "load.h"

/* ---- files ------------------------------------------------------------ */

/* An input frozen at compile time (--freeze, or by kiln verify) decided
 * shapes or folded values: the code is only right for exactly those values,
 * so the run refuses any other instead of computing something wrong. */
void emit_frozen_guards(Emit *E)
{
	const Graph *g = E->g;
	for (int k = 0; k < g->ninputs; k++) {
		int id = g->inputs[k];
		const Folded *f = E->sig->folded[id];
		if (g->values[id].kind != VAL_INPUT || !f || E->in_index[id] == NONE)
			continue;
		uint64_t nbytes = dtype_bytes(f->dtype, f->nelem);
		int s = symbol_for(E, f->dtype, f->data, nbytes, g->values[id].name);
		emitf(E, "	if (memcmp(in[%d], %s, %" PRIu64 ") != 0) /* \"", E->in_index[id],
		      E->syms[s].name, nbytes);
		comment_text(E, g->values[id].name);
		emitf(E, "\" was frozen at compile time */\n\t\treturn KILN_FROZEN_INPUT;\n");
	}
}

/* The parameter names of the graph's inputs and outputs: in_/out_ and the
 * sanitized name, made unique in interface order by a suffix _2, _3, ...
 * ("a-b" and "a.b", or two names alike in their first 40 characters, would
 * otherwise be one C identifier). */
static uint64_t str_hash(const char *s)
{
	uint64_t h = 1469598103934665603u;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211u;
	return h;
}

static void name_interface(Emit *E)
{
	Graph *g = E->g;
	E->iface = arena_array(E->a, (size_t)g->nvalues, sizeof *E->iface);
	/* An open-addressing set of the names taken: a model may have many. */
	size_t cap = 16;
	while (cap < 2 * ((size_t)g->ninputs + (size_t)g->noutputs))
		cap *= 2;
	const char **used = arena_array(E->a, cap, sizeof *used);
	for (int pass = 0; pass < 2; pass++) {
		int count = pass ? g->noutputs : g->ninputs;
		for (int k = 0; k < count; k++) {
			int id = pass ? g->outputs[k] : g->inputs[k];
			if (!pass && g->values[id].kind != VAL_INPUT)
				continue;
			const char *base = arena_printf(E->a, "%s_%s", pass ? "out" : "in",
			                                c_identifier(E->a, g->values[id].name));
			const char *name = base;
			for (int suffix = 2;; suffix++) {
				size_t i = str_hash(name) & (cap - 1);
				while (used[i] && strcmp(used[i], name) != 0)
					i = (i + 1) & (cap - 1);
				if (!used[i]) {
					used[i] = name;
					break;
				}
				name = arena_printf(E->a, "%s_%d", base, suffix);
			}
			E->iface[id] = name;
		}
	}
}

static void index_interface(Emit *E)
{
	Graph *g = E->g;
	E->in_index = arena_array(E->a, (size_t)g->nvalues, sizeof *E->in_index);
	E->out_index = arena_array(E->a, (size_t)g->nvalues, sizeof *E->out_index);
	for (int i = 0; i < g->nvalues; i++)
		E->in_index[i] = E->out_index[i] = NONE;
	int k = 0;
	for (int i = 0; i < g->ninputs; i++)
		if (g->values[g->inputs[i]].kind == VAL_INPUT)
			E->in_index[g->inputs[i]] = k++;
	for (int i = 0; i < g->noutputs; i++) {
		int id = g->outputs[i];
		if (E->out_index[id] != NONE || E->in_index[id] != NONE ||
		    g->values[id].kind != VAL_TEMP)
			diag_fail(E->d, KILN_UNSUPPORTED,
			          "graph output \"%s\" is %s; kiln needs outputs computed by nodes",
			          g->values[id].name,
			          E->out_index[id] != NONE ? "listed twice" : "an input or a weight");
		E->out_index[id] = i;
	}
	name_interface(E);
}

static int ninputs(const Graph *g)
{
	int n = 0;
	for (int i = 0; i < g->ninputs; i++)
		n += g->values[g->inputs[i]].kind == VAL_INPUT;
	return n;
}

static void banner(FILE *f, Emit *E, const Sig *sigs, int nsigs)
{
	const char *base = strrchr(E->m->path, '/');
	base = base ? base + 1 : E->m->path;
	fprintf(f, "/*\n * Generated by kiln %s from %s", KILN_VERSION_STRING,
	        c_comment_escape(E->a, base));
	for (int i = 0; i < E->m->nopsets; i++)
		fprintf(f, "%s%s opset %" PRId64, i ? ", " : " (",
		        c_comment_escape(E->a, E->m->opsets[i].domain[0] ? E->m->opsets[i].domain
		                                                          : "ai.onnx"),
		        E->m->opsets[i].version);
	fprintf(f, "%s.\n * Batch sizes:", E->m->nopsets ? ")" : "");
	int nbk = E->o->nbuckets;
	for (int i = 0; i < (nbk ? nsigs / nbk : nsigs); i++)
		fprintf(f, " %" PRId64, sigs[i].batch);
	if (nbk) {
		fprintf(f, ". Buckets of %s:", c_comment_escape(E->a, E->o->bucket_symbol));
		for (int j = 0; j < nbk; j++)
			fprintf(f, " %" PRId64, E->o->buckets[j].value);
	}
	fprintf(f, ". Do not edit: regenerate with kiln compile.\n */\n");
}

/* NAME in capitals: the prefix of the generated macros. */
static const char *upper(Emit *E, const char *name)
{
	char *s = arena_strdup(E->a, name);
	for (char *p = s; *p; p++)
		if (*p >= 'a' && *p <= 'z')
			*p = (char)(*p - 'a' + 'A');
	return s;
}

/* Dim d of value id for one sample: the batch axis at 1 sample's extent. */
static int64_t sample_dim(const Emit *E, const Sig *s0, int id, int d)
{
	const Dim *dim = &s0->shapes[id].dims[d];
	return d == E->o->stitch->axis[id] ? dim->size / s0->batch : dim->size;
}

/* Per input and output, its per-sample element count and shape as
 * constants, so user code can check its arrays at compile time
 * (static_assert(sizeof feats / sizeof feats[0] == NAME_IN0_ELEMS, ...)). */
static void emit_io_constants(Emit *E, FILE *h, const char *guard, const Sig *sigs)
{
	Graph *g = E->g;
	const Sig *s0 = &sigs[0];
	FILE *saved = E->c;
	E->c = h;   /* for comment_text */
	int nin = 0;
	for (int k = 0; k < g->ninputs; k++)
		nin += g->values[g->inputs[k]].kind == VAL_INPUT;
	fprintf(h, "/* Inputs and outputs in the descriptor's order. Per sample (one row\n"
	           " * of the batch): element count, rank, batch axis (-1: none) and dims\n"
	           " * (the batch axis at 1). A buffer of n rows holds n * ELEMS elements. */\n");
	fprintf(h, "#define %s_NUM_INPUTS %d\n#define %s_NUM_OUTPUTS %d\n", guard, nin, guard,
	        g->noutputs);
	for (int pass = 0; pass < 2; pass++) {
		int count = pass ? g->noutputs : g->ninputs;
		for (int k = 0, j = 0; k < count; k++) {
			int id = pass ? g->outputs[k] : g->inputs[k];
			if (!pass && g->values[id].kind != VAL_INPUT)
				continue;
			const char *io = arena_printf(E->a, "%s_%s%d", guard, pass ? "OUT" : "IN", j++);
			const Shape *sh = &s0->shapes[id];
			int64_t elems = 1;
			for (int d = 0; d < sh->rank; d++)
				elems *= sample_dim(E, s0, id, d);
			fprintf(h, "/* %s %d \"", pass ? "output" : "input", j - 1);
			comment_text(E, g->values[id].name);
			int dt = s0->dtypes[id];
			fprintf(h, "\": %s%s */\n", dtype_name(dt),
			        DT_IS_4BIT(dt) ? ", packed two a byte, the first in the low\n * nibble: "
			                         "n * ELEMS elements take (n * ELEMS + 1) / 2 bytes (kiln/int4.h)"
			        : DT_IS_FLOAT8(dt) ? ", one uint8_t bit pattern each (kiln/float8.h)" : "");
			fprintf(h, "#define %s_ELEMS %" PRId64 "\n#define %s_RANK %d\n#define %s_BATCH_AXIS %d\n",
			        io, elems, io, sh->rank, io, E->o->stitch->axis[id]);
			if (E->o->nbuckets)
				fprintf(h, "#define %s_BUCKET_AXIS %d\n", io, E->o->bucket_axis[id]);
			fprintf(h, "#define %s_SHAPE {", io);
			for (int d = 0; d < sh->rank; d++)
				fprintf(h, "%s%" PRId64, d ? ", " : "", sample_dim(E, s0, id, d));
			fprintf(h, "}\n");
			for (int d = 0; d < sh->rank; d++)
				fprintf(h, "#define %s_DIM%d %" PRId64 "\n", io, d, sample_dim(E, s0, id, d));
			if (pass)
				emit_zipmap_keys(E, h, io, id);
		}
	}
	if (E->o->nbuckets) {
		fprintf(h, "/* Buckets of the dim \"");
		comment_text(E, E->o->bucket_symbol);
		fprintf(h, "\" (kiln_run_lengths): the dims above are at the largest;\n"
		           " * BUCKET_AXIS is the axis that carries it (-1: none). */\n");
		fprintf(h, "#define %s_NUM_BUCKETS %d\n#define %s_BUCKETS {", guard, E->o->nbuckets,
		        guard);
		for (int j = 0; j < E->o->nbuckets; j++)
			fprintf(h, "%s%" PRId64, j ? ", " : "", E->o->buckets[j].value);
		fprintf(h, "}\n");
	}
	fputc('\n', h);
	E->c = saved;
}

/* ", const float *in_x, ..., float *out_y);" and a blank line: a typed
 * entry's buffers in the header. */
static void header_params(Emit *E, FILE *h, const Sig *s)
{
	Graph *g = E->g;
	for (int k = 0; k < g->ninputs; k++) {
		int id = g->inputs[k];
		if (g->values[id].kind == VAL_INPUT)
			fprintf(h, ", const %s *%s", ctype(s->dtypes[id]), E->iface[id]);
	}
	for (int k = 0; k < g->noutputs; k++)
		fprintf(h, ", %s *%s", ctype(s->dtypes[g->outputs[k]]), E->iface[g->outputs[k]]);
	fprintf(h, ");\n\n");
}

static void emit_header(Emit *E, FILE *h, const Sig *sigs, const Plan *plans, int nsigs)
{
	Graph *g = E->g;
	const char *N = E->o->name;
	const Stitch *st = E->o->stitch;
	banner(h, E, sigs, nsigs);
	const char *guard = upper(E, N);
	const Sig *top = E->o->nbuckets ? sigs + nsigs - nsigs / E->o->nbuckets : sigs;
	/* Not NAME_H: --name KILN_MODEL would be kiln/model.h's guard, and a
	 * user's net.h may use NET_H (compile.c is_reserved). */
	const char *once = arena_printf(E->a, "%s_KILN_H_%08" PRIx32, guard, (uint32_t)name_hash(N));
	fprintf(h, "#ifndef %s\n#define %s\n\n#include <stdint.h>\n\n#include <kiln/model.h>\n"
	           "#include <kiln/run.h>\n\n", once, once);
	fprintf(h, "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n");
	if (E->o->export_api)
		fprintf(h, "/* The descriptor and entry points below are exported (kiln compile\n"
		           " * --export): a shared library linking this model exports them. */\n");
	else
		fprintf(h, "/* The descriptor and entry points below are hidden: a shared library\n"
		           " * linking this model exports none of kiln's symbols, so two libraries\n"
		           " * with models of the same name never take each other's. Export them\n"
		           " * with kiln compile --export (docs/integration.md). */\n");
	fprintf(h, "#ifndef %s_MODEL_API\n#if defined(__GNUC__) && !defined(_WIN32)\n"
	           "#define %s_MODEL_API __attribute__((visibility(\"%s\")))\n#else\n"
	           "#define %s_MODEL_API\n#endif\n#endif\n\n",
	        guard, guard, E->o->export_api ? "default" : "hidden", guard);
	emit_io_constants(E, h, guard, top);
	fprintf(h, "/* Bytes of arena one call needs at the largest compiled batch size;\n"
	           " * align it to 64 bytes. Each thread needs its own. */\n");
	fprintf(h, "#define %s_ARENA_BYTES %" PRId64 "\n", guard, st->max_arena_bytes);
	fprintf(h, "/* Bytes of one kiln_run context (any alignment): the arena above, a\n"
	           " * staging area of %" PRIu64 " bytes for the padded chunk, and the plans of\n"
	           " * every batch up to %" PRId64 ". Each thread needs its own. */\n",
	        st->staging_bytes, st->plan_bound);
	fprintf(h, "#define %s_CONTEXT_BYTES %" PRIu64 "\n\n", guard, st->context_bytes);
	fprintf(h, "/* The model: interface, batch sizes, arena sizes and entry points. */\n");
	fprintf(h, "extern %s_MODEL_API const kiln_model %s_model;\n\n", guard, N);
	if (st->dep.independent)
		fprintf(h, "/* Any batch n >= 0 through a context (kiln/run.h): compiled sizes run\n"
		           " * in place, others are stitched from them. Buffers hold n rows. */\n");
	else
		fprintf(h, "/* Through a context (kiln/run.h), at the compiled batch sizes only:\n"
		           " * the model is not batch independent (see %s_model.batch_mixing). */\n", N);
	fprintf(h, "%s_MODEL_API int %s_run(kiln_context *ctx, int64_t n", guard, N);
	header_params(E, h, &sigs[0]);
	if (E->o->nbuckets) {
		fprintf(h, "/* n samples of their own lengths along the bucketed dim (kiln_run_lengths):\n"
		           " * tensors that carry it hold n samples at lmax (lmax < 0: the longest\n"
		           " * length); outputs past a sample's length are zero. */\n");
		fprintf(h, "%s_MODEL_API int %s_run_lengths(kiln_context *ctx, int64_t n, "
		           "const int64_t *lengths, int64_t lmax", guard, N);
		header_params(E, h, &sigs[0]);
	}
	for (int i = 0; i < nsigs; i++) {
		if (sigs[i].bucket)
			fprintf(h, "/* Batch %" PRId64 " at bucket %" PRId64 ": arena %" PRId64 " bytes. Returns 0 "
			        "or a kiln_status. */\n", sigs[i].batch, sigs[i].bucket, plans[i].arena_bytes);
		else
			fprintf(h, "/* Batch %" PRId64 ": arena %" PRId64 " bytes. Returns 0 or a kiln_status. */\n",
			        sigs[i].batch, plans[i].arena_bytes);
		fprintf(h, "%s_MODEL_API int %s_run_%s(void *arena", guard, N, sig_tag(E->a, &sigs[i]));
		for (int k = 0; k < g->ninputs; k++) {
			int id = g->inputs[k];
			if (g->values[id].kind == VAL_INPUT)
				fprintf(h, ", const %s *%s", ctype(sigs[i].dtypes[id]), E->iface[id]);
		}
		for (int k = 0; k < g->noutputs; k++) {
			int id = g->outputs[k];
			fprintf(h, ", %s *%s", ctype(sigs[i].dtypes[id]), E->iface[id]);
		}
		fprintf(h, ");\n");
	}
	fprintf(h, "\n#ifdef __cplusplus\n}\n#endif\n#endif\n");
}

static void emit_cstring(Emit *E, const char *s)
{
	fputs(c_string_escape(E->a, s), E->c);
}

/* A smaller bucket's descriptor and arrays: NAME_d16. */
static const char *bucket_prefix(Emit *E, int j)
{
	return arena_printf(E->a, "%s_d%" PRId64, E->o->name, E->o->buckets[j].value);
}

/* The top model's bucket fields: the values, each bucket's descriptor (the
 * last is the top model itself) and, per input then output, the axis that
 * carries the bucketed dim. */
static void emit_bucket_arrays(Emit *E)
{
	const char *N = E->o->name;
	Graph *g = E->g;
	int nbk = E->o->nbuckets;
	emitf(E, "static const int64_t %s_buckets[] = {", N);
	for (int j = 0; j < nbk; j++)
		emitf(E, "%s%" PRId64, j ? ", " : "", E->o->buckets[j].value);
	emitf(E, "};\nstatic const kiln_model *const %s_bucket_models[] = {", N);
	for (int j = 0; j + 1 < nbk; j++)
		emitf(E, "&%s_model, ", bucket_prefix(E, j));
	emitf(E, "&%s_model};\nstatic const int %s_bucket_axis[] = {", N, N);
	int k = 0;
	for (int i = 0; i < g->ninputs; i++)
		if (g->values[g->inputs[i]].kind == VAL_INPUT)
			emitf(E, "%s%d", k++ ? ", " : "", E->o->bucket_axis[g->inputs[i]]);
	for (int i = 0; i < g->noutputs; i++)
		emitf(E, "%s%d", k++ ? ", " : "", E->o->bucket_axis[g->outputs[i]]);
	emitf(E, "%s};\n", k ? "" : "0");
}

/* The kiln_model P_model over the nsigs signatures of one bucket, or of a
 * model without buckets, its arrays prefixed P: the top model (P is NAME;
 * with buckets, the largest bucket's, which lists the others) is exported,
 * a smaller bucket's is static. */
static void emit_model_desc(Emit *E, const char *P, const Sig *sigs, const Plan *plans, int nsigs,
                            const Stitch *st)
{
	Graph *g = E->g;
	const char *N = E->o->name;
	const Sig *s0 = &sigs[0];
	bool top = strcmp(P, N) == 0;
	for (int pass = 0; pass < 2; pass++) {
		int count = pass ? g->noutputs : g->ninputs;
		for (int k = 0, j = 0; k < count; k++) {
			int id = pass ? g->outputs[k] : g->inputs[k];
			if (!pass && g->values[id].kind != VAL_INPUT)
				continue;
			/* Per-sample shape: the batch axis at 1 sample's extent. */
			emitf(E, "static const int64_t %s_dims_%s%d[] = {", P, pass ? "out" : "in", j++);
			const Shape *sh = &s0->shapes[id];
			for (int d = 0; d < sh->rank; d++)
				emitf(E, "%s%" PRId64, d ? ", " : "", sample_dim(E, s0, id, d));
			emitf(E, "%s};\n", sh->rank ? "" : "0");
		}
	}
	for (int pass = 0; pass < 2; pass++) {
		emitf(E, "static const kiln_tensor_desc %s_%s[] = {\n", P, pass ? "outputs" : "inputs");
		int count = pass ? g->noutputs : g->ninputs;
		for (int k = 0, j = 0; k < count; k++) {
			int id = pass ? g->outputs[k] : g->inputs[k];
			if (!pass && g->values[id].kind != VAL_INPUT)
				continue;
			emitf(E, "\t{\"");
			emit_cstring(E, g->values[id].name);
			emitf(E, "\", %d, %d, %s_dims_%s%d, %d},\n", s0->dtypes[id], s0->shapes[id].rank, P,
			    pass ? "out" : "in", j, st->axis[id]);
			j++;
		}
		emitf(E, "%s};\n", count ? "" : "\t{0}\n");
	}
	emitf(E, "static const int64_t %s_batches[] = {", P);
	for (int i = 0; i < nsigs; i++)
		emitf(E, "%s%" PRId64, i ? ", " : "", sigs[i].batch);
	emitf(E, "};\nstatic const uint64_t %s_arena_bytes[] = {", P);
	for (int i = 0; i < nsigs; i++)
		emitf(E, "%s%" PRId64, i ? ", " : "", plans[i].arena_bytes);
	emitf(E, "};\nstatic const kiln_run_fn %s_run_fns[] = {", P);
	for (int i = 0; i < nsigs; i++)
		emitf(E, "%s%s_run_generic_%s", i ? ", " : "", N, sig_tag(E->a, &sigs[i]));
	/* The cost model's estimate per size (stitch.c); %a keeps it exact. */
	emitf(E, "};\nstatic const double %s_cost[] = {", P);
	for (int i = 0; i < nsigs; i++)
		emitf(E, "%s%a", i ? ", " : "", st->cost[i].ns);
	emitf(E, "};\nstatic const uint64_t %s_flops[] = {", P);
	for (int i = 0; i < nsigs; i++)
		emitf(E, "%s%" PRIu64, i ? ", " : "", st->cost[i].flops);
	emitf(E, "};\nstatic const uint64_t %s_traffic_bytes[] = {", P);
	for (int i = 0; i < nsigs; i++)
		emitf(E, "%s%" PRIu64, i ? ", " : "", st->cost[i].bytes);
	emitf(E, "};\n");
	if (E->o->nrules) {
		emitf(E, "static const char *const %s_rules[] = {", P);
		for (int i = 0; i < E->o->nrules; i++) {
			emitf(E, "%s\"", i ? ", " : "");
			emit_cstring(E, E->o->rules[i]);
			emitf(E, "\"");
		}
		emitf(E, "};\n");
	}
	if (top && E->o->nbuckets)
		emit_bucket_arrays(E);
	if (top)
		emitf(E, "\n%s_MODEL_API const kiln_model %s_model = {\n", upper(E, N), N);
	else
		emitf(E, "\nstatic const kiln_model %s_model = {\n", P);
	emitf(E, "\t.struct_bytes = sizeof(kiln_model),\n\t.kiln_version = %d,\n\t.name = \"%s\",\n",
	    KILN_VERSION_NUM, N);
	emitf(E, "\t.ninputs = %d, .noutputs = %d,\n", ninputs(g), g->noutputs);
	emitf(E, "\t.inputs = %s_inputs, .outputs = %s_outputs,\n", P, P);
	emitf(E, "\t.nbatches = %d, .batches = %s_batches, .arena_bytes = %s_arena_bytes, "
	       ".run = %s_run_fns,\n", nsigs, P, P, P);
	emitf(E, "\t.max_arena_bytes = %" PRId64 ",\n", st->max_arena_bytes);
	emitf(E, "\t.cost = %s_cost, .flops = %s_flops, .traffic_bytes = %s_traffic_bytes,\n", P, P, P);
	emitf(E, "\t.batch_independent = %d,\n", st->dep.independent ? 1 : 0);
	if (!st->dep.independent) {
		emitf(E, "\t.batch_mixing = \"");
		emit_cstring(E, st->dep.why ? st->dep.why : "not analysed");
		emitf(E, "\",\n");
	}
	if (E->o->nrules)
		emitf(E, "\t.nrules = %d, .rules = %s_rules,\n", E->o->nrules, P);
	emitf(E, "\t.plan_bound = %" PRId64 ", .staging_bytes = %" PRIu64 ", .context_bytes = %" PRIu64
	       ",\n", st->plan_bound, st->staging_bytes, st->context_bytes);
	if (top && E->o->nbuckets) {
		emitf(E, "\t.bucket_symbol = \"");
		emit_cstring(E, E->o->bucket_symbol);
		emitf(E, "\", .nbuckets = %d, .buckets = %s_buckets,\n\t.bucket_models = "
		      "%s_bucket_models, .bucket_axis = %s_bucket_axis,\n", E->o->nbuckets, N, N, N);
	}
	emitf(E, "};\n\n");
}

/* The typed entry for any n (NAME_run, or NAME_run_lengths with buckets):
 * views over the caller's buffers, through a context made for this very
 * descriptor. With lengths, a tensor that carries the bucketed dim holds
 * its samples at lmax. */
static void emit_typed_entry(Emit *E, const Sig *s0, bool lengths)
{
	Graph *g = E->g;
	const char *N = E->o->name;
	const Stitch *st = E->o->stitch;
	emitf(E, "%s_MODEL_API int %s_run%s(kiln_context *ctx, int64_t n%s", upper(E, N), N,
	      lengths ? "_lengths" : "", lengths ? ", const int64_t *lengths, int64_t lmax" : "");
	for (int k = 0; k < g->ninputs; k++) {
		int id = g->inputs[k];
		if (g->values[id].kind == VAL_INPUT)
			emitf(E, ", const %s *%s", ctype(s0->dtypes[id]), E->iface[id]);
	}
	for (int k = 0; k < g->noutputs; k++)
		emitf(E, ", %s *%s", ctype(s0->dtypes[g->outputs[k]]),
		    E->iface[g->outputs[k]]);
	emitf(E, ")\n{\n\tif (n < 0 || !ctx)\n\t\treturn KILN_USAGE;\n");
	emitf(E, "\tif (kiln_context_model(ctx) != &%s_model)\n\t\treturn KILN_WRONG_MODEL;\n", N);
	if (lengths)
		emitf(E, "\tif (lmax < 0)\n\t\tlmax = kiln_lengths_max(n, lengths);\n"
		      "\tconst uint64_t l = lmax > 0 ? (uint64_t)lmax : 0;\n");
	for (int pass = 0; pass < 2; pass++) {
		int count = pass ? g->noutputs : g->ninputs, j = 0;
		emitf(E, "\tconst kiln_%s %s[%d] = {\n", pass ? "output" : "input", pass ? "out" : "in",
		    count ? count : 1);
		for (int k = 0; k < count; k++) {
			int id = pass ? g->outputs[k] : g->inputs[k];
			if (!pass && g->values[id].kind != VAL_INPUT)
				continue;
			const Shape *sh = &s0->shapes[id];
			int baxis = lengths ? E->o->bucket_axis[id] : -1;
			int64_t per = 1;
			for (int d = 0; d < sh->rank; d++)
				per *= d == baxis ? 1
				     : d == st->axis[id] ? sh->dims[d].size / s0->batch : sh->dims[d].size;
			const char *times = arena_printf(E->a, "%s%s", st->axis[id] >= 0 ? " * (uint64_t)n" : "",
			                                 baxis >= 0 ? " * l" : "");
			if (DT_IS_4BIT(s0->dtypes[id]))   /* packed: (elements + 1) / 2 bytes */
				emitf(E, "\t\t{%s, %d, ((uint64_t)%" PRId64 "%s + 1) / 2},\n", E->iface[id],
				    s0->dtypes[id], per, times);
			else
				emitf(E, "\t\t{%s, %d, (uint64_t)%" PRId64 " * sizeof(%s)%s},\n",
				    E->iface[id], s0->dtypes[id], per, ctype(s0->dtypes[id]), times);
			j++;
		}
		if (!j)
			emitf(E, "\t\t{0},\n");
		emitf(E, "\t};\n");
	}
	if (lengths)
		emitf(E, "\treturn kiln_run_lengths(ctx, n, lengths, lmax, in, out);\n}\n\n");
	else
		emitf(E, "\treturn kiln_run(ctx, n, in, out);\n}\n\n");
}

static void emit_descriptor(Emit *E, const Sig *sigs, const Plan *plans, int nsigs)
{
	const char *N = E->o->name;
	const Stitch *st = E->o->stitch;
	int nbk = E->o->nbuckets, nb = nbk ? nsigs / nbk : nsigs;
	for (int j = 0; j + 1 < nbk; j++)
		emit_model_desc(E, bucket_prefix(E, j), sigs + j * nb, plans + j * nb, nb,
		                &E->o->buckets[j].stitch);
	sigs += nsigs - nb;
	emit_model_desc(E, N, sigs, plans + nsigs - nb, nb, st);
	emit_typed_entry(E, &sigs[0], false);
	if (nbk)
		emit_typed_entry(E, &sigs[0], true);
	if (E->o->shared_entry) {
		/* kiln compile --shared: the one symbol every model's shared object
		 * exports under the same name, so a loader (the Python module) finds
		 * the descriptor without knowing NAME. */
		emitf(E, "/* The descriptor of this shared object (kiln compile --shared). */\n"
		      "__attribute__((visibility(\"default\"))) const kiln_model *kiln_shared_model(void);\n"
		      "const kiln_model *kiln_shared_model(void)\n{\n\treturn &%s_model;\n}\n\n", N);
	}
}

/* ", n_pf 16" after a bucketed signature's batch in a comment, else "". */
static const char *bucket_note(Emit *E, const Sig *s)
{
	if (!s->bucket)
		return "";
	return arena_printf(E->a, ", %s %" PRId64, c_comment_escape(E->a, E->o->bucket_symbol),
	                    s->bucket);
}

void emit_c(Model *m, const Sig *sigs, const Plan *plans, int nsigs, const EmitOptions *o,
            FILE *h, FILE *c, FILE *scratch, EmitResult *res)
{
	/* The code goes to scratch first: the weight symbols it names are only
	 * known once it is written, and their declarations come first in NAME.c. */
	Emit E0 = {.m = m, .g = m->graph, .d = m->diag, .a = m->arena, .o = o, .c = scratch};
	Emit *E = &E0;
	Graph *g = m->graph;
	index_interface(E);
	E->sym_of_weight = arena_array(E->a, (size_t)g->nvalues, sizeof *E->sym_of_weight);
	for (int i = 0; i < g->nvalues; i++)
		E->sym_of_weight[i] = NONE;

	/* Large graphs share node functions (see "shared node functions"). */
	bool any_shared = false;
	for (int i = 0; i < nsigs; i++) {
		E->sig = &sigs[i];
		E->plan = &plans[i];
		any_shared |= share_signature(E);
		if (o->tile && o->tile[i]) {
			E->sig = o->tile[i];
			E->plan = o->tile_plan[i];
			any_shared |= share_signature(E);
		}
	}
	if (any_shared)
		emit_step_runner(E);
	for (int i = 0; i < nsigs; i++) {
		const Sig *t = o->tile ? o->tile[i] : NULL;
		bool internal = t && !(t >= sigs && t < sigs + nsigs);
		bool done = false;   /* an internal tile's code, emitted for a smaller size */
		for (int j = 0; j < i && internal; j++)
			done |= o->tile[j] == t;
		if (internal && !done) {
			E->sig = t;
			E->plan = o->tile_plan[i];
			emitf(E, "/* ==== batch %" PRId64 " (tiles of batch %" PRId64 " only)%s: arena %" PRId64
			      " bytes ==== */\n\n", t->batch, sigs[i].batch, bucket_note(E, t),
			      E->plan->arena_bytes);
			emit_signature(E);
		}
		E->sig = &sigs[i];
		E->plan = &plans[i];
		emitf(E, "/* ==== batch %" PRId64 "%s: arena %" PRId64 " bytes ==== */\n\n", sigs[i].batch,
		    bucket_note(E, &sigs[i]), plans[i].arena_bytes);
		if (t)
			emit_tiled_run(E, t);
		else
			emit_signature(E);
		emitf(E, "%s_MODEL_API int %s_run_%s(void *arena", upper(E, o->name), o->name,
		    sig_tag(E->a, &sigs[i]));
		int nin = 0, nout = 0;
		for (int k = 0; k < g->ninputs; k++) {
			int id = g->inputs[k];
			if (g->values[id].kind == VAL_INPUT) {
				emitf(E, ", const %s *%s", ctype(sigs[i].dtypes[id]), E->iface[id]);
				nin++;
			}
		}
		for (int k = 0; k < g->noutputs; k++) {
			emitf(E, ", %s *%s", ctype(sigs[i].dtypes[g->outputs[k]]), E->iface[g->outputs[k]]);
			nout++;
		}
		emitf(E, ")\n{\n\tconst void *in[%d] = {", nin ? nin : 1);
		for (int k = 0, j = 0; k < g->ninputs; k++)
			if (g->values[g->inputs[k]].kind == VAL_INPUT)
				emitf(E, "%s%s", j++ ? ", " : "", E->iface[g->inputs[k]]);
		emitf(E, "%s};\n\tvoid *out[%d] = {", nin ? "" : "0", nout ? nout : 1);
		for (int k = 0; k < g->noutputs; k++)
			emitf(E, "%s%s", k ? ", " : "", E->iface[g->outputs[k]]);
		emitf(E, "%s};\n\treturn %s_run_generic_%s(arena, in, out);\n}\n\n",
		    nout ? "" : "0", o->name, sig_tag(E->a, &sigs[i]));
	}
	if (E->tfile) {
		model_untrack_file(m, E->tfile);
		fclose(E->tfile);
		E->tfile = NULL;
	}
	emit_descriptor(E, sigs, plans, nsigs);
	emit_header(E, h, sigs, plans, nsigs);

	banner(c, E, sigs, nsigs);
	fprintf(c, "#include <math.h>\n#include <stdint.h>\n#include <string.h>\n\n");
	fprintf(c, "#include <kiln/float8.h>\n#include <kiln/int4.h>\n#include <kiln/kernels.h>\n"
	           "#include <kiln/model.h>\n#include <kiln/run.h>\n\n");
	fprintf(c, "#include \"%s.h\"\n\n", o->name);
	fprintf(c, "#if !defined(KILN_VERSION_NUM) || KILN_VERSION_NUM != %d\n"
	           "#error \"generated by kiln %s: build it with that version's headers\"\n"
	           "#endif\n\n", KILN_VERSION_NUM, KILN_VERSION_STRING);
	/* Reproducibility (docs/reproducibility.md): every operation rounded as
	 * written. The pragma is clang's; GCC ignores it and needs the flag. */
	fprintf(c, "#ifdef __FAST_MATH__\n"
	           "#error \"kiln's generated C must not be built with -ffast-math (or -Ofast): "
	           "it would change results; build it with -ffp-contract=off\"\n"
	           "#endif\n#ifdef __clang__\n#pragma STDC FP_CONTRACT OFF\n#endif\n\n");
	fprintf(c, "/* Constants, in %s_weights.o: read-only, 64-byte aligned, each stored once. */\n",
	        o->name);
	/* Hidden as in the object: a direct reference, never exported. */
	fprintf(c, "#if defined(__GNUC__) && !defined(_WIN32)\n#define %s_WEIGHT "
	           "__attribute__((visibility(\"hidden\")))\n#else\n#define %s_WEIGHT\n#endif\n",
	        upper(E, o->name), upper(E, o->name));
	for (int i = 0; i < E->nsyms; i++) {
		fprintf(c, "extern const unsigned char %s[] %s_WEIGHT; /* %s, %" PRIu64 " bytes, ",
		        E->syms[i].name, upper(E, o->name), dtype_name(E->syms[i].dtype),
		        E->syms[i].nbytes);
		if (E->syms[i].layout == SYM_PACK_B32)
			fprintf(c, "GEMM B packed b32 (K %" PRId64 ", N %" PRId64 "), ", E->syms[i].pack[0],
			        E->syms[i].pack[1]);
		if (E->syms[i].layout == SYM_PACK_CONV32)
			fprintf(c, "Conv W packed conv32 (M %" PRId64 ", C %" PRId64 ", %" PRId64 "x%" PRId64
			        "), ", E->syms[i].pack[1], E->syms[i].pack[0], E->syms[i].pack[2],
			        E->syms[i].pack[3]);
		fprintf(c, "from \"");
		E->c = c;
		comment_text(E, E->syms[i].source);
		fprintf(c, "\" */\n");
	}
	fputc('\n', c);
	rewind(scratch);
	char buf[65536];
	size_t got;
	while ((got = fread(buf, 1, sizeof buf, scratch)) > 0)
		fwrite(buf, 1, got, c);
	res->syms = E->syms;
	res->nsyms = E->nsyms;
}
