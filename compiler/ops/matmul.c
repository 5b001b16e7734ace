/*
 * ops/matmul.c - shape inference for Gemm and MatMul.
 *
 * Gemm: Y[M,N] = alpha * op(A) op(B) + beta * C, with op() an optional
 * transpose and C unidirectionally broadcastable to [M,N]. MatMul follows
 * numpy.matmul: 1-D operands gain and then lose a unit dim, and the leading
 * (batch) dims broadcast.
 */
#include "emit_c.h"
#include "ops/ops.h"
#include "opdef.h"

static void infer_gemm(Infer *x)
{
	const Shape *a = infer_shape(x, 0), *b = infer_shape(x, 1);
	if (a->rank != 2 || b->rank != 2)
		infer_fail(x, KILN_SHAPE_ERROR, "A and B must be 2-D, got rank %d and %d", a->rank,
		           b->rank);
	bool ta = attr_int(x, "transA", 0) != 0, tb = attr_int(x, "transB", 0) != 0;
	int64_t m = a->dims[ta ? 1 : 0].size, ka = a->dims[ta ? 0 : 1].size;
	int64_t kb = b->dims[tb ? 1 : 0].size, n = b->dims[tb ? 0 : 1].size;
	if (ka != kb)
		infer_fail(x, KILN_SHAPE_ERROR, "inner dims differ: A gives K = %lld, B gives %lld",
		           (long long)ka, (long long)kb);
	if (infer_has_input(x, 2)) {
		const Shape *c = infer_shape(x, 2);
		if (c->rank > 2)
			infer_fail(x, KILN_SHAPE_ERROR, "C has rank %d; it must broadcast to [M,N]", c->rank);
		int64_t want[2] = {m, n};
		for (int k = 0; k < c->rank; k++) {
			int64_t d = c->dims[k].size, w = want[2 - c->rank + k];
			if (d != 1 && d != w)
				infer_fail(x, KILN_SHAPE_ERROR,
				           "C dim %d is %lld; it must be 1 or %lld to broadcast to [%lld,%lld]", k,
				           (long long)d, (long long)w, (long long)m, (long long)n);
		}
	}
	Shape y = {.rank = 2};
	y.dims[0].size = m;
	y.dims[1].size = n;
	infer_set_output(x, 0, infer_dtype(x, 0), &y);
}

/* MatMul's operand as a matrix: a 1-D A is [1, K], a 1-D B is [K, 1]. */
Shape matmul_operand(const Shape *s, bool is_a)
{
	Shape m = *s;
	if (m.rank == 1) {
		if (is_a) {
			m.dims[1] = m.dims[0];
			m.dims[0].size = 1;
		} else {
			m.dims[1].size = 1;
		}
		m.rank = 2;
	}
	return m;
}

/* numpy.matmul's output shape: batch dims broadcast, and the dims that a
 * 1-D operand gained are dropped again. Shared with the integer MatMuls. */
void matmul_output_shape(Infer *x, const Shape *a_in, const Shape *b_in, Shape *y)
{
	if (a_in->rank < 1 || b_in->rank < 1)
		infer_fail(x, KILN_SHAPE_ERROR, "MatMul operands must have rank >= 1");
	Shape a = matmul_operand(a_in, true), b = matmul_operand(b_in, false);
	int64_t ka = a.dims[a.rank - 1].size, kb = b.dims[b.rank - 2].size;
	if (ka != kb)
		infer_fail(x, KILN_SHAPE_ERROR, "inner dims differ: %lld vs %lld", (long long)ka,
		           (long long)kb);
	int batch_rank = (a.rank > b.rank ? a.rank : b.rank) - 2;
	*y = (Shape){.rank = 0};
	for (int k = 0; k < batch_rank; k++) {
		int ia = k - (batch_rank - (a.rank - 2)), ib = k - (batch_rank - (b.rank - 2));
		int64_t da = ia >= 0 ? a.dims[ia].size : 1, db = ib >= 0 ? b.dims[ib].size : 1;
		if (da != db && da != 1 && db != 1)
			infer_fail(x, KILN_SHAPE_ERROR, "batch dims do not broadcast: %lld vs %lld",
			           (long long)da, (long long)db);
		y->dims[y->rank++].size = da == 1 ? db : da;
	}
	if (a_in->rank != 1)
		y->dims[y->rank++].size = a.dims[a.rank - 2].size;
	if (b_in->rank != 1)
		y->dims[y->rank++].size = b.dims[b.rank - 1].size;
}

static void infer_matmul(Infer *x)
{
	Shape y;
	matmul_output_shape(x, infer_shape(x, 0), infer_shape(x, 1), &y);
	if (infer_dtype(x, 0) != infer_dtype(x, 1))
		infer_fail(x, KILN_INVALID_MODEL, "A and B have different element types");
	infer_set_output(x, 0, infer_dtype(x, 0), &y);
}

/* A float16 or bfloat16 Gemm/MatMul computes in float32 copies of its
 * operands and result, in the node's arena scratch (emit/linalg.c): each
 * copy rounded up to 16 floats. */
int64_t half_gemm_scratch_floats(int64_t nelem)
{
	return (nelem + 15) / 16 * 16;
}

int64_t half_gemm_scratch_bytes(const Sig *s, int node)
{
	const Node *n = &s->g->nodes[node];
	int dt = n->nout >= 1 && n->out[0] != NONE ? s->dtypes[n->out[0]] : DT_UNDEFINED;
	if (dt != DT_FLOAT16 && dt != DT_BFLOAT16)
		return 0;
	int64_t floats = half_gemm_scratch_floats(shape_nelem(&s->shapes[n->out[0]]));
	for (int k = 0; k < n->nin && k < 3; k++)
		if (n->in[k] != NONE)
			floats += half_gemm_scratch_floats(shape_nelem(&s->shapes[n->in[k]]));
	return 4 * floats;
}

void ops_matmul_infer(Infer *x)
{
	if (x->n->op == OP_Gemm)
		infer_gemm(x);
	else
		infer_matmul(x);
}

/* ---- the records (opdef.h) ---------------------------------------------- */

/* A float16 or bfloat16 Gemm/MatMul's float32 copies (emit/linalg.c). */
static int64_t gemm_scratch_bytes(const Sig *s, int node, Arena *a)
{
	(void)a;
	return half_gemm_scratch_bytes(s, node);
}

const OpDef ops_matmul_defs[] = {
	{.op = OP_Gemm, .infer = ops_matmul_infer, .emit = emit_gemm, .batch = BK_GEMM,
	 .scratch = gemm_scratch_bytes, .cost = CK_GEMM, .tile = TK_GEMM,
	 .types = OT_F32 | OT_F16 | OT_BF16,
	 .note = "runtime GEMM kernel; 16-bit floats computed in float32, the result rounded to "
	         "nearest even"},
	{.op = OP_MatMul, .infer = ops_matmul_infer, .emit = emit_matmul, .batch = BK_MATMUL,
	 .scratch = gemm_scratch_bytes, .cost = CK_MATMUL, .tile = TK_GEMM,
	 .types = OT_F32 | OT_F16 | OT_BF16,
	 .note = "runtime GEMM kernel; batched with broadcasting; 16-bit floats computed in "
	         "float32, the result rounded to nearest even"},
	{.op = NONE},
};
