/*
 * emit/nodes.c - the node functions of a graph and the run functions that
 * call them: per node, its comment and the body its op record's emitter
 * writes (opdef.h; the dispatch is emit_body), shared node functions for
 * large graphs, and per signature NAME_run_bB (or its table of steps).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "emit_c.h"
#include "load.h"
#include "opdef.h"

/* ---- nodes ------------------------------------------------------------ */

static void emit_body(Emit *E)
{
	if (emit_ewchain(E)) {
		emitf(E, "\treturn 0;\n");
		return;
	}
	/* Every op with a record has an emitter (tests/unit/test_opdef.c). */
	const OpDef *d = op_def(E->n->op);
	KILN_ASSERT(d && d->emit);
	d->emit(E);
	if (d->emit_returns)
		return;
	emitf(E, "\treturn 0;\n");
}

static void describe(Emit *E, const char *role, int id)
{
	const Value *v = &E->g->values[id];
	emitf(E, " *   %s \"", role);
	comment_text(E, v->name);
	emitf(E, "\" %s ", dtype_name(E->sig->dtypes[id]));
	shape_text(E, &E->sig->shapes[id]);
	if (E->in_index[id] != NONE)
		emitf(E, " input %d", E->in_index[id]);
	else if (E->out_index[id] != NONE)
		emitf(E, " output %d", E->out_index[id]);
	else if (E->sig->folded[id] || v->kind == VAL_WEIGHT)
		emitf(E, " constant");
	else if (v->kind == VAL_OUTER)
		emitf(E, " from the enclosing graph");
	else if (E->plan->buf_of[id] != NONE)
		emitf(E, " arena @%" PRId64, E->plan->bufs[E->plan->buf_of[id]].off);
	else if (E->plan->root[id] != id)
		emitf(E, " view of \"%s\"", c_comment_escape(E->a, E->g->values[E->plan->root[id]].name));
	emitf(E, "\n");
}

/* Does the node produce anything at run time? Folded outputs are constants
 * and views need no code, unless the caller's output buffer must be filled;
 * dead nodes (sigdce.c) none at all.
 * (An in-place output shares its input's buffer but is still computed.) */
static bool node_has_code(Emit *E, const Node *n)
{
	if (sig_node_dead(E->sig, n))
		return false;
	if (n->nout >= 1 && n->out[0] != NONE && sig_inline(E->sig, n->out[0]))
		return false;  /* the last node of its elementwise chain computes it */
	for (int k = 0; k < n->nout; k++) {
		int id = n->out[k];
		if (id == NONE)
			continue;
		if (E->out_index[id] != NONE)
			return true;
		if (!E->sig->folded[id] && (E->plan->root[id] == id || !plan_is_view_op(n->op)))
			return true;
	}
	return false;
}

static const char *fn_name(Emit *E, const Node *n)
{
	/* Subgraph functions carry their node path: b1_n004_body_n002_add. */
	const char *prefix = E->fn_prefix ? E->fn_prefix : sig_tag(E->a, E->sig);
	return arena_printf(E->a, "%s_n%03d_%s", prefix, n->id,
	                    c_identifier(E->a, n->name[0] ? n->name : n->op_type));
}

/* The statements of node n's function, ending with its return. */
static void node_code(Emit *E, Node *n)
{
	/* A folded output the caller wants is copied from its constant. */
	bool all_folded = true;
	for (int k = 0; k < n->nout; k++)
		if (n->out[k] != NONE && !E->sig->folded[n->out[k]])
			all_folded = false;
	if (all_folded) {
		for (int k = 0; k < n->nout; k++) {
			int id = n->out[k];
			if (id == NONE || E->out_index[id] == NONE)
				continue;
			const Folded *f = E->sig->folded[id];
			int s = symbol_for(E, f->dtype, f->data, dtype_bytes(f->dtype, f->nelem),
			                   E->g->values[id].name);
			emitf(E, "\tmemcpy(out[%d], %s, %" PRIu64 ");\n", E->out_index[id], E->syms[s].name,
			    E->syms[s].nbytes);
		}
		emitf(E, "\treturn 0;\n");
		return;
	}
	bool empty = true;
	for (int k = 0; k < n->nout; k++)
		if (n->out[k] != NONE && shape_nelem(&E->sig->shapes[n->out[k]]) != 0)
			empty = false;
	if (empty) {
		emitf(E, "\treturn 0; /* every output is empty: nothing to compute */\n");
		return;
	}
	emit_body(E);
}

/* Limits.max_c_bytes, checked after each node's code (docs/limits.md). */
static void check_c_size(Emit *E, const Node *n)
{
	long at = ftell(E->c);
	if (at > E->m->limits.max_c_bytes)
		diag_fail_node(E->d, E->g, n, KILN_LIMIT, "the generated C passes %lld MiB here (raise the "
		               "limit with --max-c-size)", (long long)(E->m->limits.max_c_bytes >> 20));
}

static void emit_node(Emit *E, Node *n)
{
	E->n = n;
	/* C has no nested functions: a subgraph's node functions come first. */
	emit_control_functions(E, n);
	emitf(E, "/* node %d \"", n->id);
	comment_text(E, n->name);
	emitf(E, "\" (%s)\n", c_comment_escape(E->a, n->op_type));
	EwChain ch;
	if (ewchain_collect(E, n, &ch) > 1) {
		/* One loop computes the chain; its inner values are never stored. */
		emitf(E, " * elementwise chain, computed in one loop with ");
		ewchain_names(E, &ch, "");
		emitf(E, "\n");
		for (int e = 0; e < ch.next; e++)
			describe(E, "in ", ch.ext[e]);
	} else {
		for (int k = 0; k < n->nin; k++)
			if (n->in[k] != NONE)
				describe(E, "in ", n->in[k]);
	}
	for (int k = 0; k < n->nout; k++)
		if (n->out[k] != NONE)
			describe(E, "out", n->out[k]);
	emitf(E, " */\n");
	emitf(E, "static int %s(unsigned char *a, const void *const *in, void *const *out)\n{\n",
	    fn_name(E, n));
	emitf(E, "\t(void)a, (void)in, (void)out;\n");
	node_code(E, n);
	emitf(E, "}\n\n");
	check_c_size(E, n);
}

/* ---- shared node functions -------------------------------------------- */

/*
 * In a large graph, most nodes repeat a few bodies: the same op on the same
 * shapes, differing only in where their operands live. There, each node's
 * body is written once more in template mode, with its operands as
 * slot[k] (the arena offset, input, output or weights symbol recorded
 * aside); nodes whose bodies are then the same text share one function
 * (sNNN_op), and a table of steps per batch size gives, in schedule order,
 * each node's function and slots. The C compiler then sees a few functions
 * and some tables instead of one function per node and signature, so its
 * time grows with the number of distinct bodies, not of nodes. Anything a
 * body says about one node alone (a constant's name, a fused node's name)
 * keeps its text unique, so sharing is never wrong, only less frequent.
 * Control flow and nodes with more than SHARE_MAX_SLOTS operands keep
 * their own functions; small graphs keep one function per node.
 */
enum { SHARE_MIN_NODES = 64, SHARE_MAX_SLOTS = 32 };

typedef struct EmitTemplate {
	uint64_t hash;
	const char *code;
	const char *name;
} EmitTemplate;

static uint64_t text_hash(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603u;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211u;
	return h;
}

bool share_signature(Emit *E)
{
	int n = 0;
	for (int k = 0; k < E->g->nnodes; k++)
		n += node_has_code(E, &E->g->nodes[k]);
	return n >= SHARE_MIN_NODES;
}

/* Node n's body in template mode: its shared function (written out when it
 * is new), with its slots in E->slots; NULL if n keeps its own function. */
static const char *shared_function(Emit *E, Node *n)
{
	if (node_has_subgraph(n))   /* If, Loop, Scan: bodies of their own */
		return NULL;
	/* The body goes to a temporary file the model tracks (closed on any
	 * error), then back into the arena to be compared. */
	if (!E->tfile) {
		E->tfile = tmpfile();
		if (!E->tfile)
			diag_fail(E->d, KILN_IO, "cannot open a temporary file");
		model_track_file(E->m, E->tfile);
	}
	rewind(E->tfile);
	FILE *saved = E->c;
	E->n = n;
	E->c = E->tfile;
	E->nslots = 0;
	E->templating = true;
	node_code(E, n);
	E->templating = false;
	E->c = saved;
	long len = ftell(E->tfile);
	if (len < 0 || E->nslots > SHARE_MAX_SLOTS)
		return NULL;
	char *buf = arena_alloc(E->a, (size_t)len + 1);
	rewind(E->tfile);
	if (fread(buf, 1, (size_t)len, E->tfile) != (size_t)len)
		diag_fail(E->d, KILN_IO, "reading back a temporary file");
	buf[len] = 0;
	uint64_t h = text_hash(buf, (size_t)len);
	for (int i = 0; i < E->ntmpls; i++)
		if (E->tmpls[i].hash == h && strcmp(E->tmpls[i].code, buf) == 0)
			return E->tmpls[i].name;
	E->tmpls = arena_grow(E->a, E->tmpls, E->ntmpls, &E->captmpls, sizeof *E->tmpls);
	EmitTemplate *t = &E->tmpls[E->ntmpls];
	t->hash = h;
	t->code = buf;
	t->name = arena_printf(E->a, "s%03d_%s", E->ntmpls++, c_identifier(E->a, n->op_type));
	emitf(E, "/* shared: %s at batch %" PRId64 ", first for node %d \"",
	      c_comment_escape(E->a, n->op_type), E->sig->batch, n->id);
	comment_text(E, n->name);
	emitf(E, "\"; the steps tables list its nodes */\n");
	emitf(E, "static int %s(unsigned char *a, const void *const *in, void *const *out, "
	         "void *const *slot)\n{\n\t(void)a, (void)in, (void)out, (void)slot;\n%s}\n\n",
	      t->name, t->code);
	return t->name;
}

/* The types and the loop that run a table of steps (once per file). */
void emit_step_runner(Emit *E)
{
	const char *N = E->o->name;
	emitf(E, "/* Shared node functions: a step is a function and where its operands live\n"
	         " * (slots: 0 arena offset, 1 input, 2 output, 3 constant). */\n");
	emitf(E, "typedef struct %s_slot {\n\tint kind;\n\tint64_t off;\n\tconst void *ptr;\n} "
	         "%s_slot;\n", N, N);
	emitf(E, "typedef struct %s_step {\n\tint (*fn)(unsigned char *, const void *const *, "
	         "void *const *, void *const *);\n\tint first, nslots;\n} %s_step;\n\n", N, N);
	emitf(E, "static int %s_steps(unsigned char *a, const void *const *in, void *const *out,\n"
	         "\tconst %s_step *step, int n, const %s_slot *slots)\n{\n", N, N, N);
	emitf(E, "\tfor (int i = 0; i < n; i++) {\n\t\tvoid *slot[%d];\n", SHARE_MAX_SLOTS);
	emitf(E, "\t\tconst %s_slot *s = slots + step[i].first;\n", N);
	emitf(E, "\t\tfor (int k = 0; k < step[i].nslots; k++)\n"
	         "\t\t\tslot[k] = s[k].kind == 0 ? (void *)(a + s[k].off)\n"
	         "\t\t\t        : s[k].kind == 1 ? (void *)in[s[k].off]\n"
	         "\t\t\t        : s[k].kind == 2 ? out[s[k].off] : (void *)s[k].ptr;\n");
	emitf(E, "\t\tint st = step[i].fn(a, in, out, slot);\n\t\tif (st != 0)\n\t\t\treturn st;\n"
	         "\t}\n\treturn 0;\n}\n\n");
}

/* An input frozen at compile time (--freeze, or by kiln verify) decided
 * shapes or folded values: the code is only right for exactly those values,
 * so the run refuses any other instead of computing something wrong. */
static void frozen_guards(Emit *E)
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

/* One signature's node functions, steps tables and run function, sharing
 * functions between nodes. */
static void emit_shared_signature(Emit *E)
{
	const char *N = E->o->name;
	Graph *g = E->g;
	const char **fn = arena_array(E->a, (size_t)g->nnodes, sizeof *fn);
	int *first = arena_array(E->a, (size_t)g->nnodes, sizeof *first);
	int *count = arena_array(E->a, (size_t)g->nnodes, sizeof *count);
	EmitSlot *slots = NULL;
	int nslots = 0, capslots = 0;
	for (int k = 0; k < g->nnodes; k++) {
		Node *n = &g->nodes[k];
		if (!node_has_code(E, n))
			continue;
		fn[k] = shared_function(E, n);
		if (!fn[k]) {
			emit_node(E, n);
			continue;
		}
		first[k] = nslots;
		count[k] = E->nslots;
		for (int i = 0; i < E->nslots; i++) {
			slots = arena_grow(E->a, slots, nslots, &capslots, sizeof *slots);
			slots[nslots++] = E->slots[i];
		}
		check_c_size(E, n);
	}
	const char *b = sig_tag(E->a, E->sig);
	emitf(E, "static const %s_slot %s_slots[] = {\n", N, b);
	for (int i = 0; i < nslots; i++)
		emitf(E, "\t{%d, %" PRId64 ", %s},\n", slots[i].kind, slots[i].off,
		      slots[i].sym ? slots[i].sym : "NULL");
	emitf(E, "%s};\n", nslots ? "" : "\t{0, 0, NULL},\n");
	emitf(E, "static const %s_step %s_steps[] = {\n", N, b);
	int nsteps = 0;
	int *step_of = arena_array(E->a, (size_t)g->nnodes, sizeof *step_of);
	for (int k = 0; k < g->nnodes; k++) {
		Node *n = &g->nodes[k];
		if (!node_has_code(E, n) || !fn[k])
			continue;
		step_of[k] = nsteps++;
		emitf(E, "\t{%s, %d, %d}, /* node %d \"", fn[k], first[k], count[k], n->id);
		comment_text(E, n->name);
		emitf(E, "\" (%s)", c_comment_escape(E->a, n->op_type));
		EwChain ch;
		if (ewchain_collect(E, n, &ch) > 1)
			ewchain_names(E, &ch, " with ");
		emitf(E, " */\n");
		check_c_size(E, n);
	}
	emitf(E, "%s};\n\n", nsteps ? "" : "\t{NULL, 0, 0},\n");
	emitf(E, "static int %s_run_generic_%s(void *arena, const void *const *in, "
	         "void *const *out)\n{\n\tunsigned char *a = arena;\n\tint st;\n", N, b);
	frozen_guards(E);
	for (int k = 0; k < g->nnodes;) {
		Node *n = &g->nodes[k];
		if (!node_has_code(E, n)) {
			k++;
			continue;
		}
		if (!fn[k]) {
			emitf(E, "\tif ((st = %s(a, in, out)) != 0) /* %s */\n\t\treturn st;\n",
			      fn_name(E, n), c_comment_escape(E->a, n->op_type));
			k++;
			continue;
		}
		int from = step_of[k], upto = k;
		while (upto < g->nnodes && (!node_has_code(E, &g->nodes[upto]) || fn[upto]))
			upto++;
		int to = from;
		for (int j = k; j < upto; j++)
			if (node_has_code(E, &g->nodes[j]))
				to = step_of[j] + 1;
		emitf(E, "\tif ((st = %s_steps(a, in, out, %s_steps + %d, %d, %s_slots)) != 0)\n"
		         "\t\treturn st;\n", N, b, from, to - from, b);
		k = upto;
	}
	emitf(E, "\treturn 0;\n}\n\n");
}

/* E->sig's node functions and its run function. */
void emit_signature(Emit *E)
{
	Graph *g = E->g;
	if (share_signature(E)) {
		emit_shared_signature(E);
		return;
	}
	for (int k = 0; k < g->nnodes; k++)
		if (node_has_code(E, &g->nodes[k]))
			emit_node(E, &g->nodes[k]);
	emitf(E, "static int %s_run_generic_%s(void *arena, const void *const *in, "
	      "void *const *out)\n{\n\tunsigned char *a = arena;\n\tint st;\n", E->o->name,
	      sig_tag(E->a, E->sig));
	frozen_guards(E);
	for (int k = 0; k < g->nnodes; k++) {
		Node *n = &g->nodes[k];
		if (!node_has_code(E, n))
			continue;
		emitf(E, "\tif ((st = %s(a, in, out)) != 0) /* %s */\n\t\treturn st;\n",
		      fn_name(E, n), c_comment_escape(E->a, n->op_type));
	}
	emitf(E, "\treturn 0;\n}\n\n");
}

/* E->sig's run function as tiles of t's samples (batchtile.c): every batched
 * input and output has its batch on axis 0, so a tile is a block of rows at
 * its offset in the caller's buffers; the others are passed whole. */
void emit_tiled_run(Emit *E, const Sig *t)
{
	Graph *g = E->g;
	const Stitch *st = E->o->stitch;
	int64_t B = E->sig->batch;
	emitf(E, "/* Batch %" PRId64 " as %" PRId64 " tiles of %" PRId64 " samples, one after the "
	      "other through\n * every node, so that a tile's activations stay in cache. */\n",
	      B, B / t->batch, t->batch);
	emitf(E, "static int %s_run_generic_%s(void *arena, const void *const *in, "
	      "void *const *out)\n{\n", E->o->name, sig_tag(E->a, E->sig));
	int nin = 0, nout = g->noutputs;
	for (int k = 0; k < g->ninputs; k++)
		nin += g->values[g->inputs[k]].kind == VAL_INPUT;
	emitf(E, "\tfor (int64_t i = 0; i < %" PRId64 "; i++) {\n", B / t->batch);
	emitf(E, "\t\tconst void *tin[%d] = {", nin ? nin : 1);
	for (int k = 0, j = 0; k < g->ninputs; k++) {
		int id = g->inputs[k];
		if (g->values[id].kind != VAL_INPUT)
			continue;
		uint64_t tb = (uint64_t)shape_nelem(&t->shapes[id]) * dtype_size(t->dtypes[id]);
		if (st->axis[id] == 0)
			emitf(E, "%s(const unsigned char *)in[%d] + i * %" PRIu64, j ? ", " : "", j, tb);
		else
			emitf(E, "%sin[%d]", j ? ", " : "", j);
		j++;
	}
	emitf(E, "%s};\n\t\tvoid *tout[%d] = {", nin ? "" : "0", nout ? nout : 1);
	for (int k = 0; k < nout; k++) {
		int id = g->outputs[k];
		uint64_t tb = (uint64_t)shape_nelem(&t->shapes[id]) * dtype_size(t->dtypes[id]);
		emitf(E, "%s(unsigned char *)out[%d] + i * %" PRIu64, k ? ", " : "", k, tb);
	}
	emitf(E, "%s};\n\t\tint st = %s_run_generic_%s(arena, tin, tout);\n"
	      "\t\tif (st != 0)\n\t\t\treturn st;\n\t}\n\treturn 0;\n}\n\n",
	      nout ? "" : "0", E->o->name, sig_tag(E->a, t));
}

/* The node functions of a subgraph (emit/control.c sets up E). */
void emit_graph_functions(Emit *E)
{
	for (int k = 0; k < E->g->nnodes; k++)
		if (node_has_code(E, &E->g->nodes[k]))
			emit_node(E, &E->g->nodes[k]);
}

void emit_graph_calls(Emit *E, const char *indent)
{
	for (int k = 0; k < E->g->nnodes; k++) {
		Node *n = &E->g->nodes[k];
		if (node_has_code(E, n))
			emitf(E, "%sif ((st = %s(a, in, out)) != 0) /* %s */\n%s\treturn st;\n", indent,
			    fn_name(E, n), c_comment_escape(E->a, n->op_type), indent);
	}
}
