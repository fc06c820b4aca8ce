import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The launcher's `accept`, `accept4` and `bind` (Sources/CSwitchbackListen/listen.c), compiled
/// with a small C driver that plays the supervised child: a listening socket inherited at
/// descriptor 3, adopted as the launcher adopts it, then the drain signal the supervisor
/// sends. The driver prints what it saw as `key=value` lines.
@Suite struct ListenWrapperTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    static let driver = #"""
        #define _GNU_SOURCE
        #include "switchback_listen.h"
        #include <arpa/inet.h>
        #include <errno.h>
        #include <netinet/in.h>
        #include <pthread.h>
        #include <signal.h>
        #include <stdio.h>
        #include <string.h>
        #include <sys/socket.h>
        #include <sys/syscall.h>
        #include <time.h>
        #include <unistd.h>

        static struct sockaddr_in inherited;
        static int accepted, refused, other_errors;

        static void pause_ms(int ms) { struct timespec t = { ms / 1000, (ms % 1000) * 1000000L }; nanosleep(&t, NULL); }

        static int connect_client(void) {
            int fd = socket(AF_INET, SOCK_STREAM, 0);
            if (connect(fd, (struct sockaddr *)&inherited, sizeof inherited) != 0) { perror("connect"); return -1; }
            return fd;
        }

        /// A blocking accept loop, as a thread-per-connection server has.
        static void *acceptor(void *unused) {
            (void)unused;
            for (;;) {
                int fd = accept(3, NULL, NULL);
                if (fd >= 0) { __atomic_add_fetch(&accepted, 1, __ATOMIC_SEQ_CST); close(fd); }
                else if (errno == EAGAIN) __atomic_add_fetch(&refused, 1, __ATOMIC_SEQ_CST);
                else __atomic_add_fetch(&other_errors, 1, __ATOMIC_SEQ_CST);
            }
            return NULL;
        }

        static void *blocked_acceptor(void *unused) {
            (void)unused;
            int fd = accept4(3, NULL, NULL, SOCK_CLOEXEC);
            printf("accept4_returned=%d\n", fd);
            return NULL;
        }

        int main(int argc, char **argv) {
            int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
            memset(&inherited, 0, sizeof inherited);
            inherited.sin_family = AF_INET;
            inherited.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
            if (syscall(SYS_bind, listener, (struct sockaddr *)&inherited, sizeof inherited) != 0 || listen(listener, 16) != 0) { perror("listen"); return 2; }
            socklen_t length = sizeof inherited;
            getsockname(listener, (struct sockaddr *)&inherited, &length);
            if (listener != 3) {
                if (dup2(listener, 3) != 3) return 2;
                close(listener);
            }
            printf("adopted=%d\n", switchback_listen_adopt(3, 1, NULL, SIGRTMIN + 4));

            if (strcmp(argv[1], "drain") == 0) {
                pthread_t thread;
                pthread_create(&thread, NULL, acceptor, NULL);
                int first = connect_client();
                for (int i = 0; i < 200 && __atomic_load_n(&accepted, __ATOMIC_SEQ_CST) < 1; i++) pause_ms(10);
                printf("accepted_before=%d\n", accepted);
                pause_ms(200); // the acceptor is blocked in accept again
                kill(getpid(), SIGRTMIN + 4);
                pause_ms(200);
                int second = connect_client();
                pause_ms(500);
                printf("accepted_after=%d\n", accepted);
                printf("refused=%d\n", refused > 0 ? 1 : 0);
                printf("other_errors=%d\n", other_errors);
                // The second connection waits in the queue, for the child that replaces this one.
                int queued = (int)syscall(SYS_accept4, 3, NULL, NULL, SOCK_NONBLOCK);
                printf("queued=%d\n", queued >= 0 ? 1 : 0);
                close(first);
                close(second);
            } else if (strcmp(argv[1], "cancel") == 0) {
                pthread_t thread;
                pthread_create(&thread, NULL, blocked_acceptor, NULL);
                pause_ms(200);
                pthread_cancel(thread);
                struct timespec deadline;
                clock_gettime(CLOCK_REALTIME, &deadline);
                deadline.tv_sec += 3;
                void *result = NULL;
                int joined = pthread_timedjoin_np(thread, &result, &deadline);
                printf("cancelled=%d\n", joined == 0 && result == PTHREAD_CANCELED ? 1 : 0);
            } else if (strcmp(argv[1], "bind") == 0) {
                // Handed the inherited socket: a fresh TCP socket binding the inherited address.
                int fresh = socket(AF_INET, SOCK_STREAM, 0);
                printf("fresh=%d\n", bind(fresh, (struct sockaddr *)&inherited, sizeof inherited));
                // The kernel's answers: a socket bound already, that same socket again, a
                // socket of the other family, an address too short.
                struct sockaddr_in elsewhere = inherited;
                elsewhere.sin_port = 0;
                int bound = socket(AF_INET, SOCK_STREAM, 0);
                int first = bind(bound, (struct sockaddr *)&elsewhere, sizeof elsewhere);
                errno = 0;
                int again = bind(bound, (struct sockaddr *)&inherited, sizeof inherited);
                printf("bound_first=%d\n", first);
                printf("bound_again=%d errno=%s\n", again, strerrorname_np(errno));
                errno = 0;
                again = bind(fresh, (struct sockaddr *)&inherited, sizeof inherited);
                printf("fresh_again=%d errno=%s\n", again, strerrorname_np(errno));
                int six = socket(AF_INET6, SOCK_STREAM, 0);
                errno = 0;
                int other = bind(six, (struct sockaddr *)&inherited, sizeof inherited);
                printf("other_family=%d errno=%s\n", other, strerrorname_np(errno));
                int shortened = socket(AF_INET, SOCK_STREAM, 0);
                errno = 0;
                int cut = bind(shortened, (struct sockaddr *)&inherited, 8);
                printf("short=%d errno=%s\n", cut, strerrorname_np(errno));
            }
            fflush(stdout);
            _exit(0);
        }
        """#

    /// Builds the driver once per test: cc, as the tests' other C fixtures.
    static func run(_ mode: String) throws -> [String: String] {
        let directory = try makeTemporaryDirectory()
        try driver.write(toFile: directory + "/driver.c", atomically: true, encoding: .utf8)
        try shell("cc", "-O1", "-pthread", "-I", root + "/Sources/CSwitchbackListen/include", "-o", directory + "/driver",
                  directory + "/driver.c", root + "/Sources/CSwitchbackListen/listen.c", "-ldl")
        let result = try runProcess(directory + "/driver", [mode], deadline: 30)
        #expect(result.status == 0, "\(result)")
        // `a=1 errno=EINVAL` gives a=1 and a.errno=EINVAL.
        var values: [String: String] = [:]
        for line in result.stdout.split(separator: "\n") {
            var first: String?
            for word in line.split(separator: " ") {
                let parts = word.split(separator: "=", maxSplits: 1).map(String.init)
                guard parts.count == 2 else { continue }
                values[first.map { "\($0).\(parts[0])" } ?? parts[0]] = parts[1]
                if first == nil { first = parts[0] }
            }
        }
        return values
    }

    /// A thread blocked in a blocking `accept` before the drain accepts nothing after it: it
    /// is woken, answered EAGAIN, and the next connection waits in the queue.
    @Test func aThreadBlockedInAcceptStopsAcceptingAfterTheDrain() throws {
        let seen = try Self.run("drain")
        #expect(seen["adopted"] == "1")
        #expect(seen["accepted_before"] == "1", "the acceptor accepted before the drain: \(seen)")
        #expect(seen["accepted_after"] == "1", "nothing accepted after the drain: \(seen)")
        #expect(seen["refused"] == "1", "\(seen)")
        #expect(seen["other_errors"] == "0", "\(seen)")
        #expect(seen["queued"] == "1", "the connection made after the drain waits in the queue: \(seen)")
    }

    /// `accept4` is a cancellation point, as the C library's is.
    @Test func acceptIsACancellationPoint() throws {
        let seen = try Self.run("cancel")
        #expect(seen["cancelled"] == "1", "\(seen)")
        #expect(seen["accept4_returned"] == nil, "\(seen)")
    }

    /// `bind` hands over the inherited socket only to a fresh TCP socket of the address's
    /// family; every other call gets the kernel's answer.
    @Test func bindReturnsWhatTheKernelReturns() throws {
        let seen = try Self.run("bind")
        #expect(seen["fresh"] == "0", "\(seen)")
        #expect(seen["bound_first"] == "0", "\(seen)")
        #expect(seen["bound_again"] == "-1", "\(seen)")
        #expect(seen["fresh_again"] == "-1", "\(seen)")
        #expect(seen["other_family"] == "-1", "\(seen)")
        #expect(seen["short"] == "-1", "\(seen)")
        for call in ["bound_again", "fresh_again", "other_family", "short"] {
            #expect(seen[call + ".errno"] == "EINVAL", "\(call): \(seen)")
        }
    }
}
