/*
 * ops/signal.c - shape inference for the signal-processing ops of opset 17:
 * DFT, STFT, the cosine-sum windows (HannWindow, HammingWindow,
 * BlackmanWindow) and MelWeightMatrix.
 *
 * Every length that decides a shape (DFT's dft_length, STFT's frame_step
 * and frame_length, a window's size, MelWeightMatrix's num_mel_bins and
 * dft_length) must be known at compile time; the values that only decide
 * contents (STFT's window, MelWeightMatrix's sample rate and edges) are read
 * at run time. The transforms compute in float32 (kiln_f32_dft); windows
 * and mel matrices are written in any numeric output_datatype.
 */
#include "emit_c.h"
#include "ops/ops.h"
#include "opdef.h"

/* A known scalar length (int32 or int64) of at least min. */
static int64_t known_length(Infer *x, int i, const char *what, int64_t min)
{
	int dt = infer_dtype(x, i);
	if (dt != DT_INT32 && dt != DT_INT64)
		infer_fail(x, KILN_INVALID_MODEL, "%s must be int32 or int64, not %s", what,
		           dtype_name(dt));
	int64_t n;
	const int64_t *v = infer_require_ints(x, i, &n);
	if (n != 1 || infer_shape(x, i)->rank > 1)
		infer_fail(x, KILN_INVALID_MODEL, "%s must be a scalar, has %lld values", what,
		           (long long)n);
	if (v[0] < min)
		infer_fail(x, KILN_SHAPE_ERROR, "%s is %lld; it must be at least %lld", what,
		           (long long)v[0], (long long)min);
	return v[0];
}

static int64_t flag_attr(Infer *x, const char *name, int64_t dflt)
{
	int64_t v = attr_int(x, name, dflt);
	if (v != 0 && v != 1)
		infer_fail(x, KILN_INVALID_MODEL, "attribute \"%s\" must be 0 or 1, not %lld", name,
		           (long long)v);
	return v;
}

bool signal_dft_inverse(Infer *x)
{
	return flag_attr(x, "inverse", 0) != 0;
}

bool signal_window_periodic(Infer *x)
{
	return flag_attr(x, "periodic", 1) != 0;
}

/* The transforms' real or complex float input: [..., 1] or [..., 2]. */
static void check_signal(Infer *x, int min_rank)
{
	const Shape *s = infer_shape(x, 0);
	int dt = infer_dtype(x, 0);
	if (dt != DT_FLOAT && dt != DT_DOUBLE && dt != DT_FLOAT16 && dt != DT_BFLOAT16)
		infer_fail(x, KILN_INVALID_MODEL, "input 0 must be a float tensor, not %s",
		           dtype_name(dt));
	if (dt != DT_FLOAT)
		infer_fail(x, KILN_UNSUPPORTED, "%s on %s is not supported yet (float32 only)",
		           x->n->op_type, dtype_name(dt));
	if (s->rank < min_rank)
		infer_fail(x, KILN_SHAPE_ERROR, "input 0 has rank %d; it needs at least %d", s->rank,
		           min_rank);
	int64_t comp = s->dims[s->rank - 1].size;
	if (comp != 1 && comp != 2)
		infer_fail(x, KILN_SHAPE_ERROR,
		           "the last dim of input 0 is %lld; it must be 1 (real) or 2 (complex)",
		           (long long)comp);
}

/* The output types of output_datatype: ONNX's numeric types. */
static int output_datatype(Infer *x)
{
	int64_t dt = attr_int(x, "output_datatype", DT_FLOAT);
	if (dt <= DT_UNDEFINED || dt >= DT_COUNT || dt == DT_STRING || dt == DT_BOOL ||
	    dt == DT_COMPLEX64 || dt == DT_COMPLEX128)
		infer_fail(x, KILN_INVALID_MODEL, "output_datatype %lld is not a numeric element type",
		           (long long)dt);
	return (int)dt;
}

/* DFT's axis, normalized: the attribute (default 1) before opset 20, then the
 * optional scalar input 2 (default -2), which must be known at compile time. */
int signal_dft_axis(Infer *x, int rank)
{
	int64_t axis;
	if (x->n->since < 20)
		axis = attr_int(x, "axis", 1);
	else if (infer_has_input(x, 2)) {
		int64_t n;
		const int64_t *v = infer_require_ints(x, 2, &n);
		if (n != 1 || infer_shape(x, 2)->rank > 1)
			infer_fail(x, KILN_INVALID_MODEL, "axis must be a scalar, has %lld values",
			           (long long)n);
		axis = v[0];
	} else
		axis = -2;
	return infer_axis(x, axis, rank, "axis");
}

static void infer_dft(Infer *x)
{
	check_signal(x, 2);
	Shape y = *infer_shape(x, 0);
	int onesided = (int)flag_attr(x, "onesided", 0), inverse = signal_dft_inverse(x);
	if (onesided && inverse)
		infer_fail(x, KILN_INVALID_MODEL, "onesided and inverse cannot both be 1");
	int ax = signal_dft_axis(x, y.rank);
	if (ax == y.rank - 1)
		infer_fail(x, KILN_SHAPE_ERROR,
		           "axis %d is the last dim, which holds the real and imaginary parts", ax);
	int64_t n = y.dims[ax].size;
	if (infer_has_input(x, 1))
		n = known_length(x, 1, "dft_length", 1);
	else if (n < 1)
		infer_fail(x, KILN_SHAPE_ERROR, "the signal along axis %d is empty", ax);
	y.dims[ax].size = onesided ? n / 2 + 1 : n;
	y.dims[y.rank - 1].size = 2;
	infer_set_output(x, 0, DT_FLOAT, &y);
}

static void infer_stft(Infer *x)
{
	check_signal(x, 3);
	const Shape *s = infer_shape(x, 0);
	if (s->rank != 3)
		infer_fail(x, KILN_SHAPE_ERROR, "signal must be [batch, length, 1 or 2], has rank %d",
		           s->rank);
	int onesided = (int)flag_attr(x, "onesided", 1);
	int64_t step = known_length(x, 1, "frame_step", 1);
	int64_t len = -1;
	if (infer_has_input(x, 2)) {
		const Shape *w = infer_shape(x, 2);
		if (w->rank != 1)
			infer_fail(x, KILN_SHAPE_ERROR, "window must have rank 1, has rank %d", w->rank);
		if (infer_dtype(x, 2) != infer_dtype(x, 0))
			infer_fail(x, KILN_INVALID_MODEL, "window is %s; the signal is %s",
			           dtype_name(infer_dtype(x, 2)), dtype_name(infer_dtype(x, 0)));
		len = w->dims[0].size;
		if (len < 1)
			infer_fail(x, KILN_SHAPE_ERROR, "window is empty");
	}
	if (infer_has_input(x, 3)) {
		int64_t fl = known_length(x, 3, "frame_length", 1);
		if (len >= 0 && fl != len)
			infer_fail(x, KILN_SHAPE_ERROR, "frame_length %lld does not match the window's %lld",
			           (long long)fl, (long long)len);
		len = fl;
	}
	if (len < 0)
		infer_fail(x, KILN_INVALID_MODEL, "needs a window or a frame_length");
	if (len > s->dims[1].size)
		infer_fail(x, KILN_SHAPE_ERROR, "frame_length %lld is longer than the signal (%lld)",
		           (long long)len, (long long)s->dims[1].size);
	Shape y = {.rank = 4};
	y.dims[0].size = s->dims[0].size;
	y.dims[1].size = (s->dims[1].size - len) / step + 1;
	y.dims[2].size = onesided ? len / 2 + 1 : len;
	y.dims[3].size = 2;
	infer_set_output(x, 0, DT_FLOAT, &y);
}

static void infer_window(Infer *x)
{
	signal_window_periodic(x);
	int out_dt = output_datatype(x);
	Shape y = {.rank = 1};
	y.dims[0].size = known_length(x, 0, "size", 1);
	infer_set_output(x, 0, out_dt, &y);
}

static void infer_mel(Infer *x)
{
	for (int i = 0; i < 5; i++) {
		int dt = infer_dtype(x, i);
		bool want_int = i < 3;
		if (want_int ? dt != DT_INT32 && dt != DT_INT64
		             : dt != DT_FLOAT && dt != DT_DOUBLE && dt != DT_FLOAT16 && dt != DT_BFLOAT16)
			infer_fail(x, KILN_INVALID_MODEL, "input %d \"%s\" must be %s, not %s", i,
			           infer_input_name(x, i), want_int ? "int32 or int64" : "a float type",
			           dtype_name(dt));
		if (shape_nelem(infer_shape(x, i)) != 1)
			infer_fail(x, KILN_SHAPE_ERROR, "input %d \"%s\" must be a scalar", i,
			           infer_input_name(x, i));
	}
	int out_dt = output_datatype(x);
	int64_t bins = known_length(x, 0, "num_mel_bins", 1);
	int64_t dft = known_length(x, 1, "dft_length", 1);
	Shape y = {.rank = 2};
	y.dims[0].size = dft / 2 + 1;
	y.dims[1].size = bins;
	infer_set_output(x, 0, out_dt, &y);
}

void ops_signal_infer(Infer *x)
{
	switch (x->n->op) {
	case OP_DFT: infer_dft(x); return;
	case OP_STFT: infer_stft(x); return;
	case OP_MelWeightMatrix: infer_mel(x); return;
	default: infer_window(x); return;  /* HannWindow, HammingWindow, BlackmanWindow */
	}
}

/* ---- the records (opdef.h) ---------------------------------------------- */

const OpDef ops_signal_defs[] = {
	{.op = OP_DFT, .infer = ops_signal_infer, .emit = emit_dft, .batch = BK_DFT,
	 .types = OT_F32,
	 .note = "dft_length and axis (an input from opset 20) must be known at compile time"},
	{.op = OP_STFT, .infer = ops_signal_infer, .emit = emit_stft, .types = OT_F32},
	{.op = OP_HannWindow, .infer = ops_signal_infer, .emit = emit_window},
	{.op = OP_HammingWindow, .infer = ops_signal_infer, .emit = emit_window},
	{.op = OP_BlackmanWindow, .infer = ops_signal_infer, .emit = emit_window},
	{.op = OP_MelWeightMatrix, .infer = ops_signal_infer, .emit = emit_mel_weight_matrix},
	{.op = NONE},
};
