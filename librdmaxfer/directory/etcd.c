// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * etcd.c - requests to etcd's v3 API through its HTTP/JSON gateway
 * (POST /v3/kv/range etc., the path etcd 3.4 and later serve), with
 * libcurl: the endpoint list, TLS and client certificates, and etcd's
 * token authentication.
 *
 * Each thread of the directory has its own connection (a curl easy handle
 * keeps its TCP connection alive between requests); what they share, the
 * endpoint that answered last and the auth token, is under e->lock.  A
 * request that cannot reach an endpoint tries the next one; an answer is
 * read into a buffer bounded by DIR_RESPONSE_MAX and parsed by json-c
 * with a bounded depth.  etcd's errors come back as {"error", "code"}
 * (gRPC codes), mapped to -errno here, and an expired token is renewed
 * once per request.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#include "directory.h"

/* gRPC status codes etcd's gateway puts in "code" */
enum {
	GRPC_INVALID_ARGUMENT = 3,
	GRPC_DEADLINE_EXCEEDED = 4,
	GRPC_NOT_FOUND = 5,
	GRPC_PERMISSION_DENIED = 7,
	GRPC_RESOURCE_EXHAUSTED = 8,
	GRPC_FAILED_PRECONDITION = 9,
	GRPC_UNAVAILABLE = 14,
	GRPC_UNAUTHENTICATED = 16,
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_ret;

static void curl_init(void)
{
	curl_init_ret = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static char *dup_opt(const char *s, int *err)
{
	char *d;

	if (!s)
		return NULL;
	d = strdup(s);
	if (!d)
		*err = -ENOMEM;
	return d;
}

/* http://HOST:PORT or https://...; no path, no user, no white space */
static bool url_valid(const char *u, size_t len)
{
	size_t i, skip;

	if (len > 7 && !strncmp(u, "http://", 7))
		skip = 7;
	else if (len > 8 && !strncmp(u, "https://", 8))
		skip = 8;
	else
		return false;
	if (len >= 200)
		return false;
	for (i = skip; i < len; i++)
		if (u[i] <= ' ' || u[i] == '/' || u[i] == '@' || u[i] == '?' ||
		    u[i] == '#' || (unsigned char)u[i] >= 0x7f)
			return false;
	return true;
}

int dir_etcd_init(struct dir_etcd *e, const struct rdmaxfer_directory_attr *a,
		  const char *endpoints)
{
	const char *p = endpoints, *comma;
	int err = 0;

	memset(e, 0, sizeof(*e));
	pthread_once(&curl_once, curl_init);
	if (curl_init_ret != CURLE_OK)
		return -ENOMEM;
	if (!endpoints || !*endpoints)
		return -EINVAL;
	while (*p) {
		size_t len;

		comma = strchr(p, ',');
		len = comma ? (size_t)(comma - p) : strlen(p);
		if (len && p[len - 1] == '/')	/* "http://h:2379/" */
			len--;
		if (!url_valid(p, len) || e->nurls == RDMAXFER_DIR_MAX_ENDPOINTS) {
			dir_etcd_fini(e);
			return -EINVAL;
		}
		e->urls[e->nurls] = strndup(p, len);
		if (!e->urls[e->nurls++]) {
			dir_etcd_fini(e);
			return -ENOMEM;
		}
		p = comma ? comma + 1 : p + strlen(p);
	}
	if (!e->nurls)
		return -EINVAL;
	e->timeout_ms = a->timeout_ms;
	e->ca_file = dup_opt(a->ca_file, &err);
	e->cert_file = dup_opt(a->cert_file, &err);
	e->key_file = dup_opt(a->key_file, &err);
	e->user = dup_opt(a->user, &err);
	e->password = dup_opt(a->password ? a->password : (a->user ? "" : NULL),
			      &err);
	pthread_mutex_init(&e->lock, NULL);
	if (err)
		dir_etcd_fini(e);
	return err;
}

void dir_etcd_fini(struct dir_etcd *e)
{
	unsigned int i;

	for (i = 0; i < e->nurls; i++)
		free(e->urls[i]);
	free(e->ca_file);
	free(e->cert_file);
	free(e->key_file);
	free(e->user);
	if (e->password)	/* not left in freed memory */
		memset(e->password, 0, strlen(e->password));
	free(e->password);
	free(e->token);
	memset(e, 0, sizeof(*e));
}

void dir_etcd_endpoint(struct dir_etcd *e, char *buf, size_t cap)
{
	pthread_mutex_lock(&e->lock);
	snprintf(buf, cap, "%s", e->nurls ? e->urls[e->cur] : "");
	pthread_mutex_unlock(&e->lock);
}

void dir_etcd_next_endpoint(struct dir_etcd *e)
{
	pthread_mutex_lock(&e->lock);
	e->cur = (e->cur + 1) % e->nurls;
	pthread_mutex_unlock(&e->lock);
}

int dir_conn_init(struct dir_conn *c, struct dir_etcd *e)
{
	memset(c, 0, sizeof(*c));
	c->etcd = e;
	c->curl = curl_easy_init();
	return c->curl ? 0 : -ENOMEM;
}

void dir_conn_fini(struct dir_conn *c)
{
	if (c->curl)
		curl_easy_cleanup(c->curl);
	free(c->buf);
	memset(c, 0, sizeof(*c));
}

static size_t on_data(char *p, size_t size, size_t nmemb, void *user)
{
	struct dir_conn *c = user;
	size_t n = size * nmemb;

	if (n > DIR_RESPONSE_MAX - c->len)
		return 0;		/* curl fails the transfer: -E2BIG */
	if (c->len + n + 1 > c->cap) {
		size_t cap = c->cap ? c->cap : 4096;
		char *b;

		while (cap < c->len + n + 1)
			cap *= 2;
		b = realloc(c->buf, cap);
		if (!b)
			return 0;
		c->buf = b;
		c->cap = cap;
	}
	memcpy(c->buf + c->len, p, n);
	c->len += n;
	c->buf[c->len] = 0;
	return n;
}

static int curl_errno(CURLcode rc, bool overflow)
{
	switch (rc) {
	case CURLE_OK:
		return 0;
	case CURLE_WRITE_ERROR:
		return overflow ? -E2BIG : -ENOMEM;
	case CURLE_COULDNT_CONNECT:
		return -ECONNREFUSED;
	case CURLE_COULDNT_RESOLVE_HOST:
		return -EHOSTUNREACH;
	case CURLE_OPERATION_TIMEDOUT:
		return -ETIMEDOUT;
	case CURLE_OUT_OF_MEMORY:
		return -ENOMEM;
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CIPHER:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_ISSUER_ERROR:
	case CURLE_SSL_CRL_BADFILE:
	case CURLE_USE_SSL_FAILED:
	case CURLE_SSL_ENGINE_INITFAILED:
		return -ECONNABORTED;
	case CURLE_GOT_NOTHING:
	case CURLE_RECV_ERROR:
	case CURLE_SEND_ERROR:
	case CURLE_PARTIAL_FILE:
		return -ECONNRESET;
	default:
		return -EIO;
	}
}

/* Errors worth another endpoint (or, in a loop, another try later). */
bool dir_err_transport(int err)
{
	return err == -ECONNREFUSED || err == -EHOSTUNREACH ||
	       err == -ETIMEDOUT || err == -ECONNRESET || err == -EAGAIN;
}

static int grpc_errno(int64_t code)
{
	switch (code) {
	case GRPC_INVALID_ARGUMENT:
		return -EINVAL;
	case GRPC_DEADLINE_EXCEEDED:
		return -ETIMEDOUT;
	case GRPC_NOT_FOUND:
		return -ENOENT;
	case GRPC_PERMISSION_DENIED:
	case GRPC_UNAUTHENTICATED:
		return -EACCES;
	case GRPC_RESOURCE_EXHAUSTED:
		return -ENOSPC;
	case GRPC_FAILED_PRECONDITION:
		return -EPERM;
	case GRPC_UNAVAILABLE:
		return -EAGAIN;
	default:
		return -EIO;
	}
}

/* The options every request of c has, for endpoint url. */
static void set_common(struct dir_conn *c, const char *url,
		       struct curl_slist *hdrs)
{
	struct dir_etcd *e = c->etcd;
	CURL *h = c->curl;

	curl_easy_reset(h);
	curl_easy_setopt(h, CURLOPT_URL, url);
	/* several threads, no signals: the library is in someone's process */
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)e->timeout_ms);
	curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, c);
	if (e->ca_file)
		curl_easy_setopt(h, CURLOPT_CAINFO, e->ca_file);
	if (e->cert_file)
		curl_easy_setopt(h, CURLOPT_SSLCERT, e->cert_file);
	if (e->key_file)
		curl_easy_setopt(h, CURLOPT_SSLKEY, e->key_file);
}

static struct curl_slist *headers(struct dir_etcd *e, bool auth)
{
	struct curl_slist *l, *n;
	char *tok = NULL;

	l = curl_slist_append(NULL, "Content-Type: application/json");
	if (!l)
		return NULL;
	pthread_mutex_lock(&e->lock);
	if (auth && e->token) {
		size_t len = strlen(e->token) + sizeof("Authorization: ");

		tok = malloc(len);
		if (tok)
			snprintf(tok, len, "Authorization: %s", e->token);
	}
	pthread_mutex_unlock(&e->lock);
	if (tok) {
		n = curl_slist_append(l, tok);
		free(tok);
		if (!n) {
			curl_slist_free_all(l);
			return NULL;
		}
		l = n;
	}
	return l;
}

/* One POST to one endpoint; the answer in c->buf, its HTTP status. */
static int post_once(struct dir_conn *c, const char *url, const char *path,
		     const char *body, bool auth, long *status)
{
	struct curl_slist *hdrs = headers(c->etcd, auth);
	char full[512];
	CURLcode rc;
	int ret;

	if (!hdrs)
		return -ENOMEM;
	snprintf(full, sizeof(full), "%s%s", url, path);
	c->len = 0;
	set_common(c, full, hdrs);
	curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c->curl, CURLOPT_TIMEOUT_MS, (long)c->etcd->timeout_ms);
	rc = curl_easy_perform(c->curl);
	ret = curl_errno(rc, c->len + 1 >= DIR_RESPONSE_MAX);
	*status = 0;
	if (!ret)
		curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, status);
	curl_slist_free_all(hdrs);
	return ret;
}

/* Try the endpoints in turn, from the one that answered last. */
static int post(struct dir_conn *c, const char *path, const char *body,
		bool auth, long *status)
{
	struct dir_etcd *e = c->etcd;
	unsigned int i, start;
	int ret = -EIO;

	pthread_mutex_lock(&e->lock);
	start = e->cur;
	pthread_mutex_unlock(&e->lock);
	for (i = 0; i < e->nurls; i++) {
		unsigned int k = (start + i) % e->nurls;

		ret = post_once(c, e->urls[k], path, body, auth, status);
		if (!dir_err_transport(ret)) {
			pthread_mutex_lock(&e->lock);
			e->cur = k;
			pthread_mutex_unlock(&e->lock);
			return ret;
		}
	}
	return ret;
}

/* The answer of a request: JSON, or etcd's {"error", "code"} as -errno. */
static int answer(struct dir_conn *c, long status, json_object **resp)
{
	json_object *obj, *v = NULL;
	int64_t code;
	int ret;

	ret = dir_json_parse(c->buf ? c->buf : "", c->len, &obj);
	if (ret)
		return status >= 400 ? -EIO : ret;
	if (json_object_object_get_ex(obj, "error", &v) || status >= 400) {
		const char *msg = v ? json_object_get_string(v) : NULL;

		ret = dir_json_i64(obj, "code", &code) ? -EIO : grpc_errno(code);
		/* auth is on and we sent no token: an InvalidArgument to etcd,
		 * a refusal to us */
		if (status == 401 || status == 403 ||
		    (msg && strstr(msg, "user name is empty")))
			ret = -EACCES;
		json_object_put(obj);
		return ret;
	}
	if (resp)
		*resp = obj;
	else
		json_object_put(obj);
	return 0;
}

int dir_etcd_auth(struct dir_conn *c)
{
	struct dir_etcd *e = c->etcd;
	json_object *req, *resp = NULL, *tok;
	long status;
	char *t;
	int ret;

	if (!e->user)
		return 0;
	req = json_object_new_object();
	if (!req)
		return -ENOMEM;
	json_object_object_add(req, "name", json_object_new_string(e->user));
	json_object_object_add(req, "password",
			       json_object_new_string(e->password));
	ret = post(c, "/v3/auth/authenticate",
		   json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN),
		   false, &status);
	json_object_put(req);
	if (!ret)
		ret = answer(c, status, &resp);
	if (ret)
		return ret == -EPERM || ret == -EINVAL ? -EACCES : ret;
	if (!json_object_object_get_ex(resp, "token", &tok) ||
	    !json_object_is_type(tok, json_type_string) ||
	    json_object_get_string_len(tok) > 4096 ||
	    strpbrk(json_object_get_string(tok), "\r\n")) {
		json_object_put(resp);
		return -EBADMSG;
	}
	t = strdup(json_object_get_string(tok));
	json_object_put(resp);
	if (!t)
		return -ENOMEM;
	pthread_mutex_lock(&e->lock);
	free(e->token);
	e->token = t;
	pthread_mutex_unlock(&e->lock);
	return 0;
}

int dir_etcd_call(struct dir_conn *c, const char *path, json_object *req,
		  json_object **resp)
{
	const char *body;
	long status;
	int ret, tries;

	if (!req)
		return -ENOMEM;
	body = json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN);
	for (tries = 0; tries < 2; tries++) {
		ret = post(c, path, body, true, &status);
		if (!ret)
			ret = answer(c, status, resp);
		/* a token etcd forgot (it expires, or etcd restarted) */
		if (ret != -EACCES || !c->etcd->user || tries)
			break;
		ret = dir_etcd_auth(c);
		if (ret)
			break;
	}
	json_object_put(req);
	return ret;
}

/* The watch stream: a POST whose answer never ends, read by write_fn. */
int dir_etcd_stream_setup(struct dir_conn *c, const char *path,
			  const char *body, void *write_fn, void *user)
{
	struct curl_slist *hdrs = headers(c->etcd, true);
	char url[512];

	if (!hdrs)
		return -ENOMEM;
	pthread_mutex_lock(&c->etcd->lock);
	snprintf(url, sizeof(url), "%s%s", c->etcd->urls[c->etcd->cur], path);
	pthread_mutex_unlock(&c->etcd->lock);
	set_common(c, url, hdrs);
	curl_easy_setopt(c->curl, CURLOPT_COPYPOSTFIELDS, body);
	curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, write_fn);
	curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, user);
	/* the list stays alive with the transfer: freed by the caller via
	 * CURLOPT_PRIVATE */
	curl_easy_setopt(c->curl, CURLOPT_PRIVATE, hdrs);
	return 0;
}
