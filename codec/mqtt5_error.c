/* Names and reason codes of codec errors (see codec/mqtt5_error.h). */
#include "codec/mqtt5_error.h"

static const char *const names[WM_MQTT5_E_COUNT_] = {
    [WM_MQTT5_E_OK] = "ok",
    [WM_MQTT5_E_RESERVED_TYPE] = "reserved_packet_type",
    [WM_MQTT5_E_FIXED_HEADER_FLAGS] = "fixed_header_flags",
    [WM_MQTT5_E_PUBLISH_QOS3] = "publish_qos_3",
    [WM_MQTT5_E_PUBLISH_DUP_QOS0] = "publish_dup_qos_0",
    [WM_MQTT5_E_VBI_TOO_LONG] = "vbi_too_long",
    [WM_MQTT5_E_VBI_NOT_MINIMAL] = "vbi_not_minimal",
    [WM_MQTT5_E_TRUNCATED] = "truncated",
    [WM_MQTT5_E_TRAILING_BYTES] = "trailing_bytes",
    [WM_MQTT5_E_UTF8_ILL_FORMED] = "utf8_ill_formed",
    [WM_MQTT5_E_UTF8_OVERLONG] = "utf8_overlong",
    [WM_MQTT5_E_UTF8_SURROGATE] = "utf8_surrogate",
    [WM_MQTT5_E_UTF8_NUL] = "utf8_nul",
    [WM_MQTT5_E_PROPERTY_UNKNOWN] = "property_unknown",
    [WM_MQTT5_E_TOPIC_EMPTY] = "topic_empty",
    [WM_MQTT5_E_TOPIC_WILDCARD_IN_NAME] = "topic_wildcard_in_name",
    [WM_MQTT5_E_TOPIC_HASH_NOT_LAST] = "topic_hash_not_last",
    [WM_MQTT5_E_TOPIC_HASH_NOT_ALONE] = "topic_hash_not_alone",
    [WM_MQTT5_E_TOPIC_PLUS_NOT_ALONE] = "topic_plus_not_alone",
    [WM_MQTT5_E_SHARE_EMPTY_NAME] = "share_empty_name",
    [WM_MQTT5_E_SHARE_BAD_NAME] = "share_bad_name",
    [WM_MQTT5_E_SHARE_NO_FILTER] = "share_no_filter",
    [WM_MQTT5_E_CONNECT_RESERVED_FLAG] = "connect_reserved_flag",
    [WM_MQTT5_E_WILL_QOS3] = "will_qos_3",
    [WM_MQTT5_E_WILL_FLAGS] = "will_flags_without_will",
    [WM_MQTT5_E_CONNACK_RESERVED_FLAGS] = "connack_reserved_flags",
    [WM_MQTT5_E_SUBOPT_RESERVED] = "subscription_options_reserved",
    [WM_MQTT5_E_WRONG_DIRECTION] = "wrong_direction",
    [WM_MQTT5_E_PROPERTY_DUPLICATE] = "property_duplicate",
    [WM_MQTT5_E_PROPERTY_NOT_ALLOWED] = "property_not_allowed",
    [WM_MQTT5_E_PROPERTY_VALUE] = "property_value",
    [WM_MQTT5_E_SUBSCRIPTION_ID_FROM_CLIENT] = "subscription_identifier_from_client",
    [WM_MQTT5_E_SUBSCRIPTION_ID_ZERO] = "subscription_identifier_zero",
    [WM_MQTT5_E_TOPIC_NAME_EMPTY_NO_ALIAS] = "topic_name_empty_without_alias",
    [WM_MQTT5_E_PACKET_ID_ZERO] = "packet_identifier_zero",
    [WM_MQTT5_E_NO_TOPIC_FILTERS] = "no_topic_filters",
    [WM_MQTT5_E_NO_REASON_CODES] = "no_reason_codes",
    [WM_MQTT5_E_SUBOPT_QOS3] = "subscription_qos_3",
    [WM_MQTT5_E_SUBOPT_RETAIN_HANDLING3] = "retain_handling_3",
    [WM_MQTT5_E_SHARED_NO_LOCAL] = "shared_subscription_no_local",
    [WM_MQTT5_E_REASON_CODE] = "reason_code_not_allowed",
    [WM_MQTT5_E_AUTH_DATA_NO_METHOD] = "authentication_data_without_method",
    [WM_MQTT5_E_AUTH_NO_METHOD] = "authentication_method_missing",
    [WM_MQTT5_E_SESSION_PRESENT_ON_ERROR] = "session_present_with_error",
    [WM_MQTT5_E_SESSION_EXPIRY_FROM_SERVER] = "session_expiry_from_server",
    [WM_MQTT5_E_RESPONSE_TOPIC_INVALID] = "response_topic_invalid",
    [WM_MQTT5_E_PROTOCOL_NAME] = "protocol_name",
    [WM_MQTT5_E_PROTOCOL_VERSION] = "protocol_version",
    [WM_MQTT5_E_TOPIC_ALIAS_ZERO] = "topic_alias_zero",
    [WM_MQTT5_E_TOPIC_ALIAS_TOO_LARGE] = "topic_alias_too_large",
    [WM_MQTT5_E_PACKET_TOO_LARGE] = "packet_too_large",
    [WM_MQTT5_E_PAYLOAD_FORMAT_INVALID] = "payload_format_invalid",
};

const char *wm_mqtt5_err_name(wm_mqtt5_err e)
{
    return (unsigned)e < WM_MQTT5_E_COUNT_ && names[e] ? names[e] : "unknown";
}

uint8_t wm_mqtt5_err_reason(wm_mqtt5_err e)
{
    if (e == WM_MQTT5_E_OK) return 0x00;
    if (e < WM_MQTT5_E_WRONG_DIRECTION) return 0x81;
    if (e < WM_MQTT5_E_PROTOCOL_NAME) return 0x82;
    if (e < WM_MQTT5_E_TOPIC_ALIAS_ZERO) return 0x84;
    if (e < WM_MQTT5_E_PACKET_TOO_LARGE) return 0x94;
    if (e == WM_MQTT5_E_PACKET_TOO_LARGE) return 0x95;
    if (e == WM_MQTT5_E_PAYLOAD_FORMAT_INVALID) return 0x99;
    return 0x80;
}
