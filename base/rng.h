/* base/rng.h — the project's one pseudo-random generator: splitmix64.
 *
 * Owns: rng_next. Weight init, data shuffling, sampling and the tests all
 * draw from it: a 64-bit state, fully determined by its seed, and small
 * enough to save in a checkpoint as one integer. */
#ifndef BASE_RNG_H
#define BASE_RNG_H

#include <stdint.h>

/* Advance *state and return the next 64 random bits. */
static inline uint64_t rng_next(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

#endif
