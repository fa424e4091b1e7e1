/* Picking the one member of a shared subscription that receives a message
 * (MQTT 5.0 §4.8.2: "the Server ... sends the message to one of the
 * subscribing Sessions"; the choice is left to the Server).
 *
 * wm_matcher_lookup() returns a matched $share group once with all its
 * matching members (sorted by subscription id); these functions choose one.
 * Two policies:
 *   round robin       — spreads load evenly; the caller owns the cursor
 *                       (one per group, per core: no shared mutable state);
 *   hash by publisher — the same publisher always reaches the same member
 *                       while the member set is unchanged, which keeps a
 *                       publisher's messages in order. Rendezvous (highest
 *                       random weight) hashing: when a member leaves, only
 *                       the publishers it served move.
 * Both are pure, allocate nothing and are thread safe (the cursor is the
 * caller's). Both return an index into members[0..count), or UINT32_MAX
 * when count == 0.
 */
#ifndef WM_MATCHER_SHARE_PICK_H
#define WM_MATCHER_SHARE_PICK_H

#include <stddef.h>
#include <stdint.h>

/* Round robin: returns *cursor % count and advances *cursor. */
uint32_t wm_share_pick_rr(uint32_t *cursor, uint32_t count);

/* Rendezvous hash of (publisher, member id) over members[0..count):
 * publisher is the publisher's client id bytes (may be empty). */
uint32_t wm_share_pick_hash(const char *publisher, size_t publisher_len, const uint32_t *members, uint32_t count);

#endif
