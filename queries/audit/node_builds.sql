-- node_builds: each node start's build (exact or a range of published builds), its evidence and what that build does with an over-long prompt in PD mode, written into node_configs.
-- Params: none
-- Inputs: __rows__ (one row per node start, from kvir.audit.start_builds over kvir.rules.builds: config_id, build,
--         build_lo, build_hi, build_open, build_evidence, over_long_outcome, stub_transferred, build_note,
--         deferred_release_default, batch_cap_default: the build's defaults of the two environment variables,
--         missing_more: start-up lines the release prints that the start lacks, from kvir.rules.vllm)
UPDATE node_configs AS n SET
    build = r.build, build_lo = r.build_lo, build_hi = r.build_hi, build_open = r.build_open,
    build_evidence = r.build_evidence, over_long_outcome = r.over_long_outcome,
    stub_transferred = r.stub_transferred, build_note = r.build_note,
    deferred_release_default = r.deferred_release_default, batch_cap_default = r.batch_cap_default,
    missing = CASE WHEN r.missing_more IS NULL THEN n.missing ELSE list_concat(n.missing, r.missing_more) END
FROM __rows__ AS r
WHERE n.config_id = r.config_id;
