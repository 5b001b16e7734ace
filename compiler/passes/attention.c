/*
 * passes/attention.c - scaled dot-product attention as exporters write it
 * becomes one fused node (kiln's own op KilnAttention, ops/attention.c),
 * which runs kiln_f32_attention: scores of a few query rows of one head at
 * a time, never the [batch, heads, q_len, kv_len] tensor.
 *
 * The pattern, from the Softmax (last axis, float32) outwards:
 *   scores = [Add(mask)] of [Mul/Div by a scalar constant]... of
 *            [Transpose [0,1,3,2]] of [Reshape [B*H,S,S] -> [B,H,S,S]] of
 *            MatMul(A, B)
 *   result = MatMul(Softmax, V), or MatMul(Reshape [B,H,S,S] -> [B*H,S,S]
 *            of the Softmax, V) followed by the Reshape back to 4-D;
 *            then a Transpose of the result that keeps the last axis last
 *            (the head merge) is written directly.
 * PyTorch's MultiheadAttention-style export (Reshape, Transpose [0,2,1,3],
 * K with [0,2,3,1], MatMul, Div or Mul, Add mask, Softmax, MatMul,
 * Transpose) and kiln's own lowering of the Keras Einsum equations
 * (passes/einsum.c: scores come out transposed and merged to 3-D) both
 * match. Each MatMul operand is followed back through a merge Reshape
 * (4-D -> [B*H, S, D]) and Transposes of 4-D tensors to the tensor they
 * transpose: the fused node reads that tensor with strides (kiln.perm_*),
 * and the Transposes die if nothing else reads them. Everything between
 * the two MatMuls must have no other reader. The rewrite is made only if
 * Q, K and V agree in batch and heads in every signature (no broadcasting
 * between them), the mask broadcasts to the scores, and the result keeps
 * its shape; otherwise the nodes stay as they are (the GEMM and Softmax
 * kernels run them).
 */
#include <math.h>
#include <string.h>

#include "ops/ops.h"
#include "rewrite.h"

typedef struct Match {
	int nkill;
	int kill[16];
	float scale;
	bool three;          /* the 3-D form: Q, K, V [B*H, len, dim] transposed from 3-D
	                        tensors, heads = 1 (ops/attention.c) */
	bool swap;           /* the scores are (A . B) transposed: Q = B^T, K = A */
	int mm;              /* the scores MatMul */
	int mask;
} Match;

static const Node *made_by(PassCtx *c, int id, int op)
{
	const Value *v = &c->g->values[id];
	if (v->kind != VAL_TEMP || v->producer == NONE || c->dead[v->producer])
		return NULL;
	const Node *n = &c->g->nodes[v->producer];
	return n->op == op && n->nout == 1 ? n : NULL;
}

/* Read only by the next node of the pattern (not a graph output). */
static bool inner(PassCtx *c, int id)
{
	return rw_sole_user(c, id) != NONE && !c->g->values[id].is_output;
}

static int rank_all(PassCtx *c, int id)
{
	int r = -2;
	for (int k = 0; k < c->nsigs; k++) {
		const Shape *s = rw_shape_in(c, id, k);
		if (!s || (r != -2 && s->rank != r))
			return -1;
		r = s->rank;
	}
	return r;
}

/* Transpose t's perm of rank r (3 or 4), checked to be one. */
static bool perm_r(const Node *t, int r, int64_t *p)
{
	const Attr *a = rw_attr(t, "perm");
	bool seen[4] = {false, false, false, false};
	for (int k = 0; k < r; k++)
		p[k] = r - 1 - k;
	if (!a)
		return true;
	if (a->type != AT_INTS || a->n != r)
		return false;
	for (int k = 0; k < r; k++) {
		if (a->ints[k] < 0 || a->ints[k] >= r || seen[a->ints[k]])
			return false;
		seen[a->ints[k]] = true;
		p[k] = a->ints[k];
	}
	return true;
}

static bool perm4(const Node *t, int64_t p[4])
{
	return perm_r(t, 4, p);
}

/* The 3-D form's perm t of [B*H, len, dim] in the 4-D convention of
 * ops/attention.c (a leading unit axis, the logical heads): [t0+1, 0, t1+1, t2+1]. */
static void perm3_as4(const int64_t t[3], int64_t p[4])
{
	p[0] = t[0] + 1, p[1] = 0, p[2] = t[1] + 1, p[3] = t[2] + 1;
}

/* y = Reshape(x) with x [a, b, c, d] and y [a*b, c, d] (merge) or the other
 * way round (split), in every signature. */
static bool merges(PassCtx *c, int x4, int y3)
{
	for (int k = 0; k < c->nsigs; k++) {
		const Shape *a = rw_shape_in(c, x4, k), *b = rw_shape_in(c, y3, k);
		if (!a || !b || a->rank != 4 || b->rank != 3 ||
		    b->dims[0].size != a->dims[0].size * a->dims[1].size ||
		    b->dims[1].size != a->dims[2].size || b->dims[2].size != a->dims[3].size)
			return false;
	}
	return true;
}

static void kill_later(Match *m, const Node *n, PassCtx *c)
{
	if (m->nkill < 16)
		m->kill[m->nkill++] = (int)(n - c->g->nodes);
}

static bool scalar(PassCtx *c, int id, double *v)
{
	if (!rw_is_const(c, id) || c->g->values[id].weight->nelem != 1 ||
	    c->g->values[id].dtype != DT_FLOAT)
		return false;
	int64_t n;
	double *d = rw_const_f64(c, id, &n, 1);
	if (!d || !isfinite(d[0]))
		return false;
	*v = d[0];
	return true;
}

/* x = Mul(y, s), Mul(s, y) or Div(y, s) by a scalar constant s (not 0),
 * read only by the pattern: y, and s applied to m's scale. */
static const Node *scaled(PassCtx *c, Match *m, int x, int *y)
{
	const Node *n;
	double v;
	if (!inner(c, x))
		return NULL;
	if ((n = made_by(c, x, OP_Mul)) && n->nin == 2)
		for (int o = 0; o < 2; o++)
			if (scalar(c, n->in[o], &v)) {
				m->scale *= (float)v;
				*y = n->in[1 - o];
				return n;
			}
	if ((n = made_by(c, x, OP_Div)) && n->nin == 2 && scalar(c, n->in[1], &v) && v != 0.0) {
		m->scale /= (float)v;
		*y = n->in[0];
		return n;
	}
	return NULL;
}

/* A MatMul operand as Transpose(base, perm) of a float32 4-D tensor (or, in
 * the 3-D form, of a 3-D one, perm in the 4-D convention: perm3_as4). With
 * scale (Q and K, not V), a Mul or Div by a scalar constant on the way (ParT
 * scales Q before the product) multiplies m->scale and dies with the pattern. */
static bool operand(PassCtx *c, Match *m, int id, bool scale, int *base, int64_t perm[4])
{
	int R = m->three ? 3 : 4;
	int64_t p[4] = {0, 1, 2, 3};
	int r = rank_all(c, id);
	if (r == 3 && !m->three) {
		const Node *rs = made_by(c, id, OP_Reshape);
		if (!rs || !merges(c, rs->in[0], id))
			return false;
		id = rs->in[0];
	} else if (r != R) {
		return false;
	}
	for (;;) {
		const Node *t = made_by(c, id, OP_Transpose), *s;
		int y;
		if (t && t->nin == 1) {
			int64_t tp[4], np[4];
			if (!perm_r(t, R, tp))
				return false;
			for (int k = 0; k < R; k++)
				np[k] = tp[p[k]];
			memcpy(p, np, sizeof np);
			id = t->in[0];
		} else if (scale && m->nkill < 12 && rank_all(c, id) == R &&
		           (s = scaled(c, m, id, &y))) {
			kill_later(m, s, c);
			id = y;
		} else {
			break;
		}
	}
	if (m->three)
		perm3_as4(p, perm);
	else
		memcpy(perm, p, sizeof p);
	*base = id;
	return rw_dtype(c, id) == DT_FLOAT && rank_all(c, id) == R;
}

/* x: the scores (or what they are made of), read once. */
static bool scores(PassCtx *c, int x, Match *m, int depth)
{
	if (depth > 8 || !inner(c, x) || m->nkill >= 14)
		return false;
	const Node *n;
	int y;
	if ((n = scaled(c, m, x, &y))) {
		kill_later(m, n, c);
		return scores(c, y, m, depth + 1);
	}
	if (made_by(c, x, OP_Mul) || made_by(c, x, OP_Div))
		return false;
	if ((n = made_by(c, x, OP_Transpose))) {
		int64_t p[4];
		int R = m->three ? 3 : 4;   /* the two last axes swapped */
		if (rank_all(c, x) != R || !perm_r(n, R, p) || p[R - 1] != R - 2 || p[R - 2] != R - 1 ||
		    p[0] != 0 || (R == 4 && p[1] != 1))
			return false;
		m->swap = !m->swap;
		kill_later(m, n, c);
		return scores(c, n->in[0], m, depth + 1);
	}
	if ((n = made_by(c, x, OP_Reshape))) {
		if (!merges(c, x, n->in[0]))
			return false;
		kill_later(m, n, c);
		return scores(c, n->in[0], m, depth + 1);
	}
	if ((n = made_by(c, x, OP_MatMul)) && n->nin == 2 && rw_dtype(c, x) == DT_FLOAT) {
		m->mm = (int)(n - c->g->nodes);
		kill_later(m, n, c);
		return true;
	}
	return false;
}

static bool softmax_last_axis(PassCtx *c, const Node *sm)
{
	if (sm->nin != 1 || sm->nout != 1 || rw_dtype(c, sm->in[0]) != DT_FLOAT)
		return false;
	int r = rank_all(c, sm->in[0]);
	if (r != 4 && r != 3)
		return false;
	int64_t axis = rw_attr_int(sm, "axis", sm->since < 13 ? 1 : -1);
	return axis == r - 1 || axis == -1;
}

static bool fuse_one(PassCtx *c, int i)
{
	Graph *g = c->g;
	const Node *sm = &g->nodes[i];
	if (!softmax_last_axis(c, sm))
		return false;
	/* 4-D scores [batch, heads, q, kv], or the 3-D form's [batch*heads, q, kv] */
	bool three = rank_all(c, sm->in[0]) == 3;
	Match m;
	int x = sm->in[0];
	const Node *add = made_by(c, x, OP_Add);
	bool ok = false;
	for (int o = 0; add && o < 2 && !ok; o++) {
		memset(&m, 0, sizeof m);
		m.scale = 1.0f;
		m.three = three;
		m.mask = add->in[1 - o];
		ok = inner(c, x) && rw_dtype(c, m.mask) == DT_FLOAT && scores(c, add->in[o], &m, 0);
		if (ok)
			kill_later(&m, add, c);
	}
	if (!ok) {
		memset(&m, 0, sizeof m);
		m.scale = 1.0f;
		m.three = three;
		m.mask = NONE;
		if (!scores(c, x, &m, 0))
			return false;
	}
	kill_later(&m, sm, c);
	/* Q and K from the scores MatMul */
	const Node *mm = &g->nodes[m.mm];
	int base[4];
	int64_t perm[4][4], pa[4], pb[4];
	int a, b;
	if (!operand(c, &m, mm->in[0], true, &a, pa) || !operand(c, &m, mm->in[1], true, &b, pb))
		return false;
	int64_t *pq = perm[0], *pk = perm[1];
	if (!m.swap) {  /* Q = A, K = B^T */
		base[0] = a, base[1] = b;
		memcpy(pq, pa, sizeof pa);
		pk[0] = pb[0], pk[1] = pb[1], pk[2] = pb[3], pk[3] = pb[2];
	} else {        /* Q = B^T, K = A */
		base[0] = b, base[1] = a;
		pq[0] = pb[0], pq[1] = pb[1], pq[2] = pb[3], pq[3] = pb[2];
		memcpy(pk, pa, sizeof pa);
	}
	/* the product with V */
	int y = sm->out[0];
	if (!inner(c, y))
		return false;
	const Node *u = &g->nodes[rw_sole_user(c, y)];
	if (u->op == OP_Reshape && u->nout == 1 && merges(c, y, u->out[0]) && inner(c, u->out[0])) {
		kill_later(&m, u, c);
		y = u->out[0];
		u = &g->nodes[rw_sole_user(c, y)];
	}
	if (u->op != OP_MatMul || u->nin != 2 || u->in[0] != y || u->in[1] == y ||
	    !operand(c, &m, u->in[1], false, &base[2], perm[2]))
		return false;
	kill_later(&m, u, c);
	int out = u->out[0];
	if (three) {
		/* the 3-D result [B, q, v_dim] as a Transpose of the 4-D one without its
		 * unit axis (perm3_as4), then a Transpose keeping the last axis last */
		int64_t t[3] = {0, 1, 2};
		const Node *tn = inner(c, out) ? &g->nodes[rw_sole_user(c, out)] : NULL;
		if (tn && tn->op == OP_Transpose && tn->nin == 1 && tn->nout == 1 &&
		    perm_r(tn, 3, t) && t[2] == 2) {
			kill_later(&m, tn, c);
			out = tn->out[0];
		} else {
			t[0] = 0, t[1] = 1, t[2] = 2;
		}
		static const int64_t logical[3] = {0, 2, 3};   /* [B, q, v] in the 4-D result */
		perm[3][0] = 1;
		for (int k = 0; k < 3; k++)
			perm[3][k + 1] = logical[t[k]];
	} else if (rank_all(c, out) == 3) {
		if (!inner(c, out))
			return false;
		const Node *r = &g->nodes[rw_sole_user(c, out)];
		if (r->op != OP_Reshape || r->nout != 1 || !merges(c, r->out[0], out))
			return false;
		kill_later(&m, r, c);
		out = r->out[0];
	}
	for (int k = 0; k < 4 && !three; k++)
		perm[3][k] = k;
	if (!three && inner(c, out)) {
		const Node *t = &g->nodes[rw_sole_user(c, out)];
		int64_t tp[4];
		if (t->op == OP_Transpose && t->nin == 1 && t->nout == 1 && perm4(t, tp) && tp[3] == 3) {
			memcpy(perm[3], tp, sizeof tp);
			kill_later(&m, t, c);
			out = t->out[0];
		}
	}
	if (m.nkill >= 16)
		return false;
	/* every signature: the layout holds and gives out's shape */
	for (int k = 0; k < c->nsigs; k++) {
		kiln_attention_params p;
		Shape ys;
		const Shape *s[4];
		for (int t = 0; t < 3; t++)
			s[t] = rw_shape_in(c, base[t], k);
		s[3] = m.mask != NONE ? rw_shape_in(c, m.mask, k) : NULL;
		const Shape *want = rw_shape_in(c, out, k);
		if (!s[0] || !s[1] || !s[2] || (m.mask != NONE && !s[3]) || !want ||
		    attention_view((const int64_t(*)[4])perm, m.scale, s[0], s[1], s[2], s[3], &p, &ys) ||
		    !rw_same_shape(&ys, want))
			return false;
	}
	/* the fused node replaces the last node of the pattern */
	int last = m.kill[0];
	const char *fused = "";
	for (int k = 0; k < m.nkill; k++) {
		const Node *n = &g->nodes[m.kill[k]];
		if (m.kill[k] > last)
			last = m.kill[k];
		fused = arena_printf(c->a, "%s%s%s \"%s\"", fused, k ? ", " : "", n->op_type, n->name);
	}
	const char *name = arena_strdup(c->a, g->nodes[i].name);
	for (int k = 0; k < m.nkill; k++)
		rw_kill(c, m.kill[k]);
	int in[4] = {base[0], base[1], base[2], m.mask};
	Attr at[5] = {
		rw_ints_attr(c, "kiln.perm_q", perm[0], 4),
		rw_ints_attr(c, "kiln.perm_k", perm[1], 4),
		rw_ints_attr(c, "kiln.perm_v", perm[2], 4),
		rw_ints_attr(c, "kiln.perm_y", perm[3], 4),
		rw_float_attr(c, "kiln.scale", m.scale),
	};
	int tmp = rw_new_value(c, name, DT_FLOAT);
	int at_pending = rw_add_fused(c, last, OP_KilnAttention, in, m.mask != NONE ? 4 : 3, &tmp, 1,
	                              at, 5, name);
	c->pending[at_pending].node.out[0] = out;
	c->pending[at_pending].node.fused.members = fused;
	c->stat->fused += m.nkill - 1;
	return true;
}

int pass_attention(PassCtx *c)
{
	int changes = 0;
	if (c->nsigs == 0)
		return 0;
	int nnodes = c->g->nnodes;
	for (int i = 0; i < nnodes; i++)
		if (!c->dead[i] && c->g->nodes[i].op == OP_Softmax && fuse_one(c, i))
			changes++;
	return changes;
}
