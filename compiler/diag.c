/*
 * diag.c - user errors and internal bugs.
 *
 * A user error (bad model, bad flag) is formatted once into Diag.msg as a
 * single line naming the file and, where there is one, the node, and then
 * long-jumps to the protected entry that started the work (Lua's
 * rawrunprotected pattern). All memory is arena memory, so nothing leaks.
 * Bugs are different: kiln_die reports file:line and aborts.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"

/* Names from the model are untrusted: keep messages on one printable line. */
static void sanitize(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = '?';
}

static _Noreturn void finish(Diag *d, enum kiln_status st)
{
	sanitize(d->msg);
	d->status = st;
	if (!d->protect)
		kiln_die(__FILE__, __LINE__, d->msg);
	longjmp(*d->protect, 1);
}

_Noreturn void diag_fail(Diag *d, enum kiln_status st, const char *fmt, ...)
{
	size_t len = (size_t)snprintf(d->msg, sizeof d->msg, "%s: ", d->file ? d->file : "kiln");
	if (len < sizeof d->msg) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(d->msg + len, sizeof d->msg - len, fmt, ap);
		va_end(ap);
	}
	finish(d, st);
}

_Noreturn void kiln_die(const char *file, int line, const char *what)
{
	fprintf(stderr, "kiln: internal error at %s:%d: %s\n"
	                "kiln: this is a bug in kiln; please report it with the model\n",
	        file, line, what);
	abort();
}
