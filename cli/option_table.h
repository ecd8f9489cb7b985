/* cli/option_table.h — the trainer's flags, a row each.
 *
 * Owns: every flag's name, kind, TrainOptions field, default, accepted
 * range or choices, --help group and text. cli/options.c parses argv and
 * --config by it, prints --help from it and formats a run's record with it.
 * A flag's row index is its place in TrainOptions.given and in a run
 * record's order: rows are added, never reordered. */
#ifndef CLI_OPTION_TABLE_H
#define CLI_OPTION_TABLE_H

#include <stddef.h>

/* K_OPTSTR: an optional string, attached as --name=VALUE (getopt_long's
 * rule for optional arguments); the flag alone stores NULL. K_BYTES: a
 * size_t byte count, planner_parse_bytes's syntax. K_FLAG: an int set to 1
 * by the flag alone (no value). */
typedef enum { K_INT, K_LONG, K_FLOAT, K_U64, K_STR, K_CHOICE, K_OPTSTR, K_BYTES, K_FLAG } OptKind;

typedef struct {
    const char *name;
    OptKind kind;
    size_t offset;      /* into TrainOptions */
    const char *def;    /* default, parsed like a user value; NULL = none */
    double lo, hi;      /* accepted range for numbers */
    const char *choices;/* K_CHOICE: '|'-separated; stored as the index */
    const char *group, *help;
} OptSpec;

extern const OptSpec option_table[];
extern const int option_table_len;

#endif
