// The GNU extensions the supervisor uses, behind plain prototypes: defining _GNU_SOURCE in
// the header Swift imports would declare `environ` a second time.
#define _GNU_SOURCE
#include "switchback_system.h"

#include <dlfcn.h>
#include <spawn.h>
#include <sys/random.h>

int switchback_pipe_cloexec(int fds[2]) { return pipe2(fds, O_CLOEXEC); }

int switchback_spawn_close_from(posix_spawn_file_actions_t *actions, int from) {
    return posix_spawn_file_actions_addclosefrom_np(actions, from);
}

unsigned long long switchback_random64(void) {
    unsigned long long value = 0;
    if (getrandom(&value, sizeof value, 0) != (ssize_t)sizeof value) value ^= (unsigned long long)getpid() << 32;
    return value;
}

const char *switchback_libc_path(void) {
    Dl_info info;
    if (dladdr((void *)getpid, &info) == 0) return NULL;
    return info.dli_fname;
}
