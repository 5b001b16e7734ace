/*
 * test_opdef.c - the op records (compiler/opdef.h) are the one source of
 * truth for "supported": every op with a record has shape inference and a
 * code generator, the registry refuses exactly the ops without one, and
 * the stage-specific facts a record names are complete (a map evaluation
 * has its scalar functions, a reduction its kind).
 */
#include "check.h"
#include "kiln.h"
#include "opdef.h"

int main(void)
{
	int nrecords = 0;
	for (int op = 0; op < op_count(); op++) {
		const OpDef *d = op_def(op);
		if (!d) {
			CHECK(op_infer_hook(op) == NULL);
			continue;
		}
		nrecords++;
		if (d->op != op || !d->infer || !d->emit)
			fprintf(stderr, "op %s: record incomplete\n", op_info(op)->op_type);
		CHECK_EQ_INT(op, d->op);
		CHECK(d->infer != NULL);
		CHECK(d->emit != NULL);
		CHECK(op_infer_hook(op) == d->infer);
		if (d->peval == PE_MAP || d->peval == PE_MEAN)
			CHECK(d->eval_f1 || d->eval_i1 || d->eval_f2 || d->eval_i2);
		CHECK((d->peval == PE_REDUCE || d->peval == PE_ARG_EXTREMUM) == (d->reduce != RD_NONE));
		CHECK(d->peval != PE_ARG_EXTREMUM || d->reduce == RD_MAX || d->reduce == RD_MIN);
		CHECK(!d->view || d->peval == PE_NONE || d->peval == PE_SAME_BYTES ||
		      d->peval == PE_BROADCAST);
		/* the batch analysis names what an op does along its axis from the record */
		CHECK((d->batch == BK_ALONG_AXIS) == (d->along != NULL));
	}
	/* A count that moves only when an op is added or removed on purpose
	 * (docs/ops.md says the same number). */
	CHECK(nrecords >= 180);
	CHECK(op_def(NONE) == NULL && op_def(op_count()) == NULL);
	CHECK(op_def(op_lookup("Add", DOMAIN_ONNX))->peval == PE_MAP);
	CHECK(op_def(op_lookup("Bernoulli", DOMAIN_ONNX)) == NULL);
	/* kiln's own fused ops: records of their own, in a domain no model's
	 * domain string reaches, and not under their names in ai.onnx */
	static const char *const fused[] = {"KilnAttention", "KilnEdgeConv", "KilnKnn",
	                                    "KilnQLinearConv", "KilnQLinearMatMul", "KilnSelect",
	                                    "KilnSelectSum", "KilnConvChain", "KilnScatterRows"};
	for (size_t i = 0; i < sizeof fused / sizeof fused[0]; i++) {
		int op = op_lookup(fused[i], DOMAIN_KILN);
		CHECK(op != NONE && op_def(op) != NULL && op_info(op)->domain_id == DOMAIN_KILN);
		CHECK(op_lookup(fused[i], DOMAIN_ONNX) == NONE);
	}
	CHECK(domain_lookup("kiln") == DOMAIN_OTHER && domain_lookup("") == DOMAIN_ONNX);
	CHECK(op_def(op_lookup("KilnAttention", DOMAIN_KILN))->batch == BK_ATTENTION);
	printf("%d op records\n", nrecords);
	return check_report("test_opdef");
}
