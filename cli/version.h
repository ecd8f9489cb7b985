/* cli/version.h — ./train_gpt --version.
 *
 * Owns: the version text: the git commit the binary was built from (the
 * Makefile passes `git describe --always --dirty`, "unknown" outside a git
 * tree), the compiler, and the backends compiled in with their library
 * versions (kernels/device_info.h). */
#ifndef CLI_VERSION_H
#define CLI_VERSION_H

#include <stdio.h>

void version_print(FILE *out);

/* The commit alone (`git describe --always --dirty`, or "unknown"). */
const char *version_commit(void);

#endif
