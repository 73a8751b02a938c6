/*
 * Loads the SPANK plugin the way Slurm does (src/common/plugin.c: dlopen with
 * RTLD_LAZY, dlsym, the hooks, dlclose), ROUNDS times in one process, then
 * returns from main so that the C library runs its exit handlers. Each round
 * also calls the init hook from a thread that ends before the dlclose
 * (slurmstepd's threads): a thread-local destructor or an exit handler left
 * behind by an unloaded library crashes the process here, as it would crash
 * slurmstepd (zig issues 17908 and 24255 are of that kind).
 *
 *   gcc -O1 -Wall -Wextra -Werror -o harness harness.c -ldl -lpthread
 *   ./harness PLUGIN.so [ROUNDS]
 *
 * Prints one line per fault and, on success, a last line
 * "dlclose harness: ok: ROUNDS rounds ...". Exit 0 on success, 1 on a fault
 * (a crash is the signal's own status). scripts/test-dlclose builds and runs it.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int (*hook_fn)(void *spank, int ac, const char **av);

static int faults;

static void fault(int round, const char *what)
{
	fprintf(stderr, "dlclose harness: round %d: %s\n", round, what);
	faults++;
}

static void *init_in_thread(void *init)
{
	static int status;
	status = ((hook_fn)init)(NULL, 0, NULL);
	return &status;
}

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: %s PLUGIN.so [ROUNDS]\n", argv[0]);
		return 2;
	}
	const char *path = argv[1];
	int rounds = argc == 3 ? atoi(argv[2]) : 200;
	int unloaded = 0;
	unsigned int version = 0;

	for (int round = 1; round <= rounds && faults == 0; round++) {
		void *h = dlopen(path, RTLD_LAZY);
		if (!h) {
			fault(round, dlerror());
			break;
		}
		const char *name = dlsym(h, "plugin_name");
		const char *type = dlsym(h, "plugin_type");
		const unsigned int *pv = dlsym(h, "plugin_version");
		const unsigned int *spv = dlsym(h, "spank_plugin_version");
		hook_fn init = (hook_fn)dlsym(h, "slurm_spank_init");
		hook_fn task_exit = (hook_fn)dlsym(h, "slurm_spank_task_exit");
		hook_fn done = (hook_fn)dlsym(h, "slurm_spank_exit");
		if (!name || !type || !pv || !spv || !init || !task_exit || !done) {
			fault(round, "a symbol is missing (plugin_name, plugin_type, plugin_version, "
				     "spank_plugin_version, slurm_spank_init, slurm_spank_task_exit, slurm_spank_exit)");
			dlclose(h);
			break;
		}
		if (strcmp(name, "numakit") || strcmp(type, "spank") || *spv != 1)
			fault(round, "plugin_name, plugin_type or spank_plugin_version is not numakit, spank, 1");
		version = *pv;
		/* Outside Slurm the spank_* functions are absent: the hooks return. */
		const char *good[] = { "default=local", "allowed=local,none" };
		const char *bad[] = { "sideways" };
		if (init(NULL, 2, good) != 0)
			fault(round, "slurm_spank_init(default=local allowed=local,none) did not return 0");
		if (init(NULL, 1, bad) != -1)
			fault(round, "slurm_spank_init(sideways) did not return -1");
		pthread_t t;
		void *status = NULL;
		if (pthread_create(&t, NULL, init_in_thread, (void *)init) || pthread_join(t, &status) ||
		    *(int *)status != 0)
			fault(round, "slurm_spank_init in a thread did not return 0");
		if (task_exit(NULL, 0, NULL) != 0 || done(NULL, 0, NULL) != 0)
			fault(round, "slurm_spank_task_exit or slurm_spank_exit did not return 0");
		if (dlclose(h) != 0)
			fault(round, dlerror());
		/* Still mapped after its last dlclose? (RTLD_NOLOAD finds it only then) */
		void *again = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
		if (again)
			dlclose(again);
		else
			unloaded++;
	}
	if (faults)
		return 1;
	printf("dlclose harness: ok: %d rounds of dlopen, symbols (plugin_version %#x), "
	       "hooks (one in a thread), dlclose; unmapped after %d of them; exiting normally\n",
	       rounds, version, unloaded);
	fflush(stdout);
	return 0;
}
