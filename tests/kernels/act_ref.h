/*
 * act_ref.h - the epilogue activations the convolution tests fuse, in
 * double, as their references apply them (LeakyRelu alpha 0.1, Clip to
 * [-2, 2]: the parameters the tests pass in their kiln_epilogue).
 */
#ifndef KILN_TEST_ACT_REF_H
#define KILN_TEST_ACT_REF_H

#include <math.h>

#include "kiln/kernels.h"

static inline double act_ref(int act, double s)
{
	if (act == KILN_ACT_RELU)
		return s > 0.0 ? s : 0.0;
	if (act == KILN_ACT_LEAKY_RELU)
		return s < 0.0 ? 0.1 * s : s;
	if (act == KILN_ACT_CLIP)
		return s < -2.0 ? -2.0 : s > 2.0 ? 2.0 : s;
	if (act == KILN_ACT_TANH)
		return tanh(s);
	return s;
}

#endif
