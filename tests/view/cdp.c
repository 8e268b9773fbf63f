/* DevTools Protocol over a pipe: see cdp.h. */
#include "cdp.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

const char *cdp_browser(void)
{
    static char found[1024];
    static const char *const names[] = {"chromium-headless-shell", "chromium", "chromium-browser"};
    const char *path = getenv("PATH");
    for (size_t k = 0; k < sizeof names / sizeof *names; k++) {
        const char *p = path ? path : "/usr/bin";
        while (*p) {
            const char *colon = strchr(p, ':');
            size_t n = colon ? (size_t)(colon - p) : strlen(p);
            snprintf(found, sizeof found, "%.*s/%s", (int)n, p, names[k]);
            if (access(found, X_OK) == 0)
                return found;
            p += n + (colon != NULL);
        }
    }
    return NULL;
}

static int send_message(struct cdp *c, json_t *msg, char *err, size_t errlen)
{
    char *text = json_dumps(msg, JSON_COMPACT);
    json_decref(msg);
    if (!text) {
        snprintf(err, errlen, "cannot serialise a message");
        return -1;
    }
    size_t n = strlen(text) + 1, off = 0; /* with its NUL */
    while (off < n) {
        ssize_t w = write(c->to, text + off, n - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            snprintf(err, errlen, "browser pipe: %s", strerror(errno));
            free(text);
            return -1;
        }
        off += (size_t)w;
    }
    free(text);
    return 0;
}

/* Next message from the browser (a new reference), or NULL when it has gone. */
static json_t *read_message(struct cdp *c, char *err, size_t errlen)
{
    for (;;) {
        char *nul = c->len ? memchr(c->buf, '\0', c->len) : NULL;
        if (nul) {
            json_error_t jerr;
            json_t *msg = json_loadb(c->buf, (size_t)(nul - c->buf), 0, &jerr);
            size_t used = (size_t)(nul - c->buf) + 1;
            memmove(c->buf, c->buf + used, c->len - used);
            c->len -= used;
            if (!msg)
                snprintf(err, errlen, "bad message from the browser: %s", jerr.text);
            return msg;
        }
        if (c->cap - c->len < 65536) {
            size_t cap = c->cap ? 2 * c->cap : 1 << 20;
            char *b = realloc(c->buf, cap);
            if (!b) {
                snprintf(err, errlen, "out of memory");
                return NULL;
            }
            c->buf = b;
            c->cap = cap;
        }
        ssize_t r = read(c->from, c->buf + c->len, c->cap - c->len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            snprintf(err, errlen, "the browser closed its pipe");
            return NULL;
        }
        c->len += (size_t)r;
    }
}

static void note_event(struct cdp *c, json_t *msg)
{
    const char *method = json_string_value(json_object_get(msg, "method"));
    json_t *params = json_object_get(msg, "params");
    const char *text = NULL;
    char line[1024];
    if (method && !strcmp(method, "Runtime.exceptionThrown")) {
        json_t *d = json_object_get(params, "exceptionDetails");
        json_t *ex = json_object_get(d, "exception");
        text = json_string_value(json_object_get(ex, "description"));
        if (!text)
            text = json_string_value(json_object_get(d, "text"));
    } else if (method && !strcmp(method, "Runtime.consoleAPICalled") &&
               !strcmp(json_string_value(json_object_get(params, "type")) ?: "", "error")) {
        text = json_string_value(json_object_get(json_array_get(json_object_get(params, "args"), 0), "value"));
        if (!text)
            text = "console.error";
    }
    if (!text)
        return;
    snprintf(line, sizeof line, "%s: %s\n", method, text);
    size_t used = strlen(c->errors);
    snprintf(c->errors + used, sizeof c->errors - used, "%s", line);
    c->nerrors++;
}

static json_t *call(struct cdp *c, const char *method, json_t *params, int on_page, char *err, size_t errlen)
{
    int id = ++c->next_id;
    json_t *msg = json_pack("{s:i, s:s, s:o}", "id", id, "method", method, "params", params ? params : json_object());
    if (on_page && c->session[0])
        json_object_set_new(msg, "sessionId", json_string(c->session));
    if (send_message(c, msg, err, errlen) != 0)
        return NULL;
    for (;;) {
        json_t *reply = read_message(c, err, errlen);
        if (!reply)
            return NULL;
        if (json_integer_value(json_object_get(reply, "id")) != id) {
            note_event(c, reply);
            json_decref(reply);
            continue;
        }
        json_t *error = json_object_get(reply, "error");
        json_t *result = json_incref(json_object_get(reply, "result"));
        if (error)
            snprintf(err, errlen, "%s: %s", method, json_string_value(json_object_get(error, "message")) ?: "error");
        json_decref(reply);
        if (error) {
            json_decref(result);
            return NULL;
        }
        return result ? result : json_object();
    }
}

json_t *cdp_call(struct cdp *c, const char *method, json_t *params, char *err, size_t errlen)
{
    return call(c, method, params, 1, err, errlen);
}

int cdp_start(struct cdp *c, int width, int height, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    c->to = c->from = -1;
    const char *browser = cdp_browser();
    if (!browser) {
        snprintf(err, errlen, "no chromium-headless-shell or chromium on PATH (scripts/bootstrap.sh installs it)");
        return -1;
    }
    int down[2], up[2]; /* down: we write, the browser reads on fd 3; up: it writes on fd 4 */
    if (pipe2(down, O_CLOEXEC) != 0 || pipe2(up, O_CLOEXEC) != 0) {
        snprintf(err, errlen, "pipe: %s", strerror(errno));
        return -1;
    }
    char profile[] = "/tmp/wstrace-chromium-XXXXXX";
    if (!mkdtemp(profile)) {
        snprintf(err, errlen, "mkdtemp: %s", strerror(errno));
        return -1;
    }
    c->pid = fork();
    if (c->pid < 0) {
        snprintf(err, errlen, "fork: %s", strerror(errno));
        return -1;
    }
    if (c->pid == 0) {
        /* Out of the way first: the pipes may themselves be fds 3 and 4. */
        int rd = fcntl(down[0], F_DUPFD, 10), wr = fcntl(up[1], F_DUPFD, 10);
        dup2(rd, 3);
        dup2(wr, 4);
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 1);
        dup2(null, 2);
        char dir_arg[128];
        snprintf(dir_arg, sizeof dir_arg, "--user-data-dir=%s", profile);
        execl(browser, browser, "--headless", "--remote-debugging-pipe", "--no-sandbox", "--disable-gpu",
              "--no-first-run", "--disable-extensions", "--hide-scrollbars", "--allow-file-access-from-files", dir_arg,
              "about:blank", (char *)NULL);
        _exit(127);
    }
    close(down[0]);
    close(up[1]);
    c->to = down[1];
    c->from = up[0];
    json_t *r = call(c, "Target.createTarget", json_pack("{s:s}", "url", "about:blank"), 0, err, errlen);
    if (!r)
        return -1;
    json_t *a =
        call(c, "Target.attachToTarget",
             json_pack("{s:s, s:b}", "targetId", json_string_value(json_object_get(r, "targetId")) ?: "", "flatten", 1),
             0, err, errlen);
    json_decref(r);
    if (!a)
        return -1;
    snprintf(c->session, sizeof c->session, "%s", json_string_value(json_object_get(a, "sessionId")) ?: "");
    json_decref(a);
    static const char *const enable[] = {"Runtime.enable", "Page.enable"};
    for (size_t i = 0; i < 2; i++) {
        json_t *e = cdp_call(c, enable[i], NULL, err, errlen);
        if (!e)
            return -1;
        json_decref(e);
    }
    json_t *m = cdp_call(
        c, "Emulation.setDeviceMetricsOverride",
        json_pack("{s:i, s:i, s:i, s:b}", "width", width, "height", height, "deviceScaleFactor", 1, "mobile", 0), err,
        errlen);
    if (!m)
        return -1;
    json_decref(m);
    return 0;
}

void cdp_stop(struct cdp *c)
{
    if (c->to >= 0)
        close(c->to);
    if (c->from >= 0)
        close(c->from);
    if (c->pid > 0) {
        kill(c->pid, SIGTERM);
        waitpid(c->pid, NULL, 0);
    }
    free(c->buf);
    c->to = c->from = -1;
    c->pid = 0;
    c->buf = NULL;
}

json_t *cdp_eval(struct cdp *c, const char *expression, char *err, size_t errlen)
{
    json_t *r = cdp_call(c, "Runtime.evaluate",
                         json_pack("{s:s, s:b, s:b}", "expression", expression, "returnByValue", 1, "awaitPromise", 1),
                         err, errlen);
    if (!r)
        return NULL;
    json_t *ex = json_object_get(r, "exceptionDetails");
    if (ex) {
        snprintf(err, errlen, "evaluating '%s': %s", expression,
                 json_string_value(json_object_get(json_object_get(ex, "exception"), "description")) ?: "exception");
        json_decref(r);
        return NULL;
    }
    json_t *v = json_incref(json_object_get(json_object_get(r, "result"), "value"));
    json_decref(r);
    return v ? v : json_null();
}

int cdp_open(struct cdp *c, const char *url, const char *expression, int polls, char *err, size_t errlen)
{
    json_t *r = cdp_call(c, "Page.navigate", json_pack("{s:s}", "url", url), err, errlen);
    if (!r)
        return -1;
    json_decref(r);
    for (int i = 0; i < polls; i++) {
        json_t *v = cdp_eval(c, expression, err, errlen);
        int done = v && json_is_true(v);
        json_decref(v);
        if (done)
            return 0;
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    snprintf(err, errlen, "%s: '%s' did not become true", url, expression);
    return -1;
}

int cdp_mouse(struct cdp *c, const char *type, double x, double y, double delta_y, char *err, size_t errlen)
{
    json_t *p = json_pack("{s:s, s:f, s:f}", "type", type, "x", x, "y", y);
    if (!strcmp(type, "mousePressed") || !strcmp(type, "mouseReleased")) {
        json_object_set_new(p, "button", json_string("left"));
        json_object_set_new(p, "clickCount", json_integer(1));
    }
    if (!strcmp(type, "mouseWheel")) {
        json_object_set_new(p, "deltaX", json_real(0));
        json_object_set_new(p, "deltaY", json_real(delta_y));
    }
    json_t *r = cdp_call(c, "Input.dispatchMouseEvent", p, err, errlen);
    json_decref(r);
    return r ? 0 : -1;
}

unsigned char *cdp_screenshot(struct cdp *c, size_t *len, char *err, size_t errlen)
{
    json_t *r = cdp_call(c, "Page.captureScreenshot", json_pack("{s:s}", "format", "png"), err, errlen);
    if (!r)
        return NULL;
    const char *b64 = json_string_value(json_object_get(r, "data"));
    size_t n = b64 ? strlen(b64) : 0, o = 0;
    unsigned char *out = malloc(n / 4 * 3 + 3);
    unsigned v = 0;
    int bits = 0;
    for (size_t i = 0; out && i < n; i++) {
        const char *alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        const char *at = b64[i] == '=' ? NULL : strchr(alphabet, b64[i]);
        if (!at)
            continue;
        v = v << 6 | (unsigned)(at - alphabet);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (unsigned char)(v >> bits);
        }
    }
    json_decref(r);
    *len = o;
    return out;
}
