/*
 * diag.h - user errors and bugs (diag.c). The bottom of the compiler:
 * diag.c calls nothing above it.
 */
#ifndef KILN_DIAG_H
#define KILN_DIAG_H

#include <setjmp.h>
#include <stddef.h>

#include "kiln/kiln.h"

/* ---- diag.c: errors ---------------------------------------------------- */

/* One compile's error state. The message is one line without the
 * "kiln: error: " prefix, which the CLI adds. */
typedef struct Diag {
	const char *file;        /* model path as the user gave it */
	enum kiln_status status; /* KILN_OK until the first error */
	char msg[1024];          /* the formatted error line */
	jmp_buf *protect;        /* where diag_fail jumps; NULL = abort (a bug) */
} Diag;

/* Record an error naming the model file and long-jump to d->protect. */
_Noreturn void diag_fail(Diag *d, enum kiln_status st, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Bugs, not user errors: report file:line and abort. */
_Noreturn void kiln_die(const char *file, int line, const char *what);
#define KILN_ASSERT(c) ((c) ? (void)0 : kiln_die(__FILE__, __LINE__, #c))

#endif
