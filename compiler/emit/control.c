/*
 * emit/control.c - If, Loop and Scan.
 *
 * Each subgraph that runs becomes static functions of its own, one per node
 * as for the top graph, named after the node path (b1_n003_body_n001_add)
 * and written before the control-flow node's function, which calls them:
 *   - If: `if (cond[0]) { then } else { else }`, or only the branch taken
 *     when the condition is known at compile time; each branch's outputs
 *     are then copied to the node's outputs;
 *   - Loop and Scan: a C loop (or, for an unrolled Loop, one block per
 *     iteration) that copies the carried values into the body's inputs,
 *     calls the body, copies each scan output into its slice, and copies the
 *     body's carried outputs back to where the carried values live: the
 *     node's own outputs (or slots after the region, when omitted). The
 *     state is never where the body writes, so no iteration reads what it
 *     overwrites, whatever the body aliases.
 * Subgraph code reads values of enclosing graphs where those graphs keep
 * them: the caller's in[]/out[], the same arena offsets, and the same weights
 * symbols (operand, emit/helpers.c), so a weight used inside and outside a branch
 * is stored once. Subgraph functions take the top-level (a, in, out).
 */
#include <inttypes.h>
#include <string.h>

#include "../control.h"
#include "emit_c.h"

/* ---- subgraph emitters ------------------------------------------------- */

static const char *prefix_of(Emit *E)
{
	return E->fn_prefix ? E->fn_prefix : sig_tag(E->a, E->sig);
}

/* The emitter of sub k of control node n: the same files and symbols, the
 * subgraph's signature and plan. The parent's symbol table is stale while a
 * child is in use; emit_adopt_symbols hands it back. */
static Emit child(Emit *E, Node *n, const Control *c, int k)
{
	Emit C = *E;
	const Sig *s = &c->subs[k];
	int nv = s->g->nvalues;
	C.g = s->g;
	C.sig = s;
	C.plan = &c->plans[k];
	C.parent = E;
	C.n = n;
	C.fn_prefix = arena_printf(E->a, "%s_n%03d_%s", prefix_of(E), n->id, c->tags[k]);
	C.in_index = arena_array(E->a, (size_t)nv, sizeof *C.in_index);
	C.out_index = arena_array(E->a, (size_t)nv, sizeof *C.out_index);
	C.sym_of_weight = arena_array(E->a, (size_t)nv, sizeof *C.sym_of_weight);
	for (int i = 0; i < nv; i++)
		C.in_index[i] = C.out_index[i] = C.sym_of_weight[i] = NONE;
	return C;
}

/* Does emit_node write a body for n? (Not when its outputs are all known
 * or all empty; then the subgraph functions would go unused.) */
static bool runs(Emit *E, const Node *n)
{
	bool all_folded = true, empty = true;
	for (int k = 0; k < n->nout; k++) {
		int id = n->out[k];
		if (id == NONE)
			continue;
		all_folded &= E->sig->folded[id] != NULL;
		empty &= shape_nelem(&E->sig->shapes[id]) == 0;
	}
	return !all_folded && !empty;
}

void emit_control_functions(Emit *E, Node *n)
{
	Control *c = control_of(E->sig, n->id);
	if (!c || !runs(E, n))
		return;
	for (int k = 0; k < c->nsubs; k++) {
		if (!control_sub_runs(c, k))
			continue;
		Emit C = child(E, n, c, k);
		C.graph_functions(&C);
		emit_adopt_symbols(E, &C);
	}
	E->n = n;
}

/* ---- copies ------------------------------------------------------------ */

static int64_t bytes_of(const Sig *s, int id)
{
	return (int64_t)dtype_bytes(s->dtypes[id], shape_nelem(&s->shapes[id]));
}

/* memcpy(dst + doff, src + soff, bytes); offsets are C expressions in bytes. */
static void copy(Emit *E, const char *ind, const char *dst, const char *doff, const char *src,
                 const char *soff, int64_t bytes)
{
	if (bytes <= 0)
		return;
	emitf(E, "%smemcpy((unsigned char *)%s%s%s, (const unsigned char *)%s%s%s, %" PRId64 ");\n",
	    ind, dst, doff ? " + " : "", doff ? doff : "", src, soff ? " + " : "", soff ? soff : "",
	    bytes);
}

/* Slice t (a C expression) of a tensor viewed as [outer, D, inner bytes],
 * gathered into or scattered from a contiguous slice. o names the outer
 * index when the caller loops over it (Scan-8's batch), else outer is looped
 * here. */
static void slice_copy(Emit *E, const char *ind, bool gather, const char *full, const char *slice,
                       int64_t outer, int64_t D, int64_t inner, const char *t, const char *o)
{
	if (inner <= 0 || outer <= 0)
		return;
	const char *in_full, *in_slice = NULL;
	const char *ind2 = ind;
	if (o) {
		in_full = arena_printf(E->a, "(size_t)(%s * %" PRId64 " + %s) * %" PRId64, o, D, t, inner);
	} else if (outer == 1) {
		in_full = arena_printf(E->a, "(size_t)(%s) * %" PRId64, t, inner);
	} else {
		emitf(E, "%sfor (int64_t o = 0; o < %" PRId64 "; o++)\n", ind, outer);
		ind2 = arena_printf(E->a, "%s\t", ind);
		in_full = arena_printf(E->a, "(size_t)(o * %" PRId64 " + %s) * %" PRId64, D, t, inner);
		in_slice = arena_printf(E->a, "(size_t)o * %" PRId64, inner);
	}
	if (gather)
		copy(E, ind2, slice, in_slice, full, in_full, inner);
	else
		copy(E, ind2, full, in_full, slice, in_slice, inner);
}

/* Where carried value k lives between iterations: the node's output k, or
 * its slot when that output is omitted. */
static const char *state_expr(Emit *E, const Control *c, int k, int dtype)
{
	if (E->n->out[k] != NONE)
		return out_op(E, k).expr;
	return arena_printf(E->a, "(%s *)(a + %" PRId64 ")", ctype(dtype), c->state_off[k]);
}

/* ---- If --------------------------------------------------------------- */

static void emit_branch(Emit *E, const Control *c, int k, const char *ind)
{
	Node *n = E->n;
	Emit C = child(E, n, c, k);
	C.graph_calls(&C, ind);
	/* An output known at compile time is a constant its readers take from
	 * the weights: it is copied only when it is the caller's. */
	bool *wanted = arena_array(E->a, (size_t)n->nout + 1, sizeof *wanted);
	const char **src = arena_array(E->a, (size_t)n->nout + 1, sizeof *src);
	for (int i = 0; i < n->nout; i++) {
		int id = n->out[i];
		wanted[i] = id != NONE && (!E->sig->folded[id] || E->out_index[id] != NONE);
		if (wanted[i])
			src[i] = operand(&C, C.g->outputs[i], false).expr;
	}
	emit_adopt_symbols(E, &C);
	for (int i = 0; i < n->nout; i++)
		if (wanted[i])
			copy(E, ind, out_op(E, i).expr, NULL, src[i], NULL, bytes_of(E->sig, n->out[i]));
}

static void emit_if(Emit *E, const Control *c)
{
	if (c->branch != NONE) {
		emitf(E, "\t/* the condition is known at compile time: %s_branch */\n", c->tags[0]);
		emit_branch(E, c, 0, "\t");
		return;
	}
	Operand cond = in_op(E, 0);
	emitf(E, "\tif ((%s)[0]) {\n", cond.expr);
	emit_branch(E, c, 0, "\t\t");
	emitf(E, "\t} else {\n");
	emit_branch(E, c, 1, "\t\t");
	emitf(E, "\t}\n");
}

/* ---- Loop ------------------------------------------------------------- */

/* One iteration of sub k: iteration number (a C expression), condition,
 * carried values in; the body; scan outputs and carried values out. */
static void loop_iteration(Emit *E, const Control *c, int k, const char *iter, const char *ind,
                           const char **state)
{
	Node *n = E->n;
	Emit C = child(E, n, c, k);
	const Graph *b = C.g;
	int N = c->nstate, K = b->noutputs - 1 - N;
	const char **scan_dst = arena_array(E->a, (size_t)K + 1, sizeof *scan_dst);
	for (int j = 0; j < K; j++)
		scan_dst[j] = n->out[N + j] != NONE ? out_op(E, N + j).expr : NULL;
	if (C.plan->buf_of[b->inputs[0]] != NONE)
		emitf(&C, "%s(%s)[0] = %s;\n", ind, result(&C, b->inputs[0]).expr, iter);
	if (C.plan->buf_of[b->inputs[1]] != NONE)
		emitf(&C, "%s(%s)[0] = 1;\n", ind, result(&C, b->inputs[1]).expr);
	for (int i = 0; i < N; i++) {
		int id = b->inputs[2 + i];
		if (C.plan->buf_of[id] != NONE)
			copy(&C, ind, result(&C, id).expr, NULL, state[i], NULL, bytes_of(C.sig, id));
	}
	C.graph_calls(&C, ind);
	for (int j = 0; j < K; j++) {
		int id = b->outputs[1 + N + j];
		int64_t slice = bytes_of(C.sig, id);
		if (scan_dst[j])
			copy(&C, ind, scan_dst[j],
			     c->unrolled ? arena_printf(E->a, "%" PRId64, (int64_t)k * slice)
			                 : arena_printf(E->a, "(size_t)%s * %" PRId64, iter, slice),
			     operand(&C, id, false).expr, NULL, slice);
	}
	for (int i = 0; i < N; i++) {
		int id = b->outputs[1 + i];
		copy(&C, ind, state[i], NULL, operand(&C, id, false).expr, NULL, bytes_of(C.sig, id));
	}
	if (!C.sig->folded[b->outputs[0]])
		emitf(&C, "%sif (!(%s)[0]) /* the body's condition */\n%s\tbreak;\n", ind,
		    operand(&C, b->outputs[0], false).expr, ind);
	emit_adopt_symbols(E, &C);
}

static void emit_loop(Emit *E, const Control *c)
{
	Node *n = E->n;
	int N = c->nstate;
	const char **state = arena_array(E->a, (size_t)N + 1, sizeof *state);
	for (int k = 0; k < N; k++) {
		state[k] = state_expr(E, c, k, E->sig->dtypes[n->in[2 + k]]);
		copy(E, "\t", state[k], NULL, in_op(E, 2 + k).expr, NULL, bytes_of(E->sig, n->in[2 + k]));
	}
	if (c->trips == 0) {
		emitf(E, "\t/* no iteration runs */\n");
		return;
	}
	if (c->unrolled) {
		emitf(E, "\t/* the body needs the iteration number at compile time: unrolled */\n");
		emitf(E, "\tdo {\n");
		for (int i = 0; i < c->nsubs && control_sub_runs(c, i); i++) {
			emitf(E, "\t\t/* iteration %d */\n", i);
			loop_iteration(E, c, i, arena_printf(E->a, "%d", i), "\t\t", state);
		}
		emitf(E, "\t} while (0);\n");
		return;
	}
	if (c->trips < 0)
		emitf(E, "\tfor (int64_t i = 0;; i++) {\n");
	else
		emitf(E, "\tfor (int64_t i = 0; i < %" PRId64 "; i++) {\n", c->trips);
	loop_iteration(E, c, 0, "i", "\t\t", state);
	emitf(E, "\t}\n");
}

/* ---- Scan ------------------------------------------------------------- */

/* A tensor of shape s seen as [outer, D, inner bytes] around axis. */
static void around(const Shape *s, int axis, int dt, int64_t *outer, int64_t *D, int64_t *inner)
{
	*outer = 1;
	*inner = (int64_t)dtype_size(dt);
	for (int k = 0; k < axis; k++)
		*outer *= s->dims[k].size;
	for (int k = axis + 1; k < s->rank; k++)
		*inner *= s->dims[k].size;
	*D = s->dims[axis].size;
}

static void emit_scan(Emit *E, const Control *c)
{
	Node *n = E->n;
	bool v8 = n->since < 9;
	int first = v8 ? 1 : 0, N = c->nstate, M = c->nscan_in, K = c->nscan_out;
	const char **state = arena_array(E->a, (size_t)N + 1, sizeof *state);
	const char **scan_src = arena_array(E->a, (size_t)M + 1, sizeof *scan_src);
	const char **scan_dst = arena_array(E->a, (size_t)K + 1, sizeof *scan_dst);
	for (int k = 0; k < N; k++) {
		int id = n->in[first + k];
		state[k] = state_expr(E, c, k, E->sig->dtypes[id]);
		copy(E, "\t", state[k], NULL, in_op(E, first + k).expr, NULL, bytes_of(E->sig, id));
	}
	for (int j = 0; j < M; j++)
		scan_src[j] = in_op(E, first + N + j).expr;
	for (int j = 0; j < K; j++)
		scan_dst[j] = n->out[N + j] != NONE ? out_op(E, N + j).expr : NULL;
	if (c->trips == 0 || c->batch == 0) {
		emitf(E, "\t/* no iteration runs */\n");
		return;
	}
	const char *ind = "\t\t", *bvar = v8 ? "0" : NULL;
	if (c->batch > 1) {
		emitf(E, "\tfor (int64_t b = 0; b < %" PRId64 "; b++) {\n", c->batch);
		ind = "\t\t\t";
		bvar = "b";
	}
	emitf(E, "%.*sfor (int64_t i = 0; i < %" PRId64 "; i++) {\n", (int)strlen(ind) - 1, ind,
	    c->trips);
	Emit C = child(E, n, c, 0);
	const Graph *b = C.g;
	for (int j = 0; j < M; j++) {
		int full = n->in[first + N + j];
		int64_t outer, D, inner;
		around(&E->sig->shapes[full], c->in_axis[j], E->sig->dtypes[full], &outer, &D, &inner);
		const char *t = c->in_reverse[j] ? arena_printf(E->a, "%" PRId64 " - i", D - 1) : "i";
		slice_copy(&C, ind, true, scan_src[j], result(&C, b->inputs[N + j]).expr, outer, D, inner,
		           t, bvar);
	}
	/* Scan-8 keeps a state per batch element. */
	const char **soff = arena_array(E->a, (size_t)N + 1, sizeof *soff);
	for (int k = 0; k < N; k++) {
		int id = b->inputs[k];
		soff[k] = c->batch > 1 ? arena_printf(E->a, "(size_t)b * %" PRId64, bytes_of(C.sig, id))
		                       : NULL;
		if (C.plan->buf_of[id] != NONE)
			copy(&C, ind, result(&C, id).expr, NULL, state[k], soff[k], bytes_of(C.sig, id));
	}
	C.graph_calls(&C, ind);
	for (int j = 0; j < K; j++) {
		int id = b->outputs[N + j];
		if (!scan_dst[j])
			continue;
		int64_t outer, D, inner;
		around(&E->sig->shapes[n->out[N + j]], c->out_axis[j], C.sig->dtypes[id], &outer, &D,
		       &inner);
		const char *t = c->out_reverse[j] ? arena_printf(E->a, "%" PRId64 " - i", D - 1) : "i";
		slice_copy(&C, ind, false, scan_dst[j], operand(&C, id, false).expr, outer, D, inner, t,
		           bvar);
	}
	for (int k = 0; k < N; k++) {
		int id = b->outputs[k];
		copy(&C, ind, state[k], soff[k], operand(&C, id, false).expr, NULL, bytes_of(C.sig, id));
	}
	emit_adopt_symbols(E, &C);
	emitf(E, "%.*s}\n", (int)strlen(ind) - 1, ind);
	if (c->batch > 1)
		emitf(E, "\t}\n");
}

void emit_control(Emit *E)
{
	const Control *c = control_of(E->sig, E->n->id);
	KILN_ASSERT(c);
	emitf(E, "\tint st = 0;\n\t(void)st;\n");
	switch (c->op) {
	case OP_If: emit_if(E, c); break;
	case OP_Loop: emit_loop(E, c); break;
	default: emit_scan(E, c); break;
	}
}
