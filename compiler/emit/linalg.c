/*
 * emit/linalg.c - op emitters for Gemm, MatMul (runtime GEMM kernel), Einsum (generated loops)
 * and KilnSelect (kiln_f32_select).
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "emit_c.h"

/* Does node n read B (input 1) as a GEMM whose packed B would be the same
 * bytes: for t 0 / 1, Gemm with transA = 0 and transB = t, or MatMul (never
 * transposed); for t 2, Gemm with transA = 0, transB = 1 and a float32 A (the
 * float16-weight GEMM, kiln_f32_gemm_f16b). */
static bool reads_b_as(const Emit *E, const Node *n, int t)
{
	if (n->op == OP_Gemm) {
		Infer inf = {.sig = (Sig *)E->sig, .g = E->g, .n = (Node *)n, .d = E->d, .a = E->a};
		GemmParams gp;
		gemm_params(&inf, &gp);
		return !gp.trans_a && gp.trans_b == (t != 0) &&
		       (t != 2 || (n->in[0] != NONE && E->sig->dtypes[n->in[0]] == DT_FLOAT));
	}
	return n->op == OP_MatMul && t == 0;
}

/* Is input 1 of this node a weight of dtype dt (K x N, elem bytes each) that
 * every reader reads as a GEMM's B the same way (reads_b_as t)? Its copy in
 * another layout can then replace it in the weights object: still stored
 * once, in the same bytes. */
static bool only_b_weight(Emit *E, int t, int dt, size_t elem, int64_t K, int64_t N)
{
	int id = E->n->in[1];
	const Value *v = &E->g->values[id];
	if (v->kind != VAL_WEIGHT || E->sig->dtypes[id] != dt || v->dtype != dt ||
	    E->sig->folded[id] || E->plan->root[id] != id || E->in_index[id] != NONE ||
	    E->sig->shapes[id].rank != 2 || K <= 0 || N <= 0 ||
	    v->weight->nbytes != (uint64_t)(K * N) * elem)
		return false;
	if (E->gemm_uses_of != E->g) {
		/* Every graph's reader counts at once: scanning the nodes for each
		 * GEMM made large graphs quadratic. */
		int nv = E->g->nvalues;
		E->uses_all = arena_array(E->a, (size_t)nv, sizeof *E->uses_all);
		for (int u = 0; u < 3; u++)
			E->uses_as_b[u] = arena_array(E->a, (size_t)nv, sizeof *E->uses_as_b[u]);
		for (int i = 0; i < E->g->nnodes; i++) {
			const Node *n = &E->g->nodes[i];
			for (int j = 0; j < n->nin; j++)
				if (n->in[j] != NONE) {
					E->uses_all[n->in[j]]++;
					for (int u = 0; u < 3 && j == 1; u++)
						E->uses_as_b[u][n->in[j]] += reads_b_as(E, n, u);
				}
		}
		E->gemm_uses_of = E->g;
	}
	int uses = E->uses_as_b[t][id];
	return uses == E->uses_all[id] && uses == v->nuse;  /* else also read otherwise, or by a subgraph */
}

/* Input 1 of this node (a GEMM's B, K x N, stored transposed if trans) as a
 * float32 weight packed at compile time into the b32 layout the kernels read
 * (runtime/kernels/f32-gemm/pack.h), or NULL: only_b_weight. */
static const char *packed_b(Emit *E, bool trans, int64_t K, int64_t N)
{
	if (!only_b_weight(E, trans, DT_FLOAT, sizeof(float), K, N))
		return NULL;
	const Value *v = &E->g->values[E->n->in[1]];
	int64_t pack[4] = {K, N, trans ? 1 : N, trans ? K : 1};
	int s = symbol_in_layout(E, DT_FLOAT, v->weight->bytes, v->weight->nbytes, v->name,
	                         SYM_PACK_B32, pack);
	return symbol_expr(E, s, "float");
}

/* Input 1 of a float32-A Gemm with transB = 1, a float16 weight [N, K], as
 * that weight stored transposed ([K, N]) at compile time, or NULL:
 * only_b_weight. kiln_f32_gemm_f16b then reads B with natural strides (its
 * fast path) and sums each output over k in the same order, so the bits are
 * those of the transposed read. */
static const char *transposed_f16_b(Emit *E, int64_t K, int64_t N)
{
	if (!only_b_weight(E, 2, DT_FLOAT16, 2, K, N))
		return NULL;
	const Value *v = &E->g->values[E->n->in[1]];
	int64_t pack[4] = {N, K, 0, 0};
	int s = symbol_in_layout(E, DT_FLOAT16, v->weight->bytes, v->weight->nbytes, v->name,
	                         SYM_TRANSPOSE16, pack);
	return symbol_expr(E, s, "uint16_t");
}

/* ---- float16 and bfloat16 ------------------------------------------------
 * A 16-bit float GEMM computes in float32, as kiln's 16-bit elementwise ops
 * do: its operands widened exactly into the node's arena scratch (A, B, C,
 * then the float32 result, each 64-byte aligned), the float32 GEMM on them,
 * and the result rounded to nearest even into Y. */

static bool is_half(int dt)
{
	return dt == DT_FLOAT16 || dt == DT_BFLOAT16;
}


/* Operand x widened into the float32 scratch at *off (bytes), which moves on. */
static Operand widened(Emit *E, const Operand *x, int64_t *off, bool load)
{
	Operand w = *x;
	w.dtype = DT_FLOAT;
	w.expr = arena_printf(E->a, "((float *)(a + %" PRId64 "))", *off);
	*off += 4 * half_gemm_scratch_floats(x->nelem);
	if (load) {  /* a block: its loop's names are the GEMM's own */
		emitf(E, "\t{\n");
		emit_map_widened(E, &w, x, 1, "x0", NULL);
		emitf(E, "\t}\n");
	}
	return w;
}

/* The half GEMM's operands: inputs 0..nin-1 widened, and y32, where Y is computed. */
static void half_operands(Emit *E, Operand *in, int nin, Operand *y32)
{
	int node = (int)(E->n - E->g->nodes);
	int buf = E->plan->scratch_of[node];
	KILN_ASSERT(buf != NONE);
	int64_t off = E->plan->bufs[buf].off;
	emitf(E, "\t/* %s computed in float32: operands widened into arena scratch @%" PRId64 "+%"
	      PRId64 ", the result rounded to nearest even */\n", dtype_name(in[0].dtype), off,
	      E->plan->bufs[buf].bytes);
	for (int k = 0; k < nin; k++)
		if (in[k].expr)
			in[k] = widened(E, &in[k], &off, true);
	Operand Y = out_op(E, 0);
	*y32 = widened(E, &Y, &off, false);
}

static void half_store(Emit *E, const Operand *y32)
{
	Operand Y = out_op(E, 0);
	emitf(E, "\t{\n");
	emit_map_widened(E, &Y, y32, 1, "x0", NULL);
	emitf(E, "\t}\n");
}

/* Gemm on A (float32), with half non-NULL: B, C and Y widened (half[0..2]). */
static void gemm_f32(Emit *E, Operand A, Operand Y, const Operand *half)
{
	Infer inf = emit_infer(E);
	GemmParams gp;
	gemm_params(&inf, &gp);
	bool ta = gp.trans_a, tb = gp.trans_b;
	double alpha = (double)gp.alpha, beta = (double)gp.beta;
	int64_t M = Y.shape->dims[0].size, N = Y.shape->dims[1].size;
	int64_t K = A.shape->dims[ta ? 0 : 1].size;
	bool has_c = E->n->nin > 2 && E->n->in[2] != NONE && beta != 0.0;
	const char *pb = ta || half ? NULL : packed_b(E, tb, K, N);
	decl(E, "A", &A, false);
	Operand B = {0};
	const char *bt = !pb && !ta && tb && !half && E->sig->dtypes[E->n->in[1]] == DT_FLOAT16
	               ? transposed_f16_b(E, K, N) : NULL;
	if (bt) {
		/* a float16 B^T weight stored as [K, N]: read untransposed */
		emitf(E, "\t/* B: the float16 weight stored transposed, [K, N], at compile time */\n");
		B = (Operand){.dtype = DT_FLOAT16, .expr = bt};
		tb = false;
		decl(E, "B", &B, false);
	} else if (!pb) {
		B = half ? half[0] : in_op(E, 1);
		decl(E, "B", &B, false);
	}
	/* Optional C: a per-column C ([N], [1,N]) with beta 1 goes to the kernel's
	 * epilogue as its bias (emit/epilogue.c), added in registers; any other C
	 * is first written into Y, broadcast to [M, N], and accumulated with beta. */
	bool fused = E->n->fused.members != NULL;
	Operand C = has_c ? half ? half[1] : in_op(E, 2) : Y;
	bool col = has_c && beta == 1.0 && C.nelem == N && C.shape->rank >= 1 &&
	           C.shape->dims[C.shape->rank - 1].size == N;
	if (has_c && !col) {
		Operand cy = Y;
		emit_map(E, &cy, &C, 1, "x0");
	} else {
		decl(E, "Y", &Y, true);
	}
	const char *ep = fused || col ? emit_epilogue(E, col ? C.expr : NULL, NULL) : NULL;
	const char *cbeta = has_c && !col ? flit(E, beta, DT_FLOAT) : "0.0f";
	if (pb) {
		/* B packed at compile time: the micro-kernels stream it as it is. */
		emitf(E, "\tkiln_f32_gemm_pb(%" PRId64 ", %" PRId64 ", %" PRId64 ", %s, A, %" PRId64
		       ", %s, %s, Y, %" PRId64 ", %s);\n",
		    M, N, K, flit(E, alpha, DT_FLOAT), K, pb, cbeta, N, ep ? ep : "NULL");
		return;
	}
	/* B may be a float16 weight the kernel widens (passes/fuse.c). */
	bool with_ep = B.dtype == DT_FLOAT16 || ep;
	const char *fn = B.dtype == DT_FLOAT16 ? "kiln_f32_gemm_f16b" : ep ? "kiln_f32_gemm_ep"
	                                                                    : "kiln_f32_gemm";
	emitf(E, "\t%s(%" PRId64 ", %" PRId64 ", %" PRId64 ", %s, A, %" PRId64 ", %" PRId64
	       ", B, %" PRId64 ", %" PRId64 ", %s, Y, %" PRId64 "%s%s);\n",
	    fn, M, N, K, flit(E, alpha, DT_FLOAT), ta ? (int64_t)1 : K, ta ? M : (int64_t)1,
	    tb ? (int64_t)1 : N, tb ? K : (int64_t)1, cbeta, N, with_ep ? ", " : "",
	    with_ep ? (ep ? ep : "NULL") : "");
}

/* A GEMM node's code: body on its float32 operands, or, for 16-bit floats,
 * on the first nin inputs widened and the float32 result, then rounded. */
typedef void (*GemmBody)(Emit *E, Operand A, Operand Y, const Operand *half);

static void gemm_node(Emit *E, int nin, GemmBody body)
{
	Operand A = in_op(E, 0);
	if (!is_half(A.dtype)) {
		require_f32(E, &A);
		body(E, A, out_op(E, 0), NULL);
		return;
	}
	Operand in[3] = {A}, y32;
	for (int k = 1; k < nin; k++)
		in[k] = in_op(E, k);
	half_operands(E, in, nin, &y32);
	body(E, in[0], y32, in + 1);
	half_store(E, &y32);
}

void emit_gemm(Emit *E)
{
	Infer inf = emit_infer(E);
	GemmParams gp;
	gemm_params(&inf, &gp);
	bool has_c = E->n->nin > 2 && E->n->in[2] != NONE && gp.beta != 0.0f;
	gemm_node(E, has_c ? 3 : 2, gemm_f32);
}

/* A MatMul's geometry: 1-D operands as matrices, the batch dims of each
 * operand (ab, bb) and of the output (ob, numpy broadcasting), nb batch
 * matrices of M x K times K x N. Shared with the integer MatMuls. */
void matmul_geometry(const Shape *a_in, const Shape *b_in, MatmulGeo *g)
{
	Shape a = matmul_operand(a_in, true), b = matmul_operand(b_in, false);
	g->M = a.dims[a.rank - 2].size;
	g->K = a.dims[a.rank - 1].size;
	g->N = b.dims[b.rank - 1].size;
	int br = (a.rank > b.rank ? a.rank : b.rank) - 2;
	g->ob = (Shape){.rank = br};
	g->ab = (Shape){.rank = a.rank - 2};
	g->bb = (Shape){.rank = b.rank - 2};
	for (int k = 0; k < g->ab.rank; k++)
		g->ab.dims[k] = a.dims[k];
	for (int k = 0; k < g->bb.rank; k++)
		g->bb.dims[k] = b.dims[k];
	g->nb = 1;
	for (int k = 0; k < br; k++) {
		int ia = k - (br - g->ab.rank), ib = k - (br - g->bb.rank);
		int64_t da = ia >= 0 ? g->ab.dims[ia].size : 1, db = ib >= 0 ? g->bb.dims[ib].size : 1;
		g->ob.dims[k].size = da > db ? da : db;
		g->nb *= g->ob.dims[k].size;
	}
}

/* MatMul on A (float32), with half non-NULL: B and Y widened (half[0..1]). */
static void matmul_f32(Emit *E, Operand A, Operand Y, const Operand *half)
{
	const Shape *bshape = &E->sig->shapes[E->n->in[1]];
	MatmulGeo g;
	matmul_geometry(A.shape, bshape, &g);
	if (bshape->rank == 2 && !half) {
		/* B a 2-D weight: every row of A (over A's batch dims too, which are
		 * contiguous) times the same packed B, in one call. */
		const char *pb = packed_b(E, false, g.K, g.N);
		if (pb) {
			decl(E, "A", &A, false);
			decl(E, "Y", &Y, true);
			emitf(E, "\tkiln_f32_gemm_pb(%" PRId64 ", %" PRId64 ", %" PRId64 ", 1.0f, A, %" PRId64
			       ", %s, 0.0f, Y, %" PRId64 ", NULL);\n", g.nb * g.M, g.N, g.K, g.K, pb, g.N);
			return;
		}
	}
	Operand B = half ? half[0] : in_op(E, 1);
	int64_t M = g.M, K = g.K, N = g.N, nb = g.nb;
	int br = g.ob.rank;
	const Shape ob = g.ob, ab = g.ab, bb = g.bb;
	int64_t as[KILN_MAX_RANK], bs[KILN_MAX_RANK];
	bcast_strides(&ab, &ob, as);
	bcast_strides(&bb, &ob, bs);
	decl(E, "A", &A, false);
	decl(E, "B", &B, false);
	decl(E, "Y", &Y, true);
	if (nb == 1) {
		emitf(E, "\tkiln_f32_gemm(%" PRId64 ", %" PRId64 ", %" PRId64 ", 1.0f, A, %" PRId64
		       ", 1, B, %" PRId64 ", 1, 0.0f, Y, %" PRId64 ");\n", M, N, K, K, N, N);
		return;
	}
	emitf(E, "\tfor (int64_t i = 0; i < %" PRId64 "; i++) {\n", nb);
	emitf(E, "\t\tint64_t r = i, ao = 0, bo = 0;\n");
	for (int k = br - 1; k >= 0; k--) {
		emitf(E, "\t\t{ int64_t c = r %% %" PRId64 "; r /= %" PRId64 ";", ob.dims[k].size,
		    ob.dims[k].size);
		if (as[k])
			emitf(E, " ao += c * %" PRId64 ";", as[k]);
		if (bs[k])
			emitf(E, " bo += c * %" PRId64 ";", bs[k]);
		emitf(E, " (void)c; }\n");
	}
	emitf(E, "\t\tkiln_f32_gemm(%" PRId64 ", %" PRId64 ", %" PRId64 ", 1.0f, A + ao * %" PRId64
	       ", %" PRId64 ", 1, B + bo * %" PRId64 ", %" PRId64 ", 1, 0.0f, Y + i * %" PRId64
	       ", %" PRId64 ");\n\t}\n",
	    M, N, K, M * K, K, K * N, N, M * N, N);
}


void emit_matmul(Emit *E)
{
	gemm_node(E, 2, matmul_f32);
}

/* Einsum as loops: one per output letter, then one per summed letter, and
 * the product of the operands' elements accumulated (in double for floats). */
void emit_einsum(Emit *E)
{
	Infer inf = {.sig = (Sig *)E->sig, .g = E->g, .n = E->n, .d = E->d, .a = E->a};
	Einsum e;
	einsum_parse(&inf, &e);
	Operand Y = out_op(E, 0);
	decl(E, "Y", &Y, true);
	Operand xs[EINSUM_MAX_OPERANDS];
	for (int k = 0; k < e.noperands; k++) {
		xs[k] = in_op(E, k);
		require_not_half(E, &xs[k]);
		char var[8];
		snprintf(var, sizeof var, "X%d", k);
		decl(E, var, &xs[k], false);
	}
	if (Y.nelem == 0)
		return;
	char letters[64];
	int nl = 0;
	for (const char *q = e.out; *q; q++)
		letters[nl++] = *q;
	int nout = nl;
	for (int k = 0; k < e.noperands; k++)
		for (const char *q = e.term[k]; *q; q++)
			if (!memchr(letters, *q, (size_t)nl))
				letters[nl++] = *q;
	const char *acc_t = is_float(Y.dtype) ? "double" : ctype(Y.dtype);
	emitf(E, "\tint64_t at = 0;\n");
	char ind[80] = "\t";
	int depth = 0;
	for (int i = 0; i <= nl; i++) {
		if (i == nout)  /* every output element: a fresh sum over the other letters */
			emitf(E, "%s%s acc = 0;\n", ind, acc_t);
		if (i == nl)
			break;
		emitf(E, "%sfor (int64_t l%d = 0; l%d < %" PRId64 "; l%d++) {\n", ind, i, i,
		    e.size[(unsigned char)letters[i]], i);
		ind[++depth] = '\t';
	}
	emitf(E, "%sacc += (%s)1", ind, acc_t);
	for (int k = 0; k < e.noperands; k++) {
		emitf(E, " * (%s)X%d[0", acc_t, k);
		int64_t st = 1;
		for (int a = xs[k].shape->rank - 1; a >= 0; a--) {
			int li = (int)((const char *)memchr(letters, e.term[k][a], (size_t)nl) - letters);
			if (xs[k].shape->dims[a].size != 1)
				emitf(E, " + l%d * %" PRId64, li, st);
			st *= xs[k].shape->dims[a].size;
		}
		emitf(E, "]");
	}
	emitf(E, ";\n");
	if (nl == nout) /* nothing summed: each element is one product */
		emitf(E, "%sY[at++] = (%s)acc;\n", ind, ctype(Y.dtype));
	while (depth > 0) {
		ind[depth--] = 0;
		emitf(E, "%s}\n", ind);
		if (depth == nout && nl > nout)
			emitf(E, "%sY[at++] = (%s)acc;\n", ind, ctype(Y.dtype));
	}
}

/* KilnSelect (passes/onehot.c): a MatMul by a selection matrix as one
 * kiln_f32_select call, gathering x's columns. */
void emit_kiln_select(Emit *E)
{
	Operand X = in_op(E, 0), S = in_op(E, 1), Y = out_op(E, 0);
	int64_t k = X.shape->dims[X.shape->rank - 1].size;
	emitf(E, "\treturn kiln_f32_select(%s, %s, %s, %" PRId64 ", %" PRId64 ", %" PRId64 ");\n",
	      X.expr, S.expr, Y.expr, k ? X.nelem / k : 0, k, S.nelem);
}

/* KilnSelectSum (passes/mlpconv.c): one kiln_f32_select_sum call. */
void emit_kiln_select_sum(Emit *E)
{
	Operand P = in_op(E, 0), S = in_op(E, 1), Y = out_op(E, 0);
	int64_t parts = S.shape->dims[0].size, m = S.shape->dims[1].size;
	Infer inf = emit_infer(E);
	emitf(E, "\treturn kiln_f32_select_sum(%s, %s, %s, %" PRId64 ", %" PRId64 ", %" PRId64
	      ", %" PRId64 ", %" PRId64 ", %d);\n", P.expr, S.expr, Y.expr, P.shape->dims[0].size,
	      P.shape->dims[1].size / parts, P.shape->dims[2].size, m, parts,
	      select_sum_relu(&inf) ? 1 : 0);
}
