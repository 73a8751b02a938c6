/* A plain pointer chase, the reference bench/latency.sh sets beside
 * `numakit bench latency`.
 *
 *   chase SIZE_MIB [LOADS] [SEED]
 *
 * The buffer (SIZE_MIB MiB from mmap, plain 4 KiB pages: no madvise) is
 * first touched in address order, then cut into 64-byte lines linked into
 * one random cycle (Sattolo's algorithm: a uniformly random cyclic
 * permutation), each line's first word holding the address of the next.
 * One warm cycle goes once around (every line), then LOADS dependent loads
 * (default 20 million) are timed with CLOCK_MONOTONIC. Prints nanoseconds
 * per load on one line, then the same from the thread's CPU time
 * (CLOCK_THREAD_CPUTIME_ID: without the time the thread was not running).
 *
 * Run it pinned (numactl -C CPU -m NODE chase ...): it does not bind
 * anything itself. bench/latency.sh compiles it (cc -O2) at each run.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define LINE 64

/* splitmix64: small, fast, and good enough to shuffle with. */
static uint64_t rng_state;
static uint64_t next_random(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Uniform in [0, bound), without modulo bias. */
static uint64_t below(uint64_t bound)
{
	uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
	uint64_t r;
	do
		r = next_random();
	while (r >= limit);
	return r % bound;
}

/* Follows the chain for `loads` loads, eight per turn of the loop. */
static void **__attribute__((noinline)) follow(void **p, uint64_t loads)
{
	for (uint64_t i = 0; i < loads / 8; i++) {
		p = (void **)*p; p = (void **)*p; p = (void **)*p; p = (void **)*p;
		p = (void **)*p; p = (void **)*p; p = (void **)*p; p = (void **)*p;
	}
	for (uint64_t i = 0; i < loads % 8; i++)
		p = (void **)*p;
	return p;
}

static double now_ns(clockid_t clock)
{
	struct timespec t;
	clock_gettime(clock, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 4) {
		fprintf(stderr, "usage: chase SIZE_MIB [LOADS] [SEED]\n");
		return 2;
	}
	char *end;
	uint64_t mib = strtoull(argv[1], &end, 10);
	if (*end || mib == 0 || mib > 65536) { /* line numbers fit in 32 bits */
		fprintf(stderr, "chase: bad size in MiB: %s\n", argv[1]);
		return 2;
	}
	uint64_t loads = 20000000;
	if (argc > 2) {
		loads = strtoull(argv[2], &end, 10);
		if (*end || loads == 0) {
			fprintf(stderr, "chase: bad load count: %s\n", argv[2]);
			return 2;
		}
	}
	rng_state = argc > 3 ? strtoull(argv[3], NULL, 10) : 1;

	size_t bytes = mib << 20;
	uint64_t lines = bytes / LINE;
	char *buf = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED) {
		perror("chase: mmap");
		return 1;
	}
	/* First touch in address order. */
	memset(buf, 0, bytes);

	/* Sattolo: next[i] is the line after line i; one cycle through all. */
	uint32_t *next = malloc(lines * sizeof *next);
	if (!next) {
		perror("chase: malloc");
		return 1;
	}
	for (uint64_t i = 0; i < lines; i++)
		next[i] = (uint32_t)i;
	for (uint64_t i = lines - 1; i > 0; i--) {
		uint64_t j = below(i);
		uint32_t t = next[i];
		next[i] = next[j];
		next[j] = t;
	}
	for (uint64_t i = 0; i < lines; i++)
		*(void **)(buf + i * LINE) = buf + (uint64_t)next[i] * LINE;
	free(next);

	void **p = (void **)buf;
	p = follow(p, lines); /* one warm cycle */
	double c0 = now_ns(CLOCK_THREAD_CPUTIME_ID), t0 = now_ns(CLOCK_MONOTONIC);
	p = follow(p, loads);
	double t1 = now_ns(CLOCK_MONOTONIC), c1 = now_ns(CLOCK_THREAD_CPUTIME_ID);
	/* Keep the chain's end alive, so the loads cannot be dropped. */
	if (p == NULL)
		return 3;
	printf("%.3f %.3f\n", (t1 - t0) / (double)loads, (c1 - c0) / (double)loads);
	return 0;
}
