/*
 * test_progress.c: unit tests of the progress line of long work
 * (emu/progress.c): drawn on a terminal (a pseudo-terminal here) with the
 * amount, the total, the percentage and a final newline; silent for the
 * first half second; nothing at all when stderr is a pipe.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include "emu/log.h"
#include "emu/progress.h"

/* Everything readable on rd: a pseudo-terminal hands written bytes to
 * its master side a little later, so read until 200 ms pass with nothing
 * new (a loaded machine may deliver the final newline late). */
static size_t drain(int rd, char *out, size_t cap)
{
    size_t got = 0;
    struct pollfd pfd = {.fd = rd, .events = POLLIN};
    while (got < cap - 1 && poll(&pfd, 1, 200) > 0) {
        ssize_t n = read(rd, out + got, cap - 1 - got);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    out[got] = '\0';
    return got;
}

/* Run the progress calls with stderr on fd; what was written to rd. */
static size_t progress_run(int fd, int rd, bool hurry, char *out, size_t cap)
{
    int saved = dup(2);
    assert_true(saved >= 0);
    dup2(fd, 2);
    struct progress p;
    progress_begin(&p, "saving snapshot", "MiB", 4ull << 20);
    progress_add(&p, 1ull << 20);            /* too early: nothing drawn */
    if (hurry)
        p.next_ns = 0;                       /* as if half a second had passed */
    progress_add(&p, 1ull << 20);
    progress_end(&p);
    dup2(saved, 2);
    close(saved);
    return drain(rd, out, cap);
}

static void test_progress_on_a_terminal(void **state)
{
    (void)state;
    int m = posix_openpt(O_RDWR | O_NOCTTY);
    assert_true(m >= 0);
    assert_int_equal(grantpt(m), 0);
    assert_int_equal(unlockpt(m), 0);
    int s = open(ptsname(m), O_RDWR | O_NOCTTY);
    assert_true(s >= 0);
    char out[1024];
    progress_run(s, m, true, out, sizeof out);
    assert_non_null(strstr(out, "saving snapshot: 2 of 4 MiB (50%)"));
    assert_non_null(strchr(out, '\n'));
    assert_int_equal(progress_run(s, m, false, out, sizeof out), 0);   /* short: silent */
    close(s);
    close(m);
}

static void test_progress_silent_on_a_pipe(void **state)
{
    (void)state;
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    char out[1024];
    assert_int_equal(progress_run(fds[1], fds[0], true, out, sizeof out), 0);
    close(fds[0]);
    close(fds[1]);
}

int main(void)
{
    log_configure(&(struct log_config){LOG_LVL_ERROR, NULL, NULL, NULL});
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_progress_on_a_terminal),
        cmocka_unit_test(test_progress_silent_on_a_pipe),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
