/*
 * emit/resize.c - the op emitter for Resize and Upsample (ops/resize.c).
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "emit_c.h"

void emit_resize(Emit *E)
{
	Operand X = in_op(E, 0), Y = out_op(E, 0);
	require_f32(E, &X);
	Infer inf = {.sig = (Sig *)E->sig, .g = E->g, .n = E->n, .d = E->d, .a = E->a};
	kiln_resize_params p;
	resize_params(&inf, X.shape, &p);
	emitf(E, "\tstatic const kiln_resize_params p = {\n\t\t.rank = %d, .mode = %d, .coord_mode = %d, "
	       ".nearest_mode = %d, .exclude_outside = %d, .antialias = %d,\n\t\t.cubic_coeff_a = %s, "
	       ".extrapolation_value = %s,\n",
	    p.rank, p.mode, p.coord_mode, p.nearest_mode, p.exclude_outside, p.antialias,
	    flit(E, p.cubic_coeff_a, DT_DOUBLE), flit(E, p.extrapolation_value, DT_DOUBLE));
	const char *names[] = {"in", "out"};
	const int64_t *ints[] = {p.in, p.out};
	for (int i = 0; i < 2; i++) {
		emitf(E, "\t\t.%s = {", names[i]);
		for (int k = 0; k < p.rank; k++)
			emitf(E, "%s%" PRId64, k ? ", " : "", ints[i][k]);
		emitf(E, "},\n");
	}
	const char *fnames[] = {"scale", "roi_start", "roi_end"};
	const double *fl[] = {p.scale, p.roi_start, p.roi_end};
	for (int i = 0; i < 3; i++) {
		emitf(E, "\t\t.%s = {", fnames[i]);
		for (int k = 0; k < p.rank; k++)
			emitf(E, "%s%s", k ? ", " : "", flit(E, fl[i][k], DT_DOUBLE));
		emitf(E, "},\n");
	}
	emitf(E, "\t};\n\tkiln_f32_resize(&p, %s, %s);\n", X.expr, Y.expr);
}
