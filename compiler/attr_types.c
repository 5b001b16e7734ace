/*
 * attr_types.c - every attribute of a node has the type its ONNX schema
 * gives it, for every op: a list of ints where a float is meant is an error
 * naming the node, never a silent default.
 *
 * attr_types.def lists (domain, op type, since version, attribute, type) for
 * every schema of ai.onnx and ai.onnx.ml, generated from the installed onnx
 * package (onnx 1.12: opsets up to 17) by scripts/gen_attr_types.py and
 * sorted, so a lookup is a binary search; attr_types_later.def, written by
 * hand from ONNX's changelog, does the same for the schema versions of opsets
 * 18 to 21 kiln accepts. An attribute the schema does not name (kiln's own
 * kiln.* attributes, extensions) is not checked here; the accessors in
 * shape.c still check the type of what they read.
 */
#include <stdlib.h>
#include <string.h>

#include "infer.h"

typedef struct AttrRow {
	const char *domain, *op_type;
	int since;
	const char *name;
	AttrType type;
} AttrRow;

#define ATTR(dom, op, since, name, type) {dom, op, since, name, type},
static const AttrRow rows[] = {
#include "attr_types.def"
};
static const AttrRow later_rows[] = {
#include "attr_types_later.def"
};
#undef ATTR

static int cmp_key(const void *key, const void *row)
{
	const AttrRow *a = key, *b = row;
	int c = strcmp(a->domain, b->domain);
	if (!c)
		c = strcmp(a->op_type, b->op_type);
	if (!c)
		c = (a->since > b->since) - (a->since < b->since);
	if (!c)
		c = strcmp(a->name, b->name);
	return c;
}

static const char *type_name(AttrType t)
{
	static const char *const names[] = {
		"undefined", "a float", "an int", "a string", "a tensor", "a graph",
		"a list of floats", "a list of ints", "a list of strings", "a list of tensors",
		"a list of graphs", "a sparse tensor", "a list of sparse tensors", "a type",
		"a list of types",
	};
	return (unsigned)t < sizeof names / sizeof names[0] ? names[t] : "of an unknown type";
}

void attr_check_types(const Graph *g, const Node *n, Diag *d)
{
	if (n->op == NONE || n->since == 0 || !n->nattrs)
		return;
	const char *domain = n->domain_id == DOMAIN_ML ? "ai.onnx.ml"
	                     : n->domain_id == DOMAIN_ONNX ? "" : NULL;
	if (!domain)
		return;
	for (int i = 0; i < n->nattrs; i++) {
		const Attr *a = &n->attrs[i];
		AttrRow key = {domain, op_info(n->op)->op_type, n->since, a->name, AT_UNDEFINED};
		const AttrRow *r = bsearch(&key, rows, sizeof rows / sizeof rows[0], sizeof rows[0],
		                           cmp_key);
		if (!r && n->since >= 18)
			r = bsearch(&key, later_rows, sizeof later_rows / sizeof later_rows[0],
			            sizeof later_rows[0], cmp_key);
		if (r && r->type != a->type)
			diag_fail_node(d, g, n, KILN_INVALID_MODEL, "attribute \"%s\" is %s; %s-%d takes %s",
			               a->name, type_name(a->type), key.op_type, n->since,
			               type_name(r->type));
	}
}
