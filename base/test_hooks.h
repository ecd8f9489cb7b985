/* base/test_hooks.h — test-only hooks, compiled only into the test build.
 *
 * A few files hold hooks the suite drives through TRAIN_GPT_TEST_*
 * environment variables (a NaN gradient, a stalled rank, delays that let a
 * signal land mid-step or mid-save, the eval dump). The Makefile compiles
 * just those files a second time with -DTRAIN_GPT_TEST_HOOKS into
 * $(BUILD)/hooks/ and links them into the suite (build/run_tests) and the
 * programs it drives ($(BUILD)/test/train_gpt, $(BUILD)/test/tokenize). The
 * ./train_gpt and ./tokenize users run are built without the flag: they read
 * no TRAIN_GPT_TEST_* variable and hold none of the names
 * (tests/e2e/build/test_test_hooks.c checks).
 *
 *   TEST_HOOK(stmt);      stmt in the test build; nothing in the product
 *   TEST_HOOK_MS("NAME")  io_test_env_ms("NAME") in the test build (base/fileio.h:
 *                         milliseconds in $NAME, 0 when unset); 0 in the product
 *
 * A hook's state lives in the structs of both builds alike (the hooked and
 * the plain objects share one layout); only the code that reads or acts on
 * it is compiled out. */
#ifndef BASE_TEST_HOOKS_H
#define BASE_TEST_HOOKS_H

#ifdef TRAIN_GPT_TEST_HOOKS
#define TEST_HOOK(...) do { __VA_ARGS__; } while (0)
#define TEST_HOOK_MS(name) io_test_env_ms(name)
#else
#define TEST_HOOK(...) ((void)0)
#define TEST_HOOK_MS(name) 0
#endif

#endif
