/* tok_bpe.c - byte-level BPE (tokenizer.ggml.model = "gpt2").
 *
 * Text is first cut into words by the pre-tokenizer its
 * tokenizer.ggml.pre names, each word's UTF-8 bytes are mapped to GPT-2's
 * printable code points, and merges are applied lowest rank first.
 *
 * The pre-tokenizers are regex chains in the reference (llama.cpp): each
 * regex cuts every piece the previous ones left, and what a regex does
 * not match stays as its own piece.  There is no regex engine here: each
 * pattern is a hand-written matcher over code points.  Three chains (the
 * GPT-2, Llama-3 and Qwen2 patterns) the reference runs through its own
 * hand-written splitters, which differ from the regexes in corner cases
 * (a lone space at the end of a piece, for one); those are reproduced as
 * the reference behaves, not as the regex reads.  The rest follow
 * ECMAScript semantics: leftmost match, alternatives in order, greedy
 * repetition.  Character classes follow Unicode categories, with one
 * reference detail kept: a non-ASCII whitespace character is seen as
 * U+000B by the regexes, so it never falls in a class other than \s. */
#include <stdlib.h>
#include <string.h>

#include "heap.h"
#include "tok_internal.h"
#include "unicode.h"

/* ---- pre-tokenizer names ---- */

static const struct {
    const char *name;
    qlm_pre_kind kind;
    bool ignore_merges, add_bos;
} pre_names[] = {
    {"default", QLM_PRE_DEFAULT, false, false},
    {"llama3", QLM_PRE_LLAMA3, true, true},
    {"llama-v3", QLM_PRE_LLAMA3, true, true},
    {"llama-bpe", QLM_PRE_LLAMA3, true, true},
    {"falcon3", QLM_PRE_LLAMA3, true, true},
    {"falcon-h1", QLM_PRE_LLAMA3, true, true},
    {"pixtral", QLM_PRE_LLAMA3, true, true},
    {"dbrx", QLM_PRE_LLAMA3, false, false},
    {"smaug-bpe", QLM_PRE_LLAMA3, false, false},
    {"qwen2", QLM_PRE_QWEN2, false, false},
    {"deepseek-r1-qwen", QLM_PRE_QWEN2, false, false},
    {"stablelm2", QLM_PRE_QWEN2, false, false},
    {"megrez", QLM_PRE_QWEN2, false, false},
    {"gpt-2", QLM_PRE_GPT2, false, false},
    {"phi-2", QLM_PRE_GPT2, false, false},
    {"mpt", QLM_PRE_GPT2, false, false},
    {"olmo", QLM_PRE_GPT2, false, false},
    {"jais", QLM_PRE_GPT2, false, false},
    {"exaone4", QLM_PRE_GPT2, false, false},
    {"starcoder", QLM_PRE_STARCODER, false, false},
    {"refact", QLM_PRE_STARCODER, false, false},
    {"smollm", QLM_PRE_STARCODER, false, false},
    {"command-r", QLM_PRE_STARCODER, false, false},
    {"codeshell", QLM_PRE_STARCODER, false, false},
    {"exaone", QLM_PRE_STARCODER, false, false},
    {"minerva-7b", QLM_PRE_STARCODER, false, false},
    {"falcon", QLM_PRE_FALCON, false, false},
    {"deepseek-llm", QLM_PRE_DEEPSEEK_LLM, false, false},
    {"deepseek-coder", QLM_PRE_DEEPSEEK_CODER, false, false},
};

bool qlm_bpe_pre_lookup(const char *name, qlm_pre_kind *kind, bool *ignore_merges,
                        bool *add_bos)
{
    for (size_t i = 0; i < sizeof pre_names / sizeof pre_names[0]; i++) {
        if (!strcmp(name, pre_names[i].name)) {
            *kind = pre_names[i].kind;
            *ignore_merges = pre_names[i].ignore_merges;
            *add_bos = pre_names[i].add_bos;
            return true;
        }
    }
    return false;
}

/* ---- GPT-2 byte mapping ---- */

/* Printable Latin-1 bytes stand for themselves; the other 68 bytes get
 * U+0100.. in byte order, so every byte has a visible code point. */
static bool byte_is_printable(unsigned b)
{
    return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

uint32_t qlm_bpe_byte_to_cp(uint8_t b)
{
    if (byte_is_printable(b))
        return b;
    if (b <= 0x20)
        return 0x100 + b;
    if (b <= 0xA0)
        return 0x100 + 0x21 + (b - 0x7F);
    return 0x100 + 0x21 + 0x22; /* 0xAD, the last non-printable byte */
}

int qlm_bpe_cp_to_byte(uint32_t cp)
{
    if (cp < 0x100)
        return byte_is_printable(cp) ? (int)cp : -1;
    if (cp < 0x100 + 0x21)
        return (int)(cp - 0x100);
    if (cp < 0x100 + 0x21 + 0x22)
        return (int)(cp - 0x100 - 0x21 + 0x7F);
    if (cp == 0x100 + 0x21 + 0x22)
        return 0xAD;
    return -1;
}

/* ---- piece lists ---- */

typedef struct lens {
    size_t *v;
    size_t n, cap;
    bool oom;
} lens;

static void lens_push(lens *l, size_t x)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        size_t *nv = realloc(l->v, cap * sizeof *nv);
        if (!nv) {
            l->oom = true;
            return;
        }
        l->v = nv;
        l->cap = cap;
    }
    l->v[l->n++] = x;
}

/* The reference's splitters track where the last piece ended and emit
 * the stretch up to a new end; empty stretches are dropped. */
typedef struct cursor {
    lens *out;
    size_t prev;
} cursor;

static void emit_to(cursor *c, size_t end)
{
    if (end > c->prev)
        lens_push(c->out, end - c->prev);
    c->prev = end;
}

/* Flags of position pos inside the piece, 0 past its end: the splitters
 * treat a piece boundary like the end of the text. */
static unsigned flags_at(const uint32_t *cp, size_t pos, size_t end)
{
    return pos < end ? qlm_ucp_flags(cp[pos]) : 0;
}

#define F_WS QLM_UCP_WHITESPACE
#define F_L QLM_UCP_LETTER
#define F_N QLM_UCP_NUMBER
#define F_P QLM_UCP_PUNCT

static uint32_t ascii_lower(uint32_t c) { return (c >= 'A' && c <= 'Z') ? c + 32 : c; }

/* 's 't 're 've 'm 'll 'd at pos: length of the match or 0. */
static size_t contraction(const uint32_t *cp, size_t pos, size_t end, bool fold)
{
    if (cp[pos] != '\'' || pos + 1 >= end)
        return 0;
    uint32_t a = fold ? ascii_lower(cp[pos + 1]) : cp[pos + 1];
    if (a == 's' || a == 't' || a == 'm' || a == 'd')
        return 2;
    if (pos + 2 >= end)
        return 0;
    uint32_t b = fold ? ascii_lower(cp[pos + 2]) : cp[pos + 2];
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l'))
        return 3;
    return 0;
}

/* 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)
 * as the reference's splitter runs it (it also takes a last lone
 * whitespace run whole). */
static void split_gpt2(const uint32_t *cp, size_t beg, size_t end, lens *out)
{
    cursor cur = {out, beg};
    size_t pos = beg;
    while (pos < end) {
        size_t k = contraction(cp, pos, end, false);
        if (k) {
            pos += k;
            emit_to(&cur, pos);
            continue;
        }
        unsigned f = flags_at(cp, pos, end);
        bool sp = cp[pos] == ' ';
        unsigned f2 = sp ? flags_at(cp, pos + 1, end) : f;
        if (f2 & F_L) {
            pos += sp;
            while (flags_at(cp, pos, end) & F_L)
                pos++;
            emit_to(&cur, pos);
            continue;
        }
        if (f2 & F_N) {
            pos += sp;
            while (flags_at(cp, pos, end) & F_N)
                pos++;
            emit_to(&cur, pos);
            continue;
        }
        if (!(f2 & (F_WS | F_L | F_N)) && f2) {
            pos += sp;
            for (unsigned g; (g = flags_at(cp, pos, end)) && !(g & (F_WS | F_L | F_N));)
                pos++;
            emit_to(&cur, pos);
            continue;
        }
        size_t nws = 0;
        while (flags_at(cp, pos + nws, end) & F_WS)
            nws++;
        if (nws > 1 && pos + nws < end) {
            /* \s+(?!\S): leave the last space to prefix the next word */
            pos += nws - 1;
        } else if (nws > 0) {
            pos += nws;
        } else {
            pos++;
        }
        emit_to(&cur, pos);
    }
}

/* (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,max_digits}|
 *  ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 * Llama-3 (max_digits 3) and Qwen2 (1), as the reference's splitter runs
 * them. */
static void split_llama3(const uint32_t *cp, size_t beg, size_t end, lens *out,
                         size_t max_digits)
{
    cursor cur = {out, beg};
    size_t pos = beg;
    while (pos < end) {
        size_t k = contraction(cp, pos, end, true);
        if (k) {
            pos += k;
            emit_to(&cur, pos);
            continue;
        }
        uint32_t c = cp[pos];
        unsigned f = flags_at(cp, pos, end);
        if (!(c == '\r' || c == '\n' || (f & F_N))) {
            if ((f & F_L) || (flags_at(cp, pos + 1, end) & F_L)) {
                pos++;
                while (flags_at(cp, pos, end) & F_L)
                    pos++;
                emit_to(&cur, pos);
                continue;
            }
        }
        if (f & F_N) {
            size_t run = 0;
            while (flags_at(cp, pos, end) & F_N) {
                pos++;
                if (++run == max_digits) {
                    emit_to(&cur, pos);
                    run = 0;
                }
            }
            emit_to(&cur, pos);
            continue;
        }
        bool sp = c == ' ';
        unsigned f2 = sp ? flags_at(cp, pos + 1, end) : f;
        if (!(f2 & (F_WS | F_L | F_N)) && f) {
            pos += sp;
            for (unsigned g; (g = flags_at(cp, pos, end)) && !(g & (F_WS | F_L | F_N));)
                pos++;
            while (pos < end && (cp[pos] == '\r' || cp[pos] == '\n'))
                pos++;
            emit_to(&cur, pos);
            continue;
        }
        size_t nws = 0, after_last_nl = 0;
        while (flags_at(cp, pos + nws, end) & F_WS) {
            if (cp[pos + nws] == '\r' || cp[pos + nws] == '\n')
                after_last_nl = pos + nws + 1;
            nws++;
        }
        if (after_last_nl) {
            pos = after_last_nl; /* \s*[\r\n]+ */
        } else if (nws > 1 && pos + nws < end) {
            pos += nws - 1;      /* \s+(?!\S) */
        } else if (nws > 0) {
            pos += nws;          /* \s+ */
        } else {
            pos++;
        }
        emit_to(&cur, pos);
    }
}

/* ---- regex-style matchers: length matched at pos, 0 for none ---- */

typedef size_t (*matcher)(const uint32_t *cp, size_t pos, size_t end);

static bool is_ws(uint32_t c) { return qlm_ucp_flags(c) & F_WS; }

/* What the reference's wide-char regexes compare: non-ASCII whitespace
 * was replaced by U+000B before matching. */
static uint32_t regex_view(uint32_t c) { return (c >= 0x80 && is_ws(c)) ? 0x0B : c; }

typedef struct cp_range {
    uint32_t lo, hi;
} cp_range;

static bool in_ranges(uint32_t c, const cp_range *r, size_t n)
{
    c = regex_view(c);
    for (size_t i = 0; i < n; i++)
        if (c >= r[i].lo && c <= r[i].hi)
            return true;
    return false;
}

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

/* DeepSeek LLM's letter class (from its tokenizer.json), as ranges. */
static const cp_range ds_letters[] = {
    {0x41, 0x5A}, {0x61, 0x7A}, {0xB5, 0xB5}, {0xC0, 0xD6}, {0xD8, 0xF6},
    {0xF8, 0x1BA}, {0x1BC, 0x1BF}, {0x1C4, 0x293}, {0x295, 0x2AF}, {0x370, 0x373},
    {0x376, 0x377}, {0x37B, 0x37D}, {0x37F, 0x37F}, {0x386, 0x386}, {0x388, 0x38A},
    {0x38C, 0x38C}, {0x38E, 0x3A1}, {0x3A3, 0x3F5}, {0x3F7, 0x481}, {0x48A, 0x52F},
    {0x531, 0x556}, {0x10A0, 0x10C5}, {0x13A0, 0x13F5}, {0x13F8, 0x13FD}, {0x1C90, 0x1CBA},
    {0x1CBD, 0x1CBF}, {0x1D00, 0x1D2B}, {0x1D6B, 0x1D77}, {0x1D79, 0x1D9A}, {0x1E00, 0x1F15},
    {0x1F18, 0x1F1D}, {0x1F20, 0x1F45}, {0x1F48, 0x1F4D}, {0x1F50, 0x1F57}, {0x1F59, 0x1F59},
    {0x1F5B, 0x1F5B}, {0x1F5D, 0x1F5D}, {0x1F5F, 0x1F7D}, {0x1F80, 0x1FB4}, {0x1FB6, 0x1FBC},
    {0x1FBE, 0x1FBE}, {0x1FC2, 0x1FC4}, {0x1FC6, 0x1FCC}, {0x1FD0, 0x1FD3}, {0x1FD6, 0x1FDB},
    {0x1FE0, 0x1FEC}, {0x1FF2, 0x1FF4}, {0x1FF6, 0x1FFC}, {0x2102, 0x2102}, {0x2107, 0x2107},
    {0x210A, 0x2113}, {0x2115, 0x2115}, {0x2119, 0x211D}, {0x2124, 0x2124}, {0x2126, 0x2126},
    {0x2128, 0x2128}, {0x212A, 0x212D}, {0x212F, 0x2134}, {0x2139, 0x2139}, {0x213C, 0x213F},
    {0x2145, 0x2149}, {0x214E, 0x214E}, {0x2183, 0x2184}, {0x2C00, 0x2C7B}, {0x2C7E, 0x2CE4},
    {0x2CEB, 0x2CEE}, {0x2CF2, 0x2CF3}, {0xA640, 0xA66D}, {0xA680, 0xA69B}, {0xA722, 0xA76F},
    {0xA771, 0xA787}, {0xA78B, 0xA78E}, {0xAB70, 0xABBF}, {0xFB00, 0xFB06}, {0xFB13, 0xFB17},
    {0xFF21, 0xFF3A}, {0xFF41, 0xFF5A}, {0x10400, 0x1044F}, {0x104B0, 0x104D3}, {0x104D8, 0x104FB},
    {0x10C80, 0x10CB2}, {0x10CC0, 0x10CF2}, {0x118A0, 0x118DF}, {0x1E900, 0x1E943},
};

/* DeepSeek LLM's punctuation class: ASCII, fullwidth forms, curly quotes
 * and the first CJK symbols (U+3000 is whitespace, so never matches). */
static const cp_range ds_punct[] = {
    {0x21, 0x2F}, {0x3A, 0x7E}, {0xFF01, 0xFF0F}, {0xFF1A, 0xFF5E},
    {0x2018, 0x201F}, {0x3000, 0x3002},
};

/* CJK ideographs, U+0800..U+4E00 (sic, as DeepSeek wrote it) and Hangul. */
static const cp_range cjk[] = {
    {0x4E00, 0x9FA5}, {0x0800, 0x4E00}, {0xAC00, 0xD7FF},
};

/* A character class: a category flag, or explicit ranges compared the
 * way the reference's wide-char regexes compare them. */
typedef struct char_class {
    unsigned flag;
    const cp_range *ranges;
    size_t n_ranges;
} char_class;

static const char_class cls_letter = {F_L, NULL, 0};
static const char_class cls_punct = {F_P, NULL, 0};
static const char_class cls_number = {F_N, NULL, 0};
static const char_class cls_space = {F_WS, NULL, 0};
static const char_class cls_ds_letter = {0, ds_letters, N_OF(ds_letters)};
static const char_class cls_ds_punct = {0, ds_punct, N_OF(ds_punct)};
static const char_class cls_cjk = {0, cjk, N_OF(cjk)};

static bool in_class(uint32_t c, const char_class *k)
{
    return k->ranges ? in_ranges(c, k->ranges, k->n_ranges) : (qlm_ucp_flags(c) & k->flag) != 0;
}

/* X+ : length of the run of class members at pos. */
static size_t run(const uint32_t *cp, size_t pos, size_t end, const char_class *k)
{
    size_t n = 0;
    while (pos + n < end && in_class(cp[pos + n], k))
        n++;
    return n;
}

/* \s?X+ : no class used here holds whitespace, so a leading space counts
 * only when X follows it. */
static size_t space_opt_run(const uint32_t *cp, size_t pos, size_t end, const char_class *k)
{
    if (is_ws(cp[pos])) {
        size_t n = pos + 1 < end ? run(cp, pos + 1, end, k) : 0;
        return n ? n + 1 : 0;
    }
    return run(cp, pos, end, k);
}

/* \p{N} */
static size_t m_number(const uint32_t *cp, size_t pos, size_t end)
{
    (void)end;
    return in_class(cp[pos], &cls_number) ? 1 : 0;
}

/* \p{N}+ */
static size_t m_numbers(const uint32_t *cp, size_t pos, size_t end)
{
    return run(cp, pos, end, &cls_number);
}

/* [0-9][0-9][0-9] */
static size_t m_digits3(const uint32_t *cp, size_t pos, size_t end)
{
    if (pos + 3 > end)
        return 0;
    for (size_t i = 0; i < 3; i++)
        if (cp[pos + i] < '0' || cp[pos + i] > '9')
            return 0;
    return 3;
}

static size_t punct_run(const uint32_t *cp, size_t pos, size_t end, const char *extra)
{
    size_t k = 0;
    while (pos + k < end) {
        uint32_t c = cp[pos + k];
        if (!(in_class(c, &cls_punct) || (c < 0x80 && c && strchr(extra, (int)c))))
            break;
        k++;
    }
    return k;
}

/* [\p{P}\$\+<=>\^~\|]+ */
static size_t m_punct_default(const uint32_t *cp, size_t pos, size_t end)
{
    return punct_run(cp, pos, end, "$+<=>^~|");
}

/* [\p{P}\$\+<=>\^~\|`]+ */
static size_t m_punct_falcon(const uint32_t *cp, size_t pos, size_t end)
{
    return punct_run(cp, pos, end, "$+<=>^~|`");
}

/* [\r\n] */
static size_t m_newline(const uint32_t *cp, size_t pos, size_t end)
{
    (void)end;
    return (cp[pos] == '\r' || cp[pos] == '\n') ? 1 : 0;
}

/* \s?\p{L}+ */
static size_t m_space_letters(const uint32_t *cp, size_t pos, size_t end)
{
    return space_opt_run(cp, pos, end, &cls_letter);
}

/* \s?\p{P}+ */
static size_t m_space_punct(const uint32_t *cp, size_t pos, size_t end)
{
    return space_opt_run(cp, pos, end, &cls_punct);
}

/* \s?[A-Za-zµÀ-ÖØ-öø-ƺ...]+ */
static size_t m_space_ds_letters(const uint32_t *cp, size_t pos, size_t end)
{
    return space_opt_run(cp, pos, end, &cls_ds_letter);
}

/* \s?[!-/:-~！-／：-～‘-‟　-。]+ */
static size_t m_space_ds_punct(const uint32_t *cp, size_t pos, size_t end)
{
    return space_opt_run(cp, pos, end, &cls_ds_punct);
}

/* \s+$ */
static size_t m_trailing_space(const uint32_t *cp, size_t pos, size_t end)
{
    size_t k = run(cp, pos, end, &cls_space);
    return pos + k == end ? k : 0;
}

/* [一-龥ࠀ-一가-퟿]+ */
static size_t m_cjk(const uint32_t *cp, size_t pos, size_t end)
{
    return run(cp, pos, end, &cls_cjk);
}

/* ---- chains ---- */

enum { S_GPT2 = 1, S_LLAMA3, S_QWEN2 };

typedef struct step {
    int custom;   /* S_* or 0 for a matcher */
    matcher m;
} step;

#define MAX_STEPS 6
static const struct {
    qlm_pre_kind kind;
    step steps[MAX_STEPS];
} chains[] = {
    {QLM_PRE_DEFAULT, {{0, m_punct_default}, {S_GPT2, 0}, {0, m_numbers}, {0, m_digits3}}},
    {QLM_PRE_GPT2, {{S_GPT2, 0}}},
    {QLM_PRE_LLAMA3, {{S_LLAMA3, 0}}},
    {QLM_PRE_QWEN2, {{S_QWEN2, 0}}},
    {QLM_PRE_STARCODER, {{0, m_number}, {S_GPT2, 0}}},
    {QLM_PRE_FALCON, {{0, m_punct_falcon}, {S_GPT2, 0}, {0, m_digits3}}},
    {QLM_PRE_DEEPSEEK_LLM,
     {{0, m_newline}, {0, m_space_ds_letters}, {0, m_space_ds_punct}, {0, m_trailing_space},
      {0, m_cjk}, {0, m_numbers}}},
    {QLM_PRE_DEEPSEEK_CODER,
     {{0, m_newline}, {0, m_space_letters}, {0, m_space_punct}, {0, m_cjk}, {0, m_number}}},
};

/* Leftmost-first scan like a regex iterator: matches become pieces and
 * so does each unmatched stretch between them. */
static void split_regex(matcher m, const uint32_t *cp, size_t beg, size_t end, lens *out)
{
    size_t pos = beg, gap = beg;
    while (pos < end) {
        size_t k = m(cp, pos, end);
        if (!k) {
            pos++;
            continue;
        }
        if (pos > gap)
            lens_push(out, pos - gap);
        lens_push(out, k);
        pos += k;
        gap = pos;
    }
    if (end > gap)
        lens_push(out, end - gap);
}

int qlm_pre_split(qlm_pre_kind kind, const uint32_t *cps, size_t n,
                  size_t **out_lens, size_t *n_out)
{
    const step *steps = NULL;
    for (size_t i = 0; i < N_OF(chains); i++)
        if (chains[i].kind == kind)
            steps = chains[i].steps;
    if (!steps)
        steps = chains[0].steps;

    lens cur = {0}, next = {0};
    if (n)
        lens_push(&cur, n);
    for (int s = 0; s < MAX_STEPS && (steps[s].custom || steps[s].m) && !cur.oom; s++) {
        next.n = 0;
        size_t start = 0;
        for (size_t i = 0; i < cur.n && !next.oom; i++) {
            size_t end = start + cur.v[i];
            switch (steps[s].custom) {
            case S_GPT2: split_gpt2(cps, start, end, &next); break;
            case S_LLAMA3: split_llama3(cps, start, end, &next, 3); break;
            case S_QWEN2: split_llama3(cps, start, end, &next, 1); break;
            default: split_regex(steps[s].m, cps, start, end, &next); break;
            }
            start = end;
        }
        lens t = cur;
        cur = next;
        next = t;
        cur.oom |= next.oom;
    }
    free(next.v);
    if (cur.oom) {
        free(cur.v);
        return -1;
    }
    *out_lens = cur.v;
    *n_out = cur.n;
    return 0;
}

/* ---- merges ---- */

typedef struct symbol {
    int prev, next;
    uint32_t off, n; /* bytes of the word; n = 0 once merged away */
} symbol;

typedef struct bigram {
    int rank, left, right;
    uint32_t ln, rn; /* sizes when queued: a change means it is stale */
} bigram;

typedef struct bpe_work {
    char *word;
    size_t word_cap;
    symbol *sym;
    size_t sym_cap;
    qlm_heap heap; /* of bigram */
} bpe_work;

static bool bigram_before(const void *pa, const void *pb)
{
    const bigram *a = pa, *b = pb;
    return a->rank < b->rank || (a->rank == b->rank && a->left < b->left);
}

static int try_pair(const qlm_vocab *v, bpe_work *w, int l, int r)
{
    if (l < 0 || r < 0)
        return 0;
    const symbol *a = &w->sym[l], *b = &w->sym[r];
    const char *parts[3] = {w->word + a->off, " ", w->word + b->off};
    size_t lens3[3] = {a->n, 1, b->n};
    int32_t rank = qlm_strmap_find(&v->merge_map, parts, lens3, 3);
    if (rank < 0)
        return 0;
    bigram bg = {rank, l, r, a->n, b->n};
    return qlm_heap_push(&w->heap, &bg, sizeof bg, bigram_before);
}

static int emit_symbol(const qlm_vocab *v, const char *s, size_t n, qlm_ids *out)
{
    int32_t id = qlm_tok_lookup(v, s, n);
    if (id >= 0)
        return qlm_ids_push(out, id);
    /* No token for the merged text: fall back to one token per byte of
     * it where such exists (the reference drops bytes that have none). */
    for (size_t i = 0; i < n; i++) {
        int32_t b = qlm_tok_lookup(v, s + i, 1);
        if (b >= 0 && qlm_ids_push(out, b))
            return -1;
    }
    return 0;
}

static int bpe_word(const qlm_vocab *v, bpe_work *w, size_t wlen, qlm_ids *out)
{
    if (v->ignore_merges) {
        int32_t id = qlm_tok_lookup(v, w->word, wlen);
        if (id >= 0)
            return qlm_ids_push(out, id);
    }
    if (wlen > w->sym_cap) {
        symbol *ns = realloc(w->sym, wlen * sizeof *ns);
        if (!ns)
            return -1;
        w->sym = ns;
        w->sym_cap = wlen;
    }
    int nsym = 0;
    for (size_t off = 0; off < wlen;) {
        size_t n = qlm_utf8_len((unsigned char)w->word[off]);
        if (n > wlen - off)
            n = wlen - off;
        w->sym[nsym] = (symbol){nsym - 1, -1, (uint32_t)off, (uint32_t)n};
        if (nsym > 0)
            w->sym[nsym - 1].next = nsym;
        nsym++;
        off += n;
    }
    w->heap.n = 0;
    for (int i = 1; i < nsym; i++)
        if (try_pair(v, w, i - 1, i))
            return -1;
    while (w->heap.n) {
        bigram bg;
        qlm_heap_pop(&w->heap, &bg, sizeof bg, bigram_before);
        symbol *l = &w->sym[bg.left], *r = &w->sym[bg.right];
        if (l->n == 0 || r->n == 0 || l->n != bg.ln || r->n != bg.rn)
            continue;
        l->n += r->n;
        r->n = 0;
        l->next = r->next;
        if (r->next >= 0)
            w->sym[r->next].prev = bg.left;
        if (try_pair(v, w, l->prev, bg.left) || try_pair(v, w, bg.left, l->next))
            return -1;
    }
    for (int i = 0; i >= 0 && i < nsym; i = w->sym[i].next)
        if (emit_symbol(v, w->word + w->sym[i].off, w->sym[i].n, out))
            return -1;
    return 0;
}

/* Word bytes -> GPT-2 code points, UTF-8 encoded into w->word. */
static int encode_word(bpe_work *w, const uint32_t *cps, size_t n, size_t *wlen)
{
    /* Each code point is at most 4 bytes, each byte at most 2 after
     * mapping. */
    size_t need = n * 8;
    if (need > w->word_cap) {
        char *nw = realloc(w->word, need);
        if (!nw)
            return -1;
        w->word = nw;
        w->word_cap = need;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        char u[4];
        size_t nb = qlm_utf8_encode(cps[i], u);
        for (size_t j = 0; j < nb; j++)
            k += qlm_utf8_encode(qlm_bpe_byte_to_cp((uint8_t)u[j]), w->word + k);
    }
    *wlen = k;
    return 0;
}

int qlm_bpe_tokenize(const qlm_vocab *v, const char *text, size_t len, qlm_ids *out)
{
    uint32_t *cps = NULL;
    size_t ncp = 0, *wl = NULL, nw = 0;
    bpe_work w = {0};
    int rc = -1;

    if (qlm_utf8_to_cps(text, len, &cps, &ncp) || qlm_pre_split(v->pre, cps, ncp, &wl, &nw))
        goto done;
    size_t start = 0;
    for (size_t i = 0; i < nw; i++) {
        size_t wlen;
        if (encode_word(&w, cps + start, wl[i], &wlen) || bpe_word(v, &w, wlen, out))
            goto done;
        start += wl[i];
    }
    rc = 0;
done:
    free(cps);
    free(wl);
    free(w.word);
    free(w.sym);
    qlm_heap_free(&w.heap);
    return rc;
}
