/*
 * ops/quant.c - shape inference for the integer and quantized ops:
 * MatMulInteger, QLinearMatMul, ConvInteger, QLinearConv and
 * DynamicQuantizeLinear (ONNX opsets 10 and 11); QuantizeLinear and
 * DequantizeLinear (opsets 10-21: per tensor, per axis, blocked; int8 to
 * int32, int4/uint4 and float8).
 *
 * The matmuls follow numpy.matmul (1-D operands gain a unit dim, batch dims
 * broadcast). A zero point or scale is one value per tensor, one per row of
 * A or per column of B ([M] or [N] for 2-D operands, [D.., M, 1] or
 * [D.., 1, N] for batched ones), as the ONNX spec lists; quant_param_kind
 * classifies it for the emitter. The convolutions take every Conv attribute;
 * qconv_geometry derives pads and output sizes as Conv does. Each zero point
 * must have the element type of the tensor it belongs to.
 */
#include <string.h>

#include "emit_c.h"
#include "ops/ops.h"
#include "opdef.h"

static bool is_q8(int dt)
{
	return dt == DT_UINT8 || dt == DT_INT8;
}

/* The optimizer's QDQ products (passes/qdq.c), KilnQLinearConv and
 * KilnQLinearMatMul, also take int16 and uint16 operands and outputs. */
static bool is_qdq_node(Infer *x)
{
	return x->n->domain_id == DOMAIN_KILN;
}

static bool is_qtype(Infer *x, int dt)
{
	return is_q8(dt) || (is_qdq_node(x) && (dt == DT_UINT16 || dt == DT_INT16));
}

/* Input i must be int8 or uint8 (or 16-bit in a QDQ product). */
static void require_q8(Infer *x, int i, const char *what)
{
	int dt = infer_dtype(x, i);
	if (!is_qtype(x, dt))
		infer_fail(x, KILN_INVALID_MODEL, "%s must be int8 or uint8, not %s", what,
		           dtype_name(dt));
}


/* Optional zero point zi of the tensor di: the same element type. */
static void require_zero_type(Infer *x, int zi, int di, const char *what)
{
	if (infer_has_input(x, zi) && infer_dtype(x, zi) != infer_dtype(x, di))
		infer_fail(x, KILN_INVALID_MODEL, "%s is %s but its tensor is %s", what,
		           dtype_name(infer_dtype(x, zi)), dtype_name(infer_dtype(x, di)));
}

static void require_scale(Infer *x, int i, const char *what)
{
	if (!infer_has_input(x, i))
		infer_fail(x, KILN_INVALID_MODEL, "%s is missing", what);
	if (infer_dtype(x, i) != DT_FLOAT)
		infer_fail(x, KILN_INVALID_MODEL, "%s must be float32, not %s", what,
		           dtype_name(infer_dtype(x, i)));
}

/* A per-tensor parameter: exactly one element. */
static void require_one(Infer *x, int i, const char *what)
{
	if (infer_has_input(x, i) && shape_nelem(infer_shape(x, i)) != 1)
		infer_fail(x, KILN_UNSUPPORTED, "%s must be a single value (per tensor)", what);
}

/* A QDQ product's int32 bias (input 8, one per output column or channel) and
 * its float32 scale (input 9: one, or one per bias element). */
static void require_qdq_bias(Infer *x, int64_t len)
{
	if (!infer_has_input(x, 8))
		return;
	const Shape *b = infer_shape(x, 8);
	if (infer_dtype(x, 8) != DT_INT32 || b->rank != 1 || b->dims[0].size != len)
		infer_fail(x, KILN_SHAPE_ERROR, "the bias must be int32 [%lld]", (long long)len);
	require_scale(x, 9, "the bias scale");
	int64_t ns = shape_nelem(infer_shape(x, 9));
	if (ns != 1 && ns != len)
		infer_fail(x, KILN_SHAPE_ERROR, "the bias scale must be one value or %lld",
		           (long long)len);
}

/* ---- matrix products ---- */

/* The operand shape with a 1-D operand promoted to a matrix, as numpy. */
QParamKind quant_param_kind(Infer *x, int i, const Shape *operand, bool per_row)
{
	if (!infer_has_input(x, i))
		return QP_NONE;
	const Shape *p = infer_shape(x, i);
	if (shape_nelem(p) == 1)
		return QP_TENSOR;
	Shape m = matmul_operand(operand, per_row);
	int r = m.rank;
	int64_t len = per_row ? m.dims[r - 2].size : m.dims[r - 1].size;
	if (p->rank == 1 && p->dims[0].size == len)
		return QP_VECTOR;
	bool fits = p->rank == r;
	for (int k = 0; fits && k < r - 2; k++)
		fits = p->dims[k].size == 1 || p->dims[k].size == m.dims[k].size;
	if (fits)
		fits = per_row ? p->dims[r - 2].size == len && p->dims[r - 1].size == 1
		               : p->dims[r - 2].size == 1 && p->dims[r - 1].size == len;
	if (!fits)
		infer_fail(x, KILN_SHAPE_ERROR,
		           "zero point or scale \"%s\" is neither one value nor one per %s of %s "
		           "([%s] or [..., %s])", infer_input_name(x, i), per_row ? "row" : "column",
		           per_row ? "A" : "B", per_row ? "M" : "N", per_row ? "M, 1" : "1, N");
	return QP_BATCHED;
}

static void infer_qmatmul(Infer *x)
{
	bool ql = x->n->op == OP_QLinearMatMul || x->n->op == OP_KilnQLinearMatMul;
	int ia = 0, ib = ql ? 3 : 1, iza = 2, izb = ql ? 5 : 3;
	require_q8(x, ia, "A");
	require_q8(x, ib, "B");
	require_zero_type(x, iza, ia, "the zero point of A");
	require_zero_type(x, izb, ib, "the zero point of B");
	Shape a = *infer_shape(x, ia), b = *infer_shape(x, ib);
	if (a.rank < 1 || b.rank < 1)
		infer_fail(x, KILN_SHAPE_ERROR, "operands must have rank >= 1");
	QParamKind kza = quant_param_kind(x, iza, &a, true);
	QParamKind kzb = quant_param_kind(x, izb, &b, false);
	int out_dt = DT_INT32;
	if (ql) {
		require_scale(x, 1, "a_scale");
		require_scale(x, 4, "b_scale");
		require_scale(x, 6, "y_scale");
		/* The spec pairs each scale with its zero point: the same layout. */
		if (quant_param_kind(x, 1, &a, true) != kza && kza != QP_NONE)
			infer_fail(x, KILN_SHAPE_ERROR, "a_scale and a_zero_point have different shapes");
		if (quant_param_kind(x, 4, &b, false) != kzb && kzb != QP_NONE)
			infer_fail(x, KILN_SHAPE_ERROR, "b_scale and b_zero_point have different shapes");
		require_one(x, 6, "y_scale");
		require_one(x, 7, "y_zero_point");
		out_dt = infer_has_input(x, 7) ? infer_dtype(x, 7) : DT_UINT8;
		if (!is_qtype(x, out_dt))
			infer_fail(x, KILN_INVALID_MODEL, "y_zero_point must be int8 or uint8, not %s",
			           dtype_name(out_dt));
		if (is_qdq_node(x))
			require_qdq_bias(x, b.dims[b.rank - 1].size);
	}
	Shape y;
	matmul_output_shape(x, &a, &b, &y);
	infer_set_output(x, 0, out_dt, &y);
}

/* KilnQLinearConv and KilnQLinearMatMul: a Relu passes/qdq.c fused into the
 * product (kiln.relu). */
bool quant_fused_relu(Infer *x)
{
	return x->n->domain_id == DOMAIN_KILN && attr_int(x, "kiln.relu", 0) != 0;
}

/* ---- convolutions ---- */

void qconv_geometry(Infer *x, const Shape *in, const Shape *w, QConvGeometry *g)
{
	int ns = in->rank - 2;
	if (in->rank < 3 || w->rank != in->rank)
		infer_fail(x, KILN_SHAPE_ERROR,
		           "input and weights must be (N, C, spatial...) of one rank, got %d and %d",
		           in->rank, w->rank);
	if (ns > 3)
		infer_fail(x, KILN_UNSUPPORTED, "%d spatial axes; kiln supports 1 to 3", ns);
	memset(g, 0, sizeof *g);
	g->ns = ns;
	g->group = attr_int(x, "group", 1);
	int64_t c = in->dims[1].size, m = w->dims[0].size;
	if (g->group < 1 || c % g->group || m % g->group || w->dims[1].size * g->group != c)
		infer_fail(x, KILN_SHAPE_ERROR,
		           "channels do not fit: input has %lld, weights [%lld,%lld,...] with group %lld",
		           (long long)c, (long long)m, (long long)w->dims[1].size, (long long)g->group);
	g->out_channels = m;
	int64_t v[6];
	int nk = attr_ints(x, "kernel_shape", v, 6);
	for (int i = 0; i < ns; i++) {
		g->kernel[i] = w->dims[2 + i].size;
		if (nk >= 0 && (nk != ns || v[i] != g->kernel[i]))
			infer_fail(x, KILN_SHAPE_ERROR, "kernel_shape does not match the weights");
		g->stride[i] = g->dilation[i] = 1;
	}
	int n = attr_ints(x, "strides", v, 6);
	if (n >= 0 && n != ns)
		infer_fail(x, KILN_INVALID_MODEL, "strides has %d values for %d spatial axes", n, ns);
	for (int i = 0; i < n; i++)
		g->stride[i] = v[i];
	n = attr_ints(x, "dilations", v, 6);
	if (n >= 0 && n != ns)
		infer_fail(x, KILN_INVALID_MODEL, "dilations has %d values for %d spatial axes", n, ns);
	for (int i = 0; i < n; i++)
		g->dilation[i] = v[i];
	for (int i = 0; i < ns; i++)
		if (g->stride[i] < 1 || g->dilation[i] < 1 || g->kernel[i] < 1)
			infer_fail(x, KILN_INVALID_MODEL, "kernel, strides and dilations must be >= 1");
	const char *ap = attr_string(x, "auto_pad", "NOTSET");
	bool same = strcmp(ap, "SAME_UPPER") == 0 || strcmp(ap, "SAME_LOWER") == 0;
	bool valid = strcmp(ap, "VALID") == 0;
	if (!same && !valid && strcmp(ap, "NOTSET") != 0)
		infer_fail(x, KILN_INVALID_MODEL,
		           "auto_pad \"%s\" is not NOTSET, SAME_UPPER, SAME_LOWER or VALID", ap);
	n = attr_ints(x, "pads", v, 6);
	if (n >= 0 && n != 2 * ns)
		infer_fail(x, KILN_INVALID_MODEL, "pads has %d values for %d spatial axes", n, ns);
	for (int i = 0; i < ns; i++) {
		int64_t size = in->dims[2 + i].size;
		int64_t span = (g->kernel[i] - 1) * g->dilation[i] + 1;
		if (same) {
			int64_t out = (size + g->stride[i] - 1) / g->stride[i];
			int64_t total = (out - 1) * g->stride[i] + span - size;
			if (total < 0)
				total = 0;
			g->pad_begin[i] = ap[5] == 'U' ? total / 2 : total - total / 2;
			g->pad_end[i] = total - g->pad_begin[i];
			g->out[i] = out;
			continue;
		}
		if (!valid && n > 0) {
			g->pad_begin[i] = v[i];
			g->pad_end[i] = v[ns + i];
			if (g->pad_begin[i] < 0 || g->pad_end[i] < 0)
				infer_fail(x, KILN_INVALID_MODEL, "pads must not be negative");
		}
		int64_t room = size + g->pad_begin[i] + g->pad_end[i] - span;
		if (room < 0)
			infer_fail(x, KILN_SHAPE_ERROR,
			           "spatial axis %d: the window (%lld) is larger than the padded input (%lld)",
			           i, (long long)span, (long long)(size + g->pad_begin[i] + g->pad_end[i]));
		g->out[i] = room / g->stride[i] + 1;
	}
}

static void infer_qconv(Infer *x)
{
	bool ql = x->n->op == OP_QLinearConv || x->n->op == OP_KilnQLinearConv;
	int ix = 0, iw = ql ? 3 : 1, izx = 2, izw = ql ? 5 : 3;
	require_q8(x, ix, "x");
	require_q8(x, iw, "w");
	require_zero_type(x, izx, ix, "x_zero_point");
	require_zero_type(x, izw, iw, "w_zero_point");
	const Shape *in = infer_shape(x, ix), *w = infer_shape(x, iw);
	QConvGeometry g;
	qconv_geometry(x, in, w, &g);
	require_one(x, izx, "x_zero_point");
	/* w's zero point and scale: one, or one per output channel. */
	for (int k = 0; k < (ql ? 2 : 1); k++) {
		int i = k ? 4 : izw;
		if (!infer_has_input(x, i))
			continue;
		const Shape *s = infer_shape(x, i);
		int64_t ne = shape_nelem(s);
		if (ne != 1 && !(s->rank == 1 && ne == g.out_channels))
			infer_fail(x, KILN_SHAPE_ERROR, "%s must be one value or one per output channel (%lld)",
			           k ? "w_scale" : "w_zero_point", (long long)g.out_channels);
	}
	int out_dt = DT_INT32;
	if (ql) {
		require_scale(x, 1, "x_scale");
		require_scale(x, 4, "w_scale");
		require_scale(x, 6, "y_scale");
		require_one(x, 1, "x_scale");
		require_one(x, 6, "y_scale");
		require_one(x, 7, "y_zero_point");
		out_dt = infer_has_input(x, 7) ? infer_dtype(x, 7) : DT_UINT8;
		if (!is_qtype(x, out_dt))
			infer_fail(x, KILN_INVALID_MODEL, "y_zero_point must be int8 or uint8, not %s",
			           dtype_name(out_dt));
		if (is_qdq_node(x))
			require_qdq_bias(x, g.out_channels);
		if (infer_has_input(x, 8)) {
			const Shape *b = infer_shape(x, 8);
			if (infer_dtype(x, 8) != DT_INT32 || b->rank != 1 || b->dims[0].size != g.out_channels)
				infer_fail(x, KILN_SHAPE_ERROR, "B must be int32 [%lld]",
				           (long long)g.out_channels);
		}
	}
	Shape y = *in;
	y.dims[1] = (Dim){.size = g.out_channels};
	for (int i = 0; i < g.ns; i++)
		y.dims[2 + i] = (Dim){.size = g.out[i]};
	infer_set_output(x, 0, out_dt, &y);
}

/* ---- QuantizeLinear and DequantizeLinear ---- */

static bool is_qdq_type(int dt)
{
	switch (dt) {
	case DT_UINT8: case DT_INT8: case DT_UINT16: case DT_INT16: case DT_INT32:
	case DT_UINT4: case DT_INT4:
		return true;
	}
	return DT_IS_FLOAT8(dt);
}

/* bfloat16 scales and inputs (opset 19) are refused: ONNX Runtime 1.30
 * has no kernel for them to check against. */
static bool is_scale_type(int dt)
{
	return dt == DT_FLOAT || dt == DT_FLOAT16;
}

static const char *dims_str(Infer *x, const Shape *s)
{
	char *t = arena_printf(x->a, "[");
	for (int k = 0; k < s->rank; k++)
		t = arena_printf(x->a, "%s%s%lld", t, k ? ", " : "", (long long)s->dims[k].size);
	return arena_printf(x->a, "%s]", t);
}

/* A float8 zero point must be a constant +0 (bit pattern 0), as ONNX
 * Runtime requires; kiln then leaves it out. */
static void require_float8_zero(Infer *x)
{
	if (!infer_has_input(x, 2))
		return;
	const Folded *f = infer_folded(x, 2);
	if (!f)
		infer_fail(x, KILN_UNSUPPORTED, "the float8 zero point \"%s\" must be a constant 0",
		           infer_input_name(x, 2));
	for (int64_t k = 0; k < f->nelem; k++) {
		uint8_t b = ((const uint8_t *)f->data)[k];
		if (b != 0)
			infer_fail(x, KILN_UNSUPPORTED, "the float8 zero point \"%s\" must be 0, element %lld "
			           "is 0x%02x", infer_input_name(x, 2), (long long)k, b);
	}
}

void qdq_geometry(Infer *x, QdqGeometry *g)
{
	bool deq = x->n->op == OP_DequantizeLinear;
	memset(g, 0, sizeof *g);
	const Shape *xs = infer_shape(x, 0), *ss = infer_shape(x, 1);
	int r = xs->rank;
	int xdt = infer_dtype(x, 0), sdt = infer_dtype(x, 1);
	bool has_zp = infer_has_input(x, 2);
	/* Types: DQ's x and zero point are the quantized type, its scale the
	 * float type of y; Q's y is the zero point's type, else output_dtype
	 * (opset 21), else uint8. */
	if (!is_scale_type(sdt))
		infer_fail(x, sdt == DT_BFLOAT16 ? KILN_UNSUPPORTED : KILN_INVALID_MODEL,
		           "the scale must be float32 or float16, not %s", dtype_name(sdt));
	g->ftype = sdt;
	if (deq) {
		g->qtype = xdt;
	} else {
		int64_t od = x->n->since >= 21 ? attr_int(x, "output_dtype", 0) : 0;
		g->qtype = has_zp ? infer_dtype(x, 2) : od ? (int)od : DT_UINT8;
		if (has_zp && od && od != g->qtype)
			infer_fail(x, KILN_INVALID_MODEL, "output_dtype %lld does not match the zero point's "
			           "type %s", (long long)od, dtype_name(g->qtype));
		if (!dtype_valid(g->qtype))
			infer_fail(x, KILN_INVALID_MODEL, "output_dtype %lld is not an element type",
			           (long long)od);
		if (xdt != DT_FLOAT && xdt != DT_FLOAT16 && xdt != DT_INT32)
			infer_fail(x, xdt == DT_BFLOAT16 ? KILN_UNSUPPORTED : KILN_INVALID_MODEL,
			           "x must be float32, float16 or int32, not %s", dtype_name(xdt));
		g->saturate = x->n->since >= 19 && attr_int(x, "saturate", 1) != 0;
	}
	if (!is_qdq_type(g->qtype))
		infer_fail(x, KILN_UNSUPPORTED, "%s %s is not a quantized type (int8, uint8, int16, "
		           "uint16, int32, int4, uint4 or float8)", deq ? "x of" : "y of",
		           dtype_name(g->qtype));
	if (has_zp && infer_dtype(x, 2) != g->qtype)
		infer_fail(x, KILN_INVALID_MODEL, "the zero point is %s but x is %s",
		           dtype_name(infer_dtype(x, 2)), dtype_name(g->qtype));
	if (DT_IS_FLOAT8(g->qtype))
		require_float8_zero(x);
	/* Layout of the scale. */
	int64_t block = x->n->since >= 21 ? attr_int(x, "block_size", 0) : 0;
	int64_t ns = shape_nelem(ss);
	g->outer = shape_nelem(xs);
	g->len = g->inner = g->block = g->nblocks = 1;
	if (block < 0)
		infer_fail(x, KILN_INVALID_MODEL, "block_size must be >= 0, got %lld", (long long)block);
	if (block == 0 && ns == 1) {
		g->kind = QDQ_TENSOR;
	} else {
		int axis = infer_axis(x, attr_int(x, "axis", 1), r, "axis");
		g->outer = g->inner = 1;
		for (int k = 0; k < r; k++)
			if (k < axis)
				g->outer *= xs->dims[k].size;
			else if (k > axis)
				g->inner *= xs->dims[k].size;
		g->len = xs->dims[axis].size;
		if (block == 0) {
			if (ss->rank != 1 || ss->dims[0].size != g->len)
				infer_fail(x, KILN_SHAPE_ERROR, "the scale %s is neither one value nor one per "
				           "index of axis %d (%lld) of x %s", dims_str(x, ss), axis,
				           (long long)g->len, dims_str(x, xs));
			g->kind = QDQ_AXIS;
		} else {
			g->kind = QDQ_BLOCKED;
			g->block = block;
			g->nblocks = g->len / block + (g->len % block != 0);
			bool fits = ss->rank == r;
			for (int k = 0; fits && k < r; k++)
				fits = ss->dims[k].size == (k == axis ? g->nblocks : xs->dims[k].size);
			if (!fits)
				infer_fail(x, KILN_SHAPE_ERROR, "the scale %s does not fit x %s blocked along "
				           "axis %d by block_size %lld (it must be x's shape with %lld there)",
				           dims_str(x, ss), dims_str(x, xs), axis, (long long)block,
				           (long long)g->nblocks);
		}
	}
	if (has_zp) {
		const Shape *zs = infer_shape(x, 2);
		bool same = zs->rank == ss->rank;
		for (int k = 0; same && k < zs->rank; k++)
			same = zs->dims[k].size == ss->dims[k].size;
		if (!same && !(g->kind == QDQ_TENSOR && shape_nelem(zs) == 1))
			infer_fail(x, KILN_SHAPE_ERROR, "the zero point %s and the scale %s differ in shape",
			           dims_str(x, zs), dims_str(x, ss));
	}
}

static void infer_qdq(Infer *x)
{
	QdqGeometry g;
	qdq_geometry(x, &g);
	bool deq = x->n->op == OP_DequantizeLinear;
	infer_set_output(x, 0, deq ? g.ftype : g.qtype, infer_shape(x, 0));
}

/* DynamicQuantizeLinear: y uint8 of x's shape, y_scale float32 and
 * y_zero_point uint8 scalars. */
static void infer_dynamic_quant(Infer *x)
{
	if (infer_dtype(x, 0) != DT_FLOAT)
		infer_fail(x, KILN_INVALID_MODEL, "x must be float32, not %s",
		           dtype_name(infer_dtype(x, 0)));
	Shape scalar = {.rank = 0};
	infer_set_output(x, 0, DT_UINT8, infer_shape(x, 0));
	infer_set_output(x, 1, DT_FLOAT, &scalar);
	infer_set_output(x, 2, DT_UINT8, &scalar);
}

void ops_quant_infer(Infer *x)
{
	switch (x->n->op) {
	case OP_MatMulInteger: case OP_QLinearMatMul: case OP_KilnQLinearMatMul:
		infer_qmatmul(x);
		return;
	case OP_ConvInteger: case OP_QLinearConv: case OP_KilnQLinearConv: infer_qconv(x); return;
	case OP_QuantizeLinear: case OP_DequantizeLinear: infer_qdq(x); return;
	default: infer_dynamic_quant(x); return;
	}
}

/* ---- the records (opdef.h) ---------------------------------------------- */

/* The integer products' work memory (kiln_i8_work_bytes): A's rows by K for
 * a matrix product, the output channels by (channels / group) * kernel
 * volume for a convolution; more for 16-bit operands (a QDQ product's). */
static int64_t quant_scratch_bytes(const Sig *s, int node, Arena *a)
{
	Node *n = &s->g->nodes[node];
	Infer inf = {.sig = (Sig *)s, .g = s->g, .n = n, .a = a};
	bool ql = n->op != OP_MatMulInteger && n->op != OP_ConvInteger;
	int ia = 0, ib = ql ? 3 : 1, wide = 0;
	for (int k = 0; k < 2; k++) {
		int dt = infer_dtype(&inf, k ? ib : ia);
		wide |= dt == DT_INT16 || dt == DT_UINT16;
	}
	const Shape *A = infer_shape(&inf, ia), *B = infer_shape(&inf, ib);
	int64_t M, K;
	if (n->op == OP_ConvInteger || n->op == OP_QLinearConv || n->op == OP_KilnQLinearConv) {
		M = B->dims[0].size;
		K = 1;
		for (int k = 1; k < B->rank; k++)
			K *= B->dims[k].size;
	} else {
		M = A->rank >= 2 ? A->dims[A->rank - 2].size : 1;
		K = A->dims[A->rank - 1].size;
	}
	return kiln_i8_work_bytes(M, K, wide);
}

const OpDef ops_quant_defs[] = {
	{.op = OP_QuantizeLinear, .infer = ops_quant_infer, .emit = emit_quant,
	 .batch = BK_ELEMENTWISE, .narrow_types = true,
	 .note = "x float32, float16 or int32; to int8, uint8, int16, uint16, int4, uint4 (21; "
	         "rounded half to even, clamped) and float8 (19; saturate, zero point 0); per "
	         "tensor, per axis, blocked (block_size, 21); output_dtype (21)"},
	{.op = OP_DequantizeLinear, .infer = ops_quant_infer, .emit = emit_quant,
	 .batch = BK_ELEMENTWISE, .narrow_types = true,
	 .note = "also int16, uint16, int4, uint4 (21; packed weights read in place) and the four "
	         "float8 types (19; zero point 0); per tensor, per axis, blocked (block_size, 21; "
	         "a last partial block); a float16 scale gives that output type (bfloat16 refused)"},
	{.op = OP_MatMulInteger, .infer = ops_quant_infer, .emit = emit_qmatmul,
	 .scratch = quant_scratch_bytes},
	{.op = OP_QLinearMatMul, .infer = ops_quant_infer, .emit = emit_qmatmul,
	 .batch = BK_QLINEAR_MATMUL, .scratch = quant_scratch_bytes,
	 .note = "int8 and uint8 (float8, opset 21, refused: ONNX Runtime 1.30 has no kernel for "
	         "it)"},
	{.op = OP_ConvInteger, .infer = ops_quant_infer, .emit = emit_qconv, .batch = BK_N_FIRST,
	 .scratch = quant_scratch_bytes},
	{.op = OP_QLinearConv, .infer = ops_quant_infer, .emit = emit_qconv, .batch = BK_N_FIRST,
	 .scratch = quant_scratch_bytes},
	/* kiln's own (ops_kiln.def): the QDQ products of passes/qdq.c */
	{.op = OP_KilnQLinearMatMul, .infer = ops_quant_infer, .emit = emit_qmatmul,
	 .batch = BK_QLINEAR_MATMUL, .scratch = quant_scratch_bytes,
	 .note = "QuantizeLinear(MatMul or Gemm(DequantizeLinear(a), DequantizeLinear(b) [, "
	         "DequantizeLinear(int32 bias)])) [then Relu], computed exactly in integers; "
	         "8- and 16-bit operands"},
	{.op = OP_KilnQLinearConv, .infer = ops_quant_infer, .emit = emit_qconv, .batch = BK_N_FIRST,
	 .scratch = quant_scratch_bytes,
	 .note = "QuantizeLinear(Conv(DequantizeLinear(x), DequantizeLinear(w) [, "
	         "DequantizeLinear(int32 bias)])) [then Relu], computed exactly in integers; "
	         "8- and 16-bit operands"},
	{.op = OP_DynamicQuantizeLinear, .infer = ops_quant_infer, .emit = emit_dynamic_quant},
	{.op = NONE},
};
