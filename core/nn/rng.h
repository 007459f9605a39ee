/*
 * rng.h — a small deterministic random generator (splitmix64).
 *
 * Used for initialisation, data sampling and tests.  Identical streams on
 * every platform and thread count: nothing here touches global state.
 */
#ifndef GATED_RNG_H
#define GATED_RNG_H

#include <stdint.h>

typedef struct {
    uint64_t s;
} Rng;

/* The splitmix64 finaliser: a bijection of 64-bit words that scatters
 * nearby inputs. */
static inline uint64_t rng_mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
/* Stream `stream` of seed `seed`.  The generator is a Weyl sequence (the
 * state steps by a constant, the output is the state mixed), so a state
 * that is a linear function of the seed would make seed s + d the stream
 * of seed s shifted by d draws: replicate seeds would share their data
 * order and initial weights, shifted by one.  So the start state is a hash
 * of (seed, stream): distinct pairs start at unrelated points of the 2^64
 * cycle (and distinct seeds of one stream at distinct points, the hash
 * being a bijection), and tagged streams of one seed (data, init,
 * evaluation windows) do not overlap either. */
static inline Rng rng_stream(uint64_t seed, uint64_t stream) {
    Rng r = {rng_mix64(rng_mix64(seed ^ 0x632BE59BD9B4E019ull) ^ (stream * 0x9E3779B97F4A7C15ull))};
    return r;
}
static inline Rng rng_seed(uint64_t seed) { return rng_stream(seed, 0); }
/* Next 64 random bits. */
static inline uint64_t rng_u64(Rng *r) {
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
/* Uniform in [0, 1) with 53 random bits. */
static inline double rng_uniform(Rng *r) { return (double)(rng_u64(r) >> 11) * (1.0 / 9007199254740992.0); }
/* Uniform integer in [0, n). */
static inline uint64_t rng_below(Rng *r, uint64_t n) { return rng_u64(r) % n; }
/* Standard normal (Box-Muller; one value per call, deterministic). */
double rng_normal(Rng *r);

#endif
