/*
 * wire.c - a pre-pass over the protobuf wire format that keeps weights out of
 * protobuf-c.
 *
 * protobuf-c copies every `bytes` field it unpacks, so unpacking a model with
 * W bytes of weights holds them twice. Instead we walk the mapped file once,
 * guided by protobuf-c's own message descriptors, and write a "skeleton": the
 * same message with each TensorProto payload (raw_data, and float_data or
 * double_data when packed in one record) replaced by a small unknown field
 * (number WIRE_STUB_FIELD) that records where the payload sits in the file.
 * protobuf-c then unpacks the skeleton, which is small, and the loader points
 * each weight at its bytes in the mapping. Payload pages are never touched here.
 *
 * The walk also validates the wire format (tags, varints, lengths, wire types,
 * nesting depth up to WIRE_MAX_DEPTH plus 3 per subgraph level), so protobuf-c only ever sees well-formed
 * input, and errors can name the byte offset and the field.
 *
 * Length prefixes of rewritten messages are written as 5-byte padded varints,
 * which protobuf accepts, so the skeleton is written in one pass.
 */
#include <string.h>

#include <protobuf-c/protobuf-c.h>

#include "load.h"
#include "onnx.pb-c.h"

enum { WT_VARINT = 0, WT_FIXED64 = 1, WT_LEN = 2, WT_SGROUP = 3, WT_EGROUP = 4, WT_FIXED32 = 5 };
enum { TP_FLOAT_DATA = 4, TP_RAW_DATA = 9, TP_DOUBLE_DATA = 10 };
/* A stub costs about 20 bytes; smaller payloads are left inline, which also
 * keeps the skeleton no larger than the file. */
enum { STUB_BYTES = 1 + 8 + 8, STUB_MIN_BYTES = 64 };

typedef struct Skel {
	const uint8_t *file;  /* start of the whole buffer, for offsets */
	uint8_t *out;
	size_t len, cap;
	Arena *arena;
	Diag *diag;
	int64_t max_depth;      /* message nesting */
	int64_t graph_depth;    /* the subgraph limit it comes from, for the error */
} Skel;

static void put(Skel *s, const void *p, size_t n)
{
	if (s->cap - s->len < n) {
		size_t cap = s->cap ? s->cap : 4096;
		while (cap - s->len < n) {
			if (cap > SIZE_MAX / 2)
				diag_fail(s->diag, KILN_LIMIT, "model skeleton too large");
			cap *= 2;
		}
		uint8_t *o = arena_alloc(s->arena, cap);
		if (s->len)
			memcpy(o, s->out, s->len);
		s->out = o;
		s->cap = cap;
	}
	memcpy(s->out + s->len, p, n);
	s->len += n;
}

static void put_varint(Skel *s, uint64_t v)
{
	uint8_t b[10];
	size_t n = 0;
	do {
		b[n] = (uint8_t)(v & 0x7f);
		v >>= 7;
		if (v)
			b[n] |= 0x80;
		n++;
	} while (v);
	put(s, b, n);
}

/* Reads a varint at *p (< end); fails with the byte offset if malformed. */
static uint64_t get_varint(Skel *s, const uint8_t **p, const uint8_t *end, const char *what)
{
	uint64_t v = 0;
	const uint8_t *q = *p;
	for (int shift = 0; shift < 70; shift += 7) {
		if (q >= end)
			diag_fail(s->diag, KILN_INVALID_MODEL,
			          "not a valid ONNX file: truncated %s at byte offset %zu", what,
			          (size_t)(*p - s->file));
		uint8_t b = *q++;
		if (shift == 63 && b > 1)
			break;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*p = q;
			return v;
		}
	}
	diag_fail(s->diag, KILN_INVALID_MODEL,
	          "not a valid ONNX file: malformed varint in %s at byte offset %zu", what,
	          (size_t)(*p - s->file));
}

static const char *field_name(const ProtobufCMessageDescriptor *desc, uint32_t field)
{
	const ProtobufCFieldDescriptor *fd = protobuf_c_message_descriptor_get_field(desc, field);
	return fd ? fd->name : "unknown field";
}

/* A TensorProto's float_data/double_data is stubbed only when it is one packed
 * record: several records concatenate, and unpacked elements cannot be
 * pointed at. Counts records of `field` without touching payloads. */
static bool single_packed_record(Skel *s, const uint8_t *p, const uint8_t *end, uint32_t want)
{
	int packed = 0;
	while (p < end) {
		uint64_t tag = get_varint(s, &p, end, "field tag");
		uint32_t field = (uint32_t)(tag >> 3);
		int wt = (int)(tag & 7);
		uint64_t n = 0;
		switch (wt) {
		case WT_VARINT: get_varint(s, &p, end, "varint field"); break;
		case WT_FIXED64: n = 8; break;
		case WT_FIXED32: n = 4; break;
		case WT_LEN: n = get_varint(s, &p, end, "length"); break;
		default: return false;  /* reported by the main walk */
		}
		if (n > (uint64_t)(end - p))
			return false;
		p += n;
		if (field == want) {
			if (wt != WT_LEN)
				return false;
			packed++;
		}
	}
	return packed == 1;
}

static void put_stub(Skel *s, uint32_t field, uint64_t off, uint64_t bytes)
{
	uint8_t b[STUB_BYTES];
	b[0] = (uint8_t)field;
	for (int i = 0; i < 8; i++) {
		b[1 + i] = (uint8_t)(off >> (8 * i));
		b[9 + i] = (uint8_t)(bytes >> (8 * i));
	}
	put_varint(s, ((uint64_t)WIRE_STUB_FIELD << 3) | WT_LEN);
	put_varint(s, STUB_BYTES);
	put(s, b, STUB_BYTES);
}

bool wire_stub_decode(const uint8_t *data, size_t len, Stub *out)
{
	/* protobuf-c keeps an unknown field's length prefix in its data. */
	if (len == STUB_BYTES + 1 && data[0] == STUB_BYTES) {
		data++;
		len--;
	}
	if (len != STUB_BYTES)
		return false;
	out->field = data[0];
	out->off = out->bytes = 0;
	for (int i = 0; i < 8; i++) {
		out->off |= (uint64_t)data[1 + i] << (8 * i);
		out->bytes |= (uint64_t)data[9 + i] << (8 * i);
	}
	return true;
}

static void walk(Skel *s, const ProtobufCMessageDescriptor *desc, const uint8_t *p,
                 const uint8_t *end, int depth)
{
	if (depth > s->max_depth)
		diag_fail(s->diag, KILN_LIMIT,
		          "messages nested deeper than %lld levels at byte offset %zu (%s); each level "
		          "of subgraphs takes 3 (raise the limit of %lld subgraph levels with --max-depth)",
		          (long long)s->max_depth, (size_t)(p - s->file), desc->name,
		          (long long)s->graph_depth);
	bool is_tensor = desc == &onnx__tensor_proto__descriptor;
	bool stub_float = false, stub_double = false;
	if (is_tensor) {
		stub_float = single_packed_record(s, p, end, TP_FLOAT_DATA);
		stub_double = single_packed_record(s, p, end, TP_DOUBLE_DATA);
	}
	while (p < end) {
		const uint8_t *start = p;
		uint64_t tag = get_varint(s, &p, end, "field tag");
		uint64_t field64 = tag >> 3;
		int wt = (int)(tag & 7);
		if (field64 == 0 || field64 > WIRE_STUB_FIELD)
			diag_fail(s->diag, KILN_INVALID_MODEL,
			          "not a valid ONNX file: bad field number %llu in %s at byte offset %zu",
			          (unsigned long long)field64, desc->name, (size_t)(start - s->file));
		uint32_t field = (uint32_t)field64;
		uint64_t n;
		switch (wt) {
		case WT_VARINT:
			get_varint(s, &p, end, field_name(desc, field));
			n = 0;
			break;
		case WT_FIXED64: n = 8; break;
		case WT_FIXED32: n = 4; break;
		case WT_LEN: n = get_varint(s, &p, end, field_name(desc, field)); break;
		default:
			diag_fail(s->diag, KILN_INVALID_MODEL,
			          "not a valid ONNX file: unsupported wire type %d for %s.%s at byte offset %zu",
			          wt, desc->name, field_name(desc, field), (size_t)(start - s->file));
		}
		if (n > (uint64_t)(end - p))
			diag_fail(s->diag, KILN_INVALID_MODEL,
			          "not a valid ONNX file: %s.%s at byte offset %zu runs past the end "
			          "of its message (truncated file?)",
			          desc->name, field_name(desc, field), (size_t)(start - s->file));
		const uint8_t *payload = p;
		p += n;

		if (is_tensor && field == WIRE_STUB_FIELD)
			continue;  /* a field of ours in the input: drop it */
		if (is_tensor && wt == WT_LEN && n >= STUB_MIN_BYTES &&
		    (field == TP_RAW_DATA || (field == TP_FLOAT_DATA && stub_float) ||
		     (field == TP_DOUBLE_DATA && stub_double))) {
			put_stub(s, field, (uint64_t)(payload - s->file), n);
			continue;
		}
		const ProtobufCFieldDescriptor *fd =
			protobuf_c_message_descriptor_get_field(desc, field);
		if (wt == WT_LEN && fd && fd->type == PROTOBUF_C_TYPE_MESSAGE) {
			/* Rewrite the submessage; backfill its length as a 5-byte varint. */
			if (n > 0xffffffffu)
				diag_fail(s->diag, KILN_LIMIT, "%s.%s at byte offset %zu is over 4 GiB",
				          desc->name, fd->name, (size_t)(start - s->file));
			put_varint(s, tag);
			size_t at = s->len;
			uint8_t pad[5] = {0x80, 0x80, 0x80, 0x80, 0};
			put(s, pad, 5);
			walk(s, fd->descriptor, payload, payload + n, depth + 1);
			uint64_t sub = s->len - at - 5;
			for (int i = 0; i < 5; i++)
				s->out[at + i] = (uint8_t)(((sub >> (7 * i)) & 0x7f) | (i < 4 ? 0x80 : 0));
			continue;
		}
		put(s, start, (size_t)(p - start));
	}
}

uint8_t *wire_skeleton(const ProtobufCMessageDescriptor *desc, const uint8_t *buf, size_t len,
                       size_t *out_len, int64_t max_graph_depth, Arena *a, Diag *d)
{
	Skel s = {.file = buf, .arena = a, .diag = d, .graph_depth = max_graph_depth,
	          .max_depth = WIRE_MAX_DEPTH + 3 * max_graph_depth};
	walk(&s, desc, buf, buf + len, 0);
	*out_len = s.len;
	return s.out ? s.out : arena_alloc(a, 1);
}
