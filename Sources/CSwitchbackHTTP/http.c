#include "switchback_http.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

// The few libcurl names used, declared here (the machine has libcurl.so.4 but not its
// headers). The option numbers and codes are part of libcurl's stable ABI.
typedef void CURL;
struct curl_slist;
typedef int CURLcode;
typedef long long curl_off_t;

enum {
    OPT_WRITEDATA = 10001, OPT_URL = 10002, OPT_ERRORBUFFER = 10010, OPT_WRITEFUNCTION = 20011,
    OPT_USERAGENT = 10018, OPT_HTTPHEADER = 10023, OPT_HEADERDATA = 10029, OPT_NOPROGRESS = 43,
    OPT_FOLLOWLOCATION = 52, OPT_HEADERFUNCTION = 20079, OPT_HTTPGET = 80, OPT_NOSIGNAL = 99,
    OPT_TIMEOUT_MS = 155, OPT_CONNECTTIMEOUT_MS = 156, OPT_HTTP_CONTENT_DECODING = 158,
    OPT_PROTOCOLS = 181, OPT_REDIR_PROTOCOLS = 182, OPT_XFERINFODATA = 10057,
    OPT_XFERINFOFUNCTION = 20219, OPT_NOPROXY = 10177, OPT_POSTFIELDS = 10015, OPT_POSTFIELDSIZE = 60,
};
enum { INFO_RESPONSE_CODE = 0x200000 + 2, INFO_REDIRECT_URL = 0x100000 + 31 };
enum { PROTO_HTTP = 1, PROTO_HTTPS = 2, GLOBAL_DEFAULT = 3, CURLE_WRITE_ERROR = 23 };

typedef size_t (*data_callback)(char *, size_t, size_t, void *);
typedef int (*progress_callback)(void *, curl_off_t, curl_off_t, curl_off_t, curl_off_t);

static struct {
    CURLcode (*global_init)(long);
    CURL *(*easy_init)(void);
    CURLcode (*easy_setopt)(CURL *, int, ...);
    CURLcode (*easy_perform)(CURL *);
    CURLcode (*easy_getinfo)(CURL *, int, ...);
    void (*easy_cleanup)(CURL *);
    const char *(*easy_strerror)(CURLcode);
    struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
    void (*slist_free_all)(struct curl_slist *);
    char load_error[200];
    int loaded;
} curl;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;

static void load_curl(void) {
    void *library = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (library == NULL) {
        const char *why = dlerror();
        snprintf(curl.load_error, sizeof curl.load_error, "libcurl.so.4 could not be loaded (%s)", why ? why : "unknown error");
        return;
    }
#define LOAD(field, name) \
    *(void **)(&curl.field) = dlsym(library, name); \
    if (curl.field == NULL) { snprintf(curl.load_error, sizeof curl.load_error, "libcurl.so.4 has no %s", name); return; }
    LOAD(global_init, "curl_global_init")
    LOAD(easy_init, "curl_easy_init")
    LOAD(easy_setopt, "curl_easy_setopt")
    LOAD(easy_perform, "curl_easy_perform")
    LOAD(easy_getinfo, "curl_easy_getinfo")
    LOAD(easy_cleanup, "curl_easy_cleanup")
    LOAD(easy_strerror, "curl_easy_strerror")
    LOAD(slist_append, "curl_slist_append")
    LOAD(slist_free_all, "curl_slist_free_all")
#undef LOAD
    if (curl.global_init(GLOBAL_DEFAULT) != 0) {
        snprintf(curl.load_error, sizeof curl.load_error, "curl_global_init failed");
        return;
    }
    curl.loaded = 1;
}

static int is_cancelled(switchback_http_exchange *x) {
    return x->cancel != NULL && __atomic_load_n(x->cancel, __ATOMIC_SEQ_CST) != 0;
}

/// Copies a header's value (trimmed) into `out` if the line is `name: value`.
static int take_header(const char *line, size_t length, const char *name, char *out, size_t out_size) {
    size_t name_length = strlen(name);
    if (length <= name_length || line[name_length] != ':' || strncasecmp(line, name, name_length) != 0) return 0;
    const char *value = line + name_length + 1;
    const char *end = line + length;
    while (value < end && (*value == ' ' || *value == '\t')) value++;
    while (end > value && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' ' || end[-1] == '\t')) end--;
    size_t n = (size_t)(end - value);
    if (n >= out_size) n = out_size - 1;
    memcpy(out, value, n);
    out[n] = 0;
    return 1;
}

static size_t on_header(char *line, size_t size, size_t count, void *context) {
    switchback_http_exchange *x = context;
    size_t length = size * count;
    if (is_cancelled(x)) { x->stop = SWITCHBACK_HTTP_STOP_CANCELLED; return 0; }
    x->header_bytes += length;
    if (x->header_bytes > 64 * 1024) { x->stop = SWITCHBACK_HTTP_STOP_HEADERS_TOO_LARGE; return 0; }
    if (length >= 5 && strncmp(line, "HTTP/", 5) == 0) {
        // A new response (after a 1xx): forget the previous one's headers.
        x->etag[0] = x->last_modified[0] = x->date[0] = x->content_encoding[0] = 0;
        x->content_length = -1;
        return length;
    }
    char number[32];
    if (take_header(line, length, "Content-Length", number, sizeof number)) {
        char *end = NULL;
        long long value = strtoll(number, &end, 10);
        x->content_length = (end != number && *end == 0 && value >= 0) ? value : -1;
        return length;
    }
    if (take_header(line, length, "ETag", x->etag, sizeof x->etag)) return length;
    if (take_header(line, length, "Last-Modified", x->last_modified, sizeof x->last_modified)) return length;
    if (take_header(line, length, "Date", x->date, sizeof x->date)) return length;
    if (take_header(line, length, "Content-Encoding", x->content_encoding, sizeof x->content_encoding)) return length;
    return length;
}

static size_t on_body(char *data, size_t size, size_t count, void *context) {
    switchback_http_exchange *x = context;
    size_t length = size * count;
    if (is_cancelled(x)) { x->stop = SWITCHBACK_HTTP_STOP_CANCELLED; return 0; }
    if (x->body_length == 0 && x->content_encoding[0] != 0 && strcasecmp(x->content_encoding, "identity") != 0) {
        x->stop = SWITCHBACK_HTTP_STOP_ENCODED;
        return 0;
    }
    if (x->body_length == 0 && x->content_length >= 0 && (unsigned long long)x->content_length > x->max_body) {
        x->stop = SWITCHBACK_HTTP_STOP_ANNOUNCED_TOO_LARGE;
        return 0;
    }
    if (length > x->max_body - x->body_length) {
        x->stop = SWITCHBACK_HTTP_STOP_TOO_LARGE;
        return 0;
    }
    memcpy(x->body + x->body_length, data, length);
    x->body_length += length;
    return length;
}

static int on_progress(void *context, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d) {
    (void)a; (void)b; (void)c; (void)d;
    switchback_http_exchange *x = context;
    if (is_cancelled(x)) { x->stop = SWITCHBACK_HTTP_STOP_CANCELLED; return 1; }
    return 0;
}

void switchback_http_set_flag(volatile int *flag) {
    __atomic_store_n(flag, 1, __ATOMIC_SEQ_CST);
}

void switchback_http_free(switchback_http_exchange *x) {
    free(x->body);
    x->body = NULL;
    x->body_length = 0;
}

void switchback_http_get(switchback_http_exchange *x) {
    x->curl_code = -1;
    x->stop = SWITCHBACK_HTTP_STOP_NONE;
    x->status = 0;
    x->content_length = -1;
    x->body = NULL;
    x->body_length = 0;
    x->etag[0] = x->last_modified[0] = x->date[0] = x->content_encoding[0] = 0;
    x->redirect_url[0] = 0;
    x->error[0] = 0;
    x->header_bytes = 0;

    pthread_once(&load_once, load_curl);
    if (!curl.loaded) {
        snprintf(x->error, sizeof x->error, "%s", curl.load_error);
        return;
    }
    x->body = malloc(x->max_body + 1);
    CURL *handle = curl.easy_init();
    if (x->body == NULL || handle == NULL) {
        snprintf(x->error, sizeof x->error, "out of memory");
        if (handle) curl.easy_cleanup(handle);
        return;
    }
    struct curl_slist *headers = NULL;
    for (int i = 0; i < x->header_count; i++) headers = curl.slist_append(headers, x->headers[i]);
    char error[256] = {0};
    long timeout = x->timeout_ms > 0 ? x->timeout_ms : 1;

    curl.easy_setopt(handle, OPT_URL, x->url);
    if (x->post_body != NULL) {
        curl.easy_setopt(handle, OPT_POSTFIELDSIZE, x->post_length);
        curl.easy_setopt(handle, OPT_POSTFIELDS, (const char *)x->post_body);
    } else {
        curl.easy_setopt(handle, OPT_HTTPGET, 1L);
    }
    curl.easy_setopt(handle, OPT_NOSIGNAL, 1L);
    curl.easy_setopt(handle, OPT_FOLLOWLOCATION, 0L);
    curl.easy_setopt(handle, OPT_PROTOCOLS, (long)(PROTO_HTTP | PROTO_HTTPS));
    curl.easy_setopt(handle, OPT_REDIR_PROTOCOLS, (long)(PROTO_HTTP | PROTO_HTTPS));
    curl.easy_setopt(handle, OPT_HTTP_CONTENT_DECODING, 0L);
    curl.easy_setopt(handle, OPT_TIMEOUT_MS, timeout);
    curl.easy_setopt(handle, OPT_CONNECTTIMEOUT_MS, timeout);
    curl.easy_setopt(handle, OPT_ERRORBUFFER, error);
    if (x->user_agent) curl.easy_setopt(handle, OPT_USERAGENT, x->user_agent);
    if (x->no_proxy) curl.easy_setopt(handle, OPT_NOPROXY, x->no_proxy);
    if (headers) curl.easy_setopt(handle, OPT_HTTPHEADER, headers);
    curl.easy_setopt(handle, OPT_HEADERFUNCTION, (data_callback)on_header);
    curl.easy_setopt(handle, OPT_HEADERDATA, (void *)x);
    curl.easy_setopt(handle, OPT_WRITEFUNCTION, (data_callback)on_body);
    curl.easy_setopt(handle, OPT_WRITEDATA, (void *)x);
    curl.easy_setopt(handle, OPT_NOPROGRESS, 0L);
    curl.easy_setopt(handle, OPT_XFERINFOFUNCTION, (progress_callback)on_progress);
    curl.easy_setopt(handle, OPT_XFERINFODATA, (void *)x);

    x->curl_code = curl.easy_perform(handle);
    long status = 0;
    curl.easy_getinfo(handle, INFO_RESPONSE_CODE, &status);
    x->status = status;
    char *redirect = NULL;
    if (status >= 300 && status < 400 && curl.easy_getinfo(handle, INFO_REDIRECT_URL, &redirect) == 0 && redirect != NULL) {
        // A Location too long to keep is dropped whole (never judged cut short).
        if (strlen(redirect) < sizeof x->redirect_url) snprintf(x->redirect_url, sizeof x->redirect_url, "%s", redirect);
    }
    if (x->curl_code != 0) {
        snprintf(x->error, sizeof x->error, "%s", error[0] ? error : curl.easy_strerror(x->curl_code));
    }
    curl.easy_cleanup(handle);
    curl.slist_free_all(headers);
}
