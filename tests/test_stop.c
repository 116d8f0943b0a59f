/* test_stop.c - stop strings across token boundaries. */
#include <string.h>

#include "src/stop.h"
#include "test.h"

/* Feeds pieces, collects released text; returns whether it stopped. */
static int run(const char *const *stops, int n_stops, const char *const *pieces, int n, char *out)
{
    qlm_stopper s;
    qlm_stopper_init(&s, stops, n_stops);
    out[0] = 0;
    int stopped = 0;
    for (int i = 0; i < n && !stopped; i++) {
        const char *o;
        size_t on;
        stopped = qlm_stopper_feed(&s, pieces[i], strlen(pieces[i]), &o, &on);
        strncat(out, o, on);
    }
    if (!stopped) {
        const char *o;
        size_t on;
        qlm_stopper_flush(&s, &o, &on);
        strncat(out, o, on);
    }
    qlm_stopper_free(&s);
    return stopped;
}

int main(void)
{
    char out[256];
    const char *stops[] = {"\n\nUser:", "###"};

    TEST_BEGIN("stop_spanning_tokens");
    const char *p1[] = {"Hello", " there", "\n", "\nUs", "er:", " more"};
    CHECK(run(stops, 2, p1, 6, out) == 1, "did not stop");
    CHECK(!strcmp(out, "Hello there"), "released '%s'", out);
    TEST_END();

    TEST_BEGIN("near_miss_is_released");
    const char *p2[] = {"a\n", "\nUse", "d it", "#", "#", "!"};
    CHECK(run(stops, 2, p2, 6, out) == 0, "stopped on a near miss");
    CHECK(!strcmp(out, "a\n\nUsed it##!"), "released '%s'", out);
    TEST_END();

    TEST_BEGIN("stop_inside_one_token");
    const char *p3[] = {"x", "yz###tail"};
    CHECK(run(stops, 2, p3, 2, out) == 1 && !strcmp(out, "xyz"), "released '%s'", out);
    TEST_END();

    TEST_BEGIN("no_stops_passes_through");
    const char *p4[] = {"one ", "two"};
    CHECK(run(NULL, 0, p4, 2, out) == 0 && !strcmp(out, "one two"), "released '%s'", out);
    TEST_END();

    TEST_BEGIN("held_back_text_flushed_at_end");
    const char *p5[] = {"end\n"};
    CHECK(run(stops, 2, p5, 1, out) == 0 && !strcmp(out, "end\n"), "released '%s'", out);
    TEST_END();
    TEST_EXIT();
}
