/* wmctl entry point: dispatches to the command files (see control/wmctl.h).
 * Adding a command = one file and one row below. */
#include "control/wmctl.h"

#include <stdarg.h>
#include <string.h>

struct wmctl_command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *usage;
};

static const struct wmctl_command commands[] = {
    { "topic", wmctl_topic,
      "topic match FILTER TOPIC        print true/false (MQTT 5.0 4.7)\n"
      "  topic check-filter FILTER       validate a topic filter (4.7, 4.8.2)\n"
      "  topic check-name NAME           validate a topic name (4.7)" },
    { "match", wmctl_match,
      "match --subs SUBS.jsonl [--filters FILTERS.json] --pubs PUBS.jsonl\n"
      "                                  print the subscriptions each publication reaches" },
};

int wmctl_usage_error(const char *command, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "wmctl %s: ", command);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return 2;
}

static void usage(FILE *out)
{
    fprintf(out, "usage: wmctl COMMAND [ARGS]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %s\n", commands[i].usage);
}

int main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "wmctl: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
