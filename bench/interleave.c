/*
 * interleave.c - launch-time medians of several commands run in turn (A B C A B C ...), for
 * bench/launch.sh: a drift in the machine's speed (this VM moves by a third between minutes)
 * then lands on every command alike, where hyperfine's blocks of runs would give it to one.
 *
 *   interleave RUNS CMD1 ::: CMD2 ::: ...      (each CMD is a program and its arguments)
 *
 * Each run is posix_spawn + waitpid, timed with CLOCK_MONOTONIC; output to /dev/null. Prints
 * one line per command: its median in milliseconds, then the command.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: interleave RUNS CMD [ARGS...] [::: CMD [ARGS...]]...\n");
        return 2;
    }
    int runs = atoi(argv[1]);
    char **cmds[64];
    int n = 0;
    cmds[n++] = &argv[2];
    for (int i = 2; i < argc && n < 64; i++) {
        if (strcmp(argv[i], ":::") == 0) {
            argv[i] = NULL;
            cmds[n++] = &argv[i + 1];
        }
    }
    double *times = calloc((size_t)n * runs, sizeof *times);
    posix_spawn_file_actions_t quiet;
    posix_spawn_file_actions_init(&quiet);
    posix_spawn_file_actions_addopen(&quiet, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&quiet, 2, "/dev/null", O_WRONLY, 0);
    for (int r = -runs / 10; r < runs; r++) { /* a tenth more, first, as warm-up */
        for (int c = 0; c < n; c++) {
            double start = now_ms();
            pid_t pid;
            if (posix_spawn(&pid, cmds[c][0], &quiet, NULL, cmds[c], environ) != 0) {
                perror(cmds[c][0]);
                return 1;
            }
            int status;
            waitpid(pid, &status, 0);
            if (r >= 0) times[c * runs + r] = now_ms() - start;
        }
    }
    for (int c = 0; c < n; c++) {
        qsort(&times[c * runs], runs, sizeof *times, by_value);
        printf("%8.3f ms ", times[c * runs + runs / 2]);
        for (char **a = cmds[c]; *a; a++) printf(" %s", *a);
        printf("\n");
    }
    return 0;
}
