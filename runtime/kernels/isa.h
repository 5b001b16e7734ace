/*
 * isa.h - which instruction-set variant of the kernels runs (not part of
 * libkiln's API beyond kiln_isa_name in kernels.h).
 *
 * Every kernel with fast variants has one dispatch point that asks kiln_isa()
 * and calls runtime/kernels/<type>-<op>/<variant>.c. kiln_isa() decides once
 * per process (CPUID and XGETBV: the CPU has the instructions and the OS saves
 * the registers), caches the answer, and never changes it afterwards, so a
 * run's results depend only on the inputs and that variant. The environment
 * variable KILN_ISA (ref, avx2, avx512) forces a lower variant, for tests and
 * comparisons; asking for one the CPU lacks gives the best one it has.
 *
 * The variants: ref is portable C11 (every target, aarch64 included);
 * avx2 needs AVX2 + FMA (+ F16C); avx512 needs AVX-512 F, VL, BW and DQ.
 * x86-64 variant files are compiled with their own -m flags
 * (runtime/kernels/meson.build); on other targets only ref exists.
 */
#ifndef KILN_ISA_H
#define KILN_ISA_H

enum kiln_isa_level { KILN_ISA_REF = 0, KILN_ISA_AVX2 = 1, KILN_ISA_AVX512 = 2 };

/* The variant in use, decided on the first call. Thread-safe. */
int kiln_isa(void);

/* 1 when the variant in use also has its VNNI dot products (vpdpbusd):
 * AVX512-VNNI for avx512, AVX-VNNI for avx2 (the integer kernels,
 * i8-gemm/). KILN_VNNI=0 in the environment turns them off, for tests and
 * comparisons. Decided once, like kiln_isa(). */
int kiln_isa_vnni(void);

#endif
