/*
 * ops.c - which of the operators ONNX defines (schema.c) kiln compiles: the
 * op records (opdef.h), hung on the registry's op ids, and why a node is
 * refused, so "known", "valid" and "supported" are answered in one place.
 */
#include <pthread.h>
#include <string.h>

#include "opdef.h"
#include "ops/ops.h"

/* The op records (opdef.h), one table per family beside its inference. An op
 * is supported exactly when it has a record. */
static const OpDef *const families[] = {
	ops_elementwise_defs, ops_linalg_defs, ops_conv_defs, ops_norm_defs, ops_reduce_defs,
	ops_tensor_defs, ops_quant_defs, ops_resize_defs, ops_sampling_defs, ops_signal_defs,
	ops_control_defs, ops_misc_defs, ops_text_defs, ops_select_defs, ops_rnn_defs, ops_ml_defs,
	ops_attention_defs, ops_edgeconv_defs, ops_convchain_defs, ops_scatterrows_defs,   /* kiln's own fused ops (ops_kiln.def) */
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
	int extra_in = n->fused.residual ? 1 : 0;
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
