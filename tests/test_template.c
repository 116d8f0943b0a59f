/* test_template.c - the chat template interpreter against Python's jinja2.
 *
 * tests/data/templates/ holds real models' chat templates and, for each,
 * conversations (cases/NAME.N.json: the variables of one render) with the
 * text jinja2 renders from them (expected/NAME.N.txt) or the message it
 * raises (expected/NAME.N.err), all made by tools/gen_template_fixtures.py
 * in transformers' environment.  Every one must come out byte for byte.
 *
 * The unit table below was rendered by jinja2 the same way (over the
 * variables in UNIT_VARS); then come syntax errors with their positions,
 * the chat API, the builders, the limits, and garbage that must not crash. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "src/template.h"
#include "tests/test.h"
#include "tests/test_rng.h"

#define TDIR "tests/data/templates"

static char *read_file(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t cap = 0, len = 0, k;
    do {
        if (len + 4096 + 1 > cap) {
            cap = (len + 4096 + 1) * 2;
            char *p = realloc(buf, cap);
            if (!p) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = p;
        }
        k = fread(buf + len, 1, cap - len - 1, f);
        len += k;
    } while (k > 0);
    fclose(f);
    buf[len] = 0;
    *n = len;
    return buf;
}

/* The moment the fixtures' strftime_now is pinned to: 2024-07-26
 * 12:34:56, local time, as a naive datetime in Python. */
static int64_t fixed_now(void)
{
    struct tm t = {.tm_year = 124, .tm_mon = 6, .tm_mday = 26, .tm_hour = 12, .tm_min = 34,
                   .tm_sec = 56, .tm_isdst = -1};
    return (int64_t)mktime(&t);
}

static bool one_line(const char *s) { return strchr(s, '\n') == NULL && s[0] != 0; }

/* Parses src and renders it over the variables of a JSON object. */
static int render_json(const char *src, size_t n, const char *json, const qlm_tmpl_limits *lim,
                       char **out, size_t *out_len, qlm_err *err)
{
    qlm_tmpl *t;
    *out = NULL;
    int rc = qlm_tmpl_parse(src, n, &t, err);
    if (rc)
        return rc;
    qlm_tmpl_vars *v = qlm_tmpl_vars_new();
    if (!v) {
        qlm_tmpl_free(t);
        return QLM_ERUNTIME;
    }
    qlm_tmpl_vars_set_now(v, fixed_now());
    if (lim)
        qlm_tmpl_vars_set_limits(v, lim);
    rc = json ? qlm_tmpl_vars_set_json(v, json, strlen(json), err) : QLM_OK;
    if (!rc)
        rc = qlm_tmpl_render(t, v, out, out_len, err);
    qlm_tmpl_vars_free(v);
    qlm_tmpl_free(t);
    return rc;
}

/* Index of the first differing byte, for failure messages. */
static size_t first_diff(const char *a, size_t na, const char *b, size_t nb)
{
    size_t i = 0;
    while (i < na && i < nb && a[i] == b[i])
        i++;
    return i;
}

/* ---- every template x every conversation ---- */
static void test_fixtures(void)
{
    size_t n;
    char *index = read_file(TDIR "/cases.txt", &n);
    TEST_BEGIN("fixtures: " TDIR "/cases.txt is there");
    CHECK(index != NULL, "cannot read " TDIR "/cases.txt (run tools/gen_template_fixtures.py)");
    TEST_END();
    if (!index)
        return;
    int count = 0;
    for (char *line = strtok(index, "\n"); line; line = strtok(NULL, "\n")) {
        char name[200], ext[8], path[300], tname[260];
        int num;
        if (sscanf(line, "%199s %d %7s", name, &num, ext) != 3)
            continue;
        snprintf(tname, sizeof tname, "fixture %s.%d", name, num);
        TEST_BEGIN(tname);
        size_t tn, cn, en;
        snprintf(path, sizeof path, TDIR "/%s.jinja", name);
        char *src = read_file(path, &tn);
        snprintf(path, sizeof path, TDIR "/cases/%s.%d.json", name, num);
        char *json = read_file(path, &cn);
        snprintf(path, sizeof path, TDIR "/expected/%s.%d.%s", name, num, ext);
        char *want = read_file(path, &en);
        CHECK(src && json && want, "missing files for %s.%d", name, num);
        if (src && json && want) {
            char *out;
            size_t on;
            qlm_err err = {0};
            int rc = render_json(src, tn, json, NULL, &out, &on, &err);
            if (!strcmp(ext, "txt")) {
                CHECK(rc == QLM_OK, "render failed: %s", err.msg);
                if (rc == QLM_OK) {
                    size_t d = first_diff(out, on, want, en);
                    CHECK(on == en && d == en,
                          "differs from jinja2 at byte %zu (got %zu bytes, want %zu): got "
                          "\"%.40s\" want \"%.40s\"",
                          d, on, en, out + d, want + d);
                }
            } else {
                CHECK(rc == QLM_EUSAGE, "want error \"%s\", got rc %d (%s)", want, rc,
                      rc ? err.msg : "rendered");
                CHECK(!rc || !strcmp(err.msg, want), "error \"%s\", jinja2 says \"%s\"", err.msg,
                      want);
            }
            free(out);
        }
        free(src);
        free(json);
        free(want);
        TEST_END();
        count++;
    }
    TEST_BEGIN("fixtures: at least six conversations for each of seven templates");
    CHECK(count >= 42, "only %d fixture cases", count);
    TEST_END();
    free(index);
}

/* ---- unit cases rendered by jinja2 over UNIT_VARS ---- */
static const char UNIT_VARS[] =
    "{\"d\": {\"a\": 1, \"items\": 2, \"b\": [1, 2, {\"c\": \"x\"}]}, \"l\": [3, 1, 2], \"s\": \"h\\u00"
    "e9llo W\\u00f6rld\", \"n\": null, \"msgs\": [{\"role\": \"user\", \"content\": \"hi\"}, {\"role"
    "\": \"assistant\", \"content\": \"yo\"}, {\"role\": \"user\", \"content\": \"bye\"}], \"f\": 1.5,"
    " \"i\": 42, \"t\": true, \"e\": \"\", \"big\": 12345678901234, \"neg\": -3, \"u\": \"\\u00c0\\u00"
    "c9\\u00ce\\u00f5\\u00fc \\u00df\\u0130 \\u01c6\"}";

static const struct unit {
    const char *name, *src, *want;
    int is_error;  /* want is the message jinja2 raised */
} units[] = {
    {"literals", "{{ 'a\\'b' }}|{{ \"tab\\there\" }}|{{ \"\\u00e9\\x41\\101\" }}|{{ 42 }}|{{ -7 }}|{{ 1.5 }}|{{ 1e3 }}|{{ 0x1f }}|{{ true }}|{{ none }}|{{ [1, 'x', none] }}|{{ {'k': [1.0]} }}|{{ (1,) }}",
     "a'b|tab\there|\303\251AA|42|-7|1.5|1000.0|31|True|None|[1, 'x', None]|{'k': [1.0]}|(1,)", 0},
    {"float repr", "{{ 0.1 + 0.2 }} {{ 1e16 }} {{ 1.5e-5 }} {{ 1/3 }} {{ -0.0 }} {{ 2.0**60 }} {{ 10/4 }} {{ 1e400 }}",
     "0.30000000000000004 1e+16 1.5e-05 0.3333333333333333 -0.0 1.152921504606847e+18 2.5 inf", 0},
    {"arithmetic", "{{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 7 % -3 }} {{ 2 ** 10 }} {{ 2 ** -1 }} {{ 2 * 3 ** 2 }} {{ 10 - 2 - 3 }} {{ -7.5 % 2 }} {{ 'ab' * 3 }} {{ [0] * 2 }} {{ [1] + [2] }}",
     "3 -4 2 -2 1024 0.5 18 5 0.5 ababab [0, 0] [1, 2]", 0},
    {"concat and compare", "{{ 'a' ~ 1 ~ none ~ 1.5 ~ true ~ nope }} {{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ 'a' in 'cat' }} {{ 2 not in l }} {{ 'a' in d }} {{ (1, 2) == [1, 2] }} {{ 1 == 1.0 }} {{ {'a': 1} == {'a': 1} }}",
     "a1None1.5True True False True False True False True True", 0},
    {"logic", "{{ 1 and 2 }} {{ 0 or 'x' }} {{ none or [] }} {{ not n }} {{ 'y' if t else 'n' }} {{ 'y' if n }}| {{ 1 if n else 2 if e else 3 }}",
     "2 x [] True y | 3", 0},
    {"attributes and items", "{{ d.a }} {{ d['a'] }} {{ d['items'] }} {{ d.b.2.c }} {{ d['b'][-1]['c'] }} {{ msgs[0].role }} {{ msgs[-1]['content'] }} {{ d.nope }}|{{ l[10] }}|{{ none.x }}",
     "1 1 2 x x user bye ||", 0},
    {"slicing", "{{ s[::-1] }} {{ s[1:3] }} {{ s[-3:] }} {{ s[::2] }} {{ l[::-1] }} {{ l[5:1:-1] }} {{ l[-10:10] }} {{ msgs[1:]|length }} {{ 'abc'[5:] }}|{{ s[1] }}",
     "dlr\303\266W oll\303\251h \303\251l rld hloWrd [2, 1, 3] [2] [3, 1, 2] 2 |\303\251", 0},
    {"undefined", "{{ nope }}|{{ nope is defined }}|{{ nope is undefined }}|{{ nope|default('dflt') }}|{{ nope|length }}|{{ nope|list }}|{% for x in nope %}x{% endfor %}|{{ nope == nope }}|{{ 'a' in nope }}",
     "|False|True|dflt|0|[]||True|False", 0},
    {"tests", "{{ 'a' is string }} {{ 1 is number }} {{ true is number }} {{ 1 is integer }} {{ true is integer }} {{ 1.0 is float }} {{ d is mapping }} {{ 'a' is iterable }} {{ d is sequence }} {{ n is none }} {{ t is boolean }} {{ t is true }} {{ 1 is true }} {{ i is even }} {{ i is divisibleby 7 }} {{ 'ABC' is upper }} {{ i is gt 40 }} {{ i is in [42] }} {{ x is not defined }} {{ 1 is eq 1 }} {{ 'a' is equalto 'a' }}",
     "True True True True False True True True True True True True False True True True True True True True True", 0},
    {"filters on strings", "{{ s|upper }} {{ s|lower }} {{ s|title }} {{ 'hello world'|capitalize }} {{ '  pad  '|trim }}| {{ 'xxhixx'|trim('x') }} {{ s|replace('l', 'L') }} {{ s|replace('l', 'L', 1) }} {{ s|length }} {{ s|reverse }} {{ s|first }} {{ s|last }} {{ 'a<b>&\"\\''|e }} {{ s|wordcount }} {{ 'abc'|center(9) }}|",
     "H\303\211LLO W\303\226RLD h\303\251llo w\303\266rld H\303\251llo W\303\266rld Hello world pad| hi h\303\251LLo W\303\266rLd h\303\251Llo W\303\266rld 11 dlr\303\266W oll\303\251h h d a&lt;b&gt;&amp;&#34;&#39; 2    abc   |", 0},
    {"unicode case", "{{ u|upper }} {{ u|lower }} {{ u.title() }} {{ u|capitalize }} {{ u.swapcase() }} {{ u|title }}",
     "\303\200\303\211\303\216\303\225\303\234 SS\304\260 \307\204 \303\240\303\251\303\256\303\265\303\274 \303\237i\314\207 \307\206 \303\200\303\251\303\256\303\265\303\274 Ssi\314\207 \307\205 \303\200\303\251\303\256\303\265\303\274 \303\237i\314\207 \307\206 \303\240\303\251\303\256\303\225\303\234 SSi\314\207 \307\204 \303\200\303\251\303\256\303\265\303\274 SSi\314\207 \307\204", 0},
    {"filters on lists", "{{ l|sort }} {{ l|sort(reverse=true) }} {{ ['b', 'A', 'a']|sort }} {{ ['b', 'A', 'a']|sort(case_sensitive=true) }} {{ l|first }} {{ l|last }} {{ l|sum }} {{ l|max }} {{ l|min }} {{ l|length }} {{ l|reverse|list }} {{ l|join('-') }} {{ l|unique|list }} {{ [1, 2, 3, 4, 5]|batch(2)|list }} {{ l|list }}",
     "[1, 2, 3] [3, 2, 1] ['A', 'a', 'b'] ['A', 'a', 'b'] 3 2 6 3 1 3 [2, 1, 3] 3-1-2 [3, 1, 2] [[1, 2], [3, 4], [5]] [3, 1, 2]", 0},
    {"filters on dicts", "{{ d|length }} {{ {'b': 1, 'a': 2}|dictsort }} {{ {'b': 1, 'a': 2}|dictsort(by='value', reverse=true) }} {{ d|items|list }} {{ d|first }} {{ d|list }}",
     "3 [('a', 2), ('b', 1)] [('a', 2), ('b', 1)] [('a', 1), ('items', 2), ('b', [1, 2, {'c': 'x'}])] a ['a', 'items', 'b']", 0},
    {"map select", "{{ msgs|map(attribute='role')|join(',') }} {{ msgs|selectattr('role', 'equalto', 'user')|list|length }} {{ msgs|rejectattr('role', 'eq', 'user')|map(attribute='content')|first }} {{ l|select('gt', 1)|list }} {{ l|reject('odd')|list }} {{ l|map('string')|list }} {{ [{'r': 'a'}, {'r': 'A'}]|unique(attribute='r')|list }} {{ msgs|map(attribute='x', default='-')|join }}",
     "user,assistant,user 2 yo [3, 2] [2] ['3', '1', '2'] [{'r': 'a'}] ---", 0},
    {"numbers", "{{ 3|round }} {{ 2.5|round }} {{ 2.675|round(2) }} {{ 3.7|int }} {{ '42'|int }} {{ ' 0x1A'|int(base=16) }} {{ '4.5'|int }} {{ 'x'|int }} {{ 'x'|int(7) }} {{ '1e3'|float }} {{ i|float }} {{ neg|abs }} {{ 2.7|round(method='floor') }}",
     "3 2.0 2.67 3 42 26 4 0 7 1000.0 42.0 3 2.0", 0},
    {"default", "{{ x|default('dflt') }} {{ e|default('dflt') }} {{ e|default('dflt', true) }} {{ n|d('z') }} {{ msgs[0].missing|default('m') }}",
     "dflt  dflt None m", 0},
    {"tojson", "{{ d|tojson }}|{{ {'a': [1, 2, {'b': '\303\251<>&\\''}]}|tojson(indent=2) }}|{{ []|tojson(indent=2) }}|{{ {}|tojson(indent=2) }}|{{ 1.0|tojson }}|{{ {'z': 1, 'a': 2}|tojson(sort_keys=true) }}|{{ '\303\251\360\237\230\200'|tojson(ensure_ascii=true) }}|{{ \"\\u2028\\x7f\\x00\\x1f\"|tojson }}|{{ {'a': none, 'b': true, 'c': -0.0, 'd': 1e20}|tojson }}|{{ {1: 'a', none: 'b', true: 'c'}|tojson }}|{{ [1, [2]]|tojson(indent='\\t') }}|{{ {'a': 1}|tojson(separators=(',', ':')) }}",
     "{\"a\": 1, \"items\": 2, \"b\": [1, 2, {\"c\": \"x\"}]}|{\n  \"a\": [\n    1,\n    2,\n    {\n      \"b\": \"\303\251<>&'\"\n    }\n  ]\n}|[]|{}|1.0|{\"a\": 2, \"z\": 1}|\"\\u00e9\\ud83d\\ude00\"|\"\342\200\250\177\\u0000\\u001f\"|{\"a\": null, \"b\": true, \"c\": -0.0, \"d\": 1e+20}|{\"1\": \"c\", \"null\": \"b\"}|[\n\t1,\n\t[\n\t\t2\n\t]\n]|{\"a\":1}", 0},
    {"indent and truncate", "{{ \"a\\nb\\n\\nc\"|indent }}|{{ \"a\\nb\"|indent(2, true) }}|{{ \"a\\n\\nb\"|indent(blank=true) }}|{{ \"hello world foo bar\"|truncate(9) }}|{{ \"hello world foo bar\"|truncate(9, true) }}",
     "a\n    b\n\n    c|  a\n  b|a\n    \n    b|hello...|hello ...", 0},
    {"string methods", "{{ ' a  b '.split() }} {{ 'a,b,,c'.split(',') }} {{ 'a b c'.split(' ', 1) }} {{ 'a b c'.rsplit(' ', 1) }} {{ ' a b  c '.rsplit(None, 1) }} {{ 'abc'.replace('', '-') }} {{ s.find('l') }} {{ 'abc'.startswith(('x', 'a')) }} {{ 'abc'.endswith('bc') }} {{ 'a-b'.partition('-') }} {{ '  x '.strip() }} {{ 'xxaxx'.lstrip('x') }} {{ 'ab\\ncd\\r\\nef'.splitlines() }} {{ 'hello'.count('l') }} {{ '-'.join(['a', 'b']) }} {{ '-5'.zfill(4) }} {{ 'ab'.ljust(5, '.') }} {{ 'abc'.removeprefix('a') }} {{ '12'.isdigit() }} {{ 'x y'.title() }} {{ 'Ab'.upper() }}{{ 'Ab'.lower() }}",
     "['a', 'b'] ['a', 'b', '', 'c'] ['a', 'b c'] ['a b', 'c'] [' a b', 'c'] -a-b-c- 2 True True ('a', '-', 'b') x axx ['ab', 'cd', 'ef'] 2 a-b -005 ab... bc True X Y ABab", 0},
    {"string formatting", "{{ '%5s|%-5s|%05d|%.2f|%x|%r' % ('ab', 'cd', 42, 3.14159, 255, 'q') }} {{ '%s and %s' % ('a', 'b') }} {{ '%d%%' % 50 }} {{ '%s-%s'|format(1, 2) }} {{ '{} {}'.format(1, 'a') }} {{ '{0}{1}{0}'.format('a', 'b') }} {{ '{x}'.format(x=5) }}",
     "   ab|cd   |00042|3.14|ff|'q' a and b 50% 1-2 1 a aba 5", 0},
    {"dict methods", "{{ d.get('a') }} {{ d.get('zz') }} {{ d.get('zz', 'no') }} {{ d.items()|list }} {{ d.keys()|list }} {{ d.values()|list|length }} {% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}",
     "1 None no [('a', 1), ('items', 2), ('b', [1, 2, {'c': 'x'}])] ['a', 'items', 'b'] 3 a=1;items=2;b=[1, 2, {'c': 'x'}];", 0},
    {"whitespace: trim_blocks and lstrip_blocks", "  {% if t %}\n    yes\n  {% endif %}\n  {# comment #}\n  done",
     "    yes\n  done", 0},
    {"whitespace: minus", "a  {%- if t -%}  b  {%- endif -%}  c\n{%- for m in msgs %}\n    {{- m.role }}\n{%- endfor %}",
     "abcuserassistantuser", 0},
    {"whitespace: plus", "a  {%+ if t %}  b  {% endif +%}\nc\n   {{ 'var lines keep their indent' }}",
     "a    b  \nc\n   var lines keep their indent", 0},
    {"whitespace: trailing newline dropped once", "x\n",
     "x", 0},
    {"raw", "  {% raw %}{{ not parsed }} {% if %}{% endraw %}",
     "{{ not parsed }} {% if %}", 0},
    {"comments", "a{# one #}b\n{#- two -#}\nc {#\n multi\n#}d",
     "abc d", 0},
    {"for loop", "{% for a in l %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.cycle('x', 'y') }}{{ loop.previtem }}-{{ loop.nextitem }};{% endfor %}",
     "1032TrueFalse3x-1;2121FalseFalse3y3-2;3210FalseTrue3x1-;", 0},
    {"for filter else", "{% for x in l if x > 1 %}{{ x }}{{ loop.index }}{% else %}none{% endfor %}|{% for x in [] %}{{ x }}{% else %}empty{% endfor %}|{% for x in 'ab' %}{{ x }}{% endfor %}|{% for x in d %}{{ x }}{% endfor %}",
     "3122|empty|ab|aitemsb", 0},
    {"for unpack nested", "{% for a, b in [[1, 2], [3, 4]] %}{{ a }}{{ b }}{% endfor %}|{% for a in [1, 2] %}{% for b in [3, 4] %}{{ loop.index }}{{ a }}{{ b }} {% endfor %}{{ loop.index }}|{% endfor %}",
     "1234|113 214 1|123 224 2|", 0},
    {"break continue", "{% for x in l %}{% if x == 1 %}{% break %}{% endif %}{{ x }}{% endfor %}|{% for x in l %}{% if x == 1 %}{% continue %}{% endif %}{{ x }}{% endfor %}",
     "3|32", 0},
    {"scoping", "{% set x = 'out' %}{% for i in [1, 2] %}{% if i == 1 %}{% set x = 'in' %}{% endif %}[{{ x }}]{% endfor %}{{ x }}|{% macro m() %}{{ y }}{% endmacro %}{{ m() }}{% set y = 5 %}{{ m() }}",
     "[in][out]out|5", 0},
    {"namespace", "{%- set ns = namespace(found=false, n=0) -%}\n{%- for m in msgs -%}\n  {%- if m.role == 'assistant' -%}{%- set ns.found = true -%}{%- endif -%}\n  {%- set ns.n = ns.n + 1 -%}\n{%- endfor -%}\nfound={{ ns.found }} n={{ ns.n }} {{ ns }}",
     "found=True n=3 <Namespace {'found': True, 'n': 3}>", 0},
    {"set", "{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set body %}hello {{ i }}{% endset %}{{ body|upper }}|{% set b2 | trim %}   x   {% endset %}[{{ b2 }}]",
     "12HELLO 42|[x]", 0},
    {"macros", "{% macro greet(name, greeting='Hello') %}{{ greeting }}, {{ name }}!{% endmacro %}{{ greet('a') }} {{ greet('b', 'Hi') }} {{ greet(greeting='Yo', name='c') }} {{ greet() }}",
     "Hello, a! Hi, b! Yo, c! Hello, !", 0},
    {"call blocks", "{% macro wrap(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>{% endmacro %}{% call wrap('b') %}inner {{ i }}{% endcall %}{% macro row(x) %}[{{ caller(x * 2) }}]{% endmacro %}{% call(v) row(4) %}v={{ v }}{% endcall %}",
     "<b>inner 42</b>[v=8]", 0},
    {"recursive macro", "{% macro fact(n) %}{% if n <= 1 %}1{% else %}{{ n * fact(n - 1)|int }}{% endif %}{% endmacro %}{{ fact(10) }}",
     "3628800", 0},
    {"filter block and with", "{% filter upper %}abc {{ s }}{% endfilter %}|{% with a = 1, b = 2 %}{{ a + b }}{% endwith %}{{ a }}",
     "ABC H\303\211LLO W\303\226RLD|3", 0},
    {"globals", "{{ range(5)|list }} {{ range(1, 10, 3)|list }} {{ range(5, 0, -2)|list }} {{ dict(a=1, b='x') }} {{ namespace(x=1).x }}",
     "[0, 1, 2, 3, 4] [1, 4, 7] [5, 3, 1] {'a': 1, 'b': 'x'} 1", 0},
    {"strftime_now", "{{ strftime_now('%Y-%m-%d %H:%M %A %B %d') }}",
     "2024-07-26 12:34 Friday July 26", 0},
    {"error: raise_exception", "{{ raise_exception('boom ' ~ 1) }}",
     "boom 1", 1},
    {"error: undefined attribute", "{{ nope.x }}",
     "'nope' is undefined", 1},
    {"error: attribute of missing key", "{{ d.nope.x }}",
     "'dict object' has no attribute 'nope'", 1},
    {"error: element of list", "{{ l[7].x }}",
     "list object has no element 7", 1},
    {"error: undefined arithmetic", "{{ nope + 1 }}",
     "'nope' is undefined", 1},
    {"error: str plus none", "{{ 'a' + n }}",
     "can only concatenate str (not \"NoneType\") to str", 1},
    {"error: int plus str", "{{ 1 + 'a' }}",
     "unsupported operand type(s) for +: 'int' and 'str'", 1},
    {"error: compare", "{{ 'a' < 1 }}",
     "'<' not supported between instances of 'str' and 'int'", 1},
    {"error: in", "{{ 1 in 'abc' }}",
     "'in <string>' requires string as left operand, not int", 1},
    {"error: not iterable", "{% for x in n %}{% endfor %}",
     "'NoneType' object is not iterable", 1},
    {"error: len", "{{ n|length }}",
     "object of type 'NoneType' has no len()", 1},
    {"error: json", "{{ nope|tojson }}",
     "Object of type Undefined is not JSON serializable", 1},
    {"error: unsafe", "{{ l.append(4) }}",
     "access to attribute 'append' of 'list' object is unsafe.", 1},
    {"error: zero division", "{{ 5 // 0 }}",
     "integer division or modulo by zero", 1},
    {"error: macro args", "{% macro m(a) %}{{ a }}{% endmacro %}{{ m(1, 2) }}",
     "macro 'm' takes not more than 1 argument(s)", 1},
    {"error: unpack", "{% for a, b in [[1, 2, 3]] %}{% endfor %}",
     "too many values to unpack (expected 2)", 1},
    {"error: range", "{{ range(1000000)|length }}",
     "Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).", 1},
    {"error: namespace assign", "{% set x = 1 %}{% set x.y = 2 %}",
     "cannot assign attribute on non-namespace object", 1},
    {"error: call non-callable", "{{ i() }}",
     "'int' object is not callable", 1},
    {"loop.changed", "{% for x in [1, 1, 2, 2, 1] %}{{ loop.changed(x) }}{% endfor %}|{% for x in [1, 2] %}{{ loop.changed(x, 1) }}{{ loop.changed() }}{% endfor %}",
     "TrueFalseTrueFalseTrue|TrueTrueTrueTrue", 0},
    {"python corners", "{{ 2.5 is odd }}{{ 2.5 is even }}{{ 4 is divisibleby 2 }} {{ n|select|list }} {{ 0|map('string')|list }} {{ ' x ' % l }} {{ '%s' % nope }}| {{ 1 is sameas 1 }} {{ {(1, 2): 'a'}[(1, 2)] }} {{ ' a  b c '.split(None, 1) }} {{ t|truncate(3) is sameas t }}",
     "object of type 'bool' has no len()", 1},
    {"error: int of undefined", "{{ nope|int }}",
     "'nope' is undefined", 1},
    {"error: indent of a number", "{{ 5|indent }}",
     "unsupported operand type(s) for +=: 'int' and 'str'", 1},
    {"error: unhashable in unique", "{{ msgs|unique|list }}",
     "unhashable type: 'dict'", 1},
    {"error: test arity", "{{ 1 is sequence 2 }}\n",
     "test_sequence() takes 1 positional argument but 2 were given", 1},
};

static void test_units(void)
{
    for (size_t i = 0; i < sizeof units / sizeof *units; i++) {
        char tname[200];
        snprintf(tname, sizeof tname, "unit: %s", units[i].name);
        TEST_BEGIN(tname);
        char *out;
        size_t on;
        qlm_err err = {0};
        int rc = render_json(units[i].src, strlen(units[i].src), UNIT_VARS, NULL, &out, &on, &err);
        if (units[i].is_error) {
            CHECK(rc == QLM_EUSAGE, "want error \"%s\", got rc %d: %s", units[i].want, rc,
                  rc ? err.msg : out);
            CHECK(!rc || !strcmp(err.msg, units[i].want), "error \"%s\", jinja2 says \"%s\"",
                  err.msg, units[i].want);
        } else {
            CHECK(rc == QLM_OK, "render failed: %s", err.msg);
            CHECK(!rc && on == strlen(units[i].want) && !memcmp(out, units[i].want, on),
                  "got \"%s\", jinja2 renders \"%s\"", rc ? "" : out, units[i].want);
        }
        free(out);
        TEST_END();
    }
}

/* ---- syntax errors: where, and what ---- */
static void test_syntax_errors(void)
{
    static const struct {
        const char *src, *msg;
    } cases[] = {
        {"{{ 'unterminated }}", "template:1:4: unterminated string"},
        {"{% if %}", "template:1:7: expected an expression, got 'end of statement block'"},
        {"{% for x in l %}", "template:1:4: unexpected end of template: the 'for' block opened "
                             "here is never closed (looking for 'endfor' or 'else')"},
        {"ok\n{% endif %}", "template:2:4: unexpected 'endif': no block is open"},
        {"line1\n  {% bogus %}", "template:2:6: unknown tag 'bogus'"},
        {"{{ x | nosuch }}", "template:1:8: no filter named 'nosuch'"},
        {"{{ x is nosuch }}", "template:1:9: no test named 'nosuch'"},
        {"{% include 'x' %}", "template:1:4: unsupported construct: the 'include' tag"},
        {"{{ x | groupby('a') }}", "template:1:8: unsupported construct: the 'groupby' filter"},
        {"{% for x in l recursive %}{% endfor %}",
         "template:1:15: unsupported construct: recursive for loops"},
        {"{{ (1, 2 }}", "template:1:10: unexpected '}', expected ')'"},
        {"\xc3\xa9 {{ ) }}", "template:1:6: unexpected ')'"},
        {"{{ 1 + }}", "template:1:8: unexpected 'end of print statement'"},
        {"{# no end", "template:1:1: missing end of comment tag"},
        {"{% raw %} no end", "template:1:1: missing end of raw directive"},
        {"{% break %}", "template:1:4: 'break' outside of a for loop"},
        {"{% macro m(a=1, b) %}{% endmacro %}",
         "template:1:18: non-default argument follows default argument"},
        {"{% if t %}{% else %}{% elif t %}{% endif %}",
         "template:1:24: unexpected 'elif': the innermost open block needs 'endif'"},
        {"{{ f(a=1, 2) }}", "template:1:5: invalid syntax for function call expression"},
        {"{{ \"\\u12\" }}", "template:1:4: truncated \\uXXXX escape in string"},
        {"{{ 99999999999999999999 }}", "template:1:4: integer literal too large"},
        {"{% set 1 = 2 %}", "template:1:8: can't assign to this expression"},
        {"{{ x is defined is none }}", "template:1:17: You cannot chain multiple tests with is"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char tname[200];
        snprintf(tname, sizeof tname, "syntax error: %.80s", cases[i].src);
        for (char *c = tname; *c; c++)  /* one line per case in the report */
            if (*c == '\n')
                *c = ' ';
        TEST_BEGIN(tname);
        qlm_tmpl *t = NULL;
        qlm_err err = {0};
        int rc = qlm_tmpl_parse(cases[i].src, strlen(cases[i].src), &t, &err);
        CHECK(rc == QLM_ELOAD && !t, "want QLM_ELOAD, got %d", rc);
        CHECK(!strcmp(err.msg, cases[i].msg), "got \"%s\", want \"%s\"", err.msg, cases[i].msg);
        qlm_tmpl_free(t);
        TEST_END();
    }
}

/* ---- the chat API ---- */
static char *expected(const char *name, int n, const char *ext, size_t *len)
{
    char path[300];
    snprintf(path, sizeof path, TDIR "/expected/%s.%d.%s", name, n, ext);
    return read_file(path, len);
}

static qlm_tmpl *load_template(const char *name)
{
    char path[300];
    size_t n;
    snprintf(path, sizeof path, TDIR "/%s.jinja", name);
    char *src = read_file(path, &n);
    qlm_tmpl *t = NULL;
    qlm_err err;
    if (src && qlm_tmpl_parse(src, n, &t, &err))
        t = NULL;
    free(src);
    return t;
}

static void test_chat_api(void)
{
    static const char qwen[] = "Qwen-Qwen2.5-7B-Instruct";
    qlm_tmpl *t = load_template(qwen);
    char *out = NULL, *want;
    size_t on, wn;
    qlm_err err = {0};

    TEST_BEGIN("chat api: multi-turn conversation equals jinja2's render");
    const qlm_chat_msg turns[] = {
        {.role = "user", .content = "Hello!"},
        {.role = "assistant", .content = "Hi. How can I help?"},
        {.role = "user", .content = "What is 2+2?"},
    };
    qlm_chat_opts opts = {.add_generation_prompt = true, .eos_token = "<|im_end|>"};
    want = expected(qwen, 3, "txt", &wn);
    CHECK(t && want, "missing Qwen template or fixture");
    if (t && want) {
        int rc = qlm_tmpl_render_chat(t, turns, 3, &opts, &out, &on, &err);
        CHECK(rc == QLM_OK, "render_chat: %s", err.msg);
        CHECK(!rc && on == wn && !memcmp(out, want, wn), "got \"%s\"", rc ? "" : out);
    }
    free(out);
    free(want);
    TEST_END();

    TEST_BEGIN("chat api: tool calls, tool results and tools JSON equal jinja2's render");
    static const char tools[] =
        "[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"description\":\"Get the "
        "current weather in a city.  \",\"parameters\":{\"type\":\"object\",\"properties\":{"
        "\"city\":{\"type\":\"string\",\"description\":\"The city, e.g. Z\\u00fcrich \"},"
        "\"unit\":{\"type\":[\"string\",\"integer\"],\"enum\":[\"c\",\"f\",1],\"description\":"
        "\"Temperature unit\"},\"days\":{\"type\":\"integer\",\"description\":\"How many days\"},"
        "\"hourly\":{\"type\":\"array\",\"items\":{\"type\":\"number\"},\"description\":\"Hours "
        "<to> & 'report'\"},\"extra\":{\"type\":\"object\",\"additionalProperties\":{\"type\":"
        "\"boolean\"},\"description\":\"Flags\"}},\"required\":[\"city\"]},\"return\":{\"type\":"
        "\"string\",\"description\":\"A short forecast\"}}},{\"type\":\"function\",\"function\":{"
        "\"name\":\"now\",\"description\":\"The time now.\",\"parameters\":{\"type\":\"object\","
        "\"properties\":{}}}}]";
    const qlm_chat_msg conv[] = {
        {.role = "system", .content = "Use tools when needed."},
        {.role = "user", .content = "Weather in Z\xc3\xbcrich?"},
        {.role = "assistant",
         .tool_calls = "[{\"id\": \"call12345\", \"type\": \"function\", \"function\": {\"name\": "
                       "\"get_weather\", \"arguments\": {\"city\": \"Z\xc3\xbcrich\", \"unit\": "
                       "\"c\", \"days\": 2}}}]"},
        {.role = "tool", .content = "{\"temp\": 21, \"sky\": \"clear\"}",
         .tool_call_id = "call12345", .name = "get_weather"},
        {.role = "assistant", .content = "It is 21 \xc2\xb0" "C and clear."},
        {.role = "user", .content = "Thanks"},
    };
    opts.tools = tools;
    want = expected(qwen, 7, "txt", &wn);
    out = NULL;
    if (t && want) {
        int rc = qlm_tmpl_render_chat(t, conv, 6, &opts, &out, &on, &err);
        CHECK(rc == QLM_OK, "render_chat: %s", err.msg);
        size_t d = rc ? 0 : first_diff(out, on, want, wn);
        CHECK(!rc && on == wn && d == wn, "differs at byte %zu: \"%.40s\"", d, rc ? "" : out + d);
    }
    free(out);
    free(want);
    TEST_END();

    TEST_BEGIN("chat api: a template's raise_exception comes back as the error");
    qlm_tmpl *gemma = load_template("google-gemma-2-2b-it");
    const qlm_chat_msg sys[] = {{.role = "system", .content = "x"}, {.role = "user", .content = "y"}};
    qlm_chat_opts gopts = {.bos_token = "<bos>"};
    out = NULL;
    int rc = gemma ? qlm_tmpl_render_chat(gemma, sys, 2, &gopts, &out, &on, &err) : -1;
    CHECK(rc == QLM_EUSAGE && !out, "rc %d", rc);
    CHECK(!strcmp(err.msg, "System role not supported"), "got \"%s\"", err.msg);
    qlm_tmpl_free(gemma);
    TEST_END();

    TEST_BEGIN("chat api: extra variables, and bos_token left undefined when NULL");
    qlm_tmpl *x = NULL;
    static const char src[] = "[{{ bos_token }}|{{ bos_token is defined }}|{{ tools }}|{{ "
                              "custom }}|{{ messages|length }}|{{ add_generation_prompt }}]";
    qlm_tmpl_vars *extra = qlm_tmpl_vars_new();
    qlm_tmpl_vars_set(extra, "custom", qlm_tv_str(extra, "C"));
    qlm_tmpl_vars_set(extra, "messages", qlm_tv_str(extra, "ignored: the chat's come first"));
    qlm_chat_opts xopts = {.extra = extra};
    out = NULL;
    rc = qlm_tmpl_parse(src, sizeof src - 1, &x, &err) ||
         qlm_tmpl_render_chat(x, turns, 3, &xopts, &out, &on, &err);
    CHECK(rc == QLM_OK, "%s", err.msg);
    CHECK(!rc && !strcmp(out, "[|False|None|C|3|False]"), "got \"%s\"", rc ? "" : out);
    free(out);
    qlm_tmpl_vars_free(extra);
    qlm_tmpl_free(x);
    TEST_END();

    TEST_BEGIN("chat api: malformed tool_calls JSON is a usage error naming the spot");
    const qlm_chat_msg bad[] = {{.role = "assistant", .tool_calls = "[{\"id\": }]"}};
    out = NULL;
    rc = t ? qlm_tmpl_render_chat(t, bad, 1, &opts, &out, &on, &err) : -1;
    CHECK(rc == QLM_EUSAGE, "rc %d", rc);
    CHECK(!strcmp(err.msg, "json:1:9: unexpected character"), "got \"%s\"", err.msg);
    TEST_END();
    qlm_tmpl_free(t);
}

/* ---- value builders ---- */
static void test_builders(void)
{
    TEST_BEGIN("builders: dicts, lists and scalars built by hand render like JSON ones");
    qlm_tmpl_vars *v = qlm_tmpl_vars_new();
    qlm_tval *msgs = qlm_tv_list(v), *m = qlm_tv_dict(v);
    int rc = qlm_tv_put(v, m, "role", qlm_tv_str(v, "user"));
    rc |= qlm_tv_put(v, m, "content", qlm_tv_strn(v, "a\0b", 3));
    rc |= qlm_tv_put(v, m, "n", qlm_tv_int(v, -5));
    rc |= qlm_tv_put(v, m, "f", qlm_tv_float(v, 0.25));
    rc |= qlm_tv_put(v, m, "ok", qlm_tv_bool(v, true));
    rc |= qlm_tv_put(v, m, "none", qlm_tv_str(v, NULL));
    rc |= qlm_tv_put(v, m, "n", qlm_tv_int(v, 7));  /* replaces in place */
    rc |= qlm_tv_push(v, msgs, m);
    rc |= qlm_tmpl_vars_set(v, "messages", msgs);
    CHECK(rc == QLM_OK, "builders failed");
    static const char src[] = "{{ messages[0]|tojson }} {{ messages[0].content|length }}";
    qlm_tmpl *t;
    qlm_err err;
    char *out = NULL;
    size_t on;
    rc = qlm_tmpl_parse(src, sizeof src - 1, &t, &err) || qlm_tmpl_render(t, v, &out, &on, &err);
    CHECK(rc == QLM_OK, "%s", err.msg);
    static const char want[] =
        "{\"role\": \"user\", \"content\": \"a\\u0000b\", \"n\": 7, \"f\": 0.25, \"ok\": true, "
        "\"none\": null} 3";
    CHECK(!rc && on == sizeof want - 1 && !memcmp(out, want, on), "got \"%s\"", out ? out : "");
    free(out);
    qlm_tmpl_free(t);
    TEST_END();

    TEST_BEGIN("builders: misuse is refused, not crashed on");
    CHECK(qlm_tv_push(v, m, m) == QLM_EUSAGE, "push onto a dict");
    CHECK(qlm_tv_put(v, msgs, "k", m) == QLM_EUSAGE, "put into a list");
    CHECK(qlm_tv_push(v, msgs, NULL) == QLM_ERUNTIME, "push of a failed builder");
    CHECK(qlm_tmpl_vars_set(NULL, "x", m) == QLM_ERUNTIME, "set on no vars");
    qlm_tval *j;
    CHECK(qlm_tv_json(v, "[1, 2", 5, &j, &err) == QLM_EUSAGE &&
              !strcmp(err.msg, "json:1:6: expected ',' or ']'"),
          "got \"%s\"", err.msg);
    CHECK(qlm_tv_json(v, "{\"a\":\n 01}", 10, &j, &err) == QLM_EUSAGE &&
              !strcmp(err.msg, "json:2:3: expected ',' or '}'"),
          "got \"%s\"", err.msg);
    CHECK(qlm_tmpl_vars_set_json(v, "[1]", 3, &err) == QLM_EUSAGE, "variables from a list");
    qlm_tmpl_vars_free(v);
    TEST_END();

    TEST_BEGIN("builders: JSON escapes, surrogate pairs, big numbers");
    v = qlm_tmpl_vars_new();
    static const char json[] = "{\"s\": \"\\u00e9\\ud83d\\ude00\\n\\\"\", \"i\": -9223372036854775808, "
                               "\"big\": 1e400, \"f\": 1.50, \"u\": 18446744073709551616}";
    rc = qlm_tmpl_vars_set_json(v, json, sizeof json - 1, &err);
    static const char src2[] = "{{ s }}|{{ s|length }}|{{ i }}|{{ big }}|{{ f }}|{{ u }}";
    out = NULL;
    rc = rc || qlm_tmpl_parse(src2, sizeof src2 - 1, &t, &err) || qlm_tmpl_render(t, v, &out, &on, &err);
    CHECK(rc == QLM_OK, "%s", err.msg);
    CHECK(!rc && !strcmp(out, "\xc3\xa9\xf0\x9f\x98\x80\n\"|4|-9223372036854775808|inf|1.5|1.8446744073709552e+19"),
          "got \"%s\"", out ? out : "");
    free(out);
    qlm_tmpl_free(t);
    qlm_tmpl_vars_free(v);
    TEST_END();
}

/* ---- limits and robustness ---- */
static void expect_error(const char *name, const char *src, const qlm_tmpl_limits *lim,
                         int want_rc, const char *want_msg)
{
    TEST_BEGIN(name);
    char *out = NULL;
    size_t on;
    qlm_err err = {0};
    int rc = render_json(src, strlen(src), "{}", lim, &out, &on, &err);
    CHECK(rc == want_rc, "rc %d (%s), want %d", rc, rc ? err.msg : "rendered", want_rc);
    CHECK(!rc || strstr(err.msg, want_msg), "got \"%s\", want \"%s\"", err.msg, want_msg);
    CHECK(!rc || one_line(err.msg), "error is not one line: \"%s\"", err.msg);
    free(out);
    TEST_END();
}

/* A template of n nested copies of open + core + close. */
static char *nest(const char *open, const char *core, const char *close, int n)
{
    size_t lo = strlen(open), lc = strlen(core), lz = strlen(close);
    char *s = malloc(lo * (size_t)n + lc + lz * (size_t)n + 1), *p = s;
    if (!s)
        return NULL;
    for (int i = 0; i < n; i++, p += lo)
        memcpy(p, open, lo);
    memcpy(p, core, lc);
    p += lc;
    for (int i = 0; i < n; i++, p += lz)
        memcpy(p, close, lz);
    *p = 0;
    return s;
}

static void test_limits(void)
{
    char *s = nest("(", "1", ")", 100000);
    char *src = s ? malloc(strlen(s) + 8) : NULL;
    if (src)
        sprintf(src, "{{ %s }}", s);
    expect_error("limits: 100000 nested parentheses are refused", src ? src : "", NULL, QLM_ELOAD,
                 "nested too deeply");
    free(s);
    free(src);
    s = nest("{% if true %}", "x", "{% endif %}", 5000);
    expect_error("limits: 5000 nested if blocks are refused", s ? s : "", NULL, QLM_ELOAD,
                 "nested too deeply");
    free(s);
    s = nest("-", "1", "", 100000);
    src = s ? malloc(strlen(s) + 8) : NULL;
    if (src)
        sprintf(src, "{{ %s }}", s);
    expect_error("limits: 100000 unary minuses are refused", src ? src : "", NULL, QLM_ELOAD,
                 "nested too deeply");
    free(s);
    free(src);
    s = nest("not ", "1", "", 100000);
    src = s ? malloc(strlen(s) + 8) : NULL;
    if (src)
        sprintf(src, "{{ %s }}", s);
    expect_error("limits: 100000 nots are refused", src ? src : "", NULL, QLM_ELOAD,
                 "nested too deeply");
    free(s);
    free(src);
    expect_error("limits: endless macro recursion stops like Python's",
                 "{% macro f(x) %}{{ f(x) }}{% endmacro %}{{ f(1) }}", NULL, QLM_EUSAGE,
                 "maximum recursion depth exceeded");
    qlm_tmpl_limits steps = {.max_steps = 100000};
    expect_error("limits: loops stop at the step limit",
                 "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}",
                 &steps, QLM_EUSAGE, "took more than 100000 steps");
    expect_error("limits: loops stop at the step limit by default too",
                 "{% for a in range(100000) %}{% for b in range(100000) %}{% for c in range(100000) "
                 "%}{% endfor %}{% endfor %}{% endfor %}",
                 NULL, QLM_EUSAGE, "template");
    qlm_tmpl_limits small = {.max_output = 1000};
    expect_error("limits: output is capped",
                 "{% for i in range(1000) %}0123456789{% endfor %}", &small, QLM_EUSAGE,
                 "rendered text is longer than 1000 bytes");
    expect_error("limits: a huge string repetition is refused", "{{ 'x' * 100000000000 }}", NULL,
                 QLM_EUSAGE, "MiB of memory");
    qlm_tmpl_limits mem = {.max_memory = 1 << 20};
    expect_error("limits: memory is capped",
                 "{% set ns = namespace(s='') %}{% for i in range(100000) %}{% set ns.s = ns.s ~ "
                 "'0123456789' %}{% endfor %}",
                 &mem, QLM_EUSAGE, "more than 1 MiB of memory");
    expect_error("errors: a raise_exception message with newlines comes back on one line",
                 "{{ raise_exception('first\\nsecond') }}", NULL, QLM_EUSAGE, "first second");
    /* Found by fuzz_template in CI: an empty message (or one starting
     * with a NUL) left err.msg empty, and callers print it as the error. */
    expect_error("errors: an empty raise_exception message still says what happened",
                 "{{ raise_exception('') }}", NULL, QLM_EUSAGE, "empty message");
    expect_error("errors: a raise_exception message starting with a NUL is not empty",
                 "{{ raise_exception('\\x00boom') }}", NULL, QLM_EUSAGE, "empty message");
    /* Found by fuzz_template: the dotted filter name was the source slice,
     * line break and all, and so was the error quoting it. */
    expect_error("errors: a dotted filter name split over lines is named without the break",
                 "{{ x|no\n . such }}", NULL, QLM_ELOAD, "no filter named 'no.such'");
    expect_error("limits: range is capped like the sandbox's", "{{ range(10**9)|list }}", NULL,
                 QLM_EUSAGE, "Range too big");
    static const char deep[] = "{% set ns = namespace(a=[], b=[]) %}{% for i in range(50000) %}"
                               "{% set ns.a = [ns.a] %}{% set ns.b = [ns.b] %}{% endfor %}";
    char buf[300];
    snprintf(buf, sizeof buf, "%s{{ ns.a == ns.b }}{{ ns.a < ns.b }}", deep);
    expect_error("limits: comparing lists 50000 deep stops like Python", buf, NULL, QLM_EUSAGE,
                 "maximum recursion depth exceeded in comparison");
    snprintf(buf, sizeof buf, "%s{{ ns.a }}", deep);
    expect_error("limits: printing a list 50000 deep stops like Python", buf, NULL, QLM_EUSAGE,
                 "maximum recursion depth exceeded while getting the repr of an object");
    snprintf(buf, sizeof buf, "%s{{ ns.a|tojson }}", deep);
    expect_error("limits: tojson of a list 50000 deep stops like Python", buf, NULL, QLM_EUSAGE,
                 "maximum recursion depth exceeded while encoding a JSON object");

    TEST_BEGIN("limits: within them, a long render is fine");
    char *out = NULL;
    size_t on;
    qlm_err err;
    static const char ok[] = "{% for i in range(20000) %}{{ i % 10 }}{% endfor %}";
    int rc = render_json(ok, sizeof ok - 1, "{}", NULL, &out, &on, &err);
    CHECK(rc == QLM_OK && on == 20000, "rc %d %s", rc, rc ? err.msg : "");
    free(out);
    TEST_END();
}

static int try_render(const char *src, size_t n, const char *json)
{
    qlm_tmpl_limits lim = {.max_output = 1 << 16, .max_memory = 8 << 20, .max_steps = 20000};
    char *out = NULL;
    size_t on;
    qlm_err err = {0};
    int rc = render_json(src, n, json, &lim, &out, &on, &err);
    free(out);
    if (rc && !one_line(err.msg))
        return -1;
    if (rc != QLM_OK && rc != QLM_ELOAD && rc != QLM_EUSAGE)
        return -1;
    return rc;
}

static void test_garbage(void)
{
    static const char *const frags[] = {
        "{{", "}}", "{%", "%}", "{#", "#}", "-", "+", " ", "\n", "if", "elif", "else", "endif",
        "for", "in", "endfor", "set", "=", "macro", "endmacro", "call", "endcall", "caller()",
        "(", ")", "[", "]", "{", "}", ",", ":", ".", "|", "~", "*", "**", "/", "//", "%", "<",
        "==", "!=", "not", "and", "or", "is", "defined", "none", "x", "msgs", "loop", "ns",
        "namespace(a=1)", "'s'", "\"q\\\"\"", "1", "2.5", "-1", "trim", "tojson", "length",
        "map(attribute='role')", "join", "items()", "raise_exception('r')", "range(3)", "l",
        "d", "s", "u", "[::-1]", "raw", "endraw", "break", "continue", "filter", "upper",
        "endfilter", "with", "endwith", "\xff", "\xc3", "\xe2\x82", "é",
    };
    const size_t nf = sizeof frags / sizeof *frags;
    int bad = 0, rendered = 0;
    char buf[512];
    for (int iter = 0; iter < 20000; iter++) {
        size_t len = 0, parts = 1 + rng_next() % 24;
        for (size_t p = 0; p < parts; p++) {
            const char *f = frags[rng_next() % nf];
            size_t fl = strlen(f);
            if (len + fl >= sizeof buf)
                break;
            memcpy(buf + len, f, fl);
            len += fl;
        }
        buf[len] = 0;
        int rc = try_render(buf, len, UNIT_VARS);
        if (rc < 0 && bad++ < 3)
            printf("# garbage case %d: bad error for \"%s\"\n", iter, buf);
        rendered += rc == QLM_OK;
    }
    TEST_BEGIN("robustness: 20000 random templates fail cleanly or render");
    CHECK(!bad, "%d templates gave a bad error", bad);
    CHECK(rendered > 100, "only %d rendered: the generator is too hostile to test rendering", rendered);
    TEST_END();

    /* Real templates, damaged: bytes flipped, dropped and duplicated. */
    static const char *const names[] = {
        "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use", "Qwen-Qwen2.5-7B-Instruct",
        "meta-llama-Llama-3.1-8B-Instruct", "mistralai-Mistral-Nemo-Instruct-2407",
    };
    bad = 0;
    for (size_t k = 0; k < sizeof names / sizeof *names; k++) {
        char path[300];
        size_t n, jn;
        snprintf(path, sizeof path, TDIR "/%s.jinja", names[k]);
        char *src = read_file(path, &n);
        snprintf(path, sizeof path, TDIR "/cases/%s.7.json", names[k]);
        char *json = read_file(path, &jn);
        if (!src || !json) {
            bad++;
            free(src);
            free(json);
            continue;
        }
        char *m = malloc(n * 2 + 16);
        for (int iter = 0; m && iter < 300; iter++) {
            memcpy(m, src, n);
            size_t mn = n;
            for (int e = 0, edits = 1 + (int)(rng_next() % 4); e < edits && mn > 2; e++) {
                size_t at = rng_next() % mn;
                switch (rng_next() % 3) {
                case 0: m[at] = (char)(rng_next() & 0xff); break;
                case 1: memmove(m + at, m + at + 1, mn - at - 1); mn--; break;
                default:
                    if (mn + 8 < n * 2) {
                        memmove(m + at + 8, m + at, mn - at);
                        mn += 8;
                    }
                }
            }
            if (try_render(m, mn, json) < 0)
                bad++;
        }
        free(m);
        free(src);
        free(json);
    }
    TEST_BEGIN("robustness: 1200 damaged real templates fail cleanly or render");
    CHECK(!bad, "%d bad results", bad);
    TEST_END();

    TEST_BEGIN("robustness: empty template, NUL bytes, invalid UTF-8, no variables");
    qlm_tmpl *t;
    qlm_err err;
    char *out = NULL;
    size_t on;
    int rc = qlm_tmpl_parse("", 0, &t, &err) || qlm_tmpl_render(t, NULL, &out, &on, &err);
    CHECK(rc == QLM_OK && out && on == 0, "empty template: %d", rc);
    free(out);
    qlm_tmpl_free(t);
    static const char odd[] = "a\0b\xff{{ '\xc3' ~ x|upper }}\xe2\x82{{ '\xff\xfe'|length }}";
    out = NULL;
    rc = qlm_tmpl_parse(odd, sizeof odd - 1, &t, &err) || qlm_tmpl_render(t, NULL, &out, &on, &err);
    CHECK(rc == QLM_OK && on == 8 && !memcmp(out, "a\0b\xff\xc3\xe2\x82" "2", 8),
          "odd bytes: rc %d len %zu", rc, out ? on : 0);
    free(out);
    qlm_tmpl_free(t);
    TEST_END();
}

int main(void)
{
    test_fixtures();
    test_units();
    test_syntax_errors();
    test_chat_api();
    test_builders();
    test_limits();
    test_garbage();
    TEST_EXIT();
}
