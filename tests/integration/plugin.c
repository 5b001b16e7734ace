/*
 * plugin.c - a "plugin" shared library wrapping one kiln model compiled
 * under the name `data` (tests/integration/plugins.sh builds it twice, as
 * libplugin_a.so and libplugin_b.so, from two different models). It exports
 * only PLUGIN_eval and PLUGIN_elems; everything of kiln's stays inside.
 */
#include "data.h"

#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define EXPORT __attribute__((visibility("default")))

/* Rows of n samples: in holds n * DATA_IN0_ELEMS floats, out n * DATA_OUT0_ELEMS. */
EXPORT int CAT(PLUGIN, _eval)(int64_t n, const float *in, float *out);
EXPORT int CAT(PLUGIN, _eval)(int64_t n, const float *in, float *out)
{
	kiln_context *ctx;
	int st = kiln_context_create(&ctx, &data_model);
	if (st != KILN_OK)
		return st;
	st = data_run(ctx, n, in, out);
	kiln_context_destroy(ctx);
	return st;
}

EXPORT void CAT(PLUGIN, _elems)(int *nin, int *nout);
EXPORT void CAT(PLUGIN, _elems)(int *nin, int *nout)
{
	*nin = DATA_IN0_ELEMS;
	*nout = DATA_OUT0_ELEMS;
}
