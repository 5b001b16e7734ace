// plugin.cpp - one "plugin" shared library around one kiln model. CMake
// builds it twice: libtagger.so around the jet tagger and libregressor.so
// around the regressor, both models compiled under the same NAME `net`.
// PLUGIN (tagger or regressor) names what the library exports: three C
// functions, nothing else. kiln's symbols (net_model, net_run, the weights,
// libkiln) stay hidden inside each library, so the two never mix even when
// both are loaded with RTLD_GLOBAL.
#include <cstdint>

#include <kiln/kiln.hpp>

#include "net.h"

#define CAT2(a, b) a##_##b
#define CAT(a, b) CAT2(a, b)
#define EXPORT extern "C" __attribute__((visibility("default")))

// Features per jet in, values per jet out.
EXPORT void CAT(PLUGIN, shape)(int *nin, int *nout)
{
	*nin = NET_IN0_ELEMS;
	*nout = NET_OUT0_ELEMS;
}

// Any number of jets, 0 included, through this thread's context: one per
// thread, made on its first call (thread_local, never a plain static).
EXPORT int CAT(PLUGIN, evaluate)(std::int64_t njets, const float *features, float *out)
{
	try {
		thread_local kiln::Context ctx(net_model);
		ctx.run(njets, {features}, {out});
		return KILN_OK;
	} catch (const kiln::Error &e) {
		return e.status();
	} catch (...) {
		return KILN_NO_MEMORY;
	}
}

// One jet through the batch-1 entry point, on this thread's own arena: the
// reference the event loop checks every batched result against.
EXPORT int CAT(PLUGIN, evaluate_one)(const float *features, float *out)
{
	alignas(64) thread_local unsigned char arena[NET_ARENA_BYTES];
	return net_run_b1(arena, features, out);
}
