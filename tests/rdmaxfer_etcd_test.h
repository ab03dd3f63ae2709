/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * rdmaxfer_etcd_test.h - a real etcd for the directory's tests, started
 * by the test itself: on loopback (or a given address), free ports, its
 * own data dir under a temporary folder, stopped (and the folder removed)
 * at the end.  Shared by the host test (test_rdmaxfer_directory) and the
 * guest ones (test_rdmaxfer_dirconn, test_rdmaxfer_dir2host).
 *
 * te_find() says why there is none (etcd-server not installed): the
 * caller skips with that.  te_start() waits, bounded, until etcd answers
 * /health; te_restart() kills it and starts it again on the same ports,
 * keeping or wiping its data.  te_put() writes a key the way no
 * directory would (garbage, another agent's blob over a name), te_post()
 * any request (a lease revoked under a publisher).
 * Includers build librdmaxfer/directory/dir_codec.c and link libcurl and
 * json-c.
 */
#ifndef RDMAXFER_ETCD_TEST_H
#define RDMAXFER_ETCD_TEST_H

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <curl/curl.h>

#include "directory/directory.h"	/* dir_json_b64(): dir_codec.c */

struct test_etcd {
	char bin[PATH_MAX];
	char dir[PATH_MAX];		/* the temporary folder */
	char host[64];			/* what it listens on */
	char url[128];			/* http(s)://host:port */
	uint16_t port, peer_port;
	pid_t pid;
	/* TLS: etcd's own certificate and the CA clients must trust, and
	 * whether clients must show a certificate of that CA */
	const char *cert, *key, *ca;
	int client_cert_auth;
};

/* 0 and e->bin, or -ENOENT with why in msg. */
static inline int te_find(struct test_etcd *e, char *msg, size_t cap)
{
	const char *env = getenv("RDMAXFER_TEST_ETCD");
	const char *cands[] = { env, "/usr/bin/etcd", "/usr/local/bin/etcd",
				"/usr/sbin/etcd" };
	size_t i;

	memset(e, 0, sizeof(*e));
	for (i = 0; i < sizeof(cands) / sizeof(cands[0]); i++) {
		if (cands[i] && *cands[i] && !access(cands[i], X_OK)) {
			snprintf(e->bin, sizeof(e->bin), "%s", cands[i]);
			return 0;
		}
	}
	snprintf(msg, cap, "no etcd binary (apt-get install etcd-server, or set RDMAXFER_TEST_ETCD)");
	return -ENOENT;
}

static inline uint16_t te_free_port(const char *host)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port = 0;

	inet_pton(AF_INET, host, &sa.sin_addr);
	if (fd >= 0 && !bind(fd, (struct sockaddr *)&sa, sizeof(sa)) &&
	    !getsockname(fd, (struct sockaddr *)&sa, &len))
		port = ntohs(sa.sin_port);
	if (fd >= 0)
		close(fd);
	return (uint16_t)port;
}

static inline int64_t te_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static size_t te_sink(char *p, size_t s, size_t n, void *u)
{
	(void)p;
	(void)u;
	return s * n;
}

/* etcd answers /health (its CA trusted when TLS) */
static inline int te_healthy(const struct test_etcd *e)
{
	char url[200];
	long code = 0;
	CURL *h = curl_easy_init();
	CURLcode rc;

	if (!h)
		return 0;
	snprintf(url, sizeof(url), "%s/health", e->url);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 1000L);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, te_sink);
	if (e->ca)
		curl_easy_setopt(h, CURLOPT_CAINFO, e->ca);
	if (e->client_cert_auth) {
		curl_easy_setopt(h, CURLOPT_SSLCERT, e->cert);
		curl_easy_setopt(h, CURLOPT_SSLKEY, e->key);
	}
	rc = curl_easy_perform(h);
	if (rc == CURLE_OK)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_cleanup(h);
	return code == 200;
}

/* Start it (again, same ports) and wait up to timeout_ms for /health. */
static inline int te_launch(struct test_etcd *e, int timeout_ms)
{
	char data[PATH_MAX + 8], log[PATH_MAX + 16], curls[160], purls[96];
	char cluster[128];
	int64_t end;
	pid_t pid;

	snprintf(data, sizeof(data), "%s/data", e->dir);
	snprintf(log, sizeof(log), "%s/etcd.log", e->dir);
	snprintf(curls, sizeof(curls), "%s", e->url);
	snprintf(purls, sizeof(purls), "http://127.0.0.1:%u", e->peer_port);
	snprintf(cluster, sizeof(cluster), "t=%s", purls);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (!pid) {
		const char *argv[32];
		int i = 0, fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		argv[i++] = e->bin;
		argv[i++] = "--name=t";
		argv[i++] = "--data-dir";
		argv[i++] = data;
		argv[i++] = "--listen-client-urls";
		argv[i++] = curls;
		argv[i++] = "--advertise-client-urls";
		argv[i++] = curls;
		argv[i++] = "--listen-peer-urls";
		argv[i++] = purls;
		argv[i++] = "--initial-advertise-peer-urls";
		argv[i++] = purls;
		argv[i++] = "--initial-cluster";
		argv[i++] = cluster;
		argv[i++] = "--log-level=warn";
		argv[i++] = "--logger=zap";
		if (e->cert) {
			argv[i++] = "--cert-file";
			argv[i++] = e->cert;
			argv[i++] = "--key-file";
			argv[i++] = e->key;
		}
		if (e->client_cert_auth) {
			argv[i++] = "--client-cert-auth";
			argv[i++] = "--trusted-ca-file";
			argv[i++] = e->ca;
		}
		argv[i] = NULL;
		/* dies with the test, whatever ends it */
		setpgid(0, 0);
		execv(e->bin, (char *const *)argv);
		_exit(127);
	}
	e->pid = pid;
	end = te_now_ms() + timeout_ms;
	while (te_now_ms() < end) {
		int st;

		if (waitpid(pid, &st, WNOHANG) == pid) {
			e->pid = 0;
			return -ECHILD;	/* it exited: see etcd.log */
		}
		if (te_healthy(e))
			return 0;
		usleep(50000);
	}
	return -ETIMEDOUT;
}

/* Stop it: SIGKILL when kill, else SIGTERM and then SIGKILL after 5 s. */
static inline void te_halt(struct test_etcd *e, int kill_now)
{
	int64_t end = te_now_ms() + 5000;
	int st;

	if (e->pid <= 0)
		return;
	kill(e->pid, kill_now ? SIGKILL : SIGTERM);
	while (waitpid(e->pid, &st, WNOHANG) != e->pid) {
		if (te_now_ms() > end) {
			kill(e->pid, SIGKILL);
			waitpid(e->pid, &st, 0);
			break;
		}
		usleep(20000);
	}
	e->pid = 0;
}

/* A new etcd on host (NULL: 127.0.0.1), https when e->cert is set. */
static inline int te_start(struct test_etcd *e, const char *host,
			   int timeout_ms)
{
	char tmpl[] = "/tmp/rdmaxfer-etcd.XXXXXX";

	snprintf(e->host, sizeof(e->host), "%s", host ? host : "127.0.0.1");
	if (!mkdtemp(tmpl))
		return -errno;
	snprintf(e->dir, sizeof(e->dir), "%s", tmpl);
	e->port = te_free_port(e->host);
	e->peer_port = te_free_port("127.0.0.1");
	if (!e->port || !e->peer_port)
		return -EADDRINUSE;
	snprintf(e->url, sizeof(e->url), "%s://%s:%u",
		 e->cert ? "https" : "http", e->host, e->port);
	return te_launch(e, timeout_ms);
}

static inline int te_restart(struct test_etcd *e, int wipe, int timeout_ms)
{
	char cmd[PATH_MAX + 32];

	te_halt(e, 1);
	if (wipe) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s/data'", e->dir);
		if (system(cmd))
			return -EIO;
	}
	return te_launch(e, timeout_ms);
}

/* Stop it and remove its folder (its log first to stderr on failure). */
static inline void te_stop(struct test_etcd *e, int show_log)
{
	char cmd[PATH_MAX + 48];

	te_halt(e, 0);
	if (!e->dir[0])
		return;
	if (show_log) {
		snprintf(cmd, sizeof(cmd), "tail -n 20 '%s/etcd.log' >&2", e->dir);
		if (system(cmd)) {
			/* nothing to show */
		}
	}
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", e->dir);
	if (system(cmd)) {
		/* a leftover folder in /tmp, no more */
	}
	e->dir[0] = 0;
}

/* A raw POST of the JSON r (taken) to path: 0 (HTTP 200) or -EIO. */
static inline int te_post(const struct test_etcd *e, const char *path,
			  json_object *r)
{
	CURL *h = curl_easy_init();
	char url[200];
	long code = 0;
	CURLcode rc;

	snprintf(url, sizeof(url), "%s%s", e->url, path);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_POSTFIELDS,
			 json_object_to_json_string_ext(r, JSON_C_TO_STRING_PLAIN));
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, te_sink);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 5000L);
	rc = curl_easy_perform(h);
	if (rc == CURLE_OK)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_cleanup(h);
	json_object_put(r);
	return code == 200 ? 0 : -EIO;
}

/* A raw PUT (no lease) of [val, val + len) under key: 0 or -EIO. */
static inline int te_put(const struct test_etcd *e, const char *key,
			 const void *val, size_t len)
{
	json_object *r = json_object_new_object();

	json_object_object_add(r, "key", dir_json_b64(key, strlen(key)));
	json_object_object_add(r, "value", dir_json_b64(val, len));
	return te_post(e, "/v3/kv/put", r);
}

#endif /* RDMAXFER_ETCD_TEST_H */
