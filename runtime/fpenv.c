/*
 * fpenv.c - the floating-point environment every kiln computation runs in.
 *
 * kiln's results are defined for IEEE round-to-nearest-even arithmetic with
 * subnormal numbers kept, and its kernels never expect a trap
 * (docs/reproducibility.md). Another library in the caller's process can
 * change that for the whole thread: a shared object linked with -ffast-math
 * sets flush-to-zero and denormals-are-zero when it is loaded, a debugging
 * service unmasks floating-point exceptions (feenableexcept), code may call
 * fesetround. kiln_fpenv_enter puts the thread's control register into
 * kiln's state (on x86-64 MXCSR: nearest, no FTZ or DAZ, every exception
 * masked; on aarch64 FPCR: nearest, no FZ/FZ16/DN/AHP, no trap enabled;
 * elsewhere the C rounding mode only) and returns what it found;
 * kiln_fpenv_leave gives the caller its register back as it was, status
 * flags included. Reading the register costs a few cycles; it is written
 * only when it differs.
 */
#include <stdint.h>

#include "kiln/run.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

/* MXCSR: the six status flags kept, the six exceptions masked (bits 7-12),
 * rounding (13-14) to nearest, DAZ (6) and FTZ (15) off */
enum { CSR_FLAGS = 0x3f, CSR_MASKS = 0x1f80 };

KILN_API kiln_fpenv kiln_fpenv_enter(void)
{
	unsigned csr = _mm_getcsr(), want = (csr & CSR_FLAGS) | CSR_MASKS;
	kiln_fpenv e = {csr, csr != want};
	if (e.changed)
		_mm_setcsr(want);
	return e;
}

KILN_API void kiln_fpenv_leave(kiln_fpenv e)
{
	if (e.changed)
		_mm_setcsr((unsigned)e.saved);
}

#elif defined(__aarch64__)

/* FPCR: trap enables IOE..IXE (8-12) and IDE (15), FZ16 (19), RMode
 * (22-23), FZ (24), DN (25), AHP (26) all cleared */
#define FPCR_OFF ((uint64_t)0x9f00 | 1u << 19 | 3u << 22 | 1u << 24 | 1u << 25 | 1u << 26)

KILN_API kiln_fpenv kiln_fpenv_enter(void)
{
	uint64_t fpcr;
	__asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
	kiln_fpenv e = {fpcr, (fpcr & FPCR_OFF) != 0};
	if (e.changed) {
		uint64_t want = fpcr & ~FPCR_OFF;
		__asm__ volatile("msr fpcr, %0" : : "r"(want));
	}
	return e;
}

KILN_API void kiln_fpenv_leave(kiln_fpenv e)
{
	if (e.changed) {
		uint64_t fpcr = e.saved;
		__asm__ volatile("msr fpcr, %0" : : "r"(fpcr));
	}
}

#else
#include <fenv.h>

KILN_API kiln_fpenv kiln_fpenv_enter(void)
{
	int r = fegetround();
	kiln_fpenv e = {(uint64_t)(unsigned)r, r != FE_TONEAREST};
	if (e.changed)
		fesetround(FE_TONEAREST);
	return e;
}

KILN_API void kiln_fpenv_leave(kiln_fpenv e)
{
	if (e.changed)
		fesetround((int)(unsigned)e.saved);
}
#endif
