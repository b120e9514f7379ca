-- Graph expansion (Client.Expand) ranks the edges incident to a frontier
-- by confidence and keeps, per step, only the best ones (as
-- migrations/007_graph_expand.sql at the module root). These covering
-- indexes give each end's edges in confidence order with what a step reads
-- (the other end, the relation filter, the tie-breaking id): a hub's
-- hundreds of edges are neither all read nor looked up in the table.
CREATE INDEX edges_source_rank ON edges (workspace_id, source_id, confidence, target_id, relation, id);
-- The target-side twin; it also serves everything edges_target (a prefix of
-- it) did, foreign-key checks included.
CREATE INDEX edges_target_rank ON edges (workspace_id, target_id, confidence, source_id, relation, id);
DROP INDEX edges_target;
