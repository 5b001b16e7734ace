/*
 * emit/select.c - Compress with data known only at run time: the condition
 * was frozen or constant (ops/select.c), so the selected indices are
 * literals and the code is one slice copy per selected index.
 * NonZero, Unique and NonMaxSuppression never get here: their outputs are
 * compile-time constants.
 */
#include <inttypes.h>

#include "emit_c.h"

void emit_compress(Emit *E)
{
	Infer x = {.sig = (Sig *)E->sig, .g = E->g, .n = E->n, .d = E->d, .a = E->a};
	CompressSel c;
	compress_selection(&x, &c);
	Operand X = in_op(E, 0), Y = out_op(E, 0);
	decl(E, "X", &X, false);
	decl(E, "Y", &Y, true);
	size_t esz = dtype_size(X.dtype);
	emitf(E, "\tstatic const int64_t sel[%" PRId64 "] = {", c.nsel ? c.nsel : 1);
	for (int64_t j = 0; j < c.nsel; j++)
		emitf(E, "%s%" PRId64, j ? ", " : "", c.sel[j]);
	emitf(E, "%s};\n", c.nsel ? "" : "0");
	emitf(E, "\tfor (int64_t o = 0; o < %" PRId64 "; o++)\n", c.outer);
	emitf(E, "\t\tfor (int64_t j = 0; j < %" PRId64 "; j++)\n", c.nsel);
	emitf(E, "\t\t\tmemcpy(Y + (o * %" PRId64 " + j) * %" PRId64 ", X + (o * %" PRId64
	         " + sel[j]) * %" PRId64 ", %zu);\n",
	      c.nsel, c.inner, c.len, c.inner, (size_t)c.inner * esz);
}
