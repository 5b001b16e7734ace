/*
 * ops.c - the op registry: every operator ONNX defines (from ops.def, which
 * is generated from ONNX's own schemas) with its version history and arity,
 * plus which of them kiln compiles.
 *
 * A node resolves to the newest schema version not newer than the opset its
 * model imports for the node's domain, as ONNX specifies. The op records
 * (opdef.h) hang on the same op ids, so "known", "valid" and "supported" are
 * answered in one place.
 */
#include <pthread.h>
#include <string.h>

#include "kiln.h"
#include "opdef.h"


enum { ONNX = DOMAIN_ONNX, ML = DOMAIN_ML, TRAINING = DOMAIN_TRAINING };

static const OpVersion versions[] = {
#define OP(id, name, dom)
#define OPV(id, since, a, b, c, d) {since, a, b, c, d, false},
#define OPV_DEPRECATED(id, since, a, b, c, d) {since, a, b, c, d, true},
#define OPSET_MAX(dom, n)
#include "ops.def"
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
#undef OP
#undef OPV
#undef OPV_DEPRECATED
#undef OPSET_MAX
};

/* The op records (opdef.h), one table per family beside its inference. An op
 * is supported exactly when it has a record. */
static const OpDef *const families[] = {
	ops_elementwise_defs, ops_matmul_defs, ops_conv_defs, ops_norm_defs, ops_reduce_defs,
	ops_shape_defs, ops_quant_defs, ops_resize_defs, ops_sampling_defs, ops_signal_defs,
	ops_control_defs, ops_misc_defs, ops_text_defs, ops_select_defs, ops_rnn_defs, ops_ml_defs,
};

/* Records by op id, indexed once (threads share it afterwards). */
static const OpDef *defs[OP_COUNT];
static pthread_once_t defs_once = PTHREAD_ONCE_INIT;

static void index_defs(void)
{
	for (size_t f = 0; f < sizeof families / sizeof families[0]; f++)
		for (const OpDef *d = families[f]; d->op != NONE; d++) {
			KILN_ASSERT(d->op >= 0 && d->op < OP_COUNT && !defs[d->op]);
			defs[d->op] = d;
		}
}

const OpDef *op_def(int op)
{
	pthread_once(&defs_once, index_defs);
	return op >= 0 && op < OP_COUNT ? defs[op] : NULL;
}

InferHook op_infer_hook(int op)
{
	const OpDef *d = op_def(op);
	return d ? d->infer : NULL;
}


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

const char *domain_name(int domain_id)
{
	switch (domain_id) {
	case DOMAIN_ONNX: return "ai.onnx";
	case DOMAIN_ML: return "ai.onnx.ml";
	case DOMAIN_TRAINING: return "ai.onnx.preview.training";
	}
	return NULL;
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

const char *op_unsupported_reason(const Graph *g, const Node *n, char *buf, size_t bufsz)
{
	const Model *m = g->model;
	if (n->domain_id == DOMAIN_OTHER) {
		for (int i = 0; i < m->nfunctions; i++) {
			size_t dl = strlen(n->domain);
			if (strncmp(m->functions[i], n->domain, dl) == 0 && m->functions[i][dl] == ':' &&
			    strcmp(m->functions[i] + dl + 1, n->op_type) == 0) {
				snprintf(buf, bufsz, "calls a model-local function; kiln does not inline "
				                     "functions yet");
				return buf;
			}
		}
		snprintf(buf, bufsz, "domain \"%s\" is not an ONNX operator set kiln knows", n->domain);
		return buf;
	}
	if (n->op == NONE) {
		snprintf(buf, bufsz, "%s has no operator %s", domain_name(n->domain_id), n->op_type);
		return buf;
	}
	if (n->opset > op_max_opset(n->domain_id)) {
		snprintf(buf, bufsz, "opset %d is newer than kiln's operator tables (%s up to %d)",
		         n->opset, domain_name(n->domain_id), op_max_opset(n->domain_id));
		return buf;
	}
	if (n->since == 0) {
		snprintf(buf, bufsz, "%s does not exist in %s opset %d", n->op_type,
		         domain_name(n->domain_id), n->opset);
		return buf;
	}
	const OpVersion *v = op_version(n->op, n->since);
	KILN_ASSERT(v);
	/* The optimizer's fused residual is one input past the schema's
	 * (passes/fuse.c: Conv + Add; docs/optimizer.md). */
	int extra_in = node_attr(n, "kiln.residual") ? 1 : 0;
	if (edgeconv_node(n))   /* passes/edgeconv.c: x, idx and two per layer */
		extra_in = n->nin;
	if ((n->op == OP_QLinearConv || n->op == OP_QLinearMatMul) && node_attr(n, "kiln.qdq"))
		extra_in = n->op == OP_QLinearConv ? 1 : 2;  /* passes/qdq.c: bias, its scale */
	if (n->op == OP_Softmax && node_attr(n, "kiln.attention"))
		extra_in = 3;  /* passes/attention.c: Q, K, V, mask */
	if (n->nin < v->min_in || n->nin > v->max_in + extra_in) {
		snprintf(buf, bufsz, "has %d inputs; %s-%d takes %d to %d", n->nin, n->op_type, v->since,
		         v->min_in, v->max_in);
		return buf;
	}
	if (n->nout < v->min_out || n->nout > v->max_out) {
		snprintf(buf, bufsz, "has %d outputs; %s-%d gives %d to %d", n->nout, n->op_type,
		         v->since, v->min_out, v->max_out);
		return buf;
	}
	if (v->deprecated) {
		snprintf(buf, bufsz, "%s-%d is deprecated", n->op_type, v->since);
		return buf;
	}
	if (!op_def(n->op) || (n->op == OP_ML_ZipMap && !m->zipmap_tensor)) {
		const char *why = op_out_of_scope(n->domain_id, n->op_type);
		snprintf(buf, bufsz, "%s", why ? why : "not supported by kiln yet");
		return buf;
	}
	return NULL;
}
