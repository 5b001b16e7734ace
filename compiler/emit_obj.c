/* emit_obj.c - placeholder until the LLVM-C emitter lands. */
#include <stdio.h>

#include "emit_obj.h"

int emit_weights_object(const char *path, const char *triple, const ObjSymbol *syms,
                        size_t nsyms, char *err, size_t errsz)
{
	(void)path, (void)triple, (void)syms, (void)nsyms;
	snprintf(err, errsz, "weights object emission is not implemented yet");
	return -1;
}
