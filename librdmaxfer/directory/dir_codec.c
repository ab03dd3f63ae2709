// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * dir_codec.c - what the directory writes to etcd and reads back from it,
 * below the level of meaning: names, keys, base64, and the JSON of etcd's
 * gateway answers (json-c parses it; this file bounds and checks it).
 *
 * etcd's gateway carries keys and values as base64 and 64-bit numbers as
 * decimal strings.  Everything here comes from the network, so every
 * length is bounded before anything is allocated and a value that is not
 * exactly what it should be is refused (-EBADMSG) rather than guessed at.
 * No curl, no threads: the host tests and the fuzzer build it alone.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "directory.h"

static bool name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

static bool word_valid(const char *s, size_t len, size_t max)
{
	size_t i;

	if (!len || len >= max)
		return false;
	for (i = 0; i < len; i++)
		if (!name_char(s[i]))
			return false;
	/* "." and ".." would read as path steps in a key */
	return !(s[0] == '.' && (len == 1 || (len == 2 && s[1] == '.')));
}

bool dir_name_valid(const char *name)
{
	return name && word_valid(name, strnlen(name, RDMAXFER_NAME_MAX),
				  RDMAXFER_NAME_MAX);
}

bool dir_ns_valid(const char *ns)
{
	size_t len, i, start = 0;

	if (!ns)
		return false;
	len = strnlen(ns, RDMAXFER_DIR_NS_MAX);
	if (!len || len >= RDMAXFER_DIR_NS_MAX)
		return false;
	/* '/'-separated words: no empty step, none at either end */
	for (i = 0; i <= len; i++) {
		if (i < len && ns[i] != '/')
			continue;
		if (!word_valid(ns + start, i - start, RDMAXFER_DIR_NS_MAX))
			return false;
		start = i + 1;
	}
	return true;
}

/* [p, p + len) is a word of [A-Za-z0-9._-] that fits in max: copy it */
static bool take_word(const uint8_t *p, size_t len, char *out, size_t max)
{
	if (!word_valid((const char *)p, len, max))
		return false;
	memcpy(out, p, len);
	out[len] = 0;
	return true;
}

void dir_key_classify(const char *ns, const uint8_t *key, size_t len,
		      struct dir_key *out)
{
	size_t nl = strlen(ns);
	const uint8_t *p, *end = key + len, *slash;

	memset(out, 0, sizeof(*out));
	out->kind = DIR_KEY_OTHER;
	if (len > DIR_KEY_MAX || len <= nl + 1 || memcmp(key, ns, nl) ||
	    key[nl] != '/')
		return;
	p = key + nl + 1;
	if ((size_t)(end - p) >= 7 && !memcmp(p, "agents/", 7)) {
		p += 7;
		out->kind = take_word(p, end - p, out->name, RDMAXFER_NAME_MAX) ?
			    DIR_KEY_AGENT : DIR_KEY_BAD;
		return;
	}
	if ((size_t)(end - p) >= 8 && !memcmp(p, "exports/", 8)) {
		p += 8;
		slash = memchr(p, '/', end - p);
		out->kind = DIR_KEY_BAD;
		if (slash &&
		    take_word(p, slash - p, out->name, RDMAXFER_NAME_MAX) &&
		    take_word(slash + 1, end - slash - 1, out->id, DIR_ID_MAX))
			out->kind = DIR_KEY_EXPORT;
		return;
	}
	/* agents or exports without a name under them are not ours either */
	if ((end - p == 6 && !memcmp(p, "agents", 6)) ||
	    (end - p == 7 && !memcmp(p, "exports", 7)))
		out->kind = DIR_KEY_BAD;
}

static int fmt(char *buf, size_t cap, const char *f, ...)
	__attribute__((format(printf, 3, 4)));

static int fmt(char *buf, size_t cap, const char *f, ...)
{
	va_list ap;
	int n;

	va_start(ap, f);
	n = vsnprintf(buf, cap, f, ap);
	va_end(ap);
	return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

int dir_key_agent(const char *ns, const char *name, char *buf, size_t cap)
{
	return fmt(buf, cap, "%s/agents/%s", ns, name);
}

int dir_key_exports(const char *ns, const char *name, char *buf, size_t cap)
{
	return fmt(buf, cap, "%s/exports/%s/", ns, name);
}

/* One key per descriptor, named by it, so a withdrawal needs no look-up. */
int dir_key_export(const char *ns, const char *name,
		   const struct rdmaxfer_desc *d, char *buf, size_t cap)
{
	return fmt(buf, cap, "%s/exports/%s/%08" PRIx32 "-%016" PRIx64
		   "-%016" PRIx64, ns, name, d->rkey, d->addr, d->len);
}

/* ------------------------------------------------------------ base64 */

static const char b64[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t dir_b64_len(size_t n)
{
	return (n + 2) / 3 * 4;
}

void dir_b64_encode(const uint8_t *in, size_t n, char *out)
{
	size_t i;

	for (i = 0; i + 2 < n; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16 | in[i + 1] << 8 | in[i + 2];

		*out++ = b64[v >> 18];
		*out++ = b64[(v >> 12) & 63];
		*out++ = b64[(v >> 6) & 63];
		*out++ = b64[v & 63];
	}
	if (i < n) {
		uint32_t v = (uint32_t)in[i] << 16;

		if (i + 1 < n)
			v |= in[i + 1] << 8;
		*out++ = b64[v >> 18];
		*out++ = b64[(v >> 12) & 63];
		*out++ = i + 1 < n ? b64[(v >> 6) & 63] : '=';
		*out++ = '=';
	}
	*out = 0;
}

static int b64_val(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

int dir_b64_decode(const char *in, size_t n, uint8_t *out, size_t cap,
		   size_t *lenp)
{
	size_t i, o = 0, pad = 0;

	if (n % 4)
		return -EBADMSG;
	if (n && in[n - 1] == '=')
		pad = n >= 2 && in[n - 2] == '=' ? 2 : 1;
	if (n / 4 * 3 - pad > cap)
		return -EBADMSG;
	for (i = 0; i < n; i += 4) {
		int v[4], k;
		uint32_t w;

		for (k = 0; k < 4; k++) {
			/* '=' only as the padding of the last group */
			if (in[i + k] == '=' && i + 4 == n && k >= 4 - (int)pad) {
				v[k] = 0;
				continue;
			}
			v[k] = b64_val(in[i + k]);
			if (v[k] < 0)
				return -EBADMSG;
		}
		w = (uint32_t)v[0] << 18 | v[1] << 12 | v[2] << 6 | v[3];
		/* the bits a padded group leaves over must be zero: one
		 * encoding per value */
		if (i + 4 == n && ((pad == 1 && (w & 0xff)) ||
				   (pad == 2 && (w & 0xffff))))
			return -EBADMSG;
		out[o++] = w >> 16;
		if (i + 4 < n || pad < 2)
			out[o++] = w >> 8;
		if (i + 4 < n || pad < 1)
			out[o++] = w;
	}
	*lenp = o;
	return 0;
}

json_object *dir_json_b64(const void *p, size_t n)
{
	char *s = malloc(dir_b64_len(n) + 1);
	json_object *o;

	if (!s)
		return NULL;
	dir_b64_encode(p, n, s);
	o = json_object_new_string(s);
	free(s);
	return o;
}

/* -------------------------------------------------------------- JSON */

int dir_json_i64(json_object *obj, const char *key, int64_t *out)
{
	json_object *v;
	const char *s;
	char *end;
	long long x;

	if (!obj || !json_object_is_type(obj, json_type_object) ||
	    !json_object_object_get_ex(obj, key, &v))
		return -ENOENT;
	if (json_object_is_type(v, json_type_int)) {
		*out = json_object_get_int64(v);
		return 0;
	}
	if (!json_object_is_type(v, json_type_string))
		return -EBADMSG;
	s = json_object_get_string(v);
	if (!*s || strlen(s) > 20 || (*s != '-' && (*s < '0' || *s > '9')))
		return -EBADMSG;
	errno = 0;
	x = strtoll(s, &end, 10);
	if (errno || *end)
		return -EBADMSG;
	*out = x;
	return 0;
}

int dir_json_parse(const char *text, size_t len, json_object **objp)
{
	struct json_tokener *tok;
	json_object *obj;

	if (len > DIR_RESPONSE_MAX || len > INT32_MAX)
		return -EBADMSG;
	tok = json_tokener_new_ex(DIR_JSON_DEPTH);
	if (!tok)
		return -ENOMEM;
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	obj = json_tokener_parse_ex(tok, text, (int)len);
	/* one whole value and nothing after it but white space */
	if (obj && json_tokener_get_error(tok) == json_tokener_success) {
		size_t off = json_tokener_get_parse_end(tok);

		while (off < len && (text[off] == ' ' || text[off] == '\n' ||
				     text[off] == '\r' || text[off] == '\t'))
			off++;
		if (off != len) {
			json_object_put(obj);
			obj = NULL;
		}
	} else if (obj) {
		json_object_put(obj);
		obj = NULL;
	}
	json_tokener_free(tok);
	if (!obj)
		return -EBADMSG;
	*objp = obj;
	return 0;
}

/* A base64 member decoded into buf at *off (bounded by max bytes). */
static int b64_member(json_object *kv, const char *key, bool required,
		      uint8_t *buf, size_t *off, size_t max, uint8_t **p,
		      size_t *lenp)
{
	json_object *v;
	const char *s;
	size_t n;
	int ret;

	*p = buf + *off;
	*lenp = 0;
	if (!json_object_object_get_ex(kv, key, &v))
		return required ? -EBADMSG : 0;	/* etcd omits empty values */
	if (!json_object_is_type(v, json_type_string))
		return -EBADMSG;
	s = json_object_get_string(v);
	n = (size_t)json_object_get_string_len(v);
	if (n / 4 * 3 > max)
		return -EBADMSG;
	ret = dir_b64_decode(s, n, *p, max, lenp);
	if (ret)
		return ret;
	*off += *lenp;
	return 0;
}

int dir_kv_decode(json_object *kv, struct dir_kv *out)
{
	json_object *k, *v;
	size_t kn = 0, vn = 0, off = 0;
	int64_t x;
	int ret;

	memset(out, 0, sizeof(*out));
	if (!json_object_is_type(kv, json_type_object) ||
	    !json_object_object_get_ex(kv, "key", &k) ||
	    !json_object_is_type(k, json_type_string))
		return -EBADMSG;
	kn = (size_t)json_object_get_string_len(k);
	if (json_object_object_get_ex(kv, "value", &v)) {
		if (!json_object_is_type(v, json_type_string))
			return -EBADMSG;
		vn = (size_t)json_object_get_string_len(v);
	}
	/* bounded before the buffer is sized from them */
	if (kn / 4 * 3 > DIR_KEY_MAX || vn / 4 * 3 > DIR_VALUE_MAX)
		return -EBADMSG;
	out->buf = malloc(kn / 4 * 3 + vn / 4 * 3 + 1);
	if (!out->buf)
		return -ENOMEM;
	ret = b64_member(kv, "key", true, out->buf, &off, DIR_KEY_MAX,
			 &out->key, &out->key_len);
	if (!ret)
		ret = b64_member(kv, "value", false, out->buf, &off,
				 DIR_VALUE_MAX, &out->value, &out->value_len);
	if (!ret) {
		ret = dir_json_i64(kv, "mod_revision", &x);
		if (!ret && x > 0)
			out->mod_rev = x;
		else if (ret != -ENOENT)
			ret = ret ? ret : -EBADMSG;
		else
			ret = 0;
	}
	if (!ret && !dir_json_i64(kv, "lease", &x))
		out->lease = x;
	if (ret) {
		dir_kv_free(out);
		return ret;
	}
	return 0;
}

void dir_kv_free(struct dir_kv *kv)
{
	free(kv->buf);
	memset(kv, 0, sizeof(*kv));
}
