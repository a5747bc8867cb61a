/*
 * Runs a command under a seccomp filter like the default profile of Docker and podman (moby's
 * profiles/seccomp/default.json) for a container without CAP_SYS_ADMIN or CAP_SYS_PTRACE: the
 * calls that profile allows only with those capabilities answer EPERM, clone3 answers ENOSYS
 * (so libc falls back to clone), and clone with any namespace flag answers EPERM. Everything
 * else runs. lnk's tests start lnk under it, as a container would.
 *
 *   docker_like_seccomp COMMAND [ARG...]
 *   docker_like_seccomp --copies-only COMMAND [ARG...]
 *
 * With --copies-only, only pidfd_getfd answers EPERM: a profile that lets lnk make its
 * namespaces but gives it no copy of a process's descriptor.
 *
 * Not lnk's code: a test's stand-in for a container runtime.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NR offsetof(struct seccomp_data, nr)
#define ARG0_LOW offsetof(struct seccomp_data, args[0])
#define ERRNO(e) (SECCOMP_RET_ERRNO | ((e) & SECCOMP_RET_DATA))
/* One call refused: if nr == N return EPERM. */
#define REFUSE(n) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (n), 0, 1), BPF_STMT(BPF_RET | BPF_K, ERRNO(EPERM))

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s [--copies-only] COMMAND [ARG...]\n", argv[0]);
        return 2;
    }
    int copies_only = argc > 2 && strcmp(argv[1], "--copies-only") == 0;
    if (copies_only) {
        argv++;
    }
    const unsigned namespaces = CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER |
                                CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWCGROUP;
    struct sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, NR),
        /* CAP_SYS_PTRACE's calls */
        REFUSE(SYS_ptrace), REFUSE(SYS_process_vm_readv), REFUSE(SYS_process_vm_writev),
        REFUSE(SYS_kcmp), REFUSE(SYS_pidfd_getfd),
        /* CAP_SYS_ADMIN's calls */
        REFUSE(SYS_unshare), REFUSE(SYS_setns), REFUSE(SYS_mount), REFUSE(SYS_umount2),
        REFUSE(SYS_pivot_root), REFUSE(SYS_open_tree), REFUSE(SYS_move_mount), REFUSE(SYS_fsopen),
        REFUSE(SYS_fsconfig), REFUSE(SYS_fsmount), REFUSE(SYS_fspick), REFUSE(SYS_mount_setattr),
        REFUSE(SYS_bpf), REFUSE(SYS_perf_event_open), REFUSE(SYS_fanotify_init),
        REFUSE(SYS_open_by_handle_at), REFUSE(SYS_name_to_handle_at), REFUSE(SYS_quotactl),
        /* clone3: ENOSYS, so libc uses clone */
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone3, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, ERRNO(ENOSYS)),
        /* clone with a namespace flag */
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone, 0, 3),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG0_LOW),
        BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, namespaces, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, ERRNO(EPERM)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_filter copies[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, NR),
        REFUSE(SYS_pidfd_getfd),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog program = {.len = sizeof filter / sizeof filter[0], .filter = filter};
    if (copies_only) {
        program.len = sizeof copies / sizeof copies[0];
        program.filter = copies;
    }
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &program) != 0) {
        perror("docker_like_seccomp: seccomp");
        return 126;
    }
    execvp(argv[1], argv + 1);
    perror("docker_like_seccomp: exec");
    return 127;
}
