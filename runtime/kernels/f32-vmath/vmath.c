/*
 * f32-vmath/vmath.c - the dispatch points of the vector math kernels: each
 * entry asks kiln_isa() once per call and runs one variant's loop over all n
 * elements (isa.h).
 */
#include "../isa.h"
#include "vmath.h"

KILN_API void kiln_f32_unary(int op, const float *X, float *Y, int64_t n)
{
	if (n <= 0)
		return;
#if defined(KILN_HAVE_X86_VARIANTS)
	switch (kiln_isa()) {
	case KILN_ISA_AVX512: kiln_f32_unary_avx512(op, X, Y, n); return;
	case KILN_ISA_AVX2: kiln_f32_unary_avx2(op, X, Y, n); return;
	default: break;
	}
#endif
	kiln_f32_unary_ref(op, X, Y, n);
}

KILN_API void kiln_f32_act(float *Y, int64_t n, const kiln_epilogue *ep)
{
	if (!ep || ep->act == KILN_ACT_NONE || n <= 0)
		return;
#if defined(KILN_HAVE_X86_VARIANTS)
	switch (kiln_isa()) {
	case KILN_ISA_AVX512: kiln_f32_act_avx512(Y, n, ep); return;
	case KILN_ISA_AVX2: kiln_f32_act_avx2(Y, n, ep); return;
	default: break;
	}
#endif
	kiln_f32_act_ref(Y, n, ep);
}
