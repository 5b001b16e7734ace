/*
 * f32-vmath/dconst.h - the constants of kiln's double log and atan kernels
 * (scalar.c's k_log and k_atan), shared with their vector forms (dmath.h),
 * so that both compute the same IEEE operations on the same values and give
 * the same bits (docs/reproducibility.md).
 */
#ifndef KILN_F32_VMATH_DCONST_H
#define KILN_F32_VMATH_DCONST_H

static const double LN2 = 0.6931471805599453094;
/* ln 2 = LN2_HI + LN2_LO, LN2_HI with 32 significant bits, so k LN2_HI is
 * exact for |k| < 2^21 */
static const double LN2_HI = 6.93147180369123816490e-01;   /* 0x3FE62E42FEE00000 */
static const double LN2_LO = 1.90821492927058770002e-10;   /* 0x3DEA39EF35793C76 */
static const double PIO2 = 1.57079632679489661923;
/* log's mantissa m in [1, 2) is halved above this, to [sqrt(1/2), sqrt(2)) */
static const double LOG_M_SPLIT = 1.4142135623730950488;

/* log(1 + f) = 2 s (1 + s^2/3 + ... + s^18/19): Horner from 1/19 over these */
static const double LOG_P0 = 1.0 / 19;
static const double LOG_INV_ODD[8] = {1.0 / 17, 1.0 / 15, 1.0 / 13, 1.0 / 11, 1.0 / 9,
                                      1.0 / 7, 1.0 / 5, 1.0 / 3};
/* atan t = t (1 - t^2/3 + ... - t^26/27): Horner from -1/27 over these */
static const double ATAN_P0 = -1.0 / 27;
static const double ATAN_INV_ODD[12] = {1.0 / 25, -1.0 / 23, 1.0 / 21, -1.0 / 19, 1.0 / 17,
                                        -1.0 / 15, 1.0 / 13, -1.0 / 11, 1.0 / 9, -1.0 / 7,
                                        1.0 / 5, -1.0 / 3};

#endif
