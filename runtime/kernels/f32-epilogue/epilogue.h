/*
 * f32-epilogue/epilogue.h - helpers shared by the fused kernels of this
 * folder (not part of libkiln's API).
 */
#ifndef KILN_F32_EPILOGUE_H
#define KILN_F32_EPILOGUE_H

#include "kiln/kernels.h"

/* Widen n float16 values, stride apart, to float (F16C on x86 when the CPU
 * has it and stride is 1). */
void kiln_f16_widen(const uint16_t *src, int64_t stride, float *dst, int64_t n);

/* The convolution epilogue over Y (p's output): per plane, += ep->residual,
 * then the activation. ep may be NULL. */
void kiln_f32_conv_epilogue(const kiln_conv2d_params *p, float *Y, const kiln_epilogue *ep);

#endif
