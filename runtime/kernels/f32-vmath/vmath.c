/*
 * f32-vmath/vmath.c - the one dispatch point of the vector math kernels:
 * vmath_ops() returns the table of the variant kiln_isa() names (isa.h), and
 * every entry asks it once per call, then runs that variant's loop over all
 * the elements. Softmax and the norms (f32-softmax/, f32-norm/) use it too.
 */
#include "../isa.h"
#include "vmath.h"

const VmathOps *vmath_ops(void)
{
#if defined(KILN_HAVE_X86_VARIANTS)
	switch (kiln_isa()) {
	case KILN_ISA_AVX512: return &kiln_vmath_avx512;
	case KILN_ISA_AVX2: return &kiln_vmath_avx2;
	default: break;
	}
#endif
	return &kiln_vmath_ref;
}

KILN_API void kiln_f32_unary(int op, const float *X, float *Y, int64_t n)
{
	if (n > 0)
		vmath_ops()->unary(op, X, Y, n);
}

KILN_API void kiln_f32_act(float *Y, int64_t n, const kiln_epilogue *ep)
{
	if (ep && ep->act != KILN_ACT_NONE && n > 0)
		vmath_ops()->act(Y, n, ep);
}
