// Sofa's supervisor starts its services with posix_spawn and closes every descriptor above
// stderr in the child (closefrom, atomically with the exec). Descriptors another thread opens
// while a child is being started (a pipe, a socket, the end of a socketpair that tells some
// other watcher that its own child died) can therefore never leak into the child and outlive
// their owner's use of them.
#define _GNU_SOURCE
#include "sofa_spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <unistd.h>

/// The common start: `input` non-NULL gives the child a pipe as stdin (its write end stored
/// there) and leaves it this process's stderr; NULL gives it /dev/null and the output pipe as
/// stderr too.
static int spawn(const char *path, char *const argv[], char *const envp[], pid_t *pid, int *input, int *output) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return errno;
    int in[2] = {-1, -1};
    if (input != NULL && pipe2(in, O_CLOEXEC) != 0) {
        int saved = errno;
        close(fds[0]);
        close(fds[1]);
        return saved;
    }

    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attributes;
    int rc = posix_spawn_file_actions_init(&actions);
    if (rc != 0) goto close_pipe;
    rc = posix_spawnattr_init(&attributes);
    if (rc != 0) goto destroy_actions;

    if (input != NULL) {
        if ((rc = posix_spawn_file_actions_adddup2(&actions, in[0], STDIN_FILENO)) != 0
            || (rc = posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO)) != 0
            || (rc = posix_spawn_file_actions_addclosefrom_np(&actions, STDERR_FILENO + 1)) != 0) {
            goto destroy_attributes;
        }
    } else if ((rc = posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0)) != 0
        || (rc = posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO)) != 0
        || (rc = posix_spawn_file_actions_adddup2(&actions, fds[1], STDERR_FILENO)) != 0
        || (rc = posix_spawn_file_actions_addclosefrom_np(&actions, STDERR_FILENO + 1)) != 0) {
        goto destroy_attributes;
    }

    // The parent may block or ignore signals for its own handling; the child starts clean.
    sigset_t none, defaults;
    sigemptyset(&none);
    sigemptyset(&defaults);
    const int reset[] = {SIGHUP, SIGINT, SIGQUIT, SIGPIPE, SIGALRM, SIGTERM, SIGCHLD, SIGUSR1, SIGUSR2};
    for (size_t i = 0; i < sizeof reset / sizeof reset[0]; i++) sigaddset(&defaults, reset[i]);
    if ((rc = posix_spawnattr_setsigmask(&attributes, &none)) != 0
        || (rc = posix_spawnattr_setsigdefault(&attributes, &defaults)) != 0
        || (rc = posix_spawnattr_setpgroup(&attributes, 0)) != 0
        || (rc = posix_spawnattr_setflags(&attributes,
                                          POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF)) != 0) {
        goto destroy_attributes;
    }

    rc = posix_spawn(pid, path, &actions, &attributes, argv, envp);

destroy_attributes:
    posix_spawnattr_destroy(&attributes);
destroy_actions:
    posix_spawn_file_actions_destroy(&actions);
close_pipe:
    close(fds[1]);
    if (input != NULL) close(in[0]);
    if (rc != 0) {
        close(fds[0]);
        if (input != NULL) close(in[1]);
        return rc;
    }
    *output = fds[0];
    if (input != NULL) *input = in[1];
    return 0;
}

int sofa_spawn(const char *path, char *const argv[], char *const envp[], pid_t *pid, int *output) {
    return spawn(path, argv, envp, pid, NULL, output);
}

int sofa_spawn_piped(const char *path, char *const argv[], char *const envp[], pid_t *pid, int *input, int *output) {
    return spawn(path, argv, envp, pid, input, output);
}
