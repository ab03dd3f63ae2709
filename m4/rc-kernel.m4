# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#
# Locating the target kernel's build tree and probing its API.
#
# Kernel APIs move between releases (vm_flags became read-only in 6.3,
# ...).  Rather than compare
# version numbers, each difference the module cares about gets one probe:
# a tiny module compiled against the target headers through Kbuild.  Each
# probe that succeeds adds -DHAVE_<NAME> to KERNEL_DEFS, which kmod/Kbuild
# passes to the compiler.  KMAKE is the make used for Kbuild; the VM harness
# points it at a wrapper when a kernel needs another toolchain.

# RC_LINUX: --with-linux, --with-linux-obj, --with-moduledir, --disable-kmod,
# KMAKE.
AC_DEFUN([RC_LINUX], [
	AC_ARG_ENABLE([kmod],
		[AS_HELP_STRING([--disable-kmod], [do not build regcache.ko])],
		[], [enable_kmod=auto])
	AC_ARG_WITH([linux],
		[AS_HELP_STRING([--with-linux=DIR], [kernel source (headers) tree @<:@running kernel's build dir, else Debian 6.1 headers@:>@])],
		[LINUX=$withval], [LINUX=])
	AC_ARG_WITH([linux-obj],
		[AS_HELP_STRING([--with-linux-obj=DIR], [kernel object (build) tree @<:@same as --with-linux@:>@])],
		[LINUX_OBJ=$withval], [LINUX_OBJ=])
	dnl make install puts the module here.  The default is left for make
	dnl to expand, so it follows LINUX_VERSION; it ignores --prefix (the
	dnl module must land where modprobe looks), which is why distcheck
	dnl passes a directory under its own install tree instead.
	AC_ARG_WITH([moduledir],
		[AS_HELP_STRING([--with-moduledir=DIR], [where make install puts regcache.ko @<:@/lib/modules/KVER/extra@:>@])],
		[moduledir=$withval], [moduledir='/lib/modules/$(LINUX_VERSION)/extra'])
	AC_SUBST([moduledir])
	AC_ARG_VAR([KMAKE], [make program used to run Kbuild @<:@make@:>@])
	AS_IF([test -z "$KMAKE"], [KMAKE=make])

	AS_IF([test "x$enable_kmod" != xno], [
		AC_MSG_CHECKING([for the kernel build tree])
		AS_IF([test -z "$LINUX"], [
			rc_running=/lib/modules/`uname -r`/build
			AS_IF([test -f "$rc_running/Makefile"], [LINUX=$rc_running], [
				for rc_dir in `ls -d /usr/src/linux-headers-6.1*-amd64 2>/dev/null | sort -V`; do
					LINUX=$rc_dir
				done
			])
		])
		AS_IF([test -z "$LINUX_OBJ"], [LINUX_OBJ=$LINUX])
		AS_IF([test -n "$LINUX_OBJ" && test -f "$LINUX_OBJ/Makefile"], [
			AC_MSG_RESULT([$LINUX_OBJ])
			AC_MSG_CHECKING([kernel release])
			LINUX_VERSION=`sed -n 's/^#define UTS_RELEASE "\(.*\)"/\1/p' "$LINUX_OBJ/include/generated/utsrelease.h" 2>/dev/null`
			AC_MSG_RESULT([${LINUX_VERSION:-unknown}])
			enable_kmod=yes
		], [
			AC_MSG_RESULT([not found])
			AS_IF([test "x$enable_kmod" = xyes],
				[AC_MSG_ERROR([no kernel build tree; install linux-headers-amd64 or pass --with-linux=DIR])])
			AC_MSG_WARN([no kernel build tree found: regcache.ko will not be built])
			enable_kmod=no
		])
	])
	AM_CONDITIONAL([BUILD_KMOD], [test "x$enable_kmod" = xyes])
	AC_SUBST([LINUX])
	AC_SUBST([LINUX_OBJ])
	AC_SUBST([LINUX_VERSION])
	AC_SUBST([KERNEL_DEFS])
])

# RC_LINUX_TRY_COMPILE(NAME, INCLUDES, BODY, [IF-YES], [IF-NO])
#
# Compile INCLUDES + a function containing BODY as an object of an
# out-of-tree module against $LINUX_OBJ.  Kbuild builds with
# -Werror=implicit-function-declaration and -Werror=incompatible-pointer-types
# on the kernels we target, so a missing symbol or a changed prototype fails.
AC_DEFUN([RC_LINUX_TRY_COMPILE], [
	rc_pdir=`pwd`/conftest-kernel/$1
	rm -rf "$rc_pdir"
	$MKDIR_P "$rc_pdir"
	cat >"$rc_pdir/probe.c" <<_RC_EOF
#include <linux/module.h>
$2
int rc_probe(void);
int rc_probe(void)
{
$3
	return 0;
}
MODULE_LICENSE("GPL");
_RC_EOF
	echo 'obj-m := probe.o' >"$rc_pdir/Kbuild"
	dnl config.log keeps the build log of a probe that failed (autoconf
	dnl removes conftest* on exit).
	AS_IF([$KMAKE -C "$LINUX_OBJ" M="$rc_pdir" modules >"$rc_pdir/build.log" 2>&1],
		[$4], [sed 's/^/| /' "$rc_pdir/build.log" >&AS_MESSAGE_LOG_FD
		$5])
])

# RC_LINUX_PROBE(NAME, DESCRIPTION, INCLUDES, BODY)
# Adds -DHAVE_NAME to KERNEL_DEFS when BODY compiles.
AC_DEFUN([RC_LINUX_PROBE], [
	AC_MSG_CHECKING([kernel: $2])
	RC_LINUX_TRY_COMPILE([$1], [$3], [$4], [
		AC_MSG_RESULT([yes])
		KERNEL_DEFS="$KERNEL_DEFS -DHAVE_$1"
	], [
		AC_MSG_RESULT([no])
	])
])

# The probes regcache.ko needs.  Add one per kernel API difference the
# module's code uses, and drop a probe when its HAVE_ macro is no longer
# tested anywhere in kmod/ (the module pins nothing itself, so the
# pin_user_pages() probe went).
AC_DEFUN([RC_LINUX_PROBES], [
	AS_IF([test "x$enable_kmod" = xyes], [
		dnl The module is MMU interval notifiers and nothing else: a kernel
		dnl without them gets a sentence, not a failed SANITY build.
		AC_MSG_CHECKING([kernel: CONFIG_MMU_NOTIFIER])
		RC_LINUX_TRY_COMPILE([MMU_NOTIFIER], [#ifndef CONFIG_MMU_NOTIFIER
#error "CONFIG_MMU_NOTIFIER is not set"
#endif], [], [AC_MSG_RESULT([yes])], [
			AC_MSG_RESULT([no])
			AC_MSG_ERROR([the kernel at $LINUX_OBJ is built without CONFIG_MMU_NOTIFIER, which regcache.ko needs (it watches memory with MMU interval notifiers); use a kernel built with it (a kernel with KVM or an RDMA driver with on-demand paging selects it), or configure --disable-kmod])
		])
		dnl A probe that must pass: proves the mechanism and the toolchain.
		RC_LINUX_TRY_COMPILE([SANITY], [#include <linux/mmu_notifier.h>],
			[	struct mmu_interval_notifier *n = NULL;
	(void)mmu_interval_read_begin(n);], [], [
			AC_MSG_ERROR([cannot build a module against $LINUX_OBJ (see conftest-kernel/SANITY/build.log)])
		])
		RC_LINUX_PROBE([VM_FLAGS_SET], [vm_flags_set()],
			[#include <linux/mm.h>],
			[	vm_flags_set((struct vm_area_struct *)NULL, VM_DONTCOPY);])
		RC_LINUX_PROBE([MMU_NOTIFY_EXCLUSIVE], [MMU_NOTIFY_EXCLUSIVE],
			[#include <linux/mmu_notifier.h>],
			[	enum mmu_notifier_event e = MMU_NOTIFY_EXCLUSIVE; (void)e;])
		rm -rf conftest-kernel
	])
])
