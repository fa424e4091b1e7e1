/* The QoS 2 messages of detached MQTT sessions, shared by the workers'
 * session layers (mqtt_session.h, "QoS 2").
 *
 * Why: the data plane matches a client's QoS 2 message at its PUBREL
 * (§4.3.3, as mosquitto delivers it), so it holds a copy of the PUBLISH
 * until then. A session that ends with a non-zero Session Expiry Interval
 * keeps its exchanges in flight: the client resumes it (Clean Start 0,
 * Session Present 1) and sends the PUBREL on the new connection (MQTT 5.0
 * §4.4). With several workers, RSS may send that connection to another
 * worker than the one holding the copy, and a worker's own pool is its
 * alone (workers share no mutable state on the packet path). So when a
 * session detaches, its layer moves its copies here, and the layer that
 * sees the session resume (any worker) takes them: from then on that layer
 * owns the entry and reads its bytes without the lock until the PUBREL,
 * the broker's PUBREC error, or the session's end releases it, or a new
 * detach hands it back.
 *
 * Bounded: `slots` entries of at most `slot_bytes` (resolved topic + the
 * PUBLISH as received), preallocated by the caller; a copy that finds no
 * room stays in its worker's pool (the caller counts it). Entries are
 * looked up by client id and packet identifier: a scan, at session events
 * only (detach, resume, a PUBREL whose copy the session does not hold),
 * never per PUBLISH.
 *
 * An entry is FREE, DETACHED (its session waits for a resume until
 * deadline_ns, packet time) or OWNED (a layer's live session refers to it).
 * Every function that changes entries takes the store's mutex (session
 * events are rare control events; PUBLISHes never take it). Functions that
 * return counts of freed entries leave the PUBLISH outcomes of those
 * messages to the caller (mqtt_session.h WM_MQTT_PUB_OUTCOMES).
 *
 * Thread safety: every function may be called from any worker; the bytes
 * of an OWNED entry are read by its owner only (the mutex that made it the
 * owner orders them after the copy). */
#ifndef WM_DATAPLANE_QOS2_STORE_H
#define WM_DATAPLANE_QOS2_STORE_H

#include <stddef.h>
#include <stdint.h>

struct wm_qos2_store;

/* Bytes of caller memory (8-byte aligned) for a store of `slots` entries
 * of at most slot_bytes each. */
size_t wm_qos2_store_memsize(uint32_t slots, uint32_t slot_bytes);

/* Sets up a store over mem (wm_qos2_store_memsize bytes) and returns it
 * (= mem), or NULL if slots > 2^31 - 1 or its mutex cannot be set up. Free
 * the memory after wm_qos2_store_fini, when no layer uses it. */
struct wm_qos2_store *wm_qos2_store_init(void *mem, uint32_t slots, uint32_t slot_bytes);

/* Destroys the store's mutex (the caller frees its memory). */
void wm_qos2_store_fini(struct wm_qos2_store *st);

/* A detached session's copy: client id client[0..client_len) (at most 128
 * bytes), packet identifier id, expiry deadline_ns (packet time;
 * UINT64_MAX never), the resolved topic and the PUBLISH's bytes, copied.
 * Returns the entry's index (DETACHED), or -1 if it does not fit in
 * slot_bytes or no entry is free. */
int32_t wm_qos2_store_put(struct wm_qos2_store *st, const char *client, uint32_t client_len, uint16_t id,
                          uint64_t deadline_ns, const uint8_t *topic, uint32_t topic_len, const uint8_t *pkt,
                          uint32_t pkt_len);

/* The owner's session detaches again: entry `slot` (OWNED by the caller)
 * waits for a resume until deadline_ns. */
void wm_qos2_store_detach(struct wm_qos2_store *st, int32_t slot, uint64_t deadline_ns);

/* A session of client id client resumed (Session Present 1) holding the
 * packet identifiers ids[0..n): each DETACHED entry of the client whose
 * identifier is ids[i] becomes the caller's (OWNED), its index written to
 * slots[i] (-1 for identifiers without one); the client's other DETACHED
 * entries are freed (their messages are gone with the old session: n = 0
 * for a new session, Session Present 0). Returns the number freed. */
uint32_t wm_qos2_store_resume(struct wm_qos2_store *st, const char *client, uint32_t client_len, const uint16_t *ids,
                              uint32_t n, int32_t *slots);

/* One DETACHED entry of client with identifier id made the caller's
 * (OWNED): for a PUBREL whose copy the resumed session did not find (its
 * old connection ended after the new one resumed). Its index, or -1. */
int32_t wm_qos2_store_claim(struct wm_qos2_store *st, const char *client, uint32_t client_len, uint16_t id);

/* The owner reads entry `slot`: its resolved topic is the first *topic_len
 * bytes, the PUBLISH the next *pkt_len. Valid until the owner releases or
 * detaches it. No lock. */
const uint8_t *wm_qos2_store_bytes(const struct wm_qos2_store *st, int32_t slot, uint32_t *topic_len,
                                   uint32_t *pkt_len);

/* The owner is done with entry `slot` (PUBREL, PUBREC error, session end):
 * FREE. */
void wm_qos2_store_release(struct wm_qos2_store *st, int32_t slot);

/* Packet time of the earliest DETACHED deadline (UINT64_MAX: none): one
 * atomic load, for a worker's burst end. */
uint64_t wm_qos2_store_next_deadline(const struct wm_qos2_store *st);

/* Frees the DETACHED entries whose deadline is <= now_ns (their sessions
 * expired) and returns how many. */
uint32_t wm_qos2_store_expire(struct wm_qos2_store *st, uint64_t now_ns);

/* The run ends: frees every DETACHED entry and returns how many. Call when
 * no worker runs. */
uint32_t wm_qos2_store_finish(struct wm_qos2_store *st);

/* Entries DETACHED now (a gauge; under the mutex). */
uint32_t wm_qos2_store_detached(struct wm_qos2_store *st);

#endif
