/* low.c: a fixture for the call check (compiled, never linked): a file of
 * devices/thread/ that calls up into devices/runtime/ (high.c), which
 * calls back: a rank broken and a call circle; the check must fail. */
int fixture_low(int n);
int fixture_high(int n);

int fixture_low(int n)
{
    return n > 0 ? fixture_high(n - 1) : 0;
}
