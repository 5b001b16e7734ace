/*
 * ops/scatterrows.c - the per-sample ScatterND that passes/scatterrows.c
 * makes (kiln's own op KilnScatterRows, ops_kiln.def): its shape inference,
 * emitter and record.
 *
 * Inputs: data [N, d1, ..., d(r-1)] float32, updates [N, S1, ..., S(m-1),
 * d(q), ..., d(r-1)] (m = attribute kiln.index_rank), then q - 1 int64
 * pieces a_1 .. a_(q-1), each broadcasting to S = [N, S1, ..., S(m-1)] with
 * 1 or nothing on axis 0. Output: data with, for every sample n and
 * position o of S, Y[n, a_1[o], ..., a_(q-1)[o], ...] = updates[n, o, ...]
 * (negative components count from the end; one out of range:
 * KILN_SHAPE_ERROR), in ScatterND's order.
 */
#include <inttypes.h>

#include "emit_c.h"
#include "ops/ops.h"
#include "opdef.h"

static void scatterrows_infer(Infer *x)
{
	const Node *n = x->n;
	int q = n->nin - 1, m = (int)attr_int(x, "kiln.index_rank", 0);
	const Shape *D = infer_shape(x, 0), *U = infer_shape(x, 1);
	bool ok = n->nout == 1 && q >= 2 && m >= 1 && D->rank >= q && infer_dtype(x, 0) == DT_FLOAT &&
	          infer_dtype(x, 1) == DT_FLOAT && U->rank == m + D->rank - q &&
	          U->dims[0].size == D->dims[0].size;
	for (int d = m; ok && d < U->rank; d++)
		ok = U->dims[d].size == D->dims[q + d - m].size;
	for (int p = 2; ok && p < n->nin; p++) {
		const Shape *a = infer_shape(x, p);
		ok = infer_dtype(x, p) == DT_INT64 && a->rank <= m;
		for (int d = 0; ok && d < a->rank; d++) {
			int s = m - a->rank + d;
			ok = a->dims[d].size == 1 || (s > 0 && a->dims[d].size == U->dims[s].size);
		}
	}
	if (!ok)
		infer_fail(x, KILN_INVALID_MODEL, "malformed fused per-sample ScatterND");
	infer_set_output(x, 0, DT_FLOAT, D);
}

void emit_scatterrows(Emit *E)
{
	Operand D = in_op(E, 0), U = in_op(E, 1), Y = out_op(E, 0);
	int q = E->n->nin - 1, m = (int)node_attr_int(E->n, "kiln.index_rank", 0), r = D.shape->rank;
	int64_t st[KILN_MAX_RANK], acc = 1, slice = 1, per = 1;
	for (int i = r - 1; i >= 0; i--) {
		st[i] = acc;
		acc *= D.shape->dims[i].size;
	}
	for (int i = q; i < r; i++)
		slice *= D.shape->dims[i].size;
	for (int d = 1; d < m; d++)
		per *= U.shape->dims[d].size;
	emit_fused_comment(E);
	decl(E, "D", &D, false);
	decl(E, "U", &U, false);
	decl(E, "Y", &Y, true);
	emitf(E, "\tif ((const void *)Y != (const void *)D)\n\t\tmemcpy(Y, D, %zu);\n",
	    (size_t)Y.nelem * sizeof(float));
	/* each piece's strides over S's axes 1 .. m-1 (0 where it broadcasts) */
	int64_t ast[KILN_MAX_RANK][KILN_MAX_RANK];
	for (int p = 1; p < q; p++) {
		Operand A = in_op(E, 1 + p);
		emitf(E, "\tconst int64_t *A%d = %s;\n", p, A.expr);
		int64_t sa = 1;
		for (int d = m - 1; d >= 1; d--) {
			int ad = d - (m - A.shape->rank);
			int64_t len = ad >= 0 ? A.shape->dims[ad].size : 1;
			ast[p][d] = len == 1 ? 0 : sa;
			sa *= len;
		}
	}
	static const char tabs[] = "\t\t\t\t\t\t\t\t\t\t";
	emitf(E, "\tfor (int64_t n = 0; n < %" PRId64 "; n++) {\n"
	       "\t\tfloat *y = Y + n * %" PRId64 ";\n\t\tconst float *u = U + n * %" PRId64 ";\n"
	       "\t\tint64_t o = 0;\n",
	    D.shape->dims[0].size, st[0], per * slice);
	for (int d = 1; d < m; d++)
		emitf(E, "%.*sfor (int64_t i%d = 0; i%d < %" PRId64 "; i%d++) {\n", d + 1, tabs, d, d,
		    U.shape->dims[d].size, d);
	const char *t = arena_printf(E->a, "%.*s", m + 1, tabs);
	emitf(E, "%sint64_t at = 0;\n", t);
	for (int p = 1; p < q; p++) {
		emitf(E, "%s{\n%s\tint64_t v = A%d[0", t, t, p);
		for (int d = 1; d < m; d++)
			if (ast[p][d])
				emitf(E, " + i%d * %" PRId64, d, ast[p][d]);
		int64_t len = D.shape->dims[p].size;
		emitf(E, "];\n%s\tif (v < 0)\n%s\t\tv += %" PRId64 ";\n%s\tif (v < 0 || v >= %" PRId64
		       ")\n%s\t\treturn KILN_SHAPE_ERROR;\n%s\tat += v * %" PRId64 ";\n%s}\n",
		    t, t, len, t, len, t, t, st[p], t);
	}
	if (slice == 1)
		emitf(E, "%sy[at] = u[o++];\n", t);
	else
		emitf(E, "%smemcpy(y + at, u + o, %" PRId64 " * sizeof(float));\n%so += %" PRId64 ";\n",
		    t, slice, t, slice);
	for (int d = m - 1; d >= 0; d--)
		emitf(E, "%.*s}\n", d + 1, tabs);
}

const OpDef ops_scatterrows_defs[] = {
	{.op = OP_KilnScatterRows, .infer = scatterrows_infer, .emit = emit_scatterrows,
	 .batch = BK_N_FIRST, .row_inputs = 1u << 1, .overwrites = true, .types = OT_F32,
	 .note = "ScatterND of each sample's updates into its own rows at index tuples given as "
	         "broadcast pieces, the batch index first (PyTorch's index_put: y[:, :, i, j] = v), "
	         "the tuples never built (passes/scatterrows.c)"},
	{.op = NONE},
};
