/* `wmctl dump R.wmr`: a resolution file as JSON, the same shape as
 * `wmctl resolve --json` (one printer, control/resolution_json.c). */
#include <string.h>

#include "control/resolution.h"
#include "control/wmctl.h"

int wmctl_dump(int argc, char **argv)
{
    if (argc != 2 || argv[1][0] == '-')
        return wmctl_usage_error("dump", "%s\nusage: wmctl dump R.wmr",
                                 argc < 2 ? "no resolution file" : argc > 2 ? "one resolution file only" : "no options");
    wm_resolution_error err;
    wm_resolution *r = wm_resolution_open(argv[1], &err);
    if (!r) {
        wm_load_error le;
        wm_resolution_error_load(&err, argv[1], &le);
        return wmctl_load_error("dump", &le, err.status == WM_RESOLUTION_ERR_IO ? 2 : 1);
    }
    wm_resolution_print_json(r, stdout);   /* a write error is sticky: wmctl's main reports it */
    wm_resolution_close(r);
    return 0;
}
