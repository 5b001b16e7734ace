/*
 * f32-winograd1d/avx2.c - the 1-D Winograd's transforms (transform.h)
 * compiled with the AVX2 variant's flags: the portable variant's
 * operations, in the vectors the compiler makes of them (the same bits).
 */
#define WINO_TRANSFORM_SUFFIX avx2
#include "transform.h"
