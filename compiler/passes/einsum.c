/*
 * passes/einsum.c - a two-operand Einsum becomes Transpose -> Reshape ->
 * MatMul -> Reshape -> Transpose, so it runs on the GEMM kernel.
 *
 * Letters are sorted into batch (both operands and the output), M (first
 * operand and output), N (second operand and output) and K (both operands,
 * summed). A is permuted to [batch, M, K] and B to [batch, K, N], both
 * flattened to three (or two) axes; the product is unflattened and permuted
 * to the output's order. Nothing is broadcast: a constant operand only gets
 * a Transpose/Reshape of its own, which folding turns into one stored copy
 * (a view when no axes move), and CSE merges the identical transposes of a
 * constant shared by several Einsums before folding sees them.
 *
 * An Einsum that sums nothing and whose one operand has only letters of the
 * other becomes a broadcast Mul instead (scale()).
 *
 * Handled: float32, two operands, no ellipsis, no repeated letter within a
 * term, every letter of each operand in the output or in the other operand,
 * equal sizes on both sides. Others stay Einsum (generated loops). A batch
 * size that changes across signatures may sit in one flattened axis per
 * Reshape (written -1); otherwise the Einsum stays.
 */
#include <string.h>

#include "rewrite.h"

typedef struct Eq {
	char a[KILN_MAX_RANK + 1], b[KILN_MAX_RANK + 1], out[KILN_MAX_RANK + 1];
} Eq;

static bool is_letter(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z');
}

static bool parse_term(const char **p, char *out, const char *stop)
{
	int n = 0;
	for (; **p && !strchr(stop, **p); (*p)++) {
		if (**p == ' ')
			continue;
		if (!is_letter(**p) || n == KILN_MAX_RANK || memchr(out, **p, (size_t)n))
			return false;
		out[n++] = **p;
	}
	out[n] = 0;
	return true;
}

static bool parse(const Attr *at, Eq *e)
{
	if (!at || at->type != AT_STRING || at->s.len > 64)
		return false;
	char buf[80];
	if (at->s.len)
		memcpy(buf, at->s.data, at->s.len);
	buf[at->s.len] = 0;
	const char *p = buf;
	memset(e, 0, sizeof *e);
	if (!parse_term(&p, e->a, ",-") || *p != ',')
		return false;
	p++;
	if (!parse_term(&p, e->b, "-,") || (*p && strncmp(p, "->", 2) != 0))
		return false;
	if (*p) {
		p += 2;
		return parse_term(&p, e->out, ",-") && !*p;
	}
	/* Implicit output: letters that appear once, in alphabetical order. */
	int n = 0;
	for (int ch = 'A'; ch <= 'z'; ch++)
		if (is_letter((char)ch) && (strchr(e->a, ch) != NULL) + (strchr(e->b, ch) != NULL) == 1)
			e->out[n++] = (char)ch;
	e->out[n] = 0;
	return true;
}

/* Per signature: the size of each letter. */
typedef struct Sizes {
	int64_t of[128];
} Sizes;

/* A Reshape target as constants: products of groups of letters. One group
 * that differs across signatures becomes -1. Returns false if more do. */
static bool target(PassCtx *c, Sizes *sz, const char *const *groups, int ngroups, int64_t *dims)
{
	int varying = 0;
	for (int gi = 0; gi < ngroups; gi++) {
		int64_t first = 0;
		bool differs = false;
		for (int k = 0; k < c->nsigs; k++) {
			int64_t p = 1;
			for (const char *q = groups[gi]; *q; q++)
				p *= sz[k].of[(int)*q];
			if (k == 0)
				first = p;
			else if (p != first)
				differs = true;
		}
		dims[gi] = differs ? -1 : first;
		varying += differs;
	}
	/* One signature: the first group that holds whole batches is written -1
	 * (right at this size in any case), so that the graph can follow the
	 * batch size and the independence proof (batchdep.c) can hold. */
	for (int gi = 0; gi < ngroups && c->nsigs == 1 && !varying; gi++)
		if (dims[gi] > 0 && dims[gi] % c->sigs[0].batch == 0) {
			dims[gi] = -1;
			varying = 1;
		}
	return varying <= 1;
}

static int reshape(PassCtx *c, int before, int x, const int64_t *dims, int n, const char *hint)
{
	int y = rw_new_value(c, hint, DT_FLOAT);
	int s = rw_new_i64(c, "shape", dims, n);
	int in[2] = {x, s};
	rw_add_node(c, before, "Reshape", in, 2, &y, 1, NULL, 0, hint);
	return y;
}

static int transpose(PassCtx *c, int before, int x, const int64_t *perm, int r, const char *hint)
{
	bool id = true;
	for (int k = 0; k < r; k++)
		id &= perm[k] == k;
	if (id)
		return x;
	int y = rw_new_value(c, hint, DT_FLOAT);
	Attr at = rw_ints_attr(c, "perm", perm, r);
	rw_add_node(c, before, "Transpose", &x, 1, &y, 1, &at, 1, hint);
	return y;
}

/* Nothing summed and one operand's letters all in the other's: an
 * elementwise product, the smaller operand broadcast over the larger
 * ('tbhd,h->tbdh', a scale per head). The larger is permuted to the output's
 * order, the smaller permuted and reshaped with ones where it has no letter,
 * and one Mul writes the output: the same single product per element as the
 * MatMul over a K of one it replaces, with no GEMM calls over N = K = 1. */
static bool scale(PassCtx *c, int i, const Eq *e, Sizes *sz, bool a_small)
{
	Node *n = &c->g->nodes[i];
	int big = n->in[a_small ? 1 : 0], small = n->in[a_small ? 0 : 1], Y = n->out[0];
	const char *tb = a_small ? e->b : e->a, *ts = a_small ? e->a : e->b;
	int r = (int)strlen(e->out), rs = (int)strlen(ts);
	if (r != (int)strlen(tb))
		return false;
	int64_t pbig[KILN_MAX_RANK], psmall[KILN_MAX_RANK], dims[KILN_MAX_RANK];
	const char *groups[KILN_MAX_RANK];
	char one[KILN_MAX_RANK][2];
	int k = 0;
	for (int d = 0; d < r; d++) {
		pbig[d] = strchr(tb, e->out[d]) - tb;
		const char *at = strchr(ts, e->out[d]);
		one[d][0] = at ? e->out[d] : 0;
		one[d][1] = 0;
		groups[d] = one[d];  /* "" (a product of 1) where the small one has no letter */
		if (at)
			psmall[k++] = at - ts;
	}
	if (k != rs || !target(c, sz, groups, r, dims))
		return false;
	const char *name = n->name[0] ? n->name : "einsum";
	rw_kill(c, i);
	int tbig = transpose(c, i, big, pbig, r, name);
	int tsmall = transpose(c, i, small, psmall, rs, name);
	int bs = reshape(c, i, tsmall, dims, r, name);
	int in[2] = {a_small ? bs : tbig, a_small ? tbig : bs};
	rw_add_node(c, i, "Mul", in, 2, &Y, 1, NULL, 0, name);
	c->stat->removed++;
	return true;
}

static bool lower(PassCtx *c, int i)
{
	Graph *g = c->g;
	Node *n = &g->nodes[i];
	Eq e;
	if (n->nin != 2 || n->nout != 1 || n->out[0] == NONE || !parse(rw_attr(n, "equation"), &e))
		return false;
	int A = n->in[0], B = n->in[1], Y = n->out[0];
	if (A == NONE || B == NONE || rw_dtype(c, A) != DT_FLOAT || rw_dtype(c, B) != DT_FLOAT ||
	    c->nsigs == 0 || (int)strlen(e.out) > KILN_MAX_RANK)
		return false;
	Sizes *sz = arena_array(c->a, (size_t)c->nsigs, sizeof *sz);
	for (int k = 0; k < c->nsigs; k++) {
		const Shape *sa = rw_shape_in(c, A, k), *sb = rw_shape_in(c, B, k);
		if (!sa || !sb || sa->rank != (int)strlen(e.a) || sb->rank != (int)strlen(e.b))
			return false;
		for (int t = 0; t < 128; t++)
			sz[k].of[t] = -1;
		for (int pass = 0; pass < 2; pass++) {
			const char *term = pass ? e.b : e.a;
			const Shape *s = pass ? sb : sa;
			for (int d = 0; term[d]; d++) {
				int64_t *slot = &sz[k].of[(int)term[d]];
				if (s->dims[d].size <= 0 || (*slot >= 0 && *slot != s->dims[d].size))
					return false;  /* empty, or broadcasting: leave it to the loops */
				*slot = s->dims[d].size;
			}
		}
	}
	/* Classify; the output order of batch letters, the operands' for the rest. */
	char bat[9] = "", m[9] = "", nn[9] = "", kk[9] = "";
	int nb = 0, nm = 0, nnn = 0, nk = 0;
	for (const char *q = e.out; *q; q++) {
		bool ina = strchr(e.a, *q), inb = strchr(e.b, *q);
		if (!ina && !inb)
			return false;
		if (ina && inb)
			bat[nb++] = *q;
	}
	for (const char *q = e.a; *q; q++) {
		bool inb = strchr(e.b, *q), ino = strchr(e.out, *q);
		if (!inb && !ino)
			return false;  /* summed within A alone */
		if (!inb)
			m[nm++] = *q;
		else if (!ino)
			kk[nk++] = *q;
	}
	for (const char *q = e.b; *q; q++) {
		bool ina = strchr(e.a, *q), ino = strchr(e.out, *q);
		if (!ina && !ino)
			return false;
		if (!ina)
			nn[nnn++] = *q;
	}
	bat[nb] = m[nm] = nn[nnn] = kk[nk] = 0;
	if (nk == 0 && (nm == 0 || nnn == 0))
		return scale(c, i, &e, sz, nm == 0);

	int64_t pa[KILN_MAX_RANK], pb[KILN_MAX_RANK], po[KILN_MAX_RANK];
	int r = 0;
	const char *order_a[3] = {bat, m, kk}, *order_b[3] = {bat, kk, nn};
	for (int gi = 0; gi < 3; gi++)
		for (const char *q = order_a[gi]; *q; q++)
			pa[r++] = strchr(e.a, *q) - e.a;
	r = 0;
	for (int gi = 0; gi < 3; gi++)
		for (const char *q = order_b[gi]; *q; q++)
			pb[r++] = strchr(e.b, *q) - e.b;
	/* The product comes out as bat+m+nn; the output wants e.out. */
	char mid[KILN_MAX_RANK * 3 + 1];
	snprintf(mid, sizeof mid, "%s%s%s", bat, m, nn);
	for (int d = 0; e.out[d]; d++)
		po[d] = strchr(mid, e.out[d]) - mid;

	int64_t ta[3], tb[3], tmid[KILN_MAX_RANK];
	const char *ga[3] = {bat, m, kk}, *gb[3] = {bat, kk, nn};
	int off = nb ? 0 : 1;  /* without batch letters: plain 2-D matrices */
	if (!target(c, sz, ga + off, 3 - off, ta) || !target(c, sz, gb + off, 3 - off, tb))
		return false;
	const char *gm[KILN_MAX_RANK];
	char one[KILN_MAX_RANK][2];
	int nmid = (int)strlen(mid);
	for (int d = 0; d < nmid; d++) {
		one[d][0] = mid[d];
		one[d][1] = 0;
		gm[d] = one[d];
	}
	if (!target(c, sz, gm, nmid, tmid))
		return false;

	const char *name = n->name[0] ? n->name : "einsum";
	rw_kill(c, i);
	int ta_v = transpose(c, i, A, pa, (int)strlen(e.a), name);
	int a3 = reshape(c, i, ta_v, ta, 3 - off, name);
	int tb_v = transpose(c, i, B, pb, (int)strlen(e.b), name);
	int b3 = reshape(c, i, tb_v, tb, 3 - off, name);
	int prod = rw_new_value(c, name, DT_FLOAT);
	int mm_in[2] = {a3, b3};
	rw_add_node(c, i, "MatMul", mm_in, 2, &prod, 1, NULL, 0, name);
	int outer = reshape(c, i, prod, tmid, nmid, name);
	bool id = true;
	for (int d = 0; d < nmid; d++)
		id &= po[d] == d;
	/* The last node writes Y itself. */
	int last = c->pending[c->npending - 1].node.out[0];
	if (id) {
		c->pending[c->npending - 1].node.out[0] = Y;
	} else {
		Attr at = rw_ints_attr(c, "perm", po, nmid);
		rw_add_node(c, i, "Transpose", &outer, 1, &Y, 1, &at, 1, name);
	}
	(void)last;
	c->stat->removed++;
	return true;
}

int pass_einsum(PassCtx *c)
{
	int changes = 0;
	int nnodes = c->g->nnodes;
	for (int i = 0; i < nnodes; i++)
		if (!c->dead[i] && c->g->nodes[i].op == OP_Einsum && lower(c, i))
			changes++;
	return changes;
}
