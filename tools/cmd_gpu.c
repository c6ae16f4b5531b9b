// SPDX-License-Identifier: GPL-2.0
/*
 * kvtierctl gpu: which GPU placement modes this host allows, and why, from
 * evidence (kvtier_gpu_host_probe(3), kvtier_gpu_mode_check(3)) and, where
 * a CUDA driver is installed, each device's own answer.
 *
 * The CUDA driver is reached through dlopen(): kvtierctl neither links nor
 * needs it, and a host without it still gets the host's verdicts.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"

/* cuda.h's values (CUDA 12 and 13), so that kvtierctl builds without it. */
#define CU_ATTR_PAGEABLE_MEMORY_ACCESS			88
#define CU_ATTR_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES	100
#define KVT_MAX_GPUS	64

struct gpu {
	char name[128];
	int pageable, host_page_tables;
};

struct cuda {
	char error[160];	/* why no device was asked, or "" */
	int driver_version;	/* 13000 for 13.0, or -1 */
	int n;
	struct gpu gpu[KVT_MAX_GPUS];
};

static const struct { int mode; const char *name; } modes[] = {
	{ KVTIER_GPU_MODE_HMM, "hmm" },
	{ KVTIER_GPU_MODE_MANAGED, "managed" },
	{ KVTIER_GPU_MODE_OFFLOAD, "offload" },
};
static const char *const verdict_names[] = { "no", "yes", "maybe" };

/* Ask libcuda.so.1 for each device's pageable memory access. */
static void cuda_probe(struct cuda *c)
{
	int (*init)(unsigned int), (*count)(int *), (*get)(int *, int);
	int (*name)(char *, int, int), (*attr)(int *, int, int);
	int (*version)(int *);
	void *h;
	int i, dev, r;

	memset(c, 0, sizeof(*c));
	c->driver_version = -1;
	h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(c->error, sizeof(c->error),
			 "libcuda.so.1 cannot be loaded: no CUDA driver installed");
		return;
	}
	init = (int (*)(unsigned int))dlsym(h, "cuInit");
	count = (int (*)(int *))dlsym(h, "cuDeviceGetCount");
	get = (int (*)(int *, int))dlsym(h, "cuDeviceGet");
	name = (int (*)(char *, int, int))dlsym(h, "cuDeviceGetName");
	attr = (int (*)(int *, int, int))dlsym(h, "cuDeviceGetAttribute");
	version = (int (*)(int *))dlsym(h, "cuDriverGetVersion");
	if (!init || !count || !get || !attr) {
		snprintf(c->error, sizeof(c->error),
			 "libcuda.so.1 lacks cuInit, cuDeviceGetCount, cuDeviceGet or cuDeviceGetAttribute");
		return;
	}
	if (version && version(&c->driver_version))
		c->driver_version = -1;
	r = init(0);
	if (r) {
		snprintf(c->error, sizeof(c->error),
			 "cuInit failed (CUDA error %d): no usable GPU or driver", r);
		return;
	}
	r = count(&c->n);
	if (r || c->n <= 0) {
		snprintf(c->error, sizeof(c->error), "no CUDA device (cuDeviceGetCount: error %d, %d devices)",
			 r, r ? 0 : c->n);
		c->n = 0;
		return;
	}
	if (c->n > KVT_MAX_GPUS)
		c->n = KVT_MAX_GPUS;
	for (i = 0; i < c->n; i++) {
		struct gpu *g = &c->gpu[i];

		g->pageable = -1;
		g->host_page_tables = -1;
		snprintf(g->name, sizeof(g->name), "?");
		if (get(&dev, i))
			continue;
		if (name && name(g->name, (int)sizeof(g->name), dev))
			snprintf(g->name, sizeof(g->name), "?");
		if (attr(&g->pageable, CU_ATTR_PAGEABLE_MEMORY_ACCESS, dev))
			g->pageable = -1;
		if (attr(&g->host_page_tables,
			 CU_ATTR_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES, dev))
			g->host_page_tables = -1;
	}
	/* The driver stays loaded: unloading CUDA at exit is not safe. */
}

static const char *tristate(int v, const char *yes, const char *no)
{
	return v < 0 ? "unknown" : v ? yes : no;
}

static void print_host(const struct kvtier_gpu_host *h, const struct cuda *c)
{
	printf("kernel    %s (%s): ", h->kernel, h->machine);
	if (h->hmm_mirror < 0)
		printf("configuration not found (/boot/config-%s, /proc/config.gz)\n",
		       h->kernel);
	else
		printf("CONFIG_HMM_MIRROR%s, CONFIG_DEVICE_PRIVATE%s (%s)\n",
		       h->hmm_mirror ? "=y" : " is not set",
		       h->device_private ? "=y" : " is not set", h->config_path);
	if (!h->nvidia)
		printf("nvidia    no NVIDIA kernel module is loaded\n");
	else
		printf("nvidia    %s kernel module %s, nvidia_uvm %s%s\n",
		       tristate(h->nvidia_open, "open", "proprietary"),
		       *h->nvidia_version ? h->nvidia_version : "(version unknown)",
		       h->uvm ? "loaded" : "not loaded",
		       h->uvm_hmm_disabled == 1 ? " with uvm_disable_hmm=1" : "");
	if (c->error[0])
		printf("cuda      %s\n", c->error);
	else
		if (c->driver_version < 0)
			printf("cuda      driver version unknown, %d device%s\n", c->n,
			       c->n == 1 ? "" : "s");
		else
			printf("cuda      driver %d.%d, %d device%s\n",
			       c->driver_version / 1000,
			       c->driver_version % 1000 / 10, c->n,
			       c->n == 1 ? "" : "s");
	if (h->tier < 0)
		printf("tier %-4u no such tier (is kvtier loaded?)\n", h->tier_id);
	else
		printf("tier %-4u %s%s\n", h->tier_id,
		       h->tier ? "attached: " : "detached",
		       h->tier ? h->tier_device : "");
}

/* The three verdicts for @h, as text lines or a JSON object. */
static void print_modes(const struct kvtier_gpu_host *h, const char *indent)
{
	char why[1024];
	bool first = true, f;
	int m, v;

	if (opt_json)
		printf("{");
	for (m = 0; m < 3; m++) {
		v = kvtier_gpu_mode_check(h, modes[m].mode, why, sizeof(why));
		if (v < 0)
			snprintf(why, sizeof(why), "%s: %s", modes[m].name, strerror(-v));
		if (opt_json) {
			printf("%s", first ? "" : ",");
			first = false;
			json_str(stdout, modes[m].name);
			printf(":{");
			f = true;
			json_key_str(stdout, &f, "verdict",
				     v < 0 ? "error" : verdict_names[v]);
			json_key_str(stdout, &f, "why", why);
			printf("}");
		} else {
			printf("%s%s\n", indent, why);
		}
	}
	if (opt_json)
		printf("}");
}

static void json_tristate(bool *first, const char *key, int v)
{
	if (v < 0)
		json_key_null(stdout, first, key);
	else
		json_key_bool(stdout, first, key, v);
}

static void print_json(struct kvtier_gpu_host *h, const struct cuda *c)
{
	bool f;
	int i;

	printf("{\"kernel\":{");
	f = true;
	json_key_str(stdout, &f, "release", h->kernel);
	json_key_str(stdout, &f, "machine", h->machine);
	if (*h->config_path)
		json_key_str(stdout, &f, "config", h->config_path);
	else
		json_key_null(stdout, &f, "config");
	json_tristate(&f, "hmm_mirror", h->hmm_mirror);
	json_tristate(&f, "device_private", h->device_private);
	printf("},\"nvidia\":{");
	f = true;
	json_key_bool(stdout, &f, "loaded", h->nvidia);
	json_tristate(&f, "open", h->nvidia_open);
	if (*h->nvidia_version)
		json_key_str(stdout, &f, "version", h->nvidia_version);
	else
		json_key_null(stdout, &f, "version");
	json_key_bool(stdout, &f, "uvm", h->uvm);
	json_tristate(&f, "uvm_disable_hmm", h->uvm_hmm_disabled);
	printf("},\"tier\":{");
	f = true;
	json_key_u64(stdout, &f, "id", h->tier_id);
	json_key_str(stdout, &f, "state", h->tier < 0 ? "absent" :
		     h->tier ? "attached" : "detached");
	if (h->tier > 0)
		json_key_str(stdout, &f, "device", h->tier_device);
	else
		json_key_null(stdout, &f, "device");
	printf("},\"cuda\":{");
	f = true;
	if (c->error[0])
		json_key_str(stdout, &f, "error", c->error);
	else
		json_key_null(stdout, &f, "error");
	if (c->driver_version >= 0)
		json_key_s64(stdout, &f, "driver_version", c->driver_version);
	else
		json_key_null(stdout, &f, "driver_version");
	printf(",\"devices\":[");
	for (i = 0; i < c->n; i++) {
		printf("%s{", i ? "," : "");
		f = true;
		json_key_s64(stdout, &f, "index", i);
		json_key_str(stdout, &f, "name", c->gpu[i].name);
		json_tristate(&f, "pageable_memory_access", c->gpu[i].pageable);
		json_tristate(&f, "host_page_tables", c->gpu[i].host_page_tables);
		h->pageable = c->gpu[i].pageable;
		h->host_page_tables = c->gpu[i].host_page_tables;
		printf(",\"modes\":");
		print_modes(h, "");
		printf("}");
	}
	printf("]}");
	/* What the host allows before any device is asked. */
	h->pageable = -1;
	h->host_page_tables = -1;
	printf(",\"modes\":");
	print_modes(h, "");
	printf("}\n");
}

int cmd_gpu(const struct cmd *cmd, int argc, char **argv)
{
	struct kvtier_gpu_host h;
	struct cuda *c;
	unsigned int id;
	int op, ret, i;

	op = parse_opts(cmd, argc, argv, "", NULL);
	if (op < 0)
		return EXIT_USAGE;
	ret = tier_operand(cmd, argc, argv, op, &id);
	if (ret)
		return ret;
	c = malloc(sizeof(*c));
	if (!c)
		return fail("out of memory");
	/* First: cuInit may load nvidia_uvm, which the host probe reads. */
	cuda_probe(c);
	ret = kvtier_gpu_host_probe(id, &h);
	if (ret) {
		free(c);
		return fail("gpu: %s", strerror(-ret));
	}
	if (opt_json) {
		print_json(&h, c);
		free(c);
		return EXIT_OK;
	}
	print_host(&h, c);
	if (!c->n)
		print_modes(&h, "");
	for (i = 0; i < c->n; i++) {
		printf("device %d  %s: pageable memory access %s%s\n", i,
		       c->gpu[i].name, tristate(c->gpu[i].pageable, "1", "0"),
		       c->gpu[i].host_page_tables == 1 ? ", through the host's page tables" : "");
		h.pageable = c->gpu[i].pageable;
		h.host_page_tables = c->gpu[i].host_page_tables;
		print_modes(&h, "  ");
	}
	free(c);
	return EXIT_OK;
}
