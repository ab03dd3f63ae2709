// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * budget_count.c - count what a program executes between two markers, by
 * single-stepping it with ptrace.
 *
 *   budget_count PROGRAM [ARGS...]
 *
 * The program runs with BUDGET_TRACE=1 in its environment and marks the
 * stretch to count with an int3 before and one after it (budget_probe.c
 * does so around its measured loop).  Between the two, every instruction
 * of the marking thread is stepped and classified; the counts go to
 * stdout as one line:
 *
 *   insns N locked N syscalls N plt N
 *
 * insns: instructions executed in user space (a REP-prefixed string
 * instruction counts once per iteration, as the CPU traps after each);
 * locked: LOCK-prefixed instructions and XCHG with a memory operand
 * (implicitly locked); syscalls: SYSCALL instructions (a vDSO call such
 * as clock_gettime makes none, as natively); plt: RIP-relative indirect
 * jumps (jmp *disp(%rip)), the form of every PLT stub, so a call into
 * another library counts one.  Kernel work is one step per system call
 * and is not counted.  Other threads of the program run untraced.
 *
 * Why not callgrind: valgrind 3.19 (Debian 12) does not know the
 * userfaultfd system call, so the uffd monitor cannot run under it; and
 * neither the build machine nor the TCG guests have a PMU for
 * perf stat -e instructions:u.  Single-stepping needs neither and gives
 * the same count on every run of the same code.
 *
 * Exit status: the program's own (77 stays a skip); 77 as well when
 * ptrace is refused; 1 when the markers were not seen in pairs or the
 * trace failed.  x86-64 only.
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/types.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#if !defined(__x86_64__)
int main(void)
{
	fprintf(stderr, "budget_count: x86-64 only\n");
	return 77;
}
#else

enum {
	K_PLAIN = 1,
	K_LOCKED = 2,
	K_SYSCALL = 4,
	K_PLT = 8,
	K_MARK = 16,
};

/* A decode cache: text does not change under us, so each address is
 * read and classified once (two PEEKTEXTs saved per step). */
#define CACHE_BITS	16
struct slot {
	uint64_t rip;
	uint8_t kind;
};
static struct slot cache[1U << CACHE_BITS];

static int peek(pid_t pid, uint64_t addr, uint8_t *buf, size_t len)
{
	size_t off;

	for (off = 0; off < len; off += sizeof(long)) {
		long w;

		errno = 0;
		w = ptrace(PTRACE_PEEKTEXT, pid, (void *)(addr + off), NULL);
		if (errno)
			return -errno;
		memcpy(buf + off, &w, sizeof(w));
	}
	return 0;
}

/*
 * What the instruction at b is, as far as the counts care: prefixes
 * (legacy, then REX) are skipped, LOCK remembered; then XCHG r/m (86,
 * 87 with a memory operand), SYSCALL (0f 05), jmp *disp32(%rip) (ff /4
 * with modrm 25) and int3 (cc).
 */
static uint8_t classify(const uint8_t *b)
{
	bool lock = false;
	size_t i = 0;
	uint8_t k = K_PLAIN;

	for (; i < 14; i++) {
		uint8_t c = b[i];

		if (c == 0xf0)
			lock = true;
		else if (c == 0xf2 || c == 0xf3 || c == 0x2e || c == 0x36 ||
			 c == 0x3e || c == 0x26 || c == 0x64 || c == 0x65 ||
			 c == 0x66 || c == 0x67)
			continue;
		else
			break;
	}
	if (i < 15 && (b[i] & 0xf0) == 0x40)
		i++;			/* REX */
	if (lock)
		k |= K_LOCKED;
	switch (b[i]) {
	case 0x86:
	case 0x87:
		if ((b[i + 1] >> 6) != 3)
			k |= K_LOCKED;
		break;
	case 0x0f:
		if (b[i + 1] == 0x05)
			k |= K_SYSCALL;
		break;
	case 0xff:
		if (b[i + 1] == 0x25)
			k |= K_PLT;
		break;
	case 0xcc:
		if (i == 0)
			k = K_MARK;
		break;
	default:
		break;
	}
	return k;
}

static int kind_at(pid_t pid, uint64_t rip, uint8_t *kind)
{
	struct slot *s = &cache[(rip ^ (rip >> CACHE_BITS)) &
				((1U << CACHE_BITS) - 1)];
	uint8_t b[24];
	int ret;

	if (s->rip == rip && s->kind) {
		*kind = s->kind;
		return 0;
	}
	ret = peek(pid, rip, b, 16);
	if (ret)
		return ret;
	s->rip = rip;
	s->kind = classify(b);
	*kind = s->kind;
	return 0;
}

static uint64_t get_rip(pid_t pid)
{
	errno = 0;
	return (uint64_t)ptrace(PTRACE_PEEKUSER, pid,
				(void *)offsetof(struct user_regs_struct, rip),
				NULL);
}

/* Wait for the next stop of pid; its signal, 0 on exit (*status set). */
static int wait_stop(pid_t pid, int *status)
{
	for (;;) {
		if (waitpid(pid, status, __WALL) < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (WIFEXITED(*status) || WIFSIGNALED(*status))
			return 0;
		if (WIFSTOPPED(*status))
			return WSTOPSIG(*status);
	}
}

/* Was this SIGTRAP stop the program's int3 (not a single-step trap)? */
static bool at_marker(pid_t pid)
{
	siginfo_t si;

	if (ptrace(PTRACE_GETSIGINFO, pid, NULL, &si))
		return false;
	return si.si_signo == SIGTRAP && si.si_code == SI_KERNEL;
}

int main(int argc, char **argv)
{
	unsigned long long insns = 0, locked = 0, syscalls = 0, plt = 0;
	int status, sig, segments = 0;
	bool stepping = false;
	pid_t pid;

	if (argc < 2) {
		fprintf(stderr, "usage: budget_count PROGRAM [ARGS...]\n");
		return 2;
	}
	pid = fork();
	if (pid < 0) {
		perror("budget_count: fork");
		return 1;
	}
	if (!pid) {
		setenv("BUDGET_TRACE", "1", 1);
		if (ptrace(PTRACE_TRACEME, 0, NULL, NULL)) {
			/* a container's seccomp or yama: nothing to count with */
			fprintf(stderr, "budget_count: ptrace refused: %s\n",
				strerror(errno));
			_exit(77);
		}
		execvp(argv[1], argv + 1);
		fprintf(stderr, "budget_count: %s: %s\n", argv[1], strerror(errno));
		_exit(127);
	}
	/* the stop at exec */
	sig = wait_stop(pid, &status);
	if (!sig && WIFEXITED(status) && WEXITSTATUS(status) == 77)
		return 77;	/* ptrace refused (said by the child) */
	if (sig != SIGTRAP) {
		fprintf(stderr, "budget_count: %s did not start\n", argv[1]);
		return 1;
	}
	ptrace(PTRACE_SETOPTIONS, pid, NULL, (void *)PTRACE_O_EXITKILL);
	sig = 0;
	for (;;) {
		if (!stepping) {
			if (ptrace(PTRACE_CONT, pid, NULL, (void *)(long)sig))
				break;
			sig = wait_stop(pid, &status);
			if (!sig)
				break;
			if (sig == SIGTRAP) {
				/* a marker, or the trap after an execve
				 * (a libtool wrapper's): never the program's */
				stepping = at_marker(pid);
				sig = 0;
			}
			continue;
		}
		/* stepping: classify the instruction about to run */
		{
			uint64_t rip = get_rip(pid);
			uint8_t k;

			if (errno || kind_at(pid, rip, &k)) {
				fprintf(stderr, "budget_count: cannot read the program's text: %s\n",
					strerror(errno));
				kill(pid, SIGKILL);
				return 1;
			}
			if (k & K_MARK) {
				/* the closing marker: step over it untraced */
				printf("insns %llu locked %llu syscalls %llu plt %llu\n",
				       insns, locked, syscalls, plt);
				fflush(stdout);
				segments++;
				insns = locked = syscalls = plt = 0;
				stepping = false;
				sig = 0;
				/* executing it raises the SIGTRAP we swallow */
				if (ptrace(PTRACE_CONT, pid, NULL, NULL))
					break;
				sig = wait_stop(pid, &status);
				if (!sig)
					break;
				if (sig == SIGTRAP)
					sig = 0;
				continue;
			}
			insns++;
			if (k & K_LOCKED)
				locked++;
			if (k & K_SYSCALL)
				syscalls++;
			if (k & K_PLT)
				plt++;
		}
		if (ptrace(PTRACE_SINGLESTEP, pid, NULL, (void *)(long)sig))
			break;
		sig = wait_stop(pid, &status);
		if (!sig)
			break;
		if (sig == SIGTRAP)
			sig = 0;	/* the step's own trap */
	}
	if (stepping) {
		fprintf(stderr, "budget_count: %s ended inside a counted stretch\n",
			argv[1]);
		return 1;
	}
	if (WIFSIGNALED(status)) {
		fprintf(stderr, "budget_count: %s killed by signal %d\n", argv[1],
			WTERMSIG(status));
		return 1;
	}
	if (!WIFEXITED(status))
		return 1;
	if (WEXITSTATUS(status) == 0 && !segments) {
		fprintf(stderr, "budget_count: %s marked nothing (no int3 under BUDGET_TRACE=1)\n",
			argv[1]);
		return 1;
	}
	return WEXITSTATUS(status);
}
#endif
