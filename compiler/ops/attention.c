/*
 * ops/attention.c - the fused attention node: kiln's own op KilnAttention
 * (ops_kiln.def), made by passes/attention.c from MatMul, scale, mask Add,
 * Softmax and MatMul (docs/optimizer.md), and its record. Its inputs are Q, K and V as
 * the 4-D tensors the head split reads (before its Transposes) and an
 * optional mask; the attributes say how to read them:
 *   kiln.perm_q, kiln.perm_k, kiln.perm_v  the logical [batch, heads, len,
 *       dim] view of the input is Transpose(input, perm);
 *   kiln.perm_y  the output is Transpose(logical [batch, heads, q_len,
 *       v_dim], perm), whose last axis stays last (the head merge);
 *   kiln.scale   the factor on Q . K.
 * The 3-D form (sequence-first nn.MultiheadAttention, ParT: batch and heads
 * merged into one axis, [len, batch*heads, dim]): Q, K and V all 3-D, each
 * read as 4-D with a leading unit axis, so heads = 1 and the perms keep
 * their 4-D meaning (the logical heads axis is that unit axis 0; perm_y[0]
 * must be 1, the output being the 4-D result without its leading unit
 * axis); a 3-D mask [batch*heads, q_len, kv_len] is read as [b, 1, q, kv].
 * No model can name the op (the loader refuses kiln.* attributes and no
 * domain maps to kiln's); everything is still checked here as for any node,
 * with one error line naming it.
 */
#include <string.h>

#include "emit_c.h"
#include "ops/ops.h"
#include "opdef.h"

static const char *perm_of(const Node *n, const char *name, int64_t perm[4])
{
	const Attr *a = node_attr(n, name);
	if (!a || a->type != AT_INTS || a->n != 4)
		return "needs four ints in each kiln.perm_* attribute";
	bool seen[4] = {false, false, false, false};
	for (int k = 0; k < 4; k++) {
		if (a->ints[k] < 0 || a->ints[k] > 3 || seen[a->ints[k]])
			return "a kiln.perm_* attribute is not a permutation of 0..3";
		seen[a->ints[k]] = true;
		perm[k] = a->ints[k];
	}
	return NULL;
}

/* The logical view of a 4-D contiguous tensor read as Transpose(x, perm). */
static void view(const Shape *s, const int64_t perm[4], int64_t size[4], int64_t stride[4])
{
	int64_t st[4], acc = 1;
	for (int k = 3; k >= 0; k--) {
		st[k] = acc;
		acc *= s->dims[k].size;
	}
	for (int k = 0; k < 4; k++) {
		size[k] = s->dims[perm[k]].size;
		stride[k] = st[perm[k]];
	}
}

/* s with a unit axis inserted at axis `at`. */
static Shape unit_at(const Shape *s, int at)
{
	Shape r = {.rank = s->rank + 1};
	for (int d = 0, j = 0; d < r.rank; d++)
		r.dims[d] = d == at ? (Dim){1, NULL} : s->dims[j++];
	return r;
}

const char *attention_view(const int64_t perm[4][4], float scale, const Shape *q, const Shape *k,
                           const Shape *v, const Shape *mask, kiln_attention_params *p, Shape *out)
{
	const int64_t *pq = perm[0], *pk = perm[1], *pv = perm[2], *py = perm[3];
	if (py[3] != 3)
		return "kiln.perm_y must keep the last axis last";
	bool three = q->rank == 3;
	if (three && (k->rank != 3 || v->rank != 3 || py[0] != 1))
		return "a 3-D attention needs Q, K and V 3-D and kiln.perm_y[0] = 1";
	Shape q4, k4, v4, m4;
	if (three) {
		q4 = unit_at(q, 0), k4 = unit_at(k, 0), v4 = unit_at(v, 0);
		q = &q4, k = &k4, v = &v4;
		if (mask && mask->rank == 3) {
			m4 = unit_at(mask, 1);
			mask = &m4;
		}
	}
	if (q->rank != 4 || k->rank != 4 || v->rank != 4)
		return "Q, K and V must be 4-D (or all 3-D)";
	for (int d = 0; d < 4; d++)
		if (q->dims[d].size < 0 || k->dims[d].size < 0 || v->dims[d].size < 0)
			return "Q, K and V need known shapes";
	memset(p, 0, sizeof *p);
	int64_t qs[4], ks[4], vs[4];
	view(q, pq, qs, p->q_stride);
	view(k, pk, ks, p->k_stride);
	view(v, pv, vs, p->v_stride);
	if (qs[0] != ks[0] || qs[0] != vs[0] || qs[1] != ks[1] || qs[1] != vs[1])
		return "Q, K and V differ in batch or heads";
	if (qs[3] != ks[3])
		return "Q and K differ in head size";
	if (ks[2] != vs[2])
		return "K and V differ in length";
	p->batch = qs[0];
	p->heads = qs[1];
	p->q_len = qs[2];
	p->kv_len = ks[2];
	p->head_dim = qs[3];
	p->v_dim = vs[3];
	p->scale = scale;
	int64_t ysz[4] = {p->batch, p->heads, p->q_len, p->v_dim};
	out->rank = 4;
	for (int d = 0; d < 4; d++)
		out->dims[d] = (Dim){ysz[py[d]], NULL};
	int64_t acc = 1, yst[4];
	for (int d = 3; d >= 0; d--) {
		yst[py[d]] = acc;
		acc *= out->dims[d].size;
	}
	for (int d = 0; d < 3; d++)
		p->y_stride[d] = yst[d];
	if (three) {   /* without the leading unit axis (py[0] = 1: heads, 1) */
		out->rank = 3;
		for (int d = 0; d < 3; d++)
			out->dims[d] = out->dims[d + 1];
	}
	if (mask) {
		int64_t want[4] = {p->batch, p->heads, p->q_len, p->kv_len};
		if (mask->rank < 0 || mask->rank > 4)
			return "the mask has more than 4 axes";
		int off = 4 - mask->rank;
		acc = 1;
		for (int d = 3; d >= 0; d--) {
			int64_t m = d >= off ? mask->dims[d - off].size : 1;
			if (m != 1 && m != want[d])
				return "the mask does not broadcast to [batch, heads, q_len, kv_len]";
			p->mask_stride[d] = m == 1 ? 0 : acc;
			acc *= m;
		}
	}
	return NULL;
}

const char *attention_perms(const Node *n, int64_t perm[4][4])
{
	static const char *const names[4] = {"kiln.perm_q", "kiln.perm_k", "kiln.perm_v",
	                                     "kiln.perm_y"};
	for (int i = 0; i < 4; i++) {
		const char *why = perm_of(n, names[i], perm[i]);
		if (why)
			return why;
	}
	return NULL;
}

const char *attention_layout(const Node *n, const Shape *q, const Shape *k, const Shape *v,
                             const Shape *mask, kiln_attention_params *p, Shape *out)
{
	int64_t perm[4][4];
	const char *why = attention_perms(n, perm);
	if (why)
		return why;
	const Attr *sc = node_attr(n, "kiln.scale");
	return attention_view(perm, sc && sc->type == AT_FLOAT ? sc->f : 1.0f, q, k, v, mask, p, out);
}

static void attention_infer(Infer *x)
{
	Node *n = x->n;
	if (n->nin < 3 || n->nin > 4 || n->nout != 1)
		infer_fail(x, KILN_INVALID_MODEL, "KilnAttention needs inputs Q, K, V and an optional "
		           "mask, and one output");
	for (int i = 0; i < n->nin; i++)
		if (n->in[i] == NONE || infer_dtype(x, i) != DT_FLOAT)
			infer_fail(x, KILN_UNSUPPORTED, "KilnAttention: input %d must be float32", i);
	kiln_attention_params p;
	Shape y;
	const char *why = attention_layout(n, infer_shape(x, 0), infer_shape(x, 1),
	                                   infer_shape(x, 2), n->nin > 3 ? infer_shape(x, 3) : NULL,
	                                   &p, &y);
	if (why)
		infer_fail(x, KILN_SHAPE_ERROR, "KilnAttention: %s", why);
	infer_set_output(x, 0, DT_FLOAT, &y);
}

static int64_t attention_scratch_bytes(const Sig *s, int node, Arena *a)
{
	(void)a;
	const Node *n = &s->g->nodes[node];
	kiln_attention_params p;
	Shape y;
	if (attention_layout(n, &s->shapes[n->in[0]], &s->shapes[n->in[1]], &s->shapes[n->in[2]],
	                     n->nin > 3 ? &s->shapes[n->in[3]] : NULL, &p, &y))
		return 0;
	return kiln_attention_work_floats(p.head_dim, p.kv_len, p.v_dim) * (int64_t)sizeof(float);
}

/* ---- the record (opdef.h) ------------------------------------------------ */

const OpDef ops_attention_defs[] = {
	{.op = OP_KilnAttention, .infer = attention_infer, .emit = emit_attention,
	 .batch = BK_ATTENTION, .scratch = attention_scratch_bytes, .types = OT_F32,
	 .note = "softmax(scale Q Kᵀ + mask) V over [batch, heads, len, dim] views of its "
	         "inputs (the head split's Transposes as strides), from MatMul, scale, mask Add, "
	         "Softmax, MatMul (passes/attention.c)"},
	{.op = NONE},
};
