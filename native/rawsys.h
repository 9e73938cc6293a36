/* System calls for code that runs in another task on the server's memory
 * (CLONE_VM children: the vfork-style child and the parked children).
 * They return -errno instead of writing errno: a parked child runs while
 * the server does, and errno is the server's (thread-local storage they
 * share), so glibc's syscall() from the child could overwrite the errno the
 * server is about to read. x86_64 and aarch64 only; elsewhere
 * SPAWND_CAN_PARK is 0 and only the vfork-style child (the server waits
 * while it runs) uses these, through syscall(). */
#ifndef SPAWND_RAWSYS_H
#define SPAWND_RAWSYS_H

#include <errno.h>
#include <unistd.h>

/* Never instrumented: it runs in children on the server's memory. */
#define RAW_NOSAN __attribute__((no_sanitize("address", "undefined")))

#if defined(__x86_64__)
#define SPAWND_CAN_PARK 1
RAW_NOSAN static inline long raw_syscall(long n, long a1, long a2, long a3, long a4,
			       long a5, long a6)
{
	register long r10 __asm__("r10") = a4;
	register long r8 __asm__("r8") = a5;
	register long r9 __asm__("r9") = a6;
	long ret;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(n), "D"(a1), "S"(a2), "d"(a3), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}
#elif defined(__aarch64__)
#define SPAWND_CAN_PARK 1
RAW_NOSAN static inline long raw_syscall(long n, long a1, long a2, long a3, long a4,
			       long a5, long a6)
{
	register long x8 __asm__("x8") = n;
	register long x0 __asm__("x0") = a1;
	register long x1 __asm__("x1") = a2;
	register long x2 __asm__("x2") = a3;
	register long x3 __asm__("x3") = a4;
	register long x4 __asm__("x4") = a5;
	register long x5 __asm__("x5") = a6;

	__asm__ volatile("svc 0"
			 : "+r"(x0)
			 : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
			 : "memory", "cc");
	return x0;
}
#else
#define SPAWND_CAN_PARK 0
static inline long raw_syscall(long n, long a1, long a2, long a3, long a4,
			       long a5, long a6)
{
	long r = syscall(n, a1, a2, a3, a4, a5, a6);

	return r < 0 ? -errno : r;
}
#endif

#define RAW0(n) raw_syscall((n), 0, 0, 0, 0, 0, 0)
#define RAW1(n, a) raw_syscall((n), (long)(a), 0, 0, 0, 0, 0)
#define RAW2(n, a, b) raw_syscall((n), (long)(a), (long)(b), 0, 0, 0, 0)
#define RAW3(n, a, b, c) raw_syscall((n), (long)(a), (long)(b), (long)(c), 0, 0, 0)
#define RAW4(n, a, b, c, d) \
	raw_syscall((n), (long)(a), (long)(b), (long)(c), (long)(d), 0, 0)

#endif
