/*
 * f32-vmath/ref.c - the portable variant of the vector math kernels: body.h
 * over one float lane in plain C11, with fmaf wherever the SIMD variants
 * fuse (vfma: rounded once, as theirs), so that it computes the same bits as
 * they do (issue 30; tests/repro/bits.py). The reference the SIMD variants
 * are tested against, and what runs on targets without them. Also kiln's
 * scalar elementary functions for the generated C (kiln_expf, kiln_tanhf,
 * kiln_erff; kernels.h): the same algorithms, one value at a time.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "lane1.h"
#include "vmath.h"

typedef int VM;
enum { W = 1 };
#if defined(__GNUC__)
#define VMATH_INLINE inline __attribute__((always_inline))
#else
#define VMATH_INLINE inline
#endif

static inline V vload_n(const float *p, int64_t n) { (void)n; return *p; }
static inline void vstore_n(float *p, V a, int64_t n) { (void)n; *p = a; }
static inline VM vlt(V a, V b) { return a < b; }
static inline VM vgt(V a, V b) { return a > b; }
static inline VM vge(V a, V b) { return a >= b; }
static inline int vall(VM m) { return m != 0; }
static inline V vsel(VM m, V a, V b) { return m ? a : b; }
static inline V vabs(V a) { return from_bits(bits(a) & 0x7fffffffu); }
static inline V vcopysign(V m, V s) { return from_bits(bits(m) | (bits(s) & 0x80000000u)); }

static inline V vkeep_n(V a, int64_t n) { (void)n; return a; }
/* the 16 double lanes of body.h's summation order: element i in lane i % 16 */
typedef struct { double d[16]; } Dacc;
static inline void dacc_zero(Dacc *acc) { memset(acc->d, 0, sizeof acc->d); }
static inline void dacc_add(Dacc *acc, V a, int64_t i) { acc->d[i % 16] += (double)a; }
static inline void dacc_add_at(Dacc *acc, const float *p, int64_t i)
{
	acc->d[i % 16] += (double)*p;
}
static inline double dacc_total(const Dacc *acc)
{
	double t[8];
	for (int j = 0; j < 8; j++)
		t[j] = acc->d[j] + acc->d[j + 8];
	return ((t[0] + t[1]) + (t[2] + t[3])) + ((t[4] + t[5]) + (t[6] + t[7]));
}

/* kiln_f32_unary's Log and Atan: the scalar functions themselves (the
 * SIMD variants compute their operations lane by lane, dmath.h) */
static void vmath_dlog(const float *x, float *y, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		y[i] = kiln_logf(x[i]);
}
static void vmath_datan(const float *x, float *y, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		y[i] = kiln_atanf(x[i]);
}

#include "body.h"

float kiln_expf(float x) { return v_exp(x); }
float kiln_tanhf(float x) { return v_tanh(x); }
float kiln_erff(float x) { return v_erf(x); }

const VmathOps kiln_vmath_ref = {
	vmath_unary, vmath_act, vmath_softmax_line, vmath_layernorm_rows, vmath_batchnorm_plane,
	vmath_lstm_cell, vmath_lstm_block, vmath_lstm_cells, vmath_lstm_rows, vmath_lstm_row,
};
