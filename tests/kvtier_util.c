// SPDX-License-Identifier: GPL-2.0
/*
 * The kvtier kselftests' helpers; documented in kvtier_util.h. Compiled
 * once and linked into every test program (tests/Makefile).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* O_DIRECT */
#endif
#include "kvtier_util.h"

int kvt_load(const char *params)
{
	const char *ko = getenv("KVTIER_KO");
	int fd, ret = 0;

	if (!ko)
		return -ENOENT;
	fd = open(ko, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (syscall(SYS_finit_module, fd, params, 0))
		ret = -errno;
	close(fd);
	/*
	 * Every read-write attach waits one lease interval before it trusts
	 * the ownership lease it wrote (kmod/lease.c): the shortest interval
	 * keeps the suite's hundreds of attaches fast. Tests of the lease
	 * set the knob themselves.
	 */
	for (int i = 0; !ret && i < 64; i++) {
		char p[96];

		snprintf(p, sizeof(p), "/sys/class/kvtier/kvtier%d/lease_interval_ms", i);
		if (access(p, F_OK) || kvt_write(p, "100"))
			break;
	}
	return ret;
}

int kvt_unload(void)
{
	if (syscall(SYS_delete_module, "kvtier", O_NONBLOCK))
		return -errno;
	return 0;
}

int kvt_loaded(void)
{
	struct stat st;

	return stat("/sys/module/kvtier", &st) == 0;
}

int kvt_exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

int kvt_write(const char *path, const char *val)
{
	ssize_t n;
	int fd;

	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, val, strlen(val));
	if (n < 0)
		n = -errno;
	close(fd);
	return n < 0 ? (int)n : 0;
}

int kvt_read(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	if (n < 0)
		n = -errno;
	close(fd);
	if (n < 0)
		return (int)n;
	buf[n] = '\0';
	if (n && buf[n - 1] == '\n')
		buf[n - 1] = '\0';
	return 0;
}

const char *kvt_attr(char *buf, size_t len, int id,
		     const char *attr)
{
	snprintf(buf, len, "/sys/class/kvtier/kvtier%d/%s", id, attr);
	return buf;
}

int kvt_tier_write(int id, const char *attr, const char *val)
{
	char p[128];

	return kvt_write(kvt_attr(p, sizeof(p), id, attr), val);
}

int kvt_tier_read(int id, const char *attr, char *buf, size_t len)
{
	char p[128];

	return kvt_read(kvt_attr(p, sizeof(p), id, attr), buf, len);
}

int kvt_meta_read(int id, unsigned long long v[6])
{
	char buf[256];

	if (kvt_tier_read(id, "metadata", buf, sizeof(buf)))
		return 0;
	return sscanf(buf, "%llu %llu %llu %llu %llu %llu",
		      &v[0], &v[1], &v[2], &v[3], &v[4], &v[5]);
}

long long kvt_meta_col(int id, int col)
{
	unsigned long long v[6];

	if (col < 0 || col > 5 || kvt_meta_read(id, v) != 6)
		return -1;
	return (long long)v[col];
}

/*
 * Xarray nodes the kernel holds now (radix_tree_node objects in use), the
 * cache shrunk first so that free objects cached per CPU are not counted
 * (SLUB counts them as active); -1 if either file is missing.
 */
static long long kvt_xa_nodes(void)
{
	char line[512], name[64];
	long long active = -1, v;
	FILE *f;

	if (kvt_write("/sys/kernel/slab/radix_tree_node/shrink", "1"))
		return -1;
	f = fopen("/proc/slabinfo", "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%63s %lld", name, &v) == 2 &&
		    !strcmp(name, "radix_tree_node"))
			active = v;
	fclose(f);
	return active;
}

/*
 * kvt_xa_nodes() once it stops falling: nodes are freed after an RCU
 * grace period, so three samples 100 ms apart must agree.
 */
long long kvt_xa_nodes_settled(void)
{
	long long prev = kvt_xa_nodes(), now;
	int i, same = 0;

	for (i = 0; i < 50 && same < 2 && prev >= 0; i++) {
		usleep(100 * 1000);
		now = kvt_xa_nodes();
		same = now >= prev ? same + 1 : 0;
		prev = now;
	}
	return prev;
}

const char *kvt_ns(const char *var)
{
	const char *ns = getenv(var);
	struct stat st;

	if (!ns || stat(ns, &st) || !S_ISBLK(st.st_mode))
		return NULL;
	return ns;
}

int kvt_loop_attach(const char *file, size_t size, char *dev,
		    size_t len)
{
	int ctl, fd, lfd, n;

	fd = open(file, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate(fd, size))
		return -1;
	ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	if (ctl < 0)
		return -1;
	n = ioctl(ctl, LOOP_CTL_GET_FREE);
	close(ctl);
	if (n < 0)
		return -1;
	snprintf(dev, len, "/dev/loop%d", n);
	lfd = open(dev, O_RDWR | O_CLOEXEC);
	if (lfd < 0 || ioctl(lfd, LOOP_SET_FD, fd))
		return -1;
	close(fd);
	return lfd;
}

const char *kvt_missing(void)
{
	if (!getenv("KVTIER_KO"))
		return "KVTIER_KO not set";
	if (!kvt_ns("KVTIER_NS0"))
		return "no namespace in KVTIER_NS0";
	return NULL;
}

int kvt_start(const char *params, int budget_mb)
{
	int ret, fd;

	ret = kvt_load(params);
	if (!ret)
		ret = kvt_tier_write(0, "backing_dev", kvt_ns("KVTIER_NS0"));
	if (!ret)
		ret = kvt_knob(0, "host_budget_mb", budget_mb);
	if (ret)
		return ret;
	fd = kvt_tier_open(0, O_RDWR);
	return fd < 0 ? -errno : fd;
}

long long kvt_stat(int id, const char *name)
{
	char path[128], key[64];
	long long v, ret = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/kernel/debug/kvtier/kvtier%d/stats", id);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fscanf(f, "%63s %lld", key, &v) == 2) {
		if (!strcmp(key, name)) {
			ret = v;
			break;
		}
	}
	fclose(f);
	return ret;
}

long long kvt_wait_stat(int id, const char *name, long long from,
			long long want, int secs)
{
	long long n = 0;

	for (int i = 0; i < secs * 100; i++) {
		n = kvt_stat(id, name) - from;
		if (n >= want)
			break;
		usleep(10000);
	}
	return n;
}

long long kvt_tier_num(int id, const char *attr)
{
	char buf[64];

	if (kvt_tier_read(id, attr, buf, sizeof(buf)))
		return -1;
	return strtoll(buf, NULL, 0);
}

int kvt_knob(int id, const char *attr, long long v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%lld", v);
	return kvt_tier_write(id, attr, buf);
}

KVT_FAST void kvt_fill(void *p, size_t len, unsigned long long base,
		       unsigned long long seed)
{
	unsigned long long *w = p;
	size_t i;

	for (i = 0; i < len / 8; i++)
		w[i] = kvt_pattern(base + i * 8, seed);
}

KVT_FAST long long kvt_check(const void *p, size_t len,
			     unsigned long long base,
			     unsigned long long seed)
{
	const unsigned long long *w = p;
	size_t i;

	for (i = 0; i < len / 8; i++)
		if (w[i] != kvt_pattern(base + i * 8, seed))
			return (long long)(base + i * 8);
	return -1;
}

__attribute__((format(printf, 1, 2))) int kvt_run(const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

int kvt_kmsg_scan(int fd, const char *needle)
{
	char rec[8192];		/* a record longer than the buffer: EINVAL */
	int count = 0;
	ssize_t n;

	for (;;) {
		n = read(fd, rec, sizeof(rec) - 1);
		if (n < 0 && errno == EPIPE)
			continue;	/* overwritten while reading: go on */
		if (n <= 0)
			break;
		rec[n] = '\0';
		if (strstr(rec, needle))
			count++;
	}
	return count;
}

int kvt_kmsg_end(void)
{
	int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);

	if (fd >= 0 && lseek(fd, 0, SEEK_END) < 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

int kvt_state_is(int id, const char *want)
{
	char buf[64];

	return !kvt_tier_read(id, "state", buf, sizeof(buf)) && !strcmp(buf, want);
}

int kvt_region_info(int fd, struct kvtier_region_info *ri)
{
	return ioctl(fd, KVTIER_IOC_REGION_INFO, ri) ? -errno : 0;
}

unsigned char *kvt_map_filled(int *fd, size_t len,
			      unsigned long long seed)
{
	unsigned char *p;

	*fd = kvt_tier_open(0, O_RDWR);
	if (*fd < 0)
		return NULL;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
	if (p == MAP_FAILED)
		return NULL;
	kvt_fill(p, len, 0, seed);
	return p;
}

static int kvt_aio_rw(int write, int fd, void *buf, size_t block,
		      unsigned int n, off_t off, long long *res)
{
	struct iocb *cbs = calloc(n, sizeof(*cbs)), **list = calloc(n, sizeof(*list));
	struct io_event *ev = calloc(n, sizeof(*ev));
	aio_context_t ctx = 0;
	unsigned int i, got = 0;
	int ret = -ENOMEM;
	long k;

	if (!cbs || !list || !ev)
		goto out;
	ret = 0;
	if (syscall(__NR_io_setup, n, &ctx)) {
		ret = -errno;
		goto out;
	}
	for (i = 0; i < n; i++) {
		cbs[i].aio_lio_opcode = write ? IOCB_CMD_PWRITE : IOCB_CMD_PREAD;
		cbs[i].aio_fildes = fd;
		cbs[i].aio_buf = (unsigned long)((char *)buf + i * block);
		cbs[i].aio_nbytes = block;
		cbs[i].aio_offset = off + (off_t)(i * block);
		cbs[i].aio_data = i;
		list[i] = &cbs[i];
	}
	if (syscall(__NR_io_submit, ctx, (long)n, list) != (long)n) {
		ret = -EIO;
		n = 0;
	}
	while (got < n) {
		k = syscall(__NR_io_getevents, ctx, 1, (long)(n - got), ev, NULL);
		if (k < 0) {
			ret = -errno;
			break;
		}
		for (i = 0; i < (unsigned int)k; i++)
			res[ev[i].data] = ev[i].res;
		got += k;
	}
	syscall(__NR_io_destroy, ctx);
out:
	free(cbs);
	free(list);
	free(ev);
	return ret;
}

/* Threads of this process whose name starts with @prefix. */
static int kvt_threads_named(const char *prefix)
{
	char path[300], comm[32];
	struct dirent *d;
	int n = 0;
	DIR *dp = opendir("/proc/self/task");

	if (!dp)
		return -1;
	while ((d = readdir(dp))) {
		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", d->d_name);
		if (!kvt_read(path, comm, sizeof(comm)) &&
		    !strncmp(comm, prefix, strlen(prefix)))
			n++;
	}
	closedir(dp);
	return n;
}

int kvt_aio_preads(int fd, void *buf, size_t block, unsigned int n,
		   off_t off, long long *res)
{
	return kvt_aio_rw(0, fd, buf, block, n, off, res);
}

int kvt_aio_pwrites(int fd, void *buf, size_t block, unsigned int n,
		    off_t off, long long *res)
{
	return kvt_aio_rw(1, fd, buf, block, n, off, res);
}

static int kvt_uring_rw(int write, int fd, void *buf, size_t block,
			unsigned int n, off_t off, long long *res, int *workers)
{
	struct io_uring_params p = { 0 };
	unsigned int *sq_tail, *sq_mask, *sq_array, *cq_head, *cq_tail, *cq_mask;
	struct io_uring_sqe *sqes;
	struct io_uring_cqe *cqes;
	unsigned int i, tail, head, got = 0;
	size_t sq_len, cq_len;
	char *sq, *cq;
	int ring, ret = 0;

	ring = syscall(__NR_io_uring_setup, n, &p);
	if (ring < 0)
		return -errno;
	sq_len = p.sq_off.array + p.sq_entries * sizeof(unsigned int);
	cq_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	if (p.features & IORING_FEAT_SINGLE_MMAP)
		sq_len = cq_len = sq_len > cq_len ? sq_len : cq_len;
	sq = mmap(NULL, sq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
		  ring, IORING_OFF_SQ_RING);
	cq = sq;
	if (sq != MAP_FAILED && !(p.features & IORING_FEAT_SINGLE_MMAP))
		cq = mmap(NULL, cq_len, PROT_READ | PROT_WRITE,
			  MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_CQ_RING);
	sqes = mmap(NULL, p.sq_entries * sizeof(*sqes), PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_SQES);
	if (sq == MAP_FAILED || cq == MAP_FAILED || sqes == MAP_FAILED) {
		close(ring);
		return -ENOMEM;
	}
	sq_tail = (unsigned int *)(sq + p.sq_off.tail);
	sq_mask = (unsigned int *)(sq + p.sq_off.ring_mask);
	sq_array = (unsigned int *)(sq + p.sq_off.array);
	cq_head = (unsigned int *)(cq + p.cq_off.head);
	cq_tail = (unsigned int *)(cq + p.cq_off.tail);
	cq_mask = (unsigned int *)(cq + p.cq_off.ring_mask);
	cqes = (struct io_uring_cqe *)(cq + p.cq_off.cqes);

	tail = *sq_tail;
	for (i = 0; i < n; i++, tail++) {
		unsigned int idx = tail & *sq_mask;

		memset(&sqes[idx], 0, sizeof(sqes[idx]));
		sqes[idx].opcode = write ? IORING_OP_WRITE : IORING_OP_READ;
		sqes[idx].fd = fd;
		sqes[idx].addr = (unsigned long)((char *)buf + i * block);
		sqes[idx].len = block;
		sqes[idx].off = off + i * block;
		sqes[idx].user_data = i;
		sq_array[idx] = idx;
	}
	__atomic_store_n(sq_tail, tail, __ATOMIC_RELEASE);
	/* All of them: io_uring_enter() may take fewer than asked. */
	for (i = 0; !ret && i < n;) {
		long k = syscall(__NR_io_uring_enter, ring, n - i, 0, 0, NULL, 0);

		if (k > 0)
			i += k;
		else if (!k)
			ret = -EIO;
		else if (errno != EINTR && errno != EAGAIN)
			ret = -errno;
	}
	while (!ret && got < n) {
		head = *cq_head;
		if (head == __atomic_load_n(cq_tail, __ATOMIC_ACQUIRE)) {
			if (syscall(__NR_io_uring_enter, ring, 0, 1,
				    IORING_ENTER_GETEVENTS, NULL, 0) < 0)
				ret = -errno;
			continue;
		}
		res[cqes[head & *cq_mask].user_data] = cqes[head & *cq_mask].res;
		__atomic_store_n(cq_head, head + 1, __ATOMIC_RELEASE);
		got++;
	}
	if (workers)
		*workers = kvt_threads_named("iou-wrk");
	munmap(sqes, p.sq_entries * sizeof(*sqes));
	if (cq != sq)
		munmap(cq, cq_len);
	munmap(sq, sq_len);
	close(ring);
	return ret;
}

int kvt_uring_preads(int fd, void *buf, size_t block, unsigned int n,
		     off_t off, long long *res, int *workers)
{
	return kvt_uring_rw(0, fd, buf, block, n, off, res, workers);
}

int kvt_uring_pwrites(int fd, void *buf, size_t block, unsigned int n,
		      off_t off, long long *res, int *workers)
{
	return kvt_uring_rw(1, fd, buf, block, n, off, res, workers);
}

int kvt_pread_page(int fd, unsigned long long off,
		   unsigned long long seed)
{
	unsigned char buf[4096];
	ssize_t n = pread(fd, buf, sizeof(buf), off);

	if (n < 0)
		return -errno;
	if (n != (ssize_t)sizeof(buf))
		return 2;
	return kvt_check(buf, sizeof(buf), off, seed) == -1 ? 0 : 1;
}

KVT_FAST uint32_t kvt_crc32c(uint32_t crc, const void *buf,
			     size_t len)
{
	static uint32_t table[256];
	const unsigned char *p = buf;
	uint32_t c;
	int i, j;

	if (!table[1]) {
		for (i = 0; i < 256; i++) {
			c = i;
			for (j = 0; j < 8; j++)
				c = (c >> 1) ^ (c & 1 ? 0x82f63b78U : 0);
			table[i] = c;
		}
	}
	while (len--)
		crc = table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}

int kvt_dev_io(const char *dev, void *buf, size_t len, off_t off,
	       int wr)
{
	void *bounce;
	ssize_t n;
	int fd, ret = 0;

	fd = open(dev, (wr ? O_RDWR : O_RDONLY) | O_DIRECT | O_CLOEXEC);
	if (fd < 0 && errno == EINVAL)
		fd = open(dev, (wr ? O_RDWR : O_RDONLY) | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/*
	 * Small pages only: an O_DIRECT bio merges physically adjacent
	 * transparent huge pages into one segment, and on 6.1 an nvme-tcp
	 * target on loopback copies such a segment out of the sender's pages
	 * in one piece, which hardened usercopy stops with a kernel BUG (seen
	 * in kvtier_persist_test over fabrics). kvtier's own I/O is in small
	 * pages; this keeps the test's raw writes the same.
	 */
	bounce = mmap(NULL, len ? len : 4096, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (bounce == MAP_FAILED) {
		close(fd);
		return -ENOMEM;
	}
	madvise(bounce, len ? len : 4096, MADV_NOHUGEPAGE);
	if (wr)
		memcpy(bounce, buf, len);
	n = wr ? pwrite(fd, bounce, len, off) : pread(fd, bounce, len, off);
	if (n < 0)
		ret = -errno;
	else if ((size_t)n != len)
		ret = -EIO;
	else if (!wr)
		memcpy(buf, bounce, len);
	if (!ret && wr && fsync(fd))
		ret = -errno;
	munmap(bounce, len ? len : 4096);
	close(fd);
	return ret;
}

int kvt_dev_read(const char *dev, void *buf, size_t len, off_t off)
{
	return kvt_dev_io(dev, buf, len, off, 0);
}

int kvt_dev_write(const char *dev, const void *buf, size_t len,
		  off_t off)
{
	return kvt_dev_io(dev, (void *)buf, len, off, 1);
}

unsigned long long kvt_dev_size(const char *dev)
{
	off_t end;
	int fd = open(dev, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	end = lseek(fd, 0, SEEK_END);
	close(fd);
	return end < 0 ? 0 : (unsigned long long)end;
}

uint32_t kvt_super_crc(const void *blk)
{
	const struct kvtier_disk_super *sb = blk;
	unsigned char tmp[KVTIER_BLOCK_SIZE];
	uint32_t hs = le32toh(sb->header_size);

	if (hs < offsetof(struct kvtier_disk_super, reserved0) || hs > sizeof(tmp))
		hs = sizeof(*sb);
	memcpy(tmp, blk, sizeof(tmp));
	memset(tmp + offsetof(struct kvtier_disk_super, crc), 0, 4);
	return kvt_crc32c(~0U, tmp, hs);
}

void kvt_super_seal(void *blk)
{
	struct kvtier_disk_super *sb = blk;

	sb->crc = htole32(kvt_super_crc(blk));
}

int kvt_super_valid(const void *blk)
{
	const struct kvtier_disk_super *sb = blk;

	return le64toh(sb->magic) == KVTIER_SB_MAGIC &&
	       le32toh(sb->crc) == kvt_super_crc(blk);
}

int kvt_super_read(const char *dev, struct kvtier_disk_super *sb,
		   int *copy)
{
	unsigned char blk[2][KVTIER_BLOCK_SIZE];
	const struct kvtier_disk_super *s[2];
	int ret, best = -1, i;

	ret = kvt_dev_read(dev, blk, sizeof(blk), 0);
	if (ret)
		return ret;
	for (i = 0; i < 2; i++) {
		s[i] = (const struct kvtier_disk_super *)blk[i];
		if (!kvt_super_valid(blk[i]))
			continue;
		if (best < 0 || le64toh(s[i]->generation) > le64toh(s[best]->generation))
			best = i;
	}
	if (best < 0)
		return -EUCLEAN;
	memcpy(sb, s[best], sizeof(*sb));
	if (copy)
		*copy = best;
	return 0;
}

/* One region of kvt_state_read()'s replay: its record and page records. */
struct kvt_rstate {
	struct kvtier_disk_region rec;
	struct kvtier_disk_page *pages;
	size_t n;
};

static struct kvt_rstate *kvt_rstate_find(struct kvt_rstate *v, size_t n,
					  const char *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!memcmp(v[i].rec.name, name, sizeof(v[i].rec.name)))
			return &v[i];
	return NULL;
}

/* Merge @n page records (increasing index) into @r's. */
static int kvt_rstate_merge(struct kvt_rstate *r, const struct kvtier_disk_page *p,
			    size_t n)
{
	struct kvtier_disk_page *out = malloc((r->n + n + 1) * sizeof(*out));
	size_t i = 0, j = 0, k = 0;

	if (!out)
		return -ENOMEM;
	while (i < r->n || j < n) {
		if (j == n || (i < r->n &&
			       le32toh(r->pages[i].index) < le32toh(p[j].index)))
			out[k++] = r->pages[i++];
		else {
			if (i < r->n && r->pages[i].index == p[j].index)
				i++;
			out[k++] = p[j++];
		}
	}
	free(r->pages);
	r->pages = out;
	r->n = k;
	return 0;
}

/* The transaction of @seq at virtual block @pos of the journal, or NULL. */
static unsigned char *kvt_txn_read(const char *dev, const struct kvtier_disk_super *sb,
				   unsigned long long pos, unsigned long long seq)
{
	unsigned long long jb = le64toh(sb->journal_blocks);
	unsigned long long blk = le64toh(sb->data_start) + le64toh(sb->journal_start) +
				 pos % jb;
	struct kvtier_disk_txn *t;
	unsigned char *buf = malloc(KVTIER_BLOCK_SIZE);
	uint32_t bytes, nb, crc;

	if (!buf || kvt_dev_read(dev, buf, KVTIER_BLOCK_SIZE, blk * KVTIER_BLOCK_SIZE))
		goto bad;
	t = (void *)buf;
	bytes = le32toh(t->bytes);
	nb = le32toh(t->nr_blocks);
	if (le64toh(t->magic) != KVTIER_TXN_MAGIC || le64toh(t->seq) != seq ||
	    le64toh(t->pos) != pos || memcmp(t->uuid, sb->uuid, sizeof(t->uuid)) ||
	    bytes < sizeof(*t) || nb != (bytes + KVTIER_BLOCK_SIZE - 1) / KVTIER_BLOCK_SIZE ||
	    pos % jb + nb > jb)
		goto bad;
	free(buf);
	buf = malloc((size_t)nb * KVTIER_BLOCK_SIZE);
	if (!buf || kvt_dev_read(dev, buf, (size_t)nb * KVTIER_BLOCK_SIZE,
				 blk * KVTIER_BLOCK_SIZE))
		goto bad;
	t = (void *)buf;
	crc = le32toh(t->crc);
	t->crc = 0;
	if (kvt_crc32c(~0U, buf, bytes) != crc)
		goto bad;
	t->crc = htole32(crc);
	return buf;
bad:
	free(buf);
	return NULL;
}

/*
 * The @np CRCs of a region into @crcs (room for @np + 1024): version 4,
 * first what its CRC runs (@run, @nr of them) hold, from their data
 * slots; then the rest from the CRC section (@sect, @sect_len bytes read)
 * at byte *@sec_off, which moves past them. 0, -EUCLEAN or -errno.
 */
static int kvt_ckpt_crcs(const char *dev, const struct kvtier_disk_super *sb,
			 const struct kvtier_disk_extent *run, unsigned long long nr,
			 unsigned long long np, uint32_t *crcs, const uint8_t *sect,
			 unsigned long long sect_len, unsigned long long *sec_off)
{
	unsigned long long k, blocks = 0, held, all = np * 4;
	int ret;

	for (k = 0; k < nr; k++) {
		unsigned long long len = le32toh(run[k].len);

		if (!len || le32toh(run[k].index) != blocks ||
		    (blocks + len) * KVTIER_BLOCK_SIZE > all + KVTIER_BLOCK_SIZE - 1)
			return -EUCLEAN;
		ret = kvt_dev_read(dev, (char *)crcs + blocks * KVTIER_BLOCK_SIZE,
				   len * KVTIER_BLOCK_SIZE,
				   kvt_slot_offset(sb, le64toh(run[k].slot)));
		if (ret)
			return ret;
		blocks += len;
	}
	held = blocks * KVTIER_BLOCK_SIZE;
	if (held >= all)
		return 0;
	if (all - held > sect_len - *sec_off)
		return -EUCLEAN;
	memcpy((char *)crcs + held, sect + *sec_off, all - held);
	*sec_off += all - held;
	return 0;
}

/*
 * Version 3: the page records of the @nr_regions regions @rec of the
 * checkpoint in area @copy, made of their extent records (after @rec) and
 * the CRC section (version 4: each region's CRC runs, then the section;
 * each region's CRCs checked): @nr_pages of them in *@out (malloc'ed).
 * @nr_runs: version 4's CRC run records. 0, -EUCLEAN, -EBADMSG (a
 * region's CRCs), -ENOMEM or -errno.
 */
static int kvt_ckpt_expand(const char *dev, const struct kvtier_disk_super *sb,
			   int copy, const struct kvtier_disk_region *rec,
			   unsigned long long nr_regions, unsigned long long nr_pages,
			   unsigned long long nr_extents, unsigned long long nr_runs,
			   struct kvtier_disk_page **out)
{
	const struct kvtier_disk_extent *e = (const void *)(rec + nr_regions);
	int v4 = le32toh(sb->version) >= 4;
	size_t room = (nr_pages * 4 + KVTIER_BLOCK_SIZE - 1) / KVTIER_BLOCK_SIZE *
		      KVTIER_BLOCK_SIZE;
	struct kvtier_disk_page *p = malloc((nr_pages + 1) * sizeof(*p));
	uint32_t *crcs = malloc((nr_pages + 1024) * 4);
	unsigned long long r, x, done = 0, sec_off = 0;
	uint8_t *sect = malloc(room + 1);
	int ret = -ENOMEM;

	*out = NULL;
	if (!p || !crcs || !sect)
		goto out;
	/* The section holds at most every CRC: read that much of it. */
	ret = room ? kvt_dev_read(dev, sect, room,
				  le64toh(sb->crcs_block[copy]) * KVTIER_BLOCK_SIZE) : 0;
	if (ret)
		goto out;
	for (r = 0; r < nr_regions; r++) {
		unsigned long long np = le64toh(rec[r].nr_pages), start = done;
		unsigned long long nr = v4 ? le32toh(rec[r].nr_crc_runs) : 0;

		ret = -EUCLEAN;
		if (np > nr_pages - start || le64toh(rec[r].nr_extents) > nr_extents ||
		    nr > nr_runs)
			goto out;
		nr_extents -= le64toh(rec[r].nr_extents);
		nr_runs -= nr;
		ret = kvt_ckpt_crcs(dev, sb, e + le64toh(rec[r].nr_extents), nr, np,
				    crcs + start, sect, room, &sec_off);
		if (ret)
			goto out;
		ret = -EUCLEAN;
		for (x = 0; x < le64toh(rec[r].nr_extents); x++, e++) {
			unsigned long long i, len = le32toh(e->len);

			if (!len || len > np - (done - start))
				goto out;
			for (i = 0; i < len; i++, done++) {
				p[done].slot = htole64(le64toh(e->slot) + i);
				p[done].index = htole32(le32toh(e->index) + i);
				p[done].crc = htole32(le32toh(crcs[done]));
			}
		}
		e += nr;
		if (done - start != np)
			goto out;
		ret = -EBADMSG;
		if (kvt_crc32c(~0U, crcs + start, np * 4) != le32toh(rec[r].crcs_crc))
			goto out;
	}
	ret = -EUCLEAN;
	if (done != nr_pages || nr_extents || nr_runs)
		goto out;
	*out = p;
	p = NULL;
	ret = 0;
out:
	free(p);
	free(crcs);
	free(sect);
	return ret;
}

/*
 * The regions of the checkpoint that superblock copy @copy (@sb) names,
 * as page records, into *@vp (malloc'ed, *@np of them). 0, -EBADMSG (a
 * CRC), -EUCLEAN, -ENOMEM or -errno.
 */
static int kvt_ckpt_load(const char *dev, const struct kvtier_disk_super *sb, int copy,
			 struct kvt_rstate **vp, size_t *np)
{
	unsigned long long nr_regions, nr_pages, nr_recs, nr_runs, i, done = 0;
	struct kvtier_disk_page *expanded = NULL;
	const struct kvtier_disk_region *rec;
	const struct kvtier_disk_page *pages;
	struct kvtier_disk_ckpt *hdr;
	struct kvt_rstate *v = NULL;
	size_t n = 0, room, bytes;
	unsigned char *buf;
	int extents, ret;

	bytes = le64toh(sb->ckpt_bytes);
	room = (bytes + KVTIER_BLOCK_SIZE - 1) / KVTIER_BLOCK_SIZE * KVTIER_BLOCK_SIZE;
	if (bytes < sizeof(*hdr) || room > le64toh(sb->meta_blocks) * KVTIER_BLOCK_SIZE)
		return -EUCLEAN;
	buf = malloc(room);
	if (!buf)
		return -ENOMEM;
	/* Area i goes with copy i (version 1: generation % 2, the same). */
	ret = kvt_dev_read(dev, buf, room, (le64toh(sb->meta_start) +
			   copy * le64toh(sb->meta_blocks)) * KVTIER_BLOCK_SIZE);
	if (ret)
		goto out;
	ret = -EBADMSG;
	if (kvt_crc32c(~0U, buf, bytes) != le32toh(sb->ckpt_crc))
		goto out;
	hdr = (void *)buf;
	nr_regions = le64toh(hdr->nr_regions);
	nr_pages = le64toh(hdr->nr_pages);
	/* Version 3: extent records, expanded to page records here. */
	extents = le32toh(sb->version) >= 3;
	nr_recs = extents ? le64toh(hdr->nr_extents) : nr_pages;
	/* Version 4: and CRC run records, each region's after its extents. */
	nr_runs = le32toh(sb->version) >= 4 ? le64toh(hdr->nr_crc_runs) : 0;
	ret = -EUCLEAN;
	if (le64toh(hdr->magic) != KVTIER_CKPT_MAGIC ||
	    le64toh(hdr->generation) != le64toh(sb->generation) ||
	    sizeof(*hdr) + nr_regions * sizeof(*rec) + (nr_recs + nr_runs) * sizeof(*pages) !=
	    bytes)
		goto out;
	rec = (const void *)(hdr + 1);
	pages = (const void *)(rec + nr_regions);
	if (extents) {
		ret = kvt_ckpt_expand(dev, sb, copy, rec, nr_regions, nr_pages, nr_recs,
				      nr_runs, &expanded);
		if (ret)
			goto out;
		pages = expanded;
	}
	ret = -ENOMEM;
	v = calloc(nr_regions + 1, sizeof(*v));
	if (!v)
		goto out;
	for (i = 0; i < nr_regions; i++, n++) {
		v[n].rec = rec[i];
		v[n].rec.nr_extents = 0;
		v[n].rec.crcs_crc = 0;
		v[n].rec.nr_crc_runs = 0;
		ret = -EUCLEAN;
		if (le64toh(rec[i].nr_pages) > nr_pages - done)
			goto out;
		ret = kvt_rstate_merge(&v[n], pages + done, le64toh(rec[i].nr_pages));
		if (ret)
			goto out;
		done += le64toh(rec[i].nr_pages);
	}
	ret = 0;
out:
	if (ret) {
		for (i = 0; v && i < n; i++)
			free(v[i].pages);
		free(v);
		v = NULL;
		n = 0;
	}
	*vp = v;
	*np = n;
	free(expanded);
	free(buf);
	return ret;
}

int kvt_ckpt_check(const char *dev, int copy)
{
	unsigned char blk[KVTIER_BLOCK_SIZE];
	struct kvtier_disk_super sb;
	struct kvt_rstate *v;
	size_t n, i;
	int ret;

	ret = kvt_dev_read(dev, blk, sizeof(blk), (unsigned long long)copy * sizeof(blk));
	if (ret)
		return ret;
	memcpy(&sb, blk, sizeof(sb));
	if (le64toh(sb.magic) != KVTIER_SB_MAGIC)
		return -EUCLEAN;
	ret = kvt_ckpt_load(dev, &sb, copy, &v, &n);
	for (i = 0; i < n; i++)
		free(v[i].pages);
	free(v);
	return ret;
}

int kvt_state_read(const char *dev, struct kvtier_disk_super *sb,
		   unsigned char **out, size_t *len)
{
	unsigned long long gen, i, done, pos, jb;
	struct kvt_rstate *v = NULL;
	struct kvtier_disk_ckpt *hdr;
	const struct kvtier_disk_region *rec;
	const struct kvtier_disk_page *pages;
	size_t n = 0, total = 0;
	unsigned char *p;
	int ret, copy;

	*out = NULL;
	ret = kvt_super_read(dev, sb, &copy);
	if (ret)
		return ret;
	gen = le64toh(sb->generation);
	ret = kvt_ckpt_load(dev, sb, copy, &v, &n);
	if (ret)
		return ret;

	jb = le64toh(sb->journal_blocks);
	pos = le64toh(sb->journal_head);
	while (le32toh(sb->version) >= 2 && jb) {
		const struct kvtier_disk_txn *t;
		unsigned char *tb = kvt_txn_read(dev, sb, pos, gen + 1);
		unsigned long long r;

		if (!tb && pos % jb) {
			pos = (pos / jb + 1) * jb;
			tb = kvt_txn_read(dev, sb, pos, gen + 1);
		}
		if (!tb)
			break;
		t = (const void *)tb;
		rec = (const void *)(t + 1);
		pages = (const void *)(rec + le32toh(t->nr_regions));
		done = 0;
		ret = 0;
		for (r = 0; r < le32toh(t->nr_regions) && !ret; r++) {
			struct kvt_rstate *s = kvt_rstate_find(v, n, rec[r].name);

			if (le32toh(rec[r].flags) & KVTIER_DISK_REGION_DELETED) {
				if (s) {
					free(s->pages);
					*s = v[--n];
				}
				continue;
			}
			if (!s) {
				struct kvt_rstate *nv = realloc(v, (n + 1) * sizeof(*v));

				if (!nv) {
					ret = -ENOMEM;
					break;
				}
				v = nv;
				s = &v[n++];
				memset(s, 0, sizeof(*s));
			}
			s->rec = rec[r];
			ret = kvt_rstate_merge(s, pages + done, le64toh(rec[r].nr_pages));
			done += le64toh(rec[r].nr_pages);
		}
		pos += le32toh(t->nr_blocks);
		gen++;
		free(tb);
		if (ret)
			goto out;
	}

	for (i = 0; i < n; i++)
		total += v[i].n;
	*len = sizeof(*hdr) + n * sizeof(*rec) + total * sizeof(*pages);
	ret = -ENOMEM;
	p = calloc(1, *len);
	if (!p)
		goto out;
	hdr = (void *)p;
	hdr->magic = htole64(KVTIER_CKPT_MAGIC);
	hdr->generation = htole64(gen);
	hdr->nr_regions = htole64(n);
	hdr->nr_pages = htole64(total);
	{
		struct kvtier_disk_region *orec = (void *)(hdr + 1);
		struct kvtier_disk_page *opg = (void *)(orec + n);

		for (i = 0; i < n; i++) {
			orec[i] = v[i].rec;
			orec[i].nr_pages = htole64(v[i].n);
			memcpy(opg, v[i].pages, v[i].n * sizeof(*opg));
			opg += v[i].n;
		}
	}
	*out = p;
	ret = 0;
out:
	for (i = 0; v && i < n; i++)
		free(v[i].pages);
	free(v);
	return ret;
}

unsigned long long kvt_slot_offset(const struct kvtier_disk_super *sb,
				   unsigned long long slot)
{
	return (le64toh(sb->data_start) + slot) * KVTIER_BLOCK_SIZE;
}

int kvt_bind_name(int fd, const char *name, unsigned long long size,
		  unsigned int flags, unsigned int mode)
{
	struct kvtier_region_open ro = { .size = size, .flags = flags, .mode = mode };

	/* As strncpy: a name of sizeof(ro.name) bytes has no NUL (EINVAL). */
	memcpy(ro.name, name, strnlen(name, sizeof(ro.name)));
	return ioctl(fd, KVTIER_IOC_REGION_OPEN, &ro) ? -errno : 0;
}

int kvt_unlink_name(int fd, const char *name)
{
	struct kvtier_region_name rn = { { 0 } };

	strncpy(rn.name, name, sizeof(rn.name) - 1);
	return ioctl(fd, KVTIER_IOC_REGION_UNLINK, &rn) ? -errno : 0;
}

long long kvt_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

int kvt_reap(pid_t pid, double secs, int *status)
{
	long long end = kvt_now_ms() + (long long)(secs * 1000);

	while (kvt_now_ms() < end) {
		if (waitpid(pid, status, WNOHANG) == pid)
			return 0;
		usleep(2000);
	}
	return -1;
}

const char *kvt_repo_root(void)
{
	static char repo[PATH_MAX];
	ssize_t n;
	int i;

	if (*repo)
		return repo;
	n = readlink("/proc/self/exe", repo, sizeof(repo) - 1);
	if (n <= 0)
		return NULL;
	repo[n] = '\0';
	for (i = 0; i < 3; i++)
		*strrchr(repo, '/') = '\0';
	return repo;
}

int kvt_kept_seeds(const char *test, struct kvt_seed *out)
{
	const char *path = getenv("KVTIER_FUZZ_SEEDS");
	char buf[PATH_MAX], line[512], name[64];
	unsigned long long seed, iters;
	unsigned int lineno = 0;
	int n = 0, len;
	FILE *f;

	if (!path || !*path) {
		snprintf(buf, sizeof(buf), "%s/tests/fuzz-seeds.txt", kvt_repo_root());
		path = buf;
	}
	f = fopen(path, "re");
	if (!f) {
		fprintf(stderr, "# %s: %s (the kept fuzz seeds)\n", path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		lineno++;
		len = 0;
		sscanf(line, " %n", &len);
		if (!line[len] || line[len] == '#')
			continue;
		if (sscanf(line, "%63s %llu %llu", name, &seed, &iters) != 3 || !seed) {
			fprintf(stderr, "# %s:%u: not 'TEST SEED ITERATIONS WHY'\n", path, lineno);
			n = -1;
			break;
		}
		if (strcmp(name, test))
			continue;
		if (n == KVT_MAX_SEEDS) {
			fprintf(stderr, "# %s: more than %d seeds for %s\n", path,
				KVT_MAX_SEEDS, test);
			n = -1;
			break;
		}
		out[n].seed = seed;
		out[n++].iters = iters;
	}
	fclose(f);
	if (!n)
		fprintf(stderr, "# %s keeps no seed for %s\n", path, test);
	return n ? n : -1;
}

long long kvt_region_column(unsigned long long id, const char *col)
{
	char line[1024], *tok, *save;
	int want = -1, i;
	long long v = -1;
	FILE *f = fopen("/sys/kernel/debug/kvtier/kvtier0/regions", "re");

	if (!f)
		return -1;
	if (!fgets(line, sizeof(line), f) || !fgets(line, sizeof(line), f)) {
		fclose(f);
		return -1;
	}
	line[strcspn(line, "\n")] = 0;
	for (i = 0, tok = strtok_r(line, " ", &save); tok;
	     i++, tok = strtok_r(NULL, " ", &save))
		if (!strcmp(tok, col))
			want = i;
	while (want >= 0 && v < 0 && fgets(line, sizeof(line), f)) {
		if (id && strtoull(line, NULL, 10) != id)
			continue;
		for (i = 0, tok = strtok_r(line, " \n", &save); tok && i < want;
		     i++, tok = strtok_r(NULL, " \n", &save))
			;
		if (tok)
			v = strtoll(tok, NULL, 10);
		if (!id)
			break;
	}
	fclose(f);
	return v;
}

long long kvt_time_scale(void)
{
	const char *v = getenv("KVTIER_TIME_SCALE");
	long long s = v ? atoll(v) : 1;

	return s >= 1 ? s : 1;
}

static sigjmp_buf kvt_sigbus_jmp;

static void kvt_on_sigbus(int sig)
{
	(void)sig;
	siglongjmp(kvt_sigbus_jmp, 1);
}

int kvt_touch_or_sigbus(volatile unsigned char *p)
{
	static volatile int got;

	got = 0;
	signal(SIGBUS, kvt_on_sigbus);
	if (!sigsetjmp(kvt_sigbus_jmp, 1))
		(void)p[0];
	else
		got = 1;
	signal(SIGBUS, SIG_DFL);
	return got;
}

int kvt_store_or_sigbus(volatile unsigned char *p, unsigned char v)
{
	static volatile int got;

	got = 0;
	signal(SIGBUS, kvt_on_sigbus);
	if (!sigsetjmp(kvt_sigbus_jmp, 1))
		p[0] = v;
	else
		got = 1;
	signal(SIGBUS, SIG_DFL);
	return got;
}

int kvt_become(uid_t uid, gid_t gid, const gid_t *groups, int ngroups)
{
	if (ngroups >= 0 && setgroups(ngroups, groups))
		return -errno;
	if (setresgid(gid, gid, gid) || setresuid(uid, uid, uid))
		return -errno;
	return 0;
}

int kvt_as_user(uid_t uid, gid_t gid, const gid_t *groups, int ngroups,
		int (*fn)(void *), void *arg)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		if (kvt_become(uid, gid, groups, ngroups))
			_exit(99);
		_exit(fn(arg));
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

int kvt_tier_open(int id, int flags)
{
	char path[32];

	snprintf(path, sizeof(path), "/dev/kvtier%d", id);
	return open(path, flags | O_CLOEXEC);
}

void *kvt_map_region(int fd, size_t len, int prot)
{
	return mmap(NULL, len, prot, MAP_SHARED, fd, 0);
}

const char *kvt_dm_missing(const char *target)
{
	static char why[64];

	if (system("command -v dmsetup >/dev/null"))
		return "dmsetup not installed";
	if (kvt_run("modprobe -q dm-%s 2>/dev/null; dmsetup targets 2>/dev/null | grep -qw %s",
		    target, target)) {
		snprintf(why, sizeof(why), "no dm-%s target", target);
		return why;
	}
	return NULL;
}

int kvt_dm_linear(const char *name, const char *dev)
{
	return kvt_run("dmsetup create %s --table '0 %llu linear %s 0'", name,
		       kvt_dev_size(dev) >> 9, dev);
}

int kvt_dm_table(const char *name, const char *dev, const char *fmt, ...)
{
	char target[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(target, sizeof(target), fmt, ap);
	va_end(ap);
	return kvt_run("dmsetup suspend %s && dmsetup load %s --table '0 %llu %s' 2>/dev/null && dmsetup resume %s || { dmsetup resume %s; false; }",
		       name, name, kvt_dev_size(dev) >> 9, target, name, name);
}

int kvt_dm_remove(const char *name)
{
	return kvt_run("dmsetup remove %s", name);
}

int kvt_jsnap_take(const char *dev, struct kvt_jsnap *j)
{
	int ret = kvt_super_read(dev, &j->sb, NULL);

	if (ret)
		return ret;
	j->meta_len = le64toh(j->sb.data_start) * PAGE;
	j->jr_off = (le64toh(j->sb.data_start) + le64toh(j->sb.journal_start)) * PAGE;
	j->jr_len = le64toh(j->sb.journal_blocks) * PAGE;
	j->meta = malloc(j->meta_len);
	j->jr = malloc(j->jr_len + 1);
	if (!j->meta || !j->jr)
		return -ENOMEM;
	ret = kvt_dev_read(dev, j->meta, j->meta_len, 0);
	/* Version 1 has no journal. */
	if (ret || !j->jr_len)
		return ret;
	return kvt_dev_read(dev, j->jr, j->jr_len, j->jr_off);
}

int kvt_jsnap_put(const char *dev, const struct kvt_jsnap *j)
{
	int ret = kvt_dev_write(dev, j->meta, j->meta_len, 0);

	if (ret || !j->jr_len)
		return ret;
	return kvt_dev_write(dev, j->jr, j->jr_len, j->jr_off);
}

void kvt_jsnap_free(struct kvt_jsnap *j)
{
	free(j->meta);
	free(j->jr);
}
