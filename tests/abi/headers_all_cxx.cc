/*
 * headers_all_cxx.cc: the C++ build of headers_all.c: every public ABI
 * header must compile as C++17 (with -Wall -Wextra -Werror) and be usable
 * from it, both plainly and after <cassert> (-DABI_ASSERT_FIRST).
 */
#ifdef ABI_ASSERT_FIRST
#include <cassert>
#endif
#include "headers_all.c"
