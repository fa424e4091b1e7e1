/* Shared subscriptions seen by one wirematch-proxy process (issue 7).
 *
 * Why: for a shared subscription "$share/G/F" the broker gives each message
 * to ONE member of group G (MQTT 5.0 §4.8.2), and the proxy can only
 * forward or withhold it at that member's connection. If the members'
 * neighborhoods or content filters differ, a message the chosen member's
 * filter rejects is lost for the group, even when another member wants it
 * (the broker never offers it to a second member). Members with the same
 * neighborhood and query are served exactly. So the proxy keeps, per shared
 * subscription (the whole "$share/G/F" text), the neighborhood NAME and
 * xpath TEXT its members use on this process's connections, with a count of
 * the records holding it (pending or granted), and refuses a member with
 * another (dataplane/proxy_filter.h: SUBACK 0x9E).
 *
 * What it cannot see: members connected straight to the broker or through
 * another proxy process, and members of persistent sessions while they are
 * away (their records live in the session table, dataplane/proxy_registry.h);
 * such a member coming back with another spec is taken anyway (force) and
 * counted by the caller.
 *
 * Thread safety: every function may be called from any worker; one mutex.
 */
#ifndef WM_DATAPLANE_PROXY_SHARE_H
#define WM_DATAPLANE_PROXY_SHARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct wm_proxy_shares wm_proxy_shares;

/* NULL on out of memory. */
wm_proxy_shares *wm_proxy_shares_new(void);
/* Frees the table (every reference is dropped with it). NULL is a no-op. */
void wm_proxy_shares_free(wm_proxy_shares *t);

/* A member's reference to shared subscription filter[0..len) ("$share/G/F",
 * bytes) with neighborhood nbhd and content filter xpath (NUL-terminated,
 * NULL = none). own: how many of the group's references are the caller's
 * own records of this filter, which the new subscription replaces (MQTT 5.0
 * §3.8.4: same filter, same session); when they are all the group has here,
 * nobody else's spec is at stake and the group takes the new one (a member
 * alone may change its neighborhood or content filter). Returns 0
 * (reference taken: the group was empty here, uses the same, or only the
 * caller's records were in it), 1 when other members through this process
 * use another spec: why[0..whylen) then names theirs, and no reference is
 * taken unless force (a subscription already at the broker), or -1 on out
 * of memory (none taken; the caller goes on without the check). */
int wm_proxy_shares_ref(wm_proxy_shares *t, const char *filter, uint32_t len, const char *nbhd, const char *xpath,
                        uint64_t own, bool force, char *why, size_t whylen);
/* The caller's own records of filter (own references, every one the caller
 * holds on it) stay with spec (nbhd, xpath): a replacement whose new spec
 * the group took was refused by the broker, the replaced record stays. If
 * they are all the group's references here, the group takes that spec back;
 * otherwise (another member came meanwhile with the new spec) it stays. Out
 * of memory: unchanged. */
void wm_proxy_shares_respec(wm_proxy_shares *t, const char *filter, uint32_t len, const char *nbhd, const char *xpath,
                            uint64_t own);
/* Drops a reference taken by wm_proxy_shares_ref; the group is forgotten
 * with its last one (its next member sets the spec). */
void wm_proxy_shares_unref(wm_proxy_shares *t, const char *filter, uint32_t len);

#endif
