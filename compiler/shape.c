/*
 * shape.c - shape inference for one batch signature.
 *
 * A signature binds every graph input to a static shape: the batch axis
 * (axis 0 of an input whose first dim is symbolic, or --batch-dim) to the
 * batch size, and any other dim from --shape. Inference then walks the nodes
 * in order and asks each op's hook (in compiler/ops/) for its outputs' dtypes and
 * shapes. Hooks also evaluate shape arithmetic at compile time: small integer
 * values whose contents are known (weights, Constant, Shape, and what is
 * computed from them) are "folded", so Shape -> Gather -> Concat -> Reshape
 * chains end in static shapes. After inference every value of the graph has
 * a static shape, or the signature fails naming the tensor, node and dim.
 *
 * The IR keeps the declared (symbolic) shapes; each signature has its own
 * arrays indexed by value id.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"
#include "opdef.h"

/* ---- binding ---------------------------------------------------------- */

static const ShapeOverride *find_override(const BindOptions *o, const char *name)
{
	for (int i = 0; i < o->nshapes; i++)
		if (strcmp(o->shapes[i].input, name) == 0)
			return &o->shapes[i];
	return NULL;
}

static int find_batch_dim(const BindOptions *o, const char *name)
{
	for (int i = 0; i < o->nbatch_dims; i++)
		if (strcmp(o->batch_dims[i].input, name) == 0)
			return o->batch_dims[i].axis;
	return NONE;
}

/* Every option must name a real runtime input: a typo is an error, not a no-op. */
static void check_option_names(Graph *g, const BindOptions *o, Diag *d)
{
	for (int k = 0; k < o->nshapes + o->nbatch_dims + o->nfreezes; k++) {
		const char *name = k < o->nshapes ? o->shapes[k].input
		                   : k < o->nshapes + o->nbatch_dims
		                       ? o->batch_dims[k - o->nshapes].input
		                       : o->freezes[k - o->nshapes - o->nbatch_dims].input;
		bool found = false;
		for (int i = 0; i < g->ninputs && !found; i++)
			found = g->values[g->inputs[i]].kind == VAL_INPUT &&
			        strcmp(g->values[g->inputs[i]].name, name) == 0;
		if (!found)
			diag_fail(d, KILN_USAGE, "%s names \"%s\", which is not a graph input",
			          k < o->nshapes ? "--shape"
			          : k < o->nshapes + o->nbatch_dims ? "--batch-dim" : "--freeze", name);
	}
}

/* The --shape flag that fixes v: N on the batch axis (without one, the
 * first symbolic dim), its static dims, and its other symbols as <name>
 * placeholders for the user to fill in (kiln check prints it too). */
const char *shape_flag(Arena *a, const Value *v, int batch_axis)
{
	for (int k = 0; k < v->shape.rank && batch_axis < 0; k++)
		if (v->shape.dims[k].size < 0)
			batch_axis = k;
	const char *flag = arena_printf(a, "%s=", v->name);
	for (int k = 0; k < v->shape.rank; k++) {
		const Dim *dm = &v->shape.dims[k];
		const char *dim = k == batch_axis ? "N"
		                  : dm->size >= 0 ? arena_printf(a, "%lld", (long long)dm->size)
		                  : arena_printf(a, "<%s>", dm->param ? dm->param : "size");
		flag = arena_printf(a, "%s%s%s", flag, k ? "," : "", dim);
	}
	return flag;
}

/* --dim SYMBOL=V: the value of a symbolic dim, or -1. */
static int64_t find_dim(const BindOptions *o, const char *param)
{
	for (int i = 0; param && i < o->ndims; i++)
		if (strcmp(o->dims[i].symbol, param) == 0)
			return o->dims[i].value;
	return -1;
}

/* Every --dim must name a symbol of some input. */
static void check_dims(Graph *g, const BindOptions *o, Diag *d)
{
	for (int k = 0; k < o->ndims; k++) {
		bool found = false;
		for (int i = 0; i < g->ninputs && !found; i++) {
			const Value *v = &g->values[g->inputs[i]];
			for (int j = 0; v->kind == VAL_INPUT && j < v->shape.rank && !found; j++)
				found = v->shape.dims[j].param &&
				        strcmp(v->shape.dims[j].param, o->dims[k].symbol) == 0;
		}
		if (!found)
			diag_fail(d, KILN_USAGE, "--dim names \"%s\", which is not a symbolic dim of any "
			          "graph input", o->dims[k].symbol);
	}
}

/* The user's --shape flags against the dims the model declares: a static
 * dim given another size (the batch axis aside) is named as that, not found
 * later by a node downstream. A --shape of another rank replaces the
 * declared shape (some exports declare a wrong one). */
static void check_declared(const Graph *g, const BindOptions *o, Diag *d)
{
	for (int k = 0; k < o->nshapes; k++) {
		const ShapeOverride *ov = &o->shapes[k];
		for (int i = 0; i < g->ninputs; i++) {
			const Value *v = &g->values[g->inputs[i]];
			if (v->kind != VAL_INPUT || strcmp(v->name, ov->input) != 0 ||
			    v->shape.rank != ov->rank)
				continue;
			int batch_axis = find_batch_dim(o, v->name);
			for (int j = 0; j < ov->rank; j++)
				if (j != batch_axis && v->shape.dims[j].size >= 0 &&
				    v->shape.dims[j].size != ov->dims[j])
					diag_fail(d, KILN_SHAPE_ERROR, "--shape %s: dim %d is %lld; the model declares %lld",
					          ov->input, j, (long long)ov->dims[j],
					          (long long)v->shape.dims[j].size);
		}
	}
}

static void bind_inputs(Sig *s, const BindOptions *o, Diag *d)
{
	Graph *g = s->g;
	check_option_names(g, o, d);
	check_dims(g, o, d);
	if (o->check_declared)
		check_declared(g, o, d);
	/* Symbols of batch axes: the same name elsewhere is the batch too. */
	const char *batch_syms[64];
	int nsyms = 0;
	for (int i = 0; i < g->ninputs; i++) {
		const Value *v = &g->values[g->inputs[i]];
		if (v->kind != VAL_INPUT || v->shape.rank < 1)
			continue;
		int axis = find_batch_dim(o, v->name);
		if (axis == NONE && !find_override(o, v->name) && v->shape.dims[0].size < 0)
			axis = 0;
		if (axis != NONE && axis < v->shape.rank && v->shape.dims[axis].param && nsyms < 64)
			batch_syms[nsyms++] = v->shape.dims[axis].param;
	}
	for (int i = 0; i < g->ninputs; i++) {
		int id = g->inputs[i];
		const Value *v = &g->values[id];
		if (v->kind != VAL_INPUT)
			continue;
		if (v->type != TK_TENSOR)
			diag_fail(d, KILN_UNSUPPORTED, "graph input \"%s\" is a %s, not a tensor", v->name,
			          v->type == TK_SEQUENCE ? "sequence" : "non-tensor value");
		if (!dtype_valid(v->dtype))
			diag_fail(d, KILN_INVALID_MODEL, "graph input \"%s\" has no element type", v->name);
		Shape sh = v->shape;
		const ShapeOverride *ov = find_override(o, v->name);
		int axis = find_batch_dim(o, v->name);
		if (ov) {
			sh.rank = ov->rank;
			for (int k = 0; k < ov->rank; k++)
				sh.dims[k] = (Dim){ov->dims[k], NULL};
		}
		if (sh.rank < 0)
			diag_fail(d, KILN_SHAPE_ERROR,
			          "graph input \"%s\" has no declared shape: give it with --shape %s=d0,d1,...",
			          v->name, v->name);
		if (axis != NONE && axis >= sh.rank)
			diag_fail(d, KILN_USAGE, "--batch-dim %s=%d: the input has rank %d", v->name, axis,
			          sh.rank);
		if (axis == NONE && !ov && sh.rank > 0 && sh.dims[0].size < 0 &&
		    find_dim(o, sh.dims[0].param) < 0)
			axis = 0;
		for (int k = 0; k < sh.rank; k++) {
			int64_t fixed = k == axis ? -1 : find_dim(o, sh.dims[k].param);
			if (fixed >= 0)
				sh.dims[k] = (Dim){fixed, NULL};
			bool is_batch = k == axis;
			for (int j = 0; j < nsyms && !is_batch && sh.dims[k].param; j++)
				is_batch = strcmp(sh.dims[k].param, batch_syms[j]) == 0;
			if (is_batch && !ov)
				sh.dims[k] = (Dim){s->batch, NULL};
			else if (is_batch && k == axis)
				sh.dims[k] = (Dim){s->batch, NULL};
			if (sh.dims[k].size < 0 && k > 0 && axis == NONE)
				diag_fail(d, KILN_SHAPE_ERROR,
				          "graph input \"%s\" dim %d (%s) is not static: if it is the batch axis, "
				          "say so with --batch-dim %s=%d; else fix it with --shape %s=...",
				          v->name, k, sh.dims[k].param ? sh.dims[k].param : "unknown", v->name, k,
				          v->name);
			if (sh.dims[k].size < 0)
				diag_fail(d, KILN_SHAPE_ERROR,
				          "graph input \"%s\" dim %d (%s) is not static: fix it with --shape %s",
				          v->name, k, sh.dims[k].param ? sh.dims[k].param : "unknown",
				          shape_flag(s->a, v, axis));
		}
		char why[200];
		if (shape_size_problem(&sh, &g->model->limits, why, sizeof why))
			diag_fail(d, KILN_LIMIT, "graph input \"%s\": %s", v->name, why);
		s->shapes[id] = sh;
		s->dtypes[id] = v->dtype;
		for (int k = 0; k < o->nfreezes; k++) {
			const Tensor *t = o->freezes[k].value;
			if (strcmp(o->freezes[k].input, v->name) != 0)
				continue;
			if (!t)
				t = freeze_values(v->name, v->dtype, o->freezes[k].text, s->a, d);
			if (t->dtype != v->dtype || t->w.nelem != shape_nelem(&sh) || t->dtype == DT_STRING)
				diag_fail(d, KILN_USAGE, "frozen value of input \"%s\" has %lld elements; its "
				          "shape holds %lld", v->name, (long long)t->w.nelem,
				          (long long)shape_nelem(&sh));
			Folded *f = arena_alloc(s->a, sizeof *f);
			*f = (Folded){t->dtype, t->w.nelem, t->w.bytes};
			s->folded[id] = f;
		}
	}
}

/* ---- the walk --------------------------------------------------------- */

/* float8 (opset 19) and int4/uint4 (opset 21) values are compiled through
 * Cast, CastLike, QuantizeLinear and DequantizeLinear, held by Constant,
 * and moved by the ops that only reshape (views of the same bytes, packed
 * or not) and Transpose (nibble by nibble for 4-bit values); any other op
 * would compute on bit patterns or packed nibbles, so it is refused. Inputs
 * are checked before the op's hook reads any of them, outputs after. */
static bool narrow_type_op(int op)
{
	const OpDef *d = op_def(op);
	return d && d->narrow_types;
}

static void narrow_type_guard(const Sig *s, const Node *n, bool outputs, Diag *d)
{
	if (narrow_type_op(n->op))
		return;
	/* If, Loop and Scan carry float8 values whole or sliced by whole bytes
	 * (their bodies are guarded node by node); 4-bit ones would be sliced
	 * mid-byte, and ONNX Runtime 1.30 carries none through control flow. */
	const OpDef *def = op_def(n->op);
	bool carries_f8 = def && def->batch == BK_CONTROL;   /* If, Loop, Scan */
	int from = outputs ? n->nin : 0, to = outputs ? n->nin + n->nout : n->nin;
	for (int k = from; k < to; k++) {
		int id = k < n->nin ? n->in[k] : n->out[k - n->nin];
		int dt = id != NONE ? s->dtypes[id] : DT_UNDEFINED;
		if ((DT_IS_FLOAT8(dt) && !carries_f8) || DT_IS_4BIT(dt))
			diag_fail_node(d, s->g, n, KILN_UNSUPPORTED, "%s %s is %s; %s values are only "
			               "converted (Cast, CastLike, QuantizeLinear, DequantizeLinear) or moved "
			               "(Identity, Reshape, Flatten, Squeeze, Unsqueeze, Transpose%s)",
			               k < n->nin ? "input" : "output", s->g->values[id].name,
			               dtype_name(dt), DT_IS_FLOAT8(dt) ? "float8" : "4-bit",
			               DT_IS_FLOAT8(dt) ? ", If, Loop, Scan" : "");
	}
}

void shape_infer_nodes(Sig *s, Diag *d)
{
	Graph *g = s->g;
	char reason[512];
	for (int i = 0; i < g->nvalues; i++)
		if (g->values[i].kind == VAL_WEIGHT &&
		    shape_size_problem(&s->shapes[i], &g->model->limits, reason, sizeof reason))
			diag_fail(d, KILN_LIMIT, "weight \"%s\": %s", g->values[i].name, reason);
	for (int i = 0; i < g->nnodes; i++) {
		Node *n = &g->nodes[i];
		Infer x = {.sig = s, .g = g, .n = n, .d = d, .a = s->a, .infer_nodes = shape_infer_nodes,
		           .demand = peval_demand};
		const char *why = op_unsupported_reason(g, n, reason, sizeof reason);
		if (why)
			diag_fail_node(d, g, n, KILN_UNSUPPORTED, "%s", why);
		attr_check_types(g, n, d);
		InferHook hook = op_infer_hook(n->op);
		if (!hook)
			diag_fail_node(d, g, n, KILN_UNSUPPORTED, "no shape inference for this op yet");
		narrow_type_guard(s, n, false, d);
		hook(&x);
		narrow_type_guard(s, n, true, d);
		peval_node(&x);
		for (int k = 0; k < n->nout; k++)
			if (n->out[k] != NONE && s->shapes[n->out[k]].rank < 0)
				diag_fail_node(d, g, n, KILN_INTERNAL, "output %d got no shape", k);
	}
}

void shape_infer(Sig *s, const BindOptions *o, Arena *a, Diag *d)
{
	Graph *g = s->g;
	shape_sig_init(s, a);
	bind_inputs(s, o, d);
	shape_infer_nodes(s, d);
	for (int i = 0; i < g->noutputs; i++)
		if (s->shapes[g->outputs[i]].rank < 0)
			diag_fail(d, KILN_SHAPE_ERROR, "graph output \"%s\" has no static shape",
			          g->values[g->outputs[i]].name);
}
