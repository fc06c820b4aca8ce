// The main queue as a run loop drives it: what the SDK needs to run an app's async `main` on the
// main actor on the launcher's own thread (Sources/Switchback/Entry/MainActorRunLoop.swift).
//
// Swift's main actor enqueues its jobs on libdispatch's main queue. A program whose `main` is
// `async` hands its main thread to `dispatch_main()`, which never returns (on Linux the main
// thread exits and pool threads drain the queue). The launcher needs its thread back with an
// exit code, so the SDK drains the queue itself through the hooks libdispatch keeps for run
// loops (CoreFoundation's CFRunLoop uses the same two on Linux): an eventfd that becomes
// readable when the queue has work, and a call that runs what is queued on the calling thread.
#ifndef SWITCHBACK_MAIN_QUEUE_H
#define SWITCHBACK_MAIN_QUEUE_H

#include <stdint.h>

/// 1 when the calling thread is the one libdispatch's main queue is bound to: the process's
/// main thread (gettid() == getpid()), with the main queue as its current queue (libdispatch
/// binds the queue to the thread that loaded it, and unbinds it for good in `dispatch_main()`).
/// 0 otherwise: the queue must not be drained here.
int32_t switchback_sdk_main_queue_is_here(void);

/// Waits until the main queue has work (its eventfd is readable; EINTR is retried) and
/// clears the wake-up. Returns 0, or an errno value when poll(2) failed.
int32_t switchback_sdk_main_queue_wait(void);

/// Runs the jobs queued on the main queue now, on the calling thread (libdispatch's
/// `_dispatch_main_queue_callback_4CF`). Only where switchback_sdk_main_queue_is_here() is 1.
void switchback_sdk_main_queue_drain(void);

#endif
