/*
 * float8.h - the float8 conversions of libkiln (ONNX opset 19's four float8
 * types), which generated code calls for Cast and CastLike. Generated code
 * stores float8 values as uint8_t bit patterns.
 */
#ifndef KILN_FLOAT8_H
#define KILN_FLOAT8_H

#include <stdint.h>

#include "kiln/kernels.h"

/* The four float8 formats, in ONNX's order (TensorProto types 17-20). */
enum kiln_f8_format { KILN_F8_E4M3FN, KILN_F8_E4M3FNUZ, KILN_F8_E5M2, KILN_F8_E5M2FNUZ };

/* float8 bit pattern -> float32, exact. NaN patterns give a quiet NaN. */
KILN_API float kiln_f8_to_f32(uint8_t v, int format);
/* float32 -> float8, rounding to nearest, ties to even, as ONNX's Cast-19
 * and its reference define: with saturate, values beyond the largest finite
 * one (and infinities) become it; without, they become NaN (E5M2: infinity
 * for inputs of 2^16 and more); E4M3FN maps [480, 496) to 448 either way.
 * The fnuz formats have no -0 (it becomes 0) and one NaN, 0x80. */
KILN_API uint8_t kiln_f32_to_f8(float x, int format, int saturate);

#endif
