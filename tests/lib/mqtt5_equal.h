/* Test helper: semantic equality of two MQTT v5 packets (the fields the
 * packet's type has, per codec/mqtt5_packet.h), whether their repeated items
 * come from raw views (decoded) or encoder-input arrays (built by hand).
 * Used by the round-trip tests and the fuzz target's decode->encode->decode
 * check. On inequality, `why` (if not NULL) names the first differing field. */
#ifndef WM_TESTS_MQTT5_EQUAL_H
#define WM_TESTS_MQTT5_EQUAL_H

#include <stdbool.h>
#include <stddef.h>

#include "codec/mqtt5_packet.h"

bool wm_mqtt5_packet_equal(const wm_mqtt5_packet *a, const wm_mqtt5_packet *b, char *why, size_t why_len);

#endif
