/* wm_naive: the obviously-right matcher, for differential tests and as the
 * in-run reference of the benchmarks.
 *
 * A linear scan over every subscription with the codec's reference topic
 * matcher (wm_topic_match, MQTT 5.0 §4.7) and plain set membership for
 * neighborhoods (a sorted array and binary search), applying exactly the
 * rules matcher.h states: topic AND (no neighborhood OR some peid in it)
 * AND NOT (No Local AND same client). Shared subscriptions are flattened:
 * every matching member is reported. Slow by design; allocates; one thread.
 */
#ifndef WM_MATCHER_NAIVE_H
#define WM_MATCHER_NAIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct wm_naive wm_naive;

wm_naive *wm_naive_new(void);
void wm_naive_free(wm_naive *n);
/* Adds subscription `id` (caller's numbering, unique among live ones).
 * filter: a valid filter, possibly "$share/..."; peids: the neighborhood as
 * caller peid numbers (copied) when spatial, ignored otherwise.
 * Returns false on allocation failure. */
bool wm_naive_add(wm_naive *n, uint32_t id, const char *filter, const char *client, bool no_local,
                  bool spatial, const uint32_t *peids, size_t n_peids);
/* Removes subscription id; false if unknown. */
bool wm_naive_remove(wm_naive *n, uint32_t id);
/* Ids of every matching subscription, ascending, into out[0..cap); returns
 * the total count (which may exceed cap). client may be NULL. */
size_t wm_naive_match(const wm_naive *n, const char *topic, const uint32_t *peids, size_t n_peids,
                      const char *client, uint32_t *out, size_t cap);
/* Number of live subscriptions. */
size_t wm_naive_count(const wm_naive *n);

#endif
