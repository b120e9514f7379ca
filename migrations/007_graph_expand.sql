-- Graph expansion (Client.Expand) ranks the edges incident to a frontier
-- by confidence and keeps, per step, only the best ones. These indexes give
-- each end's edges in confidence order with what a step reads (the other
-- end, the relation filter, the tie-breaking id), so that a hub's hundreds
-- of edges are neither all read nor fetched from the heap: a step reads
-- each frontier entity's best few and stops. The source-side one also
-- answers "edges among a set" from the index alone.
CREATE INDEX edges_source_rank ON edges (workspace_id, source_id, confidence) INCLUDE (target_id, relation, id);
-- The target-side twin; it also serves everything edges_target (a prefix of
-- it) did, foreign-key checks included.
CREATE INDEX edges_target_rank ON edges (workspace_id, target_id, confidence) INCLUDE (source_id, relation, id);
DROP INDEX edges_target;
