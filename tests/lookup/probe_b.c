/* The second library lookup_prog links: the definition RTLD_NEXT finds from probe_a. */
const char *lookup_probe(void) { return "b"; }
const char *lookup_probe_b_name(void) { return "b"; }
