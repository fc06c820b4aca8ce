// One bounded HTTP GET through the system's libcurl (libcurl.so.4, loaded with dlopen on first
// use: the machine has it because FoundationNetworking needs it, but no headers, and
// curl_easy_setopt is variadic, which Swift cannot call). Policy (which URL, which status,
// redirects, messages) stays in Swift; this file only moves bytes within hard limits:
//
// - libcurl is never asked to decode a body (no CURLOPT_ACCEPT_ENCODING, content decoding
//   off): a gzip bomb arrives as its compressed bytes, and a body with any Content-Encoding
//   but identity is abandoned at its first byte;
// - at most `max_body` bytes are kept (one buffer of max_body + 1, allocated up front); an
//   announced Content-Length above it ends the transfer before any body byte, a longer
//   stream ends the moment it passes the cap;
// - the transfer ends within `timeout_ms` (CURLOPT_TIMEOUT_MS), or as soon as `*cancel`
//   becomes non-zero (checked by the progress callback, which libcurl calls many times a second
//   while bytes move, and at least once a second when none do);
// - redirects are not followed: a 3xx is returned with its resolved Location for Swift to judge.
#ifndef SWITCHBACK_HTTP_H
#define SWITCHBACK_HTTP_H

#include <stddef.h>

/// Why a transfer ended early, on top of libcurl's result.
enum {
    SWITCHBACK_HTTP_STOP_NONE = 0,
    /// The announced Content-Length is over the cap (nothing of the body was read).
    SWITCHBACK_HTTP_STOP_ANNOUNCED_TOO_LARGE = 1,
    /// The body passed the cap.
    SWITCHBACK_HTTP_STOP_TOO_LARGE = 2,
    /// The body has a Content-Encoding that was not asked for.
    SWITCHBACK_HTTP_STOP_ENCODED = 3,
    /// `*cancel` was set.
    SWITCHBACK_HTTP_STOP_CANCELLED = 4,
    /// The response headers passed 64 KiB.
    SWITCHBACK_HTTP_STOP_HEADERS_TOO_LARGE = 5,
};

/// The size of each header value kept (longer values are cut).
#define SWITCHBACK_HTTP_VALUE_SIZE 512

typedef struct switchback_http_exchange {
    /* In */
    const char *url;
    /// Extra request headers ("Name: value"), `header_count` of them.
    const char *const *headers;
    int header_count;
    const char *user_agent;
    long timeout_ms;
    size_t max_body;
    /// Set non-zero (from any thread) to abandon the transfer.
    volatile int *cancel;
    /// CURLOPT_NOPROXY when not NULL: "*" goes direct whatever http_proxy says.
    const char *no_proxy;
    /// When not NULL, the request is a POST of these `post_length` bytes (a hook's event);
    /// else a GET.
    const unsigned char *post_body;
    long post_length;

    /* Out */
    /// libcurl's CURLcode (0 on success), or -1 when libcurl could not be loaded.
    int curl_code;
    /// A SWITCHBACK_HTTP_STOP_ value.
    int stop;
    /// The HTTP status (0 when no status line arrived).
    long status;
    /// The announced Content-Length, or -1.
    long long content_length;
    /// The body: `body_length` bytes at `body` (malloc'ed; free with switchback_http_free).
    unsigned char *body;
    size_t body_length;
    /// Header values, NUL-terminated, empty when absent.
    char etag[SWITCHBACK_HTTP_VALUE_SIZE];
    char last_modified[SWITCHBACK_HTTP_VALUE_SIZE];
    char date[SWITCHBACK_HTTP_VALUE_SIZE];
    char content_encoding[SWITCHBACK_HTTP_VALUE_SIZE];
    /// The redirect target resolved against the URL (3xx with a Location), else empty.
    char redirect_url[2048];
    /// libcurl's error text, or why libcurl could not be loaded.
    char error[256];

    /* Private */
    size_t header_bytes;
} switchback_http_exchange;

/// Performs one GET (or a POST of `post_body`) as described above; fills the out fields. Blocking; thread-safe (each
/// call uses its own easy handle). Always returns; never follows a redirect.
void switchback_http_get(switchback_http_exchange *exchange);

/// Frees the body of an exchange (safe to call twice).
void switchback_http_free(switchback_http_exchange *exchange);

/// Sets `*flag` to 1 with a sequentially consistent store, for `cancel`.
void switchback_http_set_flag(volatile int *flag);

#endif
