/*
 * schema.c - the op registry: every operator ONNX defines (from ops.def,
 * which is generated from ONNX's own schemas) with its version history and
 * arity, the domains, and the ops kiln leaves out of its scope by design.
 *
 * A node resolves to the newest schema version not newer than the opset its
 * model imports for the node's domain, as ONNX specifies. Pure tables: the
 * loader, the error messages and every stage read them, and they call
 * nothing of the compiler's (ops.c says which ops kiln compiles).
 */
#include <string.h>

#include "schema.h"

enum { ONNX = DOMAIN_ONNX, ML = DOMAIN_ML, TRAINING = DOMAIN_TRAINING, KILN = DOMAIN_KILN };

static const OpVersion versions[] = {
#define OP(id, name, dom)
#define OPV(id, since, a, b, c, d) {since, a, b, c, d, false},
#define OPV_DEPRECATED(id, since, a, b, c, d) {since, a, b, c, d, true},
#define OPSET_MAX(dom, n)
#include "ops.def"
#include "ops_kiln.def"
#undef OP
#undef OPV
#undef OPV_DEPRECATED
#undef OPSET_MAX
};

/* Which op each version row belongs to, to index the rows per op at start-up. */
static const int version_op[] = {
#define OP(id, name, dom)
#define OPV(id, since, a, b, c, d) OP_##id,
#define OPV_DEPRECATED(id, since, a, b, c, d) OP_##id,
#define OPSET_MAX(dom, n)
#include "ops.def"
#include "ops_kiln.def"
#undef OP
#undef OPV
#undef OPV_DEPRECATED
#undef OPSET_MAX
};

static const OpInfo ops[OP_COUNT] = {
#define OP(id, name, dom) [OP_##id] = {name, dom},
#define OPV(id, since, a, b, c, d)
#define OPV_DEPRECATED(id, since, a, b, c, d)
#define OPSET_MAX(dom, n)
#include "ops.def"
#include "ops_kiln.def"
#undef OP
#undef OPV
#undef OPV_DEPRECATED
#undef OPSET_MAX
};

static const int opset_max[] = {
#define OP(id, name, dom)
#define OPV(id, since, a, b, c, d)
#define OPV_DEPRECATED(id, since, a, b, c, d)
#define OPSET_MAX(dom, n) [dom] = n,
#include "ops.def"
#include "ops_kiln.def"
#undef OP
#undef OPV
#undef OPV_DEPRECATED
#undef OPSET_MAX
};

/* The version rows of op: contiguous in ops.def, in ascending order. A scan
 * of ~450 rows per call keeps the tables immutable (threads share them). */
static void op_rows(int op, int *first, int *count)
{
	int n = (int)(sizeof versions / sizeof versions[0]);
	*first = 0;
	*count = 0;
	for (int i = 0; i < n; i++)
		if (version_op[i] == op) {
			if (!*count)
				*first = i;
			++*count;
		}
}

int op_count(void)
{
	return OP_COUNT;
}

const OpInfo *op_info(int op)
{
	KILN_ASSERT(op >= 0 && op < OP_COUNT);
	return &ops[op];
}

int op_lookup(const char *op_type, int domain_id)
{
	/* A linear scan over ~200 rows per node is cheap next to parsing. */
	for (int i = 0; i < OP_COUNT; i++)
		if (ops[i].domain_id == domain_id && strcmp(ops[i].op_type, op_type) == 0)
			return i;
	return NONE;
}

const OpVersion *op_version(int op, int since)
{
	int first, count;
	op_rows(op, &first, &count);
	for (int i = first; i < first + count; i++)
		if (versions[i].since == since)
			return &versions[i];
	return NULL;
}

int op_resolve(int op, int64_t opset)
{
	int first, count, since = 0;
	op_rows(op, &first, &count);
	for (int i = first; i < first + count; i++)
		if (versions[i].since <= opset)
			since = versions[i].since;
	return since;
}

int op_max_opset(int domain_id)
{
	return domain_id >= 0 && domain_id < (int)(sizeof opset_max / sizeof opset_max[0])
	               ? opset_max[domain_id]
	               : 0;
}

int domain_lookup(const char *domain)
{
	if (!domain[0] || strcmp(domain, "ai.onnx") == 0)
		return DOMAIN_ONNX;
	if (strcmp(domain, "ai.onnx.ml") == 0)
		return DOMAIN_ML;
	if (strcmp(domain, "ai.onnx.preview.training") == 0)
		return DOMAIN_TRAINING;
	return DOMAIN_OTHER;
}

/* Ops that an ahead-of-time compiler of inference graphs does not compile,
 * and why; NULL for the others (which may simply not be done yet). */
const char *op_out_of_scope(int domain_id, const char *op_type)
{
	static const char *const string_ops[] = {"StringNormalizer", "StringConcat", "StringSplit",
	                                         "RegexFullMatch"};
	static const char *const random_ops[] = {"Bernoulli", "Multinomial", "RandomNormal",
	                                         "RandomNormalLike", "RandomUniform",
	                                         "RandomUniformLike"};
	if (domain_id == DOMAIN_TRAINING)
		return "a training operator; kiln compiles inference graphs";
	for (size_t i = 0; i < sizeof random_ops / sizeof random_ops[0]; i++)
		if (strcmp(op_type, random_ops[i]) == 0)
			return "draws random numbers; kiln compiles deterministic inference graphs";
	if (strncmp(op_type, "Sequence", 8) == 0 || strncmp(op_type, "Optional", 8) == 0 ||
	    strcmp(op_type, "SplitToSequence") == 0 || strcmp(op_type, "ConcatFromSequence") == 0)
		return "works on sequence or optional values; kiln compiles tensor graphs only";
	if (domain_id == DOMAIN_ML && strcmp(op_type, "ZipMap") == 0)
		return "makes a sequence of maps, which C has no type for: compile with "
		       "--zipmap=tensor for the probability tensor in its place, its keys in the "
		       "header (or export without it: skl2onnx options={'zipmap': False})";
	for (size_t i = 0; i < sizeof string_ops / sizeof string_ops[0]; i++)
		if (strcmp(op_type, string_ops[i]) == 0)
			return "works on strings; kiln compiles numeric tensors only";
	if (strcmp(op_type, "ImageDecoder") == 0)
		return "decodes image files (JPEG, PNG, ...); kiln compiles numeric tensors only: "
		       "decode the image before the model and feed its pixels";
	return NULL;
}
