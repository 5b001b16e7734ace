/*
 * passes/onehot.c - a MatMul by a constant selection matrix is a gather of
 * columns (KilnSelect).
 *
 * Graph networks (interaction networks, JEDI-net) send object features to
 * edges with receiver/sender matrices: x [.., K] @ R [K, M], R a constant of
 * zeros with exactly one 1 in every column. Output column m is then x's
 * column src[m] (the row of that 1): the GEMM spends K multiply-adds per
 * element on a copy. The MatMul becomes KilnSelect(x, src), which gathers
 * the columns (kiln_f32_select, runtime/kernels/select.c).
 *
 * Result bits: the MatMul's on every input. Each output of the MatMul is the
 * product x * 1 and products by zero, summed from +0: on a row of finite
 * values that is x + 0.0f (a -0 reads +0), which the kernel computes; a row
 * holding an infinity or NaN (inf * 0 is NaN) the kernel sums as the GEMM
 * does.
 *
 * The pattern, checked on the constant's values: MatMul(X, R), X float32 of
 * rank >= 2 in every signature, R a float32 constant [K, M] whose elements
 * are all 0 or 1 with exactly one 1 per column. Only the last axis of X is
 * read by index, so each sample still reads only its own rows.
 */
#include <string.h>

#include "rewrite.h"

/* The selected row of every column of the [k, m] float32 selection matrix
 * r, or NULL if r is not one. The weight is read where it is (no copy: every
 * MatMul by a constant asks), row by row, and the first element that is not
 * 0 or 1 ends the scan (a trained weight's first one). */
static int64_t *selection(PassCtx *c, int r, int64_t k, int64_t m)
{
	const Weight *w = c->g->values[r].weight;
	if (!w || !w->bytes || w->nelem != k * m)
		return NULL;
	int64_t *src = arena_array(c->a, (size_t)m, sizeof *src);
	for (int64_t j = 0; j < m; j++)
		src[j] = -1;
	const unsigned char *b = w->bytes;
	for (int64_t i = 0; i < k; i++)
		for (int64_t j = 0; j < m; j++) {
			float e;
			memcpy(&e, b + (size_t)(i * m + j) * sizeof e, sizeof e);
			if (e == 1.0f && src[j] < 0)
				src[j] = i;
			else if (e != 0.0f)
				return NULL;
		}
	for (int64_t j = 0; j < m; j++)
		if (src[j] < 0)
			return NULL;
	return src;
}

static bool rewrite_one(PassCtx *c, int mi)
{
	Graph *g = c->g;
	const Node *n = &g->nodes[mi];
	if (n->nin != 2 || n->nout != 1 || n->domain_id != DOMAIN_ONNX || n->out[0] == NONE)
		return false;
	int x = n->in[0], r = n->in[1];
	if (x == NONE || r == NONE || !rw_is_const(c, r) || rw_dtype(c, r) != DT_FLOAT ||
	    rw_dtype(c, x) != DT_FLOAT)
		return false;
	const Shape *rs = &g->values[r].shape;
	if (rs->rank != 2 || rs->dims[0].size < 1 || rs->dims[1].size < 1 ||
	    rs->dims[1].size > INT32_MAX)
		return false;
	const int64_t k = rs->dims[0].size, m = rs->dims[1].size;
	for (int s = 0; s < c->nsigs; s++) {
		const Shape *xs = rw_shape_in(c, x, s);
		if (!xs || xs->rank < 2 || xs->dims[xs->rank - 1].size != k)
			return false;
	}
	int64_t *src = selection(c, r, k, m);
	if (!src)
		return false;
	int in[2] = {x, rw_new_i64(c, "onehot_index", src, (int)m)};
	int y = n->out[0];
	rw_add_fused(c, mi, OP_KilnSelect, in, 2, &y, 1, NULL, 0, n->name);
	rw_kill(c, mi);
	c->stat->removed++;
	return true;
}

int pass_onehot(PassCtx *c)
{
	int changes = 0;
	if (c->nsigs == 0)
		return 0;
	int nnodes = c->g->nnodes;
	for (int i = 0; i < nnodes; i++)
		if (!c->dead[i] && c->g->nodes[i].op == OP_MatMul && rewrite_one(c, i))
			changes++;
	return changes;
}
