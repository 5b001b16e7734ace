/*
 * passes/qdq.c - QDQ-quantized products computed exactly in integers.
 *
 * A quantized model as ONNX Runtime's quantization tool (QDQ format) and
 * other exporters write it computes a layer as
 *
 *     QuantizeLinear(Conv | MatMul | Gemm(DequantizeLinear(x_q),
 *                                        DequantizeLinear(w_q) [, DequantizeLinear(b_int32)]))
 *
 * Run as written, the product is a float32 sum of float32 products and the
 * QuantizeLinear divides it by y_scale in float32: for 16-bit activations
 * 0.2-1 % of the elements land on the other side of a rounding boundary
 * than the float64 value of the same expression, and a step off propagates.
 * Here the chain becomes one KilnQLinearConv or KilnQLinearMatMul (kiln's
 * own ops, records in ops/quant.c): the sum of (x_q - zx) (w_q - zw) in
 * 64-bit integers, then
 *     y_q = saturate(round_half_even((sum sx sw + b sb) / sy) + zy)
 * in double (kiln_q8_output.exact), which is the chain's value in float64
 * (sx sw and b sb are exact in double). The kiln op takes 16-bit
 * operands and the bias with its own scale (QLinearMatMul: inputs 8 and 9;
 * QLinearConv: input 9 next to B), which the ONNX ops do not.
 *
 * Matched: x's DQ per tensor; w a constant behind a DQ per tensor or per
 * output channel (Conv axis 0; MatMul axis 1 of a 2-D B; Gemm axis 0 with
 * transB, 1 without); the bias an int32 constant behind a DQ of zero point
 * 0, per tensor or per output channel; Gemm with alpha = beta = 1 and no
 * transA (transB: a Transpose of the integer weight, which fold folds);
 * the product's only reader a per-tensor QuantizeLinear to int8, uint8,
 * int16 or uint16, or a Relu read only by one (kiln.relu: the result is
 * raised to at least zy, since Q is monotone and Q(0) = zy); every scale
 * and zero point a constant, scales float32. The DQ nodes stay until dce
 * finds them unread.
 */
#include "rewrite.h"

typedef struct Dq {
	int x, s, z;         /* DQ's inputs (z may be NONE) */
	int axis;            /* normalized; meaningful when per channel */
	int64_t nscale;      /* scale elements */
} Dq;

/* The rank (and, for constants, the dims) of id: signature 0's shape; the
 * batch may vary across signatures, the rank does not. */
static const Shape *shape0(PassCtx *c, int id)
{
	return rw_shape_in(c, id, 0);
}

static bool is_qtype(int dt)
{
	return dt == DT_UINT8 || dt == DT_INT8 || dt == DT_UINT16 || dt == DT_INT16;
}

/* The DequantizeLinear producing v, with constant float32 scale and zero
 * point and no blocks; false if v has another producer. */
static bool dq_of(PassCtx *c, int v, Dq *o)
{
	Graph *g = c->g;
	if (v == NONE || g->values[v].kind != VAL_TEMP || g->values[v].producer == NONE)
		return false;
	int p = g->values[v].producer;
	const Node *n = &g->nodes[p];
	if (c->dead[p] || n->op != OP_DequantizeLinear || n->nin < 2 || n->in[1] == NONE ||
	    rw_attr_int(n, "block_size", 0) != 0 || rw_dtype(c, n->in[1]) != DT_FLOAT ||
	    !rw_is_const(c, n->in[1]))
		return false;
	o->x = n->in[0];
	o->s = n->in[1];
	o->z = n->nin > 2 ? n->in[2] : NONE;
	if (o->z != NONE && !rw_is_const(c, o->z))
		return false;
	const Shape *xs = shape0(c, o->x), *ss = rw_static_shape(c, o->s);
	if (!xs || !ss)
		return false;
	o->nscale = shape_nelem(ss);
	int64_t axis = rw_attr_int(n, "axis", 1);
	o->axis = (int)(axis < 0 ? axis + xs->rank : axis);
	return true;
}

/* A per-tensor DQ, or one per index of axis `want` (len elements). */
static bool dq_layout(PassCtx *c, const Dq *q, int want, int64_t len)
{
	if (q->nscale == 1)
		return true;
	const Shape *xs = shape0(c, q->x);
	return want >= 0 && q->axis == want && xs && want < xs->rank && q->nscale == len;
}

/* An int32 bias behind a DQ with zero point 0 (or none): per tensor or per
 * output channel of len. */
static bool bias_ok(PassCtx *c, const Dq *b, int64_t len)
{
	if (rw_dtype(c, b->x) != DT_INT32 || !rw_is_const(c, b->x))
		return false;
	const Shape *bs = rw_static_shape(c, b->x);
	if (!bs || bs->rank != 1 || bs->dims[0].size != len || !dq_layout(c, b, 0, len))
		return false;
	if (b->z != NONE) {
		int64_t nz;
		double *z = rw_const_f64(c, b->z, &nz, 1 << 20);
		if (!z)
			return false;
		for (int64_t k = 0; k < nz; k++)
			if (z[k] != 0)
				return false;
	}
	return true;
}

static bool rewrite(PassCtx *c, int i)
{
	Graph *g = c->g;
	const Node *op = &g->nodes[i];
	if (op->nout != 1 || op->nin < 2 || rw_dtype(c, op->out[0]) != DT_FLOAT)
		return false;
	int y = op->out[0];
	int qi = rw_sole_user(c, y), relu = NONE;
	if (qi == NONE || g->values[y].is_output)
		return false;
	const Node *q = &g->nodes[qi];
	if (q->op == OP_Relu && q->nout == 1 && !g->values[q->out[0]].is_output) {
		/* Conv -> Relu -> Q: Q(max(v, 0)) = max(Q(v), zy). */
		relu = qi;
		y = q->out[0];
		qi = rw_sole_user(c, y);
		if (qi == NONE)
			return false;
		q = &g->nodes[qi];
	}
	if (q->op != OP_QuantizeLinear || q->in[0] != y || q->nin < 2 ||
	    rw_attr_int(q, "block_size", 0) != 0 || rw_dtype(c, q->in[1]) != DT_FLOAT ||
	    !rw_is_const(c, q->in[1]))
		return false;
	int yz = q->nin > 2 ? q->in[2] : NONE;
	int ydt = rw_dtype(c, q->out[0]);
	const Shape *ss = rw_static_shape(c, q->in[1]);
	if (!is_qtype(ydt) || !ss || shape_nelem(ss) != 1 || (yz != NONE && !rw_is_const(c, yz)) ||
	    (yz == NONE && ydt != DT_UINT8))
		return false;
	Dq a, w, b = {.x = NONE, .s = NONE, .z = NONE};
	if (!dq_of(c, op->in[0], &a) || !dq_of(c, op->in[1], &w) || a.nscale != 1 ||
	    !is_qtype(rw_dtype(c, a.x)) || !is_qtype(rw_dtype(c, w.x)) || !rw_is_const(c, w.x))
		return false;
	const Shape *ws = rw_static_shape(c, w.x), *as = shape0(c, a.x);
	if (!ws || !as)
		return false;
	bool conv = op->op == OP_Conv, gemm = op->op == OP_Gemm, trans_b = false;
	int64_t nout;
	if (conv) {
		nout = ws->dims[0].size;
		if (op->nin > 3 || !dq_layout(c, &w, 0, nout))
			return false;
	} else if (op->op == OP_MatMul || gemm) {
		if (ws->rank != 2 || as->rank < 2 || op->nin > (gemm ? 3 : 2))
			return false;
		if (gemm) {
			trans_b = rw_attr_int(op, "transB", 0) != 0;
			if (rw_attr_int(op, "transA", 0) || rw_attr_float(op, "alpha", 1.0f) != 1.0f ||
			    rw_attr_float(op, "beta", 1.0f) != 1.0f || as->rank != 2)
				return false;
		}
		nout = ws->dims[trans_b ? 0 : 1].size;
		if (!dq_layout(c, &w, trans_b ? 0 : 1, nout))
			return false;
	} else {
		return false;
	}
	if (op->nin > 2 && op->in[2] != NONE &&
	    (!dq_of(c, op->in[2], &b) || !bias_ok(c, &b, nout)))
		return false;
	/* The node: x, sx, zx, w, sw, zw, sy, zy, bias, bias scale. */
	const char *name = op->name[0] ? op->name : "qdq";
	int wq = w.x;
	if (trans_b) {
		wq = rw_new_value(c, name, rw_dtype(c, w.x));
		Attr perm = rw_ints_attr(c, "perm", (const int64_t[]){1, 0}, 2);
		rw_add_node(c, i, "Transpose", &w.x, 1, &wq, 1, &perm, 1, name);
	}
	int in[10] = {a.x, a.s, a.z, wq, w.s, w.z, q->in[1], yz, b.x, b.s};
	int nin = b.x != NONE ? 10 : 8;
	Attr *at = arena_array(c->a, (size_t)op->nattrs + 1, sizeof *at);
	int nat = 0;
	if (conv)
		for (int k = 0; k < op->nattrs; k++)
			at[nat++] = op->attrs[k];
	if (relu != NONE)
		at[nat++] = rw_int_attr(c, "kiln.relu", 1);
	int out = q->out[0];
	rw_add_fused(c, qi, conv ? OP_KilnQLinearConv : OP_KilnQLinearMatMul, in, nin, &out, 1, at,
	             nat, name);
	rw_kill(c, qi);
	if (relu != NONE)
		rw_kill(c, relu);
	rw_kill(c, i);
	c->stat->fused += relu != NONE ? 3 : 2;
	return true;
}

int pass_qdq(PassCtx *c)
{
	int changes = 0;
	if (c->nsigs == 0)
		return 0;
	int nnodes = c->g->nnodes;
	for (int i = 0; i < nnodes; i++) {
		int op = c->g->nodes[i].op;
		if (!c->dead[i] && (op == OP_Conv || op == OP_MatMul || op == OP_Gemm) && rewrite(c, i))
			changes++;
	}
	return changes;
}
