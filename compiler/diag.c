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
#include <stdlib.h>
#include <string.h>

#include "ir.h"

/* Far above real models (the largest public ONNX models have ~10^4 nodes
 * and tensors of ~10^9 elements); docs/limits.md. */
const Limits kiln_default_limits = {
	.max_nodes = 200000,
	.max_elements = (int64_t)1 << 36,
	.max_arena_bytes = (int64_t)16 << 30,
	.max_c_bytes = (int64_t)256 << 20,
	.max_depth = 20,
};

/* Names from the model are untrusted: keep messages on one printable line. */
static void sanitize(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = '?';
}

size_t diag_node_path(char *buf, size_t size, const Graph *g, const Node *n)
{
	size_t len = 0;
	/* Outer graphs first, so the message reads from the top of the model. */
	if (g->parent) {
		len = diag_node_path(buf, size, g->parent, &g->parent->nodes[g->parent_node]);
		len += (size_t)snprintf(buf + len, len < size ? size - len : 0, " %s: ",
		                        g->parent_attr ? g->parent_attr : "subgraph");
	}
	if (len >= size)
		return len;
	len += (size_t)snprintf(buf + len, size - len, "node %d \"%s\" (%s", n->id,
	                        n->name ? n->name : "", n->op_type ? n->op_type : "?");
	if (len < size)
		len += (size_t)snprintf(buf + len, size - len, ", %s opset %d)",
		                        domain_name(n->domain_id) ? domain_name(n->domain_id)
		                                                 : n->domain,
		                        n->opset);
	return len;
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

_Noreturn void diag_fail_node(Diag *d, const Graph *g, const Node *n, enum kiln_status st,
                              const char *fmt, ...)
{
	size_t len = (size_t)snprintf(d->msg, sizeof d->msg, "%s: ", d->file ? d->file : "kiln");
	if (len < sizeof d->msg)
		len += diag_node_path(d->msg + len, sizeof d->msg - len, g, n);
	if (len + 2 < sizeof d->msg) {
		memcpy(d->msg + len, ": ", 3);
		len += 2;
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
