/* wmctl entry point: dispatches to the command files (see control/wmctl.h).
 * Adding a command = one file and one row below. */
#include "control/wmctl.h"

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
      "match --subs SUBS.jsonl [--filters FILTERS.json] [--resolution R.wmr] --pubs PUBS.jsonl\n"
      "                                  print the subscriptions each publication reaches" },
    { "exi", wmctl_exi,
      "exi decode (--schema X.xsd | --grammar G.wmg | --schemaless) [--strict] [--byte-aligned]\n"
      "             [--fragment] [--preserve-prefixes] [--compression|--pre-compress] [--mem-cap BYTES] IN.exi|-\n"
      "                                       EXI -> XML (W3C EXI 1.0; compression is refused with the reason;\n"
      "                                       --preserve-prefixes: the XML is written with the stream's\n"
      "                                       own prefixes and namespace declarations)\n"
      "  exi encode (--schema X.xsd | --grammar G.wmg | --schemaless) [--strict] [--byte-aligned]\n"
      "             [--fragment] [--preserve-prefixes] [--header-options] [--schema-id ID] [--cookie] IN.xml|- OUT.exi\n"
      "  exi compile --schema X.xsd OUT.wmg   save a compiled grammar\n"
      "  exi grammar --schema X.xsd [--format text|exificient] [TYPE]\n"
      "                                       print the grammar (EXI 1.0 8.5), or exificient.js's JSON\n"
      "  exi filter (--schema X.xsd | --grammar G.wmg | --schemaless | --registry R --content-type CT)\n"
      "             [--ns P=URI ...] --query XPATH ... [--strict] [--byte-aligned] [--fragment]\n"
      "             [--preserve-prefixes] [--compression|--pre-compress] [--mem-cap BYTES] [--stats] IN.exi|-\n"
      "                                       matching queries (1-based) as JSON; --mem-cap: per-document\n"
      "                                       decoding memory, 65536..68719476736 bytes (default 4 MiB)" },
    { "resolve", wmctl_resolve,
      "resolve --world W.geojson --nbhd F.nbhd [--out R.wmr] [--json] [--crs EPSG:N]  (one or both)\n"
      "                                  resolve neighborhoods (spaPS IV) into a resolution file / JSON" },
    { "dump", wmctl_dump,
      "dump R.wmr                      print a resolution file as JSON" },
    { "mqtt", wmctl_mqtt,
      "mqtt decode [--from client|server] [--max-packet-size N] [--topic-alias-maximum N]\n"
      "              [--check-payload-format] FILE|-\n"
      "                                  MQTT v5 packets -> one JSON object per line" },
};

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
        if (!strcmp(argv[1], commands[i].name)) {
            int rc = commands[i].run(argc - 1, argv + 1);
            /* Results go to stdout: a full disk must not look like success,
             * nor like bad input (exit 1 with the result lost, e.g. a capture
             * whose last packet is malformed). A usage error (2) has said why. */
            if (rc == 2) return rc;
            int out = wmctl_close_output(argv[1], stdout, "stdout");
            return out ? out : rc;
        }
    fprintf(stderr, "wmctl: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
