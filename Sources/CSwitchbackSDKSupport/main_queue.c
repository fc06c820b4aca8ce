#define _GNU_SOURCE
#include "switchback_main_queue.h"

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <unistd.h>

// libdispatch's run-loop hooks (private/queue_private.h in swift-corelibs-libdispatch, exported
// by the toolchain's libdispatch.so), and the main queue itself (what dispatch_get_main_queue()
// returns). The SDK's Swift code imports Dispatch, so every library and program that links this
// target links libdispatch.
struct switchback_dispatch_queue;
extern struct switchback_dispatch_queue _dispatch_main_q;
extern struct switchback_dispatch_queue *dispatch_get_current_queue(void);
extern int _dispatch_get_main_queue_handle_4CF(void);
extern void _dispatch_main_queue_callback_4CF(void *message);

int32_t switchback_sdk_main_queue_is_here(void) {
    return gettid() == getpid() && dispatch_get_current_queue() == &_dispatch_main_q;
}

int32_t switchback_sdk_main_queue_wait(void) {
    int fd = _dispatch_get_main_queue_handle_4CF();
    struct pollfd wake = { .fd = fd, .events = POLLIN, .revents = 0 };
    while (poll(&wake, 1, -1) < 0) {
        if (errno != EINTR) return errno;
    }
    // The eventfd is non-blocking; libdispatch writes it again for work queued after this.
    uint64_t count;
    (void)!read(fd, &count, sizeof count);
    return 0;
}

void switchback_sdk_main_queue_drain(void) {
    _dispatch_main_queue_callback_4CF(0);
}
