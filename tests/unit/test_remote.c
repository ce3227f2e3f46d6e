/* SPDX-License-Identifier: MIT */
/* test_remote.c - lib/remote's parsers, one behaviour per check. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "remote/internal.h"
#include "remote/json.h"
#include "util/sha256.h"

static void test_content_range(void)
{
	uint64_t a, b, t;

	CHECK(!ezi_content_range("bytes 0-99/1000", &a, &b, &t) && a == 0 &&
		      b == 99 && t == 1000,
	      "plain range");
	CHECK(!ezi_content_range(" bytes 5-5/*\r\n", &a, &b, &t) && a == 5 &&
		      b == 5 && t == UINT64_MAX,
	      "unknown total");
	CHECK(ezi_content_range("bytes 10-5/100", &a, &b, &t), "end < start");
	CHECK(ezi_content_range("bytes 0-100/100", &a, &b, &t),
	      "end past the total");
	CHECK(ezi_content_range("bytes */100", &a, &b, &t),
	      "an unsatisfied range is no range");
	CHECK(ezi_content_range("items 0-1/2", &a, &b, &t), "another unit");
	CHECK(ezi_content_range("bytes 0-1/2 junk", &a, &b, &t),
	      "trailing junk");
	CHECK(ezi_content_range("bytes -1-2/3", &a, &b, &t), "a sign");
}

static void test_www_auth(void)
{
	struct ezi_challenge c;

	CHECK(!ezi_www_auth_parse(
		      "Bearer realm=\"https://auth.example/token\","
		      "service=\"reg\",scope=\"repository:a/b:pull\"",
		      &c) &&
		      c.bearer &&
		      !strcmp(c.realm, "https://auth.example/token") &&
		      !strcmp(c.service, "reg") &&
		      !strcmp(c.scope, "repository:a/b:pull"),
	      "a Bearer challenge");
	CHECK(!ezi_www_auth_parse("Basic realm=\"x\"", &c) && c.basic, "Basic");
	CHECK(ezi_www_auth_parse("Bearer service=\"x\"", &c),
	      "Bearer without a realm");
	CHECK(ezi_www_auth_parse("Bearer realm=\"unterminated", &c),
	      "an unterminated quote");
	CHECK(ezi_www_auth_parse("Negotiate abc", &c), "another scheme");
}

static void test_oci_ref(void)
{
	static const char d64[] = "sha256:0123456789abcdef0123456789abcdef"
				  "0123456789abcdef0123456789abcdef";
	struct ezi_oci_ref r;
	char why[700], ref[200];

	CHECK(!ezi_oci_parse("oci://127.0.0.1:5000/a/b:tag", 0, &r, NULL, 0) &&
		      !strcmp(r.host, "127.0.0.1:5000") &&
		      !strcmp(r.repo, "a/b") && !strcmp(r.ref, "tag") && r.http,
	      "host:port/repo:tag, plain http to 127.0.0.1");
	snprintf(ref, sizeof(ref), "oci://reg.example/x@%s", d64);
	CHECK(!ezi_oci_parse(ref, 0, &r, NULL, 0) && !strcmp(r.repo, "x") &&
		      !strcmp(r.ref, d64) && !r.http,
	      "a digest, https elsewhere");
	CHECK(!ezi_oci_parse("oci://reg.example:443/x:1", 1, &r, NULL, 0) &&
		      r.http,
	      "--insecure");
	CHECK(!ezi_oci_parse("oci://reg.example/x", 0, &r, NULL, 0) &&
		      !strcmp(r.repo, "x") && !strcmp(r.ref, "latest"),
	      "no tag: latest");
	CHECK(!ezi_oci_parse("oci://reg:5000/a/x", 0, &r, NULL, 0) &&
		      !strcmp(r.host, "reg:5000") && !strcmp(r.repo, "a/x") &&
		      !strcmp(r.ref, "latest"),
	      "the port is no tag");
	CHECK(ezi_oci_parse("oci:///x:1", 0, &r, why, sizeof(why)) &&
		      strstr(why, "no host"),
	      "no host: %s", why);
	CHECK(ezi_oci_parse("oci://h/Test/X:1", 0, &r, why, sizeof(why)) &&
		      strstr(why, "'Test/X' has upper-case letters"),
	      "upper case repository: %s", why);
	CHECK(ezi_oci_parse("oci://h/x y:1", 0, &r, why, sizeof(why)) &&
		      strstr(why, "only a-z"),
	      "a blank in the repository: %s", why);
	CHECK(ezi_oci_parse("oci://h/x@md5:1", 0, &r, why, sizeof(why)) &&
		      strstr(why, "is no digest"),
	      "another digest: %s", why);
	CHECK(ezi_oci_parse("oci://h/x:", 0, &r, why, sizeof(why)),
	      "an empty tag");
	CHECK(ezi_oci_parse("oci://h/x:a/b", 0, &r, why, sizeof(why)) &&
		      strstr(why, "'x:a/b'"),
	      "a ':' before the last '/' is no tag: %s", why);
}

static void test_json(void)
{
	struct ezi_json *j = ezi_json_parse(
		"{\"a\": [1, {\"b\": \"c\\\"d\"}], \"n\": -2.5e1, \"t\": true,"
		" \"z\": null}");
	const struct ezi_json *a = ezi_json_get(j, "a");

	CHECK(j && a && a->type == EZI_JSON_ARRAY && a->n == 2,
	      "an array member");
	CHECK(a && a->n == 2 && !strcmp(ezi_json_str(a->kids[1], "b"), "c\"d"),
	      "an escaped string");
	CHECK(ezi_json_get(j, "n") && ezi_json_get(j, "n")->num == -25,
	      "a number");
	CHECK(!ezi_json_str(j, "missing"), "a missing member");
	ezi_json_free(j);
	CHECK(!ezi_json_parse("{\"a\": 1,}"), "a trailing comma");
	CHECK(!ezi_json_parse("[1] 2"), "trailing data");
	CHECK(!ezi_json_parse("\"\x01\""), "a control byte");
}

static void test_sha256(void)
{
	char hex[65];

	ezi_sha256_hex("", 0, hex);
	CHECK(!strcmp(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934c"
			   "a495991b7852b855"),
	      "empty: %s", hex);
	ezi_sha256_hex("{}", 2, hex);
	CHECK(!strcmp(hex, "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e83"
			   "10c060f61caaff8a"),
	      "{}: %s", hex);
	{
		char *m = malloc(1000000);
		struct ezi_sha256 c;
		uint8_t d[32];

		memset(m, 'a', 1000000);
		ezi_sha256_init(&c);
		/* odd pieces: the buffering between blocks */
		for (size_t off = 0; off < 1000000; off += 333)
			ezi_sha256_update(&c, m + off,
					  1000000 - off < 333 ? 1000000 - off
							      : 333);
		ezi_sha256_final(&c, d);
		CHECK(d[0] == 0xcd && d[1] == 0xc7 && d[31] == 0xd0,
		      "a million a's");
		free(m);
	}
}

static void test_cmap(void)
{
	char dir[] = "/tmp/ezfs-cmap.XXXXXX", path[64];
	struct ezi_cmap m = { .size = 200000, .bs = 65536, .nblocks = 4 }, back;
	uint8_t bits = 0x5;

	if (!mkdtemp(dir)) {
		CHECK(0, "mkdtemp");
		return;
	}
	snprintf(path, sizeof(path), "%s/k.map", dir);
	strcpy(m.url, "http://h/i.img");
	strcpy(m.etag, "\"e\"");
	m.bits = &bits;
	CHECK(!ezi_cmap_store(path, &m), "store");
	CHECK(!ezi_cmap_load(path, &back) && back.size == 200000 &&
		      back.bs == 65536 && back.nblocks == 4 &&
		      back.bits[0] == 0x5 && !strcmp(back.url, m.url) &&
		      !strcmp(back.etag, m.etag),
	      "load gives back what was stored");
	free(back.bits);
	/* complete or not; found by the name it was opened as */
	CHECK(!ezi_cmap_complete(&m), "2 of 4 blocks: not complete");
	CHECK(ezi_cache_find(dir, "oci://h/r:t", &back) == -ENOENT,
	      "an incomplete entry is not found");
	bits = 0xf;
	strcpy(m.name, "oci://h/r:t");
	CHECK(ezi_cmap_complete(&m), "4 of 4 blocks: complete");
	CHECK(!ezi_cmap_store(path, &m), "store again");
	CHECK(!ezi_cache_find(dir, "oci://h/r:t", &back) &&
		      !strcmp(back.url, m.url) && !strcmp(back.name, m.name),
	      "a complete entry is found by its name");
	free(back.bits);
	CHECK(ezi_cache_find(dir, "oci://h/r:other", &back) == -ENOENT,
	      "another name is not found");
	if (truncate(path, 10) == 0)
		CHECK(ezi_cmap_load(path, &back) < 0, "a cut map is refused");
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	test_content_range();
	test_www_auth();
	test_oci_ref();
	test_json();
	test_sha256();
	test_cmap();
	if (failures)
		fprintf(stderr, "%d failures\n", failures);
	return failures ? 1 : 0;
}
