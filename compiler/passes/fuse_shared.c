/*
 * passes/fuse_shared.c - what the fusions of the fuse pass share (fuse.h):
 * node bookkeeping, MatMul as a Gemm, views, constant scalars. Apart from
 * fuse.c, whose pass_fuse calls the fusions, so that no two files call each
 * other.
 */
#include <math.h>

#include "fuse.h"

bool fuse_is_f32(PassCtx *c, int id)
{
	return rw_dtype(c, id) == DT_FLOAT;
}

/* Record that node `into` absorbed node `from`. */
void fuse_note(PassCtx *c, Node *into, const Node *from)
{
	rw_add_member(c, into, from);
	c->stat->fused++;
}

/* Node p now writes y (the output of the node fused into it); its old
 * output becomes an orphan. */
void fuse_take_output(PassCtx *c, int p, int y)
{
	Graph *g = c->g;
	int old = g->nodes[p].out[0];
	g->nodes[p].out[0] = y;
	g->values[y].producer = p;
	g->values[old].producer = NONE;
}

static int new_reshape(PassCtx *c, int before, int x, const int64_t *dims, int n,
                       const char *name)
{
	int y = rw_new_value(c, name, DT_FLOAT);
	int s = rw_new_i64(c, "shape", dims, n);
	int in[2] = {x, s};
	rw_add_node(c, before, "Reshape", in, 2, &y, 1, NULL, 0, name);
	return y;
}

/* Replace MatMul node i by Gemm(A, B [transposed], C) writing y, with
 * Reshapes to 2-D and back if A has more axes. New nodes go before node
 * `place`. The caller kills any other node it fused. */
bool fuse_matmul_to_gemm(PassCtx *c, int i, int b, bool trans_b, int cv, int y, int place)
{
	Graph *g = c->g;
	Node *mm = &g->nodes[i];
	int a = mm->in[0];
	const Shape *sb = rw_static_shape(c, b);
	bool b_ok = fuse_is_f32(c, b) || (rw_is_const(c, b) && c->g->values[b].dtype == DT_FLOAT16);
	if (!sb || sb->rank != 2 || !fuse_is_f32(c, a) || !b_ok || c->nsigs == 0 ||
	    mm->opset < 7 || (cv == NONE && mm->opset < 11))
		return false;
	int64_t K = sb->dims[trans_b ? 1 : 0].size, N = sb->dims[trans_b ? 0 : 1].size;
	int rank = -1;
	for (int k = 0; k < c->nsigs; k++) {
		const Shape *sa = rw_shape_in(c, a, k);
		if (!sa || sa->rank < 2 || (rank >= 0 && sa->rank != rank) ||
		    sa->dims[sa->rank - 1].size != K)
			return false;
		rank = sa->rank;
	}
	int64_t out_dims[KILN_MAX_RANK];
	if (rank > 2) {
		/* Unflatten target: A's leading dims, N; one may vary (-1). */
		int varying = 0;
		for (int d = 0; d < rank - 1; d++) {
			int64_t first = rw_shape_in(c, a, 0)->dims[d].size;
			bool differs = false;
			for (int k = 1; k < c->nsigs; k++)
				differs |= rw_shape_in(c, a, k)->dims[d].size != first;
			out_dims[d] = differs ? -1 : first;
			varying += differs;
			if (first == 0)
				return false;
		}
		out_dims[rank - 1] = N;
		if (varying > 1)
			return false;
		/* One signature: the first axis is written -1 (what an exporter
		 * writes), so the graph still follows the batch size and the
		 * independence proof (batchdep.c, at probe sizes of its own) holds. */
		if (c->nsigs == 1 && !varying) {
			out_dims[0] = -1;
			varying = 1;
		}
		/* A batch axis after a leading axis longer than 1 (seq-first
		 * [seq, batch, features]) would be flattened with it, and batch
		 * independence could no longer be proven: MatMul stays. */
		for (int d = 0; d < rank - 1 && varying; d++) {
			if (out_dims[d] < 0)
				break;
			if (out_dims[d] != 1)
				return false;
		}
		if (cv != NONE) { /* C must broadcast over rows: [N], [1,N] or a scalar */
			const Shape *sc = rw_static_shape(c, cv);
			int64_t ne = sc ? shape_nelem(sc) : -1;
			if (!sc || sc->rank > 2 || (ne != N && ne != 1) ||
			    (sc->rank >= 1 && sc->dims[sc->rank - 1].size != ne))
				return false;
		}
	}
	const char *name = mm->name[0] ? mm->name : "matmul";
	int a2 = a;
	if (rank > 2) {
		int64_t flat[2] = {-1, K};
		a2 = new_reshape(c, place, a, flat, 2, name);
	}
	int gy = rank > 2 ? rw_new_value(c, name, DT_FLOAT) : y;
	Attr at[2];
	int nat = 0;
	if (trans_b)
		at[nat++] = rw_int_attr(c, "transB", 1);
	int in[3] = {a2, b, cv};
	mm = &g->nodes[i];
	int nname = rw_add_node(c, place, "Gemm", in, cv == NONE ? 2 : 3, &gy, 1, at, nat, name);
	if (rank > 2) {
		/* The unflattening Reshape writes y itself; its fresh output value
		 * stays an orphan. */
		new_reshape(c, place, gy, out_dims, rank, name);
		c->pending[c->npending - 1].node.out[0] = y;
	}
	(void)nname;
	rw_kill(c, i);
	return true;
}

bool fuse_is_view(int op)
{
	return op == OP_Reshape || op == OP_Unsqueeze || op == OP_Squeeze || op == OP_Flatten;
}

/* Is value a (not pinned) read by node u and otherwise only by Shape? */
bool fuse_only_shape_besides(PassCtx *c, int a, int u)
{
	if (rw_pinned(c, a))
		return false;
	bool by_u = false;
	for (int i = 0; i < c->g->nnodes; i++) {
		const Node *nd = &c->g->nodes[i];
		for (int k = 0; !c->dead[i] && k < nd->nin; k++)
			if (nd->in[k] == a) {
				if (i == u)
					by_u = true;
				else if (nd->op != OP_Shape)
					return false;
			}
	}
	return by_u;
}

/* Is value id a constant scalar equal to v (within float rounding)? */
bool fuse_is_scalar(PassCtx *c, int id, double v)
{
	int64_t n;
	double *x = rw_const_f64(c, id, &n, 1);
	return x && n == 1 && fabs(x[0] - v) <= 1e-6 * fabs(v);
}

/* The node reading id alone, if it is op; NONE otherwise. */
int fuse_only_reader(PassCtx *c, int id, int op)
{
	int u = rw_sole_user(c, id);
	return u != NONE && c->g->nodes[u].op == op && c->g->nodes[u].nout == 1 ? u : NONE;
}
