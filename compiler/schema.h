/*
 * schema.h - the op registry (schema.c): op ids, ONNX's schema versions
 * and arity, domains. Pure tables.
 */
#ifndef KILN_SCHEMA_H
#define KILN_SCHEMA_H

#include "ir.h"

/* ---- schema.c: the op registry ---------------------------------------- */

/* Op ids: OP_Conv, OP_ML_Normalizer, ... one per row of ops.def. */
enum {
#define OP(id, name, dom) OP_##id,
#define OPV(id, since, a, b, c, d)
#define OPV_DEPRECATED(id, since, a, b, c, d)
#define OPSET_MAX(dom, n)
#include "ops.def"
#include "ops_kiln.def"
#undef OP
#undef OPV
#undef OPV_DEPRECATED
#undef OPSET_MAX
	OP_COUNT
};

typedef struct OpInfo {
	const char *op_type;
	int domain_id;
} OpInfo;

typedef struct OpVersion {
	int since;
	int min_in, max_in, min_out, max_out;
	bool deprecated;
} OpVersion;

int op_lookup(const char *op_type, int domain_id);   /* NONE if unknown */
const OpInfo *op_info(int op);
const OpVersion *op_version(int op, int since);
/* The schema version a node of this op resolves to at opset: 0 if none. */
int op_resolve(int op, int64_t opset);
int op_max_opset(int domain_id);
int domain_lookup(const char *domain);   /* DOMAIN_* */
/* Why an op kiln has no hook for is out of its scope; NULL if it is not. */
const char *op_out_of_scope(int domain_id, const char *op_type);
int op_count(void);

#endif
