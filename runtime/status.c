/*
 * status.c - status sentences and the version of the linked runtime.
 * A table of fixed strings, so the runtime can describe a failure without
 * formatting or allocating anything.
 */
#include "kiln/kiln.h"

static const char *const status_text[] = {
	[KILN_OK] = "success",
	[KILN_INVALID_MODEL] = "invalid model",
	[KILN_UNSUPPORTED] = "unsupported",
	[KILN_SHAPE_ERROR] = "shape error",
	[KILN_LIMIT] = "limit exceeded",
	[KILN_NO_MEMORY] = "out of memory",
	[KILN_IO] = "input/output error",
	[KILN_USAGE] = "bad usage",
	[KILN_INTERNAL] = "internal error (a bug in kiln)",
	[KILN_BATCH_MIXING] = "the model mixes rows of the batch: only its compiled batch sizes can run",
	[KILN_RULE_SYNTAX] = "batch rule syntax: expected B:s1,...,sk with positive decimal sizes",
	[KILN_RULE_SIZE] = "batch rule names a batch size that is not compiled",
	[KILN_RULE_SHORT] = "batch rule sizes add up to less than its batch",
	[KILN_RULE_PADDING] = "batch rule pads as many rows as its last size or more",
	[KILN_FROZEN_INPUT] = "an input frozen at compile time got different values",
	[KILN_WRONG_MODEL] = "the context was initialised for another model",
	[KILN_LENGTH] = ("a sample's length is negative, longer than the largest compiled bucket "
	                 "or than the call's padded length"),
};

KILN_API const char *kiln_status_string(enum kiln_status status)
{
	if ((unsigned)status < sizeof status_text / sizeof status_text[0] && status_text[status])
		return status_text[status];
	return "unknown status";
}

KILN_API int kiln_version_num(void)
{
	return KILN_VERSION_NUM;
}
