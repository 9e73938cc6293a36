/*
 * spawn-ceiling: the machine's spawn ceiling for `npm run bench`.
 * N threads (default: online CPUs) each loop posix_spawn + waitpid of a
 * program (default /bin/true, stdio to /dev/null) for a fixed duration.
 * Prints one JSON line: {"threads":N,"seconds":S,"spawns":K,"rate":K/S}.
 *
 * usage: spawn-ceiling [seconds] [threads] [program]
 * exit codes: 0 ok, 100 usage, 111 a failed syscall
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static const char *program = "/bin/true";
static double seconds = 3.0;
static atomic_long total;
static atomic_int failed;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* One spawn + reap of `program`; 0 or an errno value. */
static int spawn_once(const posix_spawn_file_actions_t *fa) {
  char *argv[] = { (char *)program, NULL };
  pid_t pid;
  int status;
  int err = posix_spawn(&pid, program, fa, NULL, argv, environ);
  if (err != 0) return err;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return errno; /* ECHILD would mean someone else reaped it */
  }
  return 0;
}

static void *worker(void *arg) {
  (void)arg;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  for (int fd = 0; fd <= 2; fd++)
    posix_spawn_file_actions_addopen(&fa, fd, "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0);
  double end = now() + seconds;
  long n = 0;
  while (now() < end) {
    int err = spawn_once(&fa);
    if (err != 0) {
      fprintf(stderr, "spawn-ceiling: %s: %s\n", program, strerror(err));
      atomic_store(&failed, 1);
      break;
    }
    n++;
  }
  posix_spawn_file_actions_destroy(&fa);
  atomic_fetch_add(&total, n);
  return NULL;
}

int main(int argc, char **argv) {
  long threads = sysconf(_SC_NPROCESSORS_ONLN);
  if (argc > 4) {
    fprintf(stderr, "usage: spawn-ceiling [seconds] [threads] [program]\n");
    return 100;
  }
  if (argc > 1) seconds = atof(argv[1]);
  if (argc > 2) threads = atol(argv[2]);
  if (argc > 3) program = argv[3];
  if (seconds <= 0 || threads < 1 || threads > 1024) {
    fprintf(stderr, "spawn-ceiling: bad seconds or threads\n");
    return 100;
  }
  pthread_t *tids = calloc((size_t)threads, sizeof *tids);
  if (tids == NULL) return 111;
  double start = now();
  for (long i = 0; i < threads; i++) {
    int err = pthread_create(&tids[i], NULL, worker, NULL);
    if (err != 0) {
      fprintf(stderr, "spawn-ceiling: pthread_create: %s\n", strerror(err));
      return 111;
    }
  }
  for (long i = 0; i < threads; i++) pthread_join(tids[i], NULL);
  double took = now() - start;
  long n = atomic_load(&total);
  printf("{\"threads\":%ld,\"seconds\":%.3f,\"spawns\":%ld,\"rate\":%.1f}\n", threads, took, n, n / took);
  free(tids);
  return atomic_load(&failed) ? 111 : 0;
}
