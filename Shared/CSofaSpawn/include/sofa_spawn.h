// Starting a child process that inherits none of this process's descriptors (see sofa_spawn.c).
#ifndef SOFA_SPAWN_H
#define SOFA_SPAWN_H

#include <sys/types.h>

/// Starts `path` with `argv` and `envp` (both NULL-terminated). Its stdin is /dev/null; its
/// stdout and stderr are the write end of a new pipe, whose read end (close-on-exec) is stored
/// in `*output`. The child has a process group of its own, an empty signal mask and default
/// signal dispositions, and no other descriptor of this process. Returns 0, or an errno value
/// (then nothing was started and nothing is left open).
int sofa_spawn(const char *path, char *const argv[], char *const envp[], pid_t *pid, int *output);

/// The same with a pipe for stdin as well, whose write end (close-on-exec) is stored in `*input`;
/// the child's stdout is the output pipe and its stderr this process's (a helper that answers
/// requests line by line on its stdin and stdout, and logs on stderr).
int sofa_spawn_piped(const char *path, char *const argv[], char *const envp[], pid_t *pid, int *input, int *output);

#endif
