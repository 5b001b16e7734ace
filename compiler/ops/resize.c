/*
 * ops/resize.c - Resize (opsets 10, 11, 13, 18, 19) and Upsample: the output shape,
 * and the kernel parameters the emitter prints, from one reading of the
 * node, so inference and code generation cannot disagree.
 *
 * roi, scales and sizes must be known at compile time. The output size is
 * `sizes` when given, else floor(in * scale) (times the roi extent for
 * tf_crop_and_resize). Resize-10 and Upsample use asymmetric coordinates
 * and, for nearest, floor rounding. Resize-18 may give scales or sizes for
 * some axes only (`axes`) and fit sizes with one scale (keep_aspect_ratio_policy);
 * antialias widens the linear and cubic filters when shrinking.
 */
#include <math.h>
#include <string.h>

#include "emit_c.h"
#include "ops/ops.h"
#include "opdef.h"

/* Known float (or integer) contents of input i as doubles; NULL if absent
 * or empty. */
static const double *known_floats(Infer *x, int i, int64_t *n)
{
	if (!infer_has_input(x, i))
		return NULL;
	const Folded *f = infer_folded(x, i);
	if (!f)
		infer_fail(x, KILN_UNSUPPORTED, "input %d \"%s\" must be known at compile time", i,
		           infer_input_name(x, i));
	if (f->nelem == 0)
		return NULL;
	double *v = arena_array(x->a, (size_t)f->nelem, sizeof *v);
	for (int64_t k = 0; k < f->nelem; k++) {
		const char *p = (const char *)f->data;
		switch (f->dtype) {
		case DT_FLOAT: { float t; memcpy(&t, p + 4 * k, 4); v[k] = (double)t; break; }
		case DT_DOUBLE: memcpy(&v[k], p + 8 * k, 8); break;
		case DT_INT64: { int64_t t; memcpy(&t, p + 8 * k, 8); v[k] = (double)t; break; }
		default: infer_fail(x, KILN_UNSUPPORTED, "input %d has type %s", i, dtype_name(f->dtype));
		}
	}
	*n = f->nelem;
	return v;
}

static int pick(Infer *x, const char *attr, const char *dflt, const char *const *names, int n)
{
	const char *v = attr_string(x, attr, dflt);
	for (int i = 0; i < n; i++)
		if (strcmp(v, names[i]) == 0)
			return i;
	infer_fail(x, KILN_UNSUPPORTED, "%s \"%s\" is not supported", attr, v);
}

void resize_params(Infer *x, const Shape *in, kiln_resize_params *p)
{
	memset(p, 0, sizeof *p);
	int rank = in->rank;
	if (rank < 1 || rank > KILN_RESIZE_MAX_RANK)
		infer_fail(x, KILN_SHAPE_ERROR, "rank %d is not supported", rank);
	p->rank = rank;
	static const char *const modes[] = {"nearest", "linear", "cubic"};
	static const char *const coords[] = {"half_pixel", "pytorch_half_pixel", "align_corners",
	                                     "asymmetric", "tf_half_pixel_for_nn",
	                                     "tf_crop_and_resize", "half_pixel_symmetric"};
	static const char *const nearest[] = {"round_prefer_floor", "round_prefer_ceil", "floor",
	                                      "ceil"};
	p->mode = pick(x, "mode", "nearest", modes, 3);
	bool legacy = x->n->op == OP_Upsample || x->n->since < 11;
	if (legacy && p->mode == KILN_RESIZE_LINEAR && strcmp(attr_string(x, "mode", ""), "linear"))
		p->mode = KILN_RESIZE_LINEAR;  /* Upsample-7 also says "bilinear" */
	p->coord_mode = legacy ? KILN_RESIZE_ASYMMETRIC
	                       : pick(x, "coordinate_transformation_mode", "half_pixel", coords,
	                              x->n->since >= 19 ? 7 : 6);
	p->nearest_mode = legacy ? KILN_NEAREST_FLOOR
	                         : pick(x, "nearest_mode", "round_prefer_floor", nearest, 4);
	p->cubic_coeff_a = (double)attr_float(x, "cubic_coeff_a", -0.75f);
	p->exclude_outside = (int)attr_int(x, "exclude_outside", 0);
	p->extrapolation_value = (double)attr_float(x, "extrapolation_value", 0.0f);

	int64_t nscales = 0, nsizes = 0, nroi = 0;
	const double *scales = NULL, *roi = NULL;
	const int64_t *sizes = NULL;
	double attr_scales[KILN_RESIZE_MAX_RANK];
	if (x->n->op == OP_Upsample && x->n->since < 9) {
		const Attr *a = node_attr(x->n, "scales");
		if (!a || a->type != AT_FLOATS || a->n != rank)
			infer_fail(x, KILN_INVALID_MODEL, "scales must hold %d floats", rank);
		for (int k = 0; k < rank; k++)
			attr_scales[k] = (double)a->floats[k];
		scales = attr_scales;
		nscales = rank;
	} else if (legacy) {
		scales = known_floats(x, 1, &nscales);
	} else {
		roi = known_floats(x, 1, &nroi);
		scales = known_floats(x, 2, &nscales);
		if (infer_has_input(x, 3)) {
			sizes = infer_require_ints(x, 3, &nsizes);
			if (nsizes == 0)
				sizes = NULL;
		}
	}
	/* Resize-18: scales or sizes for the listed axes only, sizes fitted with
	 * one scale that keeps the aspect ratio, and antialiasing. */
	if (x->n->since >= 18) {
		int64_t aa = attr_int(x, "antialias", 0);
		if (aa != 0 && aa != 1)
			infer_fail(x, KILN_INVALID_MODEL, "antialias must be 0 or 1, got %lld", (long long)aa);
		p->antialias = aa && p->mode != KILN_RESIZE_NEAREST;
		if (p->antialias && p->coord_mode == KILN_RESIZE_TF_CROP_AND_RESIZE)
			infer_fail(x, KILN_UNSUPPORTED, "antialias with tf_crop_and_resize is not supported");
		int64_t axes[KILN_RESIZE_MAX_RANK];
		int na = attr_ints(x, "axes", axes, KILN_RESIZE_MAX_RANK);
		const char *policy = attr_string(x, "keep_aspect_ratio_policy", "stretch");
		bool keep = strcmp(policy, "stretch") != 0;
		if (keep && strcmp(policy, "not_larger") && strcmp(policy, "not_smaller"))
			infer_fail(x, KILN_INVALID_MODEL, "keep_aspect_ratio_policy \"%s\" is not stretch, "
			           "not_larger or not_smaller", policy);
		if (na >= 0 || (keep && sizes)) {
			int64_t given = sizes ? nsizes : nscales;
			if (na < 0) {
				na = rank;
				for (int k = 0; k < rank; k++)
					axes[k] = k;
			}
			if ((!sizes && !scales) || given != na)
				infer_fail(x, KILN_SHAPE_ERROR, "give %d scales or sizes, one per axis in axes", na);
			double *fs = arena_array(x->a, (size_t)rank, sizeof *fs);
			int64_t *fz = arena_array(x->a, (size_t)rank, sizeof *fz);
			for (int k = 0; k < rank; k++) {
				fs[k] = 1;
				fz[k] = in->dims[k].size;
			}
			double common = keep && strcmp(policy, "not_larger") == 0 ? (double)INFINITY : 0;
			for (int j = 0; j < na; j++) {
				int a = infer_axis(x, axes[j], rank, "axis");
				if (sizes) {
					fz[a] = sizes[j];
					double r = in->dims[a].size ? (double)sizes[j] / (double)in->dims[a].size : 1;
					common = strcmp(policy, "not_larger") == 0 ? fmin(common, r) : fmax(common, r);
				} else {
					fs[a] = scales[j];
				}
			}
			/* The common scale rounds each listed axis half up, as ONNX says. */
			for (int j = 0; keep && sizes && j < na; j++) {
				int a = infer_axis(x, axes[j], rank, "axis");
				double v = floor(common * (double)in->dims[a].size + 0.5);
				if (!(v >= 0 && v < 0x1p62))
					infer_fail(x, KILN_SHAPE_ERROR, "axis %d: size %g is out of range", a, v);
				fz[a] = (int64_t)v;
			}
			if (sizes)
				sizes = fz, nsizes = rank;
			else
				scales = fs, nscales = rank;
		}
	}
	if (sizes ? nsizes != rank : !scales || nscales != rank)
		infer_fail(x, KILN_SHAPE_ERROR, "give %d scales or %d sizes", rank, rank);
	for (int k = 0; k < rank; k++) {
		int64_t len = in->dims[k].size;
		p->in[k] = len;
		p->roi_start[k] = roi && nroi == 2 * rank ? roi[k] : 0;
		p->roi_end[k] = roi && nroi == 2 * rank ? roi[rank + k] : 1;
		if (sizes) {
			p->out[k] = sizes[k];
			p->scale[k] = len ? (double)sizes[k] / (double)len : 1;
		} else {
			double extent = p->coord_mode == KILN_RESIZE_TF_CROP_AND_RESIZE
			                        ? p->roi_end[k] - p->roi_start[k] : 1;
			p->scale[k] = scales[k];
			/* in float, as ONNX Runtime computes it: 300 x 0.01f is 3 there,
			 * where the double product 2.99999993 would give 2 */
			double out = extent == 1 ? (double)floorf((float)len * (float)scales[k])
			                         : floor((double)len * extent * scales[k]);
			if (!(out >= 0 && out < 0x1p62))  /* NaN, inf, past int64 */
				infer_fail(x, KILN_SHAPE_ERROR, "axis %d: a scale of %g gives an output "
				           "of %g elements", k, scales[k], out);
			p->out[k] = (int64_t)out;
		}
		if (p->out[k] < 0 || p->scale[k] <= 0)
			infer_fail(x, KILN_SHAPE_ERROR, "axis %d: bad scale or size", k);
	}
}

void ops_resize_infer(Infer *x)
{
	const Shape *in = infer_shape(x, 0);
	kiln_resize_params p;
	resize_params(x, in, &p);
	Shape y = {.rank = in->rank};
	for (int k = 0; k < in->rank; k++)
		y.dims[k].size = p.out[k];
	infer_set_output(x, 0, infer_dtype(x, 0), &y);
}

/* ---- the records (opdef.h) ---------------------------------------------- */

const OpDef ops_resize_defs[] = {
	{.op = OP_Resize, .infer = ops_resize_infer, .emit = emit_resize, .batch = BK_N_FIRST,
	 .shape_inputs = ~1u, .types = OT_F32,
	 .batch_flags = BF_KEEPS_BATCH,
	 .note = "every mode; every coordinate transformation (opset 19's half_pixel_symmetric "
	         "too); axes and keep_aspect_ratio_policy; antialias (18, any shrink); output "
	         "sizes from scales computed in float as ONNX Runtime does (300 x 0.01 gives 3); "
	         "scales/sizes must be known at compile time"},
	{.op = OP_Upsample, .infer = ops_resize_infer, .emit = emit_resize, .batch = BK_N_FIRST,
	 .shape_inputs = 1u << 1, .types = OT_F32,
	 .batch_flags = BF_KEEPS_BATCH,
	 .note = "scales must be known at compile time"},
	{.op = NONE},
};
