/* lineedit.c - the terminal line editor behind qlm chat's prompt. */
#include "lineedit.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

struct qlm_le {
    int in, out;
    char **hist;        /* oldest first */
    int n_hist, max_hist;
    FILE *hist_file;    /* appended to, or NULL */
    /* the line being edited */
    char *buf;
    size_t len, cap, pos; /* bytes; pos is the cursor, on a UTF-8 boundary */
    size_t hscroll;       /* first shown column */
};

qlm_le *qlm_le_new(int fd_in, int fd_out, int history_max)
{
    qlm_le *le = calloc(1, sizeof *le);
    if (!le) return NULL;
    le->in = fd_in;
    le->out = fd_out;
    le->max_hist = history_max > 0 ? history_max : 0;
    return le;
}

void qlm_le_free(qlm_le *le)
{
    if (!le) return;
    for (int i = 0; i < le->n_hist; i++) free(le->hist[i]);
    free(le->hist);
    if (le->hist_file) fclose(le->hist_file);
    free(le->buf);
    free(le);
}

/* ---- history ---- */

static void hist_push(qlm_le *le, const char *line)
{
    if (!le->max_hist || !*line) return;
    if (le->n_hist && !strcmp(le->hist[le->n_hist - 1], line)) return;
    char *copy = strdup(line);
    if (!copy) return;
    if (le->n_hist == le->max_hist) {
        free(le->hist[0]);
        memmove(le->hist, le->hist + 1, sizeof *le->hist * (size_t)(le->n_hist - 1));
        le->n_hist--;
    } else {
        char **nh = realloc(le->hist, sizeof *nh * (size_t)(le->n_hist + 1));
        if (!nh) { free(copy); return; }
        le->hist = nh;
    }
    le->hist[le->n_hist++] = copy;
}

/* One entry per file line: backslash and newline escaped. */
void qlm_le_history_add(qlm_le *le, const char *line)
{
    const int before = le->n_hist;
    const char *last = before ? le->hist[before - 1] : NULL;
    hist_push(le, line);
    if (!le->hist_file || (le->n_hist == before && last == le->hist[le->n_hist - 1])) return;
    for (const char *p = line; *p; p++) {
        if (*p == '\\') fputs("\\\\", le->hist_file);
        else if (*p == '\n') fputs("\\n", le->hist_file);
        else fputc(*p, le->hist_file);
    }
    fputc('\n', le->hist_file);
    fflush(le->hist_file);
}

bool qlm_le_history_file(qlm_le *le, const char *path)
{
    if (!le->max_hist) return true;
    FILE *f = fopen(path, "r");
    if (f) {
        char *l = NULL;
        size_t cap = 0;
        ssize_t n;
        while ((n = getline(&l, &cap, f)) > 0) {
            if (l[n - 1] == '\n') l[--n] = 0;
            size_t k = 0;
            for (ssize_t i = 0; i < n; i++) {
                if (l[i] == '\\' && i + 1 < n) l[k++] = l[++i] == 'n' ? '\n' : l[i];
                else l[k++] = l[i];
            }
            l[k] = 0;
            hist_push(le, l);
        }
        free(l);
        fclose(f);
    }
    const int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0 || !(le->hist_file = fdopen(fd, "a"))) {
        if (fd >= 0) close(fd);
        return false;
    }
    return true;
}

/* ---- the edit buffer ---- */

static bool is_cont(char c) { return ((unsigned char)c & 0xc0) == 0x80; }

static size_t prev_char(const qlm_le *le, size_t p)
{
    if (!p) return 0;
    do p--; while (p && is_cont(le->buf[p]));
    return p;
}

static size_t next_char(const qlm_le *le, size_t p)
{
    if (p >= le->len) return le->len;
    do p++; while (p < le->len && is_cont(le->buf[p]));
    return p;
}

static bool insert(qlm_le *le, const char *s, size_t n)
{
    if (le->len + n + 1 > le->cap) {
        size_t cap = (le->len + n + 1) * 2;
        char *nb = realloc(le->buf, cap);
        if (!nb) return false;
        le->buf = nb;
        le->cap = cap;
    }
    memmove(le->buf + le->pos + n, le->buf + le->pos, le->len - le->pos);
    memcpy(le->buf + le->pos, s, n);
    le->len += n;
    le->pos += n;
    le->buf[le->len] = 0;
    return true;
}

static void erase(qlm_le *le, size_t from, size_t to)
{
    memmove(le->buf + from, le->buf + to, le->len - to);
    le->len -= to - from;
    if (le->pos > to) le->pos -= to - from;
    else if (le->pos > from) le->pos = from;
    le->buf[le->len] = 0;
}

static bool set_text(qlm_le *le, const char *s)
{
    le->len = le->pos = 0;
    return insert(le, s, strlen(s));
}

/* ---- drawing ---- */

static int term_cols(const qlm_le *le)
{
    struct winsize ws;
    if (ioctl(le->out, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
    return 80;
}

/* Columns taken by s[0..n): one per code point (wide characters are rare
 * enough in a prompt that they only make the scrolling a little off). */
static size_t width(const char *s, size_t n)
{
    size_t w = 0;
    for (size_t i = 0; i < n; i++) w += !is_cont(s[i]);
    return w;
}

typedef struct obuf {
    char b[4096];
    size_t n;
    int fd;
} obuf;

static void oflush(obuf *o)
{
    size_t off = 0;
    while (off < o->n) {
        ssize_t w = write(o->fd, o->b + off, o->n - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) break;
        off += (size_t)w;
    }
    o->n = 0;
}

static void oput(obuf *o, const char *s, size_t n)
{
    while (n) {
        if (o->n == sizeof o->b) oflush(o);
        size_t k = sizeof o->b - o->n < n ? sizeof o->b - o->n : n;
        memcpy(o->b + o->n, s, k);
        o->n += k;
        s += k;
        n -= k;
    }
}

static void refresh(qlm_le *le, const char *prompt)
{
    const size_t cols = (size_t)term_cols(le), plen = width(prompt, strlen(prompt));
    const size_t avail = cols > plen + 2 ? cols - plen - 1 : 1;
    const size_t ccol = width(le->buf, le->pos);
    if (ccol < le->hscroll) le->hscroll = ccol;
    if (ccol > le->hscroll + avail) le->hscroll = ccol - avail;
    obuf o = {.fd = le->out};
    oput(&o, "\r", 1);
    oput(&o, prompt, strlen(prompt));
    size_t col = 0, shown = 0;
    for (size_t i = 0; i < le->len; i = next_char(le, i)) {
        if (col++ < le->hscroll) continue;
        if (shown++ >= avail) break;
        const size_t e = next_char(le, i);
        const char c = le->buf[i];
        if (c == '\n') oput(&o, "\xe2\x86\xb5", 3);   /* ↵ */
        else if ((unsigned char)c < 0x20 || c == 0x7f) oput(&o, " ", 1);
        else oput(&o, le->buf + i, e - i);
    }
    oput(&o, "\x1b[K\r", 4);
    char mv[32];
    const size_t to = plen + ccol - le->hscroll;
    if (to) oput(&o, mv, (size_t)snprintf(mv, sizeof mv, "\x1b[%zuC", to));
    oflush(&o);
}

/* ---- input ---- */

/* One byte; -1 at end of input or error.  wait_ms >= 0: give up (-2)
 * when nothing arrives in that time (a lone Escape key). */
static int read_byte(const qlm_le *le, int wait_ms)
{
    if (wait_ms >= 0) {
        struct pollfd p = {.fd = le->in, .events = POLLIN};
        int r;
        while ((r = poll(&p, 1, wait_ms)) < 0 && errno == EINTR) {}
        if (r == 0) return -2;
    }
    unsigned char c;
    for (;;) {
        ssize_t n = read(le->in, &c, 1);
        if (n == 1) return c;
        if (n < 0 && errno == EINTR) continue;
        return -1;
    }
}

/* After "ESC [200~": everything up to "ESC [201~" is text. */
static bool read_paste(qlm_le *le)
{
    static const char end[] = "\x1b[201~";
    size_t matched = 0;
    for (;;) {
        int c = read_byte(le, -1);
        if (c < 0) return false;
        if (c == end[matched]) {
            if (++matched == sizeof end - 1) return true;
            continue;
        }
        if (matched && !insert(le, end, matched)) return false;
        matched = c == end[0];
        if (matched) continue;
        char ch = c == '\r' ? '\n' : (char)c;
        if (!insert(le, &ch, 1)) return false;
    }
}

enum key {
    K_NONE = 1000, K_LEFT, K_RIGHT, K_UP, K_DOWN, K_HOME, K_END, K_DEL, K_PASTE
};

/* Decodes what follows an ESC: the CSI and SS3 keys the editor knows. */
static int read_escape(const qlm_le *le)
{
    int c = read_byte(le, 50);
    if (c != '[' && c != 'O') return K_NONE;
    const bool ss3 = c == 'O';
    char num[8];
    size_t nn = 0;
    for (;;) {
        c = read_byte(le, 50);
        if (c < 0) return K_NONE;
        if (!ss3 && ((c >= '0' && c <= '9') || c == ';')) {
            if (nn < sizeof num - 1) num[nn++] = (char)c;
            continue;
        }
        break;
    }
    num[nn] = 0;
    switch (c) {
    case 'A': return K_UP;
    case 'B': return K_DOWN;
    case 'C': return K_RIGHT;
    case 'D': return K_LEFT;
    case 'H': return K_HOME;
    case 'F': return K_END;
    case '~':
        if (!strcmp(num, "1") || !strcmp(num, "7")) return K_HOME;
        if (!strcmp(num, "4") || !strcmp(num, "8")) return K_END;
        if (!strcmp(num, "3")) return K_DEL;
        if (!strcmp(num, "200")) return K_PASTE;
        return K_NONE;
    default: return K_NONE;
    }
}

static void history_move(qlm_le *le, int *idx, char **saved, int dir)
{
    const int to = *idx + dir;
    if (to < 0 || to > le->n_hist) return;
    if (*idx == le->n_hist) {   /* leaving the line being typed: keep it */
        free(*saved);
        *saved = strdup(le->buf ? le->buf : "");
    }
    *idx = to;
    set_text(le, to == le->n_hist ? (*saved ? *saved : "") : le->hist[to]);
}

qlm_le_status qlm_le_read(qlm_le *le, const char *prompt, char **line)
{
    *line = NULL;
    struct termios orig, raw;
    if (tcgetattr(le->in, &orig) < 0) return QLM_LE_ERROR;
    raw = orig;
    /* No echo, no line buffering, no signals (Ctrl-C arrives as a byte),
     * no flow control, CR not turned into NL; output processing stays on. */
    raw.c_iflag &= ~(tcflag_t)(BRKINT | ICRNL | INPCK | ISTRIP | IXON);
    raw.c_lflag &= ~(tcflag_t)(ECHO | ICANON | IEXTEN | ISIG);
    raw.c_cflag |= CS8;
    raw.c_cc[VMIN] = 1;
    raw.c_cc[VTIME] = 0;
    /* TCSADRAIN, not FLUSH: what was typed during a reply is kept. */
    if (tcsetattr(le->in, TCSADRAIN, &raw) < 0) return QLM_LE_ERROR;
    if (write(le->out, "\x1b[?2004h", 8) < 0) {} /* bracketed paste on */

    le->len = le->pos = le->hscroll = 0;
    if (!le->buf && !(le->buf = malloc(le->cap = 64))) le->cap = 0;
    if (le->buf) le->buf[0] = 0;
    int hidx = le->n_hist;
    char *saved = NULL;
    qlm_le_status st = QLM_LE_ERROR;
    refresh(le, prompt);
    for (;;) {
        int c = read_byte(le, -1);
        if (c < 0) { st = le->len ? QLM_LE_LINE : QLM_LE_EOF; break; }
        if (c == 27) c = read_escape(le);
        bool ok = true;
        switch (c) {
        case '\r': case '\n': st = QLM_LE_LINE; goto out;
        case 3: st = QLM_LE_INTERRUPT; goto out;
        case 4:
            if (!le->len) { st = QLM_LE_EOF; goto out; }
            /* Ctrl-D on text deletes like Delete */
            /* fall through */
        case K_DEL:
            if (le->pos < le->len) erase(le, le->pos, next_char(le, le->pos));
            break;
        case 127: case 8:
            if (le->pos) erase(le, prev_char(le, le->pos), le->pos);
            break;
        case 1: case K_HOME: le->pos = 0; break;
        case 5: case K_END: le->pos = le->len; break;
        case 2: case K_LEFT: le->pos = prev_char(le, le->pos); break;
        case 6: case K_RIGHT: le->pos = next_char(le, le->pos); break;
        case 11: erase(le, le->pos, le->len); break;
        case 21: erase(le, 0, le->pos); break;
        case 23: {   /* Ctrl-W: the word before the cursor and spaces after it */
            size_t p = le->pos;
            while (p && le->buf[p - 1] == ' ') p--;
            while (p && le->buf[p - 1] != ' ') p--;
            erase(le, p, le->pos);
            break;
        }
        case 12: if (write(le->out, "\x1b[H\x1b[2J", 7) < 0) {} break;
        case 16: case K_UP: history_move(le, &hidx, &saved, -1); break;
        case 14: case K_DOWN: history_move(le, &hidx, &saved, +1); break;
        case K_PASTE: ok = read_paste(le); break;
        case '\t': ok = insert(le, "    ", 4); break;
        default:
            if (c >= 32 && c < 256) {
                char ch = (char)c;
                ok = insert(le, &ch, 1);
            }
            break;
        }
        if (!ok) { st = QLM_LE_ERROR; goto out; }
        refresh(le, prompt);
    }
out:
    free(saved);
    refresh(le, prompt);
    if (write(le->out, "\x1b[?2004l\n", 9) < 0) {}
    tcsetattr(le->in, TCSADRAIN, &orig);
    if (st == QLM_LE_LINE || st == QLM_LE_INTERRUPT) {
        *line = strdup(le->buf ? le->buf : "");
        if (!*line) st = QLM_LE_ERROR;
    }
    return st;
}
