/*
 * emit_obj.h - the weights object: every constant of a model, once, as a
 * relocatable object file for any target triple, written through the LLVM-C
 * API. Kept apart from kiln.h so that only emit_obj.c sees LLVM.
 */
#ifndef KILN_EMIT_OBJ_H
#define KILN_EMIT_OBJ_H

#include <stddef.h>
#include <stdint.h>

typedef struct ObjSymbol {
	const char *name;      /* global symbol name: a C identifier */
	const void *bytes;     /* the contents, any alignment; NULL if nbytes == 0 */
	uint64_t nbytes;
	uint32_t align;        /* power of two >= 1; kiln passes 64 */
	int hidden;            /* 1: hidden visibility (kiln's models: never exported
	                          from a shared library); 0: default */
	/* If set, the contents are not bytes as they are: fill(fill_arg, dst)
	 * writes the nbytes to store (a weight repacked for a kernel). Called
	 * once per symbol while the object is written, into a temporary buffer. */
	void (*fill)(const void *arg, void *dst);
	const void *fill_arg;
} ObjSymbol;

/* Write an object file at path for triple (NULL or "" = the host) defining
 * each symbol as a global constant in a read-only section, aligned as asked
 * and hidden if it asks.
 * The output is deterministic: same input, same bytes. Returns 0 on success,
 * else -1 with a one-line reason in err. Never exits, never long-jumps. */
/* obj_patch.c: ELF targets get zeros from LLVM and their bytes from here,
 * so no weight is copied twice while the object is written. */
#include <stdbool.h>
bool obj_patch_is_elf_triple(const char *triple);
int obj_patch_elf(const char *path, const ObjSymbol *syms, size_t nsyms, char *err,
                  size_t errsz);

int emit_weights_object(const char *path, const char *triple, const ObjSymbol *syms,
                        size_t nsyms, char *err, size_t errsz);

/* Large data: when the symbols' bytes pass KILN_LARGE_DATA_BYTES (1 GiB;
 * the environment variable of that name overrides it, for tests), on ELF
 * targets:
 *  - x86-64: the weights go to .lrodata sections marked SHF_X86_64_LARGE,
 *    which linkers place after .bss, and the code that refers to them must
 *    be compiled with -mcmodel=medium (emit_obj_code_model says so).
 *    Without both, over 2 GiB of weights do not link (32-bit relocations
 *    overflow).
 *  - aarch64: the weights go to a writable .ldata section, which linkers
 *    place after .data, so that the 32-bit references of .eh_frame to the
 *    code and to .data do not span them. The code keeps the small code
 *    model: ADRP reaches +-4 GiB, which bounds the weights at
 *    EMIT_OBJ_AARCH64_MAX_DATA (emit_obj_max_data), leaving 256 MiB for the
 *    rest of the program.
 * triple NULL or "" = the host. */
#define EMIT_OBJ_AARCH64_MAX_DATA ((UINT64_C(4) << 30) - (UINT64_C(256) << 20))
/* The C compiler flag the code referring to the weights needs, or NULL. */
const char *emit_obj_code_model(const char *triple, uint64_t total_bytes);
/* The most bytes of weights a program for triple can address (UINT64_MAX:
 * no limit below the target's pointer size). */
uint64_t emit_obj_max_data(const char *triple);
int obj_patch_mark_large(const char *path, char *err, size_t errsz);

#endif
