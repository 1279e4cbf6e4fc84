/* high.c: a fixture for the call check (see ../thread/low.c). */
int fixture_low(int n);
int fixture_high(int n);

int fixture_high(int n)
{
    return n > 0 ? fixture_low(n - 1) : 1;
}
