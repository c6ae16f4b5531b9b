# SPDX-License-Identifier: GPL-2.0
#
# kvtier top-level build. See README.md and Documentation/admin-guide/
# kvtier-install.rst.
#
#   make                 module (against KDIR), libraries and tools
#   make check           build for both supported kernels, boot each in QEMU,
#                        run the test suite, print one summary line
#   make check-full      everything: check with long fuzzing and 100 crash
#                        cuts, check-fabrics, check-debug (hours)
#   make fuzz            kvtier_fuzz_test with fresh random seeds for
#                        KVTIER_FUZZ_SECONDS (600) per kernel; prints the
#                        replay line of any failure (tests/fuzz.sh; make
#                        check fuzzes only with tests/fuzz-seeds.txt)
#   make check-debug     the suite and the persistence tests under a 6.12 debug
#                        kernel (KASAN, lockdep, KFENCE, kmemleak, fault
#                        injection) built once and cached outside the tree
#                        (tests/debug-kernel/; long, not part of make check)
#   make check-persist   only the multi-boot persistence tests, every kernel
#                        (tests/persist/run.sh)
#   make check-fabrics   the data-path tests with the tier on an nvme-tcp
#                        namespace (an nvmet target in the guest), every
#                        kernel (tests/fabrics/run.sh; KVTIER_FABRICS="tcp
#                        loop" adds nvme-loop where the kernel has it)
#   make demo            boot a VM and show a tier doing its job
#   make vm-test T=TEST [KVER=6.1|6.12]  one boot running the named tests
#                        (PROGRAM or PROGRAM:FIXTURE.NAME; tests/vm-test.sh)
#   make bench           kvtier vs raw NVMe, swap and page cache in one VM boot
#                        (tests/bench/run.sh; Documentation/performance.rst)
#   make bench-reuse     restore a persistent region after a module reload,
#                        against fio on the same namespace (run.sh --reuse)
#   make bench-ttft      time to first token of a PyTorch Llama: recompute vs
#                        restoring the prompt's KV from a kvstore, after a
#                        module reload (run.sh --ttft; performance.rst)
#   make bench-ab        restore and write-back of two module builds (main
#                        and the working tree) in one boot (run.sh --ab)
#   make bench-fabrics   restore bandwidth and fault latency over nvme-tcp
#                        (and nvme-loop) against the local namespace, one
#                        boot (tests/fabrics/bench.sh)
#   make install         module via DKMS, uapi header, libraries (and the
#                        CUDA shim libkvtier-cuda.so where CUDA headers are),
#                        kvtierctl
#                        (with its bash completion),
#                        man pages, udev rule, kvtier.service
#   make uninstall       undo make install (same PREFIX, DESTDIR)
#   make deb             the Debian packages in $(BUILD)/deb/ (debian/; lintian)
#   make checkpatch      checkpatch.pl --strict over kmod/ and include/

KDIR ?= /lib/modules/$(shell uname -r)/build
VERSION := $(shell sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' dkms.conf)
BUILD ?= $(CURDIR)/build

PREFIX ?= /usr/local
DESTDIR ?=

.PHONY: all module module-clean lib tools tests clean check demo install \
	dkms-install checkpatch modules-all deps bench check-persist bench-reuse bench-ttft \
	check-debug check-fabrics bench-fabrics check-full bench-ab fuzz vm-test deb uninstall

# The CUDA shim where the CUDA headers are (cuda/Makefile, kvtier-cuda(7)).
CUDA_HOME ?= /usr/local/cuda
CUDA_SHIM := $(if $(wildcard $(CUDA_HOME)/include/cuda.h),cuda)

all: module lib tools $(CUDA_SHIM)

# --- kernel module ----------------------------------------------------------

# compat_generated.h depends on which kernel KDIR is: remember it, and probe
# again when it changes.
KDIR_STAMP := kmod/.conftest-kdir
$(shell mkdir -p kmod; [ "$$(cat $(KDIR_STAMP) 2>/dev/null)" = "$(KDIR)" ] || echo "$(KDIR)" > $(KDIR_STAMP))

kmod/compat_generated.h: $(KDIR_STAMP) kmod/conftest.sh $(wildcard kmod/conftest/*.c)
	kmod/conftest.sh $(KDIR) $@

module: kmod/compat_generated.h
	$(MAKE) -C $(KDIR) M=$(CURDIR) modules

module-clean:
	-$(MAKE) -C $(KDIR) M=$(CURDIR) clean
	rm -f kmod/compat_generated.h $(KDIR_STAMP)

# Build for every supported kernel (tests/vm/kernels.sh) at W=1 in a private
# copy of the sources, failing on any compiler warning.
modules-all:
	tests/build-modules.sh $(BUILD)

# --- user space -------------------------------------------------------------

lib:
	$(MAKE) -C lib

tools: lib
	$(MAKE) -C tools

.PHONY: cuda
cuda: lib
	$(MAKE) -C cuda CUDA_HOME=$(CUDA_HOME)

tests: lib
	$(MAKE) -C tests BUILD=$(BUILD)

# --- test rig ---------------------------------------------------------------

# Debian packages the build and the VM rig need, installed if missing
# (tests/deps.sh). check and demo run it before building anything, so a fresh
# Debian 12 machine needs nothing else; hence the recursive make below rather
# than prerequisites, whose order -j would not keep.
deps:
	tests/deps.sh

check: deps
	$(MAKE) lib tools
	tests/check.sh $(BUILD)

# Reboot, host-side corruption and crash cuts for each kernel, as make check
# runs them; KVTIER_PERSIST_TESTS (e.g. "crash"), KVTIER_CRASH_SEED and
# KVTIER_CRASH_CUTS apply. Results in $(BUILD)/persist-<kver>/.
check-persist: deps
	tests/build-modules.sh $(BUILD)
	$(MAKE) -C tests BUILD=$(BUILD) $(BUILD)/tests/kvt_persist_tool
	tests/vm/kernels.sh list | { rc=0; while read -r short kver; do \
		tests/persist/run.sh $(BUILD) $$kver $(BUILD)/persist-$$kver \
			$${KVTIER_PERSIST_TESTS-} </dev/null || rc=1; \
	done; exit $$rc; }

# The data-path tests over NVMe over Fabrics, one boot per kernel and
# transport; results in $(BUILD)/fabrics-<transport>-<kver>/.
check-fabrics: deps
	$(MAKE) lib tools
	tests/build-modules.sh $(BUILD)
	$(MAKE) -C tests BUILD=$(BUILD)
	tests/fabrics/run.sh $(BUILD)

# The debug kernel (tests/debug-kernel/build.sh: built once into
# $${KVTIER_DEBUG_KERNEL_CACHE:-/var/cache/kvtier/debug-kernel}, resumable,
# installs its own build packages), then the suite and the persistence tests
# under it (tests/debug-kernel/check.sh). Not part of check or CI.
check-debug: deps
	$(MAKE) lib tools
	tests/debug-kernel/check.sh $(BUILD)

# Fresh random seeds (tests/fuzz.sh): what make check's kept seeds cannot
# find. KVTIER_FUZZ_SECONDS per kernel.
fuzz: deps
	$(MAKE) lib tools
	tests/fuzz.sh $(BUILD)

# Everything, for a release or a change to the module's error paths (hours,
# not for CI): make check with 100 crash cuts at a fresh seed, an hour of
# random fuzzing per kernel with long rounds, then the fabrics tests and
# the debug kernel run.
# Each part runs even if an earlier one failed; the status is the worst.
check-full: deps
	rc=0; \
	KVTIER_FUZZ_RANDOM=1 KVTIER_CRASH_CUTS=100 $(MAKE) check || rc=1; \
	KVTIER_FUZZ_SECONDS=3600 KVTIER_FUZZ_ITERS=200000 \
		KVTIER_FUZZ_SYSFS_ITERS=20000 KVTIER_FUZZ_FLIPS=1000 \
		$(MAKE) fuzz || rc=1; \
	$(MAKE) check-fabrics || rc=1; \
	$(MAKE) check-debug || rc=1; \
	exit $$rc

demo: deps
	$(MAKE) lib tools
	tests/demo.sh $(BUILD)

# Debian packages (debian/; debhelper and dh-dkms), built from a copy of the
# tree's tracked and untracked-but-not-ignored files in $(BUILD)/deb/, with
# lintian over the result (an error or a warning fails). Without CUDA headers the CUDA shim's package is
# left out (build profile pkg.kvtier.nocuda).
DEB_PROFILES := $(if $(CUDA_SHIM),,pkg.kvtier.nocuda)
deb:
	rm -rf $(BUILD)/deb
	mkdir -p $(BUILD)/deb/kvtier-$(VERSION)
	git ls-files -co --exclude-standard -z | \
		tar --null -T - -cf - | tar -xf - -C $(BUILD)/deb/kvtier-$(VERSION)
	cd $(BUILD)/deb/kvtier-$(VERSION) && \
		CUDA_HOME=$(CUDA_HOME) DEB_BUILD_PROFILES="$(DEB_PROFILES)" \
		dpkg-buildpackage -us -uc -b $(if $(DEB_PROFILES),-P$(DEB_PROFILES))
	lintian --fail-on error,warning $(BUILD)/deb/*.changes
	@ls $(BUILD)/deb/*.deb

# One boot of one kernel running the named tests (tests/vm-test.sh):
# make vm-test T="kvtier_region_test:tier.mmap_round_trip" KVER=6.1
KVER ?= 6.12
vm-test: deps
	@test -n "$(T)" || { echo 'make vm-test T="PROGRAM[:FIXTURE.NAME] ..." [KVER=6.1|6.12]' >&2; exit 2; }
	$(MAKE) lib tools
	tests/vm-test.sh $(BUILD) $(KVER) $(T)

bench: deps
	tests/bench/run.sh $(BUILD)

bench-fabrics: deps
	tests/build-modules.sh $(BUILD)
	tests/fabrics/bench.sh $(BUILD)

bench-reuse: deps
	tests/bench/run.sh --reuse $(BUILD)

bench-ttft: deps
	$(MAKE) lib
	tests/bench/run.sh --ttft $(BUILD)

bench-ab: deps
	tests/bench/run.sh --ab $(BUILD)

checkpatch:
	tests/checkpatch.sh $(BUILD)

# --- install ----------------------------------------------------------------

install: lib tools dkms-install
	$(MAKE) -C lib install PREFIX=$(PREFIX) DESTDIR=$(DESTDIR)
	$(MAKE) -C tools install PREFIX=$(PREFIX) DESTDIR=$(DESTDIR)
	$(MAKE) -C cuda install PREFIX=$(PREFIX) DESTDIR=$(DESTDIR) CUDA_HOME=$(CUDA_HOME)
	install -D -m 0644 udev/60-kvtier.rules $(DESTDIR)/etc/udev/rules.d/60-kvtier.rules
	if [ -z "$(DESTDIR)" ]; then \
		ldconfig; \
		getent group kvtier >/dev/null || groupadd --system kvtier; \
	fi

# DKMS builds from its own copy in /usr/src/kvtier-VERSION: give it only the
# files the module needs (never build/, which holds VM images).
# It builds for DKMS_KERNELS: the running kernel when its headers are
# installed, else every kernel that has them (status 77 from dkms: excluded
# by dkms.conf's BUILD_EXCLUSIVE_*, skipped). AUTOINSTALL covers kernels
# installed later.
DKMS_KERNELS ?= $(shell k=$$(uname -r); \
	if [ -e /lib/modules/$$k/build/Makefile ]; then echo $$k; else \
	for d in /lib/modules/*/build/Makefile; do [ -e "$$d" ] && \
	basename "$$(dirname "$$(dirname "$$d")")"; done; fi)
dkms-install:
	rm -rf $(DESTDIR)/usr/src/kvtier-$(VERSION)
	mkdir -p $(DESTDIR)/usr/src/kvtier-$(VERSION)
	tar -cf - --exclude='*.o' --exclude='*.ko' --exclude='.*.cmd' \
		--exclude='*.mod*' --exclude=compat_generated.h \
		--exclude=.conftest-kdir Kbuild Makefile dkms.conf include kmod \
		| tar -xf - -C $(DESTDIR)/usr/src/kvtier-$(VERSION)
	if [ -z "$(DESTDIR)" ]; then \
		dkms remove kvtier/$(VERSION) --all >/dev/null 2>&1 || true; \
		dkms add kvtier/$(VERSION) || exit 1; \
		built= skipped=; \
		for k in $(DKMS_KERNELS); do \
			dkms install kvtier/$(VERSION) -k $$k; rc=$$?; \
			case $$rc in \
			0) built="$$built $$k" ;; \
			77) skipped="$$skipped $$k" ;; \
			*) exit $$rc ;; \
			esac; \
		done; \
		[ -z "$$skipped" ] || echo "kvtier: not built for$$skipped: kvtier needs Linux 6.1 or later with CONFIG_BLOCK and CONFIG_MMU (dkms.conf BUILD_EXCLUSIVE_*)" >&2; \
		[ -n "$$built" ] || { echo "kvtier: built for no kernel (kernels with headers:$(if $(DKMS_KERNELS), $(DKMS_KERNELS), none)); install headers of a 6.1 or later kernel" >&2; exit 1; }; \
	fi

# Undo make install (same PREFIX and DESTDIR): the DKMS builds and sources,
# the library, header, tools, shim, man pages, completion, systemd unit and
# udev rule. /etc/kvtier is the operator's and stays.
# The kvtier group stays (files may still belong to it: groupdel kvtier).
uninstall:
	if [ -z "$(DESTDIR)" ]; then dkms remove kvtier/$(VERSION) --all 2>/dev/null || true; fi
	rm -rf $(DESTDIR)/usr/src/kvtier-$(VERSION)
	rm -f $(DESTDIR)$(PREFIX)/lib/libkvtier.so $(DESTDIR)$(PREFIX)/lib/libkvtier.so.* \
		$(DESTDIR)$(PREFIX)/lib/libkvtier-cuda.so \
		$(DESTDIR)$(PREFIX)/include/kvtier.h \
		$(DESTDIR)$(PREFIX)/include/linux/kvtier.h \
		$(DESTDIR)$(PREFIX)/include/linux/kvtier_format.h \
		$(DESTDIR)$(PREFIX)/sbin/kvtierctl \
		$(addprefix $(DESTDIR)$(PREFIX)/share/man/man3/,$(notdir $(wildcard lib/man/*.3))) \
		$(DESTDIR)$(PREFIX)/share/man/man7/kvtier-pool.7 \
		$(DESTDIR)$(PREFIX)/share/man/man7/kvtier-io.7 \
		$(DESTDIR)$(PREFIX)/share/man/man7/kvtier-cuda.7 \
		$(DESTDIR)$(PREFIX)/share/man/man8/kvtierctl.8 \
		$(DESTDIR)$(PREFIX)/share/man/man5/kvtier.conf.5 \
		$(DESTDIR)$(PREFIX)/share/man/man5/kvtierfs.5 \
		$(DESTDIR)$(PREFIX)/lib/systemd/system/kvtier.service \
		$(DESTDIR)$(PREFIX)/lib/systemd/system/kvtier-metrics.service \
		$(DESTDIR)$(PREFIX)/lib/systemd/system/kvtier-metrics.timer \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions/kvtierctl \
		$(DESTDIR)/etc/udev/rules.d/60-kvtier.rules
	if [ -z "$(DESTDIR)" ]; then ldconfig; fi

clean: module-clean
	$(MAKE) -C lib clean
	$(MAKE) -C tools clean
	$(MAKE) -C cuda clean
	$(MAKE) -C tests clean BUILD=$(BUILD)
