/*
 * keeperwrap.c - the process shape lnk's Landlock-only launch must have, and nothing else, for
 * bench/launch.sh: what the design costs before any of lnk's own work.
 *
 *   keeperwrap PROG [ARGS...]
 *
 * The caller forks a keeper; the keeper leads a session of its own and forks the program's
 * process, which executes PROG; the keeper waits for it and writes its status on a pipe, and
 * the caller reads the status and reaps the keeper. No sandbox: run `keeperwrap lljail PROG`
 * for the confinement, and subtract one `execve` (execwrap) to get the floor of lnk's shape.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <signal.h>

extern char **environ;

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: keeperwrap PROG [ARGS...]\n");
        return 2;
    }
    int status_pipe[2];
    if (pipe(status_pipe) != 0) return 125;
    pid_t keeper = fork();
    if (keeper < 0) return 125;
    if (keeper == 0) {
        close(status_pipe[0]);
        if (setsid() < 0) _exit(125);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        pid_t program = fork();
        if (program < 0) _exit(125);
        if (program == 0) {
            close(status_pipe[1]);
            execve(argv[1], argv + 1, environ);
            _exit(127);
        }
        int st = 0;
        waitpid(program, &st, 0);
        if (write(status_pipe[1], &st, sizeof st) != sizeof st) _exit(125);
        _exit(0);
    }
    close(status_pipe[1]);
    int st = 0;
    ssize_t n = read(status_pipe[0], &st, sizeof st);
    waitpid(keeper, NULL, 0);
    if (n != sizeof st) return 125;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
