/*
 * isa.c - kiln_isa(): the best kernel variant this CPU and OS support, at most
 * the one KILN_ISA names; decided once and cached (see isa.h).
 */
#include <stdlib.h>
#include <string.h>

#include "isa.h"
#include "kiln/kernels.h"

#if defined(__x86_64__) && defined(KILN_HAVE_X86_VARIANTS)
#include <cpuid.h>

static unsigned long long xgetbv0(void)
{
	unsigned lo, hi;
	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	return (unsigned long long)hi << 32 | lo;
}

static int detect(void)
{
	unsigned a, b, c, d;
	if (!__get_cpuid(1, &a, &b, &c, &d))
		return KILN_ISA_REF;
	int fma = c >> 12 & 1, osxsave = c >> 27 & 1, avx = c >> 28 & 1, f16c = c >> 29 & 1;
	if (!(osxsave && avx && fma && f16c))
		return KILN_ISA_REF;
	unsigned long long xcr0 = xgetbv0();
	if ((xcr0 & 0x6) != 0x6)  /* XMM and YMM state */
		return KILN_ISA_REF;
	if (__get_cpuid_max(0, NULL) < 7)
		return KILN_ISA_REF;
	__cpuid_count(7, 0, a, b, c, d);
	int avx2 = b >> 5 & 1;
	if (!avx2)
		return KILN_ISA_REF;
	int avx512 = (b >> 16 & 1) && (b >> 17 & 1) && (b >> 30 & 1) && (b >> 31 & 1); /* F DQ BW VL */
	if (avx512 && (xcr0 & 0xe6) == 0xe6)  /* opmask, ZMM_Hi256, Hi16_ZMM */
		return KILN_ISA_AVX512;
	return KILN_ISA_AVX2;
}

/* The VNNI extension of variant isa: AVX512-VNNI (leaf 7 ECX bit 11) for
 * avx512, AVX-VNNI (leaf 7 subleaf 1 EAX bit 4) for avx2. */
static int detect_vnni(int isa)
{
	unsigned a, b, c, d;
	if (isa == KILN_ISA_REF || __get_cpuid_max(0, NULL) < 7)
		return 0;
	__cpuid_count(7, 0, a, b, c, d);
	if (isa == KILN_ISA_AVX512)
		return c >> 11 & 1;
	if (a < 1)  /* no subleaf 1 */
		return 0;
	__cpuid_count(7, 1, a, b, c, d);
	return a >> 4 & 1;
}
#else
static int detect(void)
{
	return KILN_ISA_REF;
}

static int detect_vnni(int isa)
{
	(void)isa;
	return 0;
}
#endif

static int forced_limit(void)
{
	const char *s = getenv("KILN_ISA");
	if (!s || !*s)
		return KILN_ISA_AVX512;
	if (!strcmp(s, "ref"))
		return KILN_ISA_REF;
	if (!strcmp(s, "avx2"))
		return KILN_ISA_AVX2;
	return KILN_ISA_AVX512;
}

int kiln_isa(void)
{
	/* -1: not decided yet. Racing first calls compute the same answer. */
	static int cached = -1;
	int v = __atomic_load_n(&cached, __ATOMIC_RELAXED);
	if (v < 0) {
		v = detect();
		int lim = forced_limit();
		if (v > lim)
			v = lim;
		__atomic_store_n(&cached, v, __ATOMIC_RELAXED);
	}
	return v;
}

int kiln_isa_vnni(void)
{
	static int cached = -1;
	int v = __atomic_load_n(&cached, __ATOMIC_RELAXED);
	if (v < 0) {
		const char *s = getenv("KILN_VNNI");
		v = s && !strcmp(s, "0") ? 0 : detect_vnni(kiln_isa());
		__atomic_store_n(&cached, v, __ATOMIC_RELAXED);
	}
	return v;
}

const char *kiln_isa_name(void)
{
	static const char *const names[] = {"ref", "avx2", "avx512"};
	return names[kiln_isa()];
}
