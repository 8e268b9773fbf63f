/*
 * The partition engine: how many layers of a traced model fit a memory budget, what ONNX
 * Runtime's own rule would accept on the same trace, and whether its placement rules match the
 * model's nodes (docs/partition.md defines every rule).
 *
 *   layers.c    layer discovery: the layer number in a node name (the exporters' layers.N)
 *   model.c     the nodes of a partition (trace and node list), their layers and execution order,
 *               which allocation belongs to which node (allocation names included)
 *   costs.c     per device: each layer's persistent bytes, peak activations, workspace (ONNX
 *               Runtime's ledger) and share of what is outside every layer; ORT's charge per node
 *   cut.c       the layer-atomic cut, ORT's node-level stop-at-first-overflow rule, ready values
 *   rules.c     session.name_based_layer_assignment: parsing (ORT's grammar) and matching
 *   coverage.c  rule coverage, profiling coverage (nodes that never ran), first-run risk
 *   nodelist.c  the model's node list (--nodes): names, or the graph as JSON
 *   murmur.c    MurmurHash3 x86_128, which ORT's unique node names use
 *   nodestats.c ORT's node-stats file (NodeStatsRecorder's format) and its node names
 *   results.c   the result tables partitions, partition_layers, partition_rules
 *   svg.c       the picture: layers stacked against the budget
 *
 * Errors are values: functions return 0, or -1 with one line in err.
 */
#ifndef WS_PARTITION_H
#define WS_PARTITION_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sqlite3.h>

#include "analysis.h"
#include "estimates.h"
#include "resolve.h"

#define WS_PART_DEFAULT_PATTERN "layers."

/* ---- layer discovery (layers.c) ---- */

/* The layer number in a node name: the first place where `pattern` starts the name or follows a
 * character that is neither a letter nor a digit, is followed by 1 to 9 decimal digits, and those
 * digits end the name or are followed by a character that is neither a letter nor a digit.  Returns
 * 1 and fills *prefix_len (bytes up to the end of the digits: the layer's name), *index and
 * *terminator (the character after the digits, '\0' at the end of the name); 0 when there is none. */
int ws_part_layer_of(const char *name, const char *pattern, size_t *prefix_len, uint32_t *index, char *terminator);

/* ---- the model (model.c, nodelist.c) ---- */

struct ws_part_layer {
    char *name;      /* the node names' common start, e.g. "/model/layers.3" */
    uint32_t index;  /* 3 */
    char terminator; /* what follows the number in every node name of the layer; '\0' when not one character */
    size_t nodes;    /* trace nodes in the layer */
    size_t listed;   /* nodes known only from the node list or estimates file */
};

enum ws_part_known {
    WS_PART_TRACE = 1,
    WS_PART_LISTED = 2,
    WS_PART_FILE = 4
}; /* the trace, --nodes, the estimates file */

struct ws_part_node {
    char *name;
    int32_t node;  /* ws_analysis node index; -1 for a node known only from a list */
    int32_t layer; /* -1: outside every layer */
    uint8_t known; /* enum ws_part_known, or-ed */
    int executed;  /* ran inside a run (ORT's stats file has a line for it) */
};

/* The model's node list: node names, from a text file (one name per line) or a JSON graph
 * ([{"name": ..., "op_type": ..., "inputs": [...], "outputs": [...]}, ...]). */
struct ws_part_graph_node {
    char *name, *op_type;
    char **inputs, **outputs;
    size_t ninputs, noutputs;
};

struct ws_part_nodelist {
    struct ws_part_graph_node *nodes;
    size_t count;
    int is_graph; /* 1: JSON with op types and tensor names */
};

int ws_part_nodelist_load(const char *path, struct ws_part_nodelist *list, char *err, size_t errlen);
int ws_part_nodelist_parse(const char *text, size_t len, const char *name, struct ws_part_nodelist *list, char *err,
                           size_t errlen);
void ws_part_nodelist_free(struct ws_part_nodelist *list);

struct ws_part_model {
    const struct ws_analysis *an;
    const struct ws_estimates *est; /* NULL when none */
    char *pattern;
    struct ws_part_layer *layers; /* in the order they first ran */
    size_t nlayers;
    struct ws_part_node *nodes; /* trace nodes in the order they first ran, then listed-only nodes */
    size_t nnodes, ntrace;
    int32_t *part_of_node;      /* analysis node -> index into nodes, -1 when not a partition node */
    struct ws_resolution *res;  /* both ledgers, by analysis node (ws_resolve) */
    int32_t *alloc_node;        /* per allocation: its node (its name when it names a node, else its owner's) */
    int32_t *alloc_layer;       /* per allocation: its node's layer, or the layer its name names; -1 */
    int64_t *initializer_bytes; /* per partition node: the estimates file's initializer bytes, -1: none */
    int64_t *input_bytes;       /* per partition node: the estimates file's input bytes, -1: none */
    size_t named_allocations;   /* allocations given to a node or layer by their name */
};

/* Build the model of a trace: nodes (the trace's, and those of the node list and the estimates
 * file it does not know), layers by `pattern`, both ledgers (ws_resolve, stats mode), the node of
 * every allocation.  db is the trace (allocation names are read from it).  list and est may be
 * NULL.  Fails with "no layer" when no node name has a layer number; pattern NULL finds no layers
 * (for the node-stats file, which needs none). */
int ws_part_model_build(sqlite3 *db, const struct ws_analysis *an, const struct ws_estimates *est,
                        const struct ws_part_nodelist *list, const char *pattern, struct ws_part_model *m, char *err,
                        size_t errlen);
void ws_part_model_free(struct ws_part_model *m);

/* ---- costs per device (costs.c) ---- */

enum ws_part_outside {
    WS_PART_SPREAD, /* what is outside every layer is spread over the layers in equal shares */
    WS_PART_DEVICE, /* ... stays on the device whatever the number of layers: charged in full first */
    WS_PART_HOST    /* ... is placed on the host: not charged */
};

const char *ws_part_outside_name(enum ws_part_outside o);
int ws_part_outside_parse(const char *text, enum ws_part_outside *o);

struct ws_part_view { /* one device of one process */
    int32_t process, device;
};

struct ws_part_group { /* a layer, or what is outside every layer */
    int64_t persistent, activation, workspace;
};

struct ws_part_costs {
    struct ws_part_view view;
    struct ws_part_group *layers; /* nlayers */
    struct ws_part_group outside;
    int64_t outside_total;      /* persistent + activation + workspace of the outside */
    int64_t file_initializers;  /* initializer bytes of the estimates file added to layers */
    uint8_t *on_device;         /* per partition node: allocates on this device, or allocates nothing */
    int64_t *node_initializers; /* per partition node: persistent bytes allocated outside runs for it */
    struct ws_ort_cost *ort;    /* per partition node: ORT's charge (stats mode), inputs as below */
};

/* The devices (process, device) that hold allocations, in process then device order; one view of
 * device 0 when there is none. */
int ws_part_views(const struct ws_analysis *an, struct ws_part_view **views, size_t *n, char *err, size_t errlen);

/* Costs of every layer on one device:
 *   persistent  peak of the live bytes of the layer's persistent allocations (and, outside, of the
 *               unattributed ones), raised by the estimates file's initializer bytes where they
 *               exceed what the trace shows for a node (taken from the outside part as far as it holds them);
 *   activation  peak of the live bytes of the layer's activations;
 *   workspace   the largest workspace ONNX Runtime's ledger charges one of its nodes.
 * ORT's charge of each node: its ledger (stats mode), the inputs being the estimates file's input
 * bytes, or the node's initializers as the trace shows them, whichever is larger. */
int ws_part_costs_compute(const struct ws_part_model *m, struct ws_part_view view, struct ws_part_costs *c, char *err,
                          size_t errlen);
void ws_part_costs_free(struct ws_part_costs *c);

/* ---- the cut (cut.c) ---- */

struct ws_part_layer_fit {
    int64_t share, cost, cumulative; /* cumulative: the fixed part and layers 0..i */
    int fits;
    int64_t ort_cost;    /* ORT's charges of the layer's nodes on the device */
    size_t ort_nodes;    /* nodes ORT considers (executed, on the device) */
    size_t ort_accepted; /* of those, accepted by ORT's rule */
};

struct ws_part_result {
    int64_t budget;
    enum ws_part_outside outside;
    int64_t fixed; /* charged before any layer: the outside part in device mode */
    int64_t used, left, total;
    size_t layers_fit;
    struct ws_part_layer_fit *layers;
    /* ORT's rule: nodes in the order they ran, threshold = budget in whole KiB */
    int64_t ort_threshold, ort_consumed;
    size_t ort_nodes, ort_accepted, ort_layers_whole;
    int32_t ort_first_rejected; /* partition node, -1 when every node was accepted */
    int64_t ort_gpu_side;       /* ORT's charges of the nodes the ready rule puts on the device */
    int64_t ort_before_layers;  /* ORT's charges of the nodes that run before the first layer's */
    /* ready values */
    char *name_rule;         /* session.name_based_layer_assignment */
    int name_rule_exact;     /* 1: the value, matched as ORT matches, places every node as intended */
    char *resource_settings; /* session.resource_cuda_partitioning_settings */
};

/* gpu: the designator of the device in rules ("gpu", or "gpu:N" on a trace of several devices). */
int ws_part_cut(const struct ws_part_model *m, const struct ws_part_costs *c, int64_t budget,
                enum ws_part_outside outside, const char *gpu, struct ws_part_result *r, char *err, size_t errlen);
void ws_part_result_free(struct ws_part_result *r);

/* The largest k with fixed + cost[0] + ... + cost[k-1] <= budget (0 when fixed > budget). */
size_t ws_part_layers_fitting(const int64_t *cost, size_t n, int64_t fixed, int64_t budget);
/* ORT's rule: the number of charges accepted in order while the running total stays at most
 * threshold; *consumed receives their sum. */
size_t ws_part_ort_accepts(const int64_t *charge, size_t n, int64_t threshold, int64_t *consumed);

/* ---- placement rules (rules.c) ---- */

struct ws_part_rule {
    char *device, *pattern; /* trimmed, as ORT keeps them */
    size_t entry;           /* the device group it came from (0-based) */
};

struct ws_part_rules {
    struct ws_part_rule *v; /* in the order of the setting: ORT's rule indices */
    size_t n;
    char *ignored; /* text after ')' in some group, which ORT ignores; NULL when none */
};

/* Parse a session.name_based_layer_assignment value as ONNX Runtime does: groups DEVICE(P, ...)
 * separated by ';', patterns separated by ',', blanks trimmed, empty ones skipped.  What ORT
 * refuses (no '(' or ')', ')' before '(', an empty device, '=' before a pattern, a pattern twice)
 * is an error here too. */
int ws_part_rules_parse(const char *text, struct ws_part_rules *r, char *err, size_t errlen);
void ws_part_rules_free(struct ws_part_rules *r);

/* The rule ORT applies to a node name: of the patterns found in the name, the longest, the first
 * of equal length; -1 when none is. */
int32_t ws_part_rules_match(const struct ws_part_rules *r, const char *name);

/* ---- coverage (coverage.c) ---- */

enum ws_part_rule_verdict { WS_RULE_OK, WS_RULE_NO_MATCH, WS_RULE_SHADOWED };
const char *ws_part_rule_verdict_name(enum ws_part_rule_verdict v);

struct ws_part_rule_cover {
    size_t matched;  /* nodes whose name holds the pattern */
    size_t assigned; /* nodes ORT assigns by this pattern */
    size_t layers;   /* layers with a node it matches */
    uint8_t verdict; /* enum ws_part_rule_verdict */
};

struct ws_part_conflict {
    int32_t node;        /* partition node */
    int32_t rule, other; /* the rule ORT applies, and a matching rule of another device */
};

struct ws_part_coverage {
    struct ws_part_rule_cover *rules;
    int32_t *unmatched; /* partition nodes no rule matches */
    size_t nunmatched;
    struct ws_part_conflict *conflicts;
    size_t nconflicts;
    size_t no_match; /* rules with verdict no-match */
};

int ws_part_coverage_compute(const struct ws_part_model *m, const struct ws_part_rules *r, struct ws_part_coverage *c,
                             char *err, size_t errlen);
void ws_part_coverage_free(struct ws_part_coverage *c);

/* Nodes known to the model (node list, estimates file) that never ran inside a run: ORT's stats
 * file has no line for them and its accountant charges them 0. */
int ws_part_never_ran(const struct ws_part_model *m, int32_t **nodes, size_t *n);
/* Nodes that ran but the node list does not name (0 without a list). */
size_t ws_part_unlisted(const struct ws_part_model *m);

/* Nodes whose workspace is known only from a profile (no Level-1 estimate, no Level-2
 * declaration) and is not 0: a planned layout does not protect the first run. */
int ws_part_first_run_risk(const struct ws_part_model *m, int32_t **nodes, size_t *n);

/* ---- ORT's unique node names and node-stats file (murmur.c, nodestats.c) ---- */

/* MurmurHash3 x86_128 of len bytes with seed; out[0..3] = h1..h4. */
void ws_murmur3_x86_128(const void *key, size_t len, uint32_t seed, uint32_t out[4]);

/* IResourceAccountant::MakeUniqueNodeName: the node's name (its op type when the name is empty),
 * '_', and in decimal h1 | h2 << 32 of the hashes of its input then output names, each hashed
 * with the first word of the previous hash as seed (0 at first).  Returns a new string. */
char *ws_ort_unique_name(const struct ws_part_graph_node *n);

/* How trace node names become ORT's names in the stats file. */
struct ws_ort_names {
    char **from, **to; /* sorted by from */
    size_t n;
};

/* From an ORT graph (unique names computed), or from a file of ORT's unique names (an ORT
 * node-stats file, or one name per line): each NAME_DIGITS maps NAME; a NAME with several is
 * ambiguous and left out (*ambiguous counts them). */
int ws_ort_names_from_graph(const struct ws_part_nodelist *graph, struct ws_ort_names *names, char *err, size_t errlen);
int ws_ort_names_load(const char *path, struct ws_ort_names *names, size_t *ambiguous, char *err, size_t errlen);
const char *ws_ort_names_get(const struct ws_ort_names *names, const char *from);
void ws_ort_names_free(struct ws_ort_names *names);

struct ws_ort_stats_line {
    const char *name; /* as written: mapped, or the trace's name */
    int64_t input, initializers, dynamic, temp;
};

struct ws_ort_stats {
    struct ws_ort_stats_line *lines; /* in the order the nodes first ran */
    size_t n;
    size_t unmapped;   /* written with the trace's name: the mapping had no ORT name for them */
    size_t unwritable; /* left out: a ',' or line break in the name, a leading '#', an empty name */
    const char *first_unwritable;
};

/* One line per node that ran inside a run: the fields ORT's NodeStatsRecorder records, each the
 * maximum over runs; input_sizes = the node's initializers as the trace shows them (or the
 * estimates file's input bytes, when larger), initializers_sizes = 0 as ORT writes it.  names may
 * be NULL (the trace's names are written). */
int ws_ort_stats_build(const struct ws_part_model *m, const struct ws_ort_names *names, struct ws_ort_stats *s,
                       char *err, size_t errlen);
/* ORT's format: the header #name,input_sizes,initializers_sizes,total_dynamic_sizes,total_temp_allocations
 * and one line name,in,init,dyn,temp per node.  0, or -1 on a write error. */
int ws_ort_stats_write(FILE *out, const struct ws_ort_stats *s);
void ws_ort_stats_free(struct ws_ort_stats *s);

/* ---- results and picture (results.c, svg.c) ---- */

struct ws_part_run { /* one partition as written: a device, a budget */
    const struct ws_part_costs *costs;
    const struct ws_part_result *result;
};

/* Replace the rows of partitions, partition_layers and partition_rules (rules and cov may be NULL). */
int ws_part_results_write(sqlite3 *db, const struct ws_part_model *m, const struct ws_part_run *runs, size_t nruns,
                          const struct ws_part_rules *rules, const struct ws_part_coverage *cov, char *err,
                          size_t errlen);

int ws_part_svg_write(FILE *out, const struct ws_part_model *m, const struct ws_part_run *runs, size_t nruns, char *err,
                      size_t errlen);

#endif
