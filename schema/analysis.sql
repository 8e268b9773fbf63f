-- Result tables written back into a trace by the analysis commands (result tables version 2).
-- Each command creates its tables if missing and replaces its own rows when re-run; lifetimes,
-- resolutions and verifications are dropped and created again, so a trace analysed by an older
-- version gets these columns.  Documented in schema/README.md.

-- wstrace lifetimes: one row per successful device/managed allocation.
CREATE TABLE IF NOT EXISTS lifetimes (
    allocation_id INTEGER PRIMARY KEY REFERENCES allocations(id),
    run_id        INTEGER REFERENCES runs(id),      -- NULL outside every run
    class         TEXT NOT NULL,                    -- workspace | activation | persistent | unattributed
    node_name_id  INTEGER REFERENCES strings(id),   -- node of the owning occurrence (NULL: unattributed)
    range_id      INTEGER REFERENCES ranges(id),    -- the owning occurrence: the allocating range, or the
                                                    -- enclosing range of a node that declared workspace
    alloc_step    INTEGER,  -- 0-based index of the owning node occurrence within its run
    free_step     INTEGER,  -- index of the node occurrence that freed it; NULL if not freed in the run
    alloc_seq     INTEGER,  -- 0-based ordinal of this allocation among the run's allocations
    start_event   INTEGER,  -- index of the allocation among the run's allocation and free events
    end_event     INTEGER,  -- index of the free among the same events; NULL if not freed in the run
    slot          INTEGER,  -- workspace: ordinal among the occurrence's workspace on the same device
                            -- (NULL for a zero-byte request)
    bytes         INTEGER NOT NULL
);

-- wstrace resolve: one row per node, in two ledgers that are never added together.
CREATE TABLE IF NOT EXISTS resolutions (
    node_name_id           INTEGER PRIMARY KEY REFERENCES strings(id),
    executed               INTEGER NOT NULL, -- 1: ran inside a run (ONNX Runtime records it)
    estimate_bytes         INTEGER,          -- Level 1, sum over slots; input of both ledgers; NULL: none
    -- the planner's ledger: workspace to reserve
    planner_profile_bytes  INTEGER,          -- peak live workspace in one occurrence; NULL: never ran
    planner_bytes          INTEGER,          -- max(profile, estimate); NULL: unknown
    planner_source         TEXT NOT NULL,    -- estimator | profile | max | unknown
    -- ONNX Runtime's ledger: the cost IResourceAccountant charges
    ort_mode               TEXT NOT NULL,    -- stats (the trace as NodeStatsRecorder file) | ad-hoc
    ort_input_bytes        INTEGER,          -- input_sizes (estimates file); NULL: not given
    ort_initializer_bytes  INTEGER,          -- initializer bytes (estimates file, ad-hoc only)
    ort_output_bytes       INTEGER,          -- statically known output bytes (estimates file)
    ort_dynamic_bytes      INTEGER,          -- total_dynamic_sizes: outputs allocated in one occurrence
    ort_temp_bytes         INTEGER,          -- total_temp_allocations: workspace requested, summed
    ort_workspace_bytes    INTEGER NOT NULL, -- the workspace part of the cost
    ort_cost_bytes         INTEGER NOT NULL, -- the charge
    ort_source             TEXT NOT NULL     -- profile | profile+estimator | not-profiled | estimator | fallback
);

-- wstrace verify: one row per node, shape key, device and workspace slot.
CREATE TABLE IF NOT EXISTS verifications (
    node_name_id    INTEGER NOT NULL REFERENCES strings(id),
    shape_key_id    INTEGER REFERENCES strings(id), -- NULL: outside runs, or runs without a key
    device          INTEGER,                        -- NULL: not known (the occurrence allocated nothing)
    slot            INTEGER NOT NULL,
    level1_bytes    INTEGER,
    level2_bytes    INTEGER,
    observed_bytes  INTEGER,          -- largest footprint in the slot (region offset + bytes)
    region_overflow INTEGER NOT NULL DEFAULT 0, -- 1: an allocation was larger than its region or slot
    tactic_kind     TEXT,             -- of the Level-2 declaration: cached | cached-free | miss
    tactic          TEXT,
    verdict         TEXT NOT NULL     -- see docs/analysis.md
);

-- wstrace plan: one plan per shape key (the first complete run of that key is planned).
CREATE TABLE IF NOT EXISTS plans (
    id                 INTEGER PRIMARY KEY,
    shape_key_id       INTEGER REFERENCES strings(id),
    run_id             INTEGER REFERENCES runs(id),
    alignment          INTEGER NOT NULL,
    planned_peak_bytes INTEGER NOT NULL,  -- size of the backing buffer
    load_bound_bytes   INTEGER NOT NULL,  -- max over time of live planned bytes
    dynamic_peak_bytes INTEGER NOT NULL,  -- observed peak of the same allocations, allocated on the fly
    blocks             INTEGER NOT NULL,
    algorithm          TEXT NOT NULL,
    seconds            REAL NOT NULL
);

CREATE TABLE IF NOT EXISTS plan_blocks (
    plan_id         INTEGER NOT NULL REFERENCES plans(id),
    ordinal         INTEGER NOT NULL,  -- alloc_seq: the k-th allocation of the run
    allocation_id   INTEGER REFERENCES allocations(id),
    node_name_id    INTEGER REFERENCES strings(id),
    class           TEXT NOT NULL,     -- workspace | activation
    slot            INTEGER,
    start_event     INTEGER NOT NULL,  -- half-open lifetime [start_event, end_event)
    end_event       INTEGER NOT NULL,
    requested_bytes INTEGER NOT NULL,  -- observed request
    bytes           INTEGER NOT NULL,  -- block size: max(request, Level-2 declaration), aligned
    offset          INTEGER NOT NULL,  -- from the start of the backing buffer
    PRIMARY KEY (plan_id, ordinal)
) WITHOUT ROWID;

-- wstrace partition: one row per device and budget (docs/partition.md).  Re-running the command
-- replaces the rows of all three partition tables.
CREATE TABLE IF NOT EXISTS partitions (
    id                          INTEGER PRIMARY KEY,
    process_id                  INTEGER NOT NULL,  -- processes.id (1 in a trace of one process)
    device                      INTEGER NOT NULL,
    budget_bytes                INTEGER NOT NULL,
    layer_pattern               TEXT NOT NULL,     -- the text before the layer number (layers.)
    outside                     TEXT NOT NULL,     -- spread | device | host: where the parts outside every layer go
    layers                      INTEGER NOT NULL,
    layers_fit                  INTEGER NOT NULL,  -- whole layers, in the order they ran, that fit the budget
    fixed_bytes                 INTEGER NOT NULL,  -- charged before any layer (the outside part, in device mode)
    used_bytes                  INTEGER NOT NULL,
    left_bytes                  INTEGER NOT NULL,  -- budget - used
    total_bytes                 INTEGER NOT NULL,  -- every layer and the fixed part
    outside_bytes               INTEGER NOT NULL,  -- what is outside every layer
    ort_threshold_bytes         INTEGER NOT NULL,  -- the budget as ORT takes it: whole KiB
    ort_nodes                   INTEGER NOT NULL,  -- nodes ORT considers: ran, on this device
    ort_nodes_accepted          INTEGER NOT NULL,  -- accepted by the stop-at-first-overflow rule
    ort_layers_whole            INTEGER NOT NULL,  -- layers all of whose nodes ORT accepts
    ort_consumed_bytes          INTEGER NOT NULL,
    ort_first_rejected_id       INTEGER REFERENCES strings(id), -- the node where ORT stops; NULL: none
    name_based_layer_assignment TEXT NOT NULL,     -- ready value of the session option for the answer
    name_rule_exact             INTEGER NOT NULL,  -- 1: matched as ORT matches, it places every node as intended
    resource_cuda_partitioning_settings TEXT NOT NULL
);

-- wstrace partition: one row per layer of each partition, in the order the layers ran.
CREATE TABLE IF NOT EXISTS partition_layers (
    partition_id     INTEGER NOT NULL REFERENCES partitions(id),
    ordinal          INTEGER NOT NULL,
    layer            TEXT NOT NULL,     -- e.g. /model/layers.3
    nodes            INTEGER NOT NULL,  -- trace nodes in the layer
    persistent_bytes INTEGER NOT NULL,  -- peak of its persistent bytes (weights, caches)
    activation_bytes INTEGER NOT NULL,  -- peak of its live activations
    workspace_bytes  INTEGER NOT NULL,  -- the largest workspace ORT's ledger charges one of its nodes
    share_bytes      INTEGER NOT NULL,  -- its share of what is outside every layer (spread)
    cost_bytes       INTEGER NOT NULL,  -- the sum of the four
    cumulative_bytes INTEGER NOT NULL,  -- the fixed part and the layers up to this one
    fits             INTEGER NOT NULL,  -- 1: on the device in the layer-atomic answer
    ort_cost_bytes   INTEGER NOT NULL,  -- ORT's charges of its nodes
    ort_nodes_accepted INTEGER NOT NULL,
    PRIMARY KEY (partition_id, ordinal)
) WITHOUT ROWID;

-- wstrace partition --rules: one row per pattern of the name-based rules.
CREATE TABLE IF NOT EXISTS partition_rules (
    ordinal        INTEGER PRIMARY KEY,  -- ORT's rule index: the order of the setting
    device         TEXT NOT NULL,
    pattern        TEXT NOT NULL,
    nodes_matched  INTEGER NOT NULL,     -- nodes whose name holds the pattern
    nodes_assigned INTEGER NOT NULL,     -- nodes ORT assigns by it (longest pattern first)
    layers_matched INTEGER NOT NULL,
    verdict        TEXT NOT NULL         -- ok | no-match | shadowed
);
