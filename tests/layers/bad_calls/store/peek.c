/* peek.c: a fixture for the call check: the store calling into devices/
 * elsewhere than devices/runtime/state.c (here high.c); the check must fail. */
int fixture_high(int n);
int fixture_store_peek(void);

int fixture_store_peek(void)
{
    return fixture_high(1);
}
