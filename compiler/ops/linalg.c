/*
 * ops/linalg.c - shape inference for Gemm, MatMul, Einsum and the fused
 * selection product KilnSelect.
 *
 * Gemm: Y[M,N] = alpha * op(A) op(B) + beta * C, with op() an optional
 * transpose and C unidirectionally broadcastable to [M,N]. MatMul follows
 * numpy.matmul: 1-D operands gain and then lose a unit dim, and the leading
 * (batch) dims broadcast.
 */
#include <string.h>

#include "emit_c.h"
#include "ops/ops.h"
#include "opdef.h"

void gemm_params(Infer *x, GemmParams *p)
{
	p->trans_a = attr_int(x, "transA", 0) != 0;
	p->trans_b = attr_int(x, "transB", 0) != 0;
	p->alpha = attr_float(x, "alpha", 1.0f);
	p->beta = attr_float(x, "beta", 1.0f);
}

static void infer_gemm(Infer *x)
{
	const Shape *a = infer_shape(x, 0), *b = infer_shape(x, 1);
	if (a->rank != 2 || b->rank != 2)
		infer_fail(x, KILN_SHAPE_ERROR, "A and B must be 2-D, got rank %d and %d", a->rank,
		           b->rank);
	GemmParams gp;
	gemm_params(x, &gp);
	bool ta = gp.trans_a, tb = gp.trans_b;
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

/* Einsum: parse the equation into one letter per axis of each operand and
 * of the output. An ellipsis stands for the same leading axes in every
 * operand, named by the internal letters '0'..'7'; without "->" the output
 * is the ellipsis axes, then the letters used once, in alphabetical order. */
void einsum_parse(Infer *x, Einsum *e)
{
	const char *eq = attr_string(x, "equation", "");
	char clean[256];
	size_t n = 0;
	for (const char *p = eq; *p && n + 1 < sizeof clean; p++)
		if (*p != ' ')
			clean[n++] = *p;
	clean[n] = 0;
	const char *arrow = strstr(clean, "->");
	memset(e, 0, sizeof *e);
	e->implicit = !arrow;
	e->ellipsis = strstr(clean, "...") != NULL;
	int64_t size[128];
	for (int i = 0; i < 128; i++)
		size[i] = -1;
	int nell = -1;
	const char *p = clean;
	for (int k = 0;; k++) {
		if (k >= x->n->nin || k >= EINSUM_MAX_OPERANDS)
			infer_fail(x, KILN_INVALID_MODEL, "equation \"%s\" does not match the inputs", eq);
		const Shape *s = infer_shape(x, k);
		char *t = e->term[k];
		int len = 0;
		for (; *p && *p != ',' && (!arrow || p < arrow); p++) {
			if (p[0] == '.' && p[1] == '.' && p[2] == '.') {
				int explicit_letters = 0;
				for (const char *q = p + 3; *q && *q != ',' && (!arrow || q < arrow); q++)
					explicit_letters += *q != '.';
				int ne = s->rank - len - explicit_letters;
				if (ne < 0 || (nell >= 0 && ne != nell))
					infer_fail(x, KILN_SHAPE_ERROR, "the ellipsis does not fit operand %d", k);
				nell = ne;
				for (int i = 0; i < ne; i++)
					t[len++] = (char)('0' + i);
				p += 2;
			} else if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')) {
				t[len++] = *p;
			} else {
				infer_fail(x, KILN_INVALID_MODEL, "bad character in equation \"%s\"", eq);
			}
			if (len > KILN_MAX_RANK)
				infer_fail(x, KILN_LIMIT, "operand %d has too many axes", k);
		}
		t[len] = 0;
		if (len != s->rank)
			infer_fail(x, KILN_SHAPE_ERROR, "operand %d has rank %d; the equation gives %d", k,
			           s->rank, len);
		for (int i = 0; i < len; i++) {
			int64_t d = s->dims[i].size, *have = &size[(unsigned char)t[i]];
			if (*have >= 0 && *have != d && *have != 1 && d != 1)
				infer_fail(x, KILN_SHAPE_ERROR, "axis '%c' is %lld in one operand and %lld in another",
				           t[i], (long long)*have, (long long)d);
			if (*have < 0 || *have == 1)
				*have = d;
		}
		e->noperands = k + 1;
		if (*p != ',')
			break;
		p++;
	}
	if (e->noperands != x->n->nin)
		infer_fail(x, KILN_INVALID_MODEL, "equation has %d operands for %d inputs", e->noperands,
		           x->n->nin);
	/* The output, like the operands: letters and one ellipsis, at most
	 * KILN_MAX_RANK axes (found by tests/fuzz: any byte used to index size[]). */
	int olen = 0;
	if (arrow) {
		for (const char *q = arrow + 2; *q; q++) {
			if (q[0] == '.' && q[1] == '.' && q[2] == '.') {
				for (int i = 0; i < (nell > 0 ? nell : 0) && olen <= KILN_MAX_RANK; i++)
					e->out[olen++] = (char)('0' + i);
				q += 2;
			} else if ((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z')) {
				e->out[olen++] = *q;
			} else {
				infer_fail(x, KILN_INVALID_MODEL, "bad character in equation \"%s\"", eq);
			}
			if (olen > KILN_MAX_RANK)
				infer_fail(x, KILN_LIMIT, "the output has more than %d axes", KILN_MAX_RANK);
		}
	} else {
		for (int i = 0; i < (nell > 0 ? nell : 0); i++)
			e->out[olen++] = (char)('0' + i);
		for (int c = 'A'; c <= 'z'; c++) {
			int uses = 0;
			for (int k = 0; k < e->noperands; k++)
				for (const char *q = e->term[k]; *q; q++)
					uses += *q == c;
			if (uses == 1 && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')))
				e->out[olen++] = (char)c;
			if (olen > KILN_MAX_RANK)
				infer_fail(x, KILN_LIMIT, "the output has more than %d axes", KILN_MAX_RANK);
		}
	}
	e->out[olen] = 0;
	for (int i = 0; i < 128; i++)
		e->size[i] = size[i];
	for (int i = 0; i < olen; i++)
		if (size[(unsigned char)e->out[i]] < 0)
			infer_fail(x, KILN_INVALID_MODEL, "output axis '%c' is in no operand", e->out[i]);
}

static void infer_einsum(Infer *x)
{
	Einsum e;
	einsum_parse(x, &e);
	Shape y = {.rank = (int)strlen(e.out)};
	if (y.rank > KILN_MAX_RANK)
		infer_fail(x, KILN_LIMIT, "output rank exceeds %d", KILN_MAX_RANK);
	for (int i = 0; i < y.rank; i++)
		y.dims[i].size = e.size[(unsigned char)e.out[i]];
	infer_set_output(x, 0, infer_dtype(x, 0), &y);
}

/* KilnSelect (passes/onehot.c): x [.., K] times the selection matrix [K, M]
 * given by src [M], the row of each column's 1 (checked at run time). */
static void infer_select(Infer *x)
{
	const Shape *a = infer_shape(x, 0), *src = infer_shape(x, 1);
	if (a->rank < 1 || infer_dtype(x, 0) != DT_FLOAT || src->rank != 1 ||
	    infer_dtype(x, 1) != DT_INT64)
		infer_fail(x, KILN_INVALID_MODEL, "malformed fused selection node");
	Shape y = *a;
	y.dims[y.rank - 1] = src->dims[0];
	infer_set_output(x, 0, DT_FLOAT, &y);
}

/* KilnSelectSum (passes/mlpconv.c): P [N, parts * C, K] and src [parts, M]
 * (checked at run time) give [N, C, M]. */
static void infer_select_sum(Infer *x)
{
	const Shape *p = infer_shape(x, 0), *src = infer_shape(x, 1);
	if (p->rank != 3 || infer_dtype(x, 0) != DT_FLOAT || src->rank != 2 ||
	    infer_dtype(x, 1) != DT_INT64 || src->dims[0].size < 1 ||
	    p->dims[1].size % src->dims[0].size != 0)
		infer_fail(x, KILN_INVALID_MODEL, "malformed fused selection sum node");
	Shape y = *p;
	y.dims[1].size = p->dims[1].size / src->dims[0].size;
	y.dims[2] = src->dims[1];
	select_sum_relu(x);   /* its type */
	infer_set_output(x, 0, DT_FLOAT, &y);
}

/* KilnSelectSum: a Relu passes/mlpconv.c fused into the sum (kiln.relu). */
bool select_sum_relu(Infer *x)
{
	return attr_int(x, "kiln.relu", 0) != 0;
}

void ops_linalg_infer(Infer *x)
{
	if (x->n->op == OP_Gemm)
		infer_gemm(x);
	else if (x->n->op == OP_Einsum)
		infer_einsum(x);
	else if (x->n->op == OP_KilnSelect)
		infer_select(x);
	else if (x->n->op == OP_KilnSelectSum)
		infer_select_sum(x);
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

/* The stitching model's multiply-adds (stitch.c): 2 per output element and
 * step of K, which transA takes from A's first dim instead of its second.
 * The attributes were checked at inference: gemm_params cannot fail here. */
static double gemm_flops(const Sig *s, const Node *n)
{
	Infer x = {.sig = (Sig *)s, .g = s->g, .n = (Node *)n, .a = s->a};
	GemmParams p;
	gemm_params(&x, &p);
	double out = 0;
	for (int k = 0; k < n->nout; k++) {
		int64_t e = n->out[k] == NONE ? 0 : shape_nelem(&s->shapes[n->out[k]]);
		out += (double)(e < 0 ? 0 : e);
	}
	const Shape *a = &s->shapes[n->in[0]];
	int ka = p.trans_a ? 0 : 1;
	return 2 * out * (double)(ka < a->rank ? a->dims[ka].size : 1);
}

const OpDef ops_linalg_defs[] = {
	{.op = OP_Gemm, .infer = ops_linalg_infer, .emit = emit_gemm, .batch = BK_GEMM,
	 .scratch = gemm_scratch_bytes, .flops = gemm_flops, .tile = TK_GEMM_TRANS_A,
	 .types = OT_F32 | OT_F16 | OT_BF16,
	 .note = "runtime GEMM kernel; 16-bit floats computed in float32, the result rounded to "
	         "nearest even"},
	{.op = OP_MatMul, .infer = ops_linalg_infer, .emit = emit_matmul, .batch = BK_MATMUL,
	 .scratch = gemm_scratch_bytes, .cost = CK_MATMUL, .tile = TK_GEMM,
	 .types = OT_F32 | OT_F16 | OT_BF16,
	 .note = "runtime GEMM kernel; batched with broadcasting; 16-bit floats computed in "
	         "float32, the result rounded to nearest even"},
	{.op = OP_Einsum, .infer = ops_linalg_infer, .emit = emit_einsum, .batch = BK_EINSUM,
	 .types = OT_F32 | OT_F64 | OT_INTS,
	 .note = "any equation, with ellipsis; generated loops"},
	{.op = OP_KilnSelect, .infer = ops_linalg_infer, .emit = emit_kiln_select, .emit_returns = true,
	 .batch = BK_ALONG_AXIS, .along = "selects columns", .axis = infer_last_axis,
	 .types = OT_F32,
	 .note = "a MatMul by a constant selection matrix (0/1, one 1 per column) as a gather of "
	         "x's columns, + 0.0f, and the GEMM's sum on rows holding an infinity or NaN: "
	         "the MatMul's bits (passes/onehot.c, kiln_f32_select)"},
	{.op = OP_KilnSelectSum, .infer = ops_linalg_infer, .emit = emit_kiln_select_sum,
	 .emit_returns = true, .batch = BK_N_FIRST, .types = OT_F32,
	 .note = "a 1x1 convolution of the channel concatenation of column selections of one "
	         "tensor, as the selections of its convolution added (and a fused Relu): "
	         "passes/mlpconv.c, kiln_f32_select_sum"},
	{.op = NONE},
};
