/*
 * json.c - a minimal streaming JSON writer for `kiln info --json`.
 *
 * Output is deterministic: keys come out in the order the caller writes them,
 * integers exactly, and strings as valid UTF-8 (bytes that are not are
 * replaced by U+FFFD, since model names are untrusted).
 */
#include "report.h"

static void indent(Json *j)
{
	fputc('\n', j->out);
	for (int i = 0; i < j->depth; i++)
		fputs("  ", j->out);
}

/* Before any value: a comma and newline unless first in its container. */
static void before_value(Json *j)
{
	if (j->pending_key) {
		j->pending_key = false;
		return;
	}
	if (j->depth > 0) {
		if (!j->first[j->depth])
			fputc(',', j->out);
		j->first[j->depth] = false;
		indent(j);
	}
}

static void open_container(Json *j, char c)
{
	before_value(j);
	fputc(c, j->out);
	KILN_ASSERT(j->depth + 1 < (int)(sizeof j->first / sizeof j->first[0]));
	j->depth++;
	j->first[j->depth] = true;
}

static void close_container(Json *j, char c)
{
	bool empty = j->first[j->depth];
	j->depth--;
	if (!empty)
		indent(j);
	fputc(c, j->out);
	if (j->depth == 0)
		fputc('\n', j->out);
}

void json_begin_object(Json *j) { open_container(j, '{'); }
void json_end_object(Json *j) { close_container(j, '}'); }
void json_begin_array(Json *j) { open_container(j, '['); }
void json_end_array(Json *j) { close_container(j, ']'); }

void json_key(Json *j, const char *key)
{
	before_value(j);
	json_write_escaped(j->out, key);
	fputs(": ", j->out);
	j->pending_key = true;
}

/* Length of the valid UTF-8 sequence at s, or 0 if it is not valid. */
static int utf8_len(const unsigned char *s)
{
	if (s[0] < 0x80)
		return 1;
	int n = s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 && s[0] < 0xe0 ? 2 : 0;
	if (n == 3 && s[0] >= 0xf0)
		n = 0;
	for (int i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	/* Overlong 3/4-byte forms, surrogates, and values past U+10FFFF. */
	if ((n == 3 && s[0] == 0xe0 && s[1] < 0xa0) || (n == 3 && s[0] == 0xed && s[1] >= 0xa0) ||
	    (n == 4 && s[0] == 0xf0 && s[1] < 0x90) || (n == 4 && s[0] == 0xf4 && s[1] >= 0x90))
		return 0;
	return n;
}

void json_write_escaped(FILE *out, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	fputc('"', out);
	while (*s) {
		int n = utf8_len(s);
		if (n == 0) {
			fputs("\\ufffd", out);
			s++;
		} else if (*s == '"' || *s == '\\') {
			fputc('\\', out);
			fputc(*s++, out);
		} else if (*s < 0x20 || *s == 0x7f) {
			fprintf(out, "\\u%04x", *s++);
		} else {
			fwrite(s, 1, (size_t)n, out);
			s += n;
		}
	}
	fputc('"', out);
}

void json_string(Json *j, const char *s)
{
	before_value(j);
	json_write_escaped(j->out, s);
}

void json_int(Json *j, int64_t v)
{
	before_value(j);
	fprintf(j->out, "%lld", (long long)v);
}

void json_uint(Json *j, uint64_t v)
{
	before_value(j);
	fprintf(j->out, "%llu", (unsigned long long)v);
}

void json_bool(Json *j, bool v)
{
	before_value(j);
	fputs(v ? "true" : "false", j->out);
}

void json_null(Json *j)
{
	before_value(j);
	fputs("null", j->out);
}

void json_field_int(Json *j, const char *key, int64_t v)
{
	json_key(j, key);
	json_int(j, v);
}

void json_field_uint(Json *j, const char *key, uint64_t v)
{
	json_key(j, key);
	json_uint(j, v);
}

void json_field_string(Json *j, const char *key, const char *s)
{
	json_key(j, key);
	json_string(j, s);
}

void json_field_bool(Json *j, const char *key, bool v)
{
	json_key(j, key);
	json_bool(j, v);
}
