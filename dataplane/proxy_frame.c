/* See proxy_frame.h. Until the codec's streaming MQTT v5 decoder is on main
 * this relays bytes unframed (every received byte is ready at once, no
 * packet is counted); the framer's interface is the one the decoder-backed
 * version keeps. */
#include "dataplane/proxy_frame.h"

void wm_proxy_framer_init(wm_proxy_framer *fr)
{
    fr->packets = 0;
    fr->stopped = false;
}

wm_proxy_frame_result wm_proxy_frame(wm_proxy_framer *fr, wm_proxy_queue *q, bool from_client,
                                     uint32_t max_packet)
{
    (void)fr; (void)from_client; (void)max_packet;
    q->ready = q->tail;
    return (wm_proxy_frame_result){ .verdict = WM_PROXY_FRAME_OK };
}
