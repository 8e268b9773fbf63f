-- Result tables written back into a trace by the analysis commands (schema version 1).
-- Each command creates its tables if missing and replaces its own rows when re-run.
-- Documented in schema/README.md.

-- wstrace lifetimes: one row per successful device/managed allocation.
CREATE TABLE IF NOT EXISTS lifetimes (
    allocation_id INTEGER PRIMARY KEY REFERENCES allocations(id),
    run_id        INTEGER REFERENCES runs(id),      -- NULL outside every run
    class         TEXT NOT NULL,                    -- workspace | activation | persistent | unattributed
    node_name_id  INTEGER REFERENCES strings(id),   -- node that allocated (NULL: unattributed)
    alloc_step    INTEGER,  -- 0-based index of the allocating node occurrence within its run
    free_step     INTEGER,  -- index of the node occurrence that freed it; NULL if not freed in the run
    alloc_seq     INTEGER,  -- 0-based ordinal of this allocation among the run's allocations
    start_event   INTEGER,  -- index of the allocation among the run's allocation and free events
    end_event     INTEGER,  -- index of the free among the same events; NULL if not freed in the run
    slot          INTEGER,  -- workspace: ordinal of the allocation inside its node occurrence
    bytes         INTEGER NOT NULL
);

-- wstrace resolve: one row per node name.
CREATE TABLE IF NOT EXISTS resolutions (
    node_name_id   INTEGER PRIMARY KEY REFERENCES strings(id),
    profile_bytes  INTEGER,   -- observed workspace (peak concurrently live inside the node, max over runs); NULL if none
    estimate_bytes INTEGER,   -- Level-1 estimate (sum over slots); NULL if none
    output_bytes   INTEGER,   -- activation bytes the node produced (max over runs)
    resolved_bytes INTEGER NOT NULL,
    source         TEXT NOT NULL -- estimator | profile | max | fallback
);

-- wstrace verify: one row per node name and workspace slot.
CREATE TABLE IF NOT EXISTS verifications (
    node_name_id   INTEGER NOT NULL REFERENCES strings(id),
    slot           INTEGER NOT NULL,
    level1_bytes   INTEGER,
    level2_bytes   INTEGER,
    observed_bytes INTEGER,
    verdict        TEXT NOT NULL, -- ok | over-reservation | under-declared | idle-reservation | undeclared | unavailable
    PRIMARY KEY (node_name_id, slot)
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
